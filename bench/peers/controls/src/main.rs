//! `gait-controls`: what `bench/peers/rank_good.py` walks in MuJoCo (issue 31).
//!
//! `yamor bench-engines` exports the servo controls of its own gaits
//! (reference, learnt, seeded random ones) from start seed 0. This tool
//! does the same for any gaits and from the held-out starts `yamor sim
//! --starts N` walks, with the same code (`evaluate_observed`, the
//! actuator control `q* + kv/kp · q̇*` and `sim::mjcf` at 4.17 ms):
//!
//! ```text
//! gait-controls --config optimize.xml --params gaits.csv --out DIR
//!               [--starts 20] [--seconds 20] [--warmup 8]
//! ```
//!
//! `gaits.csv` has a header `name,<free parameter>,…` (the free parameters
//! of `--config`, any order) and one gait per row. The tool writes
//!
//! - `DIR/gaits/<name>.xml`: the gait (`OptimizationConfig::apply`), which
//!   is also what it walks (read back from the file), so `yamor sim
//!   quadruped --gait DIR/gaits/<name>.xml --starts N` walks the same;
//! - `DIR/controls/<name>/<i>.csv`: the actuator controls of held-out
//!   start `i`, one row per tick (the MJCF model's actuator order);
//! - `DIR/velocities.csv`: `gait,start,seed,velocity` on the default engine;
//! - `DIR/quadruped.xml` (MJCF) and `DIR/summary.json`, as bench-engines.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::json;
use yamor_core::RobotConfig;
use yamor_core::evaluation::EvaluationSpec;
use yamor_core::optimize::OptimizationConfig;
use yamor_core::starts::held_out_seeds;
use yamor_sim::mjcf::{MjcfOptions, to_mjcf};
use yamor_sim::physics::ServoCommand;
use yamor_sim::robots::ExampleRobot;
use yamor_sim::{SimSettings, Simulation, evaluate_observed};

struct Args {
    config: PathBuf,
    params: PathBuf,
    out: PathBuf,
    starts: u32,
    seconds: f64,
    warmup: f64,
}

fn parse_args() -> Result<Args> {
    let mut config = None;
    let mut params = None;
    let mut out = None;
    let mut starts = 20;
    let mut seconds = 20.0;
    let mut warmup = yamor_core::evaluation::DEFAULT_WARMUP_S;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--config" => config = Some(PathBuf::from(value()?)),
            "--params" => params = Some(PathBuf::from(value()?)),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--starts" => starts = value()?.parse()?,
            "--seconds" => seconds = value()?.parse()?,
            "--warmup" => warmup = value()?.parse()?,
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(Args {
        config: config.context("--config is required")?,
        params: params.context("--params is required")?,
        out: out.context("--out is required")?,
        starts,
        seconds,
        warmup,
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let config = OptimizationConfig::from_file(&args.config)
        .with_context(|| format!("reading {}", args.config.display()))?;
    let free: Vec<String> = config.free_parameters().into_iter().map(|p| p.name).collect();
    let text = fs::read_to_string(&args.params)
        .with_context(|| format!("reading {}", args.params.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().context("empty parameter file")?.split(',').collect();
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

    let example = ExampleRobot::named("quadruped").expect("embedded");
    let morphology = example.morphology()?;
    let settings = SimSettings::default();
    let base = EvaluationSpec::lasting_after(args.warmup, args.seconds)?;
    let seeds: Vec<u64> = held_out_seeds(args.starts).collect();
    fs::create_dir_all(args.out.join("gaits"))?;

    let sim = Simulation::new(&morphology, settings)?;
    let topology = sim.topology();
    let hinge_modules: Vec<usize> = topology.hinges.iter().flatten().map(|h| h.module).collect();
    let mut velocities = fs::File::create(args.out.join("velocities.csv"))?;
    writeln!(velocities, "gait,start,seed,velocity")?;
    let mut names = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let name = cells[0].to_string();
        let values: Vec<f64> = columns
            .iter()
            .map(|&c| cells[c].trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("parameters of {name}"))?;
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
            let mut controls = Vec::new();
            let outcome = evaluate_observed(&morphology, &gait, settings, &spec, &mut |sim| {
                controls.push(actuator_controls(sim, &hinge_modules));
            })?;
            writeln!(velocities, "{name},{i},{seed},{}", outcome.velocity)?;
            write_controls(&dir.join(format!("{i}.csv")), &controls)?;
        }
        eprintln!("{name}: {} starts", seeds.len());
        names.push(name);
    }

    // MuJoCo steps at 4.17 ms, as bench-engines exports it.
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
        "warmup": base.warmup,
        "robot_geom": format!("part{}", 2 * central),
        "gaits": names,
        "starts": args.starts,
        "seeds": seeds,
        "engine": settings.engine.name(),
    });
    fs::write(args.out.join("summary.json"), serde_json::to_string_pretty(&summary)?)?;
    Ok(())
}

/// As bench-engines: MuJoCo's position actuator with kv applies
/// kp·(ctrl − q) − kv·q̇, our PD law kp·(q* − q) + kv·(q̇* − q̇), so
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
