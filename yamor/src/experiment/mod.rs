//! `yamor experiment …`: the thesis' experiments as commands, each on a
//! [`LocalCluster`](crate::run::LocalCluster) of simulation hosts.
//!
//! # Layout
//! - [`surface`]: Figs 6.3 and 6.5–6.7, the two-parameter velocity surface
//!   and classic Powell paths on it.
//! - [`powell`]: Fig 6.8 (a seven-parameter Powell timeline) and Fig 6.12
//!   (classic against regular-interval Powell from ten starts).
//! - [`gait_time`]: experiment 5, wall-clock time to a good quadruped gait
//!   over several seeds.

pub mod gait_time;
pub mod powell;
pub mod surface;

use yamor_proto::v1 as pb;

/// Simulation hosts when none are asked for: one per core.
pub(crate) fn default_hosts(asked: Option<usize>) -> usize {
    asked
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1)
}

/// A run of `optimizer` on the quadruped with the thesis' 20 s evaluation
/// (8 s warm-up, 12 s measured).
fn quadruped_run(
    optimizer: &str,
    settings: &[(&str, String)],
    optimization_xml: String,
    budget: u64,
    seed: u64,
) -> pb::StartRunRequest {
    pb::StartRunRequest {
        optimizer: optimizer.into(),
        settings: settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        seed,
        robot: Some(pb::Robot {
            source: Some(pb::robot::Source::Example("quadruped".into())),
        }),
        problem: Some(pb::start_run_request::Problem::OptimizationXml(
            optimization_xml,
        )),
        spec: Some(pb::EvaluationSpec {
            warmup_s: 8.0,
            measure_s: 12.0,
            ..Default::default()
        }),
        max_evaluations: budget,
        ..Default::default()
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
