//! Transformation scripts (thesis C.2.7): a robot changes shape by a
//! sequence of `<connect>`, `<disconnect>` and `<pause>` commands, in the
//! robot's real module ids.
//!
//! ```xml
//! <script>
//!   <disconnect id="5"/>
//!   <pause delay="500"/>
//!   <connect idfrom="5" connfrom="front" idto="7" connto="rear" angle="90"/>
//! </script>
//! ```
//!
//! `delay` is in milliseconds; `angle` (degrees, a multiple of 15) may be
//! left out for a straight mating. Read with [`Script::from_xml_str`],
//! written with [`Script::to_xml_string`]; the two round-trip.

use std::fmt::Write as _;

use crate::ModuleId;
use crate::error::Problem;
use crate::morphology::{Connection, Connector};

/// One command of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Connect(Connection),
    /// Every connection of the module comes off.
    Disconnect(ModuleId),
    /// Seconds.
    Pause(f64),
}

impl Step {
    /// The element name of the command.
    #[must_use]
    pub fn element(&self) -> &'static str {
        match self {
            Step::Connect(_) => "connect",
            Step::Disconnect(_) => "disconnect",
            Step::Pause(_) => "pause",
        }
    }
}

/// A step and the line it was read from (0 for a script built in code).
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptStep {
    pub line: u32,
    pub step: Step,
}

/// Why a script cannot be read; names the line and element.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScriptError {
    #[error("script_xml: {0}")]
    Xml(String),
    #[error("script_xml:{line}: the root element must be <script>, got <{found}>")]
    Root { line: u32, found: String },
    #[error("script_xml:{line}: <{element}>: {problem}")]
    Step {
        line: u32,
        element: String,
        problem: StepError,
    },
}

/// What is wrong with one command of a script.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error("missing attribute `{0}`")]
    MissingAttribute(String),
    #[error("attribute `{key}`: {text:?} is not a number")]
    NotANumber { key: String, text: String },
    #[error("attribute `{key}`: {text:?} is not a module id")]
    NotAModuleId { key: String, text: String },
    /// Milliseconds.
    #[error("delay {0} ms is negative")]
    NegativeDelay(f64),
    #[error("unknown command <{0}> (connect, disconnect or pause)")]
    UnknownCommand(String),
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// Why the parts of a connection do not make one; names the request's or
/// script's field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConnectionError {
    #[error("module {0} cannot connect to itself")]
    ToItself(ModuleId),
    #[error("{field}: {problem}")]
    Field { field: String, problem: Problem },
}

/// A transformation script.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    pub steps: Vec<ScriptStep>,
}

impl Script {
    /// A script of `steps`, in order.
    #[must_use]
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Script {
            steps: steps
                .into_iter()
                .map(|step| ScriptStep { line: 0, step })
                .collect(),
        }
    }

    /// The line of the pause at which the pauses first add up to more than
    /// `seconds`, if they ever do.
    #[must_use]
    pub fn pauses_exceed(&self, seconds: f64) -> Option<u32> {
        let mut paused = 0.0;
        self.steps.iter().find_map(|s| match s.step {
            Step::Pause(p) => {
                paused += p;
                (paused > seconds).then_some(s.line)
            }
            _ => None,
        })
    }

    /// Parses a whole script; the first bad command is the error.
    pub fn from_xml_str(text: &str) -> Result<Script, ScriptError> {
        let doc = roxmltree::Document::parse(text).map_err(|e| ScriptError::Xml(e.to_string()))?;
        let root = doc.root_element();
        if root.tag_name().name() != "script" {
            return Err(ScriptError::Root {
                line: doc.text_pos_at(root.range().start).row,
                found: root.tag_name().name().to_owned(),
            });
        }
        let mut steps = Vec::new();
        for node in root.children().filter(roxmltree::Node::is_element) {
            let line = doc.text_pos_at(node.range().start).row;
            let step = parse_step(&node).map_err(|problem| ScriptError::Step {
                line,
                element: node.tag_name().name().to_owned(),
                problem,
            })?;
            steps.push(ScriptStep { line, step });
        }
        Ok(Script { steps })
    }

    /// The script as XML.
    #[must_use]
    pub fn to_xml_string(&self) -> String {
        let mut out = String::from("<script>\n");
        for s in &self.steps {
            // Writing to a String cannot fail.
            let _ = match &s.step {
                Step::Connect(c) => writeln!(
                    out,
                    "  <connect idfrom=\"{}\" connfrom=\"{}\" idto=\"{}\" connto=\"{}\" angle=\"{}\"/>",
                    c.id_from,
                    c.conn_from.as_str(),
                    c.id_to,
                    c.conn_to.as_str(),
                    c.angle_deg
                ),
                Step::Disconnect(id) => writeln!(out, "  <disconnect id=\"{id}\"/>"),
                Step::Pause(seconds) => writeln!(out, "  <pause delay=\"{}\"/>", seconds * 1000.0),
            };
        }
        out + "</script>\n"
    }
}

fn parse_step(node: &roxmltree::Node<'_, '_>) -> Result<Step, StepError> {
    let attr = |key: &str| {
        node.attribute(key)
            .ok_or_else(|| StepError::MissingAttribute(key.to_owned()))
    };
    let number = |key: &str| -> Result<f64, StepError> {
        let text = attr(key)?;
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| StepError::NotANumber {
                key: key.to_owned(),
                text: text.to_owned(),
            })
    };
    let id = |key: &str| -> Result<ModuleId, StepError> {
        let text = attr(key)?;
        text.trim()
            .parse::<ModuleId>()
            .map_err(|_| StepError::NotAModuleId {
                key: key.to_owned(),
                text: text.to_owned(),
            })
    };
    match node.tag_name().name() {
        "connect" => Ok(Step::Connect(connection(
            ["connfrom", "connto", "angle"],
            id("idfrom")?,
            attr("connfrom")?,
            id("idto")?,
            attr("connto")?,
            // The angle may be left out for a straight mating.
            if node.has_attribute("angle") {
                number("angle")?
            } else {
                0.0
            },
        )?)),
        "disconnect" => Ok(Step::Disconnect(id("id")?)),
        "pause" => {
            let ms = number("delay")?;
            if ms < 0.0 {
                return Err(StepError::NegativeDelay(ms));
            }
            Ok(Step::Pause(ms / 1000.0))
        }
        other => Err(StepError::UnknownCommand(other.to_owned())),
    }
}

/// A connection from its parts as a request or a script gives them; errors
/// name `fields` (from-connector, to-connector, angle).
pub fn connection(
    fields: [&str; 3],
    id_from: ModuleId,
    conn_from: &str,
    id_to: ModuleId,
    conn_to: &str,
    angle_deg: f64,
) -> Result<Connection, ConnectionError> {
    fn field(name: &str) -> impl FnOnce(Problem) -> ConnectionError + '_ {
        move |problem| ConnectionError::Field {
            field: name.to_owned(),
            problem,
        }
    }
    if id_from == id_to {
        return Err(ConnectionError::ToItself(id_from));
    }
    Ok(Connection {
        id_from,
        conn_from: conn_from.parse::<Connector>().map_err(field(fields[0]))?,
        id_to,
        conn_to: conn_to.parse::<Connector>().map_err(field(fields[1]))?,
        angle_deg: Connection::check_angle(angle_deg).map_err(field(fields[2]))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_script_reads_back_the_same() {
        let script = Script::new([
            Step::Disconnect(5),
            Step::Pause(0.5),
            Step::Connect(Connection {
                id_from: 5,
                conn_from: Connector::Front,
                id_to: 7,
                conn_to: Connector::Rear,
                angle_deg: 90,
            }),
        ]);
        let read = Script::from_xml_str(&script.to_xml_string()).unwrap();
        let steps: Vec<&Step> = read.steps.iter().map(|s| &s.step).collect();
        assert_eq!(
            steps,
            script.steps.iter().map(|s| &s.step).collect::<Vec<_>>()
        );
        assert_eq!(read.steps[2].line, 4);
        assert_eq!(read.pauses_exceed(0.4), Some(3));
        assert_eq!(read.pauses_exceed(0.5), None);
    }

    #[test]
    fn errors_name_line_element_and_attribute() {
        let e = Script::from_xml_str("<script>\n<connect idfrom=\"1\" connfrom=\"front\" idto=\"x\" connto=\"rear\"/>\n</script>")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "script_xml:2: <connect>: attribute `idto`: \"x\" is not a module id"
        );
        let e = Script::from_xml_str("<robot/>").unwrap_err();
        assert!(matches!(e, ScriptError::Root { line: 1, .. }), "{e}");
        let e = Script::from_xml_str("<script><jump/></script>").unwrap_err();
        assert!(e.to_string().contains("unknown command <jump>"), "{e}");
    }
}
