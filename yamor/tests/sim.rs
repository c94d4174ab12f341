//! `yamor sim` as a user runs it: the held-out starts and their summary, and
//! the one-seed walk that re-walks a recorded job.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_yamor");

/// A CSV path of this test's own, removed when dropped.
struct TempCsv(PathBuf);

impl TempCsv {
    fn new(name: &str) -> Self {
        TempCsv(std::env::temp_dir().join(format!("yamor-sim-{}-{name}.csv", std::process::id())))
    }
}

impl Drop for TempCsv {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn sim(args: &[&str], csv: &TempCsv) -> String {
    let out = Command::new(BIN)
        .arg("sim")
        .args(args)
        .arg("--csv")
        .arg(&csv.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// The number before ` cm/s` on `line`.
fn cm_s(line: &str) -> f64 {
    let before = line.split(" cm/s").next().unwrap();
    let number = before.rsplit([' ', ':']).next().unwrap();
    number.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[test]
fn sim_walks_the_held_out_starts_and_summarises_them() {
    let csv = TempCsv::new("starts");
    let stdout = sim(&["quadruped", "--starts", "3"], &csv);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    let first = yamor_core::starts::HELD_OUT_FIRST_SEED;
    let mut values = Vec::new();
    for (i, line) in lines[..3].iter().enumerate() {
        let prefix = format!("start {}: ", first + i as u64);
        assert!(line.starts_with(&prefix), "{line:?}");
        values.push(cm_s(line));
    }
    let summary = lines[3];
    assert!(summary.starts_with("velocity "), "{summary:?}");
    assert!(summary.contains("(3 starts, p10 "), "{summary:?}");
    assert!(
        summary.contains(" over held-out starts; turning "),
        "{summary:?}"
    );
    let mean = summary
        .strip_prefix("velocity ")
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .parse::<f64>()
        .unwrap();
    // Each printed value is rounded to 0.005 and so is the printed mean.
    let printed_mean = values.iter().sum::<f64>() / 3.0;
    assert!(
        (mean - printed_mean).abs() <= 0.0101,
        "{mean} vs {values:?}"
    );
    // The part along the long axis, never more than the velocity.
    let along = lines[4];
    assert!(along.starts_with("along the long axis "), "{along:?}");
    let along_mean: f64 = along
        .strip_prefix("along the long axis ")
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(along_mean <= mean + 1e-9, "{along_mean} > {mean}");
    assert!(lines[5].contains("x real time"), "{}", lines[5]);
    assert!(lines[5].contains(&format!("trajectory of start {first} in")));
    let trajectory = std::fs::read_to_string(&csv.0).unwrap();
    assert!(trajectory.starts_with("t,x,y,z\n"));

    // The first start's line is what `--seed` on that start walks.
    let single = sim(&["quadruped", "--seed", &first.to_string()], &csv);
    let line = single.lines().next().unwrap();
    assert!(line.starts_with("velocity "), "{single}");
    let walked = line.split(['(', ')']).nth(1).unwrap();
    assert_eq!(walked, format!("{:.2} cm/s", values[0]));
    assert_eq!(single.lines().count(), 2, "{single}");
}

/// `yamor run` prints the one `yamor sim` command that re-walks its best
/// gait; run as printed, it walks the figure the run reported, to the
/// digit, also when the run's warm-up is not the default.
#[test]
fn the_command_yamor_run_prints_walks_the_figure_it_reported() {
    let out_dir = std::env::temp_dir().join(format!("yamor-sim-{}-rewalk", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = Command::new(BIN)
        .args(["run", "quadruped", "--budget", "24", "--hosts", "2"])
        .args([
            "--warmup",
            "2",
            "--measure",
            "3",
            "--held-out",
            "4",
            "--finalists",
            "2",
        ])
        .arg("--out")
        .arg(&out_dir)
        // Its database beside it, not in the user's runs.
        .arg("--db")
        .arg(out_dir.with_extension("db"))
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let reported = stderr
        .lines()
        .find(|l| l.starts_with("best gait: "))
        .unwrap_or_else(|| panic!("no best gait line: {stderr}"));
    let figure = reported.split_once(" (").unwrap().1;
    let command = stderr
        .lines()
        .find_map(|l| l.strip_prefix("re-walk it: yamor sim "))
        .unwrap_or_else(|| panic!("no re-walk command: {stderr}"));
    assert!(command.contains("--warmup 2 "), "{command}");
    let csv = TempCsv::new("rewalk");
    let stdout = sim(&command.split(' ').collect::<Vec<_>>(), &csv);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("velocity "))
        .unwrap_or_else(|| panic!("{stdout}"));
    // "velocity 12.34 ± 0.56 cm/s (4 starts, …) over held-out starts; …"
    let walked = summary
        .strip_prefix("velocity ")
        .unwrap()
        .split("; ")
        .next()
        .unwrap();
    assert!(
        figure.starts_with(walked),
        "the run reported {figure:?}, yamor sim walked {walked:?}"
    );
    // The file says the same, and how to walk it.
    let gait = std::fs::read_to_string(out_dir.join("best_gait.xml")).unwrap();
    assert!(gait.contains("engine articulated, step "), "{gait}");
    assert!(gait.contains("warm-up 2 s, measured 3 s"), "{gait}");
    assert!(gait.contains(figure.trim_end_matches(')')), "{gait}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
