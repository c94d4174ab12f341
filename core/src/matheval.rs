//! MathEval (thesis 5.6): arithmetic expressions with user functions,
//! evaluated by a real (`f64`) or an integer (`i64`) engine.
//!
//! The optimizer evaluates constraint expressions thousands of times, so an
//! expression is parsed once into an [`Expr`] and evaluated many times
//! against a [`Context`] that holds functions and parameter values.
//!
//! # Grammar
//!
//! Loosest binding first:
//! ```text
//! sum     := product (('+' | '-') product)*     left-associative
//! product := unary (('*' | '/') unary)*         left-associative
//! unary   := ('-' | '+') unary | power
//! power   := atom ('^' unary)?                  right-associative: 2^3^2 = 2^9
//! atom    := number | name '(' (sum (',' sum)*)? ')' | name | '(' sum ')'
//! number  := digits ('.' digits)? ([eE] [+-]? digits)?   also ".5" and "5."
//! name    := [A-Za-z_][A-Za-z0-9_]*
//! ```
//! `^` binds tighter than a unary minus on its left, as in mathematics:
//! `-2^2 = -4`, while `2^-1 = 0.5`. A bare `name` is a call without
//! arguments, so the thesis' `phase_0_1()` and the shorter `phase_0_1` mean
//! the same.
//!
//! # Names
//!
//! A call resolves to a registered function first, then to a parameter
//! (thesis 5.6.2: registered functions come first). A parameter takes no
//! arguments. [`Context::new`] registers sin cos tan asin acos atan atan2
//! sqrt exp ln log10 abs pow min max floor ceil round pi e and `M2Pi`
//! ([`m2pi`]).
//!
//! # Engines
//!
//! The real engine is plain IEEE arithmetic: `1/0` is infinity, not an
//! error; whether a non-finite result is acceptable is the caller's call.
//!
//! The integer engine mirrors the thesis' `MathEval<int>` with exact,
//! checked `i64` arithmetic, so a wrong result is never silent:
//! - division truncates toward zero; dividing by zero, overflow and a
//!   negative exponent are errors;
//! - a literal must be an integer (`1e3` is, `1.5` is an error);
//! - parameters are `f64` and are rounded to the nearest integer, halves
//!   away from zero (2.5 counts as 3); NaN or infinity is an error;
//! - functions need an integer version: the builtins `abs`, `min`, `max` and
//!   `pow` have one, the others (sin, pi, ...) are errors there, and users
//!   add their own with [`Context::register_int`].
//!
//! # Robustness
//!
//! Parsing and evaluation never panic. Nesting (brackets, calls, unary
//! signs, powers) deeper than [`MAX_DEPTH`] is refused instead of
//! overflowing the stack, and long chains such as `1+1+...+1` are stored
//! flat, so their length costs no stack either.

use std::collections::HashMap;
use std::f64::consts::{E, PI, TAU};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

/// Nesting deeper than this many levels is refused instead of overflowing
/// the stack. A level is a bracket, a function call, a unary sign or a `^`.
pub const MAX_DEPTH: usize = 256;

/// Longest number literal quoted back in an error message.
const QUOTE_LIMIT: usize = 40;

/// Which engine evaluates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Real,
    Integer,
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Real => "real",
            Engine::Integer => "integer",
        })
    }
}

/// How many arguments a function takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    /// Variadic, such as `max(a, b, ...)`.
    AtLeast(usize),
}

impl Arity {
    #[must_use]
    pub fn accepts(self, count: usize) -> bool {
        match self {
            Arity::Exactly(n) => count == n,
            Arity::AtLeast(n) => count >= n,
        }
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (prefix, n) = match *self {
            Arity::Exactly(n) => ("", n),
            Arity::AtLeast(n) => ("at least ", n),
        };
        let plural = if n == 1 { "" } else { "s" };
        write!(f, "{prefix}{n} argument{plural}")
    }
}

/// What went wrong; [`ExprError`] adds where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    /// A character that has no place in an expression, such as `$`.
    #[error("unexpected character {0:?}")]
    UnexpectedCharacter(char),
    /// The text ended where an operand was expected (`1 +`, or nothing).
    #[error("unexpected end of the expression: an operand is missing")]
    UnexpectedEnd,
    /// An opening bracket is never closed; the position is the `(`.
    #[error("unbalanced bracket: this '(' is never closed")]
    UnclosedBracket,
    /// A closing bracket without an opening one; the position is the `)`.
    #[error("unbalanced bracket: this ')' has no matching '('")]
    UnmatchedBracket,
    /// An operator, comma or `)` where an operand was expected (`1 * * 2`).
    #[error("missing operand before {0:?}")]
    MissingOperand(char),
    /// Inside brackets, something else than what may follow an operand.
    #[error("expected {expected}, found {found:?}")]
    Expected { expected: &'static str, found: char },
    /// A complete expression followed by more text (`1 2`).
    #[error("unexpected {0:?} after the end of the expression")]
    TrailingInput(char),
    #[error("malformed number {0:?}")]
    BadNumber(String),
    #[error("number {0} is too large")]
    NumberOutOfRange(String),
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// Neither a registered function nor a parameter (a parameter may be
    /// written `x` or `x()`, so the message names both).
    #[error("unknown name {0:?}: neither a parameter nor a function")]
    UnknownName(String),
    #[error("{name:?} takes {expected}, got {got}")]
    WrongArity {
        name: String,
        expected: Arity,
        got: usize,
    },
    /// The function has no implementation for this engine (`sin` in the
    /// integer engine).
    #[error("function {name:?} has no {engine} version")]
    WrongEngine { name: String, engine: Engine },
    /// A registered function refused its arguments.
    #[error("{name:?}: {message}")]
    Function { name: String, message: String },
    #[error("integer division by zero")]
    DivisionByZero,
    #[error("integer overflow")]
    Overflow,
    #[error("negative exponent in integer arithmetic")]
    NegativeExponent,
    /// A literal or parameter the integer engine cannot take as an integer.
    #[error("{0} is not an integer")]
    NotAnInteger(f64),
}

/// Why a registered function refused its arguments: the message an
/// [`ErrorKind::Function`] shows after the function's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FunctionRefusal(pub String);

impl From<String> for FunctionRefusal {
    fn from(message: String) -> Self {
        FunctionRefusal(message)
    }
}

impl From<&str> for FunctionRefusal {
    fn from(message: &str) -> Self {
        FunctionRefusal(message.to_owned())
    }
}

/// An error with its place in the source text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at column {column}: {kind}")]
pub struct ExprError {
    /// Byte offset into the source, 0-based.
    pub position: usize,
    /// Character column, 1-based, as a user counts.
    pub column: usize,
    pub kind: ErrorKind,
}

impl ExprError {
    fn new(source: &str, position: usize, kind: ErrorKind) -> Self {
        let column = source
            .get(..position)
            .map_or(position, |before| before.chars().count())
            + 1;
        ExprError {
            position,
            column,
            kind,
        }
    }
}

/// A parsed expression: parse once, evaluate many times.
///
/// Equality compares structure only: `1+2` equals `(1 + 2)`, and
/// `Display` writes the canonical text, with brackets only where needed, so
/// that parsing it again gives an equal `Expr`.
#[derive(Clone)]
pub struct Expr {
    root: Node,
    source: Box<str>,
}

#[derive(Debug, Clone)]
enum Node {
    /// A literal of digits only that fits an `i64`, exact in both engines.
    Int(i64),
    /// Any other literal (`1.5`, `1e3`, too many digits for `i64`).
    Real {
        value: f64,
        at: usize,
    },
    Neg {
        operand: Box<Node>,
        at: usize,
    },
    /// Operands joined by `+`/`-` or by `*`/`/`, evaluated left to right.
    /// Flat rather than a left-deep tree so that a long sum costs no stack.
    Chain {
        first: Box<Node>,
        rest: Vec<Link>,
    },
    Pow {
        base: Box<Node>,
        exponent: Box<Node>,
        at: usize,
    },
    Call {
        name: String,
        args: Vec<Node>,
        at: usize,
    },
}

/// One `op operand` step of a [`Node::Chain`]; `at` is the operator's byte.
#[derive(Debug, Clone)]
struct Link {
    op: Op,
    at: usize,
    operand: Node,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    fn symbol(self) -> char {
        match self {
            Op::Add => '+',
            Op::Sub => '-',
            Op::Mul => '*',
            Op::Div => '/',
        }
    }

    fn additive(c: char) -> Option<Op> {
        match c {
            '+' => Some(Op::Add),
            '-' => Some(Op::Sub),
            _ => None,
        }
    }

    fn multiplicative(c: char) -> Option<Op> {
        match c {
            '*' => Some(Op::Mul),
            '/' => Some(Op::Div),
            _ => None,
        }
    }
}

impl PartialEq for Node {
    /// Structure and values; positions are ignored.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Node::Int(a), Node::Int(b)) => a == b,
            (Node::Real { value: a, .. }, Node::Real { value: b, .. }) => {
                a.to_bits() == b.to_bits()
            }
            (Node::Neg { operand: a, .. }, Node::Neg { operand: b, .. }) => a == b,
            (Node::Chain { first: a, rest: r }, Node::Chain { first: b, rest: s }) => {
                a == b
                    && r.len() == s.len()
                    && r.iter()
                        .zip(s)
                        .all(|(x, y)| x.op == y.op && x.operand == y.operand)
            }
            (
                Node::Pow {
                    base: a,
                    exponent: x,
                    ..
                },
                Node::Pow {
                    base: b,
                    exponent: y,
                    ..
                },
            ) => a == b && x == y,
            (
                Node::Call {
                    name: a, args: x, ..
                },
                Node::Call {
                    name: b, args: y, ..
                },
            ) => a == b && x == y,
            _ => false,
        }
    }
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expr").field(&self.to_string()).finish()
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
    /// Brackets currently open, to tell `()` (a missing operand) from a
    /// stray `)`.
    open: usize,
}

impl Parser<'_> {
    fn error(&self, position: usize, kind: ErrorKind) -> ExprError {
        ExprError::new(self.text, position, kind)
    }

    /// The next non-space character, after moving past the spaces.
    fn peek(&mut self) -> Option<char> {
        let rest = &self.text[self.pos..];
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        trimmed.chars().next()
    }

    fn sum(&mut self) -> Result<Node, ExprError> {
        self.chain(Parser::product, Op::additive)
    }

    fn product(&mut self) -> Result<Node, ExprError> {
        self.chain(Parser::unary, Op::multiplicative)
    }

    fn chain(
        &mut self,
        operand: fn(&mut Self) -> Result<Node, ExprError>,
        operator: fn(char) -> Option<Op>,
    ) -> Result<Node, ExprError> {
        let first = operand(self)?;
        let mut rest = Vec::new();
        while let Some(op) = self.peek().and_then(operator) {
            let at = self.pos;
            self.pos += 1;
            rest.push(Link {
                op,
                at,
                operand: operand(self)?,
            });
        }
        Ok(if rest.is_empty() {
            first
        } else {
            Node::Chain {
                first: Box::new(first),
                rest,
            }
        })
    }

    /// Every recursion of the parser passes through here, so counting the
    /// depth here bounds the stack.
    fn unary(&mut self) -> Result<Node, ExprError> {
        let next = self.peek();
        if self.depth >= MAX_DEPTH {
            return Err(self.error(self.pos, ErrorKind::TooDeep));
        }
        self.depth += 1;
        let result = match next {
            Some('-') => {
                let at = self.pos;
                self.pos += 1;
                self.unary().map(|operand| Node::Neg {
                    operand: Box::new(operand),
                    at,
                })
            }
            Some('+') => {
                self.pos += 1;
                self.unary()
            }
            _ => self.power(),
        };
        self.depth -= 1;
        result
    }

    fn power(&mut self) -> Result<Node, ExprError> {
        let base = self.atom()?;
        if self.peek() != Some('^') {
            return Ok(base);
        }
        let at = self.pos;
        self.pos += 1;
        let exponent = self.unary()?;
        Ok(Node::Pow {
            base: Box::new(base),
            exponent: Box::new(exponent),
            at,
        })
    }

    fn atom(&mut self) -> Result<Node, ExprError> {
        let next = self.peek();
        let at = self.pos;
        match next {
            None => Err(self.error(at, ErrorKind::UnexpectedEnd)),
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => self.call(),
            Some('(') => {
                self.pos += 1;
                self.open += 1;
                let inner = self.sum()?;
                self.close(at, "an operator or ')'")?;
                self.open -= 1;
                Ok(inner)
            }
            Some(')') if self.open == 0 => Err(self.error(at, ErrorKind::UnmatchedBracket)),
            Some(c @ ('*' | '/' | '^' | ',' | ')')) => {
                Err(self.error(at, ErrorKind::MissingOperand(c)))
            }
            Some(c) => Err(self.error(at, ErrorKind::UnexpectedCharacter(c))),
        }
    }

    /// Expects the `)` closing the bracket opened at `open_at`.
    fn close(&mut self, open_at: usize, expected: &'static str) -> Result<(), ExprError> {
        match self.peek() {
            Some(')') => {
                self.pos += 1;
                Ok(())
            }
            None => Err(self.error(open_at, ErrorKind::UnclosedBracket)),
            Some(found) => Err(self.error(self.pos, ErrorKind::Expected { expected, found })),
        }
    }

    fn call(&mut self) -> Result<Node, ExprError> {
        let at = self.pos;
        let rest = &self.text[at..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = rest[..len].to_owned();
        self.pos += len;
        let mut args = Vec::new();
        if self.peek() == Some('(') {
            let open_at = self.pos;
            self.pos += 1;
            self.open += 1;
            if self.peek() == Some(')') {
                self.pos += 1;
            } else {
                loop {
                    args.push(self.sum()?);
                    if self.peek() == Some(',') {
                        self.pos += 1;
                    } else {
                        self.close(open_at, "',' or ')' after an argument")?;
                        break;
                    }
                }
            }
            self.open -= 1;
        }
        Ok(Node::Call { name, args, at })
    }

    fn number(&mut self) -> Result<Node, ExprError> {
        let at = self.pos;
        let bytes = self.text.as_bytes();
        let digit_or_dot = |i: usize| {
            bytes
                .get(i)
                .is_some_and(|b| b.is_ascii_digit() || *b == b'.')
        };
        let digit = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
        let mut end = at;
        while digit_or_dot(end) {
            end += 1;
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            let mut e = end + 1;
            if matches!(bytes.get(e), Some(b'+' | b'-')) {
                e += 1;
            }
            if digit(e) {
                while digit(e) {
                    e += 1;
                }
                end = e;
            }
        }
        // A number running straight into letters, digits or dots is one
        // malformed token ("2pi", "1e", "1.2.3"), not a number and a name.
        let mut bad_end = end;
        while bytes
            .get(bad_end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.')
        {
            bad_end += 1;
        }
        if bad_end > end {
            return Err(self.error(at, ErrorKind::BadNumber(quote(&self.text[at..bad_end]))));
        }
        let literal = &self.text[at..end];
        self.pos = end;
        if literal.bytes().all(|b| b.is_ascii_digit())
            && let Ok(value) = literal.parse::<i64>()
        {
            return Ok(Node::Int(value));
        }
        match literal.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(Node::Real { value, at }),
            Ok(_) => Err(self.error(at, ErrorKind::NumberOutOfRange(quote(literal)))),
            Err(_) => Err(self.error(at, ErrorKind::BadNumber(quote(literal)))),
        }
    }
}

/// `text`, shortened so a huge input does not end up whole in a message.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

impl FromStr for Expr {
    type Err = ExprError;

    fn from_str(text: &str) -> Result<Self, ExprError> {
        Expr::parse(text)
    }
}

impl Expr {
    /// Parses `text`; errors carry the position.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let mut parser = Parser {
            text,
            pos: 0,
            depth: 0,
            open: 0,
        };
        let root = parser.sum()?;
        match parser.peek() {
            None => Ok(Expr {
                root,
                source: text.into(),
            }),
            Some(')') => Err(parser.error(parser.pos, ErrorKind::UnmatchedBracket)),
            Some(c) => Err(parser.error(parser.pos, ErrorKind::TrailingInput(c))),
        }
    }

    /// The text this expression was parsed from, as written.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every name called in the expression (functions and parameters), in
    /// order of appearance, repeats included.
    #[must_use]
    pub fn names(&self) -> Vec<&str> {
        fn visit<'a>(node: &'a Node, out: &mut Vec<&'a str>) {
            match node {
                Node::Int(_) | Node::Real { .. } => {}
                Node::Neg { operand, .. } => visit(operand, out),
                Node::Chain { first, rest } => {
                    visit(first, out);
                    for link in rest {
                        visit(&link.operand, out);
                    }
                }
                Node::Pow { base, exponent, .. } => {
                    visit(base, out);
                    visit(exponent, out);
                }
                Node::Call { name, args, .. } => {
                    out.push(name);
                    for arg in args {
                        visit(arg, out);
                    }
                }
            }
        }
        let mut out = Vec::new();
        visit(&self.root, &mut out);
        out
    }

    fn fail(&self, position: usize, kind: ErrorKind) -> ExprError {
        ExprError::new(&self.source, position, kind)
    }

    /// Evaluates with the real engine (IEEE `f64`).
    pub fn eval_real(&self, context: &Context) -> Result<f64, ExprError> {
        self.real(&self.root, context)
    }

    fn real(&self, node: &Node, context: &Context) -> Result<f64, ExprError> {
        Ok(match node {
            Node::Int(value) => *value as f64,
            Node::Real { value, .. } => *value,
            Node::Neg { operand, .. } => -self.real(operand, context)?,
            Node::Chain { first, rest } => {
                let mut acc = self.real(first, context)?;
                for link in rest {
                    let value = self.real(&link.operand, context)?;
                    acc = match link.op {
                        Op::Add => acc + value,
                        Op::Sub => acc - value,
                        Op::Mul => acc * value,
                        Op::Div => acc / value,
                    };
                }
                acc
            }
            Node::Pow { base, exponent, .. } => self
                .real(base, context)?
                .powf(self.real(exponent, context)?),
            Node::Call { name, args, at } => {
                let values = args
                    .iter()
                    .map(|arg| self.real(arg, context))
                    .collect::<Result<Vec<_>, _>>()?;
                context
                    .call_real(name, &values)
                    .map_err(|kind| self.fail(*at, kind))?
            }
        })
    }

    /// Evaluates with the integer engine: exact checked `i64` arithmetic
    /// (see the module documentation for literals, parameters and
    /// functions).
    pub fn eval_int(&self, context: &Context) -> Result<i64, ExprError> {
        self.int(&self.root, context)
    }

    fn int(&self, node: &Node, context: &Context) -> Result<i64, ExprError> {
        match node {
            Node::Int(value) => Ok(*value),
            Node::Real { value, at } => exact_int(*value).map_err(|kind| self.fail(*at, kind)),
            Node::Neg { operand, at } => {
                // `-9223372036854775808` is in range although its digits
                // alone are not.
                if let Node::Real { value, .. } = **operand {
                    return exact_int(-value).map_err(|kind| self.fail(*at, kind));
                }
                self.int(operand, context)?
                    .checked_neg()
                    .ok_or_else(|| self.fail(*at, ErrorKind::Overflow))
            }
            Node::Chain { first, rest } => {
                let mut acc = self.int(first, context)?;
                for link in rest {
                    let value = self.int(&link.operand, context)?;
                    let result = match link.op {
                        Op::Add => acc.checked_add(value),
                        Op::Sub => acc.checked_sub(value),
                        Op::Mul => acc.checked_mul(value),
                        Op::Div if value == 0 => {
                            return Err(self.fail(link.at, ErrorKind::DivisionByZero));
                        }
                        Op::Div => acc.checked_div(value),
                    };
                    acc = result.ok_or_else(|| self.fail(link.at, ErrorKind::Overflow))?;
                }
                Ok(acc)
            }
            Node::Pow { base, exponent, at } => {
                let base = self.int(base, context)?;
                let exponent = self.int(exponent, context)?;
                int_pow(base, exponent).map_err(|kind| self.fail(*at, kind))
            }
            Node::Call { name, args, at } => {
                let values = args
                    .iter()
                    .map(|arg| self.int(arg, context))
                    .collect::<Result<Vec<_>, _>>()?;
                context
                    .call_int(name, &values)
                    .map_err(|kind| self.fail(*at, kind))
            }
        }
    }
}

/// 2⁶³, the first `f64` above `i64::MAX`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// `value` as an `i64` if it is an integer in range.
fn exact_int(value: f64) -> Result<i64, ErrorKind> {
    if !value.is_finite() || value.fract() != 0.0 {
        Err(ErrorKind::NotAnInteger(value))
    } else if !(-TWO_POW_63..TWO_POW_63).contains(&value) {
        Err(ErrorKind::Overflow)
    } else {
        Ok(value as i64)
    }
}

/// `base^exponent`, exact; `0^0 = 1`. Bases 0 and ±1 take any exponent.
fn int_pow(base: i64, exponent: i64) -> Result<i64, ErrorKind> {
    if exponent < 0 {
        return Err(ErrorKind::NegativeExponent);
    }
    match base {
        0 => Ok(i64::from(exponent == 0)),
        1 => Ok(1),
        -1 => Ok(if exponent % 2 == 0 { 1 } else { -1 }),
        _ => u32::try_from(exponent)
            .ok()
            .and_then(|e| base.checked_pow(e))
            .ok_or(ErrorKind::Overflow),
    }
}

/// Binding strength, to bracket only where the parser needs it.
fn precedence(node: &Node) -> u8 {
    match node {
        Node::Chain { rest, .. } => match rest.first().map(|l| l.op) {
            Some(Op::Add | Op::Sub) => 1,
            _ => 2,
        },
        Node::Neg { .. } => 3,
        Node::Pow { .. } => 4,
        Node::Int(_) | Node::Real { .. } | Node::Call { .. } => 5,
    }
}

/// Writes `node`, bracketed if it binds looser than `min`.
fn write_node(f: &mut fmt::Formatter<'_>, node: &Node, min: u8) -> fmt::Result {
    let bracket = precedence(node) < min;
    if bracket {
        f.write_str("(")?;
    }
    match node {
        Node::Int(value) => write!(f, "{value}")?,
        // `{:?}` keeps a `.0` or an exponent, so the literal reads back as
        // a real, and is the shortest text giving the same bits.
        Node::Real { value, .. } => write!(f, "{value:?}")?,
        Node::Neg { operand, .. } => {
            f.write_str("-")?;
            write_node(f, operand, 3)?;
        }
        Node::Chain { first, rest } => {
            // Operands of the same level are bracketed too: `(a + b) + c`
            // is a different tree from `a + b + c`.
            let inner = precedence(node) + 1;
            write_node(f, first, inner)?;
            for link in rest {
                write!(f, " {} ", link.op.symbol())?;
                write_node(f, &link.operand, inner)?;
            }
        }
        Node::Pow { base, exponent, .. } => {
            write_node(f, base, 5)?;
            f.write_str(" ^ ")?;
            write_node(f, exponent, 3)?;
        }
        Node::Call { name, args, .. } => {
            write!(f, "{name}(")?;
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_node(f, arg, 0)?;
            }
            f.write_str(")")?;
        }
    }
    if bracket {
        f.write_str(")")?;
    }
    Ok(())
}

impl fmt::Display for Expr {
    /// The canonical text: brackets only where needed, calls always with
    /// `()`. Parsing it gives an equal `Expr`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_node(f, &self.root, 0)
    }
}

/// The angle to add to `x` to reach the nearest multiple of 2π (thesis
/// 5.7.2's `M2Pi`), in (−π, π].
///
/// The nearest multiple keeps the correction small: a phase constraint such
/// as `phase_3_0 = M2Pi(phase_0_1 + phase_1_2 + phase_2_3)` closes the loop
/// of lags to a whole number of turns with a lag within half a turn.
#[must_use]
pub fn m2pi(x: f64) -> f64 {
    let to_add = (x / TAU).round() * TAU - x;
    if to_add <= -PI { to_add + TAU } else { to_add }
}

type RealFn = Arc<dyn Fn(&[f64]) -> Result<f64, ErrorKind> + Send + Sync>;
type IntFn = Arc<dyn Fn(&[i64]) -> Result<i64, ErrorKind> + Send + Sync>;

/// A function of either or both engines.
#[derive(Clone)]
struct Function {
    arity: Arity,
    real: Option<RealFn>,
    int: Option<IntFn>,
}

/// Registered functions and parameter values: what names in an expression
/// mean. Cheap to clone; `Send + Sync`, so one context can serve several
/// threads.
#[derive(Clone)]
pub struct Context {
    functions: HashMap<String, Function>,
    parameters: HashMap<String, f64>,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut functions: Vec<&str> = self.functions.keys().map(String::as_str).collect();
        functions.sort_unstable();
        let mut parameters: Vec<(&str, f64)> = self
            .parameters
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        parameters.sort_unstable_by(|a, b| a.0.cmp(b.0));
        f.debug_struct("Context")
            .field("functions", &functions)
            .field("parameters", &parameters)
            .finish()
    }
}

fn builtins() -> &'static HashMap<String, Function> {
    static BUILTINS: OnceLock<HashMap<String, Function>> = OnceLock::new();
    BUILTINS.get_or_init(|| {
        type Unary = fn(f64) -> f64;
        let mut map = HashMap::new();
        let mut add = |name: &str, arity, real: RealFn, int: Option<IntFn>| {
            map.insert(
                name.to_owned(),
                Function {
                    arity,
                    real: Some(real),
                    int,
                },
            );
        };
        let unary: [(&str, Unary); 15] = [
            ("sin", f64::sin),
            ("cos", f64::cos),
            ("tan", f64::tan),
            ("asin", f64::asin),
            ("acos", f64::acos),
            ("atan", f64::atan),
            ("sqrt", f64::sqrt),
            ("exp", f64::exp),
            ("ln", f64::ln),
            ("log10", f64::log10),
            ("floor", f64::floor),
            ("ceil", f64::ceil),
            ("round", f64::round),
            ("abs", f64::abs),
            ("M2Pi", m2pi),
        ];
        for (name, f) in unary {
            let int: Option<IntFn> = (name == "abs").then(|| {
                Arc::new(|a: &[i64]| a[0].checked_abs().ok_or(ErrorKind::Overflow)) as IntFn
            });
            add(name, Arity::Exactly(1), Arc::new(move |a| Ok(f(a[0]))), int);
        }
        add(
            "atan2",
            Arity::Exactly(2),
            Arc::new(|a| Ok(a[0].atan2(a[1]))),
            None,
        );
        add(
            "pow",
            Arity::Exactly(2),
            Arc::new(|a| Ok(a[0].powf(a[1]))),
            Some(Arc::new(|a| int_pow(a[0], a[1]))),
        );
        add("pi", Arity::Exactly(0), Arc::new(|_| Ok(PI)), None);
        add("e", Arity::Exactly(0), Arc::new(|_| Ok(E)), None);
        add(
            "min",
            Arity::AtLeast(1),
            Arc::new(|a| Ok(a.iter().copied().reduce(f64::min).unwrap_or(f64::NAN))),
            Some(Arc::new(|a| {
                a.iter().copied().min().ok_or(ErrorKind::Overflow)
            })),
        );
        add(
            "max",
            Arity::AtLeast(1),
            Arc::new(|a| Ok(a.iter().copied().reduce(f64::max).unwrap_or(f64::NAN))),
            Some(Arc::new(|a| {
                a.iter().copied().max().ok_or(ErrorKind::Overflow)
            })),
        );
        map
    })
}

impl Context {
    /// A context with the builtin functions (see the module documentation)
    /// and no parameters.
    #[must_use]
    pub fn new() -> Self {
        Context {
            functions: builtins().clone(),
            parameters: HashMap::new(),
        }
    }

    /// A context without any function, for a language of parameters only.
    #[must_use]
    pub fn empty() -> Self {
        Context {
            functions: HashMap::new(),
            parameters: HashMap::new(),
        }
    }

    /// Registers a real-engine function, replacing any function of that
    /// name (its integer version too). The arity is checked before `f` is
    /// called; an `Err` becomes an [`ErrorKind::Function`] at the call.
    pub fn register(
        &mut self,
        name: &str,
        arity: Arity,
        f: impl Fn(&[f64]) -> Result<f64, FunctionRefusal> + Send + Sync + 'static,
    ) {
        let owned = name.to_owned();
        let real: RealFn = Arc::new(move |args| {
            f(args).map_err(|FunctionRefusal(message)| ErrorKind::Function {
                name: owned.clone(),
                message,
            })
        });
        self.functions.insert(
            name.to_owned(),
            Function {
                arity,
                real: Some(real),
                int: None,
            },
        );
    }

    /// Registers an integer-engine function, replacing any function of
    /// that name (its real version too): as in the thesis' generic
    /// `MathEval<int>`, its arguments and result are integers.
    pub fn register_int(
        &mut self,
        name: &str,
        arity: Arity,
        f: impl Fn(&[i64]) -> Result<i64, FunctionRefusal> + Send + Sync + 'static,
    ) {
        let owned = name.to_owned();
        let int: IntFn = Arc::new(move |args| {
            f(args).map_err(|FunctionRefusal(message)| ErrorKind::Function {
                name: owned.clone(),
                message,
            })
        });
        self.functions.insert(
            name.to_owned(),
            Function {
                arity,
                real: None,
                int: Some(int),
            },
        );
    }

    /// Whether a function of that name is registered (in either engine).
    #[must_use]
    pub fn has_function(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// Sets a parameter, callable as `name()` or `name`. A registered
    /// function of the same name shadows it.
    pub fn set_parameter(&mut self, name: &str, value: f64) {
        // Updating in place keeps the optimizer's many updates free of
        // allocations.
        match self.parameters.get_mut(name) {
            Some(slot) => *slot = value,
            None => {
                self.parameters.insert(name.to_owned(), value);
            }
        }
    }

    #[must_use]
    pub fn parameter(&self, name: &str) -> Option<f64> {
        self.parameters.get(name).copied()
    }

    /// Looks `name` up: the function if there is one, else the parameter.
    fn resolve(&self, name: &str, got: usize) -> Result<Resolved<'_>, ErrorKind> {
        if let Some(function) = self.functions.get(name) {
            if !function.arity.accepts(got) {
                return Err(ErrorKind::WrongArity {
                    name: name.to_owned(),
                    expected: function.arity,
                    got,
                });
            }
            return Ok(Resolved::Function(function));
        }
        match self.parameters.get(name) {
            Some(_) if got > 0 => Err(ErrorKind::WrongArity {
                name: name.to_owned(),
                expected: Arity::Exactly(0),
                got,
            }),
            Some(value) => Ok(Resolved::Parameter(*value)),
            None => Err(ErrorKind::UnknownName(name.to_owned())),
        }
    }

    fn call_real(&self, name: &str, args: &[f64]) -> Result<f64, ErrorKind> {
        match self.resolve(name, args.len())? {
            Resolved::Parameter(value) => Ok(value),
            Resolved::Function(Function { real: Some(f), .. }) => f(args),
            Resolved::Function(_) => Err(ErrorKind::WrongEngine {
                name: name.to_owned(),
                engine: Engine::Real,
            }),
        }
    }

    fn call_int(&self, name: &str, args: &[i64]) -> Result<i64, ErrorKind> {
        match self.resolve(name, args.len())? {
            Resolved::Parameter(value) if value.is_finite() => exact_int(value.round()),
            Resolved::Parameter(value) => Err(ErrorKind::NotAnInteger(value)),
            Resolved::Function(Function { int: Some(f), .. }) => f(args),
            Resolved::Function(_) => Err(ErrorKind::WrongEngine {
                name: name.to_owned(),
                engine: Engine::Integer,
            }),
        }
    }
}

enum Resolved<'a> {
    Function(&'a Function),
    Parameter(f64),
}
