//! `Evaluate` over a real socket: simulation and expression backends.

use std::sync::Arc;
use std::time::Duration;
use yamor_proto::v1::evaluation_result::Kind;

use tonic::Code;
use yamor_families::sim_backend;
use yamor_host_agent::expr::ExprBackend;
use yamor_host_agent::{Backend, HostService};
use yamor_proto::transport::{AuthChannel, ClientSecurity, ServerSecurity, channel};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;
use yamor_sim::SimSettings;
use yamor_sim::robots::ExampleRobot;

async fn start(backend: Arc<dyn Backend>) -> HostAgentClient<AuthChannel> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(yamor_host_agent::serve(
        listener,
        Arc::new(HostService::new("t", backend)),
        ServerSecurity::default(),
        std::future::pending(),
    ));
    HostAgentClient::new(channel(&url, &ClientSecurity::default()).unwrap())
}

/// The walk a host answered with (any other kind fails the test).
fn walk_of(result: Option<pb::EvaluationResult>) -> pb::WalkResult {
    match result.and_then(|r| r.kind) {
        Some(Kind::Walk(walk)) => walk,
        other => panic!("a robot host answers with a walk, not {other:?}"),
    }
}

fn quadruped_job(seconds: f64) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        job: Some(pb::EvaluationJob {
            gait_xml: ExampleRobot::named("quadruped")
                .unwrap()
                .gait_xml
                .to_owned(),
            spec: Some(pb::EvaluationSpec {
                warmup_s: 2.0,
                measure_s: seconds,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quadruped_walks_through_evaluate() {
    let mut host = start(Arc::new(
        sim_backend("quadruped", SimSettings::default()).unwrap(),
    ))
    .await;
    let info = host
        .get_info(pb::GetInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.backend, pb::Backend::Simulation as i32);
    assert_eq!(info.robot, "quadruped");
    assert!(
        info.objectives.is_empty(),
        "a simulation host serves gaits only"
    );
    let mut expression = quadruped_job(1.0);
    expression.job.as_mut().unwrap().objective = "expr:x".into();
    let err = host.evaluate(expression).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    let result = host
        .evaluate(quadruped_job(4.0))
        .await
        .unwrap()
        .into_inner()
        .result;
    let result = walk_of(result);
    assert!(result.velocity_m_s > 0.02, "{}", result.velocity_m_s);
    let t = result.trajectory.unwrap();
    assert!((t.end.unwrap().t - 6.0).abs() < 0.05);
    assert!(t.distance_m > 0.05 && t.path_length_m >= t.distance_m * 0.99);
    let timings = result.timings.unwrap();
    assert!(timings.physics_steps > 300 && timings.simulated_s > 5.9);
    assert_eq!(
        host.get_info(pb::GetInfoRequest {})
            .await
            .unwrap()
            .into_inner()
            .evaluations,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_jobs_are_invalid_arguments() {
    let mut host = start(Arc::new(
        sim_backend("quadruped", SimSettings::default()).unwrap(),
    ))
    .await;
    let mut bad = quadruped_job(1.0);
    bad.job.as_mut().unwrap().gait_xml = "<yamorconfig><modulelist><module id=\"0\"".into();
    let err = host.evaluate(bad).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let mut unknown = quadruped_job(1.0);
    unknown.job.as_mut().unwrap().gait_xml =
        "<yamorconfig><modulelist><module id=\"77\" amplitude=\"0.5\" offset=\"0\" speed=\"1\" minangle=\"-1\" maxangle=\"1\"/></modulelist></yamorconfig>".into();
    let err = host.evaluate(unknown).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("77"), "{}", err.message());
    let mut negative = quadruped_job(1.0);
    negative
        .job
        .as_mut()
        .unwrap()
        .spec
        .as_mut()
        .unwrap()
        .measure_s = -3.0;
    let err = host.evaluate(negative).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("measure_s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_stops_the_simulation_and_frees_the_host() {
    let mut host = start(Arc::new(
        sim_backend("quadruped", SimSettings::default()).unwrap(),
    ))
    .await;
    let mut caller = host.clone();
    // An hour of simulated walking: minutes of CPU if cancellation failed.
    let call = tokio::spawn(async move { caller.evaluate(quadruped_job(3600.0)).await });
    loop {
        if host
            .get_info(pb::GetInfoRequest {})
            .await
            .unwrap()
            .into_inner()
            .busy
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    // A second evaluation is refused while the robot is busy.
    let err = host.evaluate(quadruped_job(1.0)).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    call.abort();
    let started = std::time::Instant::now();
    loop {
        if !host
            .get_info(pb::GetInfoRequest {})
            .await
            .unwrap()
            .into_inner()
            .busy
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the simulation kept running"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let result = host
        .evaluate(quadruped_job(1.0))
        .await
        .unwrap()
        .into_inner();
    assert!(result.result.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expression_backend_evaluates_parameters() {
    let mut host = start(Arc::new(
        ExprBackend::new("-(x - 1)^2 + 2 * y()", Duration::ZERO).unwrap(),
    ))
    .await;
    let info = host.get_info(pb::GetInfoRequest {}).await.unwrap();
    assert_eq!(info.into_inner().objectives, ["expr:-(x - 1)^2 + 2 * y()"]);
    let job = |objective: &str, params: Vec<(&str, f64)>| pb::EvaluateRequest {
        job: Some(pb::EvaluationJob {
            parameters: params
                .into_iter()
                .map(|(n, v)| pb::Parameter {
                    name: n.into(),
                    value: v,
                })
                .collect(),
            objective: objective.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let request = |params| job("expr:-(x - 1)^2 + 2 * y()", params);
    let r = host
        .evaluate(request(vec![("x", 3.0), ("y", 0.5)]))
        .await
        .unwrap()
        .into_inner();
    let Some(Kind::Value(value)) = r.result.and_then(|r| r.kind) else {
        panic!("an expression's result is a value")
    };
    assert_eq!(value.value, -3.0);
    // Another expression, a gait or a named objective is refused, never
    // answered with this host's expression.
    for other in ["expr:x + y", "", "bbob/f1/i1/d2"] {
        let err = host
            .evaluate(job(other, vec![("x", 3.0), ("y", 0.5)]))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{other:?}");
        assert!(
            err.message().contains("does not serve"),
            "{}",
            err.message()
        );
    }
    let err = host.evaluate(request(vec![("x", 3.0)])).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("\"y\""), "{}", err.message());
    let err = host
        .open_simulation(pb::OpenSimulationRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    assert!(ExprBackend::new("1 +* 2", Duration::ZERO).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_open_while_the_api_needs_the_token() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;
    use yamor_proto::transport::Token;

    let token = Token::new("s3cret").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let backend = Arc::new(ExprBackend::new("x", Duration::ZERO).unwrap());
    tokio::spawn(yamor_host_agent::serve(
        listener,
        Arc::new(HostService::new("t", backend)),
        ServerSecurity {
            token: Some(token.clone()),
            tls: None,
        },
        std::future::pending(),
    ));
    let anonymous = channel(&url, &ClientSecurity::default()).unwrap();
    let mut health = HealthClient::new(anonymous.clone());
    let status = health
        .check(HealthCheckRequest {
            service: "yamor.v1.HostAgent".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    let err = HostAgentClient::new(anonymous)
        .get_info(pb::GetInfoRequest {})
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let trusted = ClientSecurity {
        token: Some(token),
        ..Default::default()
    };
    let info = HostAgentClient::new(channel(&url, &trusted).unwrap())
        .get_info(pb::GetInfoRequest {})
        .await
        .unwrap();
    assert_eq!(info.into_inner().backend, pb::Backend::Expression as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluation_starts_in_the_situation_its_spec_names() {
    let mut host = start(Arc::new(
        sim_backend("quadruped", SimSettings::default()).unwrap(),
    ))
    .await;
    let velocity = |change: fn(&mut pb::EvaluationSpec)| {
        let mut job = quadruped_job(6.0);
        change(job.job.as_mut().unwrap().spec.as_mut().unwrap());
        let mut host = host.clone();
        async move {
            let result = host.evaluate(job).await?.into_inner().result;
            Ok::<_, tonic::Status>(walk_of(result))
        }
    };
    let upright = velocity(|_| {}).await.unwrap();
    let upside_down = velocity(|s| s.upside_down = true).await.unwrap();
    // On its back the quadruped waves its legs in the air.
    assert!(
        upside_down.velocity_m_s < upright.velocity_m_s / 4.0,
        "{} vs {}",
        upside_down.velocity_m_s,
        upright.velocity_m_s
    );
    let limp_hip = velocity(|s| {
        s.defects = vec![pb::ModuleDefect {
            module_id: 0,
            mode: pb::DefectMode::Limp as i32,
        }]
    })
    .await
    .unwrap();
    assert_ne!(limp_hip.velocity_m_s, upright.velocity_m_s);
    let dead = velocity(|s| s.dead_cpg = vec![0]).await.unwrap();
    assert_ne!(dead.velocity_m_s, upright.velocity_m_s);
    // Bad situations are refused, naming the field.
    let error = velocity(|s| {
        s.defects = vec![pb::ModuleDefect {
            module_id: 0,
            mode: 42,
        }]
    })
    .await
    .unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument);
    assert!(error.message().contains("spec.defects.mode"), "{error}");
    // Repeats average walks from successive seeds.
    let seeds: Vec<f64> = [
        velocity(|s| s.seed = 10).await.unwrap().velocity_m_s,
        velocity(|s| s.seed = 11).await.unwrap().velocity_m_s,
    ]
    .into();
    let mean = velocity(|s| {
        s.seed = 10;
        s.repeats = 2;
    })
    .await
    .unwrap();
    assert!((mean.velocity_m_s - (seeds[0] + seeds[1]) / 2.0).abs() < 1e-12);
    let error = velocity(|s| s.repeats = 1000).await.unwrap_err();
    assert!(error.message().contains("spec.repeats"), "{error}");
    let error = velocity(|s| s.dead_cpg = vec![77]).await.unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument, "{error}");
    assert!(error.message().contains("77"), "{error}");
    host.get_info(pb::GetInfoRequest {}).await.unwrap();
}

/// A job for `robot`'s gait, bringing `source` as its robot.
fn job_bringing(robot: &str, source: Option<pb::robot::Source>) -> pb::EvaluateRequest {
    let example = ExampleRobot::named(robot).unwrap();
    pb::EvaluateRequest {
        job: Some(pb::EvaluationJob {
            gait_xml: example.gait_xml.to_owned(),
            robot: source.map(|source| pb::Robot {
                source: Some(source),
            }),
            spec: Some(pb::EvaluationSpec {
                warmup_s: 1.0,
                measure_s: 2.0,
                seed: 5,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A run carries its own robot to any simulation host: a quadruped's host
/// walks the snake a job brings exactly as a snake's host walks its own,
/// again and again (parsed once), and refuses a robot it cannot build,
/// saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_walks_whatever_robot_a_job_brings() {
    let snake = ExampleRobot::named("snake").unwrap();
    let xml = snake.morphology().unwrap().to_xml_string();
    let mut own = start(Arc::new(
        sim_backend("snake", SimSettings::default()).unwrap(),
    ))
    .await;
    let mut other = start(Arc::new(
        sim_backend("quadruped", SimSettings::default()).unwrap(),
    ))
    .await;
    let velocity = |reply: tonic::Response<pb::EvaluateResponse>| {
        walk_of(reply.into_inner().result).velocity_m_s
    };
    let at_home = velocity(own.evaluate(job_bringing("snake", None)).await.unwrap());
    for _ in 0..2 {
        let brought = pb::robot::Source::MorphologyXml(xml.clone());
        let away = velocity(
            other
                .evaluate(job_bringing("snake", Some(brought)))
                .await
                .unwrap(),
        );
        assert_eq!(away.to_bits(), at_home.to_bits(), "{away} vs {at_home}");
    }
    let broken = pb::robot::Source::MorphologyXml("<morphology><module".into());
    let refused = other
        .evaluate(job_bringing("snake", Some(broken)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(
        refused.message().contains("morphology"),
        "{}",
        refused.message()
    );
}
