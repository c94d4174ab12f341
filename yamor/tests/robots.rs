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
/// counts; unsaid, the robot's optimize.xml decides (the hexapod's
/// declares the axis, the quadruped's nothing), and `--direction any`
/// overrides it; a direction nobody knows is refused by name.
#[test]
fn a_run_along_the_axis_says_so_and_an_unknown_direction_is_refused() {
    let home = std::env::temp_dir().join(format!("yamor-direction-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let run_robot = |robot: &str, direction: Option<&str>| {
        Command::new(BIN)
            .args(["run", robot, "--budget", "12", "--hosts", "2"])
            .args(["--held-out", "2", "--finalists", "1"])
            .args(direction.map(|d| ["--direction", d]).into_iter().flatten())
            .env("YAMOR_RUNS", &home)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    };
    let run = |direction: &str| run_robot("hexapod", Some(direction));
    let along = "velocities count only what is along the robot's long axis";
    let any = "velocities count the distance covered in any direction";
    for (robot, expected) in [("hexapod", along), ("quadruped", any)] {
        let out = run_robot(robot, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains(expected), "{robot}: {stderr}");
    }
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

/// `--seeds 2` runs two seeds side by side, writes each one's outputs in
/// its own directory and reports how far their held-out figures spread
/// (and what that means for a single run); `--seeds 0` is refused.
#[test]
fn runs_of_several_seeds_report_how_far_the_answer_depends_on_the_seed() {
    let home = std::env::temp_dir().join(format!("yamor-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let out_dir = home.join("two-seeds");
    let out = Command::new(BIN)
        .args([
            "run", "wheel", "--budget", "12", "--hosts", "2", "--seed", "3",
        ])
        .args(["--held-out", "3", "--finalists", "1", "--seeds", "2"])
        .arg("--out")
        .arg(&out_dir)
        .env("YAMOR_RUNS", &home)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for seed in [3, 4] {
        let gait = out_dir.join(format!("seed-{seed}")).join("best_gait.xml");
        assert!(gait.exists(), "{} missing: {stderr}", gait.display());
    }
    assert!(!out_dir.join("best_gait.xml").exists(), "{stderr}");
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("2 seeds (3, 4): held-out means "))
        .unwrap_or_else(|| panic!("no seed summary: {stderr}"));
    // Each seed's figure is the one its own report gave.
    for line in stderr.lines().filter(|l| l.starts_with("best gait: ")) {
        let figure = line.split('(').nth(1).unwrap().split(" ±").next().unwrap();
        assert!(summary.contains(figure), "{figure} not in {summary}");
    }
    assert!(
        stderr.contains("the answer depends on the seed by more than 10 %")
            || stderr.contains("the seeds agree within 10 % of the median"),
        "{stderr}"
    );
    let refused = Command::new(BIN)
        .args(["run", "wheel", "--seeds", "0"])
        .env("YAMOR_RUNS", &home)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--seeds"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let _ = std::fs::remove_dir_all(&home);
}
