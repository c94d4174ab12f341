//! The checks made before anything is stored or sent, and the errors that
//! name what was refused.

use yamor_core::{ModuleConfig, ModuleId};
use yamor_snp::limits::{HANDLE_RANGE, MAX_ANGLE_PARAMETER, MAX_SPEED};

use crate::model::SessionError;

pub(super) fn not_in_world(real: ModuleId, id: ModuleId, world: &[ModuleId]) -> SessionError {
    let mut known = world.to_vec();
    known.sort_unstable();
    let known: Vec<String> = known.iter().map(ToString::to_string).collect();
    let via = if id == real {
        String::new()
    } else {
        format!(" (simulation id {id})")
    };
    SessionError::Invalid(format!(
        "unknown module id {real}{via}: the simulated robot has modules {}",
        known.join(", ")
    ))
}

/// A module's configuration outside what its firmware accepts
/// ([`check_module`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum ModuleError {
    #[error("module {module}: {field} must be {expected}, got {value}")]
    OutOfRange {
        module: ModuleId,
        field: &'static str,
        value: f64,
        expected: String,
    },
    #[error("module {module}: min_angle {min_angle} is greater than max_angle {max_angle}")]
    LimitsCrossed {
        module: ModuleId,
        min_angle: f64,
        max_angle: f64,
    },
    #[error("module {module}: the coupling to {to} must have a finite phase and weight")]
    NonFiniteCoupling { module: ModuleId, to: ModuleId },
}

impl From<ModuleError> for SessionError {
    fn from(e: ModuleError) -> Self {
        SessionError::Invalid(e.to_string())
    }
}

/// The limits the module firmware enforces (`ModuleFirmware::handle`), with
/// amplitude and speed also non-negative; the error names the field.
pub(super) fn check_module(m: &ModuleConfig) -> Result<(), ModuleError> {
    let range = HANDLE_RANGE + 1e-6;
    let checks: [(&str, f64, bool, String); 5] = [
        (
            "amplitude",
            m.amplitude,
            (0.0..=MAX_ANGLE_PARAMETER).contains(&m.amplitude),
            format!("in [0, {MAX_ANGLE_PARAMETER:.4}] rad"),
        ),
        (
            "offset",
            m.offset,
            m.offset.abs() <= MAX_ANGLE_PARAMETER,
            format!("within ±{MAX_ANGLE_PARAMETER:.4} rad"),
        ),
        (
            "speed",
            m.speed,
            (0.0..=MAX_SPEED).contains(&m.speed),
            format!("in [0, {MAX_SPEED}] rad/s"),
        ),
        (
            "min_angle",
            m.min_angle,
            m.min_angle.abs() <= range,
            format!("within the servo range ±{HANDLE_RANGE:.4} rad"),
        ),
        (
            "max_angle",
            m.max_angle,
            m.max_angle.abs() <= range,
            format!("within the servo range ±{HANDLE_RANGE:.4} rad"),
        ),
    ];
    for (name, value, ok, expected) in checks {
        if !(value.is_finite() && ok) {
            return Err(ModuleError::OutOfRange {
                module: m.id,
                field: name,
                value,
                expected,
            });
        }
    }
    if m.min_angle > m.max_angle {
        return Err(ModuleError::LimitsCrossed {
            module: m.id,
            min_angle: m.min_angle,
            max_angle: m.max_angle,
        });
    }
    for link in &m.cpg_links {
        if !(link.phase.is_finite() && link.weight.is_finite()) {
            return Err(ModuleError::NonFiniteCoupling {
                module: m.id,
                to: link.to,
            });
        }
    }
    Ok(())
}
