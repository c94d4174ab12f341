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

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use rand::{Rng, SeedableRng};
use serde_json::json;
use yamor_core::evaluation::{EvaluationSpec, planar_velocity};
use yamor_core::optimize::OptimizationConfig;
use yamor_core::{Morphology, RobotConfig};
use yamor_sim::mjcf::{MjcfOptions, to_mjcf};
use yamor_sim::physics::{Engine, ServoCommand};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimSettings, Simulation, evaluate, evaluate_observed};

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
    /// Length of the standing-drift test (s).
    #[arg(long, default_value_t = 60.0)]
    pub stand_seconds: f64,
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
    let spec = EvaluationSpec::lasting(args.seconds)?;
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

    // The robot as assembled: the MuJoCo model's bodies, and which hinge
    // each of its actuators drives, in the model's order.
    let sim = Simulation::new(&morphology, settings)?;
    let topology = sim.topology();
    let hinge_modules: Vec<usize> = topology.hinges.iter().flatten().map(|h| h.module).collect();
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
            let mut controls = Vec::new();
            let outcome =
                evaluate_observed(&morphology, &gait.config, settings, &spec, &mut |sim| {
                    if k == 0 {
                        controls.push(actuator_controls(sim, &hinge_modules));
                    }
                })?;
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

    // MuJoCo steps at 4.17 ms, as in the comparison.
    let substeps = 4;
    let model = to_mjcf(
        "yamor quadruped",
        &topology,
        &MjcfOptions {
            timestep: settings.dt / substeps as f64,
            ground_friction: settings.ground_friction,
            gains: Simulation::healthy_servo_gains(),
        },
    )?;
    fs::write(args.out.join("quadruped.xml"), model)?;
    let central = sim.module_index(morphology.central)?;
    let summary = json!({
        "robot": "quadruped",
        "dt": settings.dt,
        "substeps": substeps,
        "seconds": args.seconds,
        "warmup": spec.warmup,
        "runs": args.runs,
        "stand_seconds": args.stand_seconds,
        // The robot's position is the central module's body centre, the
        // centre of this box.
        "robot_geom": format!("part{}", 2 * central),
        "gaits": gaits.iter().map(|g| g.name.clone()).collect::<Vec<_>>(),
        "engines": engine_figures,
    });
    fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
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

/// The control of every actuator of the MJCF model (hinges in module order)
/// after one tick: MuJoCo's position actuator with kv applies
/// kp·(ctrl − q) − kv·q̇, our PD law is kp·(q* − q) + kv·(q̇* − q̇), so
/// ctrl = q* + kv/kp · q̇*.
fn actuator_controls(sim: &Simulation, hinge_modules: &[usize]) -> Vec<f32> {
    hinge_modules
        .iter()
        .map(|&m| control(&sim.servo_commands()[m]))
        .collect()
}

fn control(command: &ServoCommand) -> f32 {
    if command.stiffness > 0.0 {
        command.angle + command.damping / command.stiffness * command.velocity
    } else {
        command.angle
    }
}

fn write_controls(path: &Path, rows: &[Vec<f32>]) -> Result<()> {
    let mut out = std::io::BufWriter::new(fs::File::create(path)?);
    for row in rows {
        let line: Vec<String> = row.iter().map(|v| format!("{v:.6}")).collect();
        writeln!(out, "{}", line.join(","))?;
    }
    Ok(())
}
