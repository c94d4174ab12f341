//! Opening a database written by the organizer before schema versions
//! (tests/data/v0.db, see tests/data/README.md) migrates every row, and its
//! interrupted run resumes.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake::FakeNet;
use common::temp_dir;
use yamor_core::evaluation::{BackendKind, DefectMode, Outcome, RobotSource};
use yamor_organizer::model::{JobFilter, JobState, RunState};
use yamor_organizer::store::{SCHEMA_VERSION, StoreError};
use yamor_organizer::{Organizer, SchedulerConfig, Store};

fn v0_copy(name: &str) -> std::path::PathBuf {
    let db = temp_dir(name).join("yamor.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/v0.db"),
        &db,
    )
    .unwrap();
    db
}

fn user_version(db: &std::path::Path) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_version_0_file_is_migrated_without_loss() {
    let db = v0_copy("migrate");
    assert_eq!(user_version(&db), 0);
    for _ in 0..2 {
        // The second open finds version 1 and changes nothing.
        let store = Store::open(&db).unwrap();
        assert_eq!(user_version(&db), SCHEMA_VERSION);
        let jobs = store.jobs(&JobFilter::default()).unwrap();
        assert_eq!(jobs.len(), 24);
        let count = |run: u64, state: JobState| {
            jobs.iter()
                .filter(|j| j.run_id == run && j.state == state)
                .count()
        };
        assert_eq!(count(1, JobState::Done), 12);
        assert_eq!(count(2, JobState::Done), 6);
        assert_eq!(count(2, JobState::Running), 2);
        assert_eq!(count(0, JobState::Queued), 1);
        let sum: f64 = jobs
            .iter()
            .filter(|j| j.run_id == 1)
            .filter_map(|j| j.fitness())
            .sum();
        assert!((sum - 4.498550552309481).abs() < 1e-12, "{sum}");
        assert_eq!(store.told_jobs(1).unwrap().len(), 12);
        assert!(jobs.iter().filter(|j| j.run_id > 0).all(|j| {
            let names: Vec<&str> = j
                .request
                .job
                .parameters
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            names == ["x", "y"] && j.request.backend == Some(BackendKind::Expression)
        }));

        // A direct simulation job with every field set.
        let full = jobs.iter().find(|j| j.id == 1000).unwrap();
        assert_eq!(full.state, JobState::Done);
        let request = &full.request;
        assert_eq!(request.job.robot, RobotSource::Example("quadruped".into()));
        assert!(request.job.gait.is_some());
        assert_eq!(request.job.parameters, [("amplitude_1".to_owned(), 0.75)]);
        let spec = &request.job.spec;
        assert_eq!(
            (spec.warmup, spec.measure, spec.sample_interval),
            (2.0, 5.0, 0.25)
        );
        assert_eq!(spec.seed, 42);
        assert_eq!(spec.ground_friction, Some(0.8));
        assert!(spec.full_trajectory && spec.situation.upside_down);
        assert_eq!(spec.situation.defects, [(3, DefectMode::Limp)]);
        assert_eq!(spec.situation.dead_cpg, [2]);
        assert_eq!(spec.repeats, 2);
        assert_eq!(request.backend, Some(BackendKind::Simulation));
        assert_eq!(request.max_attempts, 4);
        assert_eq!(request.timeout, Some(Duration::from_secs(90)));
        let outcome = full.walk().expect("a simulated job's result is a walk");
        assert_eq!(outcome.velocity, 0.0125);
        assert_eq!(outcome.samples.len(), 3);
        assert_eq!(outcome.sample_count, 3);
        assert_eq!(outcome.end.t, 7.0);
        assert_eq!(outcome.physics_steps, 7000);
        assert_eq!(outcome.wall, Duration::from_millis(500));
        // The PSO runs walked no gait: their results were values all along.
        let values = jobs
            .iter()
            .filter(|j| j.run_id > 0 && j.outcome.is_some())
            .map(|j| j.outcome.as_ref().unwrap());
        assert!(values.clone().count() >= 12);
        assert!(values.clone().all(|o| matches!(o, Outcome::Value { .. })));
        assert_eq!((full.host.as_str(), full.attempts), ("sim-1", 1));
        assert_eq!(full.submitted_ms, 1_700_000_000_000);
        let failed = jobs.iter().find(|j| j.id == 1001).unwrap();
        assert_eq!(failed.state, JobState::Failed);
        assert_eq!(failed.error, "InvalidArgument: job.gait_xml: bad");
        assert!(failed.outcome.is_none());
        assert_eq!(
            jobs.iter().find(|j| j.id == 1002).unwrap().state,
            JobState::Cancelled
        );

        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].state, RunState::Finished);
        assert_eq!(runs[0].evaluations, 12);
        assert_eq!(runs[0].best_velocity, Some(1.8577484002191025));
        assert_eq!(
            runs[0].best_parameters,
            [("x".to_owned(), 2.0), ("y".to_owned(), 0.37716256412971)]
        );
        assert_eq!(runs[1].state, RunState::Running);
        assert_eq!(runs[1].spec.max_evaluations, 40);
        assert_eq!(runs[1].spec.settings["particles"], "4");

        assert_eq!(store.hosts().unwrap().len(), 2);
        let gaits = store.gaits(None).unwrap();
        assert_eq!(gaits.len(), 2);
        assert_eq!(gaits[0].predecessors, [(2, "stuck motor".to_owned())]);
        assert_eq!(gaits[1].predecessors, [(1, "fell over".to_owned())]);
        assert_eq!(gaits[0].expected_velocity, 0.021);
        // The one velocity a version-0 gait kept counts as one window.
        assert_eq!((gaits[0].windows, gaits[0].standard_error()), (1, None));
        assert_eq!(store.max_ids().unwrap(), (2, 2, 1002));
    }
}

#[tokio::test]
async fn a_version_2_gait_keeps_its_velocity_as_one_window_and_gathers_more() {
    use yamor_organizer::store::{GaitRow, Write};
    let db = temp_dir("v2-gaits").join("yamor.db");
    {
        let store = Store::open(&db).unwrap();
        let row = GaitRow {
            id: 1,
            body: "quadruped".into(),
            gait_xml: "<yamorconfig/>".into(),
            orientation: "up".into(),
            expected_velocity: 0.04,
            windows: 1,
            velocity_m2: 0.0,
            last_used_ms: 1,
            predecessors: Vec::new(),
        };
        store.commit(Write::InsertGait(row)).await.unwrap();
    }
    // Back to version 2's layout: one velocity per gait.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "ALTER TABLE gaits DROP COLUMN windows; ALTER TABLE gaits DROP COLUMN velocity_m2; \
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&db).unwrap();
    assert_eq!(user_version(&db), SCHEMA_VERSION);
    let gait = &store.gaits(None).unwrap()[0];
    assert_eq!((gait.expected_velocity, gait.windows), (0.04, 1));
    store
        .commit(Write::GaitUsed {
            id: 1,
            last_used_ms: 2,
            velocity: 0.08,
            predecessor: None,
        })
        .await
        .unwrap();
    let gait = &store.gaits(None).unwrap()[0];
    assert_eq!(gait.windows, 2);
    assert!((gait.expected_velocity - 0.06).abs() < 1e-12);
    // Two windows 0.04 apart: standard deviation 0.0283, error 0.02.
    assert!((gait.standard_error().unwrap() - 0.02).abs() < 1e-12);
    assert_eq!(gait.velocity_text(), "6.00 ± 2.00 cm/s (2 windows)");
}

#[test]
fn a_newer_file_is_refused() {
    let db = v0_copy("newer");
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    match Store::open(&db) {
        Err(e @ StoreError::TooNew { .. }) => {
            assert!(e.to_string().contains("newer"), "{e}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a newer file was opened"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_run_reads_back_and_resumes() {
    let db = v0_copy("resume");
    let net = Arc::new(FakeNet::default());
    let organizer = Organizer::with_hosts(
        Store::open(&db).unwrap(),
        SchedulerConfig {
            heartbeat_interval: Duration::from_millis(50),
            ..SchedulerConfig::default()
        },
        net,
        vec![Arc::new(yamor_pso::Pso)],
    )
    .unwrap();
    let done = organizer.runs.get(1).unwrap();
    assert_eq!(done.state, RunState::Finished);
    assert_eq!(done.best_velocity, Some(1.8577484002191025));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let resumed = loop {
        let run = organizer.runs.get(2).unwrap();
        if run.state != RunState::Running {
            break run;
        }
        assert!(tokio::time::Instant::now() < deadline, "{run:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(resumed.error.is_empty(), "{}", resumed.error);
    assert_eq!(resumed.state, RunState::Finished);
    assert_eq!(resumed.evaluations, 40);
    let told = organizer.runs.told_jobs(2).await.unwrap();
    assert_eq!(told.len(), 40);
    assert!(resumed.best_velocity.unwrap() >= 0.7610917959549512);
}

/// A 0-byte file (a truncated or lost database) is refused, not served as a
/// new, empty organizer; it is left as it was.
#[test]
fn an_empty_database_file_is_refused_and_left_alone() {
    let db = temp_dir("empty-file").join("yamor.db");
    std::fs::write(&db, b"").unwrap();
    let error = Store::open(&db).err().expect("an empty file is refused");
    assert!(matches!(error, StoreError::EmptyFile { .. }), "{error}");
    assert!(error.to_string().contains("empty file"), "{error}");
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
}

/// A database the organizer cannot write is refused at start. (Root
/// writes through file permissions, so as root this checks nothing.)
#[test]
fn a_read_only_database_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt as _;
    let db = temp_dir("read-only").join("yamor.db");
    drop(Store::open(&db).unwrap());
    for file in [
        db.clone(),
        db.with_extension("db-wal"),
        db.with_extension("db-shm"),
    ] {
        if file.exists() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
    }
    if std::fs::OpenOptions::new().write(true).open(&db).is_ok() {
        eprintln!("skipped: this user writes through read-only permissions (root)");
        return;
    }
    let error = Store::open(&db).err().expect("a read-only file is refused");
    assert!(matches!(error, StoreError::ReadOnly { .. }), "{error}");
}

#[test]
fn version_4_results_become_the_kind_they_were() {
    let db = temp_dir("v4-results").join("yamor.db");
    drop(Store::open(&db).unwrap());
    // Back to version 4's layout: every result a walk's fields, the
    // fitness column named `velocity`, a plan as text.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "ALTER TABLE jobs RENAME COLUMN fitness TO velocity; PRAGMA user_version = 4;",
    )
    .unwrap();
    let plan_text =
        "world 5 5 5\nstart 1 0,0,0 0,0,1 0,0,2 0,0,3\nmove 1 1 step 0,1,0 0,1,1 0,0,1 0,0,0\n";
    let rows = [
        (1, Some(include_str!("../../examples/robots/quadruped/gait.xml")), r#"{"velocity":0.2,"turn_deg_s":1.5,"engine":"rapier","plan":null}"#.to_owned()),
        (2, None, r#"{"velocity":-3.5}"#.to_owned()),
        (
            3,
            None,
            serde_json::json!({"velocity": -1.0, "plan": {"built": true, "moves": 1, "rounds": 1, "plan": plan_text}})
                .to_string(),
        ),
    ];
    for (id, gait, outcome) in rows {
        conn.execute(
            "INSERT INTO jobs (id, run_id, owner, seq, state, robot_kind, robot, gait_xml, parameters, spec, max_attempts, attempts, host, velocity, outcome, error, submitted_ms, started_ms, finished_ms) \
             VALUES (?1, 0, 'test', 0, 'done', 'default', '', ?2, '[]', '{}', 1, 1, 'h', 0, ?3, '', 0, 0, 0)",
            rusqlite::params![id, gait, outcome],
        )
        .unwrap();
    }
    drop(conn);
    let store = Store::open(&db).unwrap();
    assert_eq!(user_version(&db), SCHEMA_VERSION);
    let jobs = store.jobs(&JobFilter::default()).unwrap();
    let by_id = |id: u64| jobs.iter().find(|j| j.id == id).unwrap();
    let walk = by_id(1).walk().expect("a job with a gait walked");
    assert_eq!((walk.velocity, walk.turn_deg_s), (0.2, 1.5));
    assert!(matches!(by_id(2).outcome, Some(Outcome::Value { value, .. }) if value == -3.5));
    let Some(Outcome::Plan(plan)) = &by_id(3).outcome else {
        panic!("a planning job's result is a plan: {:?}", by_id(3).outcome)
    };
    assert_eq!((plan.moves, plan.plan.steps.len()), (1, 1));
    assert_eq!(
        plan.plan.to_text().lines().skip(1).collect::<Vec<_>>(),
        plan_text.lines().collect::<Vec<_>>()
    );
    // The fitness column holds each kind's fitness.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let fitness: Vec<f64> = conn
        .prepare("SELECT fitness FROM jobs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(fitness, [0.2, -3.5, -1.0]);
}
