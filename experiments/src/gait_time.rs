//! `yamor experiment gait-time` (issue 4, experiment 5): how long `yamor run`
//! takes on this machine to reach a good quadruped gait, over several seeds.
//!
//! Each seed gets a fresh local cluster and database and the run that
//! `yamor run quadruped --optimizer <optimizer> --seed <seed> --time <time>`
//! starts: the seed is the optimizer's and the walks' (`--seed` sets both),
//! the budget and the optimizer's settings are `yamor run`'s unless
//! `--budget` and `--set` say otherwise. Times are measured from the run's first submitted job to the
//! finish of the evaluation that first reached the threshold.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::quadruped_run;
use yamor_local::default_hosts;
use yamor_local::{GAIT_RUN_BUDGET, LocalCluster, default_optimization, evaluations};

#[derive(Args)]
pub struct GaitTimeArgs {
    /// Optimizer plugin to time (see `yamor optimize optimizers`).
    #[arg(long, default_value = "cmaes")]
    optimizer: String,
    /// Optimizer setting name=value (repeatable), as `yamor run --set`.
    #[arg(long = "set", value_parser = yamor_local::parse_setting)]
    settings: Vec<(String, String)>,
    /// Seeds 1..=N.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// Seconds per run.
    #[arg(long, default_value_t = 60.0)]
    time: f64,
    /// Evaluations per run (0: none; `yamor run`'s default when not given).
    #[arg(long, default_value_t = GAIT_RUN_BUDGET)]
    budget: u64,
    /// The best velocity known from all experiments (m/s); the threshold is
    /// `fraction` of the larger of this and the best of these runs.
    #[arg(long, default_value_t = 0.0)]
    reference: f64,
    /// Fraction of the best known velocity that counts as a good gait.
    #[arg(long, default_value_t = 0.95)]
    fraction: f64,
    /// Simulation hosts (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Directory for the timeline CSV and plot.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// One run: (seconds since the first submission, best so far) at each
/// evaluation, in the order the optimizer learnt them.
struct Trace {
    seed: u64,
    points: Vec<(f64, f64)>,
}

impl Trace {
    fn best(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.1)
    }

    /// (seconds, evaluations) when the best first reached `threshold`.
    fn reached(&self, threshold: f64) -> Option<(f64, usize)> {
        self.points
            .iter()
            .position(|p| p.1 >= threshold)
            .map(|i| (self.points[i].0, i + 1))
    }
}

pub async fn gait_time(args: GaitTimeArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)?;
    let hosts = default_hosts(args.hosts);
    let mut traces = Vec::new();
    for seed in 1..=args.seeds.max(1) {
        let db = args.out.join(format!("seed-{seed}.db"));
        let _ = std::fs::remove_file(&db);
        let cluster = LocalCluster::start("quadruped", hosts, &db).await?;
        let mut request = quadruped_run(
            &args.optimizer,
            &[],
            default_optimization("quadruped")?,
            args.budget,
            seed,
        );
        request.settings.extend(args.settings.iter().cloned());
        request.max_seconds = args.time;
        request.spec.seed = seed;
        let run = cluster.run_to_end(request).await?;
        let all = evaluations(&cluster.organizer, run.id)?;
        cluster.shutdown().await;
        let t0 = all.iter().map(|e| e.job.submitted_ms).min().unwrap_or(0);
        let mut best = f64::NEG_INFINITY;
        let points = all
            .iter()
            .map(|e| {
                best = best.max(e.velocity.unwrap_or(f64::NEG_INFINITY));
                ((e.job.finished_ms - t0) as f64 / 1000.0, best)
            })
            .collect();
        traces.push(Trace { seed, points });
    }
    let top = traces
        .iter()
        .map(Trace::best)
        .fold(args.reference, f64::max);
    let threshold = args.fraction * top;
    println!(
        "\n{}{} on {hosts} host(s), {} s per run; threshold {:.0}% of {:.2} cm/s = {:.2} cm/s",
        args.optimizer,
        args.settings
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect::<String>(),
        args.time,
        args.fraction * 100.0,
        top * 100.0,
        threshold * 100.0
    );
    println!(
        "| seed | evaluations | best (cm/s) | time to threshold (s) | evaluations to threshold |"
    );
    println!("|---|---|---|---|---|");
    let mut times = Vec::new();
    for t in &traces {
        let reached = t.reached(threshold);
        if let Some((s, _)) = reached {
            times.push(s);
        }
        println!(
            "| {} | {} | {:.2} | {} | {} |",
            t.seed,
            t.points.len(),
            t.best() * 100.0,
            reached.map_or("not reached".into(), |r| format!("{:.1}", r.0)),
            reached.map_or("-".into(), |r| r.1.to_string()),
        );
    }
    times.sort_by(f64::total_cmp);
    println!(
        "reached by {} of {} seeds; median time {}",
        times.len(),
        traces.len(),
        if times.len() * 2 > traces.len() {
            format!("{:.1} s", times[traces.len() / 2])
        } else {
            "not reached".into()
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_reached_at_the_first_evaluation_at_or_above_it() {
        let t = Trace {
            seed: 1,
            points: vec![(1.0, 0.05), (2.0, 0.09), (3.5, 0.10), (4.0, 0.12)],
        };
        assert_eq!(t.reached(0.10), Some((3.5, 3)));
        assert_eq!(t.reached(0.2), None);
        assert_eq!(t.best(), 0.12);
    }
}
