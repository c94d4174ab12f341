//! `yamor roombots …`: the Roombot modules' experiments.

use anyhow::Result;
use clap::{Args, Subcommand};
use yamor_roombots::chain::ConnectionType;
use yamor_roombots::experiment;
use yamor_roombots::picture::floor_around;

#[derive(Subcommand)]
pub enum RoombotsCommand {
    /// 002 §5.3: a meta-module on a floor of connectors reaches the plane
    /// around it with each IK variant the seed tried and with ours.
    IkTargets(IkTargetsArgs),
    /// Play a supervisor command file (002 App. B) on a meta-module standing
    /// on a floor of connectors, simulated (servos, bounding trial, locks),
    /// and report each command.
    Play(PlayArgs),
    /// The acrobat (002 §5.3.2): a meta-module hands one of its modules
    /// over to a lone module, simulated; optionally drawn.
    Acrobat(AcrobatArgs),
    /// The chair (002 §5.4, one meta-module): from the floor over a
    /// stool's side and top edge to stand on its back, planned and
    /// simulated; prints the plan as supervisor lines; optionally drawn.
    Chair(AcrobatArgs),
    /// Walk a Roombot robot's gait from held-out starts and print its
    /// velocity's spread (what `yamor run roombots-…` reports).
    Walk(WalkArgs),
    /// Serve a simulated meta-module to a supervisor over TCP: one App. B
    /// command per line, one answer per line (`ok …` or `error …`).
    Bridge(BridgeArgs),
}

#[derive(Args)]
pub struct AcrobatArgs {
    /// How the meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
    /// Draw the start, the hand-over and the end into this PNG.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct WalkArgs {
    /// An embedded Roombot robot (roombots-meta, roombots-quadruped).
    robot: String,
    /// The gait (yamorconfig XML, one oscillator per joint); the robot's
    /// own when not given.
    #[arg(long)]
    gait: Option<std::path::PathBuf>,
    /// Held-out starts to walk from (yamor_core::starts).
    #[arg(long, default_value_t = 20)]
    starts: u32,
    /// Length of each walk (s), warm-up included.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Warm-up before the measured window (s).
    #[arg(long, default_value_t = 8.0)]
    warmup: f64,
    /// Draw the first start's walk every quarter of its length into this
    /// PNG, side by side.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct BridgeArgs {
    /// Address to listen on (the YaMoR bridge's port plus one).
    #[arg(long, default_value = "127.0.0.1:2224")]
    listen: String,
    /// How the meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
}

#[derive(Args)]
pub struct PlayArgs {
    /// The command file: one App. B command per line, `#` comments.
    file: std::path::PathBuf,
    /// How the meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
    /// Only plan: check each command and move the joints at once, without
    /// simulating the servos, the locks and the floor.
    #[arg(long)]
    kinematic: bool,
    /// Draw the simulated meta-module at the start and after every move
    /// into this PNG, side by side.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
}

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

pub fn roombots(command: RoombotsCommand) -> Result<()> {
    match command {
        RoombotsCommand::IkTargets(args) => ik_targets(&args),
        RoombotsCommand::Play(args) => play(&args),
        RoombotsCommand::Bridge(args) => crate::block_on(bridge(args)),
        RoombotsCommand::Walk(args) => walk(&args),
        RoombotsCommand::Acrobat(args) => acrobat(&args),
        RoombotsCommand::Chair(args) => chair(&args),
    }
}

fn acrobat(args: &AcrobatArgs) -> Result<()> {
    use anyhow::Context;
    let report = yamor_roombots::scene::acrobat(args.connection).with_context(|| {
        format!(
            "a {} meta-module reaches the top of no lone module within three cells",
            args.connection
        )
    })?;
    println!(
        "a {} meta-module on cell (0, 0) reached the top of module 2 on cell {:?} ({:.2} mm off), locked onto it (the locks gave at most {:.2} mm), let go of its module 0; module 1 now stands on module 2",
        args.connection,
        report.partner,
        report.reach_error * 1e3,
        report.lock_gap * 1e3
    );
    for (m, cells) in report.cells.iter().enumerate() {
        println!("module {m}: cubes at {cells:?}");
    }
    println!("{:.2} s simulated", report.seconds);
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw(path, &report.moments, (-2, 2))?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

fn chair(args: &AcrobatArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_roombots::scene::{CHAIR_BACK, STOOL};
    let report = yamor_roombots::scene::chair(args.connection).with_context(|| {
        format!(
            "the planner finds no way for a {} meta-module onto the stool's back (it only takes steps that bring the holding end nearer, at most eight)",
            args.connection
        )
    })?;
    println!(
        "a {} meta-module standing on cell (0, 0), a stool of cells {:?}: to stand on {:?}",
        args.connection, STOOL, CHAIR_BACK
    );
    for (line, r) in report.lines.iter().zip(&report.reports) {
        println!(
            "{line:<28} {}\n{:28} simulated {:.2} s, {}, {} overlap(s), locks give <= {:.2} mm, {:.2} mm from the plan",
            r.plan,
            "",
            r.seconds,
            if r.reached { "reached" } else { "STUCK" },
            r.overlaps,
            r.lock_gap * 1e3,
            r.plan_error * 1e3
        );
    }
    println!(
        "end: cubes at {:?}, {:.2} s simulated",
        report.cells, report.seconds
    );
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw_with(path, &report.moments, (-1, 4), &STOOL)?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

fn walk(args: &WalkArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_core::evaluation::EvaluationSpec;
    use yamor_core::starts::{Spread, held_out_seeds};
    use yamor_roombots::gait::RoombotExample;
    let example = RoombotExample::named(&args.robot).with_context(|| {
        format!(
            "unknown Roombot robot {:?}; known: {}",
            args.robot,
            RoombotExample::names().join(", ")
        )
    })?;
    let robot = example.robot()?;
    let gait = match &args.gait {
        Some(path) => yamor_core::RobotConfig::from_file(path)?,
        None => example.gait()?,
    };
    anyhow::ensure!(args.starts >= 1, "--starts must be at least 1");
    let spec = EvaluationSpec::lasting_after(args.warmup, args.seconds)
        .context("--seconds must exceed --warmup")?;
    let never = std::sync::atomic::AtomicBool::new(false);
    let mut velocities = Vec::new();
    let mut moments = Vec::new();
    for (k, seed) in held_out_seeds(args.starts).enumerate() {
        let every = args.seconds / 4.0;
        let mut next = 0.0;
        let mut on_step = |t: f64, sim: &yamor_roombots::physics::Robot| {
            if k == 0 && args.picture.is_some() && t + 1e-9 >= next {
                moments.push(sim.module_poses());
                next += every;
            }
        };
        let walked = yamor_roombots::gait::walk_observed(
            &robot,
            &gait,
            &EvaluationSpec {
                seed,
                ..spec.clone()
            },
            &never,
            &mut on_step,
        )?;
        println!(
            "start {seed}: {:.2} cm/s, turning {:+.1}°/s",
            walked.velocity * 100.0,
            walked.turn_deg_s
        );
        velocities.push(walked.velocity);
    }
    let spread = Spread::of(&velocities).context("a walk ended nowhere (not finite)")?;
    println!("velocity {} over held-out starts", spread.cm_s());
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw(path, &moments, floor_around(&moments))?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

async fn bridge(args: BridgeArgs) -> Result<()> {
    use anyhow::Context;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    if let Ok(address) = listener.local_addr() {
        println!(
            "a {} meta-module served on {address}: one command per line",
            args.connection
        );
    }
    yamor_roombots::bridge::serve(listener, args.connection, crate::net::shutdown_signal())
        .await
        .context("serving the Roombot bridge")?;
    Ok(())
}

fn play(args: &PlayArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_roombots::enact::Enactment;
    use yamor_roombots::play::Stage;
    use yamor_roombots::supervisor::Command;
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    // The whole file is read before anything moves.
    yamor_roombots::supervisor::parse(&text)
        .with_context(|| format!("{} is not a command file", args.file.display()))?;
    let mut simulated = if args.kinematic {
        None
    } else {
        Some(Enactment::new(args.connection).context("building the simulated meta-module")?)
    };
    anyhow::ensure!(
        !(args.kinematic && args.picture.is_some()),
        "--picture draws the simulation: drop --kinematic"
    );
    let mut planned = Stage::new(args.connection);
    let mut moments = Vec::new();
    if let Some(enactment) = &simulated {
        moments.push(enactment.robot().module_poses());
    }
    let locks = |stage: &Stage| -> String {
        let held: Vec<String> = stage
            .locks()
            .iter()
            .map(|(m, c)| format!("{m}:{c}"))
            .collect();
        held.join(" ")
    };
    println!(
        "a {} meta-module standing on the floor{}: cubes at {:?}, locked {}",
        args.connection,
        if simulated.is_some() {
            ", simulated"
        } else {
            ", kinematically"
        },
        planned.cells(),
        locks(&planned)
    );
    for (k, line) in text.lines().enumerate() {
        let Ok(Some(command)) = yamor_roombots::supervisor::parse_line(line) else {
            continue;
        };
        let line = line.split('#').next().unwrap_or("").trim();
        let refused = |why: String| {
            anyhow::anyhow!("line {} ({line}) refused, nothing changed: {why}", k + 1)
        };
        match &mut simulated {
            None => {
                let what = planned.apply(&command).map_err(refused)?;
                println!("line {:>3} {line}: {what}", k + 1);
            }
            Some(enactment) => {
                let report = enactment.apply(&command).map_err(refused)?;
                println!(
                    "line {:>3} {line}: {}\n          simulated {:.2} s: {}, {} retarget(s), {} overlap(s), locks give ≤ {:.2} mm, {:.2} mm from the plan",
                    k + 1,
                    report.plan,
                    report.seconds,
                    match (&command, report.reached) {
                        (_, false) => "STUCK",
                        (Command::Move { .. } | Command::Reach { .. }, true) => {
                            "every joint reached its goal"
                        }
                        _ => "the servos held",
                    },
                    report.retargets,
                    report.overlaps,
                    report.lock_gap * 1e3,
                    report.plan_error * 1e3,
                );
                anyhow::ensure!(
                    report.reached,
                    "line {} ({line}): the meta-module got stuck (the bounding trial gave up after {} goal changes); stopped here",
                    k + 1,
                    report.retargets
                );
                planned = enactment.stage().clone();
                if matches!(command, Command::Move { .. } | Command::Reach { .. }) {
                    moments.push(enactment.robot().module_poses());
                }
            }
        }
    }
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw(path, &moments, floor_around(&moments))?;
        println!("picture: {}", path.display());
    }
    let clock = simulated.as_ref().map_or(String::new(), |e| {
        format!(
            ", {:.2} s simulated, the simulation's cubes at {:?}",
            e.clock(),
            e.cells()
        )
    });
    println!(
        "end: cubes at {:?}, held by its {} end, locked {}, {} ms waited{clock}",
        planned.cells(),
        planned.held_by(),
        locks(&planned),
        planned.clock_ms
    );
    Ok(())
}

fn ik_targets(args: &IkTargetsArgs) -> Result<()> {
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
            experiment::Report::median(solved),
            solved.last().copied().unwrap_or(f64::NAN),
            experiment::Report::median(refused),
            refused.last().copied().unwrap_or(f64::NAN),
        );
        println!(
            "  ours on {} random reachable targets (end frames of random free poses): {} solved free, median {:.1} µs, max {:.1} µs",
            report.random_targets,
            report.random_solved,
            experiment::Report::median(&report.random_micros),
            report.random_micros.last().copied().unwrap_or(f64::NAN),
        );
    }
    Ok(())
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
