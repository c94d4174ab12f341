//! What can happen to a robot after its map of gaits was built: a motor
//! that sticks, goes limp or weakens (the thesis' anomaly list, 1.2), a
//! dead CPG node, a fall onto its back (7.5.2), another floor (7.5.3),
//! another world altogether (the other engine, a servo that lags). Each is
//! written `kind[:value]` on the command line and applied to the walks'
//! [`EvaluationSpec`], so a run, an adaptation and a benchmark walk the
//! damaged robot the same way. (A module removed changes the body, not the
//! walk: that is a morphology of its own, `yamor lifelong transform`.)

use std::fmt;
use std::str::FromStr;

use crate::ModuleId;
use crate::evaluation::{DefectMode, EvaluationSpec};
use crate::world::{ENGINES, Hardware};

/// One damage.
#[derive(Debug, Clone, PartialEq)]
pub enum Damage {
    /// `stuck:M`, `limp:M`, `weak:M`: module M's motor.
    Motor { module: ModuleId, mode: DefectMode },
    /// `dead-cpg:M`: module M's oscillator stops; its joint holds.
    DeadCpg(ModuleId),
    /// `upside-down`.
    UpsideDown,
    /// `friction:F`: the floor's friction coefficient (the default floor is
    /// about 1; 0.3 is a polished one).
    Friction(f64),
    /// `engine:NAME`: walks in another physics engine (`rapier`,
    /// `articulated`): the map's world is not the robot's.
    Engine(String),
    /// `lag:S`: every servo acts on a set-point S seconds late.
    ServoLag(f64),
    /// `emulated`: the emulated real robot's servos ([`Hardware::EMULATED`]:
    /// late, with play, weaker and sagging), the reality gap of thesis 6.3.
    Emulated,
}

/// A damage that does not parse: the text and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "damage {text:?}: {why} (give stuck:M, limp:M, weak:M, dead-cpg:M, upside-down, \
     friction:F, engine:NAME, lag:S or emulated)"
)]
pub struct DamageError {
    pub text: String,
    pub why: String,
}

impl FromStr for Damage {
    type Err = DamageError;

    fn from_str(text: &str) -> Result<Self, DamageError> {
        let error = |why: String| DamageError {
            text: text.to_owned(),
            why,
        };
        let (kind, value) = text.split_once(':').unwrap_or((text, ""));
        let module = || {
            value
                .parse::<ModuleId>()
                .map_err(|_| error(format!("{value:?} is no module id")))
        };
        let positive = |what: &str| match value.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(error(format!("{what} {value:?} is no non-negative number"))),
        };
        Ok(match kind {
            "stuck" => Damage::Motor {
                module: module()?,
                mode: DefectMode::Stuck,
            },
            "limp" => Damage::Motor {
                module: module()?,
                mode: DefectMode::Limp,
            },
            "weak" => Damage::Motor {
                module: module()?,
                mode: DefectMode::Weak,
            },
            "dead-cpg" => Damage::DeadCpg(module()?),
            "upside-down" if value.is_empty() => Damage::UpsideDown,
            "emulated" if value.is_empty() => Damage::Emulated,
            "friction" => match positive("friction")? {
                0.0 => return Err(error("a floor with no friction cannot be walked on".into())),
                f => Damage::Friction(f),
            },
            "engine" if ENGINES.contains(&value) => Damage::Engine(value.to_owned()),
            "engine" => {
                return Err(error(format!(
                    "unknown engine {value:?}; known: {}",
                    ENGINES.join(", ")
                )));
            }
            "lag" => Damage::ServoLag(positive("lag")?),
            _ => return Err(error("unknown kind".into())),
        })
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Motor { module, mode } => {
                let kind = match mode {
                    DefectMode::Stuck => "stuck",
                    DefectMode::Limp => "limp",
                    DefectMode::Weak => "weak",
                    DefectMode::Healthy => "healthy",
                };
                write!(f, "{kind}:{module}")
            }
            Damage::DeadCpg(m) => write!(f, "dead-cpg:{m}"),
            Damage::UpsideDown => f.write_str("upside-down"),
            Damage::Friction(v) => write!(f, "friction:{v}"),
            Damage::Engine(e) => write!(f, "engine:{e}"),
            Damage::ServoLag(s) => write!(f, "lag:{s}"),
            Damage::Emulated => f.write_str("emulated"),
        }
    }
}

impl Damage {
    /// Walks under `spec` meet this damage.
    pub fn apply(&self, spec: &mut EvaluationSpec) {
        let situation = &mut spec.situation;
        match self {
            Damage::Motor { module, mode } => {
                situation.defects.retain(|(m, _)| m != module);
                situation.defects.push((*module, *mode));
            }
            Damage::DeadCpg(m) => {
                if !situation.dead_cpg.contains(m) {
                    situation.dead_cpg.push(*m);
                }
            }
            Damage::UpsideDown => situation.upside_down = true,
            Damage::Friction(f) => spec.ground_friction = Some(*f),
            Damage::Engine(e) => spec.world.engine = Some(e.clone()),
            Damage::ServoLag(s) => spec.world.hardware.servo_lag_s = *s,
            Damage::Emulated => spec.world.hardware = Hardware::EMULATED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_parses_prints_back_and_applies() {
        let mut spec = EvaluationSpec::default();
        for text in [
            "stuck:3",
            "weak:2",
            "limp:3",
            "dead-cpg:4",
            "upside-down",
            "friction:0.3",
            "engine:rapier",
            "emulated",
            "lag:0.04",
        ] {
            let damage: Damage = text.parse().unwrap();
            assert_eq!(damage.to_string(), text);
            damage.apply(&mut spec);
        }
        // The later motor damage of a module replaces the earlier.
        assert_eq!(
            spec.situation.defects,
            [(2, DefectMode::Weak), (3, DefectMode::Limp)]
        );
        assert_eq!(spec.situation.dead_cpg, [4]);
        assert!(spec.situation.upside_down);
        assert_eq!(spec.ground_friction, Some(0.3));
        assert_eq!(spec.world.engine.as_deref(), Some("rapier"));
        assert_eq!(spec.world.hardware.servo_lag_s, 0.04);
    }

    #[test]
    fn bad_damage_says_what_is_wrong() {
        for (text, says) in [
            ("stuck", "no module id"),
            ("stuck:x", "no module id"),
            ("friction:0", "no friction"),
            ("friction:-1", "non-negative"),
            ("engine:webots", "unknown engine"),
            ("melted:1", "unknown kind"),
            ("upside-down:1", "unknown kind"),
        ] {
            let e = text.parse::<Damage>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(e.contains("stuck:M"), "{e}");
        }
    }
}
