//! Robot families: a kind of module and everything yamor needs to walk the
//! robots built of it. YaMoR's one-servo modules (`yamor-sim`) and the
//! three-joint Roombots (`yamor-roombots`) are two; a third (a wheeled or a
//! tensegrity module) implements [`RobotFamily`] in its own crate and is
//! handed to a host (`yamor_host_agent::FamilyBackend`) and to the one-process
//! run's registry ([`Families`]) without a change anywhere else.
//!
//! A family answers for its robots: which embedded examples it has, which
//! robot documents are its own, the default problem of an example, how a
//! robot walks a gait (a [`Walker`], built once and walked many times on a
//! blocking thread), how a walk is recorded for the dashboard's replay, and
//! the command that walks a gait again.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::RobotConfig;
use crate::evaluation::{EvaluationSpec, RobotSource, Walk};

/// Why a family cannot build or walk a robot.
#[derive(Debug, thiserror::Error)]
pub enum FamilyError {
    /// The robot belongs to another family: a host of another family may
    /// walk it (the organizer retries it elsewhere).
    #[error("the robot is not a {family} robot (a host of its own family may walk it)")]
    NotOurs { family: &'static str },
    /// An example name no family knows.
    #[error("unknown robot {name:?}; known: {known}")]
    UnknownExample { name: String, known: String },
    /// The robot, its gait or the walk's spec is wrong: the same job fails
    /// on every host.
    #[error("{0}")]
    Invalid(String),
    /// Something this family does not do (a replay, an engine).
    #[error("{0}")]
    Unsupported(String),
    /// The walk was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The walk failed in a way another attempt may not.
    #[error("{0}")]
    Failed(String),
}

/// A recorded walk as the dashboard's replay plays it: box half extents,
/// then per frame each box's centre (x, y, z, z up) and rotation
/// (quaternion x, y, z, w).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recording {
    pub frame_interval: f64,
    pub half_extents: Vec<[f32; 3]>,
    pub frames: Vec<Vec<[f32; 7]>>,
    /// The velocity (m/s) of the walk recorded here.
    pub velocity: f64,
    /// The velocity (m/s) the job's record holds: equal when this
    /// simulator walked the job as its host did (same engine and step).
    pub recorded_velocity: Option<f64>,
}

/// One robot of a family, built: walks gaits. Called on a blocking thread.
pub trait Walker: Send + Sync {
    /// Walks `gait` from the spec's start, measures it, and gives up soon
    /// after `cancel` is set.
    fn walk(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        cancel: &AtomicBool,
    ) -> Result<Walk, FamilyError>;

    /// Walks `gait` again and records every body `frame_rate` times a
    /// second, for the dashboard's replay.
    fn record(
        &self,
        gait: &RobotConfig,
        spec: &EvaluationSpec,
        frame_rate: f64,
    ) -> Result<Recording, FamilyError> {
        let _ = (gait, spec, frame_rate);
        Err(FamilyError::Unsupported(
            "this family's walks are not recorded for replay".into(),
        ))
    }
}

/// A family of modules: its examples, its documents, its walks.
pub trait RobotFamily: Send + Sync {
    /// The family's name as reports and errors say it.
    fn name(&self) -> &'static str;

    /// Its embedded example robots, by name.
    fn examples(&self) -> Vec<&'static str>;

    /// Whether `document` (a robot's world XML) describes a robot of this
    /// family. Cheap: it looks, it does not build.
    fn recognises(&self, document: &str) -> bool;

    /// The gait an example walks unless a job brings another.
    fn example_gait(&self, example: &str) -> Result<RobotConfig, FamilyError>;

    /// The optimization problem an example ships with (optimize.xml
    /// text), or `None` when its runs use the generic problem over its
    /// gait.
    fn example_problem(&self, example: &str) -> Option<&'static str> {
        let _ = example;
        None
    }

    /// Builds `robot` (an example of this family or a document it
    /// recognises) on `engine` (the family's own default when `None`).
    fn walker(
        &self,
        robot: &RobotSource,
        engine: Option<&str>,
    ) -> Result<Arc<dyn Walker>, FamilyError>;

    /// The command line that walks `gait_file` on `robot` again from the
    /// first `starts` held-out starts, as a run walked it.
    fn walk_command(
        &self,
        robot: &str,
        gait_file: &str,
        starts: usize,
        warmup: f64,
        measure: f64,
    ) -> String {
        rewalk_command("yamor sim", robot, gait_file, starts, warmup, measure)
    }

    /// Whether its walkers build the world a job's spec draws
    /// (`EvaluationSpec::world`: engine, masses, servos, position noise).
    /// A family that does not is never handed a job with a drawn world: it
    /// would walk in its own and pass that off as the drawn one.
    fn builds_worlds(&self) -> bool {
        false
    }

    /// Whether `robot` is one of this family's: an example it embeds or a
    /// document it recognises.
    fn owns(&self, robot: &RobotSource) -> bool {
        match robot {
            RobotSource::Default => false,
            RobotSource::Example(name) => self.examples().contains(&name.as_str()),
            RobotSource::Morphology(document) => self.recognises(document),
        }
    }
}

/// The families a process knows, asked in order: the first that owns a
/// robot walks it.
#[derive(Clone, Default)]
pub struct Families {
    families: Vec<Arc<dyn RobotFamily>>,
}

impl Families {
    /// Adds `family`, asked after those already here.
    #[must_use]
    pub fn with(mut self, family: Arc<dyn RobotFamily>) -> Self {
        self.families.push(family);
        self
    }

    /// The family owning `robot`.
    #[must_use]
    pub fn of(&self, robot: &RobotSource) -> Option<&Arc<dyn RobotFamily>> {
        self.families.iter().find(|f| f.owns(robot))
    }

    /// The family embedding the example `name`.
    #[must_use]
    pub fn of_example(&self, name: &str) -> Option<&Arc<dyn RobotFamily>> {
        self.of(&RobotSource::Example(name.to_owned()))
    }

    /// Every embedded example of every family, in the families' order.
    #[must_use]
    pub fn examples(&self) -> Vec<&'static str> {
        self.families.iter().flat_map(|f| f.examples()).collect()
    }

    /// The families, in the order they are asked.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn RobotFamily>> {
        self.families.iter()
    }

    /// The family of the example `name`, or an error listing every known
    /// example.
    pub fn example(&self, name: &str) -> Result<&Arc<dyn RobotFamily>, FamilyError> {
        self.of_example(name)
            .ok_or_else(|| FamilyError::UnknownExample {
                name: name.to_owned(),
                known: self.examples().join(", "),
            })
    }
}

/// `program robot --gait G --starts N --seconds S --warmup W`: what every
/// family's [`RobotFamily::walk_command`] says, after its own command.
#[must_use]
pub fn rewalk_command(
    program: &str,
    robot: &str,
    gait_file: &str,
    starts: usize,
    warmup: f64,
    measure: f64,
) -> String {
    format!(
        "{program} {robot} --gait {gait_file} --starts {starts} --seconds {} --warmup {warmup}",
        warmup + measure
    )
}

/// The family a robot document names on its root element
/// (`<morphology family="roombots">`); `None` when it names none (a YaMoR
/// robot, as the thesis' files are) or is no XML at all.
#[must_use]
pub fn declared_family(document: &str) -> Option<String> {
    roxmltree::Document::parse(document)
        .ok()?
        .root_element()
        .attribute("family")
        .map(str::to_owned)
}
