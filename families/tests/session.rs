//! The IYaMoRHost3 session surface over a real socket: the simulated
//! quadruped, and a recording robot that shows exactly which SNP messages
//! and supervisor commands a session sends.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tonic::Code;
use yamor_core::{Connection, Connector, ModuleId, RobotConfig};
use yamor_families::sim_backend;
use yamor_host_agent::backend::{BoxFuture, CancelFlag, Sample};
use yamor_host_agent::session::{Clock, RobotLink, SessionFactory, Supervisor, SystemClock};
use yamor_host_agent::{Backend, BackendKind, EvaluationJob, HostError, HostService, Outcome};
use yamor_proto::transport::{AuthChannel, ClientSecurity, ServerSecurity, channel};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;
use yamor_sim::SimSettings;
use yamor_sim::robots::ExampleRobot;
use yamor_snp::{DefectMode, SnpMessage, WireLink, flags};

type Client = HostAgentClient<AuthChannel>;

async fn serve(backend: Arc<dyn Backend>) -> Client {
    serve_with_clock(backend, Arc::new(SystemClock)).await
}

/// A wall clock that only moves when asked to sleep, and remembers how long.
#[derive(Default)]
struct FakeClock {
    origin: OnceLock<Instant>,
    sleeps: Mutex<Vec<Duration>>,
}

impl FakeClock {
    fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.lock().unwrap().clone()
    }

    fn slept(&self) -> Duration {
        self.sleeps().iter().sum()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        *self.origin.get_or_init(Instant::now) + self.slept()
    }

    fn sleep(&self, duration: Duration) {
        self.sleeps.lock().unwrap().push(duration);
    }
}

async fn serve_with_clock(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>) -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(yamor_host_agent::serve(
        listener,
        Arc::new(HostService::with_clock("test", backend, clock)),
        ServerSecurity::default(),
        std::future::pending(),
    ));
    HostAgentClient::new(channel(&url, &ClientSecurity::default()).unwrap())
}

async fn quadruped_host() -> Client {
    serve(Arc::new(
        sim_backend("quadruped", SimSettings::default()).unwrap(),
    ))
    .await
}

fn gait() -> String {
    ExampleRobot::named("quadruped")
        .unwrap()
        .gait_xml
        .to_owned()
}

fn open_quadruped() -> pb::OpenSimulationRequest {
    pb::OpenSimulationRequest {
        robot: Some(pb::Robot {
            source: Some(pb::robot::Source::Example("quadruped".into())),
        }),
        ..Default::default()
    }
}

/// A quadruped host with the reference gait connected.
async fn walking_quadruped() -> Client {
    let mut h = quadruped_host().await;
    h.open_simulation(open_quadruped()).await.unwrap();
    let state = h
        .connect_robot(pb::ConnectRobotRequest { config_xml: gait() })
        .await
        .unwrap()
        .into_inner();
    assert!(state.open && state.connected && state.simulation_mode);
    h
}

async fn sleep(h: &mut Client, seconds: f64) -> pb::SessionState {
    h.sleep(pb::SleepRequest {
        seconds,
        clock: pb::Clock::Virtual as i32,
    })
    .await
    .unwrap()
    .into_inner()
}

async fn state(h: &mut Client) -> pb::SessionState {
    h.get_state(pb::GetStateRequest {})
        .await
        .unwrap()
        .into_inner()
}

async fn module(h: &mut Client, id: u32) -> pb::ModuleParameters {
    h.get_module(pb::GetModuleRequest { id })
        .await
        .unwrap()
        .into_inner()
}

fn planar(a: &pb::SessionState, b: &pb::SessionState) -> f64 {
    let (p, q) = (a.position.unwrap(), b.position.unwrap());
    (p.x - q.x).hypot(p.y - q.y)
}

#[track_caller]
fn refused(result: Result<impl std::fmt::Debug, tonic::Status>, code: Code, words: &[&str]) {
    let err = result.unwrap_err();
    assert_eq!(err.code(), code, "{}", err.message());
    for word in words {
        assert!(
            err.message().contains(word),
            "{:?} does not mention {word:?}",
            err.message()
        );
    }
}

// ---------------------------------------------------------------------------
// The simulated quadruped
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_need_an_open_simulation_and_a_connected_robot() {
    let mut h = quadruped_host().await;
    let closed = state(&mut h).await;
    assert!(!closed.open && !closed.connected && closed.simulation_mode);
    refused(
        h.sleep(pb::SleepRequest {
            seconds: 1.0,
            clock: 0,
        })
        .await,
        Code::FailedPrecondition,
        &["no simulation is open", "OpenSimulation"],
    );
    refused(
        h.connect_robot(pb::ConnectRobotRequest { config_xml: gait() })
            .await,
        Code::FailedPrecondition,
        &["OpenSimulation"],
    );
    refused(
        h.drop_robot(pb::DropRobotRequest::default()).await,
        Code::FailedPrecondition,
        &["OpenSimulation"],
    );
    h.open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap();
    refused(
        h.list_modules(pb::ListModulesRequest {}).await,
        Code::FailedPrecondition,
        &["ConnectRobot"],
    );
    refused(
        h.flush(pb::FlushRequest {}).await,
        Code::FailedPrecondition,
        &["ConnectRobot"],
    );
    refused(
        h.open_simulation(pb::OpenSimulationRequest {
            robot: Some(pb::Robot {
                source: Some(pb::robot::Source::Example("octopus".into())),
            }),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        &["octopus", "quadruped"],
    );
    // The failed open left the world that was open.
    assert!(state(&mut h).await.open);
    let closed = h
        .close_simulation(pb::CloseSimulationRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(!closed.open && !closed.connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quadruped_walks_and_stops_when_zero_amplitudes_are_flushed() {
    let mut h = walking_quadruped().await;
    let start = state(&mut h).await;
    assert_eq!(start.elapsed_s, 0.0);
    let a = sleep(&mut h, 10.0).await;
    assert!((a.elapsed_s - 10.0).abs() < 0.02, "{}", a.elapsed_s);
    let walked = planar(&start, &a);
    assert!(walked > 0.05, "walked {walked} m in 10 s");
    let b = sleep(&mut h, 3.0).await;
    let walking = planar(&a, &b);

    let modules = h
        .list_modules(pb::ListModulesRequest {})
        .await
        .unwrap()
        .into_inner()
        .modules;
    assert_eq!(modules.len(), 9);
    for m in &modules {
        let set = h
            .set_module(pb::SetModuleRequest {
                id: m.id,
                amplitude: Some(0.0),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(set.amplitude, 0.0);
    }
    // The centre module had amplitude 0 already: 8 parameter messages wait.
    assert_eq!(state(&mut h).await.pending_changes, 8);
    let flushed = h.flush(pb::FlushRequest {}).await.unwrap().into_inner();
    assert_eq!(flushed.pending_changes, 0);
    sleep(&mut h, 2.0).await;
    let settled = state(&mut h).await;
    let still = sleep(&mut h, 3.0).await;
    let drifting = planar(&settled, &still);
    assert!(
        drifting < walking / 5.0,
        "still moved {drifting} m in 3 s (walking: {walking} m)"
    );

    // Refresh resends the host copy: zero amplitudes, so the robot stays put.
    let refreshed = h.refresh(pb::RefreshRequest {}).await.unwrap().into_inner();
    assert_eq!(refreshed.pending_changes, 0);
    assert_eq!(module(&mut h, 0).await.amplitude, 0.0);
    let after = sleep(&mut h, 2.0).await;
    assert!(planar(&still, &after) < walking / 5.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_values_and_unknown_modules_are_refused_and_change_nothing() {
    let mut h = walking_quadruped().await;
    let before = module(&mut h, 0).await;
    for (request, field) in [
        (
            pb::SetModuleRequest {
                amplitude: Some(-1.0),
                ..Default::default()
            },
            "amplitude",
        ),
        (
            pb::SetModuleRequest {
                offset: Some(f64::NAN),
                ..Default::default()
            },
            "offset",
        ),
        (
            pb::SetModuleRequest {
                speed: Some(1000.0),
                ..Default::default()
            },
            "speed",
        ),
        (
            pb::SetModuleRequest {
                amplitude: Some(0.1),
                max_angle: Some(3.0),
                ..Default::default()
            },
            "max_angle",
        ),
        (
            pb::SetModuleRequest {
                min_angle: Some(0.5),
                max_angle: Some(0.2),
                ..Default::default()
            },
            "min_angle",
        ),
    ] {
        refused(
            h.set_module(request).await,
            Code::InvalidArgument,
            &[field, "module 0"],
        );
    }
    assert_eq!(module(&mut h, 0).await, before);
    assert_eq!(state(&mut h).await.pending_changes, 0);

    refused(
        h.get_module(pb::GetModuleRequest { id: 42 }).await,
        Code::InvalidArgument,
        &["42"],
    );
    refused(
        h.set_module(pb::SetModuleRequest {
            id: 42,
            amplitude: Some(0.1),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        &["42"],
    );
    refused(
        h.set_coupling(pb::SetCouplingRequest {
            from: 0,
            to: 42,
            phase: Some(1.0),
            weight: None,
        })
        .await,
        Code::InvalidArgument,
        &["42"],
    );
    refused(
        h.send_control_message(pb::ControlMessageRequest {
            module_id: Some(42),
            motor: Some(true),
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
        &["42"],
    );
    refused(
        h.set_defect(pb::SetDefectRequest {
            module_id: 42,
            mode: pb::DefectMode::Limp as i32,
        })
        .await,
        Code::InvalidArgument,
        &["42"],
    );

    // Configurations: malformed XML, a bad value, a module the world lacks.
    refused(
        h.connect_robot(pb::ConnectRobotRequest {
            config_xml: "<yamorconfig>".into(),
        })
        .await,
        Code::InvalidArgument,
        &["config_xml"],
    );
    let bad_value = gait().replacen("amplitude=\"0.7\"", "amplitude=\"seven\"", 1);
    let line = 1 + gait()
        .lines()
        .position(|l| l.contains("amplitude=\"0.7\""))
        .unwrap();
    refused(
        h.connect_robot(pb::ConnectRobotRequest {
            config_xml: bad_value,
        })
        .await,
        Code::InvalidArgument,
        &[
            &format!("config_xml:{line}: <module>"),
            "amplitude",
            "seven",
        ],
    );
    let out_of_range = gait().replacen("amplitude=\"0.7\"", "amplitude=\"5\"", 1);
    refused(
        h.connect_robot(pb::ConnectRobotRequest {
            config_xml: out_of_range,
        })
        .await,
        Code::InvalidArgument,
        &["module 0", "amplitude"],
    );
    let ghost = gait()
        .replace("id=\"8\"", "id=\"42\"")
        .replace("to=\"8\"", "to=\"42\"");
    refused(
        h.connect_robot(pb::ConnectRobotRequest { config_xml: ghost })
            .await,
        Code::InvalidArgument,
        &["unknown module id 42"],
    );
    // Still connected with the reference gait.
    let s = state(&mut h).await;
    assert!(s.connected);
    assert_eq!(module(&mut h, 0).await, before);

    refused(
        h.sleep(pb::SleepRequest {
            seconds: -1.0,
            clock: 0,
        })
        .await,
        Code::InvalidArgument,
        &["seconds"],
    );
    refused(
        h.set_ground_friction(pb::SetGroundFrictionRequest { friction: -1.0 })
            .await,
        Code::InvalidArgument,
        &["friction"],
    );
    refused(
        h.drop_robot(pb::DropRobotRequest {
            height_m: f64::NAN,
            upside_down: false,
        })
        .await,
        Code::InvalidArgument,
        &["height"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn couplings_are_listed_set_and_removed() {
    let mut h = walking_quadruped().await;
    let all = h
        .list_couplings(pb::ListCouplingsRequest {})
        .await
        .unwrap()
        .into_inner()
        .couplings;
    assert_eq!(all.len(), 14);
    let first = all.iter().find(|c| c.from == 0 && c.to == 1).unwrap();
    assert_eq!(first.phase, std::f64::consts::FRAC_PI_2);
    let c = h
        .set_coupling(pb::SetCouplingRequest {
            from: 0,
            to: 1,
            phase: Some(0.25),
            weight: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((c.from, c.to, c.phase, c.weight), (0, 1, 0.25, 1.0));
    let added = h
        .set_coupling(pb::SetCouplingRequest {
            from: 5,
            to: 6,
            phase: Some(0.5),
            weight: Some(2.0),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((added.phase, added.weight), (0.5, 2.0));
    // One CPG-structure message for each of modules 0 and 5.
    assert_eq!(state(&mut h).await.pending_changes, 2);
    let all = h
        .list_couplings(pb::ListCouplingsRequest {})
        .await
        .unwrap()
        .into_inner()
        .couplings;
    assert_eq!(all.len(), 15);
    assert!(all.contains(&added));
    refused(
        h.set_coupling(pb::SetCouplingRequest {
            from: 0,
            to: 1,
            phase: Some(f64::INFINITY),
            weight: None,
        })
        .await,
        Code::InvalidArgument,
        &["phase"],
    );
    assert_eq!(
        h.flush(pb::FlushRequest {})
            .await
            .unwrap()
            .into_inner()
            .pending_changes,
        0
    );
    let none = h
        .remove_all_couplings(pb::RemoveAllCouplingsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(none.couplings.is_empty());
    // Every module but the centre had couplings.
    assert_eq!(state(&mut h).await.pending_changes, 8);
    h.flush(pb::FlushRequest {}).await.unwrap();
    sleep(&mut h, 1.0).await;
}

/// The reference gait written with real ids: each hip swaps its id with the
/// knee it carries (0↔5, 1↔6, 2↔7, 3↔8), and the mapping undoes the swap.
fn swapped_gait() -> (String, pb::IdMapping) {
    let swap = |id: ModuleId| match id {
        0..=3 => id + 5,
        5..=8 => id - 5,
        other => other,
    };
    let mut config = RobotConfig::from_xml_str("gait", &gait()).unwrap();
    for m in &mut config.modules {
        m.id = swap(m.id);
        m.bluetooth_to = m.bluetooth_to.map(swap);
        for l in &mut m.cpg_links {
            l.to = swap(l.to);
        }
    }
    let mapping = pb::IdMapping {
        real_to_sim: (0..=8)
            .filter(|&id| id != 4)
            .map(|id| (id, swap(id)))
            .collect(),
    };
    (config.to_xml_string(), mapping)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_id_mapping_translates_real_ids_to_simulation_ids() {
    let (real_gait, mapping) = swapped_gait();
    let mut mapped = quadruped_host().await;
    assert!(
        mapped
            .get_id_mapping(pb::GetIdMappingRequest {})
            .await
            .unwrap()
            .into_inner()
            .real_to_sim
            .is_empty()
    );
    mapped.set_id_mapping(mapping.clone()).await.unwrap();
    assert_eq!(
        mapped
            .get_id_mapping(pb::GetIdMappingRequest {})
            .await
            .unwrap()
            .into_inner(),
        mapping
    );
    refused(
        mapped
            .set_id_mapping(pb::IdMapping {
                real_to_sim: [(1, 0), (2, 0)].into(),
            })
            .await,
        Code::InvalidArgument,
        &["1 and 2", "simulation id 0"],
    );
    refused(
        mapped
            .set_id_mapping(pb::IdMapping {
                real_to_sim: [(1, 300)].into(),
            })
            .await,
        Code::InvalidArgument,
        &["300"],
    );
    // The refused mappings changed nothing.
    assert_eq!(
        mapped
            .get_id_mapping(pb::GetIdMappingRequest {})
            .await
            .unwrap()
            .into_inner(),
        mapping
    );
    mapped.open_simulation(open_quadruped()).await.unwrap();
    mapped
        .connect_robot(pb::ConnectRobotRequest {
            config_xml: real_gait,
        })
        .await
        .unwrap();
    // Real module 5 is the simulation's hip 0 and carries the hip's parameters.
    let hip = module(&mut mapped, 5).await;
    assert_eq!((hip.id, hip.amplitude, hip.offset), (5, 0.7, 0.0));
    let knee = module(&mut mapped, 0).await;
    assert_eq!((knee.amplitude, knee.offset), (0.6, -0.7));
    refused(
        mapped.set_id_mapping(pb::IdMapping::default()).await,
        Code::FailedPrecondition,
        &["open", "CloseSimulation"],
    );

    // The same robot, unmapped: the walks are identical, so every message
    // reached the module it was meant for.
    let mut plain = walking_quadruped().await;
    let a = sleep(&mut mapped, 4.0).await;
    let b = sleep(&mut plain, 4.0).await;
    assert!(planar(&a, &b) < 1e-6, "{a:?} vs {b:?}");
    assert!(planar(&a, &state(&mut mapped).await) < 1e-9);

    // A parameter change addressed by real id reaches the mapped module.
    for h in [&mut mapped, &mut plain] {
        h.set_defect(pb::SetDefectRequest {
            module_id: 1,
            mode: pb::DefectMode::Stuck as i32,
        })
        .await
        .unwrap();
    }
    mapped
        .set_module(pb::SetModuleRequest {
            id: 5,
            amplitude: Some(0.3),
            ..Default::default()
        })
        .await
        .unwrap();
    plain
        .set_module(pb::SetModuleRequest {
            id: 0,
            amplitude: Some(0.3),
            ..Default::default()
        })
        .await
        .unwrap();
    mapped.flush(pb::FlushRequest {}).await.unwrap();
    plain.flush(pb::FlushRequest {}).await.unwrap();
    // Real 1 is simulation 6 when mapped and simulation 1 when not: the walks part.
    let a = sleep(&mut mapped, 2.0).await;
    let b = sleep(&mut plain, 2.0).await;
    assert!(planar(&a, &b) > 1e-4, "{a:?} vs {b:?}");

    // Closed, the mapping is a setting again.
    mapped
        .close_simulation(pb::CloseSimulationRequest {})
        .await
        .unwrap();
    mapped
        .set_id_mapping(pb::IdMapping::default())
        .await
        .unwrap();

    // An unmapped real id whose simulation id another real id took is ambiguous.
    let mut h = quadruped_host().await;
    h.set_id_mapping(pb::IdMapping {
        real_to_sim: [(100, 0)].into(),
    })
    .await
    .unwrap();
    h.open_simulation(open_quadruped()).await.unwrap();
    refused(
        h.connect_robot(pb::ConnectRobotRequest { config_xml: gait() })
            .await,
        Code::InvalidArgument,
        &["real id 0 is not mapped", "real id 100"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transformation_scripts_change_the_morphology() {
    let mut h = walking_quadruped().await;
    let knee_on_top = |id_from: u32, conn_from: &str| pb::ConnectModulesRequest {
        id_from,
        conn_from: conn_from.into(),
        id_to: 4,
        conn_to: "top".into(),
        angle_deg: 0,
    };
    // Knee 7 is still attached to its hip.
    refused(
        h.connect_modules(knee_on_top(7, "rear")).await,
        Code::InvalidArgument,
        &["module 7", "disconnected"],
    );
    let script = r#"<script>
        <disconnect id="8"/>
        <pause delay="500"/>
        <connect idfrom="8" connfrom="front" idto="4" connto="top" angle="0"/>
    </script>"#;
    let before = state(&mut h).await;
    let after = h
        .run_script(pb::RunScriptRequest {
            script_xml: script.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!((after.elapsed_s - before.elapsed_s - 0.5).abs() < 0.02);
    // The top of the centre module is taken now.
    refused(
        h.connect_modules(knee_on_top(7, "rear")).await,
        Code::InvalidArgument,
        &["connector top of module 4 is already in use"],
    );
    // Taking knee 8 off again frees it; the RPCs do what the script did.
    h.disconnect_module(pb::DisconnectModuleRequest { module_id: 8 })
        .await
        .unwrap();
    h.connect_modules(knee_on_top(8, "front")).await.unwrap();
    // The three-legged robot with a knee on its back still runs its gait.
    sleep(&mut h, 1.0).await;

    refused(
        h.connect_modules(pb::ConnectModulesRequest {
            angle_deg: 7,
            ..knee_on_top(8, "front")
        })
        .await,
        Code::InvalidArgument,
        &["angle_deg", "15"],
    );
    refused(
        h.disconnect_module(pb::DisconnectModuleRequest { module_id: 4 })
            .await,
        Code::InvalidArgument,
        &["central"],
    );
    for (bad, words) in [
        (
            "<script>\n  <pause delay=\"10\"/>\n  <jump/>\n</script>",
            &["script_xml:3", "<jump>"][..],
        ),
        ("<script><pause/></script>", &["script_xml:1", "delay"][..]),
        (
            "<script>\n<connect idfrom=\"8\" connfrom=\"sideways\" idto=\"4\" connto=\"top\"/>\n</script>",
            &["script_xml:2", "<connect>", "sideways"][..],
        ),
        (
            "<script>\n<connect idfrom=\"8\" connfrom=\"front\" idto=\"42\" connto=\"top\"/>\n</script>",
            &["script_xml:2", "<connect>", "42"][..],
        ),
        ("<notascript/>", &["<script>"][..]),
        ("<script>", &["script_xml"][..]),
        (
            "<script><disconnect id=\"x\"/></script>",
            &["<disconnect>", "id"][..],
        ),
    ] {
        refused(
            h.run_script(pb::RunScriptRequest {
                script_xml: bad.into(),
            })
            .await,
            Code::InvalidArgument,
            words,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_sleep_keeps_the_host_busy_until_it_is_dropped() {
    let mut h = walking_quadruped().await;
    let mut sleeper = h.clone();
    let long = tokio::spawn(async move {
        sleeper
            .sleep(pb::SleepRequest {
                seconds: 3600.0,
                clock: pb::Clock::Host as i32,
            })
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !h
        .get_info(pb::GetInfoRequest {})
        .await
        .unwrap()
        .into_inner()
        .busy
    {
        assert!(Instant::now() < deadline, "the sleep never started");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let job = pb::EvaluateRequest {
        job: Some(pb::EvaluationJob {
            gait_xml: gait(),
            ..Default::default()
        }),
        ..Default::default()
    };
    refused(h.evaluate(job).await, Code::ResourceExhausted, &["busy"]);
    refused(
        h.get_state(pb::GetStateRequest {}).await,
        Code::ResourceExhausted,
        &["busy"],
    );
    // Dropping the call stops the physics: the host answers again long
    // before an hour of virtual time (about 30 s of CPU) could pass.
    long.abort();
    let answer = async {
        loop {
            match h.get_state(pb::GetStateRequest {}).await {
                Ok(s) => break s.into_inner(),
                Err(e) if e.code() == Code::ResourceExhausted => {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    };
    // GetState waits for the session, so a sleep that ignores the drop
    // shows up as a timeout here.
    let stopped = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .expect("the dropped sleep kept the session for 10 s");
    assert!(stopped.elapsed_s < 600.0, "{}", stopped.elapsed_s);
    let next = sleep(&mut h, 1.0).await;
    assert!((next.elapsed_s - stopped.elapsed_s - 1.0).abs() < 0.02);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_clock_paces_and_the_supervisor_changes_the_world() {
    let clock = Arc::new(FakeClock::default());
    let mut h = serve_with_clock(
        Arc::new(sim_backend("quadruped", SimSettings::default()).unwrap()),
        clock.clone(),
    )
    .await;
    h.open_simulation(open_quadruped()).await.unwrap();
    let origin = h
        .connect_robot(pb::ConnectRobotRequest { config_xml: gait() })
        .await
        .unwrap()
        .into_inner();
    assert!(origin.open && origin.connected && origin.simulation_mode);
    let paced = h
        .sleep(pb::SleepRequest {
            seconds: 0.3,
            clock: pb::Clock::Real as i32,
        })
        .await
        .unwrap()
        .into_inner();
    let advanced = paced.elapsed_s - origin.elapsed_s;
    assert!((advanced - 0.3).abs() < 0.02, "{advanced}");
    // The fake clock stands still between sleeps, so the waits asked for add
    // up to exactly the virtual time that passed.
    let slept = clock.slept().as_secs_f64();
    assert!(
        (slept - advanced).abs() < 1e-3,
        "{slept} s slept for {advanced} s"
    );
    assert!(
        clock
            .sleeps()
            .iter()
            .all(|&d| d <= Duration::from_millis(20)),
        "a wait is longer than the cancellation check interval: {:?}",
        clock.sleeps()
    );

    h.set_defect(pb::SetDefectRequest {
        module_id: 5,
        mode: pb::DefectMode::Limp as i32,
    })
    .await
    .unwrap();
    assert!(module(&mut h, 5).await.defect);
    assert!(!module(&mut h, 6).await.defect);
    h.set_ground_friction(pb::SetGroundFrictionRequest { friction: 0.5 })
        .await
        .unwrap();
    let on_ground = state(&mut h).await;
    let dropped = h
        .drop_robot(pb::DropRobotRequest {
            height_m: 0.3,
            upside_down: true,
        })
        .await
        .unwrap()
        .into_inner();
    let (before, lifted) = (on_ground.position.unwrap(), dropped.position.unwrap());
    assert!(lifted.z > before.z + 0.2, "{before:?} → {lifted:?}");
    let landed = sleep(&mut h, 1.5).await;
    assert!(landed.position.unwrap().z < lifted.z - 0.2);

    let reset = h
        .reset_simulation(pb::ResetSimulationRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(reset.open && !reset.connected && reset.elapsed_s == 0.0);
    let (home, back) = (origin.position.unwrap(), reset.position.unwrap());
    assert!(
        (home.x, home.y, home.z) == (back.x, back.y, back.z),
        "{home:?} vs {back:?}"
    );
    h.connect_robot(pb::ConnectRobotRequest { config_xml: gait() })
        .await
        .unwrap();
    // The defect mark survives the reset.
    assert!(module(&mut h, 5).await.defect);
    h.set_defect(pb::SetDefectRequest {
        module_id: 5,
        mode: pb::DefectMode::None as i32,
    })
    .await
    .unwrap();
    assert!(!module(&mut h, 5).await.defect);
}

// ---------------------------------------------------------------------------
// A recording robot: what exactly goes over the link
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Snp(u8, SnpMessage),
    Defect(ModuleId, DefectMode),
    Connect(Connection),
    Disconnect(ModuleId),
}

type Log = Arc<Mutex<Vec<Event>>>;

/// Modules 0..=4, acknowledging everything; a simulation or a "real" robot.
struct Recorder {
    simulation: bool,
    log: Log,
}

impl Recorder {
    fn take(log: &Log) -> Vec<Event> {
        std::mem::take(&mut *log.lock().unwrap())
    }
}

impl Backend for Recorder {
    fn kind(&self) -> BackendKind {
        if self.simulation {
            BackendKind::Simulation
        } else {
            BackendKind::Real
        }
    }

    fn describe(&self) -> String {
        "recorder".into()
    }

    fn evaluate(
        &self,
        _job: EvaluationJob,
        _cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        Box::pin(async {
            Err(HostError::Unsupported {
                backend: "recorder",
                what: "evaluate",
            })
        })
    }

    fn session(&self) -> Option<Arc<dyn SessionFactory>> {
        Some(Arc::new(RecorderFactory {
            simulation: self.simulation,
            log: self.log.clone(),
        }))
    }
}

struct RecorderFactory {
    simulation: bool,
    log: Log,
}

impl SessionFactory for RecorderFactory {
    fn simulation_mode(&self) -> bool {
        self.simulation
    }

    fn open(
        &self,
        _robot: &yamor_host_agent::RobotSource,
        _seed: u64,
        _ground_friction: Option<f64>,
    ) -> Result<Box<dyn RobotLink>, HostError> {
        Ok(Box::new(RecordingLink {
            simulation: self.simulation,
            time: 0.0,
            log: self.log.clone(),
        }))
    }
}

struct RecordingLink {
    simulation: bool,
    time: f64,
    log: Log,
}

impl RecordingLink {
    fn record(&self, event: Event) -> Result<(), HostError> {
        self.log.lock().unwrap().push(event);
        Ok(())
    }
}

impl RobotLink for RecordingLink {
    fn simulation_mode(&self) -> bool {
        self.simulation
    }

    fn elapsed(&self) -> f64 {
        self.time
    }

    fn position(&self) -> Sample {
        Sample {
            t: self.time,
            ..Sample::default()
        }
    }

    fn send(&mut self, dst: u8, message: &SnpMessage) -> Result<SnpMessage, HostError> {
        if dst > 4 {
            return Err(HostError::Failed(format!("no module {dst} answers")));
        }
        self.record(Event::Snp(dst, message.clone()))?;
        Ok(SnpMessage::Ack {
            of_kind: message.kind(),
        })
    }

    fn advance(&mut self, seconds: f64, _cancel: &AtomicBool) -> Result<(), HostError> {
        self.time += seconds;
        Ok(())
    }

    fn supervisor(&mut self) -> Option<&mut dyn Supervisor> {
        if self.simulation { Some(self) } else { None }
    }
}

impl Supervisor for RecordingLink {
    fn modules(&self) -> Vec<ModuleId> {
        (0..=4).collect()
    }

    fn connect(&mut self, connection: Connection) -> Result<(), HostError> {
        self.record(Event::Connect(connection))
    }

    fn disconnect(&mut self, id: ModuleId) -> Result<(), HostError> {
        self.record(Event::Disconnect(id))
    }

    fn set_defect(&mut self, id: ModuleId, mode: DefectMode) -> Result<(), HostError> {
        self.record(Event::Defect(id, mode))
    }

    fn set_ground_friction(&mut self, _mu: f64) -> Result<(), HostError> {
        Ok(())
    }

    fn drop_robot(&mut self, _height: f64, _upside_down: bool) -> Result<(), HostError> {
        Ok(())
    }

    fn reset(&mut self) -> Result<(), HostError> {
        Ok(())
    }
}

/// Three modules in a chain, ids offset by `base` (0 for simulation ids).
fn chain(base: u32) -> String {
    let (a, b, c) = (base, base + 1, base + 2);
    format!(
        r#"<yamorconfig><modulelist>
  <module id="{a}" amplitude="0.5" offset="0" speed="5" minangle="-1" maxangle="1">
    <bluetooth to="{b}"/><cpglink to="{b}" phase="1" weight="1"/>
  </module>
  <module id="{b}" amplitude="0.5" offset="0" speed="5" minangle="-1" maxangle="1">
    <bluetooth to="{c}"/>
  </module>
  <module id="{c}" amplitude="0.5" offset="0" speed="5" minangle="-1" maxangle="1"/>
</modulelist></yamorconfig>"#
    )
}

/// A recording robot, opened after `mapping` was set.
async fn recorder(simulation: bool, mapping: pb::IdMapping) -> (Client, Log) {
    let log = Log::default();
    let mut h = serve(Arc::new(Recorder {
        simulation,
        log: log.clone(),
    }))
    .await;
    h.set_id_mapping(mapping).await.unwrap();
    h.open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap();
    (h, log)
}

fn control(dst: u8, on: u8, off: u8) -> Event {
    Event::Snp(dst, SnpMessage::Control { on, off })
}

fn limits(dst: u8, min: f32, max: f32) -> Event {
    Event::Snp(dst, SnpMessage::LimitAngles { min, max })
}

fn structure(dst: u8, links: &[(u8, f32)]) -> Event {
    Event::Snp(
        dst,
        SnpMessage::CpgStructure {
            links: links
                .iter()
                .map(|&(to, phase)| WireLink {
                    to,
                    phase,
                    weight: 1.0,
                })
                .collect(),
        },
    )
}

fn params(dst: u8, amplitude: f32) -> Event {
    Event::Snp(
        dst,
        SnpMessage::CpgParams {
            amplitude,
            offset: 0.0,
            speed: 5.0,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_sends_everything_flush_what_changed_refresh_all_parameters() {
    let (mut h, log) = recorder(true, pb::IdMapping::default()).await;
    h.connect_robot(pb::ConnectRobotRequest {
        config_xml: chain(0),
    })
    .await
    .unwrap();
    assert_eq!(
        Recorder::take(&log),
        [
            // Thesis 5.2.1: B, L, U+C, N, O, M.
            Event::Snp(0, SnpMessage::BluetoothConnect { to: 1 }),
            Event::Snp(1, SnpMessage::BluetoothConnect { to: 2 }),
            limits(0, -1.0, 1.0),
            limits(1, -1.0, 1.0),
            limits(2, -1.0, 1.0),
            control(0, flags::UART | flags::CPG, 0),
            control(1, flags::UART | flags::CPG, 0),
            control(2, flags::UART | flags::CPG, 0),
            structure(0, &[(1, 1.0)]),
            structure(1, &[]),
            structure(2, &[]),
            params(0, 0.5),
            params(1, 0.5),
            params(2, 0.5),
            control(0, flags::MOTOR, 0),
            control(1, flags::MOTOR, 0),
            control(2, flags::MOTOR, 0),
        ]
    );

    let set = |id, amplitude, max_angle| pb::SetModuleRequest {
        id,
        amplitude,
        max_angle,
        ..Default::default()
    };
    h.set_module(set(1, Some(0.25), None)).await.unwrap();
    h.set_module(set(2, None, Some(0.5))).await.unwrap();
    h.set_coupling(pb::SetCouplingRequest {
        from: 0,
        to: 2,
        phase: Some(0.5),
        weight: None,
    })
    .await
    .unwrap();
    // Setting what is already there changes nothing.
    h.set_module(set(1, Some(0.25), None)).await.unwrap();
    h.set_coupling(pb::SetCouplingRequest {
        from: 0,
        to: 1,
        phase: Some(1.0),
        weight: Some(1.0),
    })
    .await
    .unwrap();
    assert!(
        Recorder::take(&log).is_empty(),
        "nothing goes out before Flush"
    );
    assert_eq!(state(&mut h).await.pending_changes, 3);
    h.flush(pb::FlushRequest {}).await.unwrap();
    assert_eq!(
        Recorder::take(&log),
        [
            structure(0, &[(1, 1.0), (2, 0.5)]),
            params(1, 0.25),
            limits(2, -1.0, 0.5),
        ]
    );
    h.flush(pb::FlushRequest {}).await.unwrap();
    assert!(Recorder::take(&log).is_empty());

    h.refresh(pb::RefreshRequest {}).await.unwrap();
    assert_eq!(
        Recorder::take(&log),
        [
            limits(0, -1.0, 1.0),
            structure(0, &[(1, 1.0), (2, 0.5)]),
            params(0, 0.5),
            limits(1, -1.0, 1.0),
            structure(1, &[]),
            params(1, 0.25),
            limits(2, -1.0, 0.5),
            structure(2, &[]),
            params(2, 0.5),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_defect_motor_gets_motor_off_and_never_motor_on() {
    let (mut h, log) = recorder(true, pb::IdMapping::default()).await;
    h.connect_robot(pb::ConnectRobotRequest {
        config_xml: chain(0),
    })
    .await
    .unwrap();
    Recorder::take(&log);
    h.set_defect(pb::SetDefectRequest {
        module_id: 1,
        mode: pb::DefectMode::Limp as i32,
    })
    .await
    .unwrap();
    assert_eq!(
        Recorder::take(&log),
        [
            Event::Defect(1, DefectMode::Limp),
            control(1, 0, flags::MOTOR)
        ]
    );
    assert!(module(&mut h, 1).await.defect);

    let to = |module_id: Option<u32>, cpg: Option<bool>, motor: Option<bool>| {
        pb::ControlMessageRequest {
            module_id,
            uart: None,
            cpg,
            motor,
        }
    };
    h.send_control_message(to(None, Some(true), Some(true)))
        .await
        .unwrap();
    let on = flags::CPG | flags::MOTOR;
    assert_eq!(
        Recorder::take(&log),
        [
            control(0, on, 0),
            control(1, flags::CPG, 0),
            control(2, on, 0)
        ]
    );
    // Motor-on alone to the defect module: nothing is left to send.
    h.send_control_message(to(Some(1), None, Some(true)))
        .await
        .unwrap();
    assert!(Recorder::take(&log).is_empty());
    h.send_control_message(to(Some(2), Some(false), None))
        .await
        .unwrap();
    assert_eq!(Recorder::take(&log), [control(2, 0, flags::CPG)]);

    // Reconnecting keeps the defect motor off.
    h.connect_robot(pb::ConnectRobotRequest {
        config_xml: chain(0),
    })
    .await
    .unwrap();
    let controls: Vec<Event> = Recorder::take(&log)
        .into_iter()
        .filter(|e| matches!(e, Event::Snp(_, SnpMessage::Control { .. })))
        .collect();
    assert_eq!(
        controls,
        [
            control(0, flags::UART | flags::CPG, 0),
            control(1, flags::UART | flags::CPG, 0),
            control(2, flags::UART | flags::CPG, 0),
            control(0, flags::MOTOR, 0),
            control(1, 0, flags::MOTOR),
            control(2, flags::MOTOR, 0),
        ]
    );

    // Healing lifts the mark and gives the module its motor back.
    h.set_defect(pb::SetDefectRequest {
        module_id: 1,
        mode: pb::DefectMode::None as i32,
    })
    .await
    .unwrap();
    assert_eq!(
        Recorder::take(&log),
        [
            Event::Defect(1, DefectMode::Healthy),
            control(1, flags::MOTOR, 0)
        ]
    );
    assert!(!module(&mut h, 1).await.defect);
    h.send_control_message(to(Some(1), None, Some(true)))
        .await
        .unwrap();
    assert_eq!(Recorder::take(&log), [control(1, flags::MOTOR, 0)]);
    refused(
        h.set_defect(pb::SetDefectRequest {
            module_id: 1,
            mode: pb::DefectMode::Unspecified as i32,
        })
        .await,
        Code::InvalidArgument,
        &["mode"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_translated_in_simulation_mode_only() {
    let mapping = pb::IdMapping {
        real_to_sim: [(10, 0), (11, 1), (12, 2)].into(),
    };

    let (mut sim, log) = recorder(true, mapping.clone()).await;
    sim.connect_robot(pb::ConnectRobotRequest {
        config_xml: chain(10),
    })
    .await
    .unwrap();
    let sent = Recorder::take(&log);
    assert_eq!(
        sent[0],
        Event::Snp(0, SnpMessage::BluetoothConnect { to: 1 })
    );
    assert!(sent.contains(&structure(0, &[(1, 1.0)])), "{sent:?}");
    assert_eq!(module(&mut sim, 11).await.id, 11);
    refused(
        sim.get_module(pb::GetModuleRequest { id: 1 }).await,
        Code::InvalidArgument,
        &["unknown module id 1", "10, 11, 12"],
    );
    let script = r#"<script>
  <disconnect id="11"/>
  <pause delay="250"/>
  <connect idfrom="11" connfrom="front" idto="12" connto="top" angle="90"/>
</script>"#;
    let after = sim
        .run_script(pb::RunScriptRequest {
            script_xml: script.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(after.elapsed_s, 0.25);
    assert_eq!(
        Recorder::take(&log),
        [
            Event::Disconnect(1),
            Event::Connect(Connection {
                id_from: 1,
                conn_from: Connector::Front,
                id_to: 2,
                conn_to: Connector::Top,
                angle_deg: 90,
            }),
        ]
    );
    refused(
        sim.run_script(pb::RunScriptRequest {
            script_xml: "<script>\n<disconnect id=\"7\"/>\n</script>".into(),
        })
        .await,
        Code::InvalidArgument,
        &["script_xml:2", "<disconnect>", "unknown module id 7"],
    );

    // A real robot: ids go out as they are, and there is no supervisor.
    let (mut real, log) = recorder(false, mapping).await;
    let s = real
        .connect_robot(pb::ConnectRobotRequest {
            config_xml: chain(0),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(s.connected && !s.simulation_mode);
    assert_eq!(
        Recorder::take(&log)[0],
        Event::Snp(0, SnpMessage::BluetoothConnect { to: 1 })
    );
    refused(
        real.set_ground_friction(pb::SetGroundFrictionRequest { friction: 0.5 })
            .await,
        Code::Unimplemented,
        &["supervisor"],
    );
    refused(
        real.run_script(pb::RunScriptRequest {
            script_xml: "<script><pause delay=\"1\"/></script>".into(),
        })
        .await,
        Code::Unimplemented,
        &["supervisor"],
    );
    // A real robot's defect is the host's mark and a motor-off, nothing physical.
    real.set_defect(pb::SetDefectRequest {
        module_id: 2,
        mode: pb::DefectMode::Stuck as i32,
    })
    .await
    .unwrap();
    assert_eq!(Recorder::take(&log), [control(2, 0, flags::MOTOR)]);
    // A module the link cannot reach is the link's failure, not the request's.
    refused(
        real.connect_robot(pb::ConnectRobotRequest {
            config_xml: chain(7),
        })
        .await,
        Code::Internal,
        &["no module 7"],
    );
    assert!(!state(&mut real).await.connected);
}
