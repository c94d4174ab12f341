//! The scheduler in one process, with real expression hosts on loopback gRPC.

mod common;

use std::time::Duration;

use common::temp_dir;
use yamor_core::evaluation::{BackendKind, EvaluationJob, Objective, Outcome};
use yamor_organizer::model::{HostState, Job, JobFilter, JobRequest, JobState};
use yamor_organizer::store::Write;
use yamor_organizer::{Organizer, Store};

async fn organizer_with_hosts(name: &str, hosts: usize, delay: Duration) -> Organizer {
    let organizer = common::open_organizer(name);
    common::add_expression_hosts(&organizer, hosts, "x", delay).await;
    organizer
}

fn job(x: f64) -> JobRequest {
    JobRequest {
        job: EvaluationJob {
            objective: Objective::Expression("x".into()),
            parameters: vec![("x".into(), x)],
            ..Default::default()
        },
        backend: Some(BackendKind::Expression),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_job_is_not_starved_by_a_big_batch() {
    let organizer = organizer_with_hosts("fair", 1, Duration::from_millis(10)).await;
    let mut events = organizer.scheduler.subscribe_jobs();
    let batch = (0..30).map(|i| (i, job(i as f64))).collect();
    let swarm = organizer
        .scheduler
        .submit("run-pso", 0, batch)
        .await
        .unwrap();
    let lone = organizer
        .scheduler
        .submit("run-powell", 0, vec![(0, job(-1.0))])
        .await
        .unwrap()[0];
    let mut swarm_done_before = 0;
    loop {
        let e = next_event(&mut events).await;
        if e.state != JobState::Done {
            continue;
        }
        if e.id == lone {
            break;
        }
        assert!(swarm.contains(&e.id));
        swarm_done_before += 1;
    }
    // Round robin: the lone job waits for at most the jobs already running
    // and the one the swarm was owed, never the whole batch.
    assert!(
        swarm_done_before <= 3,
        "{swarm_done_before} swarm jobs ran first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_recorded_once_and_survive_reopening() {
    // A late second answer must not overwrite the first, in memory or on
    // disk; the in-memory guard is tested over fake hosts (fake_hosts.rs),
    // this is the store's own.
    let db = temp_dir("once").join("yamor.db");
    let store = Store::open(&db).unwrap();
    store
        .commit(Write::InsertJobs(vec![Job {
            id: 1,
            run_id: 0,
            owner: "c".into(),
            seq: 0,
            tell_seq: None,
            state: JobState::Queued,
            request: job(0.0),
            attempts: 0,
            host: String::new(),
            outcome: None,
            error: String::new(),
            submitted_ms: 0,
            started_ms: 0,
            finished_ms: 0,
        }]))
        .await
        .unwrap();
    let finish = |v: f64| Write::JobFinished {
        id: 1,
        state: JobState::Done,
        tell_seq: None,
        outcome: Some(Box::new(Outcome::value(v, std::time::Duration::ZERO))),
        error: String::new(),
        finished_ms: 1,
    };
    store.commit(finish(1.0)).await.unwrap();
    store.commit(finish(2.0)).await.unwrap();
    drop(store);
    let reopened = Store::open(&db).unwrap();
    let jobs = reopened.jobs(&JobFilter::default()).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].fitness(), Some(1.0));
    assert_eq!(
        jobs[0].request,
        job(0.0),
        "the request survives the round trip"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_job_fails_at_once_and_a_cancelled_one_never_runs() {
    let organizer = organizer_with_hosts("invalid", 1, Duration::from_millis(20)).await;
    // The host cannot evaluate "x" without x: the job's fault, not the host's.
    let mut bad = job(0.0);
    bad.job.parameters.clear();
    let mut events = organizer.scheduler.subscribe_jobs();
    let ids = organizer
        .scheduler
        .submit("c", 0, vec![(0, bad), (0, job(1.0)), (0, job(2.0))])
        .await
        .unwrap();
    let cancelled = organizer.scheduler.cancel(&ids[2..]).await.unwrap();
    assert_eq!(cancelled, 1);
    let mut seen = std::collections::HashMap::new();
    while seen.len() < 3 {
        let e = next_event(&mut events).await;
        if !e.state.is_open() {
            seen.insert(e.id, e);
        }
    }
    let failed = &seen[&ids[0]];
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.attempts, 1, "an invalid job must not be retried");
    assert!(failed.error.contains('x'), "{}", failed.error);
    assert_eq!(seen[&ids[1]].state, JobState::Done);
    assert_eq!(seen[&ids[2]].state, JobState::Cancelled);
    let hosts = organizer.scheduler.hosts();
    assert_eq!(hosts[0].state, HostState::Free, "the host is not to blame");
}

/// Awaits the next job event, failing rather than hanging.
async fn next_event(events: &mut tokio::sync::broadcast::Receiver<Job>) -> Job {
    tokio::time::timeout(Duration::from_secs(20), events.recv())
        .await
        .expect("a job event within 20 s")
        .expect("the job stream stays open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organizer_told_to_stop_starts_no_job_and_lets_running_ones_finish() {
    let organizer = organizer_with_hosts("stopping", 2, Duration::from_millis(200)).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(yamor_organizer::serve(
        listener,
        organizer.clone(),
        yamor_proto::transport::ServerSecurity::default(),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let mut events = organizer.scheduler.subscribe_jobs();
    let ids = organizer
        .scheduler
        .submit("client", 0, (0..20).map(|i| (i, job(i as f64))).collect())
        .await
        .unwrap();
    // Both hosts busy: two jobs running.
    let mut running = 0;
    while running < 2 {
        if next_event(&mut events).await.state == JobState::Running {
            running += 1;
        }
    }
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
    // Events queued before serve returned may hold a start from before the
    // stop took effect; from here on the hosts' current jobs are all that
    // may still run.
    while events.try_recv().is_ok() {}
    // Whatever ran when the stop came may finish; nothing else may start.
    let mut unfinished: std::collections::HashSet<u64> = organizer
        .scheduler
        .hosts()
        .iter()
        .map(|h| h.current_job)
        .filter(|&j| j > 0)
        .collect();
    while !unfinished.is_empty() {
        let e = next_event(&mut events).await;
        match e.state {
            JobState::Running => panic!("job {} started after the stop", e.id),
            JobState::Done => {
                unfinished.remove(&e.id);
            }
            _ => {}
        }
    }
    // Hosts are free and work is queued: a dispatch now would start a job.
    organizer.scheduler.dispatch();
    let hosts = organizer.scheduler.hosts();
    assert!(
        hosts.iter().all(|h| h.state == HostState::Free),
        "{hosts:?}"
    );
    while let Ok(e) = events.try_recv() {
        assert_ne!(
            e.state,
            JobState::Running,
            "job {} started after the stop",
            e.id
        );
    }
    let queued = organizer
        .scheduler
        .store()
        .jobs(&JobFilter::default())
        .unwrap()
        .into_iter()
        .filter(|j| ids.contains(&j.id) && j.state == JobState::Queued)
        .count();
    assert!(queued > 0, "the queue stays for the next start");
}
