use proptest::prelude::*;
use yamor_core::matheval::{Context, ErrorKind, Expr, m2pi};

fn real(text: &str) -> f64 {
    Expr::parse(text)
        .unwrap()
        .eval_real(&Context::new())
        .unwrap()
}

fn error(text: &str) -> (usize, ErrorKind) {
    let e = match Expr::parse(text) {
        Err(e) => e,
        Ok(expr) => expr.eval_real(&Context::new()).unwrap_err(),
    };
    (e.position, e.kind)
}

#[test]
fn precedence_associativity_and_unary_minus() {
    assert_eq!(real("1 + 2 * 3"), 7.0);
    assert_eq!(real("(1 + 2) * 3"), 9.0);
    assert_eq!(real("10 - 4 - 3"), 3.0);
    assert_eq!(real("64 / 4 / 2"), 8.0);
    assert_eq!(real("2 ^ 3 ^ 2"), 512.0);
    assert_eq!(real("-2 ^ 2"), -4.0);
    assert_eq!(real("2 * -3"), -6.0);
    assert_eq!(real("--3"), 3.0);
    assert_eq!(real("+3 - -1"), 4.0);
    assert_eq!(real("1.5e2 + .5"), 150.5);
}

#[test]
fn functions_with_arguments_and_parameters() {
    let mut c = Context::new();
    c.set_parameter("phase_0_1", 1.0);
    c.set_parameter("x", 2.0);
    let eval = |t: &str| Expr::parse(t).unwrap().eval_real(&c).unwrap();
    assert_eq!(eval("phase_0_1() + x"), 3.0);
    assert_eq!(eval("max(1, x, phase_0_1) * pow(x, 3)"), 16.0);
    assert!((eval("sin(pi() / 2)") - 1.0).abs() < 1e-12);
    assert!((eval("atan2(1, 1)") - std::f64::consts::FRAC_PI_4).abs() < 1e-12);
}

#[test]
fn registered_functions_shadow_parameters() {
    let mut c = Context::new();
    c.set_parameter("double", 100.0);
    c.register("double", Some(1), |a| Ok(2.0 * a[0]));
    assert_eq!(
        Expr::parse("double(4)").unwrap().eval_real(&c).unwrap(),
        8.0
    );
}

#[test]
fn m2pi_reaches_the_nearest_multiple_of_two_pi() {
    use std::f64::consts::{PI, TAU};
    for x in [0.0, 1.0, -1.0, 3.0, 4.0, 7.0, -7.0, 100.0] {
        let d = m2pi(x);
        assert!(d > -PI - 1e-12 && d <= PI + 1e-12);
        let k = (x + d) / TAU;
        assert!((k - k.round()).abs() < 1e-12, "{x} + {d}");
    }
    assert!((real("M2Pi(3*pi()/2)") - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
}

#[test]
fn every_error_has_its_position_and_reason() {
    assert_eq!(error("1 + $"), (4, ErrorKind::UnexpectedCharacter('$')));
    assert_eq!(error("1 +"), (3, ErrorKind::UnexpectedEnd));
    assert_eq!(error(""), (0, ErrorKind::UnexpectedEnd));
    assert_eq!(error("(1 + 2"), (0, ErrorKind::UnbalancedBracket));
    assert_eq!(error("1 + 2)"), (5, ErrorKind::UnbalancedBracket));
    assert_eq!(error("1 * * 2"), (4, ErrorKind::MissingOperand));
    assert_eq!(error("1 2"), (2, ErrorKind::TrailingInput));
    assert_eq!(error("1..2"), (0, ErrorKind::BadNumber("1..2".into())));
    assert_eq!(
        error("2 * phase_9_9()"),
        (4, ErrorKind::UnknownFunction("phase_9_9".into()))
    );
    assert!(matches!(
        error("sin(1, 2)"),
        (0, ErrorKind::WrongArity { got: 2, .. })
    ));
    let e = Expr::parse("1 +").unwrap_err();
    assert_eq!(e.to_string(), "at column 4: unexpected end of expression");
}

#[test]
fn integer_engine_is_checked() {
    let c = Context::new();
    let int = |t: &str| Expr::parse(t).unwrap().eval_int(&c);
    assert_eq!(int("7 / 2").unwrap(), 3);
    assert_eq!(int("-7 / 2").unwrap(), -3);
    assert_eq!(int("2 ^ 10").unwrap(), 1024);
    assert_eq!(
        int("1 / (2 - 2)").unwrap_err().kind,
        ErrorKind::DivisionByZero
    );
    assert_eq!(int("2 ^ 64").unwrap_err().kind, ErrorKind::Overflow);
    assert_eq!(
        int("9223372036854775807 + 1").unwrap_err().kind,
        ErrorKind::Overflow
    );
    assert_eq!(int("2 ^ -1").unwrap_err().kind, ErrorKind::NegativeExponent);
    assert_eq!(int("abs(-3) + max(1, 5)").unwrap(), 8);
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    assert_eq!(Expr::parse(&deep).unwrap_err().kind, ErrorKind::TooDeep);
    let minus = format!("{}1", "-".repeat(100_000));
    assert_eq!(Expr::parse(&minus).unwrap_err().kind, ErrorKind::TooDeep);
}

fn arb_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (0u32..1000).prop_map(|n| n.to_string()),
        Just("x".to_owned()),
        Just("pi()".to_owned()),
    ];
    leaf.prop_recursive(6, 64, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop_oneof![Just("+"), Just("-"), Just("*"), Just("/")],
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("max({a}, {b})")),
        ]
    })
}

/// A reference evaluator for the generated subset, via a tiny shunting of
/// the fully bracketed form: every binary operation is bracketed, so a
/// recursive split on the outermost operator is exact.
fn reference(text: &str, x: f64) -> f64 {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('-') {
        return -reference(rest, x);
    }
    if let Some(args) = t.strip_prefix("max(").and_then(|s| s.strip_suffix(')')) {
        let (a, b) = split_top(args, ',');
        return reference(a, x).max(reference(b, x));
    }
    if t == "x" {
        return x;
    }
    if t == "pi()" {
        return std::f64::consts::PI;
    }
    if let Some(inner) = t.strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        for op in ['+', '-', '*', '/'] {
            if let Some((a, b)) = split_top_op(inner, op) {
                let (a, b) = (reference(a, x), reference(b, x));
                return match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ => a / b,
                };
            }
        }
    }
    t.parse().unwrap()
}

fn split_top(s: &str, sep: char) -> (&str, &str) {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == sep && depth == 0 => return (&s[..i], &s[i + 1..]),
            _ => {}
        }
    }
    panic!("no separator in {s}")
}

fn split_top_op(s: &str, op: char) -> Option<(&str, &str)> {
    let pattern = format!(" {op} ");
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 && s[i..].starts_with(&pattern) => {
                return Some((&s[..i], &s[i + pattern.len()..]));
            }
            _ => {}
        }
    }
    None
}

proptest! {
    #[test]
    fn never_panics_on_any_input(text in "\\PC{0,80}") {
        if let Ok(e) = Expr::parse(&text) {
            let _ = e.eval_real(&Context::new());
            let _ = e.eval_int(&Context::new());
        }
    }

    #[test]
    fn never_panics_on_operator_soup(text in "[0-9a-z_(),.+*/^ -]{0,60}") {
        if let Ok(e) = Expr::parse(&text) {
            let _ = e.eval_real(&Context::new());
            let _ = e.eval_int(&Context::new());
        }
    }

    #[test]
    fn display_round_trips(text in arb_expr()) {
        let e = Expr::parse(&text).unwrap();
        prop_assert_eq!(Expr::parse(&e.to_string()).unwrap(), e);
    }

    #[test]
    fn real_engine_matches_the_reference(text in arb_expr(), x in -10.0f64..10.0) {
        let mut c = Context::new();
        c.set_parameter("x", x);
        let got = Expr::parse(&text).unwrap().eval_real(&c).unwrap();
        let want = reference(&text, x);
        prop_assert!(got == want || (got.is_nan() && want.is_nan()), "{} gave {} not {}", text, got, want);
    }
}
