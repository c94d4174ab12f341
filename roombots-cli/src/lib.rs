//! `yamor roombots …`: the Roombot modules' experiments from the command
//! line (seeds 002 and 003), and the Roombot robots `yamor robots` lists.
//! The procedures are `yamor_roombots`' and `yamor_reconfig`'s; here are
//! the arguments, the reports on the terminal, and (`plan`) the planning
//! jobs queued on an organizer or a local cluster.
//!
//! # Layout
//! - this file: [`RoombotsCommand`], [`roombots`] (the dispatch) and
//!   [`list_robots`].
//! - [`task`]: [`TaskArgs`](task::TaskArgs), a build to plan, and
//!   [`MoveRule`](task::MoveRule), who may move in a round; shared by
//!   `build`, `fewest` and `plan`.
//! - [`build`]: `build`, `fewest` and `deadlock`, 003's builds in this
//!   process.
//! - [`plan`]: `plan`, 003's builds as cluster jobs.
//! - [`srdb`]: `srdb`, the Servo Rotation Database and its searches.
//! - [`play`]: `play`, supervisor command files on simulated meta-modules.
//! - [`scene`]: `acrobat` and `chair`, 002's scenes.
//! - [`walk`]: `walk` (a Roombot robot's gait) and `bridge` (a meta-module
//!   served to a supervisor).
//! - [`ik`]: `ik-targets`, 002 §5.3's reachability experiment.

pub mod build;
pub mod ik;
pub mod plan;
pub mod play;
pub mod scene;
pub mod srdb;
pub mod task;
pub mod walk;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum RoombotsCommand {
    /// Compare inverse-kinematics solvers: a meta-module on a floor of
    /// connectors reaches targets on the plane around it with each solver
    /// the seed tried and with ours [002 §5.3].
    IkTargets(ik::IkTargetsArgs),
    /// Play supervisor command files, one per meta-module standing on a
    /// floor of connectors (perhaps beside a structure), in simulation
    /// (servos, bounding trial, locks), and report each command [002 App. B].
    Play(play::PlayArgs),
    /// The acrobat: a meta-module hands one of its modules over to a lone
    /// module, simulated; optionally drawn [002 §5.3.2].
    Acrobat(scene::AcrobatArgs),
    /// The chair: two meta-modules climb from the floor over a stool's side
    /// and top edge to stand on its back, planned and simulated; prints each
    /// one's plan as supervisor lines (or writes them as command files);
    /// optionally drawn [002 §5.4].
    Chair(scene::ChairArgs),
    /// Build a structure from a structure file: meta-modules move by
    /// themselves, each following the gradient to the open places; one
    /// build reported move by move (and drawn or replayed in physics), or
    /// many from random starts tallied [003 §2.6–2.7].
    Build(build::BuildArgs),
    /// Plan many builds on a cluster: one planning job per random start,
    /// queued on an organizer's planning hosts (`yamor host --plan`) or a
    /// local cluster's, stored (plan, moves, rounds, collisions, time) and
    /// resumed when run again; a table and a summary [003].
    Plan(plan::PlanArgs),
    /// How many moves the decentralised build wastes: its moves and rounds
    /// against the fewest possible (A* over the configurations of all the
    /// meta-modules at once), over random starts of a small structure [003].
    Fewest(build::FewestArgs),
    /// A deadlock: two meta-modules, each yielding to the other under the
    /// seed's canMove rule, and what the seed's remedy and ours do there
    /// [003 Fig 3.5].
    Deadlock(build::DeadlockArgs),
    /// Which poses a meta-module can take and pass through: the Servo
    /// Rotation Database (5,184 poses, the configurations and shapes per
    /// connection type, its build time) and the level 1–3 searches for
    /// intermediate configurations, live and from a table of every pair
    /// swept [003 §2.4, §3.1].
    Srdb(srdb::SrdbArgs),
    /// Walk a Roombot robot's gait from held-out starts and print its
    /// velocity's spread (what `yamor run roombots-…` reports).
    Walk(walk::WalkArgs),
    /// Serve a simulated meta-module to a supervisor over TCP: one command
    /// per line, one answer per line (`ok …` or `error …`) [002 App. B].
    Bridge(walk::BridgeArgs),
}

/// Runs one `yamor roombots` command; `until_stopped` (Ctrl-C) ends a
/// bridge.
pub fn roombots(
    command: RoombotsCommand,
    until_stopped: impl std::future::Future<Output = ()>,
) -> Result<()> {
    match command {
        RoombotsCommand::IkTargets(args) => ik::ik_targets(&args),
        RoombotsCommand::Play(args) => play::play(&args),
        RoombotsCommand::Bridge(args) => block_on(walk::bridge(args, until_stopped)),
        RoombotsCommand::Walk(args) => walk::walk(&args),
        RoombotsCommand::Acrobat(args) => scene::acrobat(&args),
        RoombotsCommand::Chair(args) => scene::chair(&args),
        RoombotsCommand::Srdb(args) => srdb::srdb(&args),
        RoombotsCommand::Build(args) => build::build(&args),
        RoombotsCommand::Plan(args) => plan::plan(&args),
        RoombotsCommand::Deadlock(args) => build::deadlock(&args),
        RoombotsCommand::Fewest(args) => build::fewest(&args),
    }
}

/// Lists the embedded Roombot robots after YaMoR's (`yamor robots`).
pub fn list_robots() -> Result<()> {
    for example in yamor_roombots::gait::EXAMPLES {
        let robot = example.robot()?;
        println!(
            "{:<10} {} Roombot modules, {} joints",
            example.name,
            robot.ids.len(),
            3 * robot.ids.len()
        );
    }
    Ok(())
}

/// Runs an async command on a multi-threaded runtime.
fn block_on<T>(command: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Runtime::new()?.block_on(command)
}
