//! `yamor run`'s refusals and exit codes, as a script sees them: a refused
//! start exits non-zero with the reason and leaves no run directory behind,
//! a bad count is named as one, Ctrl-C exits 130 after writing what was
//! found; and runs accumulate in the one database they share.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_yamor");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yamor-exit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn a_gait_for_a_module_the_world_lacks_is_refused_before_any_directory_exists() {
    let root = temp_dir("stray-module");
    let robot = root.join("my-robot");
    std::fs::create_dir_all(&robot).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/robots/quadruped");
    std::fs::copy(examples.join("world.xml"), robot.join("world.xml")).unwrap();
    // The gait configures module 42, which world.xml does not have.
    let gait = std::fs::read_to_string(examples.join("gait.xml")).unwrap();
    let stray = gait.replacen(
        "</modulelist>",
        r#"<module id="42" amplitude="0" offset="0" speed="0" minangle="-1" maxangle="1"/></modulelist>"#,
        1,
    );
    assert_ne!(stray, gait, "the example gait has a module list");
    std::fs::write(robot.join("gait.xml"), stray).unwrap();
    let runs = root.join("runs");
    let out = Command::new(BIN)
        .arg("run")
        .arg(&robot)
        .env("YAMOR_RUNS", &runs)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("module 42, which is not in the morphology"),
        "{stderr}"
    );
    assert_eq!(entries(&runs), 0, "a refused run left a directory");
}

#[test]
fn a_range_beyond_the_joint_limits_is_refused_with_the_limits() {
    let root = temp_dir("beyond-limits");
    let config = root.join("optimize.xml");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/robots/quadruped");
    let text = std::fs::read_to_string(examples.join("optimize.xml")).unwrap();
    let wide = text.replacen(
        r#"<optimize param="amplitude_0" min="0" max="0.785"/>"#,
        r#"<optimize param="amplitude_0" min="0" max="1.5"/>"#,
        1,
    );
    assert_ne!(wide, text);
    std::fs::write(&config, wide).unwrap();
    let out_dir = root.join("out");
    let out = Command::new(BIN)
        .args(["run", "quadruped", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&out_dir)
        .env("YAMOR_RUNS", root.join("runs"))
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("joint limits"), "{stderr}");
    assert!(!out_dir.exists(), "a refused run made its --out directory");
}

#[test]
fn a_negative_budget_is_named_as_a_count_of_evaluations() {
    let out = Command::new(BIN)
        .args(["run", "--budget", "-5"])
        .env("YAMOR_RUNS", temp_dir("negative-budget"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("budget must be a positive number of evaluations"),
        "{stderr}"
    );
    assert!(!stderr.contains("-- -5"), "{stderr}");
}

#[test]
fn ctrl_c_stops_the_run_writes_what_it_found_and_exits_130() {
    let root = temp_dir("interrupted");
    let out_dir = root.join("out");
    let mut child = Command::new(BIN)
        .args([
            "run",
            "quadruped",
            "--budget",
            "100000",
            "--hosts",
            "1",
            "--warmup",
            "0.5",
            "--measure",
            "0.5",
        ])
        .arg("--out")
        .arg(&out_dir)
        .env("YAMOR_RUNS", root.join("runs"))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the run is under way (its first progress line), then
    // interrupt it as a terminal's Ctrl-C does.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut told = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !told && line.contains("evaluations, best") && !line.contains(" 0/") {
                let _ = tx.send(None);
                told = true;
            }
            lines.push(line);
        }
        let _ = tx.send(Some(lines.join("\n")));
    });
    let first = rx.recv_timeout(Duration::from_secs(120));
    assert!(matches!(first, Ok(None)), "no progress line: {first:?}");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    let log = rx
        .recv_timeout(Duration::from_secs(60))
        .ok()
        .flatten()
        .unwrap_or_default();
    assert_eq!(status.code(), Some(130), "{log}");
    assert!(log.contains("stopping; keeping what was found"), "{log}");
    assert!(out_dir.join("evaluations.csv").exists(), "{log}");
    assert!(out_dir.join("best_gait.xml").exists(), "{log}");
}

/// `yamor run` with a quick walk, `YAMOR_RUNS` at `home`.
fn quick_run(home: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args([
            "run",
            "quadruped",
            "--budget",
            "6",
            "--hosts",
            "1",
            "--warmup",
            "0.2",
            "--measure",
            "0.3",
            "--held-out",
            "0",
        ])
        .args(extra)
        .env("YAMOR_RUNS", home)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

#[test]
fn runs_accumulate_in_one_database_and_one_held_elsewhere_is_not_shared() {
    let home = temp_dir("shared-store");
    for _ in 0..2 {
        let out = quick_run(&home, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // A normal end checkpoints and closes the database: nothing beside it.
        for leftover in ["yamor.db-wal", "yamor.db-shm"] {
            assert!(
                !home.join(leftover).exists(),
                "{leftover} left behind: {stderr}"
            );
        }
        assert!(!stderr.contains("ERROR"), "{stderr}");
    }
    let runs = yamor_organizer::Store::open(&home.join("yamor.db"))
        .unwrap()
        .runs()
        .unwrap();
    let ids: Vec<u64> = runs.iter().map(|r| r.id).collect();
    assert_eq!(ids, [1, 2], "each run has its own id in the one database");
    assert_ne!(runs[0].name, runs[1].name);

    // While another process holds the shared database, a run records into
    // its own directory and says so.
    let held = yamor_local::shared::Claim::try_hold(&home.join("yamor.db"))
        .unwrap()
        .expect("free between runs");
    let own = home.join("own");
    let out = quick_run(&home, &["--out", own.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("in use by another yamor run"), "{stderr}");
    assert!(own.join("yamor.db").exists(), "{stderr}");
    drop(held);
}

/// Starts a long `yamor run` with its runs in `home` and kills it (-9)
/// once some walks are done.
fn kill_mid_run(home: &Path) {
    let mut killed = Command::new(BIN)
        .args(["run", "quadruped", "--budget", "100000", "--hosts", "1"])
        .env("YAMOR_RUNS", home)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = killed.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            // Under way: some walks done, more queued.
            if line.contains("evaluations, best") && !line.contains(" 0/") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the first run started");
    killed.kill().unwrap();
    killed.wait().unwrap();
}

#[test]
fn a_run_an_ended_process_left_running_is_ended_not_resumed_on_other_hosts() {
    use yamor_organizer::model::{JobFilter, JobState, RunState};
    // A yamor run killed mid-run (kill -9: nothing of it ends its run),
    // while some of its jobs are unfinished: killed right after a batch's
    // last walk it may have none (the next batch not yet asked for), and
    // then nothing would be left to end; such an attempt is redone.
    let home = (0..5)
        .find_map(|attempt| {
            let home = temp_dir(&format!("orphan-{attempt}"));
            kill_mid_run(&home);
            let store = yamor_organizer::Store::open(&home.join("yamor.db")).unwrap();
            let runs = store.runs().unwrap();
            let unfinished = store
                .jobs(&JobFilter {
                    run_id: Some(runs[0].id),
                    ..JobFilter::default()
                })
                .unwrap()
                .iter()
                .any(|j| matches!(j.state, JobState::Queued | JobState::Running));
            if unfinished {
                Some(home)
            } else {
                let _ = std::fs::remove_dir_all(&home);
                None
            }
        })
        .expect("no kill left an unfinished job in 5 attempts");

    let out = quick_run(&home, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = yamor_organizer::Store::open(&home.join("yamor.db")).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].state, RunState::Stopped);
    assert!(runs[0].error.contains("interrupted"), "{}", runs[0].error);
    assert_eq!(runs[1].state, RunState::Finished);
    // The orphan's unfinished jobs were cancelled, none walked on the new
    // run's host.
    let orphan_jobs = store
        .jobs(&JobFilter {
            run_id: Some(runs[0].id),
            ..JobFilter::default()
        })
        .unwrap();
    assert!(!orphan_jobs.is_empty());
    assert!(
        orphan_jobs
            .iter()
            .all(|j| matches!(j.state, JobState::Cancelled | JobState::Done)),
        "{:?}",
        orphan_jobs.iter().map(|j| j.state).collect::<Vec<_>>()
    );
    assert!(orphan_jobs.iter().any(|j| j.state == JobState::Cancelled));
    assert!(
        orphan_jobs
            .iter()
            .filter(|j| j.state == JobState::Done)
            .all(|j| j.finished_ms < runs[1].started_ms),
        "a job of the orphan finished after the new run started"
    );
}

/// One plain HTTP/1.0 GET of `path` at `address`: the whole answer.
fn http_get(address: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn yamor_dashboard_shows_the_shared_database_without_a_cluster_and_changes_nothing() {
    let home = temp_dir("dashboard");
    let out = quick_run(&home, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut dashboard = Command::new(BIN)
        .args(["dashboard", "--http", "127.0.0.1:0"])
        .env("YAMOR_RUNS", &home)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = dashboard.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let banner = rx.recv_timeout(Duration::from_secs(60)).expect("a banner");
    assert!(banner.contains("read-only, 1 runs"), "{banner}");
    let address = banner
        .split("on http://")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap()
        .to_owned();
    let runs = http_get(&address, "/runs");
    assert!(
        runs.starts_with("HTTP/1.0 200") || runs.starts_with("HTTP/1.1 200"),
        "{runs}"
    );
    assert!(runs.contains("/runs/1"), "{runs}");
    let form = http_get(&address, "/runs/new");
    assert!(form.contains("read-only view"), "{form}");
    // The database is still the cluster's to write: a run starts while
    // the dashboard shows it.
    let out = quick_run(&home, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Ended as a user ends it (Ctrl-C, or a service manager's SIGTERM),
    // it leaves nothing beside the database: no -wal, no -shm.
    let ended = Command::new("kill")
        .args(["-TERM", &dashboard.id().to_string()])
        .status()
        .unwrap();
    assert!(ended.success());
    let status = dashboard.wait().unwrap();
    assert!(status.success(), "{status}");
    let beside: Vec<String> = std::fs::read_dir(&home)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("yamor.db-"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
}
