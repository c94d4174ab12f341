//! A Roombot host: it walks Roombot jobs, and a job of the other module
//! family fails with an error the organizer retries on another host.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use yamor_core::evaluation::{EvaluationJob, EvaluationSpec, Objective, RobotSource};
use yamor_families::example_backend;
use yamor_host_agent::HostError;
use yamor_sim::SimSettings;
use yamor_sim::physics::Engine;

fn job(robot: RobotSource) -> EvaluationJob {
    EvaluationJob {
        objective: Objective::default(),
        robot,
        gait: None,
        parameters: Vec::new(),
        spec: EvaluationSpec::lasting_after(1.0, 3.0).unwrap(),
    }
}

fn cancel() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roombot_host_walks_its_robot_and_sends_other_families_elsewhere() {
    let host = example_backend("roombots-meta", SimSettings::default()).unwrap();
    // No gait in the job: the robot's own.
    let walked = host
        .evaluate(job(RobotSource::Default), cancel())
        .await
        .unwrap();
    let walked = walked.walk().expect("a Roombot host answers with a walk");
    assert!(walked.velocity.is_finite() && (walked.simulated - 3.0).abs() < 0.01);
    // Another Roombot example is walked too.
    let other = job(RobotSource::Example("roombots-quadruped".into()));
    let mut with_gait = other.clone();
    with_gait.gait = Some(
        yamor_roombots::gait::RoombotExample::named("roombots-quadruped")
            .unwrap()
            .gait()
            .unwrap(),
    );
    assert!(host.evaluate(with_gait, cancel()).await.is_ok());
    // A YaMoR robot: another host's job, retried elsewhere (Failed, not
    // InvalidJob).
    let yamor = host
        .evaluate(job(RobotSource::Example("quadruped".into())), cancel())
        .await;
    assert!(matches!(yamor, Err(HostError::Failed(m)) if m.contains("not a roombots robot")));
    // And the other way round.
    let yamor_host = example_backend("quadruped", SimSettings::default()).unwrap();
    let roombot = yamor_host
        .evaluate(job(RobotSource::Example("roombots-meta".into())), cancel())
        .await;
    assert!(matches!(roombot, Err(HostError::Failed(m)) if m.contains("not a yamor robot")));
    // A drawn world a Roombot walk cannot build is refused for good; a
    // YaMoR job in a drawn world is still another host's to walk.
    let mut drawn = job(RobotSource::Default);
    drawn
        .spec
        .walk_in(yamor_core::world::WorldDistribution::robust().draw(3));
    let refused = host.evaluate(drawn.clone(), cancel()).await;
    assert!(
        matches!(&refused, Err(HostError::InvalidJob(m)) if m.contains("a roombots walk has no drawn worlds")),
        "{refused:?}"
    );
    drawn.robot = RobotSource::Example("quadruped".into());
    let elsewhere = host.evaluate(drawn.clone(), cancel()).await;
    assert!(matches!(elsewhere, Err(HostError::Failed(m)) if m.contains("not a roombots robot")));
    // A YaMoR host walks it in the drawn world.
    let walked = yamor_host.evaluate(drawn, cancel()).await.unwrap();
    assert!(walked.walk().unwrap().velocity.is_finite());
    // A cancelled walk says so.
    let stopped = host
        .evaluate(job(RobotSource::Default), Arc::new(AtomicBool::new(true)))
        .await;
    assert!(matches!(stopped, Err(HostError::Cancelled)));
}

#[test]
fn a_roombot_host_on_another_engine_is_refused() {
    let settings = SimSettings {
        engine: Engine::Rapier,
        ..SimSettings::default()
    };
    let e = example_backend("roombots-meta", settings).err().unwrap();
    assert!(e.to_string().contains("articulated engine only"), "{e}");
}
