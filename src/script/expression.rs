//! The syntax tree of `\set`, `\if` and `\elif` expressions, shaped as
//! pgbench shapes it: operators are calls of the functions they name (`a > b`
//! is `<` with its arguments swapped, `-x` is `0 - x`, `~x` is `-1 # x`), so
//! that evaluation order, NULL handling and errors follow pgbench's.
//! Variables are resolved to slots while parsing.

use super::value::Scalar;

/// An expression, with variables resolved to slots.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant: NULL, TRUE/FALSE, an integer or a double.
    Const(Scalar),
    /// `:name`.
    Variable {
        /// Slot of the variable.
        slot: usize,
        /// Its name, for errors.
        name: String,
    },
    /// `:{?name}`: whether the variable is defined (a stallbench extension in expressions).
    Defined {
        /// Slot of the variable.
        slot: usize,
    },
    /// A function or operator applied to arguments evaluated first, left to
    /// right; a NULL argument makes the result NULL (except for `IS` and `debug`).
    Call {
        /// The function.
        function: Function,
        /// Its arguments (the count was checked by the parser).
        args: Vec<Expr>,
    },
    /// `a AND b`: `b` is evaluated only when needed.
    And(Box<Expr>, Box<Expr>),
    /// `a OR b`: `b` is evaluated only when needed.
    Or(Box<Expr>, Box<Expr>),
    /// `CASE WHEN c THEN v ... ELSE e END` (`ELSE NULL` when not written).
    Case {
        /// The `WHEN condition THEN value` pairs, in order.
        branches: Vec<(Expr, Expr)>,
        /// The `ELSE` value.
        otherwise: Box<Expr>,
    },
}

/// A function or operator of pgbench's expression language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Add,
    Subtract,
    Multiply,
    Divide,
    /// `%` and `mod()`.
    Modulo,
    Equal,
    NotEqual,
    LessOrEqual,
    Less,
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
    Not,
    /// `x IS NULL`, `x IS TRUE`, ...: same type and same boolean.
    Is,
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    HashFnv1a,
    HashMurmur2,
    Int,
    Least,
    Ln,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Sqrt,
}

/// How many arguments a function takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arity {
    Exactly(usize),
    /// `least`, `greatest`: one or more.
    AtLeastOne,
    /// `hash*`: a value and an optional seed (`:default_seed`).
    HashLike,
    /// `permute`: a value, a size and an optional seed (`:default_seed`).
    PermuteLike,
}

/// The functions scripts call by name; `hash` and `power` are aliases.
const NAMED: [(&str, Function, Arity); 21] = [
    ("abs", Function::Abs, Arity::Exactly(1)),
    ("debug", Function::Debug, Arity::Exactly(1)),
    ("double", Function::Double, Arity::Exactly(1)),
    ("exp", Function::Exp, Arity::Exactly(1)),
    ("greatest", Function::Greatest, Arity::AtLeastOne),
    ("hash", Function::HashMurmur2, Arity::HashLike),
    ("hash_fnv1a", Function::HashFnv1a, Arity::HashLike),
    ("hash_murmur2", Function::HashMurmur2, Arity::HashLike),
    ("int", Function::Int, Arity::Exactly(1)),
    ("least", Function::Least, Arity::AtLeastOne),
    ("ln", Function::Ln, Arity::Exactly(1)),
    ("mod", Function::Modulo, Arity::Exactly(2)),
    ("permute", Function::Permute, Arity::PermuteLike),
    ("pi", Function::Pi, Arity::Exactly(0)),
    ("pow", Function::Pow, Arity::Exactly(2)),
    ("power", Function::Pow, Arity::Exactly(2)),
    ("random", Function::Random, Arity::Exactly(2)),
    (
        "random_exponential",
        Function::RandomExponential,
        Arity::Exactly(3),
    ),
    (
        "random_gaussian",
        Function::RandomGaussian,
        Arity::Exactly(3),
    ),
    ("random_zipfian", Function::RandomZipfian, Arity::Exactly(3)),
    ("sqrt", Function::Sqrt, Arity::Exactly(1)),
];

impl Function {
    /// The function a script calls `name` (any case), with its arity.
    pub(super) fn by_name(name: &str) -> Option<(Function, Arity)> {
        NAMED
            .iter()
            .find(|(known, _, _)| known.eq_ignore_ascii_case(name))
            .map(|(_, function, arity)| (*function, *arity))
    }

    /// The names scripts can call, for error messages.
    pub(super) fn names() -> String {
        NAMED
            .iter()
            .map(|(name, _, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The name pgbench's messages use for the function or operator.
    pub fn name(self) -> &'static str {
        match self {
            Function::Add => "+",
            Function::Subtract => "-",
            Function::Multiply => "*",
            Function::Divide => "/",
            Function::Modulo => "%",
            Function::Equal => "=",
            Function::NotEqual => "<>",
            Function::LessOrEqual => "<=",
            Function::Less => "<",
            Function::BitAnd => "&",
            Function::BitOr => "|",
            Function::BitXor => "#",
            Function::ShiftLeft => "<<",
            Function::ShiftRight => ">>",
            Function::Not => "NOT",
            Function::Is => "IS",
            other => NAMED
                .iter()
                .find(|(_, function, _)| *function == other)
                .map_or("?", |(name, _, _)| name),
        }
    }
}
