//! `yamor bench`: the simulator's speed on the quadruped, on one core.

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use yamor_core::evaluation::EvaluationSpec;
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimSettings, evaluate};

#[derive(Args)]
pub struct BenchSimArgs {
    /// Length of each benchmark walk in seconds.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Number of timed walks (the best and the median are reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Physics engine.
    #[arg(long, default_value_t)]
    pub engine: yamor_sim::physics::Engine,
}

/// Times walks of the quadruped on one core and checks that half the step
/// gives the same gait.
pub fn bench_sim(args: BenchSimArgs) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let example = ExampleRobot::named("quadruped").expect("embedded");
    let (morphology, gait) = (example.morphology()?, example.gait()?);
    // Sampled as the old fine-grained trajectory was, so figures stay comparable.
    let spec = EvaluationSpec {
        sample_interval: 0.01,
        ..EvaluationSpec::lasting(args.seconds)?
    };
    let settings = SimSettings {
        engine: args.engine,
        ..SimSettings::default()
    };
    println!(
        "quadruped on {}, {} s walk, dt = {:.5} s, one core, {} runs",
        args.engine, args.seconds, settings.dt, args.runs
    );
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..args.runs {
        let started = Instant::now();
        let evaluation = evaluate(&morphology, &gait, settings, &spec)?;
        times.push(started.elapsed().as_secs_f64());
        last = Some(evaluation);
    }
    let evaluation = last.expect("at least one run");
    times.sort_by(f64::total_cmp);
    let (best, median) = (times[0], times[times.len() / 2]);
    let steps = evaluation.physics_steps as f64;
    println!(
        "best   {:.4} s: {:>9.0} steps/s, {:>6.0}x real time",
        best,
        steps / best,
        args.seconds / best
    );
    println!(
        "median {:.4} s: {:>9.0} steps/s, {:>6.0}x real time",
        median,
        steps / median,
        args.seconds / median
    );
    let half = SimSettings {
        dt: settings.dt / 2.0,
        ..settings
    };
    let fine = evaluate(&morphology, &gait, half, &spec)?;
    println!(
        "gait at dt: {:.2} cm/s; at dt/2: {:.2} cm/s (ratio {:.3}); final position differs by {:.1} mm",
        evaluation.velocity * 100.0,
        fine.velocity * 100.0,
        evaluation.velocity / fine.velocity,
        1000.0 * (evaluation.end.x - fine.end.x).hypot(evaluation.end.y - fine.end.y)
    );
    Ok(())
}
