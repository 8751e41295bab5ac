//! The expression parser of `\set`, `\if` and `\elif`: pgbench's grammar
//! (`exprparse.y`, `exprscan.l`) as a tokenizer and a precedence-climbing
//! parser with pgbench's precedence, lowest first: `OR`, `AND`, `NOT`,
//! `IS`/`ISNULL`/`NOTNULL`, comparisons, bitwise operators (and prefix `~`),
//! `+ -`, `* / %`, unary `+ -`. Comparisons and `IS` do not chain.

use super::expression::{Arity, Expr, Function};
use super::value::{Scalar, parse_c_double};

/// Most tokens in one expression: parsing, evaluating and dropping an expression
/// recurse over its tree, so its size is bounded to keep a worker's stack safe.
const MAX_TOKENS: usize = 1000;

/// Most nested parentheses, signs and calls, for the same reason.
const MAX_NESTING: usize = 100;

/// A problem in an expression: what, and at which byte of the expression text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ExprError {
    pub offset: usize,
    pub problem: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    /// 9223372036854775808, valid only after a minus sign.
    MaxIntPlusOne,
    Double(f64),
    Variable(String),
    Defined(String),
    Word(String),
    Keyword(Keyword),
    Symbol(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    End,
    Null,
    True,
    False,
}

const KEYWORDS: [(&str, Keyword); 14] = [
    ("and", Keyword::And),
    ("or", Keyword::Or),
    ("not", Keyword::Not),
    ("is", Keyword::Is),
    ("isnull", Keyword::IsNull),
    ("notnull", Keyword::NotNull),
    ("case", Keyword::Case),
    ("when", Keyword::When),
    ("then", Keyword::Then),
    ("else", Keyword::Else),
    ("end", Keyword::End),
    ("null", Keyword::Null),
    ("true", Keyword::True),
    ("false", Keyword::False),
];

/// Operators, longest first so that `<=` is not read as `<` `=`.
const SYMBOLS: [&str; 21] = [
    "<>", "!=", "<=", ">=", "<<", ">>", "+", "-", "*", "/", "%", "=", "<", ">", "|", "&", "#", "~",
    "(", ")", ",",
];

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Int(value) => format!("number {value}"),
            Token::MaxIntPlusOne => "number 9223372036854775808".to_string(),
            Token::Double(value) => format!("number {value}"),
            Token::Variable(name) => format!("variable :{name}"),
            Token::Defined(name) => format!(":{{?{name}}}"),
            Token::Word(word) => format!("\"{word}\""),
            Token::Keyword(keyword) => KEYWORDS
                .iter()
                .find(|(_, known)| known == keyword)
                .map_or(String::new(), |(name, _)| name.to_ascii_uppercase()),
            Token::Symbol(symbol) => format!("'{symbol}'"),
        }
    }
}

/// Bytes of a name: letters, digits, `_` and any non-ASCII byte (pgbench's `alnum`).
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, ExprError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let start = index;
        if byte.is_ascii_whitespace() {
            index += 1;
            continue;
        }
        if let Some(symbol) = SYMBOLS
            .iter()
            .find(|symbol| text[index..].starts_with(**symbol))
        {
            tokens.push((Token::Symbol(symbol), start));
            index += symbol.len();
        } else if byte.is_ascii_digit() || (byte == b'.' && next_is_digit(bytes, index)) {
            let (token, end) = number(text, index)?;
            tokens.push((token, start));
            index = end;
        } else if byte == b':' {
            let (token, end) = variable(text, index)?;
            tokens.push((token, start));
            index = end;
        } else if byte.is_ascii_alphabetic() || byte == b'_' || byte >= 0x80 {
            let mut end = index + 1;
            while end < bytes.len() && is_name_byte(bytes[end]) {
                end += 1;
            }
            let word = &text[index..end];
            let token = match KEYWORDS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(word))
            {
                Some((_, keyword)) => Token::Keyword(*keyword),
                None => Token::Word(word.to_string()),
            };
            tokens.push((token, start));
            index = end;
        } else {
            let character = text[index..].chars().next().unwrap_or('?');
            return Err(ExprError {
                offset: index,
                problem: format!("unexpected character '{character}'"),
            });
        }
    }
    Ok(tokens)
}

fn next_is_digit(bytes: &[u8], index: usize) -> bool {
    bytes.get(index + 1).is_some_and(u8::is_ascii_digit)
}

/// A number at `start`: `digits`, `digits.digits?`, `.digits`, each with an
/// optional exponent; integers must fit in 64 bits, doubles in a double.
fn number(text: &str, start: usize) -> Result<(Token, usize), ExprError> {
    let bytes = text.as_bytes();
    let skip_digits = |mut index: usize| {
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        index
    };
    let mut end = skip_digits(start);
    let mut is_double = false;
    if bytes.get(end) == Some(&b'.') {
        end = skip_digits(end + 1);
        is_double = true;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exponent = end + 1;
        if matches!(bytes.get(exponent), Some(b'+' | b'-')) {
            exponent += 1;
        }
        if bytes.get(exponent).is_some_and(u8::is_ascii_digit) {
            end = skip_digits(exponent);
            is_double = true;
        }
    }
    let literal = &text[start..end];
    let overflow = |kind: &str| ExprError {
        offset: start,
        problem: format!("{kind} constant {literal} is out of range"),
    };
    if is_double {
        return match parse_c_double(literal) {
            Some(value) if value != 0.0 || !has_nonzero_digit(literal) => {
                Ok((Token::Double(value), end))
            }
            _ => Err(overflow("double")),
        };
    }
    if literal == "9223372036854775808" {
        return Ok((Token::MaxIntPlusOne, end));
    }
    match literal.parse::<i64>() {
        Ok(value) => Ok((Token::Int(value), end)),
        Err(_) => Err(overflow("bigint")),
    }
}

/// Whether the mantissa of a double literal has a non-zero digit (so that a
/// zero result is an underflow, which C's `strtod` refuses).
fn has_nonzero_digit(literal: &str) -> bool {
    literal
        .split(['e', 'E'])
        .next()
        .is_some_and(|mantissa| mantissa.bytes().any(|byte| (b'1'..=b'9').contains(&byte)))
}

/// `:name` or `:{?name}` at `start`.
fn variable(text: &str, start: usize) -> Result<(Token, usize), ExprError> {
    let bytes = text.as_bytes();
    if text[start..].starts_with(":{?") {
        let name_start = start + 3;
        let mut end = name_start;
        while end < bytes.len() && is_name_byte(bytes[end]) {
            end += 1;
        }
        if end > name_start && bytes.get(end) == Some(&b'}') {
            return Ok((Token::Defined(text[name_start..end].to_string()), end + 1));
        }
    }
    let mut end = start + 1;
    while end < bytes.len() && is_name_byte(bytes[end]) {
        end += 1;
    }
    if end == start + 1 {
        return Err(ExprError {
            offset: start,
            problem: "':' must be followed by a variable name".to_string(),
        });
    }
    Ok((Token::Variable(text[start + 1..end].to_string()), end))
}

/// Parses an expression; `slot_of` gives (making it if new) the slot of a variable.
pub(super) fn parse_expression(
    text: &str,
    slot_of: &mut dyn FnMut(&str) -> usize,
) -> Result<Expr, ExprError> {
    let tokens = tokenize(text)?;
    if tokens.len() > MAX_TOKENS {
        return Err(ExprError {
            offset: 0,
            problem: format!(
                "the expression has {} tokens, more than {MAX_TOKENS}; split it over several \
                 \\set commands",
                tokens.len()
            ),
        });
    }
    if tokens.is_empty() {
        return Err(ExprError {
            offset: text.len(),
            problem: "missing expression".to_string(),
        });
    }
    let mut parser = Parser {
        text_len: text.len(),
        tokens,
        position: 0,
        depth: 0,
        slot_of,
    };
    let expr = parser.parse(0)?;
    if let Some((token, _)) = parser.tokens.get(parser.position) {
        return Err(parser.error(format!(
            "unexpected {} after a complete expression",
            token.describe()
        )));
    }
    Ok(expr)
}

/// Precedence levels, lowest first.
const OR: u8 = 1;
const AND: u8 = 2;
const NOT: u8 = 3;
const IS: u8 = 4;
const COMPARE: u8 = 5;
const BITWISE: u8 = 6;
const ADD: u8 = 7;
const MULTIPLY: u8 = 8;
const UNARY: u8 = 9;

/// An operator after an operand.
#[derive(Debug, Clone, Copy)]
enum Infix {
    And,
    Or,
    /// `ISNULL`, `NOTNULL`, `IS [NOT] NULL|TRUE|FALSE`.
    IsTest,
    /// A function of the two operands; `swapped` for `>` and `>=`.
    Call {
        function: Function,
        swapped: bool,
    },
}

struct Parser<'a> {
    text_len: usize,
    tokens: Vec<(Token, usize)>,
    position: usize,
    /// Open nestings (prefix operators, parentheses, calls, CASE).
    depth: usize,
    slot_of: &'a mut dyn FnMut(&str) -> usize,
}

impl Parser<'_> {
    fn error(&self, problem: String) -> ExprError {
        let offset = self
            .tokens
            .get(self.position)
            .map_or(self.text_len, |(_, offset)| *offset);
        ExprError { offset, problem }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position).map(|(token, _)| token)
    }

    fn next_token(&mut self) -> Option<Token> {
        let token = self.peek().cloned();
        if token.is_some() {
            self.position += 1;
        }
        token
    }

    fn expect(&mut self, wanted: &Token, what: &str) -> Result<(), ExprError> {
        match self.peek() {
            Some(token) if token == wanted => {
                self.position += 1;
                Ok(())
            }
            Some(token) => Err(self.error(format!("expected {what}, found {}", token.describe()))),
            None => Err(self.error(format!("expected {what} at the end"))),
        }
    }

    fn infix(&self) -> Option<(u8, Infix)> {
        let call = |function| Infix::Call {
            function,
            swapped: false,
        };
        let swapped = |function| Infix::Call {
            function,
            swapped: true,
        };
        Some(match self.peek()? {
            Token::Keyword(Keyword::Or) => (OR, Infix::Or),
            Token::Keyword(Keyword::And) => (AND, Infix::And),
            Token::Keyword(Keyword::Is | Keyword::IsNull | Keyword::NotNull) => (IS, Infix::IsTest),
            Token::Symbol(symbol) => match *symbol {
                "=" => (COMPARE, call(Function::Equal)),
                "<>" | "!=" => (COMPARE, call(Function::NotEqual)),
                "<" => (COMPARE, call(Function::Less)),
                "<=" => (COMPARE, call(Function::LessOrEqual)),
                ">" => (COMPARE, swapped(Function::Less)),
                ">=" => (COMPARE, swapped(Function::LessOrEqual)),
                "|" => (BITWISE, call(Function::BitOr)),
                "#" => (BITWISE, call(Function::BitXor)),
                "&" => (BITWISE, call(Function::BitAnd)),
                "<<" => (BITWISE, call(Function::ShiftLeft)),
                ">>" => (BITWISE, call(Function::ShiftRight)),
                "+" => (ADD, call(Function::Add)),
                "-" => (ADD, call(Function::Subtract)),
                "*" => (MULTIPLY, call(Function::Multiply)),
                "/" => (MULTIPLY, call(Function::Divide)),
                "%" => (MULTIPLY, call(Function::Modulo)),
                _ => return None,
            },
            _ => return None,
        })
    }

    /// An expression whose operators all bind at least as tightly as `min_level`.
    fn parse(&mut self, min_level: u8) -> Result<Expr, ExprError> {
        let mut left = self.parse_prefix()?;
        while let Some((level, infix)) = self.infix() {
            if level < min_level {
                break;
            }
            self.position += 1;
            left = match infix {
                Infix::IsTest => self.parse_is_test(left)?,
                Infix::And => Expr::And(Box::new(left), Box::new(self.parse(level + 1)?)),
                Infix::Or => Expr::Or(Box::new(left), Box::new(self.parse(level + 1)?)),
                Infix::Call { function, swapped } => {
                    let right = self.parse(level + 1)?;
                    let args = match swapped {
                        true => vec![right, left],
                        false => vec![left, right],
                    };
                    Expr::Call { function, args }
                }
            };
            let chains = self.infix().is_some_and(|(next, _)| next == level);
            if (level == COMPARE || level == IS) && chains {
                return Err(self
                    .error("comparisons and IS tests do not chain; add parentheses".to_string()));
            }
        }
        Ok(left)
    }

    /// After `ISNULL`, `NOTNULL` or `IS` (already read): the test of `value`.
    fn parse_is_test(&mut self, value: Expr) -> Result<Expr, ExprError> {
        let is = |value: Expr, constant: Scalar| Expr::Call {
            function: Function::Is,
            args: vec![value, Expr::Const(constant)],
        };
        let not = |expr: Expr| Expr::Call {
            function: Function::Not,
            args: vec![expr],
        };
        match &self.tokens[self.position - 1].0 {
            Token::Keyword(Keyword::IsNull) => return Ok(is(value, Scalar::Null)),
            Token::Keyword(Keyword::NotNull) => return Ok(not(is(value, Scalar::Null))),
            _ => {}
        }
        let negated = self.peek() == Some(&Token::Keyword(Keyword::Not));
        if negated {
            self.position += 1;
        }
        let constant = match self.next_token() {
            Some(Token::Keyword(Keyword::Null)) => Scalar::Null,
            Some(Token::Keyword(Keyword::True)) => Scalar::Bool(true),
            Some(Token::Keyword(Keyword::False)) => Scalar::Bool(false),
            _ => {
                self.position -= 1;
                return Err(self.error("IS must be followed by [NOT] NULL, TRUE or FALSE".into()));
            }
        };
        let test = is(value, constant);
        Ok(if negated { not(test) } else { test })
    }

    /// Every nesting passes through here, so the depth is counted here.
    fn parse_prefix(&mut self) -> Result<Expr, ExprError> {
        if self.depth == MAX_NESTING {
            return Err(self.error(format!(
                "more than {MAX_NESTING} nested parentheses, signs or calls; simplify the \
                 expression or split it over several \\set commands"
            )));
        }
        self.depth += 1;
        let result = self.parse_operand();
        self.depth -= 1;
        result
    }

    fn parse_operand(&mut self) -> Result<Expr, ExprError> {
        let Some(token) = self.next_token() else {
            return Err(self.error("the expression ends where an operand was expected".into()));
        };
        let call = |function, args| Expr::Call { function, args };
        Ok(match token {
            Token::Int(value) => Expr::Const(Scalar::Int(value)),
            Token::Double(value) => Expr::Const(Scalar::Double(value)),
            Token::Keyword(Keyword::Null) => Expr::Const(Scalar::Null),
            Token::Keyword(Keyword::True) => Expr::Const(Scalar::Bool(true)),
            Token::Keyword(Keyword::False) => Expr::Const(Scalar::Bool(false)),
            Token::Variable(name) => Expr::Variable {
                slot: (self.slot_of)(&name),
                name,
            },
            Token::Defined(name) => Expr::Defined {
                slot: (self.slot_of)(&name),
            },
            Token::Symbol("(") => {
                let inner = self.parse(0)?;
                self.expect(&Token::Symbol(")"), "')'")?;
                inner
            }
            Token::Symbol("+") => self.parse(UNARY)?,
            Token::Symbol("-") if self.peek() == Some(&Token::MaxIntPlusOne) => {
                self.position += 1;
                Expr::Const(Scalar::Int(i64::MIN))
            }
            Token::Symbol("-") => {
                let operand = self.parse(UNARY)?;
                call(
                    Function::Subtract,
                    vec![Expr::Const(Scalar::Int(0)), operand],
                )
            }
            Token::Symbol("~") => {
                let operand = self.parse(BITWISE + 1)?;
                call(
                    Function::BitXor,
                    vec![Expr::Const(Scalar::Int(-1)), operand],
                )
            }
            Token::Keyword(Keyword::Not) => call(Function::Not, vec![self.parse(NOT + 1)?]),
            Token::Keyword(Keyword::Case) => self.parse_case()?,
            Token::Word(name) => self.parse_call(&name)?,
            other => {
                self.position -= 1;
                return Err(self.error(format!("unexpected {}", other.describe())));
            }
        })
    }

    /// After `CASE`: `WHEN c THEN v` pairs, an optional `ELSE`, `END`.
    fn parse_case(&mut self) -> Result<Expr, ExprError> {
        let mut branches = Vec::new();
        while self.peek() == Some(&Token::Keyword(Keyword::When)) {
            self.position += 1;
            let condition = self.parse(0)?;
            self.expect(&Token::Keyword(Keyword::Then), "THEN")?;
            branches.push((condition, self.parse(0)?));
        }
        if branches.is_empty() {
            return Err(self.error("CASE must be followed by WHEN condition THEN value".into()));
        }
        let otherwise = match self.peek() {
            Some(Token::Keyword(Keyword::Else)) => {
                self.position += 1;
                self.parse(0)?
            }
            _ => Expr::Const(Scalar::Null),
        };
        self.expect(&Token::Keyword(Keyword::End), "END")?;
        Ok(Expr::Case {
            branches,
            otherwise: Box::new(otherwise),
        })
    }

    /// After a function name: `(arguments)`, checked against the function's arity.
    fn parse_call(&mut self, name: &str) -> Result<Expr, ExprError> {
        let name_position = self.position - 1;
        let Some((function, arity)) = Function::by_name(name) else {
            self.position = name_position;
            return Err(self.error(format!(
                "unknown function {name}; the functions are {}",
                Function::names()
            )));
        };
        self.expect(&Token::Symbol("("), &format!("'(' after {name}"))?;
        let mut args = Vec::new();
        if self.peek() != Some(&Token::Symbol(")")) {
            loop {
                args.push(self.parse(0)?);
                match self.peek() {
                    Some(Token::Symbol(",")) => self.position += 1,
                    _ => break,
                }
            }
        }
        self.expect(&Token::Symbol(")"), "',' or ')'")?;
        let count = args.len();
        let wrong = match arity {
            Arity::Exactly(wanted) => count != wanted,
            Arity::AtLeastOne => count == 0,
            Arity::HashLike => !(1..=2).contains(&count),
            Arity::PermuteLike => !(2..=3).contains(&count),
        };
        if wrong {
            self.position = name_position;
            let wanted = match arity {
                Arity::Exactly(wanted) => wanted.to_string(),
                Arity::AtLeastOne => "at least 1".to_string(),
                Arity::HashLike => "1 or 2".to_string(),
                Arity::PermuteLike => "2 or 3".to_string(),
            };
            return Err(self.error(format!("{name}() takes {wanted} arguments, {count} given")));
        }
        let seed_missing = matches!(
            (arity, count),
            (Arity::HashLike, 1) | (Arity::PermuteLike, 2)
        );
        if seed_missing {
            args.push(Expr::Variable {
                slot: (self.slot_of)("default_seed"),
                name: "default_seed".to_string(),
            });
        }
        Ok(Expr::Call { function, args })
    }
}
