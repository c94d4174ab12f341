//! Integration tests for the `yamorconfig` reader and writer (thesis C.4).

use proptest::prelude::*;
use yamor_core::{CpgLink, IdAttribute, ModuleConfig, ModuleId, Problem, RobotConfig, XmlError};

/// The wheel of thesis appendix C.4.2, verbatim values.
const WHEEL: &str = include_str!("../../examples/robots/wheel/gait.xml");

/// The name every error must repeat back.
const FILE: &str = "robots/broken/gait.xml";

fn parse(text: &str) -> RobotConfig {
    RobotConfig::from_xml_str(FILE, text).unwrap_or_else(|e| panic!("should parse: {e}\n{text}"))
}

fn module(
    id: ModuleId,
    amplitude: f64,
    offset: f64,
    speed: f64,
    bluetooth_to: Option<ModuleId>,
    links: &[(ModuleId, f64, f64)],
) -> ModuleConfig {
    ModuleConfig {
        id,
        amplitude,
        offset,
        speed,
        min_angle: -1.57,
        max_angle: 1.57,
        bluetooth_to,
        cpg_links: links
            .iter()
            .map(|&(to, phase, weight)| CpgLink { to, phase, weight })
            .collect(),
        motion: yamor_core::config::Motion::Oscillate,
    }
}

/// Asserts `text` is rejected as invalid with exactly `problem`, and that the
/// message names the file, the element and the line.
#[track_caller]
fn assert_invalid(text: &str, problem: Problem, element: &str, line: u32) {
    let err = match RobotConfig::from_xml_str(FILE, text) {
        Ok(config) => panic!("accepted invalid input as {config:?}:\n{text}"),
        Err(err) => err,
    };
    match &err {
        XmlError::Invalid {
            file,
            line: got_line,
            element: got_element,
            problem: got_problem,
        } => {
            assert_eq!(file, FILE);
            assert_eq!(got_problem, &problem, "{err}");
            assert_eq!(got_element, element, "{err}");
            assert_eq!(*got_line, line, "{err}");
        }
        other => panic!("expected XmlError::Invalid, got {other:?}"),
    }
    assert_eq!(err.problem(), Some(&problem));
    let shown = err.to_string();
    assert_eq!(shown, format!("{FILE}:{line}: <{element}>: {problem}"));
    assert!(shown.contains(FILE) && shown.contains(&format!("<{element}>")));
}

#[track_caller]
fn assert_malformed(text: &str) {
    match RobotConfig::from_xml_str(FILE, text) {
        Err(err @ XmlError::Malformed { .. }) => {
            assert!(err.problem().is_none());
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("{FILE}: malformed XML: ")),
                "{shown}"
            );
        }
        other => panic!("expected XmlError::Malformed, got {other:?}"),
    }
}

// Line layout used by the bad-input documents below:
// 1 <yamorconfig>, 2 <modulelist>, 3 module 1 (+ its children on 4..),
// every element on its own line.
const M1: &str =
    r#"<module id="1" amplitude="0.5" offset="0.1" speed="0.6" minangle="-1.57" maxangle="1.57">"#;
const M2: &str =
    r#"<module id="2" amplitude="0.5" offset="0.1" speed="0.6" minangle="-1.57" maxangle="1.57">"#;

/// A document from body lines; `body[0]` is on line 3.
fn doc(body: &[&str]) -> String {
    let mut text = String::from("<yamorconfig>\n<modulelist>\n");
    for line in body {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("</modulelist>\n</yamorconfig>\n");
    text
}

/// Two modules, module 1 with a bluetooth and a cpglink to module 2.
/// Lines: 3 module 1, 4 bluetooth, 5 cpglink, 6 </module>, 7 module 2, 8 </module>.
fn two_modules(m1: &str, bluetooth: &str, cpglink: &str, m2: &str) -> String {
    doc(&[m1, bluetooth, cpglink, "</module>", m2, "</module>"])
}

const BT: &str = r#"<bluetooth to="2"/>"#;
const LINK: &str = r#"<cpglink to="2" phase="-2.09" weight="1.0"/>"#;

#[test]
fn valid_two_module_document_parses() {
    let config = parse(&two_modules(M1, BT, LINK, M2));
    assert_eq!(
        config,
        RobotConfig {
            modules: vec![
                module(1, 0.5, 0.1, 0.6, Some(2), &[(2, -2.09, 1.0)]),
                module(2, 0.5, 0.1, 0.6, None, &[]),
            ],
            id_attribute: IdAttribute::Id,
        }
    );
}

// ---------------------------------------------------------------- the wheel

#[test]
fn wheel_file_is_the_thesis_text() {
    assert!(WHEEL.starts_with(r#"<?xml version="1.0" encoding="Windows-1252"?>"#));
    for id in ["1", "6", "7", "12"] {
        assert!(WHEEL.contains(&format!(r#"<module id="{id}""#)), "{id}");
    }
    assert!(!WHEEL.contains("realid"));
}

#[test]
fn wheel_loads_with_all_values() {
    let config = parse(WHEEL);
    let ids: Vec<ModuleId> = config.modules.iter().map(|m| m.id).collect();
    assert_eq!(ids, [1, 6, 7, 12]);
    assert_eq!(config.id_attribute, IdAttribute::Id);

    let six = config.module(6).expect("module 6");
    assert_eq!(six.bluetooth_to, Some(7));
    assert_eq!(
        six.cpg_links,
        [
            CpgLink {
                to: 12,
                phase: -2.09,
                weight: 1.0
            },
            CpgLink {
                to: 7,
                phase: 2.09,
                weight: 1.0
            },
        ]
    );

    let expected = RobotConfig {
        modules: vec![
            module(1, 0.0, 0.0, 0.0, Some(6), &[]),
            module(
                6,
                1.04,
                1.04,
                0.6,
                Some(7),
                &[(12, -2.09, 1.0), (7, 2.09, 1.0)],
            ),
            module(
                7,
                1.04,
                1.04,
                0.6,
                Some(12),
                &[(6, -2.09, 1.0), (12, 2.09, 1.0)],
            ),
            module(
                12,
                1.04,
                1.04,
                0.6,
                None,
                &[(7, -2.09, 1.0), (6, 2.09, 1.0)],
            ),
        ],
        id_attribute: IdAttribute::Id,
    };
    assert_eq!(config, expected);
    assert_eq!(
        config.bluetooth_edges().collect::<Vec<_>>(),
        [(1, 6), (6, 7), (7, 12)]
    );
    assert!(config.module(2).is_none());
}

#[test]
fn wheel_loads_from_file() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/robots/wheel/gait.xml"
    );
    assert_eq!(
        RobotConfig::from_file(path).expect("wheel file"),
        parse(WHEEL)
    );
}

// --------------------------------------------------------------- round trip

#[track_caller]
fn assert_round_trips(text: &str) -> String {
    let config = parse(text);
    let written = config.to_xml_string();
    let reread = RobotConfig::from_xml_str("written.xml", &written)
        .unwrap_or_else(|e| panic!("written text must parse: {e}\n{written}"));
    assert_eq!(reread, config, "{written}");
    assert_eq!(
        reread.to_xml_string(),
        written,
        "writing twice must be stable"
    );
    assert_eq!(config.to_xml_string(), written, "writing is deterministic");
    written
}

#[test]
fn wheel_round_trips() {
    let written = assert_round_trips(WHEEL);
    assert!(written.contains(r#"<module id="6""#), "{written}");
    assert!(!written.contains("realid"), "{written}");
}

const REALID: &str = r#"<?xml version="1.0"?>
<yamorconfig>
  <modulelist>
    <module realid="3" amplitude="0.25" offset="-0.5" speed="6.283185307179586"
            minangle="-1.57" maxangle="0">
      <bluetooth to="4"/>
      <cpglink to="4" phase="3.14159" weight="0.5"/>
    </module>
    <module realid="4" amplitude="0" offset="0" speed="0" minangle="-0.5" maxangle="0.5"/>
  </modulelist>
</yamorconfig>
"#;

#[test]
fn realid_file_round_trips_writing_realid() {
    let config = parse(REALID);
    assert_eq!(config.id_attribute, IdAttribute::RealId);
    assert_eq!(
        config.modules.iter().map(|m| m.id).collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!(config.module(3).unwrap().speed, std::f64::consts::TAU);
    let written = assert_round_trips(REALID);
    assert!(written.contains(r#"realid="3""#), "{written}");
    assert!(written.contains(r#"realid="4""#), "{written}");
    assert!(!written.contains(" id="), "{written}");
}

#[test]
fn matching_id_and_realid_are_accepted() {
    let text = doc(&[
        r#"<module id="5" realid="5" amplitude="0" offset="0" speed="0" minangle="0" maxangle="0"/>"#,
    ]);
    let config = parse(&text);
    assert_eq!(config.modules.len(), 1);
    assert_eq!(config.modules[0].id, 5);
    assert_round_trips(&text);
}

#[test]
fn disagreeing_id_and_realid_are_rejected() {
    let text = doc(&[
        M1,
        "</module>",
        r#"<module id="5" realid="6" amplitude="0" offset="0" speed="0" minangle="0" maxangle="0"/>"#,
    ]);
    assert_invalid(&text, Problem::IdMismatch { id: 5, realid: 6 }, "module", 5);
}

#[test]
fn module_without_any_id_is_rejected() {
    let text = doc(&[r#"<module amplitude="0" offset="0" speed="0" minangle="0" maxangle="0"/>"#]);
    assert_invalid(&text, Problem::MissingAttribute("id"), "module", 3);
}

#[test]
fn ids_must_be_unsigned_integers() {
    for bad in ["-1", "1.5", "x", "", "4294967296"] {
        let line = M1.replace(r#"id="1""#, &format!(r#"id="{bad}""#));
        assert_invalid(
            &doc(&[&line, "</module>"]),
            Problem::BadValue {
                name: "id",
                value: bad.to_owned(),
                expected: "unsigned integer",
            },
            "module",
            3,
        );
    }
}

// ------------------------------------------------------------ bad input

#[test]
fn missing_module_attributes_are_reported() {
    for (name, attribute) in [
        ("amplitude", r#" amplitude="0.5""#),
        ("offset", r#" offset="0.1""#),
        ("speed", r#" speed="0.6""#),
        ("minangle", r#" minangle="-1.57""#),
        ("maxangle", r#" maxangle="1.57""#),
    ] {
        assert!(M2.contains(attribute));
        // Module 2 sits on line 7.
        let m2 = M2.replace(attribute, "");
        assert_invalid(
            &two_modules(M1, BT, LINK, &m2),
            Problem::MissingAttribute(name),
            "module",
            7,
        );
    }
}

#[test]
fn missing_cpglink_attributes_are_reported() {
    for (name, attribute) in [
        ("to", r#" to="2""#),
        ("phase", r#" phase="-2.09""#),
        ("weight", r#" weight="1.0""#),
    ] {
        assert!(LINK.contains(attribute));
        let link = LINK.replace(attribute, "");
        assert_invalid(
            &two_modules(M1, BT, &link, M2),
            Problem::MissingAttribute(name),
            "cpglink",
            5,
        );
    }
}

#[test]
fn missing_bluetooth_target_is_reported() {
    assert_invalid(
        &two_modules(M1, "<bluetooth/>", LINK, M2),
        Problem::MissingAttribute("to"),
        "bluetooth",
        4,
    );
}

#[test]
fn duplicate_id_is_reported_at_the_second_module() {
    let m2 = M2.replace(r#"id="2""#, r#"id="1""#);
    let link = LINK.replace(r#"to="2""#, r#"to="1""#);
    assert_invalid(
        &two_modules(M1, "", &link, &m2),
        Problem::DuplicateId(1),
        "module",
        7,
    );
}

#[test]
fn duplicate_id_across_id_and_realid_is_reported() {
    let m2 = M2.replace(r#"id="2""#, r#"realid="1""#);
    assert_invalid(
        &two_modules(M1, "", "", &m2),
        Problem::DuplicateId(1),
        "module",
        7,
    );
}

#[test]
fn cpglink_to_unknown_module_is_reported() {
    let link = LINK.replace(r#"to="2""#, r#"to="9""#);
    assert_invalid(
        &two_modules(M1, BT, &link, M2),
        Problem::UnknownModule(9),
        "cpglink",
        5,
    );
}

#[test]
fn bluetooth_to_unknown_module_is_reported() {
    assert_invalid(
        &two_modules(M1, r#"<bluetooth to="42"/>"#, LINK, M2),
        Problem::UnknownModule(42),
        "bluetooth",
        4,
    );
}

#[test]
fn links_may_point_forward_in_the_file() {
    // Module 1 links to module 2, which is only declared afterwards.
    let config = parse(&two_modules(M1, BT, LINK, M2));
    assert_eq!(config.module(1).unwrap().bluetooth_to, Some(2));
    assert_eq!(config.module(1).unwrap().cpg_links[0].to, 2);
}

#[test]
fn non_finite_numbers_are_rejected() {
    for value in ["NaN", "nan", "inf", "-inf", "infinity", "1e999"] {
        let m2 = M2.replace(r#"speed="0.6""#, &format!(r#"speed="{value}""#));
        assert_invalid(
            &two_modules(M1, BT, LINK, &m2),
            Problem::NonFinite {
                name: "speed",
                value: value.to_owned(),
            },
            "module",
            7,
        );
        let link = LINK.replace(r#"phase="-2.09""#, &format!(r#"phase="{value}""#));
        assert_invalid(
            &two_modules(M1, BT, &link, M2),
            Problem::NonFinite {
                name: "phase",
                value: value.to_owned(),
            },
            "cpglink",
            5,
        );
    }
}

#[test]
fn non_numeric_values_are_rejected() {
    for value in ["abc", "", "1.0.0", "1,5", "0x10"] {
        let m1 = M1.replace(r#"amplitude="0.5""#, &format!(r#"amplitude="{value}""#));
        assert_invalid(
            &two_modules(&m1, BT, LINK, M2),
            Problem::BadValue {
                name: "amplitude",
                value: value.to_owned(),
                expected: "number",
            },
            "module",
            3,
        );
        let link = LINK.replace(r#"weight="1.0""#, &format!(r#"weight="{value}""#));
        assert_invalid(
            &two_modules(M1, BT, &link, M2),
            Problem::BadValue {
                name: "weight",
                value: value.to_owned(),
                expected: "number",
            },
            "cpglink",
            5,
        );
    }
    assert_invalid(
        &two_modules(M1, r#"<bluetooth to="abc"/>"#, LINK, M2),
        Problem::BadValue {
            name: "to",
            value: "abc".to_owned(),
            expected: "unsigned integer",
        },
        "bluetooth",
        4,
    );
}

#[test]
fn min_above_max_is_rejected_but_equal_is_fine() {
    let m2 = M2.replace(r#"minangle="-1.57""#, r#"minangle="1.6""#);
    assert_invalid(
        &two_modules(M1, BT, LINK, &m2),
        Problem::MinAboveMax {
            min: 1.6,
            max: 1.57,
        },
        "module",
        7,
    );
    let m2 = M2.replace(r#"minangle="-1.57""#, r#"minangle="1.57""#);
    let config = parse(&two_modules(M1, BT, LINK, &m2));
    let two = config.module(2).unwrap();
    assert_eq!((two.min_angle, two.max_angle), (1.57, 1.57));
}

#[test]
fn misspelt_element_is_reported() {
    let typo = LINK.replace("cpglink", "cpglnk");
    assert_invalid(
        &two_modules(M1, BT, &typo, M2),
        Problem::UnexpectedElement("cpglnk".to_owned()),
        "cpglnk",
        5,
    );
}

#[test]
fn unexpected_elements_at_every_level_are_reported() {
    assert_invalid(
        &doc(&[M1, "</module>", "<modul id=\"2\"/>"]),
        Problem::UnexpectedElement("modul".to_owned()),
        "modul",
        5,
    );
    assert_invalid(
        "<yamorconfig>\n<modulelist/>\n<extra/>\n</yamorconfig>",
        Problem::UnexpectedElement("extra".to_owned()),
        "extra",
        3,
    );
}

#[test]
fn second_bluetooth_is_rejected() {
    let text = two_modules(M1, BT, BT, M2);
    assert_invalid(
        &text,
        Problem::UnexpectedElement("bluetooth".to_owned()),
        "bluetooth",
        5,
    );
}

#[test]
fn wrong_root_is_reported() {
    assert_invalid(
        "<?xml version=\"1.0\"?>\n<robot>\n<modulelist/>\n</robot>\n",
        Problem::WrongRoot {
            expected: "yamorconfig",
        },
        "robot",
        2,
    );
}

#[test]
fn missing_modulelist_is_reported() {
    assert_invalid(
        "<yamorconfig>\n</yamorconfig>\n",
        Problem::MissingElement("modulelist"),
        "yamorconfig",
        1,
    );
}

#[test]
fn second_modulelist_is_reported() {
    assert_invalid(
        "<yamorconfig>\n<modulelist/>\n<modulelist/>\n</yamorconfig>\n",
        Problem::UnexpectedElement("modulelist".to_owned()),
        "modulelist",
        3,
    );
}

#[test]
fn two_bluetooth_parents_of_one_module_are_rejected() {
    let m3 = r#"<module id="3" amplitude="0" offset="0" speed="0" minangle="0" maxangle="0">"#;
    // Lines: 3 m1, 4 bt->3, 5 </module>, 6 m2, 7 bt->3, 8 </module>, 9 m3.
    let text = doc(&[
        M1,
        r#"<bluetooth to="3"/>"#,
        "</module>",
        M2,
        r#"<bluetooth to="3"/>"#,
        "</module>",
        m3,
        "</module>",
    ]);
    assert_invalid(&text, Problem::BluetoothFanIn(3), "module", 6);
}

#[test]
fn malformed_xml_names_the_file() {
    assert_malformed("<yamorconfig>\n<modulelist>\n</yamorconfig>\n");
    assert_malformed("<yamorconfig><modulelist></modulelist>");
    assert_malformed("");
    assert_malformed("\u{1}\u{2}\u{7f}garbage\u{fffd}\u{0}");
    assert_malformed("<yamorconfig>\u{1}</yamorconfig>");
    assert_malformed(r#"<yamorconfig><modulelist><module id="1></modulelist></yamorconfig>"#);
    assert_malformed("not xml at all");
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("no/such/gait.xml");
    match RobotConfig::from_file(&path) {
        Err(err @ XmlError::Io { .. }) => {
            assert!(err.problem().is_none());
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("{}: ", path.display())),
                "{shown}"
            );
        }
        other => panic!("expected XmlError::Io, got {other:?}"),
    }
}

#[test]
fn from_file_names_the_path_in_semantic_errors() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("config_xml");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("typo.xml");
    std::fs::write(
        &path,
        two_modules(M1, BT, &LINK.replace("cpglink", "cpglnk"), M2),
    )
    .unwrap();
    let err = RobotConfig::from_file(&path).expect_err("typo");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:5: <cpglnk>: unexpected element <cpglnk>",
            path.display()
        )
    );
}

// ------------------------------------------------------------ property test

/// Finite values, biased towards ones whose text form is awkward.
fn finite() -> impl Strategy<Value = f64> {
    use proptest::num::f64 as f;
    prop_oneof![
        3 => f::POSITIVE | f::NEGATIVE | f::NORMAL | f::SUBNORMAL | f::ZERO,
        1 => -1e6..1e6f64,
        2 => prop::sample::select(vec![
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            0.1 + 0.2,
            1.04,
            -2.09,
            std::f64::consts::PI,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            1e300,
            123_456_789.123_456_79,
            1e16,
            1e-7,
        ]),
    ]
}

fn robot_config() -> impl Strategy<Value = RobotConfig> {
    prop::collection::btree_set(any::<ModuleId>(), 1..8)
        .prop_flat_map(|ids| {
            let ids: Vec<ModuleId> = ids.into_iter().collect();
            let n = ids.len();
            let module = (
                [finite(), finite(), finite(), finite(), finite()],
                prop::collection::vec((0..n, finite(), finite()), 0..4),
                any::<bool>(),
            );
            (
                Just(ids).prop_shuffle(),
                prop::collection::vec(module, n),
                // Bluetooth targets: a permutation, so no module has two parents.
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                prop_oneof![Just(IdAttribute::Id), Just(IdAttribute::RealId)],
            )
        })
        .prop_map(|(ids, modules, targets, id_attribute)| RobotConfig {
            modules: ids
                .iter()
                .zip(modules)
                .zip(targets)
                .map(
                    |((&id, ([a, o, s, x, y], links, bt)), target)| ModuleConfig {
                        id,
                        amplitude: a,
                        offset: o,
                        speed: s,
                        min_angle: x.min(y),
                        max_angle: x.max(y),
                        bluetooth_to: bt.then_some(ids[target]),
                        cpg_links: links
                            .into_iter()
                            .map(|(to, phase, weight)| CpgLink {
                                to: ids[to],
                                phase,
                                weight,
                            })
                            .collect(),
                        // Either motion, as the speed's sign falls.
                        motion: if s > 0.0 {
                            yamor_core::Motion::Rotate
                        } else {
                            yamor_core::Motion::Oscillate
                        },
                    },
                )
                .collect(),
            id_attribute,
        })
}

/// Field-by-field comparison on bit patterns: `==` would accept 0.0 for -0.0.
fn bits(config: &RobotConfig) -> Vec<Vec<u64>> {
    config
        .modules
        .iter()
        .map(|m| {
            let mut v = vec![
                u64::from(m.id),
                m.amplitude.to_bits(),
                m.offset.to_bits(),
                m.speed.to_bits(),
                m.min_angle.to_bits(),
                m.max_angle.to_bits(),
                m.bluetooth_to.map_or(u64::MAX, u64::from),
                u64::from(m.motion == yamor_core::Motion::Rotate),
            ];
            for l in &m.cpg_links {
                v.extend([u64::from(l.to), l.phase.to_bits(), l.weight.to_bits()]);
            }
            v
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_configs_round_trip_exactly(config in robot_config()) {
        let written = config.to_xml_string();
        let reread = RobotConfig::from_xml_str("prop.xml", &written)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{written}")))?;
        prop_assert_eq!(&reread, &config);
        prop_assert_eq!(bits(&reread), bits(&config));
        prop_assert_eq!(reread.id_attribute, config.id_attribute);
        prop_assert_eq!(reread.to_xml_string(), written);
    }
}

#[test]
fn awkward_numbers_round_trip_bit_exactly() {
    for value in [
        -0.0,
        1e-300,
        0.1 + 0.2,
        5e-324,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
    ] {
        let mut config = RobotConfig {
            modules: vec![ModuleConfig::at_rest(0)],
            id_attribute: IdAttribute::Id,
        };
        let m = &mut config.modules[0];
        m.amplitude = value;
        m.offset = value;
        m.speed = value;
        m.min_angle = f64::MIN;
        m.max_angle = f64::MAX;
        m.cpg_links.push(CpgLink {
            to: 0,
            phase: value,
            weight: value,
        });
        let written = config.to_xml_string();
        let reread = RobotConfig::from_xml_str("awkward.xml", &written).unwrap();
        assert_eq!(bits(&reread), bits(&config), "{value:e}: {written}");
    }
}

#[test]
fn an_empty_module_list_is_refused_with_a_sentence() {
    assert_invalid(
        "<yamorconfig>\n<modulelist>\n</modulelist>\n</yamorconfig>",
        Problem::NoModules,
        "modulelist",
        2,
    );
}

#[test]
fn an_unknown_motion_is_refused_with_what_is_known() {
    let text = r#"<yamorconfig><modulelist>
        <module id="0" amplitude="0" offset="0" speed="1" minangle="-1" maxangle="1" motion="spin"/>
    </modulelist></yamorconfig>"#;
    let e = RobotConfig::from_xml_str("spin.xml", text)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("motion") && e.contains("oscillate or rotate"),
        "{e}"
    );
}
