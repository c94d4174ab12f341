//! YaMoR's one-servo modules as a [`RobotFamily`]: the embedded examples of
//! [`crate::robots`], any morphology document that names no other family,
//! walked by this crate's simulator on the engine a host chose.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use yamor_core::evaluation::{EvaluationSpec, RobotSource, Walk};
use yamor_core::family::{
    FamilyError, Recording, RobotFamily, Walker, declared_family, rewalk_command,
};
use yamor_core::{Morphology, RobotConfig};

use crate::physics::Engine;
use crate::robots::ExampleRobot;
use crate::{SimError, SimSettings, evaluate_cancellable};

/// The family's name, and the value of a document's `family` attribute
/// that names it (a document naming none is YaMoR's too).
pub const FAMILY: &str = "yamor";

/// The YaMoR family with the simulator settings its walks start from.
#[derive(Debug, Clone, Copy, Default)]
pub struct YamorFamily {
    pub settings: SimSettings,
}

impl YamorFamily {
    /// The morphology `robot` names.
    pub fn morphology(robot: &RobotSource) -> Result<Morphology, FamilyError> {
        match robot {
            RobotSource::Default => Err(FamilyError::Invalid(
                "the job names no robot and this family has no default".into(),
            )),
            RobotSource::Example(name) => ExampleRobot::named(name)
                .ok_or_else(|| FamilyError::UnknownExample {
                    name: name.clone(),
                    known: ExampleRobot::names().join(", "),
                })?
                .morphology()
                .map_err(|e| FamilyError::Failed(e.to_string())),
            RobotSource::Morphology(xml) => {
                if !is_ours(xml) {
                    return Err(FamilyError::NotOurs { family: FAMILY });
                }
                Morphology::from_xml_str("the job's morphology", xml)
                    .map_err(|e| FamilyError::Invalid(e.to_string()))
            }
        }
    }
}

fn is_ours(document: &str) -> bool {
    declared_family(document).is_none_or(|f| f == FAMILY)
}

/// Every simulator error is about the request (an unknown module, a value
/// out of range, a refused message, a connection that does not fit)
/// except a cancellation: retrying it on another host is pointless. The
/// match is exhaustive so a new kind must be placed.
#[must_use]
pub fn family_error(e: SimError) -> FamilyError {
    match e {
        SimError::Cancelled(_) => FamilyError::Cancelled,
        e @ (SimError::UnknownModule(_)
        | SimError::IdOutOfRange(_)
        | SimError::GaitModuleNotInMorphology(_)
        | SimError::Connection(_)
        | SimError::SourceStillConnected(_)
        | SimError::NoRoom(..)
        | SimError::LoopDoesNotClose(..)
        | SimError::Physics(_)
        | SimError::Engine(_)
        | SimError::OutOfRange { .. }
        | SimError::Refused { .. }
        | SimError::Rotating(_)) => FamilyError::Invalid(e.to_string()),
    }
}

impl RobotFamily for YamorFamily {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn examples(&self) -> Vec<&'static str> {
        ExampleRobot::names()
    }

    fn recognises(&self, document: &str) -> bool {
        is_ours(document)
    }

    fn example_gait(&self, example: &str) -> Result<RobotConfig, FamilyError> {
        ExampleRobot::named(example)
            .ok_or_else(|| FamilyError::UnknownExample {
                name: example.to_owned(),
                known: ExampleRobot::names().join(", "),
            })?
            .gait()
            .map_err(|e| FamilyError::Failed(e.to_string()))
    }

    fn example_problem(&self, example: &str) -> Option<&'static str> {
        crate::robots::ExampleRobot::named(example)?.problem_xml
    }

    fn walker(
        &self,
        robot: &RobotSource,
        engine: Option<&str>,
    ) -> Result<Arc<dyn Walker>, FamilyError> {
        let mut settings = self.settings;
        if let Some(name) = engine {
            settings.engine = name
                .parse::<Engine>()
                .map_err(|e| FamilyError::Unsupported(e.to_string()))?;
        }
        Ok(Arc::new(YamorWalker {
            morphology: Self::morphology(robot)?,
            settings,
        }))
    }

    fn builds_worlds(&self) -> bool {
        true
    }

    fn walk_command(
        &self,
        robot: &str,
        gait_file: &str,
        starts: usize,
        warmup: f64,
        measure: f64,
    ) -> String {
        format!(
            "{} --engine {} --dt {}",
            rewalk_command("yamor sim", robot, gait_file, starts, warmup, measure),
            self.settings.engine,
            self.settings.dt
        )
    }
}

/// A YaMoR robot built for walking: its morphology and the simulator
/// settings (the job's spec overrides seed and friction).
#[derive(Debug, Clone)]
pub struct YamorWalker {
    pub morphology: Morphology,
    pub settings: SimSettings,
}

/// Frames a second of a replay: smooth enough to watch, small enough to
/// send (a 20-s walk of nine modules is about 300 kB of JSON).
const MAX_FRAME_RATE: f64 = 20.0;

impl Walker for YamorWalker {
    fn walk(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        cancel: &AtomicBool,
    ) -> Result<Walk, FamilyError> {
        evaluate_cancellable(&self.morphology, gait, self.settings, spec, cancel)
            .map_err(family_error)
    }

    fn record(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        frame_rate: f64,
    ) -> Result<Recording, FamilyError> {
        let interval = 1.0 / frame_rate.clamp(f64::MIN_POSITIVE, MAX_FRAME_RATE);
        let (outcome, replay) =
            crate::replay::record(&self.morphology, gait, self.settings, spec, interval)
                .map_err(family_error)?;
        Ok(Recording {
            frame_interval: replay.frame_interval,
            half_extents: replay.half_extents,
            frames: replay.frames,
            velocity: outcome.velocity,
            recorded_velocity: None,
        })
    }
}
