//! `yamor run`'s refusals and exit codes, as a script sees them: a refused
//! start exits non-zero with the reason and leaves no run directory behind,
//! a bad count is named as one, and Ctrl-C exits 130 after writing what
//! was found.

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
    let out_dir = temp_dir("interrupted").join("out");
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
