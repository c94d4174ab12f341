//! The real-robot path end to end: an organizer schedules a Powell run on a
//! host whose backend drives the emulated robot through a pseudo-terminal
//! with `serialport`, exactly as it would drive the USB dongle, and measures
//! it through an emulated CamApp and the tracker client.

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::{serve_until, temp_dir};
use tokio_stream::StreamExt;
use yamor_camera::PositionSource;
use yamor_camera::camapp::{CamApp, CamAppSettings};
use yamor_camera::model::CameraModel;
use yamor_camera::tracker::Tracker;
use yamor_host_agent::serial::{SerialBackend, SerialSettings};
use yamor_host_agent::{HostService, Registration};
use yamor_organizer::model::{HostState, JobFilter, JobState, RunState};
use yamor_organizer::{Organizer, SchedulerConfig};
use yamor_proto::transport::{ClientSecurity, ServerSecurity};
use yamor_proto::v1 as pb;
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::{EmulatedRobot, EmulationSettings, Observed};
use yamor_sim::{SimSettings, Simulation};

const SCALE: f64 = 10.0;

fn emulated_quadruped() -> EmulatedRobot {
    let robot = ExampleRobot::named("quadruped").unwrap();
    let sim = Simulation::new(&robot.morphology().unwrap(), SimSettings::default()).unwrap();
    EmulatedRobot::spawn(
        sim,
        EmulationSettings {
            time_scale: SCALE,
            join_delay: 1.0,
            message_delay: 0.05,
            missing_ack: 0.3,
            seed: 5,
            ..EmulationSettings::default()
        },
    )
    .unwrap()
}

/// The LED's height on the quadruped's centre module (m).
const LED_HEIGHT: f64 = 0.05;

/// A camera hung high enough to see ±2.5 m: the robot is not put back in
/// the middle between evaluations, and a run of fast gaits walks it well
/// over a metre, out of the default camera's ±1.1 m.
fn camera() -> CameraModel {
    CameraModel {
        height: 6.0,
        ..CameraModel::default()
    }
}

/// The host's backend: the emulated robot's device, and the emulated
/// CamApp watching it through the default camera, read by the tracker.
fn backend(robot: &EmulatedRobot) -> (Arc<SerialBackend>, CamApp) {
    let camapp = CamApp::serve(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        Box::new(robot.led()),
        CamAppSettings {
            model: camera(),
            rate_hz: 50.0,
            ..CamAppSettings::default()
        },
    )
    .unwrap();
    let tracker = Tracker::connect(&camapp.address().to_string(), camera(), LED_HEIGHT);
    let backend = SerialBackend::new(
        SerialSettings {
            time_scale: SCALE,
            join_timeout: 2.0,
            reply_timeout: 1.0,
            ..SerialSettings::new(robot.path())
        },
        Some(Arc::new(tracker) as Arc<dyn PositionSource>),
    )
    .unwrap();
    (Arc::new(backend), camapp)
}

/// Polls the emulator (bounded) until it shows what `done` wants.
async fn wait_for(robot: &EmulatedRobot, what: &str, done: impl Fn(&Observed) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = robot.observe();
        if done(&seen) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {seen:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Serves `service` until `stop` turns true.
async fn serve_host(
    service: Arc<HostService>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> (String, tokio::task::JoinHandle<()>) {
    serve_until(service, async move {
        let _ = stop.wait_for(|s| *s).await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_powell_run_on_the_emulated_robot_through_the_organizer() {
    let dir = temp_dir("powell");
    let organizer = Organizer::open(
        &dir.join("yamor.db"),
        SchedulerConfig::default(),
        ClientSecurity::default(),
        vec![Arc::new(yamor_powell::Powell)],
    )
    .unwrap();
    let robot = emulated_quadruped();
    let (backend, _camapp) = backend(&robot);
    let service = Arc::new(HostService::new("robot", backend));
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let (address, _host) = serve_host(service, stop_rx).await;
    organizer
        .scheduler
        .register_host("robot", &address)
        .await
        .unwrap();

    // One free parameter, the inner amplitude: a short real-world run.
    let gait = ExampleRobot::named("quadruped").unwrap().gait().unwrap();
    let xml = gait.to_xml_string();
    let at = xml.rfind("</yamorconfig>").unwrap();
    let config = format!(
        "{}  <optimize param=\"amplitude_0\" min=\"0.2\" max=\"0.78\"/>\n  <optimize param=\"amplitude_1\" expr=\"amplitude_0()\"/>\n  <optimize param=\"amplitude_2\" expr=\"amplitude_0()\"/>\n  <optimize param=\"amplitude_3\" expr=\"amplitude_0()\"/>\n{}",
        &xml[..at],
        &xml[at..]
    );
    let run = organizer
        .runs
        .start(
            yamor_organizer::grpc::run_spec(pb::StartRunRequest {
                optimizer: "powell".into(),
                settings: [("variant".to_owned(), "interval".to_owned())].into(),
                seed: 1,
                problem: Some(pb::start_run_request::Problem::OptimizationXml(config)),
                spec: Some(pb::EvaluationSpec {
                    warmup_s: 1.0,
                    measure_s: 3.0,
                    ..Default::default()
                }),
                backend: pb::Backend::Real as i32,
                max_evaluations: 6,
                ..Default::default()
            })
            .unwrap(),
        )
        .await
        .unwrap();
    let mut events = organizer.runs.watch(run.id).unwrap();
    let finished = loop {
        let event = tokio::time::timeout(Duration::from_secs(120), events.next())
            .await
            .expect("the run progresses")
            .expect("the run ends before its stream");
        if event.run.state != RunState::Running {
            break event.run;
        }
    };
    assert_eq!(finished.evaluations, 6, "{finished:?}");
    assert!(finished.error.is_empty(), "{}", finished.error);
    organizer.scheduler.store().sync().await.unwrap();
    let jobs = organizer
        .scheduler
        .store()
        .jobs(&JobFilter {
            run_id: Some(run.id),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(jobs.len(), 6);
    assert!(
        jobs.iter()
            .all(|j| j.host == "robot" && j.fitness().is_some()),
        "{jobs:?}"
    );
    assert!(
        finished.best_velocity.unwrap() > 0.02,
        "the quadruped walks on the emulated robot: {finished:?}"
    );
    wait_for(&robot, "motors off between and after walks", |o| {
        o.motors_on.is_empty()
    })
    .await;
    let seen = robot.observe();
    assert_eq!(seen.network, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
}

/// Turns every motor on through a session (which, unlike an evaluation,
/// leaves them on) and returns the host's client.
async fn motors_on_through_a_session(address: &str, robot: &EmulatedRobot) {
    let channel = yamor_proto::transport::channel(address, &ClientSecurity::default()).unwrap();
    let mut client = pb::host_agent_client::HostAgentClient::new(channel);
    client
        .open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap();
    let gait = ExampleRobot::named("quadruped").unwrap().gait().unwrap();
    client
        .connect_robot(pb::ConnectRobotRequest {
            config_xml: gait.to_xml_string(),
        })
        .await
        .unwrap();
    wait_for(robot, "motors on", |o| o.motors_on.len() == 9).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn motors_go_off_when_the_host_stops_or_loses_its_organizer() {
    // The host stops.
    let robot = emulated_quadruped();
    let (backend_1, _camapp_1) = backend(&robot);
    let service = Arc::new(HostService::new("robot", backend_1));
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let (address, host) = serve_host(service, stop_rx).await;
    motors_on_through_a_session(&address, &robot).await;
    stop.send(true).unwrap();
    host.await.unwrap();
    wait_for(&robot, "motors off after the host stopped", |o| {
        o.motors_on.is_empty()
    })
    .await;
    drop(robot);

    // The organizer goes away while the host keeps serving.
    let robot = emulated_quadruped();
    let dir = temp_dir("lost");
    let organizer = Organizer::open(
        &dir.join("yamor.db"),
        SchedulerConfig::default(),
        ClientSecurity::default(),
        vec![],
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let organizer_url = format!("http://{}", listener.local_addr().unwrap());
    let (organizer_stop, mut organizer_stop_rx) = tokio::sync::watch::channel(false);
    let organizer_task = tokio::spawn(yamor_organizer::serve(
        listener,
        organizer.clone(),
        ServerSecurity::default(),
        async move {
            let _ = organizer_stop_rx.wait_for(|s| *s).await;
        },
    ));
    let (backend_2, _camapp_2) = backend(&robot);
    let service = Arc::new(HostService::new("robot", backend_2));
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let (address, _host) = serve_host(service.clone(), stop_rx).await;
    let lost = Arc::new(AtomicBool::new(false));
    {
        let (service, lost) = (service.clone(), lost.clone());
        tokio::spawn(yamor_host_agent::keep_registered_or(
            Registration {
                organizer: organizer_url,
                security: ClientSecurity::default(),
                name: "robot".into(),
                address: address.clone(),
                follow_route: false,
            },
            std::future::pending(),
            move || {
                lost.store(true, std::sync::atomic::Ordering::Relaxed);
                let service = service.clone();
                tokio::spawn(async move { service.halt().await });
            },
        ));
    }
    // Registered: the organizer lists the host.
    let deadline = Instant::now() + Duration::from_secs(10);
    while organizer.scheduler.hosts().is_empty() {
        assert!(Instant::now() < deadline, "the host never registered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    motors_on_through_a_session(&address, &robot).await;
    organizer_stop.send(true).unwrap();
    let _ = organizer_task.await;
    drop(organizer);
    wait_for(&robot, "motors off after the organizer went away", |o| {
        o.motors_on.is_empty()
    })
    .await;
    assert!(lost.load(std::sync::atomic::Ordering::Relaxed));
}

/// Serves `backend` as a host that an organizer with a lease several times
/// shorter than the walk (heartbeats every 100 ms, lease 500 ms) knows by
/// hand, so the organizer probes it with `GetInfo` every heartbeat interval;
/// submits `request` and probes the host with `GetInfo` from outside as
/// well until the job ends. Every probe must answer within a second, the
/// host must never be down and the job must complete on its first attempt.
/// Returns how many probes the host answered while it was busy walking.
async fn probe_during_a_long_walk(
    name: &str,
    backend: Arc<dyn yamor_host_agent::Backend>,
    request: yamor_organizer::model::JobRequest,
) -> usize {
    let organizer = Organizer::open(
        &temp_dir(name).join("yamor.db"),
        SchedulerConfig {
            heartbeat_interval: Duration::from_millis(100),
            lease: Duration::from_millis(500),
            ..SchedulerConfig::default()
        },
        ClientSecurity::default(),
        vec![],
    )
    .unwrap();
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let (address, _host) = serve_host(Arc::new(HostService::new(name, backend)), stop_rx).await;
    organizer
        .scheduler
        .register_host(name, &address)
        .await
        .unwrap();
    let mut jobs = organizer.scheduler.subscribe_jobs();
    let id = organizer
        .scheduler
        .submit("test", 0, vec![(0, request)])
        .await
        .unwrap()[0];
    let channel = yamor_proto::transport::channel(&address, &ClientSecurity::default()).unwrap();
    let mut host = pb::host_agent_client::HostAgentClient::new(channel);
    let mut pace = tokio::time::interval(Duration::from_millis(200));
    let mut answered_busy = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let finished = loop {
        tokio::select! {
            event = jobs.recv() => {
                let job = event.expect("the job stream stays open");
                if job.id == id && !matches!(job.state, JobState::Queued | JobState::Running) {
                    break job;
                }
            }
            _ = pace.tick() => {
                assert!(tokio::time::Instant::now() < deadline, "the walk never ended");
                let states: Vec<HostState> =
                    organizer.scheduler.hosts().iter().map(|h| h.state).collect();
                assert!(!states.contains(&HostState::Down), "the walking host was marked down");
                let info = tokio::time::timeout(
                    Duration::from_secs(1),
                    host.get_info(pb::GetInfoRequest::default()),
                )
                .await
                .expect("GetInfo answers within a second while the robot walks")
                .unwrap()
                .into_inner();
                if info.busy {
                    answered_busy += 1;
                }
            }
        }
    };
    assert_eq!(finished.state, JobState::Done, "{}", finished.error);
    assert_eq!(finished.attempts, 1, "the job was re-queued: {finished:?}");
    assert_eq!(organizer.scheduler.metrics().jobs_retried.get(), 0);
    answered_busy
}

/// A quadruped gait walk of `warmup` + `measure` seconds on any host of `backend`.
fn walk(
    backend: yamor_core::evaluation::BackendKind,
    warmup: f64,
    measure: f64,
) -> yamor_organizer::model::JobRequest {
    yamor_organizer::model::JobRequest {
        job: yamor_core::evaluation::EvaluationJob {
            gait: Some(ExampleRobot::named("quadruped").unwrap().gait().unwrap()),
            spec: yamor_core::evaluation::EvaluationSpec {
                warmup,
                measure,
                ..Default::default()
            },
            ..Default::default()
        },
        backend: Some(backend),
        max_attempts: 3,
        timeout: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walking_real_robot_answers_probes_and_keeps_its_lease() {
    let robot = emulated_quadruped();
    let (backend, _camapp) = backend(&robot);
    // 30 robot seconds at ten times real time: a 3-s walk, six leases.
    let walk = walk(yamor_core::evaluation::BackendKind::Real, 5.0, 25.0);
    let busy = probe_during_a_long_walk("long-walk", backend, walk).await;
    assert!(
        busy >= 5,
        "only {busy} probes reached the host while it walked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulation_host_on_a_long_walk_answers_probes_and_keeps_its_lease() {
    let backend = yamor_families::sim_backend("quadruped", SimSettings::default()).unwrap();
    // Ten minutes of virtual walking: seconds of wall time, many leases.
    let walk = walk(yamor_core::evaluation::BackendKind::Simulation, 8.0, 600.0);
    let busy = probe_during_a_long_walk("long-sim-walk", Arc::new(backend), walk).await;
    assert!(
        busy >= 3,
        "only {busy} probes reached the host while it walked"
    );
}
