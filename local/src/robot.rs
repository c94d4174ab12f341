//! [`RunRobot`]: the robot `yamor run` walks, named as a user names it: an
//! embedded example, a morphology file with `gait.xml` beside it, or a
//! directory holding `world.xml` and `gait.xml` (and perhaps
//! `optimize.xml`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use yamor_core::evaluation::RobotSource;
use yamor_core::{Morphology, RobotConfig};

use crate::{LocalCluster, LocalError};

/// An embedded example, or the user's own robot read from files.
pub enum RunRobot {
    Example(String),
    /// Read from the user's files.
    Own {
        path: String,
        morphology: Morphology,
        gait: RobotConfig,
    },
}

impl RunRobot {
    pub fn load(robot: &str) -> Result<Self, LocalError> {
        if yamor_families::builtin().of_example(robot).is_some() {
            return Ok(RunRobot::Example(robot.to_owned()));
        }
        let (morphology, gait) =
            yamor_sim::robots::load(robot, None).map_err(|source| LocalError::LoadRobot {
                robot: robot.to_owned(),
                source,
            })?;
        Ok(RunRobot::Own {
            path: robot.to_owned(),
            morphology,
            gait,
        })
    }

    /// The robot as a run's jobs name it: an example by name; the user's
    /// own robot as its morphology document, carried by the run and each
    /// of its jobs, so that any simulation host can walk it (and the run's
    /// record says what was walked). The gait travels in the problem.
    #[must_use]
    pub fn source(&self) -> RobotSource {
        match self {
            RunRobot::Example(name) => RobotSource::Example(name.clone()),
            RunRobot::Own { morphology, .. } => RobotSource::Morphology(morphology.to_xml_string()),
        }
    }

    /// What the robot is called where its runs are shown: the example's
    /// name, or the name of the directory the user's files are in.
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            RunRobot::Example(name) => name.clone(),
            RunRobot::Own { path, .. } => {
                let dir = robot_dir(path);
                let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
                dir.file_name()
                    .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned())
            }
        }
    }

    /// The problem a run solves when given none: the example's, or the
    /// `optimize.xml` beside the user's robot, or a generic one of its gait.
    pub fn default_problem(&self) -> Result<String, LocalError> {
        match self {
            RunRobot::Example(name) => crate::default_optimization(name),
            RunRobot::Own { path, gait, .. } => {
                let beside = robot_dir(path).join("optimize.xml");
                if beside.exists() {
                    crate::problem::problem_file(&beside)
                } else {
                    crate::generic_optimization(path, gait.clone())
                }
            }
        }
    }

    /// A local cluster of `hosts` simulation hosts of this robot.
    pub async fn start_cluster(&self, hosts: usize, db: &Path) -> Result<LocalCluster, LocalError> {
        match self {
            RunRobot::Example(name) => LocalCluster::start(name, hosts, db).await,
            RunRobot::Own {
                path,
                morphology,
                gait,
            } => {
                LocalCluster::start_with(hosts, db, |_| {
                    Ok(Arc::new(yamor_families::own_sim_backend(
                        path,
                        morphology,
                        gait.clone(),
                        Default::default(),
                    )?))
                })
                .await
            }
        }
    }
}

/// The directory a user's robot lives in.
fn robot_dir(robot: &str) -> PathBuf {
    let path = Path::new(robot);
    if path.is_dir() {
        path.to_owned()
    } else {
        path.parent().unwrap_or(Path::new(".")).to_owned()
    }
}
