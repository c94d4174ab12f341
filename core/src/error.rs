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
    /// The XML declaration names an encoding that is not known (or, like
    /// `ISO-2022-KR`, cannot be decoded safely).
    #[error("{file}: unknown encoding `{label}` in the XML declaration")]
    UnknownEncoding { file: String, label: String },
    /// The bytes are not valid in the encoding chosen for the file; `offset`
    /// counts bytes from the start of the file (byte order mark included) to
    /// the first malformed byte, `line` is the line it is on.
    #[error(
        "{file}:{line}: not valid {encoding} ({basis}): malformed byte sequence at byte offset {offset}"
    )]
    BadEncoding {
        file: String,
        line: u32,
        offset: usize,
        encoding: &'static str,
        basis: EncodingBasis,
    },
}

/// Why a file was decoded with the encoding it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodingBasis {
    /// A byte order mark (UTF-8, UTF-16 LE or UTF-16 BE) starts the file.
    ByteOrderMark,
    /// The XML declaration's `encoding` pseudo-attribute names it.
    Declaration,
    /// The first bytes show it: `<?` in UTF-16 without a byte order mark, or
    /// an ASCII-compatible file whose declaration claims UTF-16 (as .NET
    /// writes when a document serialised to a string is saved as UTF-8).
    FirstBytes,
    /// Neither a byte order mark nor a declared encoding: XML's default,
    /// UTF-8.
    Default,
}

impl std::fmt::Display for EncodingBasis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EncodingBasis::ByteOrderMark => "as its byte order mark says",
            EncodingBasis::Declaration => "as its XML declaration says",
            EncodingBasis::FirstBytes => "as its first bytes show",
            EncodingBasis::Default => "the default without a byte order mark or declared encoding",
        })
    }
}

impl XmlError {
    /// The semantic problem, if this is not a syntax, encoding or I/O error.
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
    #[error("the module list is empty: a robot needs at least one <module>")]
    NoModules,
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
    #[error(
        "a robot of the {0:?} module family, not YaMoR's: the Roombots' robots are walked by `yamor roombots walk` and `yamor run roombots-…`, not by YaMoR's simulator"
    )]
    OtherFamily(String),
    /// An `<optimize>` rule of an optimization configuration (thesis 5.7.2).
    /// Boxed: it carries expression errors, and would make every `Problem`
    /// large.
    #[error("{0}")]
    Optimize(Box<crate::optimize::param::RuleError>),
}
