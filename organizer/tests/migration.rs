//! Opening a database written by the organizer before schema versions
//! (tests/data/v0.db, see tests/data/README.md) migrates every row, and its
//! interrupted run resumes.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake::FakeNet;
use common::temp_dir;
use yamor_core::evaluation::{BackendKind, DefectMode, RobotSource};
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
            .filter_map(|j| j.velocity())
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
        let outcome = full.outcome.as_ref().unwrap();
        assert_eq!(outcome.velocity, 0.0125);
        assert_eq!(outcome.samples.len(), 3);
        assert_eq!(outcome.sample_count, 3);
        assert_eq!(outcome.end.t, 7.0);
        assert_eq!(outcome.physics_steps, 7000);
        assert_eq!(outcome.wall, Duration::from_millis(500));
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
        assert_eq!(store.max_ids().unwrap(), (2, 2, 1002));
    }
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
