//! `yamor bench-engines`: what `bench/peers/engines.py` compares with
//! MuJoCo. For every engine of ours it measures speed and the fidelity
//! figures of docs/benchmarks.md, and it exports the quadruped as a MuJoCo
//! model with the servo controls of every walk, so MuJoCo walks exactly the
//! same gaits. Every gait walks at each engine's step and at half of it
//! (twice the substeps, the same firmware ticks).
//!
//! The output directory holds `quadruped.xml` (MJCF), `controls/<gait>.csv`
//! (one row per tick: the actuator controls), `velocities.csv` (gait,
//! engine, velocity in m/s) and `summary.json` (timings, drift, step halving
//! and what the script needs to rebuild each walk).
//!
//! With `--params gaits.csv --config optimize.xml` it measures no engine but
//! exports the given gaits, each walked from the first `--starts` held-out
//! starts (the starts `yamor sim --starts N` walks): what
//! `bench/peers/rank_good.py` walks in MuJoCo ([`export_gaits`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use rand::{Rng, SeedableRng};
use serde_json::json;
use yamor_core::evaluation::{DEFAULT_WARMUP_S, EvaluationSpec, planar_velocity};
use yamor_core::optimize::OptimizationConfig;
use yamor_core::starts::held_out_seeds;
use yamor_core::{Morphology, RobotConfig};
use yamor_sim::physics::Engine;
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimSettings, Simulation, evaluate};

use crate::mujoco_export::{MujocoExport, write_controls};

#[derive(Args)]
pub struct BenchEnginesArgs {
    /// Directory for the MuJoCo model, the controls and the figures.
    #[arg(long, default_value = "target/bench-engines")]
    pub out: PathBuf,
    /// Engines to measure (all by default).
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<Engine>,
    /// Random quadruped gaits (seeded, uniform in the box of
    /// examples/robots/quadruped/optimize.xml) for the rank correlation.
    #[arg(long, default_value_t = 100)]
    pub gaits: usize,
    /// Seed of the oscillators' initial phases.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Oscillator starts (evaluation seeds 0, 1, …) the reference gait is
    /// walked from: one walk of a gait is chaotic in the step, its mean
    /// over starts is what halving the step is judged on.
    #[arg(long, default_value_t = 100)]
    pub reference_seeds: u64,
    /// Timed walks of the reference gait per engine (best and median reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Length of a timed walk (s).
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Seconds walked before the measured window.
    #[arg(long, default_value_t = DEFAULT_WARMUP_S)]
    pub warmup: f64,
    /// Length of the standing-drift test (s).
    #[arg(long, default_value_t = 60.0)]
    pub stand_seconds: f64,
    /// Measure no engine: export these gaits instead, a CSV with a header
    /// `name,<free parameter>,…` (the free parameters of --config, any
    /// order) and one gait per row, each walked on the first of --engines
    /// (default: the default engine) from the first --starts held-out
    /// starts. Writes OUT/gaits/<name>.xml, OUT/controls/<name>/<i>.csv,
    /// OUT/velocities.csv (gait,start,seed,velocity), quadruped.xml and
    /// summary.json.
    #[arg(long, value_name = "CSV", requires = "config")]
    pub params: Option<PathBuf>,
    /// With --params: the optimization problem (optimize.xml of the
    /// quadruped) whose free parameters the CSV's columns are.
    #[arg(long, requires = "params")]
    pub config: Option<PathBuf>,
    /// With --params: the held-out starts each gait is walked from.
    #[arg(long, default_value_t = 20)]
    pub starts: u32,
}

/// The walks every engine and MuJoCo make: the reference gait, the learnt
/// one, and the random ones.
struct Gait {
    name: String,
    config: RobotConfig,
    /// Evaluation seed: where the oscillators start.
    seed: u64,
}

pub fn bench_engines(args: BenchEnginesArgs) -> Result<()> {
    if let (Some(params), Some(config)) = (&args.params, &args.config) {
        return export_gaits(&args, config, params);
    }
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let engines = if args.engines.is_empty() {
        Engine::ALL.to_vec()
    } else {
        args.engines.clone()
    };
    let example = ExampleRobot::named("quadruped").expect("embedded");
    let morphology = example.morphology()?;
    let settings = SimSettings::default();
    let spec = EvaluationSpec::lasting_after(args.warmup, args.seconds)?;
    let gaits = gaits(example.gait()?, args.gaits, args.seed, args.reference_seeds)?;
    fs::create_dir_all(args.out.join("controls"))
        .with_context(|| format!("creating {}", args.out.display()))?;

    let reference = &gaits[0].config;
    let mut engine_figures = serde_json::Map::new();
    for &engine in &engines {
        let settings = SimSettings { engine, ..settings };
        let (best, median) = time_walks(&morphology, reference, settings, &spec, args.runs)?;
        let drift = standing_drift(&morphology, reference, settings, args.stand_seconds)?;
        println!(
            "{engine:>12}: {:>5.0}x real time (best of {}), median {:>5.0}x; standing drift {:.4} mm/s",
            args.seconds / best,
            args.runs,
            args.seconds / median,
            drift * 1000.0,
        );
        engine_figures.insert(
            engine.name().into(),
            json!({
                "best_wall_s": best,
                "median_wall_s": median,
                "standing_drift_m_per_s": drift,
                "substeps": engine.default_substeps(),
            }),
        );
    }

    let export = MujocoExport::new(&morphology, settings)?;
    let mut velocities = fs::File::create(args.out.join("velocities.csv"))?;
    writeln!(velocities, "gait,engine,step,velocity")?;
    let mut recorded = false;
    for gait in &gaits {
        let spec = EvaluationSpec {
            seed: gait.seed,
            ..spec.clone()
        };
        for (k, &engine) in engines.iter().enumerate() {
            let settings = SimSettings { engine, ..settings };
            let (outcome, controls) =
                export.walk(&morphology, &gait.config, settings, &spec, k == 0)?;
            writeln!(
                velocities,
                "{},{},h,{}",
                gait.name, engine, outcome.velocity
            )?;
            // Half the physics step: twice the substeps, the same ticks.
            let half = SimSettings {
                substeps: Some(2 * engine.default_substeps()),
                ..settings
            };
            let fine = evaluate(&morphology, &gait.config, half, &spec)?;
            writeln!(velocities, "{},{},h/2,{}", gait.name, engine, fine.velocity)?;
            if k == 0 {
                write_controls(
                    &args.out.join(format!("controls/{}.csv", gait.name)),
                    &controls,
                )?;
                recorded = true;
            }
        }
    }
    if !recorded {
        bail!("no engine walked, nothing recorded");
    }

    export.write(
        &args.out,
        settings,
        [
            ("seconds", json!(args.seconds)),
            ("warmup", json!(spec.warmup)),
            ("runs", json!(args.runs)),
            ("stand_seconds", json!(args.stand_seconds)),
            (
                "gaits",
                json!(gaits.iter().map(|g| g.name.clone()).collect::<Vec<_>>()),
            ),
            ("engines", json!(engine_figures)),
        ],
    )?;
    println!(
        "MuJoCo model, controls and figures in {}",
        args.out.display()
    );
    Ok(())
}

/// The reference gait from seed 0, the learnt gait, `random` random gaits,
/// then the reference gait from seeds 1 to `reference_seeds − 1`.
fn gaits(
    reference: RobotConfig,
    random: usize,
    seed: u64,
    reference_seeds: u64,
) -> Result<Vec<Gait>> {
    let config = OptimizationConfig::from_xml_str(
        "quadruped optimize.xml",
        include_str!("../../examples/robots/quadruped/optimize.xml"),
    )?;
    let learnt = RobotConfig::from_xml_str(
        "quadruped learnt.xml",
        include_str!("../../examples/robots/quadruped/learnt.xml"),
    )?;
    let free = config.free_parameters();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut gaits = vec![
        Gait {
            name: "reference".into(),
            config: reference.clone(),
            seed: 0,
        },
        Gait {
            name: "learnt".into(),
            config: learnt,
            seed: 0,
        },
    ];
    for k in 0..random {
        let values: Vec<f64> = free
            .iter()
            .map(|p| rng.random_range(p.min..=p.max))
            .collect();
        gaits.push(Gait {
            name: format!("random{k:03}"),
            config: config.apply(&values)?,
            seed: 0,
        });
    }
    for s in 1..reference_seeds {
        gaits.push(Gait {
            name: format!("reference-seed{s:02}"),
            config: reference.clone(),
            seed: s,
        });
    }
    Ok(gaits)
}

fn time_walks(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    runs: usize,
) -> Result<(f64, f64)> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        evaluate(morphology, gait, settings, spec)?;
        times.push(started.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((times[0], times[times.len() / 2]))
}

/// Horizontal speed (m/s) of a quadruped whose powered servos hold 0 rad,
/// from 2 s (once it has settled) to the end.
fn standing_drift(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    seconds: f64,
) -> Result<f64> {
    let mut still = gait.clone();
    for m in &mut still.modules {
        m.amplitude = 0.0;
        m.offset = 0.0;
    }
    let mut sim = Simulation::new(morphology, settings)?;
    sim.configure(&still)?;
    sim.run_until(2.0);
    let start = sim.robot_sample();
    sim.run_until(seconds);
    Ok(planar_velocity(&start, &sim.robot_sample()))
}

/// `--params`: the gaits of `params` (values of `config`'s free
/// parameters), each written as XML and walked as the file says (as `yamor
/// sim quadruped --gait FILE --starts N` walks it) from the first
/// `--starts` held-out starts, with every walk's controls and velocity.
pub fn export_gaits(args: &BenchEnginesArgs, config: &Path, params: &Path) -> Result<()> {
    let config = OptimizationConfig::from_file(config)
        .with_context(|| format!("reading {}", config.display()))?;
    let free: Vec<String> = config
        .free_parameters()
        .into_iter()
        .map(|p| p.name)
        .collect();
    let text =
        fs::read_to_string(params).with_context(|| format!("reading {}", params.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .context("empty parameter file")?
        .split(',')
        .collect();
    if header.first() != Some(&"name") {
        bail!("the parameter file's first column must be `name`");
    }
    let columns: Vec<usize> = free
        .iter()
        .map(|p| {
            header
                .iter()
                .position(|h| h == p)
                .with_context(|| format!("no column for free parameter {p}"))
        })
        .collect::<Result<_>>()?;

    let morphology = ExampleRobot::named("quadruped")
        .expect("embedded")
        .morphology()?;
    let settings = SimSettings {
        engine: args.engines.first().copied().unwrap_or_default(),
        ..SimSettings::default()
    };
    let base = EvaluationSpec::lasting_after(args.warmup, args.seconds)?;
    let seeds: Vec<u64> = held_out_seeds(args.starts).collect();
    fs::create_dir_all(args.out.join("gaits"))
        .with_context(|| format!("creating {}", args.out.display()))?;

    let export = MujocoExport::new(&morphology, settings)?;
    let mut velocities = fs::File::create(args.out.join("velocities.csv"))?;
    writeln!(velocities, "gait,start,seed,velocity")?;
    let mut names = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let name = cells[0].to_string();
        let values: Vec<f64> = columns
            .iter()
            .map(|&c| -> Result<f64> {
                let cell = cells
                    .get(c)
                    .with_context(|| format!("{name}: no cell in column {}", c + 1))?;
                cell.trim()
                    .parse()
                    .with_context(|| format!("parameters of {name}: {cell:?}"))
            })
            .collect::<Result<_>>()?;
        let path = args.out.join(format!("gaits/{name}.xml"));
        fs::write(&path, config.apply(&values)?.to_xml_string())?;
        // Walk what the file says, as `yamor sim --gait` would.
        let gait = RobotConfig::from_file(&path)?;
        let dir = args.out.join(format!("controls/{name}"));
        fs::create_dir_all(&dir)?;
        for (i, &seed) in seeds.iter().enumerate() {
            let spec = EvaluationSpec {
                seed,
                ..base.clone()
            };
            let (outcome, controls) = export.walk(&morphology, &gait, settings, &spec, true)?;
            writeln!(velocities, "{name},{i},{seed},{}", outcome.velocity)?;
            write_controls(&dir.join(format!("{i}.csv")), &controls)?;
        }
        eprintln!("{name}: {} starts", seeds.len());
        names.push(name);
    }

    export.write(
        &args.out,
        settings,
        [
            ("seconds", json!(args.seconds)),
            ("warmup", json!(base.warmup)),
            ("gaits", json!(names)),
            ("starts", json!(args.starts)),
            ("seeds", json!(seeds)),
            ("engine", json!(settings.engine.name())),
        ],
    )?;
    Ok(())
}
