//! Lifelong learning end to end (thesis chapter 7): a simulated quadruped
//! walks on a host of its own under the lifelong loop; anomalies are caused
//! through the host API; relearning runs on the organizer's other hosts and
//! gaits go to and come back from the gaits database.

use std::sync::Arc;

use yamor_core::evaluation::{DefectMode, EvaluationSpec};
use yamor_core::{Morphology, RobotConfig};
use yamor_host_agent::HostService;
use yamor_host_agent::{RobotClient, RobotClientError};
use yamor_lifelong::anomaly::Symptom;
use yamor_lifelong::database::Gaits;
use yamor_lifelong::gaits::{Orientation, body_key};
use yamor_lifelong::learning::{Known, Lifelong, LifelongSettings};
use yamor_organizer::model::RunSpec;
use yamor_organizer::{Organizer, SchedulerConfig};
use yamor_proto::transport::{AuthChannel, ClientSecurity};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;
use yamor_sim::robots::ExampleRobot;

fn learnt_gait() -> RobotConfig {
    RobotConfig::from_xml_str(
        "learnt.xml",
        include_str!("../../examples/robots/quadruped/learnt.xml"),
    )
    .unwrap()
}

/// A gait whose every window walks at the same pace once it has reached
/// it (see the file), so that only a change moves its velocity.
fn steady_gait() -> RobotConfig {
    RobotConfig::from_xml_str("steady_gait.xml", include_str!("steady_gait.xml")).unwrap()
}

fn quadruped() -> Morphology {
    ExampleRobot::named("quadruped")
        .unwrap()
        .morphology()
        .unwrap()
}

/// A simulation host of the quadruped, served until the test ends; returns its URL.
async fn sim_host(name: &str) -> String {
    let backend = Arc::new(yamor_families::sim_backend("quadruped", Default::default()).unwrap());
    let service = Arc::new(HostService::new(name, backend));
    yamor_local::serve_host(service, std::future::pending())
        .await
        .unwrap()
        .0
}

struct Rig {
    organizer: Organizer,
    gaits: Arc<Gaits>,
    _dir: tempfile::TempDir,
    /// The raw service, to cause changes the loop must notice.
    robot: HostAgentClient<AuthChannel>,
    client: RobotClient,
}

/// An organizer with `hosts` evaluation hosts and a robot host the
/// organizer does not schedule on.
async fn rig(name: &str, hosts: usize) -> Rig {
    let dir = tempfile::Builder::new().prefix(name).tempdir().unwrap();
    let organizer = Organizer::open(
        &dir.path().join("yamor.db"),
        SchedulerConfig::default(),
        ClientSecurity::default(),
        vec![
            Arc::new(yamor_powell::Powell),
            Arc::new(yamor_map_elites::MapElitesPlugin),
            Arc::new(yamor_ite::ItePlugin),
        ],
    )
    .unwrap();
    for i in 0..hosts {
        let address = sim_host(&format!("sim-{i}")).await;
        organizer
            .scheduler
            .register_host(&format!("sim-{i}"), &address)
            .await
            .unwrap();
    }
    let address = sim_host("robot").await;
    let channel = yamor_proto::transport::channel(&address, &ClientSecurity::default()).unwrap();
    Rig {
        gaits: Arc::new(Gaits::load(organizer.scheduler.store().clone()).unwrap()),
        organizer,
        robot: HostAgentClient::new(channel),
        client: RobotClient::new(&address, &ClientSecurity::default()).unwrap(),
        _dir: dir,
    }
}

fn known(body: Morphology) -> Known {
    Known {
        body,
        ground_friction: 0.0,
        defects: Vec::new(),
        dead_cpg: Vec::new(),
    }
}

/// The robot freshly placed and walking `gait` under the loop.
async fn walking(rig: &mut Rig, gait: RobotConfig, settings: LifelongSettings) -> Lifelong {
    rig.robot
        .open_simulation(pb::OpenSimulationRequest {
            robot: Some(pb::Robot {
                source: Some(pb::robot::Source::Example("quadruped".into())),
            }),
            seed: 3,
            ground_friction: 0.0,
        })
        .await
        .unwrap();
    Lifelong::start(
        rig.organizer.clone(),
        rig.gaits.clone(),
        rig.client.clone(),
        known(quadruped()),
        gait,
        settings,
    )
    .await
    .unwrap()
}

/// A change caused through the host API, and the symptom it must raise.
async fn cause(robot: &mut HostAgentClient<AuthChannel>, change: &str) {
    match change {
        // A hip: a limp knee hardly matters to this gait (it walks 5 %
        // faster), a limp hip stops it.
        "limp motor" => {
            robot
                .set_defect(pb::SetDefectRequest {
                    module_id: 0,
                    mode: pb::DefectMode::Limp as i32,
                })
                .await
                .unwrap();
        }
        "stuck motor" => {
            robot
                .set_defect(pb::SetDefectRequest {
                    module_id: 1,
                    mode: pb::DefectMode::Stuck as i32,
                })
                .await
                .unwrap();
        }
        "dead CPG node" => {
            robot
                .send_control_message(pb::ControlMessageRequest {
                    module_id: Some(0),
                    cpg: Some(false),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
        "upside down" => {
            robot
                .drop_robot(pb::DropRobotRequest {
                    height_m: 0.3,
                    upside_down: true,
                })
                .await
                .unwrap();
        }
        "slippery ground" => {
            robot
                // Ice: the steady gait hardly slows on 0.1.
                .set_ground_friction(pb::SetGroundFrictionRequest { friction: 0.02 })
                .await
                .unwrap();
        }
        "module removed" => {
            robot
                .disconnect_module(pb::DisconnectModuleRequest { module_id: 7 })
                .await
                .unwrap();
        }
        // Thesis 7.5.1: knees 5 and 6 off hips 0 and 1, onto the ends of
        // knees 7 and 8; lifted so the longer legs fit.
        "transformation" => {
            robot
                .run_script(pb::RunScriptRequest {
                    script_xml: r#"<script><disconnect id="5"/><disconnect id="6"/></script>"#
                        .into(),
                })
                .await
                .unwrap();
            robot
                .drop_robot(pb::DropRobotRequest {
                    height_m: 0.25,
                    upside_down: false,
                })
                .await
                .unwrap();
            robot
                .run_script(pb::RunScriptRequest {
                    script_xml: r#"<script>
  <connect idfrom="5" connfrom="front" idto="7" connto="rear" angle="90"/>
  <connect idfrom="6" connfrom="front" idto="8" connto="rear" angle="90"/>
</script>"#
                        .into(),
                })
                .await
                .unwrap();
        }
        other => panic!("unknown change {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_anomaly_kind_is_detected_while_walking() {
    let mut rig = rig("detect", 0).await;
    let cases = [
        ("limp motor", None),
        ("stuck motor", None),
        ("dead CPG node", None),
        ("upside down", Some(Symptom::TurnedOver)),
        ("slippery ground", None),
        ("module removed", None),
        ("transformation", None),
    ];
    for (change, expected) in cases {
        // The steady gait reaches its pace within 12 s of a fresh start;
        // the loop expects what its first window after the warm-up walks.
        let settings = LifelongSettings {
            warmup_s: 12.0,
            ..LifelongSettings::default()
        };
        let mut life = walking(&mut rig, steady_gait(), settings).await;
        // Healthy walking raises nothing.
        assert_eq!(
            life.watch(12.0).await.unwrap(),
            None,
            "{change}: before; {:?}",
            life.events()
        );
        cause(&mut rig.robot, change).await;
        let symptom = life.watch(16.0).await.unwrap();
        match expected {
            Some(s) => assert_eq!(symptom, Some(s), "{change}"),
            None => assert!(
                matches!(symptom, Some(Symptom::VelocityDrop | Symptom::VelocityRise)),
                "{change}: {symptom:?}, events {:?}",
                life.events()
            ),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_robot_adapts_on_itself_from_a_map_of_its_body_and_stores_the_gait() {
    let mut rig = rig("adapt", 2).await;
    let settings = LifelongSettings {
        adapt_walks: 6,
        ite: yamor_ite::IteConfig {
            // Walk the whole budget: what is checked is the walks' order.
            stop: 0.0,
            ..yamor_ite::IteConfig::default()
        },
        ..LifelongSettings::default()
    };
    let mut life = walking(&mut rig, learnt_gait(), settings).await;
    let first = life.gait_id();
    let body = quadruped();
    // A small map of the intact body, built on the cluster ahead of time.
    let relearn = life
        .relearn_spec(&known(body.clone()), Orientation::Upright)
        .unwrap();
    let map = rig
        .organizer
        .runs
        .start(RunSpec {
            optimizer: "map-elites".into(),
            settings: [
                ("emitters".to_owned(), "2".to_owned()),
                ("batch".to_owned(), "6".to_owned()),
            ]
            .into(),
            max_evaluations: 48,
            max_seconds: 0.0,
            held_out: yamor_organizer::model::HeldOut {
                candidates: 1,
                starts: 3,
            },
            spec: EvaluationSpec {
                warmup: 2.0,
                measure: 4.0,
                repeats: 1,
                ..relearn.spec.clone()
            },
            ..relearn
        })
        .await
        .unwrap();
    let map = follow(&rig.organizer, map.id).await;
    life.add_map(body_key(&body), Orientation::Upright, map);
    let space = rig.organizer.runs.space(map).await.unwrap();
    let prior = rig.organizer.runs.prior(map, &space).await.unwrap();
    assert!(prior.elites.len() > 3, "{} elites", prior.elites.len());

    // A hip goes limp without the robot being told: its velocity drops.
    cause(&mut rig.robot, "limp motor").await;
    let adapted = life.adapt(Symptom::VelocityDrop).await.unwrap();
    assert_eq!(adapted.map, Some(map));
    assert_eq!(adapted.run, None, "no relearning on the cluster");
    let trials: Vec<(usize, usize)> = life
        .events()
        .iter()
        .filter_map(|e| match e {
            yamor_lifelong::learning::Event::Trial { walk, cell, .. } => Some((*walk, *cell)),
            _ => None,
        })
        .collect();
    // The gait in use is measured first, then five trials.
    assert_eq!(
        trials.iter().map(|t| t.0).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    // The first trial is the map's best cell; every walk is counted.
    let best = prior
        .elites
        .iter()
        .max_by(|a, b| a.value.total_cmp(&b.value))
        .unwrap();
    assert_eq!(trials[0].1, best.cell);
    assert_eq!(
        adapted.walks,
        1 + 5 + 1,
        "the gait in use, five trials and the gait settled on"
    );
    assert_eq!(rig.organizer.runs.list().len(), 1, "only the map's run");
    // The best trial is taken up only if it beat the gait in use.
    let best_trial = life
        .events()
        .iter()
        .filter_map(|e| match e {
            yamor_lifelong::learning::Event::Trial { velocity, .. } => Some(*velocity),
            _ => None,
        })
        .fold(f64::NEG_INFINITY, f64::max);
    let stored = rig.gaits.list(Some(&body_key(&body))).unwrap();
    if adapted.kept_current {
        assert_eq!(adapted.gait, first);
        assert!(
            best_trial <= adapted.velocity + 0.02,
            "{adapted:?}: {best_trial}"
        );
    } else {
        let new = stored.iter().find(|g| g.id == adapted.gait).unwrap();
        assert_ne!(new.id, first);
        assert_eq!(new.predecessors, [(first, Symptom::VelocityDrop)]);
    }
}

/// Waits for run `id`'s end; returns it.
async fn follow(organizer: &Organizer, id: u64) -> u64 {
    use tokio_stream::StreamExt as _;
    let mut events = organizer.runs.watch(id).unwrap();
    let wait = async {
        while let Some(e) = events.next().await {
            if e.run.state != yamor_organizer::model::RunState::Running {
                assert!(e.run.error.is_empty(), "{}", e.run.error);
                return;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(300), wait)
        .await
        .expect("the map within 300 s");
    organizer.scheduler.store().sync().await.unwrap();
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relearnt_gait_is_stored_and_the_old_one_reused_when_the_motor_is_back() {
    let mut rig = rig("relearn", 2).await;
    let settings = LifelongSettings {
        relearn: RunSpec {
            max_evaluations: 16,
            max_seconds: 0.0,
            spec: EvaluationSpec {
                warmup: 2.0,
                measure: 4.0,
                ..EvaluationSpec::default()
            },
            ..LifelongSettings::default().relearn
        },
        // The learnt gait's 3.8-s windows swing between 9.5 and 13 cm/s on
        // the articulated engine, so the repaired robot's one trial of it
        // can read a quarter below what it is remembered for.
        accept: 0.75,
        ..LifelongSettings::default()
    };
    let mut life = walking(&mut rig, learnt_gait(), settings).await;
    let first = life.gait_id();
    let body = body_key(&quadruped());
    assert_eq!(rig.gaits.list(Some(&body)).unwrap().len(), 1);

    // A hip goes limp; the robot is told (C.2.6) and relearns.
    rig.robot
        .set_defect(pb::SetDefectRequest {
            module_id: 0,
            mode: pb::DefectMode::Limp as i32,
        })
        .await
        .unwrap();
    let broken = Known {
        defects: vec![(0, DefectMode::Limp)],
        ..known(quadruped())
    };
    life.known_change(Symptom::MotorDefect, broken)
        .await
        .unwrap();
    let relearnt = life.adapt(Symptom::MotorDefect).await.unwrap();
    assert!(relearnt.run.is_some() && relearnt.reused.is_none());
    assert_ne!(relearnt.gait, first);
    let run = rig.organizer.runs.get(relearnt.run.unwrap()).unwrap();
    assert_eq!(run.evaluations, 16);
    // Every relearning walk leads in with the gait the robot walked when
    // the motor went, as the robot will switch from it.
    for job in rig.organizer.runs.told_jobs(run.id).await.unwrap() {
        let lead_in = job.request.job.spec.situation.lead_in.expect("a lead-in");
        assert_eq!(lead_in.gait, learnt_gait());
        assert_eq!(lead_in.seconds, LifelongSettings::default().lead_in_s);
    }
    let stored = rig.gaits.list(Some(&body)).unwrap();
    assert_eq!(stored.len(), 2);
    let new = stored.iter().find(|g| g.id == relearnt.gait).unwrap();
    assert_eq!(new.predecessors, [(first, Symptom::MotorDefect)]);
    assert_eq!(new.orientation, Orientation::Upright);
    // The relearnt network has the hip out of it: its amplitude is 0.
    let gait = RobotConfig::from_xml_str("new", &new.gait_xml).unwrap();
    assert_eq!(gait.module(0).unwrap().amplitude, 0.0);
    // It walks better on the robot than the old gait did with the limp hip.
    let on_robot = |rank| {
        life.events().iter().find_map(|e| match e {
            yamor_lifelong::learning::Event::Shortlisted {
                rank: r, on_robot, ..
            } if *r == rank => Some(*on_robot),
            _ => None,
        })
    };
    assert!(
        relearnt.velocity > on_robot(0).unwrap(),
        "{:?}",
        life.events()
    );
    assert!(life.watch(8.0).await.unwrap().is_none());

    // The motor is repaired: the first gait is tried first and taken back
    // without any optimization.
    rig.robot
        .set_defect(pb::SetDefectRequest {
            module_id: 0,
            mode: pb::DefectMode::None as i32,
        })
        .await
        .unwrap();
    life.known_change(Symptom::MotorDefect, known(quadruped()))
        .await
        .unwrap();
    let back = life.adapt(Symptom::MotorDefect).await.unwrap();
    assert_eq!(back.reused, Some(first), "{:?}", life.events());
    assert_eq!(back.run, None);
    assert_eq!(rig.organizer.runs.list().len(), 1, "no second run");
    let stored = rig.gaits.list(Some(&body)).unwrap();
    let old = stored.iter().find(|g| g.id == first).unwrap();
    assert_eq!(old.predecessors, [(relearnt.gait, Symptom::MotorDefect)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gait_for_another_robot_is_a_clear_error() {
    let mut rig = rig("bad", 0).await;
    rig.robot
        .open_simulation(pb::OpenSimulationRequest {
            robot: Some(pb::Robot {
                source: Some(pb::robot::Source::Example("quadruped".into())),
            }),
            seed: 1,
            ground_friction: 0.0,
        })
        .await
        .unwrap();
    let mut gait = learnt_gait();
    gait.modules[0].id = 99;
    let error = Lifelong::start(
        rig.organizer.clone(),
        rig.gaits.clone(),
        rig.client.clone(),
        known(quadruped()),
        gait,
        LifelongSettings::default(),
    )
    .await
    .err()
    .expect("module 99 is not on the quadruped");
    assert!(
        matches!(
            &error,
            yamor_lifelong::learning::LifelongError::Robot(RobotClientError::Refused { .. })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("99"), "{error}");
    // Nothing was stored.
    assert!(rig.gaits.list(None).unwrap().is_empty());
}
