//! The real-robot backend against the emulated robot behind a
//! pseudo-terminal: the backend opens the device with `serialport` exactly
//! as it would a USB adapter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use yamor_camera::{PositionSource, TrackerError};
use yamor_core::RobotConfig;
use yamor_host_agent::backend::{EvaluationJob, EvaluationSpec};
use yamor_host_agent::serial::{SerialBackend, SerialSettings};
use yamor_host_agent::{Backend, HostError, RobotSource};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::{EmulatedRobot, EmulationSettings, Observed};
use yamor_sim::{SimSettings, Simulation};

/// Robot seconds per wall second in these tests.
const SCALE: f64 = 10.0;

fn quadruped() -> (Simulation, RobotConfig) {
    let robot = ExampleRobot::named("quadruped").unwrap();
    let sim = Simulation::new(&robot.morphology().unwrap(), SimSettings::default()).unwrap();
    (sim, robot.gait().unwrap())
}

fn emulate(settings: EmulationSettings) -> (EmulatedRobot, RobotConfig) {
    let (sim, gait) = quadruped();
    let robot = EmulatedRobot::spawn(
        sim,
        EmulationSettings {
            time_scale: SCALE,
            ..settings
        },
    )
    .unwrap();
    (robot, gait)
}

fn settings(robot: &EmulatedRobot) -> SerialSettings {
    SerialSettings {
        time_scale: SCALE,
        ..SerialSettings::new(robot.path())
    }
}

/// The emulator's own LED position: a perfect tracker.
struct Led(Box<dyn Fn() -> Option<[f64; 3]> + Send + Sync>);

impl PositionSource for Led {
    fn fix_after(&self, _after: Instant, timeout: Duration) -> Result<(f64, f64), TrackerError> {
        let [x, y, _] = (self.0)().ok_or_else(|| TrackerError::NoFix {
            address: "the test's LED".into(),
            seconds: timeout.as_secs_f64(),
        })?;
        Ok((x, y))
    }
}

/// Waits (bounded) until the emulator shows what `done` wants.
fn wait_for(robot: &EmulatedRobot, what: &str, done: impl Fn(&Observed) -> bool) -> Observed {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = robot.observe();
        if done(&seen) {
            return seen;
        }
        assert!(Instant::now() < deadline, "{what}: {seen:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn ids(gait: &RobotConfig) -> Vec<u32> {
    let mut ids: Vec<u32> = gait.modules.iter().map(|m| m.id).collect();
    ids.sort_unstable();
    ids
}

#[test]
fn connect_builds_the_network_and_switches_everything_on_then_off() {
    let (robot, gait) = emulate(EmulationSettings {
        missing_ack: 0.4,
        seed: 3,
        ..Default::default()
    });
    let backend = SerialBackend::new(settings(&robot), None).unwrap();
    let never = AtomicBool::new(false);
    backend.robot().program(&gait, &never).unwrap();
    let all = ids(&gait);
    let seen = wait_for(&robot, "every motor on", |o| o.motors_on == all);
    assert_eq!(seen.network, all, "every module joined");
    assert!(seen.lost_acks > 0, "the 5.5.4 bug happened: {seen:?}");
    assert_eq!(
        backend.robot().stats().silent_joins,
        seen.lost_acks,
        "each lost acknowledgement was resolved by a state query"
    );
    // Programming the same gait again sends only the motor switches.
    let before = backend.robot().stats().requests;
    backend.robot().program(&gait, &never).unwrap();
    assert_eq!(backend.robot().stats().requests - before, all.len() as u64);
    backend.halt();
    wait_for(&robot, "every motor off", |o| o.motors_on.is_empty());
}

#[test]
fn a_noisy_line_costs_retries_not_results() {
    let (robot, gait) = emulate(EmulationSettings {
        missing_ack: 0.3,
        corrupt_frame: 0.15,
        drop_byte: 0.15,
        message_delay: 0.2,
        join_delay: 1.0,
        seed: 11,
        ..Default::default()
    });
    let backend = SerialBackend::new(
        SerialSettings {
            reply_timeout: 1.0,
            join_timeout: 2.0,
            retries: 8,
            ..settings(&robot)
        },
        None,
    )
    .unwrap();
    let never = AtomicBool::new(false);
    backend.robot().program(&gait, &never).unwrap();
    let all = ids(&gait);
    let seen = wait_for(&robot, "every motor on", |o| o.motors_on == all);
    let stats = backend.robot().stats();
    assert!(stats.retries > 0, "noise forced retries: {stats:?}");
    assert!(
        stats.discarded > 0 || seen.garbage > 0,
        "corrupt frames were seen and dropped: {stats:?} {seen:?}"
    );
    assert_eq!(seen.network, all);
}

#[test]
fn an_unknown_module_is_a_clear_error_not_a_hang() {
    let (robot, mut gait) = emulate(EmulationSettings {
        message_delay: 0.2,
        join_delay: 1.0,
        missing_ack: 0.0,
        ..Default::default()
    });
    // Module 8 is told to connect to a module the robot does not have.
    let last = gait.modules.iter_mut().find(|m| m.id == 8).unwrap();
    last.bluetooth_to = Some(42);
    let mut extra = last.clone();
    extra.id = 42;
    extra.bluetooth_to = None;
    extra.cpg_links.clear();
    gait.modules.push(extra);
    let backend = SerialBackend::new(settings(&robot), None).unwrap();
    let never = AtomicBool::new(false);
    let error = backend.robot().program(&gait, &never).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("module 8 refused to connect to module 42"),
        "{text}"
    );
}

#[test]
fn a_silent_module_fails_naming_it() {
    // The dongle talks to module 0, but the configuration's tree starts at
    // 4: module 4 is never reached.
    let (robot, gait) = emulate(EmulationSettings {
        message_delay: 0.2,
        join_delay: 1.0,
        missing_ack: 0.0,
        master: Some(0),
        ..Default::default()
    });
    let backend = SerialBackend::new(
        SerialSettings {
            reply_timeout: 0.5,
            join_timeout: 2.0,
            retries: 1,
            ..settings(&robot)
        },
        None,
    )
    .unwrap();
    let never = AtomicBool::new(false);
    let error = backend.robot().program(&gait, &never).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("module 4 did not answer"), "{text}");
    assert!(matches!(error, HostError::Failed(_)), "{error:?}");
}

fn walk_job(gait: &RobotConfig) -> EvaluationJob {
    EvaluationJob {
        robot: RobotSource::Default,
        gait: Some(gait.clone()),
        parameters: vec![],
        spec: EvaluationSpec {
            warmup: 2.0,
            measure: 6.0,
            sample_interval: 1.0,
            ..EvaluationSpec::default()
        },
        ..EvaluationJob::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_measures_velocity_and_stops_the_motors() {
    let (robot, gait) = emulate(EmulationSettings {
        message_delay: 0.1,
        join_delay: 0.5,
        missing_ack: 0.0,
        ..Default::default()
    });
    let backend =
        SerialBackend::new(settings(&robot), Some(Arc::new(Led(Box::new(robot.led()))))).unwrap();
    let outcome = backend
        .evaluate(walk_job(&gait), Arc::new(AtomicBool::new(false)))
        .await
        .unwrap();
    let outcome = outcome.walk().expect("a robot answers with a walk").clone();
    // A 6-s window of the reference gait, from whatever state the
    // emulated start leaves it in, walks anywhere from 1.8 to 13 cm/s
    // (walking is chaotic); a robot whose motors never started creeps
    // under 0.01 cm/s.
    assert!(
        outcome.velocity > 0.005,
        "the reference gait walks: {outcome:?}"
    );
    assert!(outcome.sample_count >= 7, "{outcome:?}");
    assert!(
        (outcome.end.t - outcome.start.t - 6.0).abs() < 1.5,
        "{outcome:?}"
    );
    wait_for(&robot, "motors off after the walk", |o| {
        o.motors_on.is_empty()
    });
}

/// A bound no walk reaches: the real robot stops at the first checkpoint,
/// a quarter into its measured window, reports its partial velocity as
/// stopped early, and switches its motors off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hopeless_walk_on_the_robot_stops_at_its_first_checkpoint() {
    let (robot, gait) = emulate(EmulationSettings {
        message_delay: 0.1,
        join_delay: 0.5,
        missing_ack: 0.0,
        ..Default::default()
    });
    let backend =
        SerialBackend::new(settings(&robot), Some(Arc::new(Led(Box::new(robot.led()))))).unwrap();
    let mut job = walk_job(&gait);
    job.spec.early_stop = Some(yamor_core::evaluation::EarlyStop {
        min_velocity: vec![Some(100.0), None],
    });
    let outcome = backend
        .evaluate(job, Arc::new(AtomicBool::new(false)))
        .await
        .unwrap();
    let outcome = outcome.walk().expect("a robot answers with a walk").clone();
    assert_eq!(outcome.stopped_early, Some(0), "{outcome:?}");
    assert_eq!(outcome.partial_velocities.len(), 1);
    assert_eq!(outcome.velocity, outcome.partial_velocities[0]);
    // A quarter of the 6-s window, not all of it.
    let measured = outcome.end.t - outcome.start.t;
    assert!(
        (measured - 1.5).abs() < 0.75,
        "{measured} s measured: {outcome:?}"
    );
    wait_for(&robot, "motors off after the stopped walk", |o| {
        o.motors_on.is_empty()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_walk_switches_every_motor_off() {
    let (robot, gait) = emulate(EmulationSettings {
        message_delay: 0.1,
        join_delay: 0.5,
        missing_ack: 0.0,
        ..Default::default()
    });
    let robot = Arc::new(robot);
    let backend =
        SerialBackend::new(settings(&robot), Some(Arc::new(Led(Box::new(robot.led()))))).unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    let mut job = walk_job(&gait);
    job.spec.measure = 600.0;
    let all = ids(&gait);
    let watcher = {
        let (robot, cancel) = (robot.clone(), cancel.clone());
        std::thread::spawn(move || {
            wait_for(&robot, "walking", |o| o.motors_on == all);
            cancel.store(true, Ordering::Relaxed);
        })
    };
    let result = backend.evaluate(job, cancel).await;
    watcher.join().unwrap();
    assert!(matches!(result, Err(HostError::Cancelled)), "{result:?}");
    wait_for(&robot, "motors off after cancel", |o| {
        o.motors_on.is_empty()
    });
}

/// The first walk builds the Bluetooth network (tens of robot seconds with
/// the real robot's timing) and is measured through the emulated CamApp
/// and the tracker, as `yamor emulate --camapp` and `yamor host --serial
/// --camapp` run it: its first LED fix must come, not time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_walk_after_building_the_network_gets_its_first_fix() {
    use yamor_camera::camapp::{CamApp, CamAppSettings};
    use yamor_camera::{CameraModel, LED_HEIGHT, Tracker};
    let (robot, gait) = emulate(EmulationSettings {
        seed: 1,
        ..Default::default()
    });
    let camapp = CamApp::serve(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        Box::new(robot.led()),
        CamAppSettings::default(),
    )
    .unwrap();
    let tracker = Tracker::connect(
        &camapp.address().to_string(),
        CameraModel::default(),
        LED_HEIGHT,
    );
    let backend = SerialBackend::new(settings(&robot), Some(Arc::new(tracker))).unwrap();
    let outcome = backend
        .evaluate(walk_job(&gait), Arc::new(AtomicBool::new(false)))
        .await
        .expect("the first walk is measured on its first attempt");
    let walk = outcome.walk().unwrap();
    assert!(walk.sample_count >= 7, "{walk:?}");
    drop(camapp);
}
