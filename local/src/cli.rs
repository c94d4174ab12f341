//! The robot side of the organizer's client commands: a run read from a
//! robot's files (`yamor optimize start` and `batch`, `yamor run`) and a
//! watched run's progress (`yamor optimize watch`); so `optimize`'s
//! handler is here, its arguments in `yamor_organizer::cli`.

use anyhow::Result;
use yamor_core::evaluation::{EvaluationSpec, Objective};
use yamor_organizer::cli::{ClientOpts, OptimizeCommand, RunOptions, print_run};
use yamor_organizer::model::{HeldOut, RunSpec, RunState, Starts};
use yamor_organizer::text;

use crate::RunRobot;

/// The run `options` describe on `robot`: an embedded example, which
/// every simulation host knows, or the user's own files (a directory with
/// world.xml and gait.xml, or a morphology file with gait.xml beside it),
/// which the run carries to the organizer so that any simulation host
/// walks it; `budget` unless one was given.
pub fn run_spec(options: &RunOptions, robot: &str, budget: u64) -> Result<RunSpec> {
    let robot = RunRobot::load(robot)?;
    run_spec_on(options, &robot, budget)
}

/// The run `options` describe on `robot`; without --config its problem
/// is the robot's default one.
pub fn run_spec_on(options: &RunOptions, robot: &RunRobot, budget: u64) -> Result<RunSpec> {
    let problem = crate::run_problem(options.config.as_deref(), &options.param, || {
        robot.default_problem()
    })?;
    let mut spec = RunSpec {
        name: options.name.clone().unwrap_or_default(),
        settings: crate::parse_settings(&options.settings)?,
        seed: options.seed,
        robot: robot.source(),
        robot_name: robot.name(),
        spec: EvaluationSpec {
            warmup: options.warmup,
            measure: options.measure,
            seed: options.seed,
            ..EvaluationSpec::default()
        },
        backend: options.on,
        max_evaluations: options.budget.unwrap_or(budget),
        objective: Objective::parse(options.objective.as_deref().unwrap_or_default()),
        max_seconds: options.time,
        starts: Starts::fixed_when(options.fixed_start),
        held_out: HeldOut::asked(options.finalists, options.held_out, &problem, options.on),
        max_turn_deg_s: options.max_turn,
        direction: problem.direction(options.direction),
        early_stop: options.early_stop,
        worlds: options.worlds,
        prior: options.prior,
        ..RunSpec::new(options.optimizer.clone(), problem)
    };
    for damage in &options.damage {
        damage.apply(&mut spec.spec);
    }
    crate::check_walk(&spec.spec)?;
    Ok(spec)
}

/// Runs one `yamor optimize` command and prints the organizer's answer.
pub async fn optimize(client: ClientOpts, command: OptimizeCommand) -> Result<()> {
    let organizer = client.organizer()?;
    let format = client.format();
    let answer = match command {
        OptimizeCommand::Start(spec) => {
            let run = run_spec(&spec.options, &spec.robot, 0)?;
            text::runs_started(&[organizer.start_run(&run).await?], format)
        }
        OptimizeCommand::Batch { spec, variant } => {
            let base = run_spec(&spec.options, &spec.robot, 0)?;
            let variants = crate::batch_variants(&variant, spec.options.seed)?;
            let runs = organizer.batch_start_runs(&base, &variants).await?;
            text::runs_started(&runs, format)
        }
        OptimizeCommand::List => text::runs(&organizer.list_runs().await?, format),
        OptimizeCommand::Show { run } => text::run(&organizer.get_run(run).await?, format),
        OptimizeCommand::Best { run, params } => {
            text::best(&organizer.get_run(run).await?, format, params)?
        }
        OptimizeCommand::Optimizers => {
            text::optimizers(&organizer.list_optimizers().await?, format)
        }
        OptimizeCommand::Stop { run } => text::run_stopping(&organizer.stop_run(run).await?),
        OptimizeCommand::Watch { run } => return watch(&organizer, run).await,
    };
    print!("{answer}");
    Ok(())
}

/// Follows a run until it ends or Ctrl-C; an interrupted watch leaves the
/// run going and shows where it is.
async fn watch(organizer: &yamor_organizer::OrganizerClient, run: u64) -> Result<()> {
    let interrupt = interrupt()?;
    let seen = crate::progress::watch(organizer, run, interrupt).await?;
    if seen.state == RunState::Running {
        eprintln!("stopped watching; run {run} goes on (`yamor optimize stop {run}` stops it)");
    }
    print_run(&seen);
    Ok(())
}

/// Resolves on Ctrl-C. The handler is installed now, not when first
/// polled, so a Ctrl-C right after this returns is not lost (the default
/// action would kill the process).
pub fn interrupt() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        Ok(async move {
            sigint.recv().await;
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
