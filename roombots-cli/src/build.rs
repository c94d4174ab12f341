//! `yamor roombots build`, `fewest` and `deadlock`: 003's self-built
//! structures in this process, one build move by move or many tallied,
//! against the fewest moves, and Fig 3.5's deadlock.

use anyhow::Result;
use clap::Args;
use yamor_roombots::chain::ConnectionType;
use yamor_roombots::picture::floor_around;

use crate::task::TaskArgs;

#[derive(Args)]
pub struct BuildArgs {
    #[command(flatten)]
    task: TaskArgs,
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
    task: TaskArgs,
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

/// One build reported move by move (drawn, replayed), or many tallied.
pub fn build(args: &BuildArgs) -> Result<()> {
    use yamor_reconfig::decentralised::{Build, Film};
    use yamor_reconfig::planning::Method;
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
        let t =
            yamor_reconfig::trials::trials(table, &clouds, &structure, size, settings, args.trials)
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

pub fn fewest(args: &FewestArgs) -> Result<()> {
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

pub fn deadlock(args: &DeadlockArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_reconfig::decentralised::{Build, Rule, Settings};
    use yamor_reconfig::starts::deadlock_case;
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
