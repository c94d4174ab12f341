//! `yamor experiment …` and `yamor lifelong …`: the thesis' experiments and
//! lifelong scenarios as subcommands, and their dispatch.

use anyhow::Result;
use clap::Subcommand;

use crate::{gait_time, lifelong, powell, reset_free, surface};

#[derive(Subcommand)]
pub enum ExperimentCommand {
    /// Figs 6.3 and 6.5-6.7: velocity over outer offset x inner-outer phase lag, with Powell paths.
    Surface(surface::SurfaceArgs),
    /// Fig 6.8: a seven-parameter Powell timeline (parameters and velocity per evaluation).
    Timeline(powell::TimelineArgs),
    /// Fig 6.12: classic against regular-interval Powell from ten starting points.
    Compare(powell::CompareArgs),
    /// Experiment 5: wall-clock time to a good quadruped gait over several seeds.
    GaitTime(gait_time::GaitTimeArgs),
}

/// Runs one `yamor experiment` command.
pub async fn experiment(command: ExperimentCommand) -> Result<()> {
    match command {
        ExperimentCommand::Surface(a) => surface::surface(a).await,
        ExperimentCommand::Timeline(a) => powell::timeline(a).await,
        ExperimentCommand::Compare(a) => powell::compare(a).await,
        ExperimentCommand::GaitTime(a) => gait_time::gait_time(a).await,
    }
}

#[derive(Subcommand)]
pub enum LifelongCommand {
    /// Fig 7.4: the 7.5.1 transformation, a new CPG network, relearning.
    Transform(lifelong::ScenarioArgs),
    /// 7.5.2: a fall onto the back, learning to walk upside down, and back.
    UpsideDown(lifelong::ScenarioArgs),
    /// Slippery ground and back, twice: the second time, stored gaits.
    Ground {
        #[command(flatten)]
        args: lifelong::ScenarioArgs,
        /// The slippery ground's friction coefficient (the floor's is 0.8).
        #[arg(long, default_value_t = 0.02)]
        slippery: f64,
    },
    /// A motor breaks or the floor turns slippery while the quadruped
    /// walks; it adapts on itself from the intact robot's map built ahead.
    Damage {
        #[command(flatten)]
        args: lifelong::ScenarioArgs,
        /// What happens: stuck:M, limp:M, weak:M (module M's motor) or
        /// friction:F. The default, a limp hip, slows the learnt gait by
        /// half; a stuck knee (stuck:5) or a polished floor (friction:0.3)
        /// hardly slows it, and no anomaly is raised.
        #[arg(long, default_value = "limp:2")]
        damage: yamor_core::damage::Damage,
    },
    /// The gaits database of an organizer's SQLite file (thesis 7.8.2).
    Gaits(lifelong::GaitsArgs),
    /// The emulated real robot walks evaluations with homing walks between
    /// them, and says how far it strayed from the camera field's centre.
    ResetFree(reset_free::ResetFreeArgs),
}

/// Runs one `yamor lifelong` command.
pub async fn lifelong(command: LifelongCommand) -> Result<()> {
    match command {
        LifelongCommand::Transform(a) => lifelong::transform(a).await,
        LifelongCommand::UpsideDown(a) => lifelong::upside_down(a).await,
        LifelongCommand::Ground { args, slippery } => lifelong::ground(args, slippery).await,
        LifelongCommand::Damage { args, damage } => lifelong::damage(args, damage).await,
        LifelongCommand::Gaits(a) => lifelong::gaits(a).await,
        LifelongCommand::ResetFree(a) => reset_free::reset_free(a).await,
    }
}
