//! The scheduler over in-memory hosts: leases, retries and exactly-once
//! results without a network, on tokio's paused clock. Time moves only when
//! every task waits (or a test sleeps, which advances the clock): leases and
//! probes happen in controlled time, the same on a loaded machine as on an
//! idle one.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::fake::{Answer, FakeNet};
use common::temp_dir;
use yamor_core::evaluation::{BackendKind, EvaluationJob, Objective};
use yamor_organizer::model::{HostState, Job, JobRequest, JobState};
use yamor_organizer::{HostCallError, Organizer, SchedulerConfig, Store};

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

fn organizer(name: &str, net: &Arc<FakeNet>, config: SchedulerConfig) -> Organizer {
    let store = Store::open(&temp_dir(name).join("yamor.db")).unwrap();
    Organizer::with_hosts(store, config, net.clone(), vec![]).unwrap()
}

/// Lets controlled time pass in small steps until `done` holds; fails after
/// `limit` of it.
async fn until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {limit:?} of controlled time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits for the job's final state, as the events tell it.
async fn finished(events: &mut tokio::sync::broadcast::Receiver<Job>, id: u64) -> Job {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("the job ends")
            .unwrap();
        if e.id == id && !e.state.is_open() {
            return e;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_late_answer_after_the_lease_expired_is_ignored() {
    let net = Arc::new(FakeNet::default());
    let config = SchedulerConfig {
        heartbeat_interval: Duration::from_millis(50),
        lease: Duration::from_millis(300),
        ..SchedulerConfig::default()
    };
    let organizer = organizer("late", &net, config);
    let scheduler = &organizer.scheduler;
    let slow = net.host("slow");
    let (open_gate, gate) = tokio::sync::oneshot::channel();
    slow.script(Answer::Gated(gate, 1.0));
    scheduler.register_host("slow", "slow").await.unwrap();
    let mut events = scheduler.subscribe_jobs();
    let id = scheduler.submit("c", 0, vec![(0, job(0.0))]).await.unwrap()[0];
    until("the slow host has the job", Duration::from_secs(1), || {
        slow.evaluations.load(Ordering::SeqCst) > 0
    })
    .await;
    // The slow host stops answering probes mid-evaluation; its lease runs
    // out and the job moves to a second host.
    slow.go_silent();
    net.host("fast").script(Answer::Value(2.0));
    scheduler.register_host("fast", "fast").await.unwrap();
    let done = finished(&mut events, id).await;
    // The first host's call was dropped when its lease expired: the answer
    // it would give now has nobody to reach.
    until(
        "the slow host's call is dropped",
        Duration::from_secs(1),
        || slow.abandoned.load(Ordering::SeqCst) > 0,
    )
    .await;
    assert!(
        open_gate.send(()).is_err(),
        "the late answer still had a listener"
    );
    scheduler.store().sync().await.unwrap();

    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.fitness(), Some(2.0));
    assert_eq!(done.attempts, 2);
    assert_eq!(done.host, "fast");
    assert_eq!(
        slow.abandoned.load(Ordering::SeqCst),
        1,
        "the lost call is dropped"
    );
    let stored = scheduler.job(id, false).await.unwrap();
    assert_eq!(
        stored.fitness(),
        Some(2.0),
        "the late answer changed nothing"
    );
    assert_eq!(stored.state, JobState::Done);
    let hosts = scheduler.hosts();
    let slow_view = hosts.iter().find(|h| h.name == "slow").unwrap();
    assert_eq!(slow_view.state, HostState::Down);
    assert_eq!(slow_view.failures, 1);
    assert!(events.try_recv().is_err(), "no second result was published");
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_is_retried_and_an_invalid_job_is_not() {
    let net = Arc::new(FakeNet::default());
    let organizer = organizer("retry", &net, SchedulerConfig::default());
    let scheduler = &organizer.scheduler;
    let host = net.host("h");
    host.script(Answer::Fail(HostCallError::Failed(
        "Internal: flaky".into(),
    )));
    host.script(Answer::Value(3.0));
    host.script(Answer::Fail(HostCallError::InvalidJob(
        "InvalidArgument: x is missing".into(),
    )));
    scheduler.register_host("h", "h").await.unwrap();
    let mut events = scheduler.subscribe_jobs();

    let flaky = scheduler.submit("c", 0, vec![(0, job(0.0))]).await.unwrap()[0];
    let done = finished(&mut events, flaky).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.fitness(), Some(3.0));
    assert_eq!(done.attempts, 2, "retried once");

    let invalid = scheduler.submit("c", 0, vec![(0, job(0.0))]).await.unwrap()[0];
    let failed = finished(&mut events, invalid).await;
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.attempts, 1, "an invalid job must not be retried");
    assert!(failed.error.contains("x is missing"), "{}", failed.error);

    let h = &scheduler.hosts()[0];
    assert_eq!(h.state, HostState::Free, "the host is not to blame");
    assert_eq!(h.failures, 1, "only the flaky attempt counts against it");
}

#[tokio::test(start_paused = true)]
async fn a_job_fails_for_good_after_its_attempts() {
    let net = Arc::new(FakeNet::default());
    let organizer = organizer("attempts", &net, SchedulerConfig::default());
    let scheduler = &organizer.scheduler;
    let host = net.host("h");
    for _ in 0..2 {
        host.script(Answer::Fail(HostCallError::Failed(
            "Internal: broken".into(),
        )));
    }
    scheduler.register_host("h", "h").await.unwrap();
    let mut events = scheduler.subscribe_jobs();
    let mut request = job(0.0);
    request.max_attempts = 2;
    let id = scheduler.submit("c", 0, vec![(0, request)]).await.unwrap()[0];
    let failed = finished(&mut events, id).await;
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.attempts, 2);
    assert!(failed.error.contains("broken"), "{}", failed.error);
}

/// Restarted faster than a heartbeat, the organizer knows its hosts only by
/// name and address: their first contact is a heartbeat, not a
/// registration. It must learn their backend (a probe) and give them jobs.
#[tokio::test(start_paused = true)]
async fn hosts_restored_from_the_database_are_probed_on_their_heartbeat_and_get_jobs() {
    let net = Arc::new(FakeNet::default());
    let db = temp_dir("restored-probe").join("yamor.db");
    let before = Organizer::with_hosts(
        Store::open(&db).unwrap(),
        SchedulerConfig::default(),
        net.clone(),
        vec![],
    )
    .unwrap();
    net.host("h").script(Answer::Value(1.0));
    let id = before.scheduler.register_host("h", "h").await.unwrap().id;
    before.scheduler.store().sync().await.unwrap();
    drop(before);

    let after = Organizer::with_hosts(
        Store::open(&db).unwrap(),
        SchedulerConfig::default(),
        net.clone(),
        vec![],
    )
    .unwrap();
    let scheduler = &after.scheduler;
    let mut events = scheduler.subscribe_jobs();
    let job_id = scheduler.submit("c", 0, vec![(0, job(0.5))]).await.unwrap()[0];
    // The host heartbeats as hosts do, never silent long enough for the
    // organizer's own lease probes: only its heartbeat can lead to a probe.
    let beating = scheduler.clone();
    let heartbeats = tokio::spawn(async move {
        loop {
            beating.heartbeat(id).unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let done = finished(&mut events, job_id).await;
    heartbeats.abort();
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.host, "h");
    let host = scheduler.hosts().into_iter().find(|h| h.id == id).unwrap();
    assert_eq!(host.backend, Some(BackendKind::Expression));
}

/// A host whose heartbeats arrive but which the organizer cannot reach
/// stays down (no job is lost to it) until a probe gets through.
#[tokio::test(start_paused = true)]
async fn a_host_reachable_one_way_stays_down_until_a_probe_answers() {
    let net = Arc::new(FakeNet::default());
    let config = SchedulerConfig {
        heartbeat_interval: Duration::from_millis(50),
        lease: Duration::from_millis(300),
        ..SchedulerConfig::default()
    };
    let organizer = organizer("one-way", &net, config);
    let scheduler = &organizer.scheduler;
    let host = net.host("h");
    let id = scheduler.register_host("h", "h").await.unwrap().id;
    host.go_silent();
    // Its lease runs out: the organizer's own probes fail.
    until("the silent host is down", Duration::from_secs(2), || {
        scheduler.hosts()[0].state == HostState::Down
    })
    .await;
    let mut events = scheduler.subscribe_jobs();
    let job_id = scheduler.submit("c", 0, vec![(0, job(0.5))]).await.unwrap()[0];
    // Heartbeats keep arriving; each one probes, and each probe fails.
    // (The sleep advances the paused clock: a heartbeat interval passes.)
    for _ in 0..5 {
        assert_eq!(scheduler.heartbeat(id).unwrap(), HostState::Down);
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    assert_eq!(scheduler.hosts()[0].state, HostState::Down);
    assert_eq!(
        host.evaluations.load(Ordering::SeqCst),
        0,
        "no job was sent to it"
    );
    // Reachable again: the next heartbeat's probe admits it and the job runs.
    host.script(Answer::Value(3.0));
    host.go_loud();
    scheduler.heartbeat(id).unwrap();
    let done = finished(&mut events, job_id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.fitness(), Some(3.0));
}

/// A host that refuses a job as busy (still walking one the organizer
/// gave up on, say while the host was paused) costs the job no attempt,
/// and gets no job until a probe finds it free.
#[tokio::test(start_paused = true)]
async fn a_busy_refusal_costs_no_attempt_and_the_host_waits_until_free() {
    let net = Arc::new(FakeNet::default());
    let config = SchedulerConfig {
        heartbeat_interval: Duration::from_millis(50),
        lease: Duration::from_millis(300),
        ..SchedulerConfig::default()
    };
    let organizer = organizer("busy", &net, config);
    let scheduler = &organizer.scheduler;
    let host = net.host("h");
    let id = scheduler.register_host("h", "h").await.unwrap().id;
    host.set_busy(true);
    host.script(Answer::Fail(HostCallError::Busy(
        "ResourceExhausted: host is busy".into(),
    )));
    host.script(Answer::Value(2.0));
    let mut events = scheduler.subscribe_jobs();
    let mut request = job(0.5);
    // One attempt: a refusal that counted would fail the job.
    request.max_attempts = 1;
    let job_id = scheduler.submit("c", 0, vec![(0, request)]).await.unwrap()[0];
    // The host counts the call before the organizer has its refusal:
    // wait for the organizer to have put the host down too.
    until("the busy host refused", Duration::from_secs(2), || {
        host.evaluations.load(Ordering::SeqCst) == 1
            && scheduler.hosts()[0].state == HostState::Down
    })
    .await;
    // Heartbeats keep arriving; each probe finds it busy.
    for _ in 0..5 {
        assert_eq!(scheduler.heartbeat(id).unwrap(), HostState::Down);
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    assert_eq!(
        host.evaluations.load(Ordering::SeqCst),
        1,
        "no job sent while busy"
    );
    let waiting = scheduler.job(job_id, true).await.unwrap();
    assert_eq!(waiting.state, JobState::Queued);
    assert_eq!(waiting.attempts, 0, "the refusal is not an attempt");
    host.set_busy(false);
    scheduler.heartbeat(id).unwrap();
    let done = finished(&mut events, job_id).await;
    assert_eq!(done.state, JobState::Done, "{}", done.error);
    assert_eq!(done.fitness(), Some(2.0));
    assert_eq!(done.attempts, 1);
    assert_eq!(
        scheduler.hosts()[0].failures,
        0,
        "a busy host is not a failing one"
    );
}

/// One address is one host: a second name for a live host's address is
/// refused; the address of a host that is down passes to the new name, and
/// the old entry goes (it would reach the new host through that address).
#[tokio::test(start_paused = true)]
async fn one_address_is_one_host() {
    let net = Arc::new(FakeNet::default());
    let config = SchedulerConfig {
        heartbeat_interval: Duration::from_millis(50),
        lease: Duration::from_millis(300),
        ..SchedulerConfig::default()
    };
    let organizer = organizer("one-address", &net, config);
    let scheduler = &organizer.scheduler;
    let host = net.host("10.0.0.5:7171");
    scheduler.register_host("a", "10.0.0.5:7171").await.unwrap();
    let refused = scheduler
        .register_host("b", "10.0.0.5:7171")
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("already host \"a\""), "{refused}");
    assert_eq!(scheduler.hosts().len(), 1);

    host.go_silent();
    until("the silent host is down", Duration::from_secs(2), || {
        scheduler.hosts()[0].state == HostState::Down
    })
    .await;
    host.go_loud();
    let b = scheduler.register_host("b", "10.0.0.5:7171").await.unwrap();
    let hosts = scheduler.hosts();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    assert_eq!(hosts[0].name, "b");
    assert_eq!(hosts[0].id, b.id);
    scheduler.store().sync().await.unwrap();
    let stored: Vec<String> = scheduler
        .store()
        .hosts()
        .unwrap()
        .into_iter()
        .map(|h| h.name)
        .collect();
    assert_eq!(stored, ["b"]);
}
