//! The thesis' experiments and yamor's benchmarks, each on a
//! [`LocalCluster`](yamor_local::LocalCluster): what `yamor experiment …`,
//! `yamor bench-cluster` and `yamor bench-peers` run. Results and plots go to
//! the terminal and an output directory; docs/experiments.md and
//! docs/benchmarks.md quote them.
//!
//! # Layout
//! - [`surface`]: Figs 6.3 and 6.5–6.7, the two-parameter velocity surface
//!   and classic Powell paths on it.
//! - [`powell`]: Fig 6.8 (a seven-parameter Powell timeline) and Fig 6.12
//!   (classic against regular-interval Powell from ten starts).
//! - [`gait_time`]: experiment 5, wall-clock time to a good quadruped gait
//!   over several seeds.
//! - [`bench_cluster`]: scheduler throughput, PSO speed-up and Powell's host
//!   utilisation with expression hosts.
//! - [`bench_sim`]: the simulator's steps per second and real-time factor.
//! - [`bench_engines`]: speed and fidelity of every physics engine, and the
//!   quadruped exported for `bench/peers/engines.py` to walk in MuJoCo;
//!   with `--params`, any gaits' walks from held-out starts exported for
//!   `bench/peers/rank_good.py`.
//! - [`mujoco_export`]: the quadruped's MJCF model and the servo controls
//!   of our walks, which both of those exports write.
//! - [`bench_serial`]: ConnectRobot's time with the real robot's timing.
//! - [`bench_peers`]: our optimizers on test functions through expression
//!   hosts, for `bench/peers/run.py` to compare with scipy and pyswarms.
//! - [`lifelong`]: thesis 7.5's scenarios (transformation, fall, slippery
//!   ground) driving `yamor_lifelong`'s loop on a local cluster, with plots,
//!   and `yamor lifelong gaits`.
//! - [`reset_free`]: `yamor lifelong reset-free`, the emulated real robot
//!   walking evaluations with homing walks between them, in this process.
//! - [`cli`]: the `yamor experiment` and `yamor lifelong` subcommands and
//!   their dispatch.

pub mod bench_cluster;
pub mod bench_engines;
pub mod bench_peers;
pub mod bench_serial;
pub mod bench_sim;
pub mod cli;
pub mod gait_time;
pub mod lifelong;
pub mod mujoco_export;
pub mod powell;
pub mod reset_free;
pub mod surface;

use yamor_core::evaluation::RobotSource;
use yamor_organizer::model::{Problem, RunSpec};

/// A run of `optimizer` on the quadruped with the thesis' 20 s evaluation
/// (8 s warm-up, 12 s measured).
fn quadruped_run(
    optimizer: &str,
    settings: &[(&str, String)],
    optimization_xml: String,
    budget: u64,
    seed: u64,
) -> RunSpec {
    RunSpec {
        settings: settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        seed,
        robot: RobotSource::Example("quadruped".into()),
        max_evaluations: budget,
        ..RunSpec::new(optimizer, Problem::OptimizationXml(optimization_xml))
    }
}

/// The best value so far after each element of `values` (failures count as
/// no improvement).
fn best_so_far(values: impl IntoIterator<Item = Option<f64>>) -> Vec<f64> {
    let mut best = f64::NEG_INFINITY;
    values
        .into_iter()
        .map(|v| {
            if let Some(v) = v {
                best = best.max(v);
            }
            best
        })
        .collect()
}
