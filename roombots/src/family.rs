//! The Roombots as a [`RobotFamily`]: the embedded examples of
//! [`crate::gait`], documents that say `family="roombots"`, walked on the
//! articulated Roombot simulation (the only engine their three-joint
//! modules have).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use yamor_core::RobotConfig;
use yamor_core::evaluation::{EvaluationSpec, RobotSource, Walk};
use yamor_core::family::{FamilyError, RobotFamily, Walker, declared_family, rewalk_command};

use crate::gait::{RoombotExample, RoombotRobot, WalkError, walk};

/// The family's name, and the value of a document's `family` attribute.
pub const FAMILY: &str = "roombots";

/// The one engine a Roombot walks on.
pub const ENGINE: &str = "articulated";

/// The Roombot family.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoombotsFamily;

fn unknown(name: &str) -> FamilyError {
    FamilyError::UnknownExample {
        name: name.to_owned(),
        known: RoombotExample::names().join(", "),
    }
}

impl RobotFamily for RoombotsFamily {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn examples(&self) -> Vec<&'static str> {
        RoombotExample::names()
    }

    fn recognises(&self, document: &str) -> bool {
        declared_family(document).is_some_and(|f| f == FAMILY)
    }

    fn example_gait(&self, example: &str) -> Result<RobotConfig, FamilyError> {
        RoombotExample::named(example)
            .ok_or_else(|| unknown(example))?
            .gait()
            .map_err(|e| FamilyError::Failed(e.to_string()))
    }

    fn example_problem(&self, example: &str) -> Option<&'static str> {
        RoombotExample::named(example)?.optimize_xml
    }

    fn walker(
        &self,
        robot: &RobotSource,
        engine: Option<&str>,
    ) -> Result<Arc<dyn Walker>, FamilyError> {
        if let Some(other) = engine.filter(|e| *e != ENGINE) {
            return Err(FamilyError::Unsupported(format!(
                "a Roombot robot walks on the {ENGINE} engine only, not {other}"
            )));
        }
        let robot = match robot {
            RobotSource::Default => {
                return Err(FamilyError::Invalid(
                    "the job names no robot and this family has no default".into(),
                ));
            }
            RobotSource::Example(name) => RoombotExample::named(name)
                .ok_or_else(|| unknown(name))?
                .robot()
                .map_err(|e| FamilyError::Failed(e.to_string()))?,
            RobotSource::Morphology(xml) => {
                if !self.recognises(xml) {
                    return Err(FamilyError::NotOurs { family: FAMILY });
                }
                RoombotRobot::from_xml_str("the job's morphology", xml)
                    .map_err(|e| FamilyError::Invalid(e.to_string()))?
            }
        };
        Ok(Arc::new(RoombotWalker(robot)))
    }

    fn walk_command(
        &self,
        robot: &str,
        gait_file: &str,
        starts: usize,
        warmup: f64,
        measure: f64,
    ) -> String {
        rewalk_command(
            "yamor roombots walk",
            robot,
            gait_file,
            starts,
            warmup,
            measure,
        )
    }
}

/// A Roombot robot laid out, ready to walk.
pub struct RoombotWalker(pub RoombotRobot);

impl Walker for RoombotWalker {
    fn walk(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        cancel: &AtomicBool,
    ) -> Result<Walk, FamilyError> {
        walk(&self.0, gait, spec, cancel).map_err(|e| match e {
            WalkError::Cancelled(_) => FamilyError::Cancelled,
            // Deterministic: the same job fails on every host.
            e => FamilyError::Invalid(e.to_string()),
        })
    }
}
