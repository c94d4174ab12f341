//! Integration tests for the morphology reader, writer and connection checks.

use yamor_core::{Connection, Connector, Morphology, MorphologyModule, Problem, XmlError};

const FILE: &str = "robots/broken/morphology.xml";

/// Central passive module 4 with three active modules around it.
/// Line numbers matter for the error tests below.
const SMALL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<morphology central="4">
  <module id="4" passive="true"/>
  <module id="0"/>
  <module id="1" passive="false"/>
  <connect idfrom="0" connfrom="rear" idto="4" connto="left" angle="90"/>
  <connect idfrom="1" connfrom="front" idto="4" connto="right" angle="-90"/>
  <module id="2"/>
  <connect idfrom="2" connfrom="bottom" idto="0" connto="top" angle="0"/>
</morphology>
"#;

fn parse(text: &str) -> Morphology {
    Morphology::from_xml_str(FILE, text).unwrap_or_else(|e| panic!("should parse: {e}\n{text}"))
}

/// Asserts `text` is rejected with exactly `problem` at `element` on `line`,
/// and that the message names all three and the file.
#[track_caller]
fn assert_invalid(text: &str, problem: Problem, element: &str, line: u32) {
    let err = match Morphology::from_xml_str(FILE, text) {
        Ok(m) => panic!("accepted invalid input as {m:?}:\n{text}"),
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
    assert_eq!(
        err.to_string(),
        format!("{FILE}:{line}: <{element}>: {problem}")
    );
}

/// `SMALL` with one line replaced (1-based line number).
fn small_with_line(line: usize, replacement: &str) -> String {
    let mut lines: Vec<&str> = SMALL.lines().collect();
    lines[line - 1] = replacement;
    lines.join("\n")
}

fn connection(id_from: u32, conn_from: Connector, id_to: u32, conn_to: Connector) -> Connection {
    Connection {
        id_from,
        conn_from,
        id_to,
        conn_to,
        angle_deg: 0,
    }
}

// ------------------------------------------------------------ valid input

#[test]
fn small_morphology_parses_with_all_values() {
    let m = parse(SMALL);
    assert_eq!(m.central, 4);
    assert_eq!(
        m.modules,
        [
            MorphologyModule {
                id: 4,
                passive: true
            },
            MorphologyModule {
                id: 0,
                passive: false
            },
            MorphologyModule {
                id: 1,
                passive: false
            },
            MorphologyModule {
                id: 2,
                passive: false
            },
        ]
    );
    assert_eq!(
        m.connections,
        [
            Connection {
                id_from: 0,
                conn_from: Connector::Rear,
                id_to: 4,
                conn_to: Connector::Left,
                angle_deg: 90,
            },
            Connection {
                id_from: 1,
                conn_from: Connector::Front,
                id_to: 4,
                conn_to: Connector::Right,
                angle_deg: -90,
            },
            Connection {
                id_from: 2,
                conn_from: Connector::Bottom,
                id_to: 0,
                conn_to: Connector::Top,
                angle_deg: 0,
            },
        ]
    );
    assert!(m.unreachable_modules().is_empty());
    assert!(m.module(4).unwrap().passive);
    assert!(m.module(3).is_none());
}

#[test]
fn small_morphology_round_trips() {
    let m = parse(SMALL);
    let written = m.to_xml_string();
    let reread = Morphology::from_xml_str("written.xml", &written)
        .unwrap_or_else(|e| panic!("written text must parse: {e}\n{written}"));
    assert_eq!(reread, m, "{written}");
    assert_eq!(
        reread.to_xml_string(),
        written,
        "writing twice must be stable"
    );
    assert!(written.contains(r#"angle="-90""#), "{written}");
    assert!(written.contains(r#"passive="true""#), "{written}");
}

#[test]
fn single_module_morphology_round_trips() {
    let text = "<morphology central=\"7\"><module id=\"7\"/></morphology>";
    let m = parse(text);
    assert_eq!(m.connections, []);
    assert_eq!(parse(&m.to_xml_string()), m);
}

#[test]
fn negative_and_large_multiples_of_15_are_accepted() {
    for (angle, expected) in [
        ("-90", -90),
        ("-15", -15),
        ("-0", 0),
        ("180", 180),
        ("345", 345),
        ("-360", -360),
        ("45.0", 45),
    ] {
        let text = small_with_line(
            6,
            &format!(
                r#"  <connect idfrom="0" connfrom="rear" idto="4" connto="left" angle="{angle}"/>"#
            ),
        );
        assert_eq!(parse(&text).connections[0].angle_deg, expected, "{angle}");
    }
}

#[test]
fn passive_accepts_booleans() {
    for (value, passive) in [("true", true), ("1", true), ("false", false), ("0", false)] {
        let text = small_with_line(3, &format!(r#"  <module id="4" passive="{value}"/>"#));
        assert_eq!(parse(&text).module(4).unwrap().passive, passive, "{value}");
    }
}

// -------------------------------------------------------------- bad input

#[test]
fn angle_not_multiple_of_15_is_rejected() {
    for (text, value) in [("10", 10.0), ("7.5", 7.5), ("-100", -100.0), ("0.1", 0.1)] {
        assert_invalid(
            &small_with_line(
                7,
                &format!(
                    r#"  <connect idfrom="1" connfrom="front" idto="4" connto="right" angle="{text}"/>"#
                ),
            ),
            Problem::AngleNotMultipleOf15(value),
            "connect",
            7,
        );
    }
}

#[test]
fn non_finite_or_non_numeric_angle_is_rejected() {
    let line = |angle: &str| {
        small_with_line(
            6,
            &format!(
                r#"  <connect idfrom="0" connfrom="rear" idto="4" connto="left" angle="{angle}"/>"#
            ),
        )
    };
    assert_invalid(
        &line("NaN"),
        Problem::NonFinite {
            name: "angle",
            value: "NaN".to_owned(),
        },
        "connect",
        6,
    );
    assert_invalid(
        &line("ninety"),
        Problem::BadValue {
            name: "angle",
            value: "ninety".to_owned(),
            expected: "number",
        },
        "connect",
        6,
    );
    assert_invalid(
        &line("1e9"),
        Problem::AngleNotMultipleOf15(1e9),
        "connect",
        6,
    );
}

#[test]
fn unknown_connector_is_rejected() {
    assert_invalid(
        &small_with_line(
            6,
            r#"  <connect idfrom="0" connfrom="up" idto="4" connto="left" angle="90"/>"#,
        ),
        Problem::UnknownConnector("up".to_owned()),
        "connect",
        6,
    );
    assert_invalid(
        &small_with_line(
            6,
            r#"  <connect idfrom="0" connfrom="rear" idto="4" connto="Left" angle="90"/>"#,
        ),
        Problem::UnknownConnector("Left".to_owned()),
        "connect",
        6,
    );
}

#[test]
fn missing_connect_attributes_are_reported() {
    let full = r#"  <connect idfrom="0" connfrom="rear" idto="4" connto="left" angle="90"/>"#;
    for (name, attribute) in [
        ("idfrom", r#" idfrom="0""#),
        ("connfrom", r#" connfrom="rear""#),
        ("idto", r#" idto="4""#),
        ("connto", r#" connto="left""#),
        ("angle", r#" angle="90""#),
    ] {
        assert!(full.contains(attribute));
        assert_invalid(
            &small_with_line(6, &full.replace(attribute, "")),
            Problem::MissingAttribute(name),
            "connect",
            6,
        );
    }
}

#[test]
fn connector_already_in_use_is_rejected() {
    // Line 7 uses module 0's rear connector a second time.
    assert_invalid(
        &small_with_line(
            7,
            r#"  <connect idfrom="0" connfrom="rear" idto="1" connto="front" angle="0"/>"#,
        ),
        Problem::ConnectorInUse {
            module: 0,
            connector: "rear".to_owned(),
        },
        "connect",
        7,
    );
    // The same connector named as the `to` end of a later connection.
    assert_invalid(
        &small_with_line(
            7,
            r#"  <connect idfrom="1" connfrom="front" idto="0" connto="rear" angle="0"/>"#,
        ),
        Problem::ConnectorInUse {
            module: 0,
            connector: "rear".to_owned(),
        },
        "connect",
        7,
    );
}

#[test]
fn self_connection_is_rejected() {
    assert_invalid(
        &small_with_line(
            7,
            r#"  <connect idfrom="1" connfrom="front" idto="1" connto="rear" angle="0"/>"#,
        ),
        Problem::SelfConnection(1),
        "connect",
        7,
    );
}

#[test]
fn connection_to_unknown_module_is_rejected() {
    assert_invalid(
        &small_with_line(
            7,
            r#"  <connect idfrom="1" connfrom="front" idto="9" connto="right" angle="0"/>"#,
        ),
        Problem::UnknownModule(9),
        "connect",
        7,
    );
    assert_invalid(
        &small_with_line(
            7,
            r#"  <connect idfrom="9" connfrom="front" idto="4" connto="right" angle="0"/>"#,
        ),
        Problem::UnknownModule(9),
        "connect",
        7,
    );
}

#[test]
fn unknown_central_is_rejected() {
    assert_invalid(
        &small_with_line(2, r#"<morphology central="5">"#),
        Problem::UnknownModule(5),
        "morphology",
        2,
    );
}

#[test]
fn missing_central_is_rejected() {
    assert_invalid(
        &small_with_line(2, "<morphology>"),
        Problem::MissingAttribute("central"),
        "morphology",
        2,
    );
}

#[test]
fn module_not_connected_to_central_is_rejected() {
    // Drop the only connection of module 1.
    assert_invalid(
        &small_with_line(7, ""),
        Problem::Unreachable(1),
        "morphology",
        2,
    );
    // An island: modules 1 and 2 connected to each other but not to the rest.
    let island = r#"<morphology central="0">
  <module id="0"/>
  <module id="1"/>
  <module id="2"/>
  <connect idfrom="1" connfrom="front" idto="2" connto="rear" angle="0"/>
</morphology>"#;
    assert_invalid(island, Problem::Unreachable(1), "morphology", 1);
}

#[test]
fn duplicate_module_id_is_rejected() {
    assert_invalid(
        &small_with_line(8, r#"  <module id="0"/>"#),
        Problem::DuplicateId(0),
        "module",
        8,
    );
}

#[test]
fn bad_passive_value_is_rejected() {
    assert_invalid(
        &small_with_line(4, r#"  <module id="0" passive="maybe"/>"#),
        Problem::BadValue {
            name: "passive",
            value: "maybe".to_owned(),
            expected: "boolean (true or false)",
        },
        "module",
        4,
    );
}

#[test]
fn bad_module_id_is_rejected() {
    assert_invalid(
        &small_with_line(4, r#"  <module id="-1"/>"#),
        Problem::BadValue {
            name: "id",
            value: "-1".to_owned(),
            expected: "unsigned integer",
        },
        "module",
        4,
    );
    assert_invalid(
        &small_with_line(4, "  <module/>"),
        Problem::MissingAttribute("id"),
        "module",
        4,
    );
}

#[test]
fn wrong_root_and_unexpected_elements_are_rejected() {
    assert_invalid(
        "<yamorconfig>\n<modulelist/>\n</yamorconfig>",
        Problem::WrongRoot {
            expected: "morphology",
        },
        "yamorconfig",
        1,
    );
    assert_invalid(
        &small_with_line(
            6,
            r#"  <conect idfrom="0" connfrom="rear" idto="4" connto="left" angle="90"/>"#,
        ),
        Problem::UnexpectedElement("conect".to_owned()),
        "conect",
        6,
    );
}

#[test]
fn malformed_xml_names_the_file() {
    for text in [
        "<morphology central=\"0\"><module id=\"0\"/>",
        "\u{1}garbage\u{0}",
        "",
    ] {
        match Morphology::from_xml_str(FILE, text) {
            Err(err @ XmlError::Malformed { .. }) => {
                assert!(
                    err.to_string()
                        .starts_with(&format!("{FILE}: malformed XML: ")),
                    "{err}"
                );
            }
            other => panic!("expected XmlError::Malformed, got {other:?}"),
        }
    }
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("no/such/morphology.xml");
    match Morphology::from_file(&path) {
        Err(err @ XmlError::Io { .. }) => {
            assert!(
                err.to_string()
                    .starts_with(&format!("{}: ", path.display()))
            );
        }
        other => panic!("expected XmlError::Io, got {other:?}"),
    }
}

// ------------------------------------------------------- check_connection

#[test]
fn check_connection_accepts_a_free_connector() {
    let m = parse(SMALL);
    // Module 4's front and module 2's top are free.
    let free = connection(4, Connector::Front, 2, Connector::Top);
    assert_eq!(m.check_connection(&free), Ok(()));
    assert_eq!(
        m.check_connection(&Connection {
            angle_deg: -165,
            ..free
        }),
        Ok(())
    );
}

#[test]
fn check_connection_rejects_connectors_in_use() {
    let m = parse(SMALL);
    // Module 0 rear is used as `idfrom` of the first connection.
    assert_eq!(
        m.check_connection(&connection(0, Connector::Rear, 2, Connector::Top)),
        Err(Problem::ConnectorInUse {
            module: 0,
            connector: "rear".to_owned()
        })
    );
    // Module 4 left is used as `idto` of the first connection.
    assert_eq!(
        m.check_connection(&connection(2, Connector::Top, 4, Connector::Left)),
        Err(Problem::ConnectorInUse {
            module: 4,
            connector: "left".to_owned()
        })
    );
}

#[test]
fn check_connection_rejects_unknown_modules_self_and_bad_angles() {
    let m = parse(SMALL);
    assert_eq!(
        m.check_connection(&connection(3, Connector::Front, 2, Connector::Top)),
        Err(Problem::UnknownModule(3))
    );
    assert_eq!(
        m.check_connection(&connection(2, Connector::Front, 99, Connector::Top)),
        Err(Problem::UnknownModule(99))
    );
    assert_eq!(
        m.check_connection(&connection(2, Connector::Front, 2, Connector::Top)),
        Err(Problem::SelfConnection(2))
    );
    assert_eq!(
        m.check_connection(&Connection {
            angle_deg: 10,
            ..connection(4, Connector::Front, 2, Connector::Top)
        }),
        Err(Problem::AngleNotMultipleOf15(10.0))
    );
}

#[test]
fn connector_codes_and_names_round_trip() {
    for c in Connector::ALL {
        assert_eq!(Connector::from_code(c.code()), Some(c));
        assert_eq!(c.as_str().parse::<Connector>(), Ok(c));
        assert_eq!(c.to_string(), c.as_str());
    }
    assert_eq!(Connector::from_code(6), None);
    assert_eq!(
        "up".parse::<Connector>(),
        Err(Problem::UnknownConnector("up".to_owned()))
    );
}

#[test]
fn another_module_family_is_refused_with_where_it_is_read() {
    let roombots = include_str!("../../examples/robots/roombots-meta/world.xml");
    let line = roombots
        .lines()
        .position(|l| l.starts_with("<morphology"))
        .unwrap() as u32
        + 1;
    assert_invalid(
        roombots,
        Problem::OtherFamily("roombots".to_owned()),
        "morphology",
        line,
    );
    // YaMoR's own family may be named.
    let named = SMALL.replacen("<morphology ", "<morphology family=\"yamor\" ", 1);
    assert_eq!(parse(&named), parse(SMALL));
}
