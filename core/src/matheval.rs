//! MathEval (thesis 5.6): arithmetic expressions with functions, evaluated
//! by a real (f64) or an integer (i64) engine.
//!
//! Grammar, loosest binding first:
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/') unary)*
//! unary   := ('-' | '+') unary | power
//! power   := atom ('^' unary)?            right-associative; -2^2 = -4
//! atom    := number | name '(' args? ')' | name | '(' expr ')'
//! ```
//! A bare `name` is a call without arguments, so the thesis' `phase_0_1()`
//! and the shorter `phase_0_1` mean the same. Names resolve to registered
//! functions first, then to parameters.
//!
//! Parsing never panics and never recurses deeper than [`MAX_DEPTH`].

use std::collections::HashMap;
use std::f64::consts::{E, PI, TAU};
use std::fmt;
use std::sync::Arc;

/// Nesting deeper than this is refused instead of overflowing the stack.
pub const MAX_DEPTH: usize = 256;

/// A parsed expression: parse once, evaluate many times. Equality compares
/// structure, not where in the source a name stood.
#[derive(Debug, Clone)]
pub enum Expr {
    Number(f64),
    Neg(Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
    Call {
        name: String,
        args: Vec<Expr>,
        /// Byte offset of the name, for evaluation errors.
        at: usize,
    },
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Expr::Number(a), Expr::Number(b)) => a.to_bits() == b.to_bits(),
            (Expr::Neg(a), Expr::Neg(b)) => a == b,
            (Expr::Binary(o, a, b), Expr::Binary(p, c, d)) => o == p && a == c && b == d,
            (
                Expr::Call { name, args, .. },
                Expr::Call {
                    name: other_name,
                    args: other_args,
                    ..
                },
            ) => name == other_name && args == other_args,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

impl Op {
    fn symbol(self) -> char {
        match self {
            Op::Add => '+',
            Op::Sub => '-',
            Op::Mul => '*',
            Op::Div => '/',
            Op::Pow => '^',
        }
    }
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    UnexpectedCharacter(char),
    UnexpectedEnd,
    UnbalancedBracket,
    MissingOperand,
    TrailingInput,
    BadNumber(String),
    TooDeep,
    UnknownFunction(String),
    WrongArity {
        name: String,
        expected: String,
        got: usize,
    },
    DivisionByZero,
    Overflow,
    NegativeExponent,
    Function {
        name: String,
        message: String,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnexpectedCharacter(c) => write!(f, "unexpected character {c:?}"),
            ErrorKind::UnexpectedEnd => write!(f, "unexpected end of expression"),
            ErrorKind::UnbalancedBracket => write!(f, "unbalanced bracket"),
            ErrorKind::MissingOperand => write!(f, "missing operand"),
            ErrorKind::TrailingInput => write!(f, "unexpected input after the expression"),
            ErrorKind::BadNumber(n) => write!(f, "malformed number {n:?}"),
            ErrorKind::TooDeep => write!(f, "nested deeper than {MAX_DEPTH} levels"),
            ErrorKind::UnknownFunction(n) => write!(f, "unknown function {n:?}"),
            ErrorKind::WrongArity {
                name,
                expected,
                got,
            } => write!(f, "{name} takes {expected} argument(s), got {got}"),
            ErrorKind::DivisionByZero => write!(f, "integer division by zero"),
            ErrorKind::Overflow => write!(f, "integer overflow"),
            ErrorKind::NegativeExponent => write!(f, "negative exponent in integer arithmetic"),
            ErrorKind::Function { name, message } => write!(f, "{name}: {message}"),
        }
    }
}

/// An error with its byte position in the source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at column {}: {kind}", .position + 1)]
pub struct ExprError {
    /// Byte offset (0-based); the message shows the 1-based column.
    pub position: usize,
    pub kind: ErrorKind,
}

fn err<T>(position: usize, kind: ErrorKind) -> Result<T, ExprError> {
    Err(ExprError { position, kind })
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while let Some(c) = self.text[self.pos..].chars().next() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.text[self.pos..].chars().next()
    }

    fn descend(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(self.pos, ErrorKind::TooDeep);
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, ExprError> {
        self.descend()?;
        let mut left = self.term()?;
        while let Some(c @ ('+' | '-')) = self.peek() {
            self.pos += 1;
            let right = self.term()?;
            let op = if c == '+' { Op::Add } else { Op::Sub };
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn term(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.unary()?;
        while let Some(c @ ('*' | '/')) = self.peek() {
            self.pos += 1;
            let right = self.unary()?;
            let op = if c == '*' { Op::Mul } else { Op::Div };
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.descend()?;
        let result = match self.peek() {
            Some('-') => {
                self.pos += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
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

    fn power(&mut self) -> Result<Expr, ExprError> {
        let base = self.atom()?;
        if self.peek() == Some('^') {
            self.pos += 1;
            let exponent = self.unary()?;
            return Ok(Expr::Binary(Op::Pow, Box::new(base), Box::new(exponent)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr, ExprError> {
        let start = self.pos;
        match self.peek() {
            None => err(self.pos, ErrorKind::UnexpectedEnd),
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let at = self.pos;
                let len = self.text[at..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(self.text.len() - at);
                let name = self.text[at..at + len].to_owned();
                self.pos += len;
                let mut args = Vec::new();
                if self.peek() == Some('(') {
                    let open = self.pos;
                    self.pos += 1;
                    if self.peek() == Some(')') {
                        self.pos += 1;
                    } else {
                        loop {
                            args.push(self.expr()?);
                            match self.peek() {
                                Some(',') => self.pos += 1,
                                Some(')') => {
                                    self.pos += 1;
                                    break;
                                }
                                None => return err(open, ErrorKind::UnbalancedBracket),
                                Some(c) => return err(self.pos, ErrorKind::UnexpectedCharacter(c)),
                            }
                        }
                    }
                }
                Ok(Expr::Call { name, args, at })
            }
            Some('(') => {
                self.pos += 1;
                let inner = self.expr()?;
                match self.peek() {
                    Some(')') => {
                        self.pos += 1;
                        Ok(inner)
                    }
                    None => err(start, ErrorKind::UnbalancedBracket),
                    Some(c) => err(self.pos, ErrorKind::UnexpectedCharacter(c)),
                }
            }
            Some(')') => err(self.pos, ErrorKind::UnbalancedBracket),
            Some('+' | '-' | '*' | '/' | '^' | ',') => err(self.pos, ErrorKind::MissingOperand),
            Some(c) => err(self.pos, ErrorKind::UnexpectedCharacter(c)),
        }
    }

    fn number(&mut self) -> Result<Expr, ExprError> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
            end += 1;
        }
        if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
            let mut e = end + 1;
            if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
                e += 1;
            }
            if e < bytes.len() && bytes[e].is_ascii_digit() {
                while e < bytes.len() && bytes[e].is_ascii_digit() {
                    e += 1;
                }
                end = e;
            }
        }
        let literal = &self.text[start..end];
        self.pos = end;
        match literal.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Expr::Number(v)),
            _ => err(start, ErrorKind::BadNumber(literal.to_owned())),
        }
    }
}

impl Expr {
    /// Parses `text`; errors carry the position.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let mut parser = Parser {
            text,
            pos: 0,
            depth: 0,
        };
        if parser.peek().is_none() {
            return err(0, ErrorKind::UnexpectedEnd);
        }
        let expr = parser.expr()?;
        match parser.peek() {
            None => Ok(expr),
            Some(')') => err(parser.pos, ErrorKind::UnbalancedBracket),
            Some(_) => err(parser.pos, ErrorKind::TrailingInput),
        }
    }

    /// Every name called in the expression (functions and parameters).
    #[must_use]
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.visit_names(&mut out);
        out
    }

    fn visit_names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Number(_) => {}
            Expr::Neg(e) => e.visit_names(out),
            Expr::Binary(_, a, b) => {
                a.visit_names(out);
                b.visit_names(out);
            }
            Expr::Call { name, args, .. } => {
                out.push(name);
                for a in args {
                    a.visit_names(out);
                }
            }
        }
    }

    /// Evaluates with the real engine.
    pub fn eval_real(&self, context: &Context) -> Result<f64, ExprError> {
        self.real(context, 0)
    }

    fn real(&self, context: &Context, depth: usize) -> Result<f64, ExprError> {
        if depth > MAX_DEPTH {
            return err(0, ErrorKind::TooDeep);
        }
        Ok(match self {
            Expr::Number(v) => *v,
            Expr::Neg(e) => -e.real(context, depth + 1)?,
            Expr::Binary(op, a, b) => {
                let (a, b) = (a.real(context, depth + 1)?, b.real(context, depth + 1)?);
                match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    Op::Div => a / b,
                    Op::Pow => a.powf(b),
                }
            }
            Expr::Call { name, args, at } => {
                let values = args
                    .iter()
                    .map(|a| a.real(context, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                context.call(name, &values, *at)?
            }
        })
    }

    /// Evaluates with the integer engine: checked arithmetic, truncating
    /// division; parameters and function results are rounded to the nearest
    /// integer (a parameter of 2.5 counts as 3).
    pub fn eval_int(&self, context: &Context) -> Result<i64, ExprError> {
        self.int(context, 0)
    }

    fn int(&self, context: &Context, depth: usize) -> Result<i64, ExprError> {
        if depth > MAX_DEPTH {
            return err(0, ErrorKind::TooDeep);
        }
        let position = |e: &Expr| match e {
            Expr::Call { at, .. } => *at,
            _ => 0,
        };
        match self {
            Expr::Number(v) => to_int(*v, 0),
            Expr::Neg(e) => e.int(context, depth + 1)?.checked_neg().ok_or(ExprError {
                position: position(e),
                kind: ErrorKind::Overflow,
            }),
            Expr::Binary(op, a, b) => {
                let at = position(b);
                let (a, b) = (a.int(context, depth + 1)?, b.int(context, depth + 1)?);
                let overflow = ExprError {
                    position: at,
                    kind: ErrorKind::Overflow,
                };
                match op {
                    Op::Add => a.checked_add(b).ok_or(overflow),
                    Op::Sub => a.checked_sub(b).ok_or(overflow),
                    Op::Mul => a.checked_mul(b).ok_or(overflow),
                    Op::Div if b == 0 => err(at, ErrorKind::DivisionByZero),
                    Op::Div => a.checked_div(b).ok_or(overflow),
                    Op::Pow if b < 0 => err(at, ErrorKind::NegativeExponent),
                    Op::Pow => u32::try_from(b)
                        .ok()
                        .and_then(|b| a.checked_pow(b))
                        .ok_or(overflow),
                }
            }
            Expr::Call { name, args, at } => {
                let values = args
                    .iter()
                    .map(|a| a.int(context, depth + 1).map(|v| v as f64))
                    .collect::<Result<Vec<_>, _>>()?;
                to_int(context.call(name, &values, *at)?, *at)
            }
        }
    }
}

fn to_int(v: f64, position: usize) -> Result<i64, ExprError> {
    let r = v.round();
    if r.is_finite() && r >= i64::MIN as f64 && r < i64::MAX as f64 {
        Ok(r as i64)
    } else {
        err(position, ErrorKind::Overflow)
    }
}

impl fmt::Display for Expr {
    /// Fully bracketed where needed, so display→parse gives the same tree.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Number(v) => write!(f, "{v:?}"),
            Expr::Neg(e) => write!(f, "-({e})"),
            Expr::Binary(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            Expr::Call { name, args, .. } => {
                write!(f, "{name}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
        }
    }
}

type UnaryFn = fn(f64) -> f64;
type Function = Arc<dyn Fn(&[f64]) -> Result<f64, String> + Send + Sync>;

#[derive(Clone)]
struct Registered {
    /// `None`: any number of arguments (at least one).
    arity: Option<usize>,
    f: Function,
}

/// Registered functions and parameter values.
#[derive(Clone)]
pub struct Context {
    functions: HashMap<String, Registered>,
    parameters: HashMap<String, f64>,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

/// The angle to add to `x` to reach the nearest multiple of 2π; in (−π, π].
#[must_use]
pub fn m2pi(x: f64) -> f64 {
    let to_add = (x / TAU).round() * TAU - x;
    if to_add <= -PI { to_add + TAU } else { to_add }
}

impl Context {
    /// A context with the standard functions: sin cos tan asin acos atan
    /// atan2 sqrt exp ln log10 abs pow min max floor ceil round pi e M2Pi.
    #[must_use]
    pub fn new() -> Self {
        let mut c = Context {
            functions: HashMap::new(),
            parameters: HashMap::new(),
        };
        let unary: [(&str, UnaryFn); 14] = [
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
            ("abs", f64::abs),
            ("floor", f64::floor),
            ("ceil", f64::ceil),
            ("round", f64::round),
        ];
        for (name, f) in unary {
            c.register(name, Some(1), move |a| Ok(f(a[0])));
        }
        c.register("M2Pi", Some(1), |a| Ok(m2pi(a[0])));
        c.register("atan2", Some(2), |a| Ok(a[0].atan2(a[1])));
        c.register("pow", Some(2), |a| Ok(a[0].powf(a[1])));
        c.register("pi", Some(0), |_| Ok(PI));
        c.register("e", Some(0), |_| Ok(E));
        c.register("min", None, |a| {
            Ok(a[1..].iter().copied().fold(a[0], f64::min))
        });
        c.register("max", None, |a| {
            Ok(a[1..].iter().copied().fold(a[0], f64::max))
        });
        c
    }

    /// Registers (or replaces) a function; `arity: None` is variadic (≥ 1).
    pub fn register(
        &mut self,
        name: &str,
        arity: Option<usize>,
        f: impl Fn(&[f64]) -> Result<f64, String> + Send + Sync + 'static,
    ) {
        self.functions.insert(
            name.to_owned(),
            Registered {
                arity,
                f: Arc::new(f),
            },
        );
    }

    /// Sets a parameter, callable as `name()` or `name`.
    pub fn set_parameter(&mut self, name: &str, value: f64) {
        self.parameters.insert(name.to_owned(), value);
    }

    #[must_use]
    pub fn parameter(&self, name: &str) -> Option<f64> {
        self.parameters.get(name).copied()
    }

    fn call(&self, name: &str, args: &[f64], at: usize) -> Result<f64, ExprError> {
        if let Some(r) = self.functions.get(name) {
            let ok = match r.arity {
                Some(n) => args.len() == n,
                None => !args.is_empty(),
            };
            if !ok {
                return err(
                    at,
                    ErrorKind::WrongArity {
                        name: name.to_owned(),
                        expected: r.arity.map_or("at least 1".to_owned(), |n| n.to_string()),
                        got: args.len(),
                    },
                );
            }
            return (r.f)(args).map_err(|message| ExprError {
                position: at,
                kind: ErrorKind::Function {
                    name: name.to_owned(),
                    message,
                },
            });
        }
        if let Some(v) = self.parameters.get(name) {
            if !args.is_empty() {
                return err(
                    at,
                    ErrorKind::WrongArity {
                        name: name.to_owned(),
                        expected: "0".into(),
                        got: args.len(),
                    },
                );
            }
            return Ok(*v);
        }
        err(at, ErrorKind::UnknownFunction(name.to_owned()))
    }
}
