//! The typed `OrganizerClient` against a real organizer on loopback: domain
//! types survive the round trip, and failures read as one actionable sentence.

mod common;

use std::sync::Arc;
use std::time::Duration;

use tokio_stream::StreamExt;
use yamor_core::evaluation::Objective;
use yamor_host_agent::expr::ExprBackend;
use yamor_organizer::model::{
    HostState, JobFilter, JobState, Problem, RunSpec, RunState, RunVariant,
};
use yamor_organizer::{ClientError, Organizer, OrganizerClient};
use yamor_proto::transport::ClientSecurity;

use common::serve_host;

async fn organizer(name: &str) -> (OrganizerClient, Organizer) {
    let organizer = common::open_organizer(name);
    let (client, _) = common::serve_organizer(&organizer).await;
    (client, organizer)
}

fn space_run(budget: u64) -> RunSpec {
    RunSpec {
        name: "typed".into(),
        max_evaluations: budget,
        seed: 7,
        objective: Objective::Expression("-(x*x + y*y)".into()),
        ..RunSpec::new("pso", common::sphere_space())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_hosts_and_jobs_round_trip_in_domain_types() {
    let (client, _organizer) = organizer("client-typed").await;
    let address = serve_host(
        "expr",
        Arc::new(ExprBackend::new("-(x*x + y*y)", Duration::ZERO).unwrap()),
    )
    .await;
    let host = client.register_host("expr", &address).await.unwrap();
    assert_eq!(host.name, "expr");
    let hosts = client.list_hosts().await.unwrap();
    assert_eq!(hosts.len(), 1);
    assert_ne!(hosts[0].state, HostState::Down);

    let run = client.start_run(&space_run(24)).await.unwrap();
    assert_eq!(run.name, "typed");
    assert_eq!(run.seed, 7);
    let mut events = client.watch_run(run.id).await.unwrap();
    let mut last = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        if event.run.state != RunState::Running {
            last = Some(event.run);
            break;
        }
    }
    let last = last.expect("the run ends");
    assert_eq!(last.state, RunState::Finished);
    assert_eq!(last.evaluations, 24);
    assert!(last.best_velocity.unwrap() <= 0.0);

    let filter = JobFilter {
        run_id: Some(run.id),
        ..JobFilter::default()
    };
    let jobs = client.list_jobs(&filter, true).await.unwrap();
    assert_eq!(jobs.len(), 24);
    assert!(jobs.iter().all(|j| j.state == JobState::Done));
    // Every job says which proposal it was and when the optimizer learnt it.
    let mut proposals: Vec<u64> = jobs.iter().map(|j| j.seq).collect();
    proposals.sort_unstable();
    assert_eq!(proposals, (0..24).collect::<Vec<_>>());
    assert!(jobs.iter().all(|j| j.tell_seq.is_some()));
    assert!(jobs.iter().all(|j| j.fitness().is_some()));

    let optimizers = client.list_optimizers().await.unwrap();
    let pso = optimizers.iter().find(|o| o.name == "pso").unwrap();
    assert!(pso.settings.iter().any(|s| s.name == "particles"));

    let batch = client
        .batch_start_runs(
            &space_run(8),
            &[
                RunVariant {
                    name: "a".into(),
                    seed: 1,
                    ..RunVariant::default()
                },
                RunVariant {
                    name: "b".into(),
                    seed: 2,
                    ..RunVariant::default()
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(batch.len(), 2);
    client.stop_run(batch[0].id).await.unwrap();
    client.deregister_host(&host.id.to_string()).await.unwrap();
}

#[tokio::test]
async fn an_organizer_that_is_not_there_is_one_sentence() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let client = OrganizerClient::new(&url, &ClientSecurity::default()).unwrap();
    let error = client.list_runs().await.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, ClientError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(text.contains(&url), "{text}");
    assert!(text.contains("connection refused"), "{text}");
    assert!(text.contains("yamor organizer"), "{text}");
    assert!(!text.contains('\n'), "{text}");
}

#[tokio::test]
async fn a_host_address_is_not_taken_for_an_organizer() {
    let address = serve_host(
        "expr",
        Arc::new(ExprBackend::new("x", Duration::ZERO).unwrap()),
    )
    .await;
    let client = OrganizerClient::new(&address, &ClientSecurity::default()).unwrap();
    let error = client.list_hosts().await.unwrap_err();
    assert!(
        matches!(error, ClientError::NotAnOrganizer { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn unsupported_schemes_and_unknown_runs_are_refused() {
    let error = OrganizerClient::new("ftp://127.0.0.1:7070", &ClientSecurity::default())
        .err()
        .expect("ftp is not a transport");
    assert!(error.to_string().contains("unsupported scheme"), "{error}");

    let (client, _organizer) = organizer("client-unknown").await;
    let error = client.stop_run(999).await.unwrap_err();
    assert!(matches!(error, ClientError::NotFound(_)), "{error:?}");
    let error = client
        .start_run(&RunSpec::new("no-such-optimizer", Problem::Space(vec![])))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Invalid(_)), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_only_reaches_hosts_that_serve_its_objective() {
    let (client, _organizer) = organizer("client-objectives").await;
    // No host yet: the run is refused, not queued forever.
    let error = client.start_run(&space_run(8)).await.unwrap_err();
    assert!(matches!(error, ClientError::Invalid(_)), "{error:?}");
    assert!(error.to_string().contains("no registered host"), "{error}");

    // Two expression hosts with different expressions; the run names one.
    for (name, expression) in [("wanted", "-(x*x + y*y)"), ("other", "1000 + x")] {
        let address = serve_host(
            name,
            Arc::new(ExprBackend::new(expression, Duration::ZERO).unwrap()),
        )
        .await;
        client.register_host(name, &address).await.unwrap();
    }
    let hosts = client.list_hosts().await.unwrap();
    let wanted = hosts.iter().find(|h| h.name == "wanted").unwrap();
    assert_eq!(wanted.objectives, ["expr:-(x*x + y*y)"]);

    let run = client.start_run(&space_run(30)).await.unwrap();
    let mut events = client.watch_run(run.id).await.unwrap();
    while let Some(event) = events.next().await {
        if event.unwrap().run.state != RunState::Running {
            break;
        }
    }
    let filter = JobFilter {
        run_id: Some(run.id),
        ..JobFilter::default()
    };
    let jobs = client.list_jobs(&filter, true).await.unwrap();
    assert_eq!(jobs.len(), 30);
    assert!(jobs.iter().all(|j| j.host == "wanted"), "{jobs:?}");
    // No value of the other expression (always ≥ 999) was mixed in.
    assert!(jobs.iter().all(|j| j.fitness().unwrap() <= 0.0));
    assert!(
        jobs.iter()
            .all(|j| j.request.job.objective == Objective::Expression("-(x*x + y*y)".into()))
    );

    // A run over bare parameters must say what it maximises.
    let error = client
        .start_run(&RunSpec {
            objective: Objective::Gait,
            ..space_run(8)
        })
        .await
        .unwrap_err();
    assert!(error.to_string().contains("objective"), "{error}");
}

/// Each way of pointing at the wrong place reads as one sentence that
/// names the cause, never a transport error chain.
#[tokio::test]
async fn https_against_plain_text_and_an_unknown_name_are_one_sentence_each() {
    let (client, _organizer) = organizer("client-wrong-url").await;
    let https = client.url().replacen("http://", "https://", 1);
    let error = OrganizerClient::new(&https, &ClientSecurity::default())
        .unwrap()
        .list_runs()
        .await
        .unwrap_err()
        .to_string();
    // Something answers there, so "start one" would be the wrong advice.
    assert!(error.starts_with("the TLS handshake failed"), "{error}");
    assert!(error.contains(&https), "{error}");
    assert!(error.contains("needs an http:// URL"), "{error}");
    assert!(!error.contains("start one"), "{error}");
    assert_eq!(error.lines().count(), 1, "{error}");

    let unknown = "http://no-such-organizer.invalid:7070";
    let error = OrganizerClient::new(unknown, &ClientSecurity::default())
        .unwrap()
        .list_runs()
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!(
            "cannot reach the organizer at {unknown}: the host name does not resolve; \
             start one with `yamor organizer` or pass --organizer"
        )
    );
}

/// A host that follows the route registers the address its packets to the
/// organizer leave from, whatever address it had (a container back on
/// another address): here a wrong one, 127.0.0.2, becomes 127.0.0.1.
#[tokio::test]
async fn a_host_following_the_route_registers_its_real_address() {
    let (client, _organizer) = organizer("client-follow-route").await;
    let real = serve_host(
        "moved",
        Arc::new(ExprBackend::new("x", Duration::ZERO).unwrap()),
    )
    .await;
    let stale = real.replacen("127.0.0.1", "127.0.0.2", 1);
    tokio::spawn(yamor_host_agent::keep_registered(
        yamor_host_agent::Registration {
            organizer: client.url().to_owned(),
            security: ClientSecurity::default(),
            name: "moved".into(),
            address: stale,
            follow_route: true,
        },
        std::future::pending(),
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let hosts = client.list_hosts().await.unwrap();
        if let Some(h) = hosts.iter().find(|h| h.name == "moved") {
            assert_eq!(h.address, real);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never registered: {hosts:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Follows `run_id` to its end (bounded).
async fn run_end(client: &OrganizerClient, run_id: u64) -> yamor_organizer::model::Run {
    let mut events = client.watch_run(run_id).await.unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("the run progresses")
            .expect("the run ends before its stream")
            .unwrap();
        if event.run.state != RunState::Running {
            return event.run;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_out_of_range_is_refused_by_every_way_in_and_nothing_is_stored() {
    let (client, organizer) = organizer("client-spec-range").await;
    let address = serve_host(
        "expr",
        Arc::new(ExprBackend::new("-(x*x + y*y)", Duration::ZERO).unwrap()),
    )
    .await;
    client.register_host("expr", &address).await.unwrap();
    let mut spec = space_run(4);
    spec.spec.warmup = 1e300;
    let domain = organizer.runs.start(spec.clone()).await.unwrap_err();
    assert!(
        domain
            .to_string()
            .contains("spec.warmup_s must be in [0, 3600] s"),
        "{domain}"
    );
    let remote = client.start_run(&spec).await.unwrap_err();
    assert!(remote.to_string().contains("spec.warmup_s"), "{remote}");
    let batch = client
        .batch_start_runs(&spec, &[RunVariant::default()])
        .await
        .unwrap_err();
    assert!(batch.to_string().contains("spec.warmup_s"), "{batch}");
    let too_many = vec![RunVariant::default(); yamor_organizer::runs::MAX_BATCH_VARIANTS + 1];
    let refused = client
        .batch_start_runs(&space_run(4), &too_many)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("at most 256"), "{refused}");
    assert!(client.list_runs().await.unwrap().is_empty());
    assert!(
        client
            .list_jobs(&JobFilter::default(), true)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_where_nothing_succeeded_fails_with_the_first_error() {
    let (client, _organizer) = organizer("client-all-failed").await;
    // The host's expression needs y, the run gives only x: every job fails.
    let address = serve_host(
        "expr",
        Arc::new(ExprBackend::new("x + y", Duration::ZERO).unwrap()),
    )
    .await;
    client.register_host("expr", &address).await.unwrap();
    let x_only = Problem::Space(vec![yamor_organizer::model::ParameterBound {
        name: "x".into(),
        min: -1.0,
        max: 1.0,
        start: 0.5,
    }]);
    let run = client
        .start_run(&RunSpec {
            max_evaluations: 6,
            objective: Objective::Expression("x + y".into()),
            ..RunSpec::new("pso", x_only)
        })
        .await
        .unwrap();
    let ended = run_end(&client, run.id).await;
    assert_eq!(ended.state, RunState::Failed, "{ended:?}");
    assert!(
        ended.error.contains("no evaluation succeeded (6 failed)")
            && ended
                .error
                .contains(r#"unknown name "y": neither a parameter nor a function"#),
        "{}",
        ended.error
    );
    // The same on a second look, as the CLI and dashboard read it.
    let again = client.get_run(run.id).await.unwrap();
    assert_eq!(again.state, RunState::Failed);
    assert_eq!(again.error, ended.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_odd_stored_job_does_not_break_the_listing() {
    let (client, organizer) = organizer("client-odd-row").await;
    // A job stored before specs were checked at every way in.
    let mut request = yamor_organizer::model::JobRequest::default();
    request.job.spec.warmup = 1e300;
    organizer
        .scheduler
        .store()
        .write(yamor_organizer::store::Write::InsertJobs(vec![
            yamor_organizer::model::Job {
                id: 1,
                run_id: 0,
                owner: "client".into(),
                seq: 0,
                tell_seq: None,
                state: JobState::Failed,
                request,
                attempts: 1,
                host: String::new(),
                outcome: None,
                error: "old".into(),
                submitted_ms: 1,
                started_ms: 1,
                finished_ms: 1,
            },
        ]));
    organizer.scheduler.store().sync().await.unwrap();
    let jobs = client
        .list_jobs(&JobFilter::default(), false)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        jobs[0].request.job.spec.warmup, 1e300,
        "shown as it was stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_submitted_through_the_client_come_back_under_their_ids() {
    let (client, organizer) = organizer("client-submit").await;
    let address = serve_host(
        "expr",
        Arc::new(ExprBackend::new("x + 1", Duration::ZERO).unwrap()),
    )
    .await;
    client.register_host("expr", &address).await.unwrap();
    let job = |x: f64| yamor_organizer::model::JobRequest {
        job: yamor_core::evaluation::EvaluationJob {
            parameters: vec![("x".into(), x)],
            objective: Objective::Expression("x + 1".into()),
            ..Default::default()
        },
        backend: Some(yamor_core::evaluation::BackendKind::Expression),
        ..Default::default()
    };
    let mut events = organizer.scheduler.subscribe_jobs();
    let ids = client
        .submit_jobs("script", &[job(1.0), job(2.0), job(3.0)])
        .await
        .unwrap();
    assert_eq!(ids.len(), 3);
    let mut values = std::collections::BTreeMap::new();
    while values.len() < 3 {
        let e = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("the jobs end")
            .unwrap();
        if e.state == JobState::Done {
            values.insert(e.id, e.fitness().unwrap());
        }
    }
    assert_eq!(
        ids.iter().map(|id| values[id]).collect::<Vec<_>>(),
        [2.0, 3.0, 4.0]
    );
    assert_eq!(
        client.list_jobs(&JobFilter::default(), true).await.unwrap()[0].owner,
        "script"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_names_every_setting_resolved_once_and_stores_them_once() {
    let (client, organizer) = organizer("client-settings").await;
    let address = serve_host(
        "expr",
        Arc::new(ExprBackend::new("-(x*x + y*y)", Duration::ZERO).unwrap()),
    )
    .await;
    client.register_host("expr", &address).await.unwrap();

    let mut misspelt = space_run(4);
    misspelt.settings.insert("partciles".into(), "6".into());
    let refused = client.start_run(&misspelt).await.unwrap_err().to_string();
    assert!(
        refused.contains(r#"did you mean "particles"?"#),
        "{refused}"
    );

    let mut spec = space_run(4);
    spec.settings.insert("particles".into(), " 6 ".into());
    let run = client.start_run(&spec).await.unwrap();
    // Every setting, defaults filled in, values as the optimizer read them.
    assert_eq!(run.settings["particles"], "6");
    assert_eq!(run.settings["iterations"], "50");
    assert_eq!(run.settings["topology"], "global");
    run_end(&client, run.id).await;

    let rows = organizer.scheduler.store().runs().unwrap();
    let row = rows.iter().find(|r| r.id == run.id).unwrap();
    // Read back, the spec names the resolved settings; stored, it does not:
    // they live once, typed, in the run's settings column.
    assert_eq!(row.spec.settings, run.settings);
    let stored_spec = serde_json::to_string(&row.spec).unwrap();
    assert!(!stored_spec.contains("particles"), "{stored_spec}");
    assert!(
        row.settings.contains(r#""particles":6"#),
        "{}",
        row.settings
    );
}

/// An organizer killed between recording results and saving its run's row
/// comes back showing every recorded result, from its first answer, for a
/// run that had ended as for one that resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_run_shows_every_recorded_result_from_the_first_answer() {
    let db = common::temp_dir("client-count-after-reopen").join("yamor.db");
    let open = || {
        Organizer::open(
            &db,
            yamor_organizer::SchedulerConfig::default(),
            ClientSecurity::default(),
            vec![Arc::new(yamor_pso::Pso)],
        )
        .unwrap()
    };
    let organizer = open();
    let (client, _) = common::serve_organizer(&organizer).await;
    common::add_expression_hosts(&organizer, 1, "-(x*x + y*y)", Duration::ZERO).await;
    let run = client.start_run(&space_run(12)).await.unwrap();
    assert_eq!(run_end(&client, run.id).await.evaluations, 12);
    drop(client);
    organizer.scheduler.store().sync().await.unwrap();
    drop(organizer);
    // The row as a kill before its next save leaves it.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE runs SET evaluations = 3 WHERE id = ?1",
            [run.id as i64],
        )
        .unwrap();
    let reopened = open();
    assert_eq!(reopened.runs.get(run.id).unwrap().evaluations, 12);
}

/// Right after a restart the hosts known from the store have not told what
/// they serve; a run started then waits for them instead of being refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_right_after_a_restart_waits_for_the_known_hosts() {
    let dir = common::temp_dir("client-restart-hosts");
    let database = dir.join("yamor.db");
    let open = || {
        open_at(
            &database,
            yamor_organizer::SchedulerConfig::default(),
            pso(),
        )
    };
    let first = open();
    common::add_expression_hosts(&first, 1, "-(x*x + y*y)", Duration::ZERO).await;
    let store = first.scheduler.store();
    store.sync_within(Duration::from_secs(5)).await.unwrap();
    first.scheduler.stop_dispatching();
    drop(first);
    let second = open();
    assert!(
        second.scheduler.hosts().iter().all(|h| h.backend.is_none()),
        "a restored host is not known to serve anything before it answers"
    );
    let run = tokio::time::timeout(Duration::from_secs(20), second.runs.start(space_run(4)))
        .await
        .expect("the start decides within a lease")
        .expect("the restored host serves the run");
    assert_eq!(run.name, "typed");
}

/// A restored host that never answers is named in the refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_refused_after_a_restart_names_the_silent_hosts() {
    let dir = common::temp_dir("client-restart-silent");
    let database = dir.join("yamor.db");
    let config = yamor_organizer::SchedulerConfig::from_seconds(0.1, 0.5, 3, 60.0).unwrap();
    let open = || open_at(&database, config.clone(), pso());
    let first = open();
    let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = Arc::new(yamor_host_agent::HostService::new(
        "gone",
        Arc::new(ExprBackend::new("x", Duration::ZERO).unwrap()),
    ));
    let (address, task) = common::serve_until(service, async move {
        let _ = stopped.await;
    })
    .await;
    first
        .scheduler
        .register_host("gone", &address)
        .await
        .unwrap();
    first
        .scheduler
        .store()
        .sync_within(Duration::from_secs(5))
        .await
        .unwrap();
    first.scheduler.stop_dispatching();
    drop(first);
    shutdown.send(()).unwrap();
    task.await.unwrap();
    let second = open();
    let refused = tokio::time::timeout(Duration::from_secs(20), second.runs.start(space_run(4)))
        .await
        .expect("the start decides within a lease")
        .unwrap_err()
        .to_string();
    assert!(refused.contains("no registered host serves"), "{refused}");
    assert!(
        refused.contains("(gone) have not answered yet"),
        "{refused}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Every seed and count either gives as many distinct seeds counting up,
    /// or a sentence; never a panic or a wrap.
    #[test]
    fn batch_seeds_count_up_or_refuse(seed in proptest::prelude::any::<u64>(), count in 0usize..300) {
        match yamor_organizer::model::batch_seeds(seed, count) {
            Ok(seeds) => {
                let seeds: Vec<u64> = seeds.collect();
                proptest::prop_assert_eq!(seeds.len(), count);
                for (i, s) in seeds.iter().enumerate() {
                    proptest::prop_assert_eq!(*s, seed + i as u64);
                }
            }
            Err(refused) => {
                let message = refused.to_string();
                proptest::prop_assert!(seed.checked_add(count as u64 - 1).is_none());
                proptest::prop_assert!(message.contains("give a seed of at most"), "{}", message);
            }
        }
    }

    /// Held-out plans the organizer accepts never run past the reference's
    /// block of proposal numbers; the rest are refused with a sentence.
    #[test]
    fn held_out_plans_fit_or_are_refused(candidates in proptest::prelude::any::<u32>(), starts in proptest::prelude::any::<u32>()) {
        let plan = yamor_organizer::model::HeldOut { candidates, starts };
        match plan.check() {
            Ok(()) => proptest::prop_assert!(
                u64::from(candidates) * u64::from(starts)
                    <= yamor_organizer::model::REFERENCE_SEQ - yamor_organizer::model::HELD_OUT_SEQ
            ),
            Err(refused) => proptest::prop_assert!(refused.to_string().starts_with("held_out_"), "{}", refused),
        }
    }
}

/// The seed and held-out counts travel from every way in and are checked:
/// the largest seed with two variants is refused, not wrapped or panicked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_that_cannot_count_up_is_refused_in_a_sentence() {
    let refused = yamor_organizer::model::batch_seeds(u64::MAX, 2)
        .err()
        .expect("two seeds from u64::MAX pass the top")
        .to_string();
    assert!(
        refused.contains(&format!("give a seed of at most {}", u64::MAX - 1)),
        "{refused}"
    );
    let (client, organizer) = organizer("client-held-out-range").await;
    common::add_expression_hosts(&organizer, 1, "-(x*x + y*y)", Duration::ZERO).await;
    let mut spec = space_run(4);
    spec.held_out = yamor_organizer::model::HeldOut {
        candidates: 2,
        starts: u32::MAX,
    };
    let remote = client.start_run(&spec).await.unwrap_err();
    assert!(
        remote.to_string().contains("held_out_starts: at most"),
        "{remote}"
    );
}

/// The optimizer's own recommendation is the run's too, apart from its
/// answer: over gRPC, with its held-out values once re-walked, and the same
/// after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reports_its_optimizers_recommendation_with_its_held_out_values() {
    let dir = common::temp_dir("client-recommendation");
    let database = dir.join("yamor.db");
    let open = || {
        open_at(
            &database,
            yamor_organizer::SchedulerConfig::default(),
            vec![Arc::new(yamor_cmaes::Cmaes)],
        )
    };
    let organizer = open();
    common::add_expression_hosts(&organizer, 2, "-(x*x + y*y)", Duration::ZERO).await;
    let (client, _) = common::serve_organizer(&organizer).await;
    let spec = RunSpec {
        held_out: yamor_organizer::model::HeldOut {
            candidates: 2,
            starts: 3,
        },
        ..RunSpec::new("cmaes", common::sphere_space())
    };
    let spec = RunSpec {
        max_evaluations: 40,
        objective: Objective::Expression("-(x*x + y*y)".into()),
        ..spec
    };
    let run = client.start_run(&spec).await.unwrap();
    let ended = run_end(&client, run.id).await;
    let recommendation = ended
        .recommendation
        .clone()
        .expect("CMA-ES recommends its mean");
    let names: Vec<&str> = recommendation
        .parameters
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["x", "y"]);
    let walked = recommendation
        .held_out
        .expect("re-walked among the finalists");
    assert_eq!(walked.n, 3);
    let (x, y) = (
        recommendation.parameters[0].1,
        recommendation.parameters[1].1,
    );
    assert!((walked.mean - -(x * x + y * y)).abs() < 1e-12, "{walked:?}");
    // A run over bare parameters walks no robot, and its values are no
    // velocities.
    assert_eq!(ended.robot, "");
    assert!(!ended.gait);
    // Stored with the run: read back after a restart, held-out values too.
    organizer.scheduler.store().sync().await.unwrap();
    organizer.scheduler.stop_dispatching();
    drop(organizer);
    let reopened = open();
    let again = reopened.runs.get(run.id).unwrap();
    assert_eq!(again.recommendation, ended.recommendation);
}

/// An organizer on `database` (a restart opens it again).
fn open_at(
    database: &std::path::Path,
    config: yamor_organizer::SchedulerConfig,
    plugins: Vec<Arc<dyn yamor_optimizer_api::Plugin>>,
) -> Organizer {
    Organizer::open(database, config, ClientSecurity::default(), plugins).unwrap()
}

fn pso() -> Vec<Arc<dyn yamor_optimizer_api::Plugin>> {
    vec![Arc::new(yamor_pso::Pso)]
}
