//! Reset-free learning on the emulated real robot: the serial backend
//! drives the emulated quadruped through its pseudo-terminal and measures
//! it through the emulated CamApp and the tracker, as `yamor host --serial`
//! would; homing walks keep it inside a small field while random gaits of
//! the repertoire are evaluated.

use std::sync::Arc;

use yamor_camera::CameraModel;
use yamor_camera::camapp::CamAppSettings;
use yamor_core::RobotConfig;
use yamor_core::evaluation::EvaluationSpec;
use yamor_core::optimize::OptimizationConfig;
use yamor_families::emulated::EmulatedRig;
use yamor_host_agent::Backend;
use yamor_host_agent::serial::SerialSettings;
use yamor_lifelong::homing::{Field, HeadingEstimate, HeadingNoise, HomingSettings};
use yamor_lifelong::reset_free::{
    Proposal, RandomProposals, ResetFree, ResetFreeSettings, Summary, WalkReport, phase_variants,
    repertoire_from_walks,
};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::EmulationSettings;
use yamor_sim::{SimSettings, Simulation};

/// Robot seconds per wall second.
const SCALE: f64 = 10.0;

/// The emulated robots run against the wall clock on a machine that may
/// have two cores: two sessions at once would slow each other's physics
/// and change the walks, so the tests here take turns.
static ONE_ROBOT_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How a session is set up. The defaults are the best measured (see
/// `homing_keeps_the_emulated_quadruped_inside_the_field`); `RF_*`
/// environment variables override them when tuning by hand
/// (`RF_SEED=4 RF_MARGIN=0.2 cargo test ... -- --nocapture`):
/// the emulated robot runs against the wall clock, so a setting is judged
/// over several seeds, never one run.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    seed: u64,
    homing_warmup: f64,
    homing_measure: f64,
    half_only: bool,
    max_sd_deg: f64,
    reach: Option<f64>,
    margin: f64,
    max_homing: usize,
    starts: u32,
    half: f64,
    sim_warmup: f64,
    direction_sd: f64,
    turn_sd: f64,
    hypotheses: usize,
    room: Option<f64>,
    repeat: Option<f64>,
    heading_led: f64,
}

impl Knobs {
    fn from_env(seed: u64) -> Knobs {
        let get = |name: &str, default: f64| {
            std::env::var(format!("RF_{name}")).map_or(default, |v| v.parse().unwrap())
        };
        let reach = get("REACH", 0.0);
        Knobs {
            seed: get("SEED", seed as f64) as u64,
            homing_warmup: get("HOMING_WARMUP", 1.0),
            homing_measure: get("HOMING_MEASURE", 3.0),
            half_only: get("HALF_ONLY", 0.0) > 0.0,
            max_sd_deg: get("MAX_SD", 45.0),
            reach: (reach > 0.0).then_some(reach),
            margin: get("MARGIN", 0.3),
            max_homing: get("MAX_HOMING", 20.0) as usize,
            starts: get("STARTS", 4.0) as u32,
            half: get("HALF", 1.1),
            sim_warmup: get("SIM_WARMUP", 8.0),
            direction_sd: get("DIR_SD", 0.25),
            turn_sd: get("TURN_SD", 0.1),
            hypotheses: get("HYP", 7.0) as usize,
            room: Some(get("ROOM", 0.0)).filter(|r| *r > 0.0),
            repeat: Some(get("REPEAT", 0.0)).filter(|r| *r > 0.0),
            heading_led: get("HEADING_LED", 0.1),
        }
    }
}

/// The emulated quadruped at [`SCALE`], its acknowledgements lost at
/// `missing_ack`, seen by an emulated CamApp hung `height` metres up and
/// measured through the tracker by the serial backend, as `yamor host
/// --serial` would; with a second LED `heading_led` metres along its long
/// axis when that is not 0.
async fn emulated_quadruped(
    missing_ack: f64,
    seed: u64,
    height: f64,
    heading_led: f64,
) -> EmulatedRig {
    let example = ExampleRobot::named("quadruped").unwrap();
    let sim = Simulation::new(&example.morphology().unwrap(), SimSettings::default()).unwrap();
    EmulatedRig::start(
        sim,
        EmulationSettings {
            time_scale: SCALE,
            join_delay: 0.5,
            message_delay: 0.05,
            missing_ack,
            seed,
            heading_led,
            ..EmulationSettings::default()
        },
        CamAppSettings {
            model: CameraModel {
                height,
                ..CameraModel::default()
            },
            rate_hz: 50.0,
            ..CamAppSettings::default()
        },
        SerialSettings {
            join_timeout: 2.0,
            reply_timeout: 1.0,
            ..SerialSettings::new("")
        },
    )
    .await
    .expect("the camera sees the robot")
}

/// One reset-free session on the emulated quadruped: `evaluations`
/// random gaits of the repertoire with homing walks between them.
async fn session(evaluations: usize, knobs: Knobs) -> (Summary, Vec<WalkReport>, usize) {
    eprintln!("{knobs:?}");
    let spec = short_walk();
    let homing_spec = EvaluationSpec {
        warmup: knobs.homing_warmup,
        measure: knobs.homing_measure,
        ..spec.clone()
    };
    // The repertoire: the quadruped's gait with its phase lags flipped,
    // and halved amplitudes, each walked from four starts in simulation;
    // most of them walk a different way from every start (a walk is
    // chaotic).
    let problem = OptimizationConfig::from_xml_str(
        "quadruped",
        &yamor_local::default_optimization("quadruped").unwrap(),
    )
    .unwrap();
    // Varied from the learnt gait (20 cm/s, straight), not the gait as
    // given (11 cm/s): a fast gait's variants walk much the same way walk
    // after walk on the emulated robot, where the slow one's turn a
    // different way every walk.
    let problem = OptimizationConfig::new(learnt(), problem.rules().to_vec()).unwrap();
    let simulator: Arc<dyn Backend> =
        Arc::new(yamor_families::sim_backend("quadruped", SimSettings::default()).unwrap());
    let candidates = phase_variants(&problem).unwrap();
    let walk_s = spec.warmup + spec.measure;
    // Walked in simulation after a longer warm-up than on the robot: the
    // robot's oscillators run on between walks.
    let sim_spec = |s: &EvaluationSpec| EvaluationSpec {
        warmup: knobs.sim_warmup,
        measure: 3.0,
        ..s.clone()
    };
    let evaluated = repertoire_from_walks(
        &simulator,
        candidates.clone(),
        &sim_spec(&spec),
        knobs.starts,
        walk_s,
        std::f64::consts::PI,
    )
    .await
    .unwrap();
    let homing_candidates: Vec<_> = candidates
        .into_iter()
        .filter(|(name, _)| !knobs.half_only || name.contains("×0.5"))
        .collect();
    let repertoire = repertoire_from_walks(
        &simulator,
        homing_candidates,
        &sim_spec(&homing_spec),
        knobs.starts,
        homing_spec.warmup + homing_spec.measure,
        knobs.max_sd_deg.to_radians(),
    )
    .await
    .unwrap();
    for g in &repertoire {
        eprintln!(
            "homing {:<40} {:+.2} {:+.2} turn {:+4.0}° sd {:3.0}°",
            g.name,
            g.step.forward,
            g.step.left,
            g.step.turn.to_degrees(),
            g.direction_sd.to_degrees()
        );
    }
    assert!(!repertoire.is_empty(), "{repertoire:?}");

    // The emulated robot, its camera and the host's backend.
    let rig = emulated_quadruped(0.2, knobs.seed, 6.0, knobs.heading_led).await;
    // A camera hung high enough to see ±2.5 m: a robot that leaves the
    // field is still seen (and the test fails saying so, rather than on a
    // lost fix).
    let start = rig.start;
    let backend = rig.backend.clone() as Arc<dyn Backend>;
    // Seen with two LEDs, not estimated from travel.
    let heading = HeadingEstimate::from_camera(start.heading);

    // The default camera's field, about 1.1 m either side; walks of up
    // to about 0.75 m.
    let field = Field::around([0.0, 0.0], knobs.half, knobs.half).unwrap();
    let proposals: Vec<Proposal> = evaluated
        .iter()
        .map(|g| Proposal {
            gait: g.gait.clone(),
            expected: Some(g.step),
        })
        .collect();
    let longest = evaluated
        .iter()
        .map(|g| g.step.length())
        .fold(0.0, f64::max);
    assert!(longest < 1.0, "walks too long for the field: {evaluated:?}");
    let mut driver = ResetFree::new(
        backend,
        field,
        repertoire,
        ResetFreeSettings {
            spec,
            homing_spec: Some(homing_spec),
            homing: HomingSettings {
                margin: knobs.margin,
                hypotheses: knobs.hypotheses,
                ..HomingSettings::default()
            },
            noise: HeadingNoise {
                direction_sd: knobs.direction_sd,
                turn_sd: knobs.turn_sd,
                ..HeadingNoise::default()
            },
            max_homing: knobs.max_homing,
            evaluation_reach: knobs.reach,
            homing_room: knobs.room,
            repeat_homing: knobs.repeat,
            ..ResetFreeSettings::default()
        },
        Some([start.x, start.y]),
        heading,
    )
    .unwrap();
    let mut source = RandomProposals::new(proposals, knobs.seed + 7);
    let result = driver
        .run(&mut source, evaluations, |r| {
            eprintln!(
                "walk {:3} {:<60} ({:+.2}, {:+.2}) {:.2} m{} heading {:+4.0}° ± {:3.0}°",
                r.index,
                format!("{:?}", r.kind),
                r.x,
                r.y,
                r.distance_from_centre,
                if r.inside { "" } else { " OUTSIDE" },
                r.heading.to_degrees(),
                r.heading_sd.to_degrees()
            );
        })
        .await;
    let summary = driver.summary();
    if let Err(e) = result {
        eprintln!("ERROR {e}");
    }
    eprintln!("{summary:?}");
    println!("SUMMARY {knobs:?} {summary:?}");
    drop(rig);
    (summary, driver.reports().to_vec(), source.told.len())
}

/// The driver on the real-robot path: every evaluation is walked and
/// told, every walk is placed by the camera, and robot time adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluations_and_homing_walks_on_the_emulated_robot_through_the_camera() {
    let _turn = ONE_ROBOT_AT_A_TIME.lock().await;
    let (summary, reports, told) = session(8, Knobs::from_env(3)).await;
    assert_eq!(summary.evaluations, 8, "{summary:?}");
    assert_eq!(told, 8);
    assert_eq!(reports.len(), summary.evaluations + summary.homing_walks);
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(r.index, i);
        assert!(r.x.is_finite() && r.y.is_finite(), "{r:?}");
        assert!(r.robot_s > 3.0, "a walk is 4 robot seconds and more: {r:?}");
    }
    assert!(
        (summary.robot_s - reports.iter().map(|r| r.robot_s).sum::<f64>()).abs() < 1e-6,
        "{summary:?}"
    );
    // The walks moved the robot.
    let moved: f64 = reports
        .windows(2)
        .map(|w| (w[1].x - w[0].x).hypot(w[1].y - w[0].y))
        .sum();
    assert!(moved > 0.5, "the robot hardly walked: {moved} m");
}

/// What issue 53 asks: the quadruped kept inside a small field (±1.1 m)
/// over many walks, nobody carrying it back. With a second LED 0.1 m
/// along its long axis (the camera sees the heading; the driver learns
/// each gait's move in the body frame on the robot), 24 evaluations by
/// default; `RF_EVALS=100 RF_SEED=k cargo test -p yamor-lifelong --test
/// reset_free homing_keeps -- --nocapture` walks the hundred
/// (about 80 s at time scale 10): on 2026-11-28, seeds 2–6 stayed inside
/// for all 100, seed 1 left after 45 to 56 and seed 4 once after 56 (a
/// chaotic evaluation walking twice its longest, then a homing gait
/// coming out as its mirror image near the edge; docs/experiments.md,
/// "Reset-free"). With one LED (`RF_HEADING_LED=0`) the heading estimated
/// from travel was tens of degrees off and 2 or 3 seeds of 5 left within
/// 24 evaluations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn homing_keeps_the_emulated_quadruped_inside_the_field() {
    let _turn = ONE_ROBOT_AT_A_TIME.lock().await;
    let evaluations = std::env::var("RF_EVALS").map_or(24, |v| v.parse().unwrap());
    let (summary, _, _) = session(evaluations, Knobs::from_env(3)).await;
    assert!(!summary.ever_left, "{summary:?}");
}

/// The quadruped's learnt gait (20 cm/s, straight).
fn learnt() -> RobotConfig {
    RobotConfig::from_xml_str(
        "learnt.xml",
        include_str!("../../examples/robots/quadruped/learnt.xml"),
    )
    .unwrap()
}

/// A walk of 1 robot s of warm-up and a 3-s window.
fn short_walk() -> EvaluationSpec {
    EvaluationSpec {
        warmup: 1.0,
        measure: 3.0,
        sample_interval: 0.5,
        ..EvaluationSpec::default()
    }
}

/// A motor broken on the emulated robot while it runs (nothing said on the
/// serial line) is what the host finds by walking: the learnt gait, 9–12
/// cm/s over these short walks, is slowed by a limp knee to 5–7 cm/s
/// (2026-11-28, three runs; a knee stuck where it stopped slowed it in one
/// run of three only: it depends on the angle it sticks at), and a module
/// the robot does not have is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_motor_broken_while_the_emulated_robot_runs_slows_its_walks() {
    let _turn = ONE_ROBOT_AT_A_TIME.lock().await;
    use yamor_core::evaluation::DefectMode;
    use yamor_lifelong::reset_free::WalkingRobot as _;
    let rig = emulated_quadruped(0.0, 1, 12.0, 0.0).await;
    let (robot, backend) = (&rig.robot, rig.backend.clone() as Arc<dyn Backend>);
    assert!(robot.damage(99, DefectMode::Stuck).is_err());
    let (learnt, spec) = (learnt(), short_walk());
    let mean = |walks: &[f64]| walks.iter().sum::<f64>() / walks.len() as f64;
    let mut intact = Vec::new();
    for _ in 0..3 {
        intact.push(backend.walk(&learnt, &spec).await.unwrap().velocity);
    }
    robot.damage(5, DefectMode::Limp).unwrap();
    let mut broken = Vec::new();
    for _ in 0..3 {
        broken.push(backend.walk(&learnt, &spec).await.unwrap().velocity);
    }
    drop(rig);
    assert!(
        mean(&intact) > 0.06,
        "the learnt gait walks: {intact:?} m/s"
    );
    assert!(
        mean(&broken) < 0.8 * mean(&intact),
        "a limp knee slows it: {broken:?} against {intact:?} m/s"
    );
}

/// A robot carrying a second LED along its long axis: the camera sees
/// which way it faces, and the serial backend reports the heading at each
/// walk's window start and end (and the walk's direction against the long
/// axis, as a simulator does), agreeing with where the emulated robot
/// really faces once it stands still.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_led_shows_which_way_the_robot_faces() {
    let _turn = ONE_ROBOT_AT_A_TIME.lock().await;
    use yamor_core::evaluation::descriptors::{HEADING, YAW_END, YAW_START};
    use yamor_lifelong::reset_free::WalkingRobot as _;
    let rig = emulated_quadruped(0.0, 2, 6.0, 0.1).await;
    let angle = |a: f64, b: f64| ((a - b + 540.0).rem_euclid(360.0) - 180.0).abs();
    let truly = || {
        let seen = rig.robot.observe();
        let second = seen.heading_led.expect("the robot carries a second LED");
        (second[1] - seen.led[1])
            .atan2(second[0] - seen.led[0])
            .to_degrees()
    };
    let first = rig.start.heading.expect("two LEDs seen give a heading");
    assert!(angle(first.to_degrees(), truly()) < 5.0, "{first} rad");
    let backend = rig.backend.clone() as Arc<dyn Backend>;
    let (learnt, spec) = (learnt(), short_walk());
    for _ in 0..2 {
        let walk = backend.walk(&learnt, &spec).await.unwrap();
        let d = &walk.descriptors;
        let (start, end) = (d[YAW_START], d[YAW_END]);
        // The walk's direction against the long axis, from the positions
        // and the heading at the start.
        let travel = (walk.end.y - walk.start.y)
            .atan2(walk.end.x - walk.start.x)
            .to_degrees();
        assert!(angle(d[HEADING], travel - start) < 1e-6, "{d:?}");
        // Standing still after the walk, the robot faces where the camera
        // last saw it face (the motors switch off within a second).
        assert!(end.is_finite(), "{d:?}");
    }
    // At rest after the walks, the camera sees the robot face where it
    // truly faces.
    // Half a pixel of noise on each LED is about 4° at this camera's
    // height: ten frames are averaged (as vectors, for the circle).
    let (mut sin, mut cos) = (0.0, 0.0);
    for _ in 0..10 {
        let fix = rig
            .tracker
            .wait_fresh_async(std::time::Instant::now(), std::time::Duration::from_secs(5))
            .await
            .unwrap();
        let h = fix.heading.expect("both LEDs in view");
        sin += h.sin();
        cos += h.cos();
    }
    let (seen, truth) = (f64::atan2(sin, cos).to_degrees(), truly());
    assert!(
        angle(seen, truth) < 6.0,
        "seen {seen:.0}°, truly {truth:.0}°"
    );
    drop(rig);
}
