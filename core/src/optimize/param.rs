//! The names of optimizable parameters and why a rule or a vector of values
//! does not fit a robot. Apart from the rest of `optimize` so the XML error
//! type can name a rule's problem without importing the reader of rules.

use std::fmt;
use std::str::FromStr;

#[cfg(doc)]
use super::OptimizationConfig;
use crate::ModuleId;
use crate::matheval::ExprError;

/// Which field of which module or CPG link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamName {
    Amplitude(ModuleId),
    Offset(ModuleId),
    Speed(ModuleId),
    MinAngle(ModuleId),
    MaxAngle(ModuleId),
    /// The lag of the link from the first module to the second (and its
    /// negation on the reverse link).
    Phase(ModuleId, ModuleId),
    Weight(ModuleId, ModuleId),
}

impl fmt::Display for ParamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamName::Amplitude(m) => write!(f, "amplitude_{m}"),
            ParamName::Offset(m) => write!(f, "offset_{m}"),
            ParamName::Speed(m) => write!(f, "speed_{m}"),
            ParamName::MinAngle(m) => write!(f, "minangle_{m}"),
            ParamName::MaxAngle(m) => write!(f, "maxangle_{m}"),
            ParamName::Phase(a, b) => write!(f, "phase_{a}_{b}"),
            ParamName::Weight(a, b) => write!(f, "weight_{a}_{b}"),
        }
    }
}

impl FromStr for ParamName {
    type Err = RuleError;

    /// Reads the thesis' names; ids are plain decimal digits.
    fn from_str(s: &str) -> Result<Self, RuleError> {
        let bad = || RuleError::BadName(s.to_owned());
        let mut parts = s.trim().split('_');
        let kind = parts.next().ok_or_else(bad)?;
        let ids: Vec<ModuleId> = parts
            .map(|part| {
                // `u32::from_str` would also take "+3".
                if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                    part.parse().map_err(|_| bad())
                } else {
                    Err(bad())
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(match (kind, &ids[..]) {
            ("amplitude", &[m]) => ParamName::Amplitude(m),
            ("offset", &[m]) => ParamName::Offset(m),
            ("speed", &[m]) => ParamName::Speed(m),
            ("minangle", &[m]) => ParamName::MinAngle(m),
            ("maxangle", &[m]) => ParamName::MaxAngle(m),
            ("phase", &[a, b]) => ParamName::Phase(a, b),
            ("weight", &[a, b]) => ParamName::Weight(a, b),
            _ => return Err(bad()),
        })
    }
}

/// Why a rule does not fit its robot. Inside an XML file it comes as
/// `error::Problem::Optimize` with the file, line and element.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    #[error(
        "`{0}` is not a parameter name (expected amplitude_<id>, offset_<id>, speed_<id>, \
         minangle_<id>, maxangle_<id>, phase_<from>_<to> or weight_<from>_<to>)"
    )]
    BadName(String),
    #[error("{0} names a module or CPG link the robot does not have")]
    UnknownParameter(ParamName),
    #[error("{0} has two rules")]
    Duplicate(ParamName),
    #[error(
        "{param} sets the same pair of CPG links as the earlier rule for {earlier} \
         (a phase also sets the reverse link to the negated lag)"
    )]
    ReversePhase {
        param: ParamName,
        earlier: ParamName,
    },
    #[error("{param}: the bounds must be finite, got [{min}, {max}]")]
    NonFiniteBounds {
        param: ParamName,
        min: f64,
        max: f64,
    },
    #[error("{param}: min {min} is greater than max {max}")]
    BoundsReversed {
        param: ParamName,
        min: f64,
        max: f64,
    },
    #[error(
        "{param}: its start value (its value in the robot), {start}, lies outside [{min}, {max}]"
    )]
    StartOutOfBounds {
        param: ParamName,
        start: f64,
        min: f64,
        max: f64,
    },
    #[error(
        "{param}: [{min}, {max}] reaches beyond module {module}'s joint limits \
         [{min_angle}, {max_angle}] rad ({hint}); narrow the range, or optimize \
         minangle_{module}/maxangle_{module} too"
    )]
    BeyondJointLimits {
        param: ParamName,
        min: f64,
        max: f64,
        module: ModuleId,
        min_angle: f64,
        max_angle: f64,
        hint: &'static str,
    },
    #[error("{0}: give either min and max (a free parameter) or expr (a constraint), not both")]
    BoundsAndExpr(ParamName),
    #[error("{0}: give min and max (a free parameter), or expr (a constraint)")]
    NoBoundsNorExpr(ParamName),
    #[error("{param}: expr {text:?}: {error}")]
    BadExpr {
        param: ParamName,
        text: String,
        error: ExprError,
    },
    #[error("at the start values: {0}")]
    AtStart(ApplyError),
    #[error("unknown attribute `{0}` (expected param, min, max or expr)")]
    UnknownAttribute(String),
}

/// A rule of [`OptimizationConfig::new`] that does not fit; `index` counts
/// the rules from 0.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("rule {} of {}: {error}", .index + 1, .count)]
pub struct InvalidRule {
    pub index: usize,
    pub count: usize,
    /// Boxed to keep `Result<_, InvalidRule>` small.
    pub error: Box<RuleError>,
}

/// Why a vector of free values does not give a robot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    #[error("expected {expected} free values, got {got}")]
    Length { expected: usize, got: usize },
    #[error("{param} = {value} lies outside its bounds [{min}, {max}]")]
    OutOfBounds {
        param: ParamName,
        value: f64,
        min: f64,
        max: f64,
    },
    #[error("constraint {param} = {expr}: {error}")]
    Constraint {
        param: ParamName,
        expr: String,
        error: ExprError,
    },
    #[error("constraint {param} = {expr} gives {value}, not a finite number")]
    NonFinite {
        param: ParamName,
        expr: String,
        value: f64,
    },
    /// The firmware clamps the set-point to [minangle, maxangle], which
    /// needs minangle ≤ maxangle.
    #[error("module {module}: minangle {min} is greater than maxangle {max}")]
    LimitsCrossed {
        module: ModuleId,
        min: f64,
        max: f64,
    },
}
