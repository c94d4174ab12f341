//! Errors for everything read from XML: they name the file, the line, the
//! element and the problem so a user can fix the file without guessing.

use crate::ModuleId;

/// A file could not be read as a robot configuration or morphology.
#[derive(Debug, thiserror::Error)]
pub enum XmlError {
    /// The text is not well-formed XML.
    #[error("{file}: malformed XML: {source}")]
    Malformed {
        file: String,
        #[source]
        source: roxmltree::Error,
    },
    /// The XML is well-formed but says something invalid.
    #[error("{file}:{line}: <{element}>: {problem}")]
    Invalid {
        file: String,
        line: u32,
        element: String,
        problem: Problem,
    },
    /// The file could not be read at all.
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

impl XmlError {
    /// The semantic problem, if this is not a syntax or I/O error.
    #[must_use]
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            XmlError::Invalid { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

/// What is wrong with one element.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    #[error("expected root element <{expected}>")]
    WrongRoot { expected: &'static str },
    #[error("missing attribute `{0}`")]
    MissingAttribute(&'static str),
    #[error("missing child element <{0}>")]
    MissingElement(&'static str),
    #[error("unexpected element <{0}>")]
    UnexpectedElement(String),
    #[error("attribute `{name}`: `{value}` is not a valid {expected}")]
    BadValue {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("attribute `{name}` must be finite, got `{value}`")]
    NonFinite { name: &'static str, value: String },
    #[error("attributes `id` ({id}) and `realid` ({realid}) disagree")]
    IdMismatch { id: ModuleId, realid: ModuleId },
    #[error("duplicate module id {0}")]
    DuplicateId(ModuleId),
    #[error("link to unknown module {0}")]
    UnknownModule(ModuleId),
    #[error("minangle {min} is greater than maxangle {max}")]
    MinAboveMax { min: f64, max: f64 },
    #[error("angle {0}° is not a multiple of 15°")]
    AngleNotMultipleOf15(f64),
    #[error("unknown connector `{0}` (expected front, rear, left, right, top or bottom)")]
    UnknownConnector(String),
    #[error("connector {connector} of module {module} is already in use")]
    ConnectorInUse { module: ModuleId, connector: String },
    #[error("module {0} cannot connect to itself")]
    SelfConnection(ModuleId),
    #[error("module {0} is not connected to the central module")]
    Unreachable(ModuleId),
    #[error("module {0} has two Bluetooth parents")]
    BluetoothFanIn(ModuleId),
    /// An `<optimize>` rule of an optimization configuration (thesis 5.7.2).
    /// Boxed: it carries expression errors, and would make every `Problem`
    /// large.
    #[error("{0}")]
    Optimize(Box<crate::optimize::RuleError>),
}
