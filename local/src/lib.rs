//! The in-process yamor cluster: an organizer with its SQLite file and
//! simulation (or expression) hosts on loopback gRPC, the same code paths
//! as a cluster of machines. `yamor run`, the experiments, the benchmarks
//! and the integration tests all start their clusters here.
//!
//! # Layout
//! - [`cluster`]: [`LocalCluster`]: start, run to the end, follow, shut down.
//! - [`problem`]: [`run_problem`], a run's problem as the user gives it, and
//!   [`default_optimization`], the one it solves when only a robot is named.
//! - [`report`]: a run read back in tell order ([`evaluations`]), and the
//!   files `yamor run` writes (best gait, CSV, progress plot) and the
//!   directory they go to ([`new_run_dir`]).
//! - [`robot`]: [`RunRobot`], the robot `yamor run` walks (an example or
//!   the user's own files), its default problem and its local cluster.
//! - [`seeds`]: [`seeds::SeedSpread`], how far the answer depends on the
//!   seed, over runs that differ only in theirs (`yamor run --seeds K`).
//! - [`progress`]: a run's progress bar on the terminal.
//! - [`shared`]: the one database every `yamor run` records into, held
//!   by one process at a time, and what an ended one left running.
//! - [`optimizers`]: the optimizers every organizer of this build offers;
//!   [`default_hosts`]: one host per core; [`GAIT_RUN_BUDGET`]: the budget
//!   `yamor run` gives a gait by default (the organizer fills a gait run's
//!   default settings, whichever way it starts);
//!   [`parse_setting`], [`parse_settings`] and [`batch_variants`]: settings
//!   as a command line gives them (`--set name=value`, `--variant a=1,b=2`).
//! - `cli` (feature `clap`): a run read from `yamor_organizer::cli`'s
//!   arguments on a robot's files, and `yamor optimize`'s handler.

#[cfg(feature = "clap")]
pub mod cli;
pub mod cluster;
pub mod problem;
pub mod progress;
pub mod report;
pub mod robot;
pub mod seeds;
pub mod shared;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use yamor_organizer::model::RunVariant;

pub use cluster::{HostTask, LocalCluster, serve_host};
pub use problem::{
    check_run, check_walk, dashboard_options, default_optimization, generic_optimization,
    run_problem,
};
pub use report::{
    Evaluation, Failures, Walks, evaluations, failures, new_run_dir, plot_progress, register_font,
    write_map, write_outputs,
};
pub use robot::RunRobot;

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
    #[error("serving a local host: {0}")]
    Serve(#[from] yamor_proto::transport::TransportError),
    #[error("the local hosts did not register within {0:?}")]
    HostsNotAdmitted(std::time::Duration),
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("plotting {path}: {message}")]
    Plot { path: PathBuf, message: String },
    #[error("loading the robot {robot}")]
    LoadRobot {
        robot: String,
        #[source]
        source: yamor_sim::robots::LoadError,
    },
    #[error("formatting the time")]
    Time(#[source] time::error::Format),
    #[error("unknown robot {name:?}; known: {known}")]
    UnknownRobot { name: String, known: String },
    #[error("the events of run {0} ended before the run")]
    EventsEnded(u64),
    #[error("the run's events ended before the first one")]
    NoEvents,
    #[error("{0}")]
    Problem(String),
    #[error(transparent)]
    Run(#[from] yamor_organizer::runs::PrepareError),
    #[error("--param: {0}")]
    Param(yamor_organizer::model::ParameterBoundError),
    #[error("--set: {0}")]
    Setting(yamor_optimizer_api::SettingsError),
    #[error("--variant {variant:?}: {source}")]
    Variant {
        variant: String,
        source: yamor_optimizer_api::SettingsError,
    },
    #[error("--{0}")]
    Seed(yamor_organizer::model::BatchSeedsError),
}

impl LocalError {
    fn writing(path: &Path) -> impl FnOnce(std::io::Error) -> LocalError + '_ {
        move |source| LocalError::Write {
            path: path.to_owned(),
            source,
        }
    }
}

pub use yamor_organizer::model::{GAIT_CMAES_POPULATION, GAIT_RUN_BUDGET};

/// One optimizer setting given on a command line as `name=value`.
pub use yamor_organizer::model::parse_setting;

/// Settings given as `name=value` pairs (`--set`).
pub fn parse_settings(pairs: &[String]) -> Result<BTreeMap<String, String>, LocalError> {
    pairs
        .iter()
        .map(|p| parse_setting(p).map_err(LocalError::Setting))
        .collect()
}

/// One variant of a batch per settings list (`particles=10,inertia=0.6`),
/// named by the organizer after its settings; seeds count up from `seed`.
pub fn batch_variants(variants: &[String], seed: u64) -> Result<Vec<RunVariant>, LocalError> {
    let seeds =
        yamor_organizer::model::batch_seeds(seed, variants.len()).map_err(LocalError::Seed)?;
    let variant = |(v, seed): (&String, u64)| {
        let settings = yamor_organizer::model::parse_setting_list(v).map_err(|source| {
            LocalError::Variant {
                variant: v.clone(),
                source,
            }
        })?;
        Ok(RunVariant {
            name: String::new(),
            settings,
            seed,
        })
    };
    variants.iter().zip(seeds).map(variant).collect()
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
        Arc::new(yamor_portfolio::PowellCmaes),
        Arc::new(yamor_portfolio::Portfolio),
        Arc::new(yamor_brute_force::BruteForce),
        Arc::new(yamor_map_elites::MapElitesPlugin),
        Arc::new(yamor_ite::ItePlugin),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_gait_population_names_the_cma_es_plugins() {
        assert_eq!(
            yamor_organizer::model::GAIT_POPULATION_OPTIMIZERS,
            [
                yamor_cmaes::NAME,
                yamor_portfolio::NAME,
                yamor_portfolio::PORTFOLIO
            ]
        );
    }
}
