//! `yamor lifelong reset-free`: the emulated real robot (serial line,
//! emulated CamApp, the tracker) started in this process walks evaluation
//! after evaluation with homing walks between them
//! ([`yamor_lifelong::reset_free`]), and says how far it strayed from the
//! camera field's centre and whether it ever left the field.
//!
//! The homing repertoire is the robot's gait with its phase lags flipped
//! (and amplitudes halved), walked in simulation first. With a map
//! (`--map`, the `map.json` of `yamor run ROBOT --optimizer map-elites`)
//! the evaluations are the adaptation's: `ite` (Intelligent Trial and Error
//! over the map's elites) proposes every evaluation walk, each expected to
//! move as its cell says, and once it has adapted the robot walks on with
//! its answer; `--damage-after K --damage stuck:5` breaks a motor of the
//! emulated robot after K evaluations, and a fresh adaptation from the
//! map starts there. Without a map the evaluations are the repertoire's
//! gaits drawn at random.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use yamor_camera::camapp::CamAppSettings;
use yamor_camera::{CameraModel, LED_HEIGHT};
use yamor_core::damage::Damage;
use yamor_core::evaluation::EvaluationSpec;
use yamor_core::evaluation::descriptors::{HEADING, TURN};
use yamor_core::optimize::OptimizationConfig;
use yamor_families::emulated::EmulatedRig;
use yamor_host_agent::Backend;
use yamor_host_agent::serial::SerialSettings;
use yamor_ite::{IteConfig, ItePlugin};
use yamor_lifelong::homing::{Field, HeadingEstimate, HeadingNoise, HomingSettings, Move};
use yamor_lifelong::reset_free::{
    HomingGait, OptimizerProposals, Proposal, RandomProposals, ResetFree, ResetFreeSettings,
    WalkKind, WalkReport, phase_variants, repertoire_from_walks,
};
use yamor_optimizer_api::map::{Grid, Prior, PriorElite};
use yamor_optimizer_api::{Bound, Optimizer, Plugin as _, Settings, Space};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::EmulationSettings;
use yamor_sim::{SimSettings, Simulation};

#[derive(Args)]
pub struct ResetFreeArgs {
    /// An embedded example robot.
    #[arg(default_value = "quadruped")]
    robot: String,
    /// Evaluation walks (homing walks come on top).
    #[arg(long, default_value_t = 100)]
    walks: usize,
    /// Robot seconds per wall second of the emulated robot (1: real time).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// A map of gaits (`map.json` of `yamor run ROBOT --optimizer
    /// map-elites`, on the robot's default problem): every evaluation is
    /// ite's, adapting from the map; the built-in repertoire homes.
    #[arg(long)]
    map: Option<PathBuf>,
    /// The field's half width and height (m), centred under the camera;
    /// default: what the default camera sees at the LED's height.
    #[arg(long, value_name = "HALF_X,HALF_Y")]
    field: Option<String>,
    /// An evaluation walk must be predicted to end this far inside (m).
    #[arg(long, default_value_t = 0.3)]
    margin: f64,
    /// Most homing walks before an evaluation (then it is walked anyway).
    #[arg(long, default_value_t = 20)]
    max_homing: usize,
    /// An evaluation that is not safe at full length is walked cut to ¾,
    /// ½, … of its time (its measured window shortened), down to this
    /// share, before homing walks are tried; 1: never cut.
    #[arg(long, default_value_t = 0.5)]
    shortest_evaluation: f64,
    /// The gait whose phase-lag variants home (without `--map`); default:
    /// the quadruped's learnt gait (examples/robots/quadruped/learnt.xml),
    /// any other robot's gait as given.
    #[arg(long)]
    homing_gait: Option<PathBuf>,
    /// Walks looked ahead when choosing a homing gait.
    #[arg(long, default_value_t = 2)]
    depth: usize,
    /// Robot seconds of every walk before its measured window.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Robot seconds of every walk's measured window.
    #[arg(long, default_value_t = 4.0)]
    measure: f64,
    /// Seeds the emulated robot, its camera and the evaluations drawn.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Robot seconds the emulated robot takes per message (the real
    /// robot's 1 s).
    #[arg(long, default_value_t = 1.0)]
    message_delay: f64,
    /// Most robot seconds a module takes to join the network (7 s).
    #[arg(long, default_value_t = 7.0)]
    join_delay: f64,
    /// Pixel noise of the emulated camera.
    #[arg(long, default_value_t = 0.5)]
    camera_noise: f64,
    /// The robot carries a second LED this far (m) along its long axis, so
    /// the camera sees which way it faces; 0: one LED, as the thesis'
    /// robot, its heading guessed from how it moved.
    #[arg(long, default_value_t = 0.1)]
    heading_led: f64,
    /// Also write every walk to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Break the emulated robot after this many evaluations (with
    /// `--damage`); with a map, the adaptation starts again from it there.
    #[arg(long, requires = "damage")]
    damage_after: Option<usize>,
    /// What breaks: a motor of the emulated robot, `stuck:M`, `limp:M` or
    /// `weak:M` (module M).
    #[arg(long, requires = "damage_after")]
    damage: Option<Damage>,
}

/// The field the default camera sees at the LED's height: the rectangle
/// through the midpoints of the image's edges (with barrel distortion the
/// corners see further, so all of it is in view).
fn camera_field(model: &CameraModel) -> Result<Field> {
    let left = model.unproject([0.0, 240.0], LED_HEIGHT);
    let top = model.unproject([320.0, 0.0], LED_HEIGHT);
    let centre = model.unproject([320.0, 240.0], LED_HEIGHT);
    let half_x = (left[0] - centre[0]).abs();
    let half_y = (top[1] - centre[1]).abs();
    Ok(Field::around(centre, half_x, half_y)?)
}

fn parse_field(text: &str) -> Result<Field> {
    let (x, y) = text
        .split_once(',')
        .with_context(|| format!("--field wants HALF_X,HALF_Y in metres, got {text:?}"))?;
    let number = |s: &str| -> Result<f64> {
        s.trim()
            .parse::<f64>()
            .with_context(|| format!("--field: {s:?} is not a number"))
    };
    Ok(Field::around([0.0, 0.0], number(x)?, number(y)?)?)
}

/// A map file read for reset-free learning: every cell as a gait with its
/// expected move, and the map as an adaptation's prior.
struct MapGaits {
    cells: Vec<HomingGait>,
    /// Each cell's point in the problem's free parameters, as `cells`.
    points: Vec<Vec<f64>>,
    prior: Prior,
}

/// The gaits evaluated and the prior, from a map file.
fn from_map(path: &Path, problem: &OptimizationConfig, walk_s: f64) -> Result<MapGaits> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let map: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let bad = |why: String| anyhow::anyhow!("{}: {why}", path.display());
    let names: Vec<String> = map["descriptors"]
        .as_array()
        .ok_or_else(|| bad("no \"descriptors\" list: not a map.json".into()))?
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_owned())
        .collect();
    let grid = map["grid"]
        .as_str()
        .ok_or_else(|| bad("no \"grid\": not a map.json".into()))
        .and_then(|g| Grid::parse(g).map_err(|e| bad(format!("its grid: {e}"))))?;
    let axis = |name: &str| names.iter().position(|n| n == name);
    let heading = axis(HEADING).ok_or_else(|| {
        bad(format!(
            "the map has no {HEADING} axis (it has {}): homing needs each cell's direction of travel",
            names.join(", ")
        ))
    })?;
    let turn = axis(TURN);
    let free = problem.free_parameters();
    // The map's own window is the run's spec, not in the file: cells
    // without a turn axis are taken as straight, and the turn (when it is
    // an axis) as measured over the default window.
    let measured_s = EvaluationSpec::default().measure;
    let mut cells = Vec::new();
    let mut points = Vec::new();
    let mut elites = Vec::new();
    for (k, cell) in map["cells"]
        .as_array()
        .ok_or_else(|| bad("no \"cells\" list".into()))?
        .iter()
        .enumerate()
    {
        let values: Vec<f64> = free
            .iter()
            .map(|p| {
                cell["parameters"]
                    .as_array()
                    .and_then(|ps| ps.iter().find(|q| q["name"] == p.name.as_str()))
                    .and_then(|q| q["value"].as_f64())
                    .ok_or_else(|| {
                        bad(format!(
                            "cell {k} has no parameter {}: was the map made with the robot's default problem?",
                            p.name
                        ))
                    })
            })
            .collect::<Result<_>>()?;
        let gait = problem
            .apply(&values)
            .map_err(|e| bad(format!("cell {k}: {e}")))?;
        let descriptors: Vec<f64> = cell["descriptors"]
            .as_array()
            .map(|d| d.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
        if descriptors.len() != names.len() {
            return Err(bad(format!(
                "cell {k} has {} descriptors, the map {}",
                descriptors.len(),
                names.len()
            )));
        }
        let velocity = cell["held_out"]["mean"]
            .as_f64()
            .or(cell["fitness"].as_f64())
            .ok_or_else(|| bad(format!("cell {k} has no fitness")))?;
        let t = turn.map_or(0.0, |i| descriptors[i]);
        let step = Move::from_descriptors(descriptors[heading], velocity, t, measured_s, walk_s);
        elites.push(PriorElite {
            cell: cell["cell"].as_u64().unwrap_or(k as u64) as usize,
            x: values.clone(),
            descriptors,
            value: velocity,
        });
        cells.push(HomingGait {
            name: format!("cell {}", cell["cell"]),
            gait,
            step,
            // A map keeps one walk's direction per cell (its held-out
            // walks only a speed): the default spread.
            direction_sd: HeadingNoise::default().direction_sd,
        });
        points.push(values);
    }
    if cells.is_empty() {
        bail!("{}: the map has no cells", path.display());
    }
    let prior = Prior {
        run: map["run"].as_u64().unwrap_or(0),
        axes: grid.axes().to_vec(),
        elites,
    };
    Ok(MapGaits {
        cells,
        points,
        prior,
    })
}

/// `ite` over the map, on `problem`'s free parameters.
fn ite(problem: &OptimizationConfig, prior: &Prior, seed: u64) -> Result<Box<dyn Optimizer>> {
    let free = problem.free_parameters();
    let space = Space::new(
        free.iter()
            .map(|p| Bound {
                name: p.name.clone(),
                min: p.min,
                max: p.max,
                periodic: p.periodic,
            })
            .collect(),
        free.iter().map(|p| p.start).collect(),
    )?;
    let plugin = ItePlugin;
    let settings = Settings::defaults(&plugin.info().settings);
    debug_assert_eq!(
        IteConfig::try_from(&settings).ok(),
        Some(IteConfig::default())
    );
    Ok(plugin.create_from(&space, &settings, seed, None, Some(prior))?)
}

/// The map cell at `x` (the elite ite walks), if any.
fn nearest(points: &[Vec<f64>], x: &[f64]) -> Option<usize> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                i,
                p.iter().zip(x).map(|(a, b)| (a - b).powi(2)).sum::<f64>(),
            )
        })
        .filter(|(_, d)| *d < 1e-12)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// What one adaptation did: its walks and the gait it settled on.
fn report_adaptation<G, E>(
    source: &OptimizerProposals<G, E>,
    points: &[Vec<f64>],
    cells: &[HomingGait],
) where
    G: FnMut(&[f64]) -> Result<yamor_core::RobotConfig, String>,
    E: FnMut(&[f64]) -> Option<Move>,
{
    let name = |x: &[f64]| {
        nearest(points, x).map_or("a point off the map".to_owned(), |i| cells[i].name.clone())
    };
    let answer = source.optimizer().recommendation();
    println!(
        "adaptation: {} walk(s) told to ite{}; answer {}, walked {} more time(s) after",
        source.told.len(),
        if source.finished() {
            " (it stopped: nothing left predicted to walk much faster)"
        } else {
            ""
        },
        answer.as_deref().map_or("none".to_owned(), name),
        source.walked_after
    );
}

fn line(r: &WalkReport) -> String {
    let what = match &r.kind {
        WalkKind::Homing { name, .. } => format!("homing ({name})"),
        WalkKind::Evaluation { n, safe, share } => {
            format!(
                "evaluation {}{}{}",
                n + 1,
                if *share < 1.0 {
                    format!(" (cut to {:.0} %)", share * 100.0)
                } else {
                    String::new()
                },
                if *safe { "" } else { " (unsafe)" }
            )
        }
    };
    format!(
        "walk {:>3} {:<34} at ({:+.2}, {:+.2}) m, {:.2} m from the centre{}, {:5.2} cm/s, heading {:+4.0}° ± {:3.0}°, {:6.1} robot s",
        r.index + 1,
        what,
        r.x,
        r.y,
        r.distance_from_centre,
        if r.inside { "" } else { " OUTSIDE" },
        r.velocity * 100.0,
        r.heading.to_degrees(),
        r.heading_sd.to_degrees(),
        r.total_robot_s,
    )
}

/// The homing repertoire: the robot's gait (the quadruped's learnt gait,
/// or `--homing-gait`) with its phase lags flipped and amplitudes halved,
/// each walked in simulation. With a map too: its cells walk 0.5–0.7 m in
/// one walk and overshoot as homing gaits; these walk 0.1–0.45 m.
async fn built_in_repertoire(
    args: &ResetFreeArgs,
    problem: &OptimizationConfig,
    spec: &EvaluationSpec,
    walk_s: f64,
) -> Result<Vec<HomingGait>> {
    let simulator: Arc<dyn Backend> = Arc::new(yamor_families::sim_backend(
        &args.robot,
        SimSettings::default(),
    )?);
    // Varied from a fast gait: the learnt gait's variants walk much
    // the same way walk after walk on the emulated robot, where
    // the slow gait as given turns a different way every walk.
    let gait = match (&args.homing_gait, args.robot.as_str()) {
        // In the file's declared encoding, as every gait file is read.
        (Some(path), _) => Some(yamor_core::RobotConfig::from_file(path)?),
        (None, "quadruped") => Some(yamor_core::RobotConfig::from_xml_str(
            "examples/robots/quadruped/learnt.xml",
            include_str!("../../examples/robots/quadruped/learnt.xml"),
        )?),
        (None, _) => None,
    };
    let varied = match gait {
        Some(gait) => OptimizationConfig::new(gait, problem.rules().to_vec())?,
        None => problem.clone(),
    };
    let candidates = phase_variants(&varied)?;
    eprintln!(
        "walking {} variants of the gait in simulation for the repertoire",
        candidates.len()
    );
    // Walked in simulation after 8 s of warm-up, not the robot's:
    // on the robot the oscillators run on from walk to walk, and
    // a short warm-up in simulation measures the transient.
    repertoire_from_walks(
        &simulator,
        candidates,
        &EvaluationSpec {
            warmup: 8.0,
            // Samples close enough together to measure the turn.
            sample_interval: 0.5,
            ..spec.clone()
        },
        4,
        walk_s,
        std::f64::consts::FRAC_PI_4,
    )
    .await
    .map_err(Into::into)
}

pub async fn reset_free(args: ResetFreeArgs) -> Result<()> {
    if args.walks == 0 {
        bail!("--walks must be at least 1");
    }
    if !(args.shortest_evaluation > 0.0 && args.shortest_evaluation <= 1.0) {
        bail!(
            "--shortest-evaluation must be a share of a walk's time in (0, 1], got {}",
            args.shortest_evaluation
        );
    }
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        bail!("--time-scale must be positive, got {}", args.time_scale);
    }
    if !(args.warmup >= 0.0
        && args.measure > 0.0
        && args.warmup.is_finite()
        && args.measure.is_finite())
    {
        bail!("--warmup must be ≥ 0 and --measure > 0 (robot seconds)");
    }
    let example = ExampleRobot::named(&args.robot).with_context(|| {
        format!(
            "unknown robot {:?}; known: {}",
            args.robot,
            ExampleRobot::names().join(", ")
        )
    })?;
    let model = CameraModel::default();
    let field = match &args.field {
        Some(text) => parse_field(text)?,
        None => camera_field(&model)?,
    };
    let spec = EvaluationSpec {
        warmup: args.warmup,
        measure: args.measure,
        sample_interval: 1.0,
        seed: args.seed,
        ..EvaluationSpec::default()
    };
    let walk_s = args.warmup + args.measure;
    let problem = OptimizationConfig::from_xml_str(
        &args.robot,
        &yamor_local::default_optimization(&args.robot)?,
    )?;
    let damage = match &args.damage {
        None => None,
        Some(Damage::Motor { module, mode }) => Some((*module, *mode)),
        Some(other) => bail!(
            "--damage {other:?}: the emulated robot can only break a motor (stuck:M, limp:M, \
             weak:M); the other damages are the simulator's (yamor run --damage)"
        ),
    };
    let repertoire = built_in_repertoire(&args, &problem, &spec, walk_s).await?;
    let map = args
        .map
        .as_deref()
        .map(|path| from_map(path, &problem, walk_s))
        .transpose()?;
    let proposals = map
        .as_ref()
        .map_or(&repertoire, |m| &m.cells)
        .iter()
        .map(|g| Proposal {
            gait: g.gait.clone(),
            expected: Some(g.step),
        })
        .collect();
    println!(
        "homing repertoire ({} gaits, one walk of {walk_s} robot s each):",
        repertoire.len()
    );
    for g in &repertoire {
        println!(
            "  {:<40} forward {:+.2} m, left {:+.2} m, turn {:+4.0}°",
            g.name,
            g.step.forward,
            g.step.left,
            g.step.turn.to_degrees()
        );
    }

    // The emulated robot, its camera and the real-robot backend, as
    // `yamor emulate --camapp` and `yamor host --serial` would run them.
    let sim = Simulation::new(&example.morphology()?, SimSettings::default())?;
    let rig = EmulatedRig::start(
        sim,
        EmulationSettings {
            time_scale: args.time_scale,
            message_delay: args.message_delay,
            join_delay: args.join_delay,
            seed: args.seed,
            heading_led: args.heading_led,
            ..EmulationSettings::default()
        },
        CamAppSettings::new(model, args.camera_noise, args.seed),
        SerialSettings::new(""),
    )
    .await?;
    let (start, robot) = (rig.start, &rig.robot);
    let backend = rig.backend.clone() as Arc<dyn Backend>;
    // Seen with two LEDs; else to be learnt from how the robot moves.
    let heading = HeadingEstimate::from_camera(start.heading);
    let [hx, hy] = field.half();
    println!(
        "emulated {} on {} at time scale {}, field ±{hx:.2} × ±{hy:.2} m, margin {} m; starts at ({:+.2}, {:+.2}), heading {}",
        args.robot,
        robot.path(),
        args.time_scale,
        args.margin,
        start.x,
        start.y,
        start
            .heading
            .map_or("unknown (one LED)".to_owned(), |h| format!(
                "{:+.0}° (seen: two LEDs {} m apart)",
                h.to_degrees(),
                args.heading_led
            ))
    );
    let mut driver = ResetFree::new(
        backend,
        field,
        repertoire,
        ResetFreeSettings {
            spec,
            homing: HomingSettings {
                margin: args.margin,
                depth: args.depth,
                ..HomingSettings::default()
            },
            max_homing: args.max_homing,
            shortest_evaluation: args.shortest_evaluation,
            ..ResetFreeSettings::default()
        },
        Some([start.x, start.y]),
        heading,
    )?;
    let mut csv = match &args.csv {
        Some(path) => {
            let mut f = std::fs::File::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            writeln!(
                f,
                "walk,kind,evaluation,gait,x_m,y_m,distance_m,inside,velocity_m_s,heading_deg,heading_sd_deg,robot_s"
            )?;
            Some(f)
        }
        None => None,
    };
    let mut progress = |r: &WalkReport| {
        println!("{}", line(r));
        if let Some(f) = csv.as_mut() {
            let (kind, evaluation, gait) = match &r.kind {
                WalkKind::Homing { name, .. } => ("homing", String::new(), name.clone()),
                WalkKind::Evaluation { n, .. } => {
                    ("evaluation", (n + 1).to_string(), String::new())
                }
            };
            let _ = writeln!(
                f,
                "{},{kind},{evaluation},\"{gait}\",{:.4},{:.4},{:.4},{},{:.5},{:.1},{:.1},{:.1}",
                r.index + 1,
                r.x,
                r.y,
                r.distance_from_centre,
                r.inside,
                r.velocity,
                r.heading.to_degrees(),
                r.heading_sd.to_degrees(),
                r.total_robot_s
            );
        }
    };
    let wall = Instant::now();
    // The evaluations before the damage, and after it (all of them when
    // nothing breaks).
    let before = args.damage_after.unwrap_or(args.walks).min(args.walks);
    let phases = [(before, None), (args.walks - before, damage)];
    let mut result = Ok(driver.summary());
    let mut random = RandomProposals::new(proposals, args.seed);
    for (phase, (walks, damage)) in phases.into_iter().enumerate() {
        if walks == 0 {
            continue;
        }
        if let Some((module, mode)) = damage {
            robot.damage(module, mode)?;
            println!(
                "after {} evaluations: module {module}'s motor breaks ({mode:?})",
                driver.summary().evaluations
            );
        }
        result = match &map {
            Some(m) => {
                let optimizer = ite(&problem, &m.prior, args.seed + phase as u64)?;
                let points = &m.points;
                let cells = &m.cells;
                let mut source = OptimizerProposals::new(
                    optimizer,
                    |x: &[f64]| problem.apply(x).map_err(|e| e.to_string()),
                    |x: &[f64]| nearest(points, x).map(|i| cells[i].step),
                );
                let r = driver.run(&mut source, walks, &mut progress).await;
                report_adaptation(&source, points, cells);
                r
            }
            None => driver.run(&mut random, walks, &mut progress).await,
        };
        if result.is_err() {
            break;
        }
    }
    let summary = driver.summary();
    println!(
        "{} evaluations ({} in a row inside the field) and {} homing walks in {:.1} robot minutes ({:.1} wall minutes); {} evaluation(s) walked without a safe prediction",
        summary.evaluations,
        summary.evaluations_inside,
        summary.homing_walks,
        summary.robot_s / 60.0,
        wall.elapsed().as_secs_f64() / 60.0,
        summary.unsafe_evaluations
    );
    // A walk that failed for want of a fix is the robot out of the
    // camera's view: it left the field.
    let lost = result.as_ref().err().map(ToString::to_string);
    println!(
        "strayed at most {:.2} m from the field's centre (field ±{hx:.2} × ±{hy:.2} m); {}",
        summary.max_distance,
        match (&lost, summary.ever_left) {
            (Some(e), _) => format!("then the next walk failed: {e}"),
            (None, true) => "it LEFT the field".to_owned(),
            (None, false) => "it never left the field".to_owned(),
        }
    );
    if lost.is_some() {
        // Where the emulated robot really was: out of the image, or its
        // physics gone wrong, tells a lost LED's cause.
        let o = robot.observe();
        println!(
            "the emulated robot's LED was at ({:+.2}, {:+.2}, {:+.2}) m at robot time {:.1} s",
            o.led[0], o.led[1], o.led[2], o.time
        );
    }
    drop(rig);
    result?;
    Ok(())
}
