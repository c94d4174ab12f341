//! The in-process yamor cluster: an organizer with its SQLite file and
//! simulation (or expression) hosts on loopback gRPC, the same code paths
//! as a cluster of machines. `yamor run`, the experiments, the benchmarks
//! and the integration tests all start their clusters here.
//!
//! # Layout
//! - [`cluster`]: [`LocalCluster`]: start, run to the end, follow, shut down.
//! - [`problem`]: [`default_optimization`], the problem a run solves when
//!   only a robot is named.
//! - [`report`]: a run read back in tell order ([`evaluations`]), and the
//!   files `yamor run` writes (best gait, CSV, progress plot).
//! - [`progress`]: a run's progress bar on the terminal.
//! - [`optimizers`]: the optimizers every organizer of this build offers;
//!   [`default_hosts`]: one host per core.

pub mod cluster;
pub mod problem;
pub mod progress;
pub mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use cluster::{HostTask, LocalCluster, serve_host};
pub use problem::default_optimization;
pub use report::{Evaluation, evaluations, plot_progress, register_font, write_outputs};

/// Why the local cluster or one of its reports failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Schedule(#[from] yamor_organizer::ScheduleError),
    #[error(transparent)]
    Store(#[from] yamor_organizer::store::StoreError),
    #[error(transparent)]
    Host(#[from] yamor_host_agent::HostError),
    #[error(transparent)]
    Xml(#[from] yamor_core::XmlError),
    #[error(transparent)]
    Organizer(#[from] yamor_organizer::ClientError),
    #[error("listening on loopback: {0}")]
    Listen(std::io::Error),
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("plotting {path}: {message}")]
    Plot { path: PathBuf, message: String },
    #[error("unknown robot {name:?}; known: {known}")]
    UnknownRobot { name: String, known: String },
    #[error("the events of run {0} ended before the run")]
    EventsEnded(u64),
    #[error("the run's events ended before the first one")]
    NoEvents,
    #[error("{0}")]
    Problem(String),
}

impl LocalError {
    fn writing(path: &Path) -> impl FnOnce(std::io::Error) -> LocalError + '_ {
        move |source| LocalError::Write {
            path: path.to_owned(),
            source,
        }
    }
}

/// Hosts to start when none are asked for: one per core.
#[must_use]
pub fn default_hosts(asked: Option<usize>) -> usize {
    asked
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1)
}

/// The optimizers every organizer of this build offers.
#[must_use]
pub fn optimizers() -> Vec<Arc<dyn yamor_optimizer_api::Plugin>> {
    vec![
        Arc::new(yamor_pso::Pso),
        Arc::new(yamor_cmaes::Cmaes),
        Arc::new(yamor_powell::Powell),
        Arc::new(yamor_brute_force::BruteForce),
    ]
}
