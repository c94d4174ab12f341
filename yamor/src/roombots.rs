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
    /// Play supervisor command files (002 App. B), one per meta-module
    /// standing on a floor of connectors (perhaps beside a structure),
    /// simulated (servos, bounding trial, locks), and report each command.
    Play(PlayArgs),
    /// The acrobat (002 §5.3.2): a meta-module hands one of its modules
    /// over to a lone module, simulated; optionally drawn.
    Acrobat(AcrobatArgs),
    /// The chair (002 §5.4): two meta-modules climb from the floor over a
    /// stool's side and top edge to stand on its back, planned and
    /// simulated; prints each one's plan as supervisor lines (or writes
    /// them as command files); optionally drawn.
    Chair(ChairArgs),
    /// 003 §2.6-2.7: meta-modules build a structure (XML of §2.7) by
    /// themselves, each following the gradient to the open seeds; one
    /// build reported move by move (and drawn), or many from random starts
    /// tallied.
    Build(BuildArgs),
    /// 003's builds as cluster jobs: one planning job per random start,
    /// queued on an organizer's planning hosts (`yamor host --plan`) or a
    /// local cluster's, stored (plan, moves, rounds, collisions, time) and
    /// resumed when run again; a table and a summary.
    Plan(crate::plan::PlanArgs),
    /// The decentralised build against the fewest moves (A* over the
    /// configurations of all the meta-modules at once): moves and rounds,
    /// over random starts of a small structure.
    Fewest(FewestArgs),
    /// 003 Fig 3.5: two meta-modules, each yielding to the other under the
    /// seed's canMove, and what the seed's remedy and ours do there.
    Deadlock(DeadlockArgs),
    /// 003 §2.4 and §3.1: the Servo Rotation Database (5,184 poses, the
    /// configurations and shapes per connection type, its build time) and
    /// the level 1–3 searches for intermediate configurations at the
    /// seed's rotation steps, live and from a table of every pair swept.
    Srdb(SrdbArgs),
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

/// Who may move in a round of a build.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum MoveRule {
    /// 003 §2.6.4's canMove: wait when a visible one has priority.
    CanMove,
    /// 003 §3.2's remedy: one meta-module moves at a time.
    OneAtATime,
    /// Ours: moves in one agreed order, a move meeting an earlier one's
    /// swept cells waits.
    Reserve,
}

#[derive(Args)]
pub struct BuildArgs {
    #[command(flatten)]
    task: crate::plan::TaskArgs,
    /// Builds from random starts to tally (1: one build, reported move by
    /// move).
    #[arg(long, default_value_t = 1)]
    trials: usize,
    /// The random starts of a single build.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Draw the build (up to eight moments) into this PNG.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
    /// Replay the build's moves in the physics simulation (servos, locks
    /// as welds) and report how the locks held.
    #[arg(long)]
    replay: bool,
}

#[derive(Args)]
pub struct FewestArgs {
    #[command(flatten)]
    task: crate::plan::TaskArgs,
    /// Random starts.
    #[arg(long, default_value_t = 50)]
    trials: u64,
    /// Also search the same starts without the planner's shortcuts (its
    /// bound; one order for independent moves), and report what each
    /// saves (the benchmark's peer: breadth-first search).
    #[arg(long)]
    against_plain: bool,
}

#[derive(Args)]
pub struct DeadlockArgs {
    /// How each meta-module's two modules are joined.
    #[arg(long, default_value = "shear-s")]
    connection: ConnectionType,
}

#[derive(Args)]
pub struct SrdbArgs {
    /// The connection type the searches are timed on.
    #[arg(long, default_value = "shear-s")]
    connection: ConnectionType,
    /// Database builds timed (the median is reported).
    #[arg(long, default_value_t = 101)]
    runs: usize,
    /// Search cases per level, tabled.
    #[arg(long, default_value_t = 200)]
    cases: usize,
    /// Of those, searched live (each sweep computed when needed).
    #[arg(long, default_value_t = 20)]
    live_cases: usize,
    /// Live cases at π/360 (a live level-3 search there takes seconds).
    #[arg(long, default_value_t = 3)]
    fine_live_cases: usize,
    /// Cells taken around the meta-module in each case, besides the floor.
    #[arg(long, default_value_t = 40)]
    others: usize,
    /// Cells taken in the crowded cases that no level-2 search solves.
    #[arg(long, default_value_t = 150)]
    crowded: usize,
    /// Threads sweeping the table of pairs.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Only the coarse step (π/8): sweeping every pair at π/360 takes
    /// seconds.
    #[arg(long)]
    coarse_only: bool,
}

#[derive(Args)]
pub struct ChairArgs {
    /// How each meta-module's two modules are joined.
    #[arg(long, default_value = "shear-s")]
    connection: ConnectionType,
    /// Draw the start, every move and the end into this PNG.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
    /// Write each meta-module's plan as a command file into this
    /// directory (chair-1.txt, chair-2.txt), for `yamor roombots play`.
    #[arg(long)]
    write: Option<std::path::PathBuf>,
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
    /// The command files, one per meta-module (one App. B command per
    /// line, `#` comments), played one after the other in one world.
    #[arg(required = true)]
    files: Vec<std::path::PathBuf>,
    /// How each meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
    /// The floor cell each meta-module stands on at the start, `X,Y`,
    /// one per file in their order (one file: 0,0 when not given).
    #[arg(long = "at", value_parser = floor_cell, allow_hyphen_values = true)]
    at: Vec<(i64, i64)>,
    /// A passive structure on the floor whose faces carry connectors: a
    /// file of cells `x y z`, one per line (examples/roombots/stool.txt).
    #[arg(long)]
    structure: Option<std::path::PathBuf>,
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
        RoombotsCommand::Srdb(args) => srdb(&args),
        RoombotsCommand::Build(args) => build(&args),
        RoombotsCommand::Plan(args) => crate::plan::plan(&args),
        RoombotsCommand::Deadlock(args) => deadlock(&args),
        RoombotsCommand::Fewest(args) => fewest(&args),
    }
}

/// `BARSxROWS`.
fn build(args: &BuildArgs) -> Result<()> {
    use yamor_reconfig::build::{self, Build, Film};
    use yamor_reconfig::task::Method;
    let task = args.task.task()?;
    let structure = task.structure()?;
    let name = task.name();
    anyhow::ensure!(args.trials >= 1, "--trials must be at least 1");
    anyhow::ensure!(
        args.trials == 1 || args.picture.is_none(),
        "--picture draws one build: drop --trials (each trial's starts come from its own seed)"
    );
    anyhow::ensure!(
        args.trials == 1 || !args.replay,
        "--replay replays one build: drop --trials"
    );
    anyhow::ensure!(
        args.trials == 1 || task.method == Method::Decentralised,
        "--central plans one build; `yamor roombots fewest` sets it against the decentralised build over many starts"
    );
    let db = yamor_reconfig::srdb::Database::generate();
    let table = db.table(task.connection);
    let clouds =
        yamor_reconfig::sweep::Clouds::build(table, yamor_reconfig::sweep::ROTATION_STEP, 2);
    let settings = task.settings();
    let size = [task.size; 3];
    if args.trials > 1 {
        let t = build::trials(table, &clouds, &structure, size, settings, args.trials)
            .map_err(|e| anyhow::anyhow!(e))?;
        let median = |v: &[usize]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        let mut secs = t.seconds.clone();
        secs.sort_by(f64::total_cmp);
        println!(
            "{name}, {} meta-modules, {}: built {}/{} from random starts; {} collisions, {} deadlocks, {} out of rounds; built ones: median {} rounds, {} moves, {:.1} ms (slowest {:.1} ms)",
            structure.places.len(),
            task.connection,
            t.built,
            t.trials,
            t.collisions,
            t.deadlocks,
            t.out_of_rounds,
            median(&t.rounds),
            median(&t.moves),
            secs.get(secs.len() / 2).copied().unwrap_or(0.0) * 1e3,
            secs.last().copied().unwrap_or(0.0) * 1e3
        );
        return Ok(());
    }
    let world = task.start(args.seed, table)?;
    let movers: Vec<[i32; 3]> = world
        .moving()
        .iter()
        .filter_map(|id| world.placement(*id).map(|p| p.root))
        .collect();
    println!(
        "{name}: {} places on levels {:?}; {} {} meta-modules start with their roots on {:?}{}",
        structure.places.len(),
        structure.levels(),
        movers.len(),
        task.connection,
        movers,
        match world
            .seeds()
            .iter()
            .filter(|s| s.filled_by.is_some())
            .count()
        {
            0 => String::new(),
            k => format!(", {k} more standing on places of the target"),
        }
    );
    let before = world.clone();
    let mut b = Build::of_world(world, table, &clouds, settings);
    let start = std::time::Instant::now();
    let (report, film) = match task.method {
        Method::Decentralised => {
            let mut film = Film::default();
            (b.run_filmed(Some(&mut film)), film)
        }
        Method::Central { max_expanded } => {
            let planned = yamor_reconfig::central::plan(&b, max_expanded, &|| false)?;
            let outcome = if planned.report.built {
                format!("at least {} moves; the fewest moves", planned.bound)
            } else if planned.exhausted {
                "every reachable configuration searched: no plan exists".to_string()
            } else {
                format!("at least {} moves; gave up (--max-expanded)", planned.bound)
            };
            println!(
                "centralised: {} configurations expanded, {} seen; {outcome}",
                planned.expanded, planned.seen,
            );
            (planned.report, planned.film)
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    for m in &report.moves {
        println!(
            "round {:>4}: meta-module {} {} {:?} -> {:?}{}",
            m.round,
            m.id,
            if m.filled { "fills its seed:" } else { "steps" },
            m.from,
            m.to,
            match m.via.len() {
                0 => String::new(),
                k => format!(
                    " (through {k} intermediate configuration{})",
                    if k > 1 { "s" } else { "" }
                ),
            }
        );
    }
    println!(
        "{}: {} of {} seeds filled in {} rounds, {} moves, {} collisions{}{}; {:.1} ms",
        if report.built { "built" } else { "NOT built" },
        report.filled,
        report.seeds,
        report.rounds,
        report.moves.len(),
        report.collisions,
        if report.deadlock { ", deadlocked" } else { "" },
        if report.out_of_rounds {
            ", out of rounds"
        } else {
            ""
        },
        seconds * 1e3
    );
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw_with(path, &film.frames, floor_around(&film.frames), &[])?;
        println!("picture: {}", path.display());
    }
    anyhow::ensure!(report.built, "the structure was not built");
    if args.replay {
        let plan = yamor_reconfig::plan::Plan::record(&before, table, &report);
        let started = std::time::Instant::now();
        let r = yamor_reconfig::replay::replay(&plan, task.connection)
            .map_err(|e| anyhow::anyhow!("the replay in the simulation: {e}"))?;
        println!(
            "replayed in the simulation: {} moves, {} commands, {:.1} s simulated in {:.1} s; the locks gave at most {:.2} mm; {} stalls or free ends out of reach ({} of them) driven back and done through another pose with the same cells; the connectors ended at most {:.1} mm from the plan; a cube's centre in a cell another meta-module or the structure held at {} observations (every 0.1 s), and cubes' bodies ran into them by at most {:.1} mm; of {} drives, {} went around rather than straight, {} on a way clear of everything, {} of everything but a turning half's rim, {} of the floor only, {} on no clear way; {}",
            r.moves,
            r.commands,
            r.seconds,
            started.elapsed().as_secs_f64(),
            r.lock_gap * 1e3,
            r.retried,
            r.missed,
            r.plan_error * 1e3,
            r.collisions,
            r.overlap_depth * 1e3,
            r.drives,
            r.detours,
            r.clear,
            r.rims,
            r.floor_only,
            r.drives - r.clear - r.rims - r.floor_only,
            if r.ends_on_plan {
                "every meta-module ended on the plan's cells"
            } else {
                "NOT every meta-module ended on the plan's cells"
            }
        );
        anyhow::ensure!(
            r.ends_on_plan,
            "the simulation did not end on the plan's cells"
        );
    }
    Ok(())
}

fn fewest(args: &FewestArgs) -> Result<()> {
    use yamor_reconfig::central::Shortcuts;
    let task = args.task.task()?;
    anyhow::ensure!(
        task.from.is_none(),
        "fewest compares builds from random starts; plan a structure taken apart with `build --from F --central`"
    );
    let db = yamor_reconfig::srdb::Database::generate();
    let table = db.table(task.connection);
    let clouds =
        yamor_reconfig::sweep::Clouds::build(table, yamor_reconfig::sweep::ROTATION_STEP, 2);
    let world = task.world()?;
    let versus = |shortcuts| {
        yamor_reconfig::central::against_decentralised(
            table,
            &clouds,
            &world,
            task.settings(),
            args.trials,
            args.task.max_expanded(),
            shortcuts,
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", task.name()))
    };
    let runs = versus(Shortcuts::ALL)?;
    if args.against_plain {
        // The same starts searched without the bound or without one order
        // for independent moves: what each saves.
        for (name, shortcuts) in [
            (
                "the bound, every order",
                Shortcuts {
                    bounded: true,
                    one_order: false,
                },
            ),
            (
                "breadth-first, every order",
                Shortcuts {
                    bounded: false,
                    one_order: false,
                },
            ),
        ] {
            let plain = versus(shortcuts)?;
            let both: Vec<_> = runs
                .iter()
                .zip(&plain)
                .filter(|(a, b)| a.central.is_some() && b.central.is_some())
                .collect();
            let ratios: Vec<f64> = both
                .iter()
                .map(|(a, b)| b.expanded as f64 / a.expanded as f64)
                .collect();
            let same = both
                .iter()
                .all(|(a, b)| a.central.map(|c| c.0) == b.central.map(|c| c.0));
            let geo =
                (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
            let secs: f64 = plain.iter().map(|r| r.seconds).sum();
            let ours: f64 = runs.iter().map(|r| r.seconds).sum();
            println!(
                "against {name}: {} of {} planned (ours {}); configurations expanded, theirs / ours: geometric mean {geo:.1} over the {} both planned; time {secs:.2} s against {ours:.2} s ({:.1}x); the same fewest moves: {same}",
                plain.iter().filter(|r| r.central.is_some()).count(),
                plain.len(),
                runs.iter().filter(|r| r.central.is_some()).count(),
                ratios.len(),
                secs / ours
            );
        }
    }
    let both: Vec<((usize, usize), (usize, usize))> = runs
        .iter()
        .filter_map(|r| Some((r.central?, r.decentralised?)))
        .collect();
    anyhow::ensure!(!both.is_empty(), "no start both planned and built");
    let summary = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        format!(
            "mean {mean:.2}, median {:.2}, worst {:.2}",
            v[v.len() / 2],
            v[v.len() - 1]
        )
    };
    let moves = summary(both.iter().map(|(c, d)| d.0 as f64 / c.0 as f64).collect());
    let rounds = summary(both.iter().map(|(c, d)| d.1 as f64 / c.1 as f64).collect());
    let optimal = both.iter().filter(|(c, d)| c.0 == d.0).count();
    let mut seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    seconds.sort_by(f64::total_cmp);
    let mut expanded: Vec<usize> = runs.iter().map(|r| r.expanded).collect();
    expanded.sort_unstable();
    println!(
        "{}, {} {} meta-modules ({}), {} random starts: {} planned centrally, {} built by the decentralised controller; \
         on the {} with both, decentralised moves / fewest: {moves}; {optimal} of {} optimal; \
         decentralised rounds / the fewest-moves plan's rounds: {rounds}; \
         fewest moves {}-{}; the search: median {:.2} s, slowest {:.2} s, median {} configurations expanded, most {}",
        task.name(),
        world.seeds().len(),
        task.connection,
        format!("{:?}", task.rule).to_lowercase(),
        runs.len(),
        runs.iter().filter(|r| r.central.is_some()).count(),
        runs.iter().filter(|r| r.decentralised.is_some()).count(),
        both.len(),
        both.len(),
        both.iter().map(|b| b.0.0).min().unwrap_or(0),
        both.iter().map(|b| b.0.0).max().unwrap_or(0),
        seconds[seconds.len() / 2],
        seconds[seconds.len() - 1],
        expanded[expanded.len() / 2],
        expanded[expanded.len() - 1],
    );
    Ok(())
}

fn deadlock(args: &DeadlockArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_reconfig::build::{Build, Rule, Settings, deadlock_case};
    let db = yamor_reconfig::srdb::Database::generate();
    let table = db.table(args.connection);
    let clouds =
        yamor_reconfig::sweep::Clouds::build(table, yamor_reconfig::sweep::ROTATION_STEP, 2);
    let (world, placements) = deadlock_case(table, &clouds).with_context(|| {
        format!(
            "no deadlock of Fig 3.5 found for {} meta-modules",
            args.connection
        )
    })?;
    println!(
        "one open seed: a meta-module standing on floor cell (6, 6); {} meta-modules:",
        args.connection
    );
    for (k, p) in placements.iter().enumerate() {
        println!(
            "  meta-module {}: root {:?}, cubes {:?}",
            k + 1,
            p.root,
            p.cells(table)
        );
    }
    for (rule, name) in [
        (Rule::CanMove, "canMove (the seed)"),
        (Rule::OneAtATime, "one at a time (the seed's remedy)"),
        (Rule::Reserve, "reservations (ours)"),
    ] {
        let settings = Settings {
            rule,
            ..Settings::default()
        };
        let report = Build::with_placements(world.clone(), table, &clouds, &placements, settings)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .run();
        println!(
            "  {name:<36} {}: {} moves in {} rounds, {} collisions",
            if report.built {
                "built"
            } else if report.deadlock {
                "DEADLOCK"
            } else {
                "not built"
            },
            report.moves.len(),
            report.rounds,
            report.collisions
        );
    }
    Ok(())
}

fn srdb(args: &SrdbArgs) -> Result<()> {
    use std::f64::consts::PI;
    use yamor_reconfig::srdb::{Database, POSES_PER_TYPE};
    use yamor_reconfig::timing;
    anyhow::ensure!(
        args.cases > 0 && args.runs > 0,
        "--cases and --runs must be at least 1"
    );
    let db = Database::generate();
    println!(
        "servo rotation database (003 §2.4): {} poses per connection type",
        POSES_PER_TYPE
    );
    println!(
        "  {:<14} {:>7} {:>16} {:>7} {:>11} {:>12}",
        "connection", "visited", "cells and facing", "shapes", "goal cells", "rest poses"
    );
    for table in db.tables() {
        println!(
            "  {:<14} {:>7} {:>16} {:>7} {:>11} {:>12}",
            format!("{} ({})", table.connection, table.connection.short()),
            table.visited,
            table.kept().len(),
            table.shapes(),
            table.goal_cells(),
            table.configurations().len()
        );
    }
    println!(
        "  shapes: the ConfigurationMap's keys (the three cubes' cells): the seed's \"exactly 63\"; rest poses: the kept configurations and the poses they become after an inchworm step"
    );
    let build = timing::database_build(args.runs);
    println!(
        "build, all four types: {:.3} ms median of {} runs, one core (seed: 14-16 ms on a 2.1 GHz dual-core laptop; ratio {:.0}x)",
        build.as_secs_f64() * 1e3,
        args.runs,
        15.0 / (build.as_secs_f64() * 1e3)
    );
    let table = db.table(args.connection);
    let cases = timing::cases(table, args.cases, args.others, 1);
    let crowded = timing::cases(table, 20 * args.cases, args.crowded, 2);
    println!(
        "searches (003 §3.1), {}: a meta-module on the floor, {} other cells taken ({} in the crowded cases no level-2 search solves); each search runs to its end",
        args.connection, args.others, args.crowded
    );
    let steps = [
        (
            yamor_reconfig::sweep::ROTATION_STEP,
            "pi/8",
            args.live_cases,
            "level 1 < 10 ms, level 2 30-40 ms, level 3 2-3 s",
        ),
        (
            PI / 360.0,
            "pi/360",
            args.fine_live_cases,
            "level 2 3-5 s, level 3 300-440 s",
        ),
    ];
    let used = if args.coarse_only { 1 } else { 2 };
    for &(step, name, live, seed) in &steps[..used] {
        let t = timing::time_step(
            &db,
            args.connection,
            step,
            &cases,
            &crowded,
            live,
            args.threads,
        );
        println!(
            "  step {name}: every pair swept once in {:.2} s on {} threads; the seed: {seed}",
            t.table_build.as_secs_f64(),
            t.threads
        );
        for l in &t.levels {
            println!(
                "    level {} {:<6} {:<9} {:>4} searches, {:>4} found, median {:>10.3} ms, max {:>10.3} ms",
                l.level,
                if l.live { "live" } else { "table" },
                if l.hard { "(crowded)" } else { "" },
                l.searches,
                l.found,
                l.median.as_secs_f64() * 1e3,
                l.max.as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
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

fn chair(args: &ChairArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_roombots::scene::{CHAIR_CLIMBERS, STOOL};
    let report = yamor_roombots::scene::chair(args.connection).with_context(|| {
        format!(
            "the planner finds no way for two {} meta-modules onto the stool's back (it only takes steps that bring the holding end nearer, at most eight)",
            args.connection
        )
    })?;
    println!(
        "two {} meta-modules beside a stool of cells {:?}",
        args.connection, STOOL
    );
    for (meta, ((x, y), goal)) in CHAIR_CLIMBERS.iter().enumerate() {
        println!(
            "meta-module {}: from floor cell ({x}, {y}) to stand on {goal:?}",
            meta + 1
        );
        for (line, r) in report.lines[meta].iter().zip(&report.reports[meta]) {
            println!(
                "  {line:<28} {}\n  {:28} simulated {:.2} s, {}, {} overlap(s), locks give <= {:.2} mm, {:.2} mm from the plan",
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
            "  end: cubes at {:?}, connectors at most {:.2} mm from the plan",
            report.cells[meta],
            report.plan_errors[meta] * 1e3
        );
    }
    println!("{:.2} s simulated", report.seconds);
    if let Some(dir) = &args.write {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut at = Vec::new();
        for (meta, lines) in report.lines.iter().enumerate() {
            let ((x, y), goal) = CHAIR_CLIMBERS[meta];
            let path = dir.join(format!("chair-{}.txt", meta + 1));
            let text = format!(
                "# 002 §5.4, the chair: meta-module {} of {} ({}), from floor cell ({x}, {y}) onto the stool's back at {goal:?}\n{}\n",
                meta + 1,
                report.lines.len(),
                args.connection,
                lines.join("\n")
            );
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            at.push(format!("--at {x},{y}"));
            println!("wrote {}", path.display());
        }
        println!(
            "replay: yamor roombots play --connection {} --structure examples/roombots/stool.txt {} {}",
            args.connection,
            at.join(" "),
            (1..=report.lines.len())
                .map(|k| dir.join(format!("chair-{k}.txt")).display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw_with(path, &report.moments, (-1, 4), &STOOL)?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

/// `X,Y`: a floor cell.
fn floor_cell(text: &str) -> Result<(i64, i64), String> {
    let (x, y) = text
        .split_once(',')
        .ok_or_else(|| format!("{text:?} is not a floor cell: X,Y"))?;
    let number = |n: &str| {
        n.trim()
            .parse::<i64>()
            .map_err(|_| format!("{text:?} is not a floor cell: X,Y with integers"))
    };
    Ok((number(x)?, number(y)?))
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
    anyhow::ensure!(
        !(args.kinematic && args.picture.is_some()),
        "--picture draws the simulation: drop --kinematic"
    );
    // Every file is read before anything moves.
    let mut texts = Vec::new();
    for file in &args.files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        yamor_roombots::supervisor::parse(&text)
            .with_context(|| format!("{} is not a command file", file.display()))?;
        texts.push(text);
    }
    let at = match (args.at.len(), args.files.len()) {
        (0, 1) => vec![(0, 0)],
        (a, f) if a == f => args.at.clone(),
        (a, f) => {
            anyhow::bail!("{f} command files need {f} --at cells (one per meta-module), {a} given")
        }
    };
    let structure = match &args.structure {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            yamor_roombots::play::parse_structure(&text)
                .map_err(|e| anyhow::anyhow!("{} is not a structure: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let mut planned: Vec<Stage> = at
        .iter()
        .map(|(x, y)| Stage::standing_on(args.connection, *x, *y).with_structure(structure.clone()))
        .collect();
    for (k, stage) in planned.iter().enumerate() {
        let cells = stage.cells();
        if let Some(c) = structure.iter().find(|c| cells.contains(c)) {
            anyhow::bail!(
                "meta-module {} would stand in the structure's cell {c:?}",
                k + 1
            );
        }
        if let Some(c) = planned[k + 1..]
            .iter()
            .flat_map(Stage::cells)
            .find(|c| cells.contains(c))
        {
            anyhow::bail!("two meta-modules would stand in cell {c:?}");
        }
    }
    let mut simulated = if args.kinematic {
        None
    } else {
        Some(Enactment::troupe(planned.clone()).context("building the simulated meta-modules")?)
    };
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
    let how = if simulated.is_some() {
        ", simulated"
    } else {
        ", kinematically"
    };
    for (meta, stage) in planned.iter().enumerate() {
        println!(
            "{}a {} meta-module standing on the floor{how}: cubes at {:?}, locked {}",
            label(meta, at.len()),
            args.connection,
            stage.cells(),
            locks(stage)
        );
    }
    for (meta, text) in texts.iter().enumerate() {
        let who = label(meta, at.len());
        for (k, line) in text.lines().enumerate() {
            let Ok(Some(command)) = yamor_roombots::supervisor::parse_line(line) else {
                continue;
            };
            let line = line.split('#').next().unwrap_or("").trim();
            let refused = |why: String| {
                anyhow::anyhow!(
                    "{who}line {} ({line}) refused, nothing changed: {why}",
                    k + 1
                )
            };
            match &mut simulated {
                None => {
                    yamor_roombots::play::see_others(&mut planned, meta);
                    let what = planned[meta].apply(&command).map_err(refused)?;
                    println!("{who}line {:>3} {line}: {what}", k + 1);
                }
                Some(enactment) => {
                    let report = enactment.apply_to(meta, &command).map_err(refused)?;
                    println!(
                        "{who}line {:>3} {line}: {}\n          simulated {:.2} s: {}, {} retarget(s), {} overlap(s), locks give ≤ {:.2} mm, {:.2} mm from the plan",
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
                        "{who}line {} ({line}): the meta-module got stuck (the bounding trial gave up after {} goal changes); stopped here",
                        k + 1,
                        report.retargets
                    );
                    planned = enactment.stages().to_vec();
                    if matches!(command, Command::Move { .. } | Command::Reach { .. }) {
                        moments.push(enactment.robot().module_poses());
                    }
                }
            }
        }
    }
    if let Some(path) = &args.picture {
        let mut span = floor_around(&moments);
        for c in &structure {
            span = (
                span.0.min(c[0].min(c[1]) as i32),
                span.1.max(c[0].max(c[1]) as i32),
            );
        }
        yamor_roombots::picture::draw_with(path, &moments, span, &structure)?;
        println!("picture: {}", path.display());
    }
    for (meta, stage) in planned.iter().enumerate() {
        let clock = simulated.as_ref().map_or(String::new(), |e| {
            format!(
                ", {:.2} s simulated, the simulation's cubes at {:?}",
                e.clock(),
                e.cells_of(meta)
            )
        });
        println!(
            "{}end: cubes at {:?}, held by its {} end, locked {}, {} ms waited{clock}",
            label(meta, at.len()),
            stage.cells(),
            stage.held_by(),
            locks(stage),
            stage.clock_ms
        );
    }
    Ok(())
}

/// How a meta-module's lines begin: nothing when it plays alone.
fn label(meta: usize, of: usize) -> String {
    if of == 1 {
        String::new()
    } else {
        format!("[{}] ", meta + 1)
    }
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
