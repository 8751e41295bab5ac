//! `\set` expressions: the syntax tree and the parser that builds it.
//!
//! Variables are resolved to slots while parsing, so evaluation never looks up a name, and
//! arguments given as literals are checked here so that a script with `random(10, 1)` fails
//! when it is loaded rather than in the middle of a run.

use std::collections::HashMap;

use super::scanner::variable_name_end;

/// Smallest parameter `random_gaussian` accepts, as in pgbench.
pub const MIN_GAUSSIAN_PARAMETER: f64 = 2.0;

/// Most tokens in one expression: parsing, evaluating and dropping an expression
/// recurse over its tree, so its size is bounded to keep a worker's stack safe.
const MAX_TOKENS: usize = 1000;

/// Most nested parentheses, signs and calls, for the same reason.
const MAX_NESTING: usize = 100;

/// A `\set` expression, with variables resolved to slots.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Integer literal.
    Int(i64),
    /// Double literal.
    Double(f64),
    /// `:name` reference.
    Variable {
        /// Slot of the variable.
        slot: usize,
        /// Name of the variable, for errors.
        name: String,
    },
    /// Unary minus.
    Negate(Box<Expr>),
    /// Binary arithmetic.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// Function call; the argument count was checked by [`parse`](super::parse).
    Call {
        /// The function.
        function: Function,
        /// Its arguments.
        args: Vec<Expr>,
    },
}

/// A binary arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Subtract,
    /// `*`
    Multiply,
    /// `/` (integer division truncates toward zero)
    Divide,
    /// `%` (on integers)
    Modulo,
}

impl BinaryOp {
    /// The operator as scripts write it, for error messages.
    pub(super) fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
        }
    }
}

/// A function usable in `\set` expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `random(lb, ub)`: uniform integer in `[lb, ub]`.
    Random,
    /// `random_exponential(lb, ub, parameter)`: integer in `[lb, ub]`, skewed to `lb`.
    RandomExponential,
    /// `random_gaussian(lb, ub, parameter)`: integer in `[lb, ub]`, bell around the middle.
    RandomGaussian,
    /// `abs(x)`, same type as `x`.
    Abs,
    /// `least(a, ...)`: double if any argument is a double.
    Least,
    /// `greatest(a, ...)`: double if any argument is a double.
    Greatest,
    /// `int(x)`: truncates a double toward zero.
    Int,
    /// `double(x)`.
    Double,
    /// `sqrt(x)`, a double.
    Sqrt,
    /// `exp(x)`, a double.
    Exp,
    /// `ln(x)`, a double.
    Ln,
    /// `pow(x, y)` or `power(x, y)`, a double.
    Pow,
    /// `pi()`.
    Pi,
    /// `mod(i, j)`, same as `i % j`.
    Mod,
}

/// Every function, in the order error messages list them.
pub(super) const ALL_FUNCTIONS: [Function; 14] = [
    Function::Random,
    Function::RandomExponential,
    Function::RandomGaussian,
    Function::Abs,
    Function::Least,
    Function::Greatest,
    Function::Int,
    Function::Double,
    Function::Sqrt,
    Function::Exp,
    Function::Ln,
    Function::Pow,
    Function::Pi,
    Function::Mod,
];

impl Function {
    /// The name scripts use for the function.
    pub fn name(self) -> &'static str {
        match self {
            Function::Random => "random",
            Function::RandomExponential => "random_exponential",
            Function::RandomGaussian => "random_gaussian",
            Function::Abs => "abs",
            Function::Least => "least",
            Function::Greatest => "greatest",
            Function::Int => "int",
            Function::Double => "double",
            Function::Sqrt => "sqrt",
            Function::Exp => "exp",
            Function::Ln => "ln",
            Function::Pow => "pow",
            Function::Pi => "pi",
            Function::Mod => "mod",
        }
    }

    /// Looks a function up by name, ignoring case as pgbench does.
    pub(super) fn from_name(name: &str) -> Option<Function> {
        if name.eq_ignore_ascii_case("power") {
            return Some(Function::Pow);
        }
        ALL_FUNCTIONS
            .iter()
            .copied()
            .find(|function| function.name().eq_ignore_ascii_case(name))
    }

    /// Smallest and largest argument count (`None`: no largest).
    fn argument_count(self) -> (usize, Option<usize>) {
        match self {
            Function::Pi => (0, Some(0)),
            Function::Abs
            | Function::Int
            | Function::Double
            | Function::Sqrt
            | Function::Exp
            | Function::Ln => (1, Some(1)),
            Function::Random | Function::Pow | Function::Mod => (2, Some(2)),
            Function::RandomExponential | Function::RandomGaussian => (3, Some(3)),
            Function::Least | Function::Greatest => (1, None),
        }
    }
}

/// The supported function names, comma separated, for error messages.
fn supported_function_names() -> String {
    let mut names = String::new();
    for function in ALL_FUNCTIONS {
        if !names.is_empty() {
            names.push_str(", ");
        }
        names.push_str(function.name());
        if function == Function::Pow {
            names.push_str(", power");
        }
    }
    names
}

/// A token of a `\set` expression.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Double(f64),
    Variable(String),
    Word(String),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    LeftParen,
    RightParen,
    Comma,
}

impl Token {
    /// How the token reads in an error message.
    fn describe(&self) -> String {
        match self {
            Token::Int(integer) => format!("number {integer}"),
            Token::Double(double) => format!("number {double}"),
            Token::Variable(name) => format!("variable :{name}"),
            Token::Word(word) => format!("word \"{word}\""),
            Token::Plus => "'+'".to_string(),
            Token::Minus => "'-'".to_string(),
            Token::Star => "'*'".to_string(),
            Token::Slash => "'/'".to_string(),
            Token::Percent => "'%'".to_string(),
            Token::LeftParen => "'('".to_string(),
            Token::RightParen => "')'".to_string(),
            Token::Comma => "','".to_string(),
        }
    }
}

/// Parses a `\set` expression; errors are complete problem texts.
pub(super) fn parse_expression(
    text: &str,
    slot_by_name: &HashMap<String, usize>,
) -> Result<Expr, String> {
    let tokens = tokenize(text)?;
    if tokens.len() > MAX_TOKENS {
        return Err(format!(
            "bad \\set syntax: the expression has {} tokens, more than {MAX_TOKENS}; split it \
             over several \\set commands",
            tokens.len()
        ));
    }
    let mut parser = ExpressionParser {
        text,
        tokens,
        position: 0,
        depth: 0,
        slot_by_name,
    };
    let expr = parser.parse_sum()?;
    if let Some(token) = parser.tokens.get(parser.position) {
        return Err(parser.syntax_error(&format!(
            "unexpected {} after a complete expression",
            token.describe()
        )));
    }
    Ok(expr)
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let single = match byte {
            b'+' => Some(Token::Plus),
            b'-' => Some(Token::Minus),
            b'*' => Some(Token::Star),
            b'/' => Some(Token::Slash),
            b'%' => Some(Token::Percent),
            b'(' => Some(Token::LeftParen),
            b')' => Some(Token::RightParen),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(token) = single {
            tokens.push(token);
            index += 1;
        } else if byte.is_ascii_whitespace() {
            index += 1;
        } else if byte.is_ascii_digit() || byte == b'.' {
            let end = number_end(bytes, index);
            tokens.push(number_token(&text[index..end], text)?);
            index = end;
        } else if byte == b':' {
            let end = variable_name_end(bytes, index + 1);
            if end == index + 1 {
                return Err(format!(
                    "bad \\set syntax: ':' must be followed by a variable name in \"{text}\""
                ));
            }
            tokens.push(Token::Variable(text[index + 1..end].to_string()));
            index = end;
        } else if byte.is_ascii_alphabetic() || byte == b'_' {
            let end = variable_name_end(bytes, index);
            tokens.push(Token::Word(text[index..end].to_string()));
            index = end;
        } else {
            let character = text[index..].chars().next().unwrap_or('?');
            return Err(format!(
                "bad \\set syntax: unexpected character '{character}' in \"{text}\"; \
                 expressions use numbers, :variables, + - * / %, parentheses and functions"
            ));
        }
    }
    Ok(tokens)
}

/// End of a numeric literal: digits, an optional fraction, an optional exponent.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let skip_digits = |mut index: usize| {
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        index
    };
    let mut end = skip_digits(start);
    if bytes.get(end) == Some(&b'.') {
        end = skip_digits(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exponent_start = end + 1;
        if matches!(bytes.get(exponent_start), Some(b'+' | b'-')) {
            exponent_start += 1;
        }
        if bytes.get(exponent_start).is_some_and(u8::is_ascii_digit) {
            end = skip_digits(exponent_start);
        }
    }
    end
}

fn number_token(literal: &str, text: &str) -> Result<Token, String> {
    if literal.contains(['.', 'e', 'E']) {
        match literal.parse::<f64>() {
            Ok(double) if literal != "." => Ok(Token::Double(double)),
            _ => Err(format!(
                "bad \\set syntax: invalid number \"{literal}\" in \"{text}\""
            )),
        }
    } else {
        literal.parse::<i64>().map(Token::Int).map_err(|_| {
            format!("bad \\set syntax: integer {literal} is out of the 64-bit range in \"{text}\"")
        })
    }
}

/// Recursive-descent parser: sum := product (('+'|'-') product)*,
/// product := unary (('*'|'/'|'%') unary)*, unary := ('-'|'+') unary | primary.
struct ExpressionParser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    position: usize,
    /// How many `parse_unary` calls are open: the nesting so far.
    depth: usize,
    slot_by_name: &'a HashMap<String, usize>,
}

impl ExpressionParser<'_> {
    fn syntax_error(&self, detail: &str) -> String {
        format!("bad \\set syntax: {detail} in \"{}\"", self.text)
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position)
    }

    fn next_token(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.position).cloned();
        if token.is_some() {
            self.position += 1;
        }
        token
    }

    fn parse_sum(&mut self) -> Result<Expr, String> {
        let mut left = self.parse_product()?;
        loop {
            let op = match self.peek() {
                Some(Token::Plus) => BinaryOp::Add,
                Some(Token::Minus) => BinaryOp::Subtract,
                _ => return Ok(left),
            };
            self.position += 1;
            let right = self.parse_product()?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn parse_product(&mut self) -> Result<Expr, String> {
        let mut left = self.parse_unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Star) => BinaryOp::Multiply,
                Some(Token::Slash) => BinaryOp::Divide,
                Some(Token::Percent) => BinaryOp::Modulo,
                _ => return Ok(left),
            };
            self.position += 1;
            let right = self.parse_unary()?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    /// Every nesting (parentheses, signs, calls) passes through here, so the
    /// depth is counted here.
    fn parse_unary(&mut self) -> Result<Expr, String> {
        if self.depth == MAX_NESTING {
            return Err(self.syntax_error(&format!(
                "more than {MAX_NESTING} nested parentheses, signs or calls; simplify the \
                 expression or split it over several \\set commands"
            )));
        }
        self.depth += 1;
        let result = self.parse_signed();
        self.depth -= 1;
        result
    }

    fn parse_signed(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(Token::Minus) => {
                self.position += 1;
                let inner = self.parse_unary()?;
                // Fold negative literals so `-5` is a literal for the parse-time checks.
                Ok(match inner {
                    Expr::Int(integer) => match integer.checked_neg() {
                        Some(negated) => Expr::Int(negated),
                        None => Expr::Negate(Box::new(Expr::Int(integer))),
                    },
                    Expr::Double(double) => Expr::Double(-double),
                    other => Expr::Negate(Box::new(other)),
                })
            }
            Some(Token::Plus) => {
                self.position += 1;
                self.parse_unary()
            }
            _ => self.parse_primary(),
        }
    }

    fn parse_primary(&mut self) -> Result<Expr, String> {
        match self.next_token() {
            Some(Token::Int(integer)) => Ok(Expr::Int(integer)),
            Some(Token::Double(double)) => Ok(Expr::Double(double)),
            Some(Token::Variable(name)) => match self.slot_by_name.get(&name) {
                Some(slot) => Ok(Expr::Variable { slot: *slot, name }),
                None => Err(format!(
                    "undefined variable :{name} in \\set; assign it with \\set earlier in the \
                     script or define it outside the script (like pgbench -D {name}=value); \
                     predefined are client_id and scale"
                )),
            },
            Some(Token::LeftParen) => {
                let inner = self.parse_sum()?;
                match self.next_token() {
                    Some(Token::RightParen) => Ok(inner),
                    Some(other) => {
                        Err(self
                            .syntax_error(&format!("expected ')' but found {}", other.describe())))
                    }
                    None => Err(self.syntax_error("missing ')'")),
                }
            }
            Some(Token::Word(name)) => self.parse_call(name),
            Some(other) => Err(self.syntax_error(&format!("unexpected {}", other.describe()))),
            None => Err(self.syntax_error("the expression ends where a value is expected")),
        }
    }

    fn parse_call(&mut self, name: String) -> Result<Expr, String> {
        if self.peek() != Some(&Token::LeftParen) {
            return Err(self.syntax_error(&format!(
                "unexpected word \"{name}\"; variables are written :{name}, functions as \
                 {name}(...)"
            )));
        }
        self.position += 1;
        let function = match Function::from_name(&name) {
            Some(function) => function,
            None => {
                return Err(format!(
                    "unknown function {name} in \\set; supported: {}",
                    supported_function_names()
                ));
            }
        };
        let mut args = Vec::new();
        if self.peek() == Some(&Token::RightParen) {
            self.position += 1;
        } else {
            loop {
                args.push(self.parse_sum()?);
                match self.next_token() {
                    Some(Token::Comma) => {}
                    Some(Token::RightParen) => break,
                    Some(other) => {
                        return Err(self.syntax_error(&format!(
                            "expected ',' or ')' in the arguments of {} but found {}",
                            function.name(),
                            other.describe()
                        )));
                    }
                    None => {
                        return Err(self.syntax_error(&format!(
                            "missing ')' after the arguments of {}",
                            function.name()
                        )));
                    }
                }
            }
        }
        let (fewest, most) = function.argument_count();
        let wanted = match most {
            Some(most) if most == fewest => format!("{fewest}"),
            Some(most) => format!("{fewest} to {most}"),
            None => format!("at least {fewest}"),
        };
        if args.len() < fewest || most.is_some_and(|most| args.len() > most) {
            return Err(format!(
                "function {} takes {wanted} argument(s) but got {} in \"{}\"",
                function.name(),
                args.len(),
                self.text
            ));
        }
        check_literal_arguments(function, &args)?;
        Ok(Expr::Call { function, args })
    }
}

/// Checks limits that literal arguments already break, so the error comes at parse time.
fn check_literal_arguments(function: Function, args: &[Expr]) -> Result<(), String> {
    let is_random = matches!(
        function,
        Function::Random | Function::RandomExponential | Function::RandomGaussian
    );
    if !is_random {
        return Ok(());
    }
    if let (Expr::Int(lb), Expr::Int(ub)) = (&args[0], &args[1])
        && lb > ub
    {
        return Err(format!(
            "empty range in {}({lb}, {ub}, ...): the lower bound is greater than the upper \
                 bound; swap them",
            function.name()
        ));
    }
    let parameter = match args.get(2) {
        Some(Expr::Int(integer)) => *integer as f64,
        Some(Expr::Double(double)) => *double,
        _ => return Ok(()),
    };
    if function == Function::RandomExponential && !(parameter > 0.0 && parameter.is_finite()) {
        return Err(format!(
            "random_exponential parameter must be greater than 0, got {parameter}"
        ));
    }
    if function == Function::RandomGaussian
        && !(parameter >= MIN_GAUSSIAN_PARAMETER && parameter.is_finite())
    {
        return Err(format!(
            "random_gaussian parameter must be at least {MIN_GAUSSIAN_PARAMETER:.1}, got \
             {parameter}"
        ));
    }
    Ok(())
}
