//! The IYaMoRHost3 session surface over a real socket.

use std::sync::Arc;

use tonic::Code;
use yamor_firmware_sim::SimSettings;
use yamor_firmware_sim::robots::ExampleRobot;
use yamor_host_agent::HostService;
use yamor_host_agent::sim::SimBackend;
use yamor_proto::transport::{AuthChannel, ClientSecurity, ServerSecurity, channel};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;

async fn host() -> HostAgentClient<AuthChannel> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let backend = Arc::new(SimBackend::example("quadruped", SimSettings::default()).unwrap());
    tokio::spawn(yamor_host_agent::serve(
        listener,
        Arc::new(HostService::new("s", backend)),
        ServerSecurity::default(),
        std::future::pending(),
    ));
    HostAgentClient::new(channel(&url, &ClientSecurity::default()).unwrap())
}

fn gait() -> String {
    ExampleRobot::named("quadruped")
        .unwrap()
        .gait_xml
        .to_owned()
}

async fn sleep(h: &mut HostAgentClient<AuthChannel>, seconds: f64) -> pb::SessionState {
    h.sleep(pb::SleepRequest {
        seconds,
        clock: pb::Clock::Virtual as i32,
    })
    .await
    .unwrap()
    .into_inner()
}

fn planar(a: &pb::SessionState, b: &pb::SessionState) -> f64 {
    let (p, q) = (a.position.unwrap(), b.position.unwrap());
    (p.x - q.x).hypot(p.y - q.y)
}

async fn connected() -> HostAgentClient<AuthChannel> {
    let mut h = host().await;
    h.open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap();
    h.connect_robot(pb::ConnectRobotRequest { config_xml: gait() })
        .await
        .unwrap();
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_need_an_open_simulation_and_a_connected_robot() {
    let mut h = host().await;
    let err = h
        .sleep(pb::SleepRequest {
            seconds: 1.0,
            clock: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("OpenSimulation"));
    h.open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap();
    let err = h.list_modules(pb::ListModulesRequest {}).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("ConnectRobot"));
    let err = h
        .connect_robot(pb::ConnectRobotRequest {
            config_xml: "<yamorconfig>".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let state = h
        .close_simulation(pb::CloseSimulationRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(!state.open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_robot_walks_and_stops_when_amplitudes_are_flushed_to_zero() {
    let mut h = connected().await;
    let a = sleep(&mut h, 6.0).await;
    assert!((a.elapsed_s - 6.0).abs() < 0.05, "{}", a.elapsed_s);
    let b = sleep(&mut h, 4.0).await;
    let walking = planar(&a, &b);
    assert!(walking > 0.08, "walked {walking} m in 4 s");
    let modules = h
        .list_modules(pb::ListModulesRequest {})
        .await
        .unwrap()
        .into_inner()
        .modules;
    assert_eq!(modules.len(), 9);
    for m in &modules {
        h.set_module(pb::SetModuleRequest {
            id: m.id,
            amplitude: Some(0.0),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let state = h
        .get_state(pb::GetStateRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(state.pending_changes >= 8, "{}", state.pending_changes);
    let state = h.flush(pb::FlushRequest {}).await.unwrap().into_inner();
    assert_eq!(state.pending_changes, 0);
    let settled = sleep(&mut h, 3.0).await;
    let still = sleep(&mut h, 4.0).await;
    let drifting = planar(&settled, &still);
    assert!(
        drifting < walking / 5.0,
        "still moved {drifting} m (walking {walking} m)"
    );
    h.refresh(pb::RefreshRequest {}).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_and_unknown_modules_change_nothing() {
    let mut h = connected().await;
    let before = h
        .get_module(pb::GetModuleRequest { id: 0 })
        .await
        .unwrap()
        .into_inner();
    for request in [
        pb::SetModuleRequest {
            id: 0,
            amplitude: Some(-1.0),
            ..Default::default()
        },
        pb::SetModuleRequest {
            id: 0,
            offset: Some(f64::NAN),
            ..Default::default()
        },
        pb::SetModuleRequest {
            id: 0,
            max_angle: Some(3.0),
            ..Default::default()
        },
        pb::SetModuleRequest {
            id: 0,
            min_angle: Some(0.5),
            max_angle: Some(0.2),
            ..Default::default()
        },
    ] {
        let err = h.set_module(request).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
    }
    let after = h
        .get_module(pb::GetModuleRequest { id: 0 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(before, after);
    let err = h
        .get_module(pb::GetModuleRequest { id: 42 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("42"));
    let err = h
        .set_coupling(pb::SetCouplingRequest {
            from: 0,
            to: 42,
            phase: Some(1.0),
            weight: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = h
        .set_defect(pb::SetDefectRequest {
            module_id: 42,
            mode: pb::DefectMode::Limp as i32,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn couplings_are_listed_set_and_removed() {
    let mut h = connected().await;
    let all = h
        .list_couplings(pb::ListCouplingsRequest {})
        .await
        .unwrap()
        .into_inner()
        .couplings;
    assert!(all.iter().any(|c| c.from == 0 && c.to == 1));
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
    assert_eq!((c.phase, c.weight), (0.25, 1.0));
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
    h.flush(pb::FlushRequest {}).await.unwrap();
    let none = h
        .remove_all_couplings(pb::RemoveAllCouplingsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(none.couplings.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_id_mapping_translates_real_ids() {
    let mut h = host().await;
    // Real module 100 is simulation module 0, and back.
    let mapping = pb::IdMapping {
        real_to_sim: [(100, 0), (0, 100)].into(),
    };
    h.set_id_mapping(mapping.clone()).await.unwrap();
    assert_eq!(
        h.get_id_mapping(pb::GetIdMappingRequest {})
            .await
            .unwrap()
            .into_inner(),
        mapping
    );
    let err = h
        .set_id_mapping(pb::IdMapping {
            real_to_sim: [(1, 0), (2, 0)].into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    h.open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap();
    let real_gait = gait()
        .replace("id=\"0\"", "id=\"100\"")
        .replace("to=\"0\"", "to=\"100\"");
    h.connect_robot(pb::ConnectRobotRequest {
        config_xml: real_gait,
    })
    .await
    .unwrap();
    let m = h
        .get_module(pb::GetModuleRequest { id: 100 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(m.id, 100);
    assert_eq!(m.amplitude, 0.7);
    let err = h
        .get_module(pb::GetModuleRequest { id: 0 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defects_and_scripts_change_the_robot() {
    let mut h = connected().await;
    h.set_defect(pb::SetDefectRequest {
        module_id: 5,
        mode: pb::DefectMode::Limp as i32,
    })
    .await
    .unwrap();
    // Motor-on to everyone must not reach the defect module (C.2.6).
    h.send_control_message(pb::ControlMessageRequest {
        module_id: None,
        motor: Some(true),
        ..Default::default()
    })
    .await
    .unwrap();
    let m = h
        .get_module(pb::GetModuleRequest { id: 5 })
        .await
        .unwrap()
        .into_inner();
    assert!(m.defect);
    let script = r#"<script>
        <disconnect id="8"/>
        <pause delay="500"/>
        <connect idfrom="8" connfrom="front" idto="4" connto="top" angle="0"/>
    </script>"#;
    let before = h
        .get_state(pb::GetStateRequest {})
        .await
        .unwrap()
        .into_inner()
        .elapsed_s;
    let after = h
        .run_script(pb::RunScriptRequest {
            script_xml: script.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .elapsed_s;
    assert!((after - before - 0.5).abs() < 0.05);
    for bad in [
        "<script><jump/></script>",
        "<script><pause/></script>",
        r#"<script><connect idfrom="8" connfrom="sideways" idto="4" connto="top"/></script>"#,
        "<notascript/>",
        "<script>",
    ] {
        let err = h
            .run_script(pb::RunScriptRequest {
                script_xml: bad.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad}");
    }
    let err = h
        .run_script(pb::RunScriptRequest {
            script_xml: "<script><jump/></script>".into(),
        })
        .await
        .unwrap_err();
    assert!(
        err.message().contains("script_xml:1") && err.message().contains("jump"),
        "{}",
        err.message()
    );
    let state = h
        .reset_simulation(pb::ResetSimulationRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(state.open && !state.connected);
}
