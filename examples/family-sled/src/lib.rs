//! A minimal third robot family: a sled pushed by one oscillating leg.
//! See README.md; docs/architecture.md, "Adding a robot family", walks
//! through it.
//!
//! # Layout
//! - [`SledFamily`]: the family: one example (`sled`), documents that say
//!   `family="sled"`, the generic problem over its gait.
//! - [`Sled`]: a sled built from its document, walking gaits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use yamor_core::RobotConfig;
use yamor_core::evaluation::{EvaluationSpec, RobotSource, Sample, Walk};
use yamor_core::family::{FamilyError, RobotFamily, Walker, declared_family};
use yamor_core::measure::WalkMeter;

/// The family's name and the `family` attribute of its documents.
pub const FAMILY: &str = "sled";

/// The embedded example's document.
pub const EXAMPLE: &str = r#"<morphology family="sled" mass="2.0"/>"#;

/// The example's gait: one module, a slow half stroke.
pub const EXAMPLE_GAIT: &str = r#"<?xml version="1.0"?>
<yamorconfig>
  <modulelist>
    <module id="0" amplitude="0.3" offset="0.6" speed="0.3" minangle="-1.2" maxangle="1.2"/>
  </modulelist>
</yamorconfig>"#;

/// The sled family.
#[derive(Debug, Clone, Copy, Default)]
pub struct SledFamily;

impl RobotFamily for SledFamily {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn examples(&self) -> Vec<&'static str> {
        vec![FAMILY]
    }

    fn recognises(&self, document: &str) -> bool {
        declared_family(document).is_some_and(|f| f == FAMILY)
    }

    fn example_gait(&self, example: &str) -> Result<RobotConfig, FamilyError> {
        if example != FAMILY {
            return Err(FamilyError::UnknownExample {
                name: example.to_owned(),
                known: FAMILY.to_owned(),
            });
        }
        RobotConfig::from_xml_str("sled/gait.xml", EXAMPLE_GAIT)
            .map_err(|e| FamilyError::Failed(e.to_string()))
    }

    fn walker(
        &self,
        robot: &RobotSource,
        engine: Option<&str>,
    ) -> Result<Arc<dyn Walker>, FamilyError> {
        if let Some(engine) = engine {
            return Err(FamilyError::Unsupported(format!(
                "a sled walks on its own model, not on {engine}"
            )));
        }
        let document = match robot {
            RobotSource::Example(name) if name == FAMILY => EXAMPLE,
            RobotSource::Morphology(xml) if self.recognises(xml) => xml,
            _ => return Err(FamilyError::NotOurs { family: FAMILY }),
        };
        Ok(Arc::new(Sled::from_xml(document)?))
    }
}

/// A sled: its mass is what the floor's friction works against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sled {
    pub mass: f64,
}

impl Sled {
    /// The sled `document` describes.
    pub fn from_xml(document: &str) -> Result<Self, FamilyError> {
        let doc = roxmltree::Document::parse(document)
            .map_err(|e| FamilyError::Invalid(format!("the sled's document: {e}")))?;
        let mass = doc
            .root_element()
            .attribute("mass")
            .unwrap_or("1.0")
            .parse::<f64>()
            .ok()
            .filter(|m| m.is_finite() && *m > 0.0)
            .ok_or_else(|| {
                FamilyError::Invalid("a sled's mass must be a positive number".into())
            })?;
        Ok(Sled { mass })
    }

    /// Speed (m/s) of a leg stroking with `amplitude` and `offset` (rad)
    /// at `strokes` per second: each stroke pushes by the leg's reach,
    /// and friction takes a share growing with the stroke rate and mass.
    #[must_use]
    pub fn speed(&self, amplitude: f64, offset: f64, strokes: f64) -> f64 {
        const LEG: f64 = 0.1;
        let push = LEG * amplitude.abs() * offset.cos().max(0.0) * strokes;
        push / (1.0 + self.mass * strokes * strokes)
    }
}

/// Integration step of the walk (s).
const DT: f64 = 0.01;

impl Walker for Sled {
    fn walk(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        cancel: &AtomicBool,
    ) -> Result<Walk, FamilyError> {
        spec.check()
            .map_err(|e| FamilyError::Invalid(e.to_string()))?;
        let leg = gait
            .modules
            .first()
            .ok_or_else(|| FamilyError::Invalid("a sled's gait needs its one module".into()))?;
        // The start seed turns the sled a little and draws the floor's
        // roughness under it (±5 % of the speed): a gait's velocity is
        // spread over starts, as a robot's is.
        let draw = |salt: u64| {
            let mixed = (spec.seed ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (mixed >> 11) as f64 / (1u64 << 53) as f64
        };
        let speed = self.speed(leg.amplitude, leg.offset, leg.speed) * (0.95 + 0.1 * draw(1));
        let heading = 0.4 * draw(2) - 0.2;
        let (mut t, mut x, mut y) = (0.0, 0.0, 0.0);
        let at = |t: f64, x: f64, y: f64| Sample { t, x, y, z: 0.0 };
        // The one measure loop every walker runs: window, samples,
        // early-stopping checkpoints.
        let mut meter = WalkMeter::new(spec, at(0.0, 0.0, 0.0), DT);
        while meter.walking() {
            if cancel.load(Ordering::Relaxed) {
                return Err(FamilyError::Cancelled);
            }
            t += DT;
            x += speed * heading.cos() * DT;
            y += speed * heading.sin() * DT;
            meter.observe(at(t, x, y));
        }
        let mut outcome = meter.finish();
        outcome.simulated = t;
        outcome.engine = "sled model".to_owned();
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sled_walks_at_its_model_speed_and_knows_its_documents() {
        let family = SledFamily;
        assert!(family.recognises(EXAMPLE));
        assert!(!family.recognises("<morphology central=\"4\"/>"));
        let walker = family
            .walker(&RobotSource::Example(FAMILY.into()), None)
            .unwrap();
        let gait = family.example_gait(FAMILY).unwrap();
        let spec = EvaluationSpec::lasting_after(1.0, 4.0).unwrap();
        let outcome = walker.walk(&gait, &spec, &AtomicBool::new(false)).unwrap();
        let model = Sled { mass: 2.0 }.speed(0.3, 0.6, 0.3);
        assert!(
            (outcome.velocity / model - 1.0).abs() <= 0.05 + 1e-9,
            "{} against the model's {model}",
            outcome.velocity
        );
        let other = EvaluationSpec { seed: 7, ..spec };
        let again = walker.walk(&gait, &other, &AtomicBool::new(false)).unwrap();
        assert_ne!(again.velocity, outcome.velocity, "starts differ");
        assert!(matches!(
            family.walker(&RobotSource::Example("quadruped".into()), None),
            Err(FamilyError::NotOurs { .. })
        ));
        assert!(matches!(
            Sled::from_xml(r#"<morphology family="sled" mass="-1"/>"#),
            Err(FamilyError::Invalid(_))
        ));
    }
}
