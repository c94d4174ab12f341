//! `yamor roombots ik-targets`: 002 §5.3's reachability experiment.

use anyhow::Result;
use clap::Args;
use yamor_roombots::chain::ConnectionType;
use yamor_roombots::experiment;

#[derive(Args)]
pub struct IkTargetsArgs {
    /// One connection type (parallel, perpendicular, shear-z, shear-s);
    /// all four when not given.
    #[arg(long)]
    connection: Option<ConnectionType>,
    /// Joint-grid steps per turn of the reachability map (12: π/6; a
    /// multiple of 12 holds the lattice).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(12..=48))]
    steps: u32,
}

pub fn ik_targets(args: &IkTargetsArgs) -> Result<()> {
    anyhow::ensure!(
        args.steps.is_multiple_of(12),
        "--steps must be a multiple of 12 (got {}): the lattice's thirds and quarters of a turn must be on the grid",
        args.steps
    );
    let types = args
        .connection
        .map_or_else(|| ConnectionType::ALL.to_vec(), |t| vec![t]);
    for t in types {
        let report = experiment::run(t, args.steps);
        println!(
            "{t} ({}): {} targets, {} proven reachable free of collision (joint grid of {} steps per turn)",
            t.short(),
            report.targets,
            report.proven,
            args.steps
        );
        println!(
            "  {:<46} {:>7} {:>7} {:>15}",
            "solver", "solved", "free", "proven missed"
        );
        for tally in &report.tallies {
            println!(
                "  {:<46} {:>7} {:>7} {:>15}",
                tally.name, tally.solved, tally.free, tally.missed_proven
            );
        }
        let (solved, refused) = (&report.our_micros, &report.refused_micros);
        println!(
            "  ours, one core: median {:.1} µs (max {:.1}) per target solved, {:.1} µs (max {:.1}) per target refused",
            experiment::IkComparison::median(solved),
            solved.last().copied().unwrap_or(f64::NAN),
            experiment::IkComparison::median(refused),
            refused.last().copied().unwrap_or(f64::NAN),
        );
        println!(
            "  ours on {} random reachable targets (end frames of random free poses): {} solved free, median {:.1} µs, max {:.1} µs",
            report.random_targets,
            report.random_solved,
            experiment::IkComparison::median(&report.random_micros),
            report.random_micros.last().copied().unwrap_or(f64::NAN),
        );
    }
    Ok(())
}
