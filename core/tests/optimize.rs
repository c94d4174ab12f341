use yamor_core::XmlError;
use yamor_core::optimize::{ApplyError, OptimizationConfig, ParamName};

const QUADRUPED: &str = include_str!("../../examples/robots/quadruped/optimize.xml");
const GAIT: &str = include_str!("../../examples/robots/quadruped/gait.xml");

fn with_rules(rules: &str) -> Result<OptimizationConfig, XmlError> {
    let at = GAIT.rfind("</yamorconfig>").unwrap();
    OptimizationConfig::from_xml_str(
        "test.xml",
        &format!("{}{rules}{}", &GAIT[..at], &GAIT[at..]),
    )
}

fn problem(rules: &str) -> String {
    with_rules(rules).unwrap_err().to_string()
}

#[test]
fn the_quadruped_configuration_has_table_6_1s_seven_parameters() {
    let config = OptimizationConfig::from_xml_str("optimize.xml", QUADRUPED).unwrap();
    let free = config.free_parameters();
    let names: Vec<&str> = free.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "amplitude_0",
            "amplitude_5",
            "offset_5",
            "phase_0_5",
            "phase_0_1",
            "phase_1_2",
            "phase_2_3"
        ]
    );
    // The start values reproduce the reference gait exactly.
    let start: Vec<f64> = free.iter().map(|p| p.start).collect();
    let gait = yamor_core::RobotConfig::from_xml_str("gait.xml", GAIT).unwrap();
    assert_eq!(config.apply(&start).unwrap(), gait);
}

#[test]
fn apply_sets_free_values_and_constraints_follow() {
    let config = OptimizationConfig::from_xml_str("optimize.xml", QUADRUPED).unwrap();
    let robot = config
        .apply(&[0.3, 0.9, 0.2, 1.0, 0.5, -0.5, 0.25])
        .unwrap();
    for m in 0..4 {
        assert_eq!(ParamName::Amplitude(m).get(&robot), Some(0.3));
    }
    for m in 5..9 {
        assert_eq!(ParamName::Amplitude(m).get(&robot), Some(0.9));
        assert_eq!(ParamName::Offset(m).get(&robot), Some(0.2));
    }
    for (inner, outer) in [(0, 5), (1, 6), (2, 7), (3, 8)] {
        assert_eq!(ParamName::Phase(inner, outer).get(&robot), Some(1.0));
        // Antisymmetric: the reverse link carries the negated lag.
        assert_eq!(ParamName::Phase(outer, inner).get(&robot), Some(-1.0));
    }
    assert_eq!(ParamName::Phase(0, 1).get(&robot), Some(0.5));
    assert_eq!(ParamName::Phase(1, 0).get(&robot), Some(-0.5));
    assert_eq!(ParamName::Phase(2, 3).get(&robot), Some(0.25));
    // Untouched fields stay.
    assert_eq!(ParamName::Speed(0).get(&robot), Some(5.0));
    assert_eq!(ParamName::Offset(0).get(&robot), Some(0.0));
}

#[test]
fn apply_rejects_wrong_length_and_out_of_bounds() {
    let config = OptimizationConfig::from_xml_str("optimize.xml", QUADRUPED).unwrap();
    assert_eq!(
        config.apply(&[0.1]).unwrap_err(),
        ApplyError::Length {
            expected: 7,
            got: 1
        }
    );
    let err = config
        .apply(&[2.0, 0.9, 0.2, 1.0, 0.5, -0.5, 0.25])
        .unwrap_err();
    assert!(matches!(err, ApplyError::OutOfBounds { ref name, .. } if name == "amplitude_0"));
    let err = config
        .apply(&[f64::NAN, 0.9, 0.2, 1.0, 0.5, -0.5, 0.25])
        .unwrap_err();
    assert!(matches!(err, ApplyError::OutOfBounds { .. }));
}

#[test]
fn m2pi_constraint_closes_a_phase_loop() {
    let config = with_rules(
        r#"<optimize param="phase_0_1" min="-3.2" max="3.2"/>
           <optimize param="phase_1_2" min="-3.2" max="3.2"/>
           <optimize param="phase_2_3" expr="M2Pi(phase_0_1() + phase_1_2())"/>"#,
    )
    .unwrap();
    let robot = config.apply(&[3.0, 2.0]).unwrap();
    let total = 3.0 + 2.0 + ParamName::Phase(2, 3).get(&robot).unwrap();
    let turns = total / std::f64::consts::TAU;
    assert!((turns - turns.round()).abs() < 1e-12);
}

#[test]
fn bad_rules_name_the_problem_and_the_line() {
    assert!(
        problem(r#"<optimize param="amplitude_42" min="0" max="1"/>"#).contains("amplitude_42")
    );
    assert!(problem(r#"<optimize param="phase_0_8" min="0" max="1"/>"#).contains("phase_0_8"));
    assert!(problem(r#"<optimize param="colour_1" min="0" max="1"/>"#).contains("colour_1"));
    assert!(problem(r#"<optimize param="amplitude_0" min="1" max="0"/>"#).contains("greater"));
    assert!(problem(r#"<optimize param="amplitude_0" min="0" max="NaN"/>"#).contains("max"));
    assert!(problem(r#"<optimize param="amplitude_0" min="0" max="0.5"/>"#).contains("outside"));
    assert!(
        problem(r#"<optimize param="amplitude_0" min="0" max="1" expr="1"/>"#).contains("not both")
    );
    assert!(problem(r#"<optimize param="amplitude_0"/>"#).contains("min and max"));
    assert!(problem(r#"<optimize param="amplitude_0" min="0"/>"#).contains("max"));
    assert!(
        problem(
            r#"<optimize param="amplitude_0" min="0" max="1"/><optimize param="amplitude_0" expr="1"/>"#
        )
        .contains("two rules")
    );
    let e = problem(r#"<optimize param="amplitude_1" expr="amplitude_0() +"/>"#);
    assert!(e.contains("column 16") && e.contains("test.xml:"), "{e}");
    let e = problem(r#"<optimize param="amplitude_1" expr="nosuch()"/>"#);
    assert!(e.contains("nosuch"), "{e}");
}

#[test]
fn round_trips_through_xml() {
    let config = OptimizationConfig::from_xml_str("optimize.xml", QUADRUPED).unwrap();
    let again = OptimizationConfig::from_xml_str("again.xml", &config.to_xml_string()).unwrap();
    assert_eq!(again, config);
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
    ] {
        assert_eq!(name.parse::<ParamName>().unwrap().to_string(), name);
    }
    for bad in ["amplitude", "phase_1", "amplitude_x", "weight_1_2_3", ""] {
        assert!(bad.parse::<ParamName>().is_err(), "{bad}");
    }
}
