//! The organizer on a full disk: the database stops growing mid-run (SQLite
//! answers "database or disk is full", as on a full file system), then space
//! returns. Nothing acknowledged may be lost, the failure must be reported
//! in words, and the run must carry on by itself once it can write again.

mod common;

use std::time::Duration;

use common::temp_dir;
use tokio_stream::StreamExt;
use yamor_core::evaluation::{BackendKind, EvaluationJob, Objective};
use yamor_organizer::model::{JobRequest, RunSpec, RunState};
use yamor_organizer::store::Write;
use yamor_organizer::{ClientError, Organizer};

async fn organizer(name: &str) -> Organizer {
    let organizer = common::open_organizer(name);
    common::add_expression_hosts(&organizer, 2, "-(x*x + y*y)", Duration::from_millis(1)).await;
    organizer
}

fn spec(budget: u64) -> RunSpec {
    RunSpec {
        max_evaluations: budget,
        seed: 5,
        // More generations than the budget holds: the budget ends the run.
        settings: [("iterations".to_owned(), "1000".to_owned())].into(),
        objective: Objective::Expression("-(x*x + y*y)".into()),
        ..RunSpec::new("pso", common::sphere_space())
    }
}

/// Polls `condition` every 10 ms for at most `seconds`.
async fn until(seconds: u64, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_pauses_the_run_refuses_new_work_and_loses_nothing() {
    let organizer = organizer("full-disk").await;
    let store = organizer.scheduler.store().clone();
    let budget = 3000;
    let run = organizer.runs.start(spec(budget)).await.unwrap();
    let runs = organizer.runs.clone();
    until(60, "the run's first results", || {
        runs.get(run.id).unwrap().evaluations >= 40
    })
    .await;

    store.commit(Write::DiskFull(true)).await.unwrap();
    until(60, "a commit to fail on the full disk", || {
        store.unwritable().is_some()
    })
    .await;
    let reason = store.unwritable().unwrap();
    assert!(reason.contains("full"), "{reason}");
    let paused_at = runs.get(run.id).unwrap();
    assert_eq!(
        paused_at.state,
        RunState::Running,
        "the run waits for space, it does not fail"
    );

    // New work is refused with the reason, not queued on a disk that cannot take it.
    let refused = organizer
        .runs
        .start(spec(10))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("cannot be written") && refused.contains("disk is full"),
        "{refused}"
    );
    let job = JobRequest {
        job: EvaluationJob {
            objective: Objective::Expression("-(x*x + y*y)".into()),
            parameters: vec![("x".into(), 0.1), ("y".into(), 0.2)],
            ..Default::default()
        },
        backend: Some(BackendKind::Expression),
        ..Default::default()
    };
    let refused = organizer
        .scheduler
        .submit("client", 0, vec![(0, job)])
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("disk is full"), "{refused}");
    // Over the wire: UNAVAILABLE with the reason, which a client reads as
    // "not now", not as an organizer it cannot reach.
    let (client, _) = common::serve_organizer(&organizer).await;
    match client.start_run(&spec(10)).await {
        Err(ClientError::NotNow(message)) => assert!(message.contains("disk is full"), "{message}"),
        other => panic!("StartRun on a full disk: {other:?}"),
    }
    assert!(
        organizer
            .runs
            .metrics_text()
            .contains("yamor_database_writable 0"),
        "the metric shows the failure"
    );

    // Space returns: the run goes on by itself and ends at its budget.
    store.commit(Write::DiskFull(false)).await.unwrap();
    let mut events = organizer.runs.watch(run.id).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(event) = events.next().await {
            if event.run.state != RunState::Running {
                return event.run;
            }
        }
        panic!("the run's events ended while it ran");
    })
    .await
    .expect("the run carries on once the disk has space");
    assert_eq!(ended.state, RunState::Finished, "{}", ended.error);
    assert_eq!(ended.evaluations, budget);
    assert!(ended.evaluations > paused_at.evaluations);
    assert!(store.unwritable().is_none());

    // Every proposal is on disk exactly once.
    let told = organizer.runs.told_jobs(run.id).await.unwrap();
    let mut seqs: Vec<u64> = told.iter().map(|j| j.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..budget).collect::<Vec<_>>());
    assert!(
        organizer
            .runs
            .metrics_text()
            .contains("yamor_database_writable 1")
    );
    organizer
        .runs
        .start(spec(10))
        .await
        .expect("runs start again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_seen_only_by_a_refused_request_clears_when_space_returns() {
    use yamor_organizer::Store;
    use yamor_organizer::store::{GaitRow, StoreError};
    let store = Store::open(&temp_dir("full-disk-idle").join("yamor.db")).unwrap();
    store.commit(Write::DiskFull(true)).await.unwrap();
    // Too large for the pages the file has: refused, and nothing else waits.
    let gait = GaitRow {
        id: 1,
        body: "quadruped".into(),
        gait_xml: "x".repeat(256 * 1024),
        orientation: "up".into(),
        expected_velocity: 0.1,
        windows: 1,
        velocity_m2: 0.0,
        last_used_ms: 0,
        predecessors: Vec::new(),
    };
    let refused = store
        .commit_or_refuse(Write::InsertGait(gait.clone()))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Unwritable { .. })),
        "{refused:?}"
    );
    assert!(store.unwritable().is_some());
    // No other write comes; the writer must find out by itself.
    store.commit(Write::DiskFull(false)).await.unwrap();
    until(30, "the store to see space again", || {
        store.unwritable().is_none()
    })
    .await;
    store
        .commit_or_refuse(Write::InsertGait(gait))
        .await
        .expect("written once space returned");
    assert_eq!(store.gaits(None).unwrap().len(), 1);
}
