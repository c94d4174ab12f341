use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI, TAU};

use proptest::prelude::*;
use yamor_core::matheval::{Arity, Context, Engine, ErrorKind, Expr, MAX_DEPTH, m2pi};

fn real(text: &str) -> f64 {
    real_in(text, &Context::new())
}

fn real_in(text: &str, context: &Context) -> f64 {
    let expr = Expr::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    expr.eval_real(context)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn int(text: &str) -> Result<i64, (usize, ErrorKind)> {
    int_in(text, &Context::new())
}

fn int_in(text: &str, context: &Context) -> Result<i64, (usize, ErrorKind)> {
    Expr::parse(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .eval_int(context)
        .map_err(|e| (e.position, e.kind))
}

/// The first error parsing or (real engine) evaluating `text`: byte
/// position and kind.
fn error(text: &str) -> (usize, ErrorKind) {
    let e = match Expr::parse(text) {
        Err(e) => e,
        Ok(expr) => expr.eval_real(&Context::new()).unwrap_err(),
    };
    (e.position, e.kind)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(real("1 + 2 * 3"), 7.0);
    assert_eq!(real("1 + 6 / 3 * 2"), 5.0);
    assert_eq!(real("(1 + 2) * 3"), 9.0);
    assert_eq!(real("10 - 4 - 3"), 3.0);
    assert_eq!(real("10 - (4 - 3)"), 9.0);
    assert_eq!(real("64 / 4 / 2"), 8.0);
    assert_eq!(real("2 ^ 3 ^ 2"), 512.0);
    assert_eq!(real("(2 ^ 3) ^ 2"), 64.0);
    assert_eq!(real("2 * 3 ^ 2"), 18.0);
    assert_eq!(real("((((7))))"), 7.0);
}

#[test]
fn unary_signs() {
    assert_eq!(real("-2 ^ 2"), -4.0);
    assert_eq!(real("(-2) ^ 2"), 4.0);
    assert_eq!(real("2 ^ -1"), 0.5);
    assert_eq!(real("2 * -3"), -6.0);
    assert_eq!(real("-3 * 2"), -6.0);
    assert_eq!(real("--3"), 3.0);
    assert_eq!(real("+3 - -1"), 4.0);
    assert_eq!(real("- (1 + 2)"), -3.0);
    assert_eq!(real("-+-1"), 1.0);
}

#[test]
fn numbers() {
    assert_eq!(real("1.5e2 + .5"), 150.5);
    assert_eq!(real("1e-3"), 0.001);
    assert_eq!(real("2.5E+1"), 25.0);
    assert_eq!(real("5."), 5.0);
    assert_eq!(real("007"), 7.0);
    assert_eq!(real("1e-999"), 0.0);
    assert_eq!(
        real("123456789012345678901234567890"),
        1.2345678901234568e29
    );
}

#[test]
fn functions_with_arguments_and_bare_names() {
    let c = Context::new();
    assert!(close(real("sin(pi() / 2)"), 1.0));
    assert!(close(real("sin (pi / 2)"), 1.0));
    assert!(close(real("cos(0) + tan(0)"), 1.0));
    assert!(close(real("asin(1)"), FRAC_PI_2));
    assert!(close(real("acos(1) + atan(1)"), FRAC_PI_4));
    assert!(close(real("atan2(1, 1)"), FRAC_PI_4));
    assert!(close(real("sqrt(16) + exp(0) + ln(e) + log10(100)"), 8.0));
    assert_eq!(real("abs(-3) + pow(2, 3)"), 11.0);
    assert_eq!(real("floor(2.7) + ceil(2.2) + round(2.5)"), 8.0);
    assert_eq!(real("min(3, 1, 2) + max(3, 1, 2) + max(4)"), 8.0);
    assert_eq!(real("pi"), real("pi()"));
    assert_eq!(real("e"), real("e()"));
    assert_eq!(real_in("max(1, max(2, 3), min(4, 5, 6))", &c), 4.0);
}

#[test]
fn parameters_are_functions_without_arguments() {
    let mut c = Context::new();
    c.set_parameter("phase_0_1", 1.0);
    c.set_parameter("x", 2.0);
    assert_eq!(real_in("phase_0_1() + x", &c), 3.0);
    assert_eq!(real_in("phase_0_1 + x()", &c), 3.0);
    assert_eq!(real_in("max(1, x, phase_0_1) * pow(x, 3)", &c), 16.0);
    c.set_parameter("x", 5.0);
    assert_eq!(c.parameter("x"), Some(5.0));
    assert_eq!(real_in("x", &c), 5.0);
    let e = Expr::parse("x(1, 2)").unwrap().eval_real(&c).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::WrongArity {
            name: "x".into(),
            expected: Arity::Exactly(0),
            got: 2
        }
    );
    assert_eq!(
        e.to_string(),
        r#"at column 1: "x" takes 0 arguments, got 2"#
    );
}

#[test]
fn registered_functions_shadow_parameters() {
    let mut c = Context::new();
    c.set_parameter("double", 100.0);
    assert_eq!(real_in("double", &c), 100.0);
    c.register("double", Arity::Exactly(1), |a| Ok(2.0 * a[0]));
    assert_eq!(real_in("double(4)", &c), 8.0);
    // The parameter is still set, but the function wins.
    assert_eq!(c.parameter("double"), Some(100.0));
    assert!(c.has_function("double"));
    let e = Expr::parse("double").unwrap().eval_real(&c).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::WrongArity { got: 0, .. }));
}

#[test]
fn user_functions_variadic_and_failing() {
    let mut c = Context::new();
    c.register("sum", Arity::AtLeast(0), |a| Ok(a.iter().sum()));
    c.register("inv", Arity::Exactly(1), |a| {
        if a[0] == 0.0 {
            Err("zero has no inverse".into())
        } else {
            Ok(1.0 / a[0])
        }
    });
    assert_eq!(real_in("sum()", &c), 0.0);
    assert_eq!(real_in("sum(1, 2, 3, 4)", &c), 10.0);
    assert_eq!(real_in("inv(4)", &c), 0.25);
    let e = Expr::parse("1 + inv(0)")
        .unwrap()
        .eval_real(&c)
        .unwrap_err();
    assert_eq!(e.position, 4);
    assert_eq!(
        e.kind,
        ErrorKind::Function {
            name: "inv".into(),
            message: "zero has no inverse".into()
        }
    );
    assert_eq!(e.to_string(), r#"at column 5: "inv": zero has no inverse"#);
    // Registering replaces a builtin.
    c.register("sin", Arity::Exactly(1), |_| Ok(42.0));
    assert_eq!(real_in("sin(0)", &c), 42.0);
    // A context without builtins knows nothing.
    assert_eq!(
        Expr::parse("pi")
            .unwrap()
            .eval_real(&Context::empty())
            .unwrap_err()
            .kind,
        ErrorKind::UnknownName("pi".into())
    );
}

#[test]
fn m2pi_reaches_the_nearest_multiple_of_two_pi() {
    for x in [
        0.0, 1.0, -1.0, 3.0, 3.2, 4.0, 7.0, -7.0, 100.0, -100.0, PI, -PI,
    ] {
        let d = m2pi(x);
        assert!(d > -PI && d <= PI + 1e-12, "{x} gives {d}");
        let turns = (x + d) / TAU;
        assert!((turns - turns.round()).abs() < 1e-12, "{x} + {d}");
    }
    // Exactly half a turn away from two multiples: the result is +π.
    assert_eq!(m2pi(PI), PI);
    assert_eq!(m2pi(-PI), PI);
    assert_eq!(m2pi(0.0), 0.0);
    assert!(close(m2pi(0.5), -0.5));
    assert!(close(m2pi(TAU - 0.5), 0.5));
    assert!(close(real("M2Pi(3*pi()/2)"), FRAC_PI_2));
    assert!(m2pi(f64::NAN).is_nan());
}

#[test]
fn real_engine_is_ieee() {
    assert_eq!(real("1 / 0"), f64::INFINITY);
    assert_eq!(real("-1 / 0"), f64::NEG_INFINITY);
    assert!(real("0 / 0").is_nan());
    assert!(real("sqrt(-1)").is_nan());
    assert_eq!(real("10 ^ 400"), f64::INFINITY);
}

#[test]
fn every_parse_error_has_its_position_and_reason() {
    use ErrorKind::*;
    assert_eq!(error("1 + $"), (4, UnexpectedCharacter('$')));
    assert_eq!(error("é"), (0, UnexpectedCharacter('é')));
    assert_eq!(error("1 +"), (3, UnexpectedEnd));
    assert_eq!(error(""), (0, UnexpectedEnd));
    assert_eq!(error("   "), (3, UnexpectedEnd));
    assert_eq!(error("-"), (1, UnexpectedEnd));
    assert_eq!(error("(1 + 2"), (0, UnclosedBracket));
    assert_eq!(error("2 * (1 + (2)"), (4, UnclosedBracket));
    assert_eq!(error("sin(1"), (3, UnclosedBracket));
    assert_eq!(error("max(1,"), (6, UnexpectedEnd));
    assert_eq!(error("1 + 2)"), (5, UnmatchedBracket));
    assert_eq!(error("1 + )"), (4, UnmatchedBracket));
    assert_eq!(error(")"), (0, UnmatchedBracket));
    assert_eq!(error("1 * * 2"), (4, MissingOperand('*')));
    assert_eq!(error("^2"), (0, MissingOperand('^')));
    assert_eq!(error("2 ^ ^ 2"), (4, MissingOperand('^')));
    assert_eq!(error("()"), (1, MissingOperand(')')));
    assert_eq!(error("max(1,)"), (6, MissingOperand(')')));
    assert_eq!(error("max(,1)"), (4, MissingOperand(',')));
    assert_eq!(
        error("(1 2)"),
        (
            3,
            Expected {
                expected: "an operator or ')'",
                found: '2'
            }
        )
    );
    assert_eq!(
        error("max(1 2)"),
        (
            6,
            Expected {
                expected: "',' or ')' after an argument",
                found: '2'
            }
        )
    );
    assert_eq!(error("1 2"), (2, TrailingInput('2')));
    assert_eq!(error("1, 2"), (1, TrailingInput(',')));
    assert_eq!(error("pi() x"), (5, TrailingInput('x')));
    assert_eq!(error("1..2"), (0, BadNumber("1..2".into())));
    assert_eq!(error("3 * 2pi"), (4, BadNumber("2pi".into())));
    assert_eq!(error("1e"), (0, BadNumber("1e".into())));
    assert_eq!(error("1e+"), (0, BadNumber("1e".into())));
    assert_eq!(error("."), (0, BadNumber(".".into())));
    assert_eq!(error("1 + 1e999"), (4, NumberOutOfRange("1e999".into())));
    let long = "9".repeat(400);
    let (_, kind) = error(&long);
    assert_eq!(kind, NumberOutOfRange(format!("{}...", "9".repeat(40))));
}

#[test]
fn every_evaluation_error_has_its_position_and_reason() {
    assert_eq!(
        error("2 * phase_9_9()"),
        (4, ErrorKind::UnknownName("phase_9_9".into()))
    );
    assert_eq!(
        error("sin(1, 2)"),
        (
            0,
            ErrorKind::WrongArity {
                name: "sin".into(),
                expected: Arity::Exactly(1),
                got: 2
            }
        )
    );
    assert_eq!(
        error("1 + max()"),
        (
            4,
            ErrorKind::WrongArity {
                name: "max".into(),
                expected: Arity::AtLeast(1),
                got: 0
            }
        )
    );
    // The innermost failure is reported.
    assert_eq!(error("max(1, sin(nosuch))").0, "max(1, sin(".len());
}

#[test]
fn messages_name_the_column_and_the_reason() {
    let message = |text: &str| match Expr::parse(text) {
        Err(e) => e.to_string(),
        Ok(expr) => expr.eval_real(&Context::new()).unwrap_err().to_string(),
    };
    assert_eq!(
        message("1 + 2*phase_9_9"),
        r#"at column 7: unknown name "phase_9_9": neither a parameter nor a function"#
    );
    assert_eq!(
        message("1 +"),
        "at column 4: unexpected end of the expression: an operand is missing"
    );
    assert_eq!(
        message("(1"),
        "at column 1: unbalanced bracket: this '(' is never closed"
    );
    assert_eq!(
        message("1)"),
        "at column 2: unbalanced bracket: this ')' has no matching '('"
    );
    assert_eq!(
        message("1 2"),
        "at column 3: unexpected '2' after the end of the expression"
    );
    assert_eq!(
        message("1 * / 2"),
        "at column 5: missing operand before '/'"
    );
    assert_eq!(
        message("max()"),
        r#"at column 1: "max" takes at least 1 argument, got 0"#
    );
    assert_eq!(
        message("atan2(1)"),
        r#"at column 1: "atan2" takes 2 arguments, got 1"#
    );
    // Columns count characters, positions count bytes.
    let e = Expr::parse("\u{3000}1 +").unwrap_err();
    assert_eq!((e.position, e.column), (6, 5));
    let e = Expr::parse("1 + \u{3000}\u{3000}$").unwrap_err();
    assert_eq!((e.position, e.column), (10, 7));
}

#[test]
fn integer_engine_is_exact_and_checked() {
    assert_eq!(int("7 / 2"), Ok(3));
    assert_eq!(int("-7 / 2"), Ok(-3));
    assert_eq!(int("7 / -2"), Ok(-3));
    assert_eq!(int("1 + 2 * 3 - 4"), Ok(3));
    assert_eq!(int("2 ^ 10"), Ok(1024));
    assert_eq!(int("2 ^ 62"), Ok(1 << 62));
    assert_eq!(int("-2 ^ 63"), Err((3, ErrorKind::Overflow)));
    assert_eq!(int("(-2) ^ 63"), Ok(i64::MIN));
    assert_eq!(int("0 ^ 0"), Ok(1));
    assert_eq!(int("1 ^ 99999999999"), Ok(1));
    assert_eq!(int("(-1) ^ 99999999999"), Ok(-1));
    assert_eq!(int("2 ^ 99999999999"), Err((2, ErrorKind::Overflow)));
    assert_eq!(int("1e3 + 1"), Ok(1001));
    assert_eq!(int("9223372036854775807"), Ok(i64::MAX));
    assert_eq!(int("-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(int("1 / (2 - 2)"), Err((2, ErrorKind::DivisionByZero)));
    assert_eq!(
        int("9223372036854775807 + 1"),
        Err((20, ErrorKind::Overflow))
    );
    assert_eq!(
        int("-9223372036854775807 - 2"),
        Err((21, ErrorKind::Overflow))
    );
    assert_eq!(
        int("4611686018427387904 * 2"),
        Err((20, ErrorKind::Overflow))
    );
    assert_eq!(
        int("-9223372036854775808 / -1"),
        Err((21, ErrorKind::Overflow))
    );
    assert_eq!(
        int("-(-9223372036854775807 - 1)"),
        Err((0, ErrorKind::Overflow))
    );
    assert_eq!(int("2 ^ -1"), Err((2, ErrorKind::NegativeExponent)));
    assert_eq!(int("1 + 1.5"), Err((4, ErrorKind::NotAnInteger(1.5))));
    assert_eq!(int("1e30"), Err((0, ErrorKind::Overflow)));
    assert_eq!(int("abs(-3) + max(1, 5) + min(4, 2) + pow(2, 3)"), Ok(18));
    assert_eq!(
        int("abs(-9223372036854775808)"),
        Err((0, ErrorKind::Overflow))
    );
    assert_eq!(int("pow(2, -1)"), Err((0, ErrorKind::NegativeExponent)));
    assert_eq!(
        int("1 + sin(0)"),
        Err((
            4,
            ErrorKind::WrongEngine {
                name: "sin".into(),
                engine: Engine::Integer
            }
        ))
    );
    assert!(matches!(int("pi"), Err((0, ErrorKind::WrongEngine { .. }))));
}

#[test]
fn integer_engine_rounds_parameters_and_has_its_own_functions() {
    let mut c = Context::new();
    for (value, want) in [(2.5, Ok(3)), (-2.5, Ok(-3)), (2.4, Ok(2)), (-0.4, Ok(0))] {
        c.set_parameter("x", value);
        assert_eq!(int_in("x", &c), want, "{value}");
    }
    c.set_parameter("x", f64::NAN);
    assert!(matches!(int_in("x", &c), Err((0, ErrorKind::NotAnInteger(v))) if v.is_nan()));
    c.set_parameter("x", 1e30);
    assert_eq!(int_in("x", &c), Err((0, ErrorKind::Overflow)));

    c.register_int("idiv", Arity::Exactly(2), |a| {
        a[0].checked_div_euclid(a[1])
            .ok_or_else(|| "undefined".into())
    });
    assert_eq!(int_in("idiv(-7, 2)", &c), Ok(-4));
    assert_eq!(
        int_in("idiv(1, 0)", &c),
        Err((
            0,
            ErrorKind::Function {
                name: "idiv".into(),
                message: "undefined".into()
            }
        ))
    );
    let e = Expr::parse("idiv(1, 2)")
        .unwrap()
        .eval_real(&c)
        .unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::WrongEngine {
            name: "idiv".into(),
            engine: Engine::Real
        }
    );
    assert_eq!(
        e.to_string(),
        r#"at column 1: function "idiv" has no real version"#
    );
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    // `k` brackets take `k + 1` levels.
    let nested = |k: usize| format!("{}1{}", "(".repeat(k), ")".repeat(k));
    assert_eq!(real(&nested(MAX_DEPTH - 1)), 1.0);
    let e = Expr::parse(&nested(MAX_DEPTH)).unwrap_err();
    assert_eq!((e.position, &e.kind), (MAX_DEPTH, &ErrorKind::TooDeep));
    assert_eq!(
        e.to_string(),
        format!("at column {}: nested deeper than 256 levels", MAX_DEPTH + 1)
    );
    for deep in [
        nested(100_000),
        format!("{}1", "-".repeat(100_000)),
        format!("{}1", "2^".repeat(100_000)),
        format!("{}1{}", "sin(".repeat(100_000), ")".repeat(100_000)),
        "(".repeat(1_000_000),
    ] {
        assert_eq!(Expr::parse(&deep).unwrap_err().kind, ErrorKind::TooDeep);
    }
    // The deepest accepted expression evaluates and prints.
    let deepest = format!("{}1", "-".repeat(MAX_DEPTH - 1));
    let expr = Expr::parse(&deepest).unwrap();
    assert_eq!(expr.eval_real(&Context::new()).unwrap(), -1.0);
    assert_eq!(Expr::parse(&expr.to_string()).unwrap(), expr);
}

#[test]
fn long_chains_cost_no_stack() {
    let terms = 200_000;
    let sum = format!("1{}", " + 1".repeat(terms));
    let expr = Expr::parse(&sum).unwrap();
    assert_eq!(expr.eval_real(&Context::new()).unwrap(), (terms + 1) as f64);
    assert_eq!(expr.eval_int(&Context::new()).unwrap(), (terms + 1) as i64);
    assert_eq!(Expr::parse(&expr.to_string()).unwrap(), expr);
    let args = format!("max({}1)", "1, ".repeat(terms));
    assert_eq!(real(&args), 1.0);
    let spaces = format!("{}1{}", " ".repeat(1_000_000), " ".repeat(1_000_000));
    assert_eq!(real(&spaces), 1.0);
}

#[test]
fn display_is_canonical_and_minimal() {
    let canonical = |text: &str| Expr::parse(text).unwrap().to_string();
    assert_eq!(canonical("1+2*3"), "1 + 2 * 3");
    assert_eq!(canonical("(1+2)*3"), "(1 + 2) * 3");
    assert_eq!(canonical("(1+2)+3"), "(1 + 2) + 3");
    assert_eq!(canonical("1+(2+3)"), "1 + (2 + 3)");
    assert_eq!(canonical("((1))"), "1");
    assert_eq!(canonical("-2^2"), "-2 ^ 2");
    assert_eq!(canonical("(-2)^2"), "(-2) ^ 2");
    assert_eq!(canonical("2^3^2"), "2 ^ 3 ^ 2");
    assert_eq!(canonical("(2^3)^2"), "(2 ^ 3) ^ 2");
    assert_eq!(canonical("2^-x"), "2 ^ -x()");
    assert_eq!(canonical("--x"), "--x()");
    assert_eq!(canonical("+x"), "x()");
    assert_eq!(canonical("-(a*b)"), "-(a() * b())");
    assert_eq!(canonical("1e3 + 0.5 + 7"), "1000.0 + 0.5 + 7");
    assert_eq!(
        canonical("M2Pi( phase_0_1()+phase_1_2 ( ) )"),
        "M2Pi(phase_0_1() + phase_1_2())"
    );
    // Equality is structural: spacing and redundant brackets do not matter,
    // grouping does.
    assert_eq!(
        Expr::parse("1+2").unwrap(),
        Expr::parse(" ( 1 + 2 ) ").unwrap()
    );
    assert_ne!(
        Expr::parse("1+2+3").unwrap(),
        Expr::parse("1+(2+3)").unwrap()
    );
    assert_ne!(Expr::parse("2").unwrap(), Expr::parse("2.0").unwrap());
    let expr: Expr = "phase_0_1 + 1".parse().unwrap();
    assert_eq!(expr.source(), "phase_0_1 + 1");
    assert_eq!(format!("{expr:?}"), r#"Expr("phase_0_1() + 1")"#);
}

#[test]
fn names_lists_every_call() {
    let expr = Expr::parse("M2Pi(phase_0_1() + phase_1_2) * x - -pi ^ y").unwrap();
    assert_eq!(
        expr.names(),
        ["M2Pi", "phase_0_1", "phase_1_2", "x", "pi", "y"]
    );
}

#[test]
fn context_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Expr>();
}

/// A generated expression tree, evaluated here without the library.
#[derive(Debug, Clone)]
enum Tree {
    Num(f64),
    X,
    Neg(Box<Tree>),
    Bin(char, Box<Tree>, Box<Tree>),
    Max(Box<Tree>, Box<Tree>),
}

impl Tree {
    fn value(&self, x: f64) -> f64 {
        match self {
            Tree::Num(v) => *v,
            Tree::X => x,
            Tree::Neg(a) => -a.value(x),
            Tree::Bin(op, a, b) => {
                let (a, b) = (a.value(x), b.value(x));
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' => a / b,
                    _ => a.powf(b),
                }
            }
            Tree::Max(a, b) => a.value(x).max(b.value(x)),
        }
    }

    /// Exact integer value with checked arithmetic, truncating division;
    /// `None` on division by zero or overflow.
    fn int_value(&self, x: i64) -> Option<i64> {
        match self {
            Tree::Num(v) => Some(*v as i64),
            Tree::X => Some(x),
            Tree::Neg(a) => a.int_value(x)?.checked_neg(),
            Tree::Bin(op, a, b) => {
                let (a, b) = (a.int_value(x)?, b.int_value(x)?);
                match op {
                    '+' => a.checked_add(b),
                    '-' => a.checked_sub(b),
                    '*' => a.checked_mul(b),
                    '/' => a.checked_div(b),
                    _ => unreachable!("no powers in integer trees"),
                }
            }
            Tree::Max(a, b) => Some(a.int_value(x)?.max(b.int_value(x)?)),
        }
    }

    fn precedence(&self) -> u8 {
        match self {
            Tree::Bin('+' | '-', ..) => 1,
            Tree::Bin('*' | '/', ..) => 2,
            Tree::Neg(_) => 3,
            Tree::Bin(..) => 4,
            _ => 5,
        }
    }

    /// Text with the textbook rules, brackets only where precedence or
    /// associativity demand them: an independent statement of the grammar.
    fn text(&self) -> String {
        let wrap = |t: &Tree, bracket: bool| {
            if bracket {
                format!("({})", t.text())
            } else {
                t.text()
            }
        };
        match self {
            Tree::Num(v) => format!("{v}"),
            Tree::X => "x".to_owned(),
            Tree::Neg(a) => format!("-{}", wrap(a, a.precedence() < 3)),
            Tree::Bin('^', a, b) => {
                format!(
                    "{}^{}",
                    wrap(a, a.precedence() <= 4),
                    wrap(b, b.precedence() < 3)
                )
            }
            Tree::Bin(op, a, b) => {
                let p = self.precedence();
                format!(
                    "{} {op} {}",
                    wrap(a, a.precedence() < p),
                    wrap(b, b.precedence() <= p)
                )
            }
            Tree::Max(a, b) => format!("max({}, {})", a.text(), b.text()),
        }
    }
}

fn arb_tree(ops: &'static [char], decimals: bool) -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        (0u32..1000).prop_map(|n| Tree::Num(f64::from(n))),
        (0u32..4000).prop_map(move |n| Tree::Num(if decimals {
            f64::from(n) / 8.0
        } else {
            f64::from(n)
        })),
        Just(Tree::X),
    ];
    leaf.prop_recursive(6, 64, 2, move |inner| {
        prop_oneof![
            (inner.clone(), proptest::sample::select(ops), inner.clone())
                .prop_map(|(a, op, b)| Tree::Bin(op, Box::new(a), Box::new(b))),
            inner.clone().prop_map(|a| Tree::Neg(Box::new(a))),
            (inner.clone(), inner).prop_map(|(a, b)| Tree::Max(Box::new(a), Box::new(b))),
        ]
    })
}

/// Well-formed text in every shape the grammar allows: spaces, redundant
/// brackets, unary plus, bare names, calls with 0 to 3 arguments, every
/// number form.
fn arb_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (0u64..100_000).prop_map(|n| n.to_string()),
        (0u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
        (0u32..100).prop_map(|n| format!(".{n}")),
        (1u32..10, -20i32..20).prop_map(|(m, e)| format!("{m}e{e}")),
        Just("9223372036854775807".to_owned()),
        Just("99999999999999999999".to_owned()),
        "[a-z_][a-z0-9_]{0,6}",
        "[a-z_][a-z0-9_]{0,6}\\(\\)",
    ];
    leaf.prop_recursive(6, 64, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                proptest::sample::select(&["+", "-", "*", "/", "^", " + ", "*-", "^-"][..]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("{a}{op}{b}")),
            (
                proptest::sample::select(&["-", "+", "- "][..]),
                inner.clone()
            )
                .prop_map(|(sign, a)| format!("{sign}{a}")),
            inner.clone().prop_map(|a| format!("( {a} )")),
            (
                "[a-z_][a-z0-9_]{0,4}",
                proptest::collection::vec(inner, 0..4)
            )
                .prop_map(|(name, args)| format!("{name}({})", args.join(", "))),
        ]
    })
}

proptest! {
    #[test]
    fn never_panics_on_any_input(text in "\\PC{0,80}") {
        if let Ok(e) = Expr::parse(&text) {
            let _ = e.eval_real(&Context::new());
            let _ = e.eval_int(&Context::new());
            let _ = Expr::parse(&e.to_string());
        }
    }

    #[test]
    fn never_panics_on_operator_soup(text in "[0-9a-z_(),.eE+*/^ -]{0,60}") {
        let mut c = Context::new();
        for name in ["x", "y", "a", "e1"] {
            c.set_parameter(name, 2.5);
        }
        if let Ok(e) = Expr::parse(&text) {
            let _ = e.eval_real(&c);
            let _ = e.eval_int(&c);
            prop_assert_eq!(Expr::parse(&e.to_string()).unwrap(), e);
        }
    }

    #[test]
    fn well_formed_text_round_trips_through_display(text in arb_text()) {
        let e = Expr::parse(&text).map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?;
        let shown = e.to_string();
        let again = Expr::parse(&shown).unwrap();
        prop_assert_eq!(&again, &e, "{} shown as {}", text, shown);
        prop_assert_eq!(again.to_string(), shown);
    }

    #[test]
    fn real_engine_matches_the_reference(
        tree in arb_tree(&['+', '-', '*', '/', '^'], true),
        x in -10.0f64..10.0,
    ) {
        let mut c = Context::new();
        c.set_parameter("x", x);
        let text = tree.text();
        let expr = Expr::parse(&text).unwrap();
        let got = expr.eval_real(&c).unwrap();
        let want = tree.value(x);
        prop_assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{} gave {} not {}", text, got, want
        );
        prop_assert_eq!(Expr::parse(&expr.to_string()).unwrap(), expr);
    }

    #[test]
    fn integer_engine_matches_the_reference(
        tree in arb_tree(&['+', '-', '*', '/'], false),
        x in -1000i64..1000,
    ) {
        let mut c = Context::new();
        c.set_parameter("x", x as f64);
        let text = tree.text();
        let got = Expr::parse(&text).unwrap().eval_int(&c);
        match tree.int_value(x) {
            Some(want) => prop_assert_eq!(got, Ok(want), "{}", text),
            None => prop_assert!(
                matches!(
                    got.as_ref().map_err(|e| &e.kind),
                    Err(ErrorKind::DivisionByZero | ErrorKind::Overflow)
                ),
                "{} gave {:?}", text, got
            ),
        }
    }
}
