use std::f64::consts::{FRAC_PI_2, PI, TAU};

use yamor_core::matheval::{ErrorKind, Expr};
use yamor_core::optimize::{
    ApplyError, FreeParameter, InvalidRule, OptimizationConfig, ParamName, Rule, RuleError,
};
use yamor_core::{Problem, RobotConfig, XmlError};

const QUADRUPED: &str = include_str!("../../examples/robots/quadruped/optimize.xml");
const GAIT: &str = include_str!("../../examples/robots/quadruped/gait.xml");

fn gait() -> RobotConfig {
    RobotConfig::from_xml_str("gait.xml", GAIT).unwrap()
}

fn quadruped() -> OptimizationConfig {
    OptimizationConfig::from_xml_str("optimize.xml", QUADRUPED).unwrap()
}

/// The line `with_rules` puts its first rule on.
fn rules_line() -> u32 {
    let at = GAIT.rfind("</yamorconfig>").unwrap();
    u32::try_from(GAIT[..at].matches('\n').count()).unwrap() + 1
}

/// The reference gait with `rules` inserted as children of `<yamorconfig>`.
fn with_rules(rules: &str) -> Result<OptimizationConfig, XmlError> {
    let at = GAIT.rfind("</yamorconfig>").unwrap();
    OptimizationConfig::from_xml_str(
        "test.xml",
        &format!("{}{rules}{}", &GAIT[..at], &GAIT[at..]),
    )
}

/// The rule error of `rules`, checking it names test.xml, the line of the
/// rule (counted from the first one) and the `<optimize>` element.
fn rule_error(rules: &str, rule_line: u32) -> RuleError {
    match with_rules(rules).unwrap_err() {
        XmlError::Invalid {
            file,
            line,
            element,
            problem: Problem::Optimize(error),
        } => {
            let error = *error;
            assert_eq!(file, "test.xml");
            assert_eq!(line, rules_line() + rule_line, "{error}");
            assert_eq!(element, "optimize");
            error
        }
        other => panic!("not a rule error: {other}"),
    }
}

fn problem(rules: &str) -> Problem {
    with_rules(rules).unwrap_err().problem().unwrap().clone()
}

const INNER_OUTER: [(u32, u32); 4] = [(0, 5), (1, 6), (2, 7), (3, 8)];

#[test]
fn only_a_phase_over_one_whole_turn_is_periodic() {
    let config = with_rules(
        r#"<optimize param="phase_0_5" min="0" max="6.283185307"/>
           <optimize param="phase_0_1" min="-1.6" max="1.6"/>
           <optimize param="amplitude_5" min="0" max="1.5"/>
           <optimize param="phase_1_2" min="-3.141593" max="3.141593"/>"#,
    )
    .unwrap();
    let periodic: Vec<(String, bool)> = config
        .free_parameters()
        .into_iter()
        .map(|p| (p.name, p.periodic))
        .collect();
    assert_eq!(
        periodic,
        [
            ("phase_0_5".to_owned(), true),
            ("phase_0_1".to_owned(), false),
            ("amplitude_5".to_owned(), false),
            ("phase_1_2".to_owned(), true),
        ]
    );
}

#[test]
fn the_quadruped_configuration_has_table_6_1s_seven_parameters() {
    let config = quadruped();
    let free = config.free_parameters();
    // Phases over one whole turn are periodic; nothing else is.
    let p = |name: &str, min: f64, max: f64, start: f64| FreeParameter {
        name: name.into(),
        min,
        max,
        start,
        periodic: name.starts_with("phase"),
    };
    assert_eq!(
        free,
        [
            p("amplitude_0", 0.0, 0.785, 0.7),
            p("amplitude_5", 0.0, 1.2, 0.6),
            p("offset_5", -1.0, 1.0, -0.7),
            p("phase_0_5", -PI, PI, FRAC_PI_2),
            p("phase_0_1", -PI, PI, FRAC_PI_2),
            p("phase_1_2", -PI, PI, FRAC_PI_2),
            p("phase_2_3", -PI, PI, FRAC_PI_2),
        ]
    );
    // The robot part is the reference gait, and the start values give it
    // back exactly.
    assert_eq!(config.robot(), &gait());
    let start: Vec<f64> = free.iter().map(|p| p.start).collect();
    assert_eq!(config.apply(&start).unwrap(), gait());
    // RobotConfig reads the same file and ignores the rules.
    assert_eq!(
        RobotConfig::from_xml_str("optimize.xml", QUADRUPED).unwrap(),
        gait()
    );
}

#[test]
fn apply_changes_exactly_the_expected_fields() {
    let robot = quadruped()
        .apply(&[0.3, 0.9, 0.2, 1.0, 0.5, -0.5, 0.25])
        .unwrap();
    let mut want = gait();
    let set = |robot: &mut RobotConfig, from: u32, to: u32, phase: f64| {
        let module = robot.module_mut(from).unwrap();
        module
            .cpg_links
            .iter_mut()
            .find(|l| l.to == to)
            .unwrap()
            .phase = phase;
    };
    for (inner, outer) in INNER_OUTER {
        want.module_mut(inner).unwrap().amplitude = 0.3;
        want.module_mut(outer).unwrap().amplitude = 0.9;
        want.module_mut(outer).unwrap().offset = 0.2;
        set(&mut want, inner, outer, 1.0);
        // Antisymmetric: the reverse link carries the negated lag.
        set(&mut want, outer, inner, -1.0);
    }
    for (a, b, lag) in [(0, 1, 0.5), (1, 2, -0.5), (2, 3, 0.25)] {
        set(&mut want, a, b, lag);
        set(&mut want, b, a, -lag);
    }
    // Full equality: speeds, inner offsets, limits, weights, the central
    // module and the Bluetooth tree are untouched.
    assert_eq!(robot, want);
    assert_eq!(ParamName::Phase(1, 0).get(&robot), Some(-0.5));
    assert_eq!(ParamName::Speed(0).get(&robot), Some(5.0));
}

#[test]
fn apply_accepts_the_bounds_themselves() {
    let config = quadruped();
    let free = config.free_parameters();
    let low: Vec<f64> = free.iter().map(|p| p.min).collect();
    let high: Vec<f64> = free.iter().map(|p| p.max).collect();
    assert_eq!(
        ParamName::Amplitude(3).get(&config.apply(&low).unwrap()),
        Some(0.0)
    );
    assert_eq!(
        ParamName::Phase(8, 3).get(&config.apply(&high).unwrap()),
        Some(-PI)
    );
}

#[test]
fn apply_rejects_wrong_length_and_out_of_bounds() {
    let config = quadruped();
    assert_eq!(
        config.apply(&[0.1]).unwrap_err(),
        ApplyError::Length {
            expected: 7,
            got: 1
        }
    );
    assert_eq!(
        config.apply(&[]).unwrap_err().to_string(),
        "expected 7 free values, got 0"
    );
    let err = config
        .apply(&[0.3, 0.9, 0.2, 1.0, 0.5, -0.5, 4.0])
        .unwrap_err();
    assert_eq!(
        err,
        ApplyError::OutOfBounds {
            param: ParamName::Phase(2, 3),
            value: 4.0,
            min: -PI,
            max: PI
        }
    );
    assert_eq!(
        err.to_string(),
        "phase_2_3 = 4 lies outside its bounds [-3.141592653589793, 3.141592653589793]"
    );
    let err = config
        .apply(&[-0.01, 0.9, 0.2, 1.0, 0.5, -0.5, 0.25])
        .unwrap_err();
    assert!(matches!(
        err,
        ApplyError::OutOfBounds {
            param: ParamName::Amplitude(0),
            ..
        }
    ));
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = config
            .apply(&[0.3, 0.9, bad, 1.0, 0.5, -0.5, 0.25])
            .unwrap_err();
        assert!(
            matches!(
                err,
                ApplyError::OutOfBounds {
                    param: ParamName::Offset(5),
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn constraints_run_in_file_order_and_see_every_parameter() {
    let config = with_rules(
        r#"<optimize param="amplitude_0" min="0" max="0.785"/>
           <optimize param="amplitude_1" expr="2 * amplitude_0()"/>
           <optimize param="amplitude_2" expr="amplitude_1 + 0.1"/>
           <optimize param="amplitude_3" expr="amplitude_4() + speed_0() + weight_0_1() + minangle_5()"/>
           <optimize param="offset_0" expr="offset_1()"/>
           <optimize param="offset_1" expr="1"/>"#,
    )
    .unwrap();
    let robot = config.apply(&[0.25]).unwrap();
    assert_eq!(ParamName::Amplitude(1).get(&robot), Some(0.5));
    // Sees the constraint computed before it, not the file's value.
    assert_eq!(ParamName::Amplitude(2).get(&robot), Some(0.6));
    // Parameters that are not optimized are functions too.
    assert_eq!(
        ParamName::Amplitude(3).get(&robot),
        Some(0.0 + 5.0 + 1.0 - 1.57)
    );
    // A constraint reads a later one's value from before it runs.
    assert_eq!(ParamName::Offset(0).get(&robot), Some(0.0));
    assert_eq!(ParamName::Offset(1).get(&robot), Some(1.0));
}

#[test]
fn a_constraint_sees_a_phase_through_its_reverse_link() {
    let config = with_rules(
        r#"<optimize param="phase_0_1" min="-3.2" max="3.2"/>
           <optimize param="weight_0_5" expr="-phase_1_0()"/>"#,
    )
    .unwrap();
    let robot = config.apply(&[0.75]).unwrap();
    assert_eq!(ParamName::Phase(1, 0).get(&robot), Some(-0.75));
    assert_eq!(ParamName::Weight(0, 5).get(&robot), Some(0.75));
    // A weight is set on the named link only.
    assert_eq!(ParamName::Weight(5, 0).get(&robot), Some(1.0));
}

#[test]
fn m2pi_constraint_closes_a_phase_loop() {
    // Thesis 5.7.2's example: the last lag makes the loop a whole number of
    // turns.
    let config = with_rules(
        r#"<optimize param="phase_0_1" min="-3.2" max="3.2"/>
           <optimize param="phase_1_2" min="-3.2" max="3.2"/>
           <optimize param="phase_2_3" expr="M2Pi(phase_0_1() + phase_1_2())"/>"#,
    )
    .unwrap();
    for (a, b) in [(3.0, 2.0), (-3.0, 1.0), (0.5, 0.25), (3.2, 3.2)] {
        let robot = config.apply(&[a, b]).unwrap();
        let closing = ParamName::Phase(2, 3).get(&robot).unwrap();
        assert!(closing > -PI && closing <= PI, "{closing}");
        let turns = (a + b + closing) / TAU;
        assert!((turns - turns.round()).abs() < 1e-12, "{a} {b} {closing}");
        assert_eq!(ParamName::Phase(3, 2).get(&robot), Some(-closing));
    }
}

#[test]
fn a_phase_without_a_reverse_link_sets_one_link() {
    let robot = r#"<yamorconfig><modulelist>
        <module id="0" amplitude="0.5" offset="0" speed="1" minangle="-1" maxangle="1">
          <cpglink to="1" phase="0" weight="1"/>
        </module>
        <module id="1" amplitude="0.5" offset="0" speed="1" minangle="-1" maxangle="1"/>
      </modulelist>
      <optimize param="phase_0_1" min="-1" max="1"/>
    </yamorconfig>"#;
    let config = OptimizationConfig::from_xml_str("one-way.xml", robot).unwrap();
    let out = config.apply(&[0.5]).unwrap();
    assert_eq!(ParamName::Phase(0, 1).get(&out), Some(0.5));
    assert_eq!(ParamName::Phase(1, 0).get(&out), None);
    // There is no phase_1_0 to optimize.
    let backwards = robot.replace("phase_0_1", "phase_1_0");
    let e = OptimizationConfig::from_xml_str("one-way.xml", &backwards).unwrap_err();
    assert_eq!(
        e.problem(),
        Some(&Problem::Optimize(Box::new(RuleError::UnknownParameter(
            ParamName::Phase(1, 0)
        ))))
    );
}

#[test]
fn non_finite_constraints_are_errors() {
    // At the start values: a file error on the rule's line.
    let error = rule_error(
        r#"<optimize param="amplitude_0" min="0" max="0.785"/>
<optimize param="amplitude_1" expr="1 / (amplitude_0() - 0.7)"/>"#,
        1,
    );
    assert!(
        matches!(
            &error,
            RuleError::AtStart(ApplyError::NonFinite { param: ParamName::Amplitude(1), value, .. })
                if value.is_infinite()
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "at the start values: constraint amplitude_1 = 1 / (amplitude_0() - 0.7) gives inf, not a finite number"
    );
    // At other values: an apply error.
    let config = with_rules(
        r#"<optimize param="amplitude_0" min="0" max="0.785"/>
           <optimize param="amplitude_1" expr="ln(amplitude_0())"/>"#,
    )
    .unwrap();
    assert!(config.apply(&[0.5]).is_ok());
    let err = config.apply(&[0.0]).unwrap_err();
    assert!(
        matches!(err, ApplyError::NonFinite { param: ParamName::Amplitude(1), value, .. } if value == f64::NEG_INFINITY),
        "{err}"
    );
}

#[test]
fn crossed_limit_angles_are_errors() {
    // The firmware clamps to [minangle, maxangle]; it must stay ordered.
    let config = with_rules(r#"<optimize param="minangle_0" min="-1" max="1"/>"#).unwrap();
    assert!(config.apply(&[0.5]).is_ok());
    assert_eq!(
        config.apply(&[0.9]).unwrap_err(),
        ApplyError::LimitsCrossed {
            module: 0,
            min: 0.9,
            max: 0.785
        }
    );
    let error = rule_error(
        r#"<optimize param="offset_0" expr="0"/>
<optimize param="maxangle_0" expr="minangle_0() - 1"/>
<optimize param="offset_1" expr="0"/>"#,
        1,
    );
    assert!(
        matches!(
            error,
            RuleError::AtStart(ApplyError::LimitsCrossed { module: 0, .. })
        ),
        "{error}"
    );
}

#[test]
fn ranges_beyond_a_modules_joint_limits_are_refused() {
    // Module 0's limits are ±0.785 rad: an amplitude reaches 0.785 at most,
    // an offset lies within ±0.785.
    let error = rule_error(r#"<optimize param="amplitude_0" min="0" max="1.5"/>"#, 0);
    assert!(
        matches!(
            error,
            RuleError::BeyondJointLimits {
                param: ParamName::Amplitude(0),
                module: 0,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("joint limits"), "{error}");
    let error = rule_error(r#"<optimize param="offset_0" min="-1" max="0.5"/>"#, 0);
    assert!(
        matches!(
            error,
            RuleError::BeyondJointLimits {
                param: ParamName::Offset(0),
                ..
            }
        ),
        "{error}"
    );
    // π/4 written as 0.785 means π/4; the limits' own range is accepted.
    assert!(with_rules(r#"<optimize param="amplitude_0" min="0" max="0.7854"/>"#).is_ok());
    assert!(with_rules(r#"<optimize param="offset_0" min="-0.785" max="0.785"/>"#).is_ok());
    // Limits that are optimized too move with the range: not judged.
    assert!(
        with_rules(
            r#"<optimize param="amplitude_0" min="0" max="1.5"/>
<optimize param="maxangle_0" min="0.785" max="1.57"/>"#
        )
        .is_ok()
    );
}

#[test]
fn bad_rules_name_the_problem_and_the_line() {
    use ParamName::*;
    use RuleError::*;
    let first = |rules: &str| rule_error(rules, 0);
    assert_eq!(
        first(r#"<optimize param="amplitude_42" min="0" max="1"/>"#),
        UnknownParameter(Amplitude(42))
    );
    assert_eq!(
        first(r#"<optimize param="phase_0_8" min="0" max="1"/>"#),
        UnknownParameter(Phase(0, 8))
    );
    assert_eq!(
        first(r#"<optimize param="weight_42_0" expr="1"/>"#),
        UnknownParameter(Weight(42, 0))
    );
    assert_eq!(
        first(r#"<optimize param="colour_1" min="0" max="1"/>"#),
        BadName("colour_1".into())
    );
    assert_eq!(
        first(r#"<optimize param="amplitude_0" min="1" max="0"/>"#),
        BoundsReversed {
            param: Amplitude(0),
            min: 1.0,
            max: 0.0
        }
    );
    assert_eq!(
        first(r#"<optimize param="amplitude_0" min="0" max="0.5"/>"#),
        StartOutOfBounds {
            param: Amplitude(0),
            start: 0.7,
            min: 0.0,
            max: 0.5
        }
    );
    assert_eq!(
        first(r#"<optimize param="amplitude_0" min="0" max="1" expr="1"/>"#),
        BoundsAndExpr(Amplitude(0))
    );
    assert_eq!(
        first(r#"<optimize param="amplitude_0" expr="1" max="1"/>"#),
        BoundsAndExpr(Amplitude(0))
    );
    assert_eq!(
        first(r#"<optimize param="amplitude_0"/>"#),
        NoBoundsNorExpr(Amplitude(0))
    );
    assert_eq!(
        first(r#"<optimize param="amplitude_0" mni="0" max="1"/>"#),
        UnknownAttribute("mni".into())
    );
    assert_eq!(
        rule_error(
            r#"<optimize param="amplitude_0" min="0" max="0.75"/>
<optimize param="amplitude_1" expr="1"/>
<optimize param="amplitude_0" expr="1"/>"#,
            2
        ),
        Duplicate(Amplitude(0))
    );
    assert_eq!(
        rule_error(
            r#"<optimize param="phase_0_1" min="-3" max="3"/>
<optimize param="phase_1_0" expr="0"/>"#,
            1
        ),
        ReversePhase {
            param: Phase(1, 0),
            earlier: Phase(0, 1)
        }
    );
    let error = first(r#"<optimize param="amplitude_1" expr="amplitude_0() +"/>"#);
    assert!(
        matches!(&error, BadExpr { param: Amplitude(1), error, .. } if error.kind == ErrorKind::UnexpectedEnd && error.column == 16),
        "{error}"
    );
    let error = first(r#"<optimize param="amplitude_1" expr="2 * nosuch()"/>"#);
    assert!(
        matches!(&error, AtStart(ApplyError::Constraint { error, .. }) if error.kind == ErrorKind::UnknownName("nosuch".into()) && error.column == 5),
        "{error}"
    );
    assert!(matches!(
        first(r#"<optimize param="amplitude_1" expr="sin(1, 2)"/>"#),
        AtStart(ApplyError::Constraint { .. })
    ));
}

#[test]
fn attribute_problems_use_the_common_xml_errors() {
    assert_eq!(
        problem(r#"<optimize param="amplitude_0" min="0" max="NaN"/>"#),
        Problem::NonFinite {
            name: "max",
            value: "NaN".into()
        }
    );
    assert_eq!(
        problem(r#"<optimize param="amplitude_0" min="-inf" max="1"/>"#),
        Problem::NonFinite {
            name: "min",
            value: "-inf".into()
        }
    );
    assert_eq!(
        problem(r#"<optimize param="amplitude_0" min="zero" max="1"/>"#),
        Problem::BadValue {
            name: "min",
            value: "zero".into(),
            expected: "number"
        }
    );
    assert_eq!(
        problem(r#"<optimize param="amplitude_0" min="0"/>"#),
        Problem::MissingAttribute("max")
    );
    assert_eq!(
        problem(r#"<optimize min="0" max="1"/>"#),
        Problem::MissingAttribute("param")
    );
    // Still only <modulelist> and <optimize> under the root.
    assert_eq!(
        problem(r#"<optimise param="amplitude_0" min="0" max="1"/>"#),
        Problem::UnexpectedElement("optimise".into())
    );
}

#[test]
fn messages_read_well() {
    let message = |rules: &str| with_rules(rules).unwrap_err().to_string();
    let line = rules_line();
    assert_eq!(
        message(r#"<optimize param="amplitude_42" min="0" max="1"/>"#),
        format!(
            "test.xml:{line}: <optimize>: amplitude_42 names a module or CPG link the robot does not have"
        )
    );
    assert_eq!(
        message(r#"<optimize param="amplitude_1" expr="amplitude_0() +"/>"#),
        format!(
            "test.xml:{line}: <optimize>: amplitude_1: expr \"amplitude_0() +\": at column 16: \
             unexpected end of the expression: an operand is missing"
        )
    );
    assert_eq!(
        message(r#"<optimize param="amplitude_1" expr="phase_9_9()"/>"#),
        format!(
            "test.xml:{line}: <optimize>: at the start values: constraint amplitude_1 = phase_9_9(): \
             at column 1: unknown name \"phase_9_9\": neither a parameter nor a function"
        )
    );
    assert_eq!(
        message(r#"<optimize param="amplitude_0" min="0" max="0.5"/>"#),
        format!(
            "test.xml:{line}: <optimize>: amplitude_0: its start value (its value in the robot), 0.7, lies outside [0, 0.5]"
        )
    );
}

#[test]
fn new_checks_rules_built_in_code() {
    let free = |param, min, max| Rule::Free { param, min, max };
    let config = OptimizationConfig::new(
        gait(),
        vec![
            free(ParamName::Speed(0), 1.0, 10.0),
            Rule::Constrained {
                param: ParamName::Speed(1),
                expr: Expr::parse("speed_0").unwrap(),
            },
        ],
    )
    .unwrap();
    assert_eq!(config.rules().len(), 2);
    let robot = config.apply(&[7.5]).unwrap();
    assert_eq!(ParamName::Speed(1).get(&robot), Some(7.5));

    let err = OptimizationConfig::new(
        gait(),
        vec![
            free(ParamName::Speed(0), 1.0, 10.0),
            free(ParamName::Speed(1), f64::NAN, 10.0),
        ],
    )
    .unwrap_err();
    assert!(matches!(
        err,
        InvalidRule {
            index: 1,
            count: 2,
            ..
        }
    ));
    assert!(matches!(
        *err.error,
        RuleError::NonFiniteBounds {
            param: ParamName::Speed(1),
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "rule 2 of 2: speed_1: the bounds must be finite, got [NaN, 10]"
    );
    // No rules: nothing to choose, the robot as it is.
    let none = OptimizationConfig::new(gait(), Vec::new()).unwrap();
    assert!(none.free_parameters().is_empty());
    assert_eq!(none.apply(&[]).unwrap(), gait());
}

#[test]
fn round_trips_through_xml() {
    let config = quadruped();
    let text = config.to_xml_string();
    let again = OptimizationConfig::from_xml_str("again.xml", &text).unwrap();
    assert_eq!(again, config);
    assert_eq!(again.to_xml_string(), text);
    assert!(text.contains(r#"<optimize param="amplitude_1" expr="amplitude_0()"/>"#));

    // Expression text is kept as written; newlines in attributes become
    // spaces, which does not change the expression.
    let config = with_rules(
        "<optimize param=\"amplitude_0\" min=\"0\" max=\"0.785\"/>\n\
         <optimize param=\"amplitude_1\" expr=\"amplitude_0\n  * 1\"/>",
    )
    .unwrap();
    let again = OptimizationConfig::from_xml_str("again.xml", &config.to_xml_string()).unwrap();
    assert_eq!(again, config);
}

#[test]
fn files_are_read_and_missing_files_named() {
    let dir = std::env::temp_dir().join(format!("yamor-optimize-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("optimize.xml");
    std::fs::write(&path, QUADRUPED).unwrap();
    assert_eq!(OptimizationConfig::from_file(&path).unwrap(), quadruped());
    std::fs::remove_dir_all(&dir).unwrap();
    let e = OptimizationConfig::from_file(&path).unwrap_err();
    assert!(matches!(e, XmlError::Io { .. }), "{e}");
    assert!(e.to_string().contains("optimize.xml"));
}

#[test]
fn parameter_names_parse_and_print() {
    for name in [
        "amplitude_3",
        "offset_5",
        "speed_0",
        "minangle_1",
        "maxangle_2",
        "phase_2_5",
        "weight_0_1",
        "amplitude_4294967295",
    ] {
        assert_eq!(name.parse::<ParamName>().unwrap().to_string(), name);
    }
    assert_eq!(
        " phase_0_1 ".parse::<ParamName>(),
        Ok(ParamName::Phase(0, 1))
    );
    for bad in [
        "amplitude",
        "amplitude_",
        "amplitude_+3",
        "amplitude_-3",
        "amplitude_x",
        "amplitude_4294967296",
        "Amplitude_1",
        "phase_1",
        "phase_1_",
        "weight_1_2_3",
        "speed_1_2",
        "",
        "_",
    ] {
        assert_eq!(
            bad.parse::<ParamName>(),
            Err(RuleError::BadName(bad.into())),
            "{bad}"
        );
    }
}

#[test]
fn every_parameter_of_the_robot_is_listed() {
    let all = ParamName::all(&gait());
    // Nine modules with five fields each, fourteen links with a phase and a
    // weight each.
    assert_eq!(all.len(), 9 * 5 + 14 * 2);
    for p in &all {
        assert!(p.get(&gait()).is_some(), "{p}");
    }
    let mut robot = gait();
    assert!(!ParamName::Amplitude(42).set(&mut robot, 1.0));
    assert!(!ParamName::Phase(0, 8).set(&mut robot, 1.0));
    assert_eq!(robot, gait());
}

#[test]
fn a_configuration_may_say_which_way_its_walks_count_and_keeps_it_written_back() {
    use yamor_core::evaluation::Direction;
    assert_eq!(
        quadruped().direction(),
        None,
        "the thesis' files say nothing"
    );
    let axis = GAIT.replacen("<yamorconfig>", "<yamorconfig direction=\"axis\">", 1);
    let config = OptimizationConfig::from_xml_str("axis.xml", &axis).unwrap();
    assert_eq!(config.direction(), Some(Direction::Axis));
    let again = OptimizationConfig::from_xml_str("again.xml", &config.to_xml_string()).unwrap();
    assert_eq!(again, config);

    let sideways = GAIT.replacen("<yamorconfig>", "<yamorconfig direction=\"sideways\">", 1);
    match OptimizationConfig::from_xml_str("sideways.xml", &sideways).unwrap_err() {
        XmlError::Invalid {
            file,
            problem,
            element,
            ..
        } => {
            assert_eq!(file, "sideways.xml");
            assert_eq!(element, "yamorconfig");
            assert!(
                problem
                    .to_string()
                    .contains("`sideways` is not a valid direction (any or axis)"),
                "{problem}"
            );
        }
        other => panic!("expected the root named, got {other:?}"),
    }
}
