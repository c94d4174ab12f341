//! Every robot `yamor robots` lists optimizes with `yamor run NAME` and its
//! defaults (its default problem, optimizer and walks; a small budget), and
//! the run records which robot it walked.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_yamor");

fn listed_robots() -> Vec<String> {
    let out = Command::new(BIN).arg("robots").output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn every_listed_robot_runs_with_its_defaults_and_the_run_names_it() {
    let robots = listed_robots();
    assert!(robots.len() >= 7, "{robots:?}");
    let home = std::env::temp_dir().join(format!("yamor-robots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let mut failed = Vec::new();
    for robot in &robots {
        let out = Command::new(BIN)
            .args(["run", robot, "--budget", "24", "--hosts", "2"])
            .args(["--held-out", "2", "--finalists", "1"])
            .env("YAMOR_RUNS", &home)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() || !stderr.contains("best gait: ") {
            failed.push(format!("{robot}: {stderr}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    // The shared database says which robot each run walked, and names the
    // run after it.
    let store = yamor_organizer::store::Store::open_view(&home.join("yamor.db")).unwrap();
    let runs = store.runs().unwrap();
    let walked: Vec<String> = runs.iter().map(|r| r.spec.robot_label()).collect();
    assert_eq!(walked, robots);
    store.close_view();
    let _ = std::fs::remove_dir_all(&home);
}

/// `--direction axis` runs, and its report says which way its figure
/// counts; a direction nobody knows is refused by name.
#[test]
fn a_run_along_the_axis_says_so_and_an_unknown_direction_is_refused() {
    let home = std::env::temp_dir().join(format!("yamor-direction-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let run = |direction: &str| {
        Command::new(BIN)
            .args(["run", "hexapod", "--budget", "12", "--hosts", "2"])
            .args(["--held-out", "2", "--finalists", "1"])
            .args(["--direction", direction])
            .env("YAMOR_RUNS", &home)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    };
    let out = run("axis");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("velocities count only what is along the robot's long axis"),
        "{stderr}"
    );
    let out = run("any");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("velocities count the distance covered in any direction"),
        "{stderr}"
    );
    let out = run("sideways");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown direction \"sideways\""),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&home);
}
