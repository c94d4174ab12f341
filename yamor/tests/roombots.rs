//! `yamor roombots …` from the command line: a command file played, a bad
//! one refused with its line, a bad grid refused.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_yamor");

fn example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/roombots")
        .join(name)
}

#[test]
fn the_inchworm_example_plays_to_its_end_held_by_the_other_end_twice() {
    for connection in ["parallel", "perpendicular", "shear-z", "shear-s"] {
        let out = Command::new(BIN)
            .args(["roombots", "play", "--connection", connection])
            .arg(example("inchworm.txt"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{connection}: {stdout}{stderr}");
        assert!(
            stdout.contains("the meta-module is held by its bw end now")
                && stdout.contains("the meta-module is held by its fw end now"),
            "{stdout}"
        );
        let last = stdout.lines().last().unwrap();
        assert!(
            last.contains("cubes at [[-3, -3, 0], [-2, -3, 0], [-1, -3, 0], [0, -3, 0]]")
                && last.contains("locked 0:C0X"),
            "{connection}: {stdout}"
        );
        // Simulated by default: the engine's cubes end where the plan's do.
        assert!(
            last.contains(
                "the simulation's cubes at [[-3, -3, 0], [-2, -3, 0], [-1, -3, 0], [0, -3, 0]]"
            ),
            "{connection}: {stdout}"
        );
        assert!(!stdout.contains("STUCK"), "{connection}: {stdout}");
    }
    let planned = Command::new(BIN)
        .args(["roombots", "play", "--kinematic"])
        .arg(example("inchworm.txt"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&planned.stdout);
    assert!(planned.status.success());
    assert!(
        stdout.contains("kinematically") && !stdout.contains("simulated"),
        "{stdout}"
    );
}

#[test]
fn a_bad_command_file_is_refused_before_anything_moves_with_its_line() {
    let dir = std::env::temp_dir().join(format!("yamor-roombots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.txt");
    std::fs::write(&file, "step 10\nlock 0 C9Q\n").unwrap();
    let out = Command::new(BIN)
        .args(["roombots", "play"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stdout.is_empty(), "nothing played: {stdout}");
    assert!(
        stderr.contains("line 2: unknown connector \"C9Q\""),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    let grid = Command::new(BIN)
        .args(["roombots", "ik-targets", "--steps", "18"])
        .output()
        .unwrap();
    assert!(!grid.status.success());
    assert!(String::from_utf8_lossy(&grid.stderr).contains("multiple of 12"));
}

#[test]
fn a_roombot_robot_learns_a_gait_on_the_cluster_and_reports_it_held_out() {
    let home = std::env::temp_dir().join(format!("yamor-roombots-run-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(BIN)
        .args([
            "run",
            "roombots-meta",
            "--budget",
            "16",
            "--hosts",
            "2",
            "--warmup",
            "1",
            "--measure",
            "2",
        ])
        .env("YAMOR_RUNS", &home)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    // Valued over held-out starts, against the gait as given, with the
    // command that walks it again.
    assert!(all.contains("over held-out starts"), "{all}");
    assert!(all.contains("the gait as given walks"), "{all}");
    let command = all
        .lines()
        .find_map(|l| l.strip_prefix("re-walk it: "))
        .unwrap_or_else(|| panic!("no re-walk command: {all}"));
    assert!(
        command.starts_with("yamor roombots walk roombots-meta --gait "),
        "{command}"
    );
    // The command reproduces the reported figure.
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let again = Command::new(BIN).args(&args).output().unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let figure = String::from_utf8_lossy(&again.stdout)
        .lines()
        .last()
        .unwrap()
        .trim_start_matches("velocity ")
        .split(" over")
        .next()
        .unwrap()
        .to_owned();
    assert!(all.contains(&figure), "{figure} not in {all}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_roombot_walk_of_an_unknown_robot_says_which_exist() {
    let out = Command::new(BIN)
        .args(["roombots", "walk", "roombots-spider"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("roombots-meta, roombots-quadruped"),
        "{stderr}"
    );
}

#[test]
fn the_chairs_two_command_files_play_beside_the_stool_to_its_back() {
    let stool = example("stool.txt");
    let text = std::fs::read_to_string(&stool).unwrap();
    assert_eq!(
        yamor_roombots::stage::parse_structure(&text).unwrap(),
        yamor_roombots::scene::STOOL.to_vec(),
        "the example stool is the scene's"
    );
    // The two files, played in the order given, from (0, 1) and (0, 0).
    let play = |first: &str, second: &str| {
        Command::new(BIN)
            .args(["roombots", "play", "--connection", "shear-s", "--structure"])
            .arg(&stool)
            .args(["--at", "0,1", "--at", "0,0"])
            .arg(example(first))
            .arg(example(second))
            .output()
            .unwrap()
    };
    let out = play("chair-1.txt", "chair-2.txt");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("STUCK"), "{stdout}");
    for (who, column) in [
        ("[1]", "[[3, 1, 5], [3, 1, 4], [3, 1, 3], [3, 1, 2]]"),
        ("[2]", "[[3, 0, 5], [3, 0, 4], [3, 0, 3], [3, 0, 2]]"),
    ] {
        let end = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{who} end:")))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(
            end.contains(&format!("cubes at {column}"))
                && end.contains(&format!("the simulation's cubes at {column}")),
            "{end}"
        );
    }
    assert!(stdout.contains("onto the -x side of the structure's cell"));
    assert!(stdout.contains("onto the top of the structure's cell"));

    // Swapped, each file's reaches are made from the other's floor cell:
    // the first lock faces no connector and is refused with its line.
    let swapped = play("chair-2.txt", "chair-1.txt");
    assert!(!swapped.status.success());
    assert!(
        String::from_utf8_lossy(&swapped.stderr).contains("[1] line 3 (lock 1 C3X) refused"),
        "{}",
        String::from_utf8_lossy(&swapped.stderr)
    );

    // Bad set-ups are refused before anything moves.
    for (args, why) in [
        (vec!["--at", "0,1"], "2 command files need 2 --at cells"),
        (
            vec!["--at", "0,1", "--at", "0,1"],
            "two meta-modules would stand in cell",
        ),
        (
            vec!["--at", "2,0", "--at", "0,0"],
            "would stand in the structure's cell [2, 0, 0]",
        ),
        (vec!["--at", "0;1", "--at", "0,0"], "is not a floor cell"),
    ] {
        let out = Command::new(BIN)
            .args(["roombots", "play", "--structure"])
            .arg(&stool)
            .args(&args)
            .arg(example("chair-1.txt"))
            .arg(example("chair-2.txt"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing played");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
}

fn structure(name: &str) -> std::path::PathBuf {
    example(&format!("structures/{name}"))
}

#[test]
fn meta_modules_build_a_chair_by_themselves_and_a_bad_structure_is_refused_by_line() {
    let dir = std::env::temp_dir().join(format!("yamor-build-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let picture = dir.join("build.png");
    let out = Command::new(BIN)
        .args(["roombots", "build"])
        .arg(structure("chair-4.xml"))
        .arg("--picture")
        .arg(&picture)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("built: 4 of 4 seeds filled"), "{stdout}");
    assert!(stdout.contains(" 0 collisions"), "{stdout}");
    assert_eq!(stdout.matches("fills its seed").count(), 4, "{stdout}");
    assert!(std::fs::read(&picture).unwrap().starts_with(b"\x89PNG"));

    let tally = Command::new(BIN)
        .args([
            "roombots",
            "build",
            "--trials",
            "5",
            "--connection",
            "shear-z",
        ])
        .arg(structure("stool-6.xml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&tally.stdout);
    assert!(tally.status.success());
    assert!(
        stdout.contains("6 meta-modules, shear-z: built 5/5") && stdout.contains(" 0 collisions"),
        "{stdout}"
    );

    let bad = dir.join("bad.xml");
    std::fs::write(&bad, "<structure>\n<module level=\"0\">\n<root x=\"0\" y=\"0\" z=\"0\"/>\n</module>\n<offset x=\"1\" y=\"1\" z=\"0\"/>\n</structure>\n").unwrap();
    let out = Command::new(BIN)
        .args(["roombots", "build"])
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("line 2: <module> has 0 <cube>"), "{stderr}");
    let outside = dir.join("outside.xml");
    std::fs::write(
        &outside,
        std::fs::read_to_string(structure("chair-4.xml"))
            .unwrap()
            .replace(r#"<offset x="5""#, r#"<offset x="11""#),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["roombots", "build"])
        .arg(&outside)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is outside the world"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_deadlock_of_fig_3_5_stops_the_seeds_rule_and_not_the_remedies() {
    let out = Command::new(BIN)
        .args(["roombots", "deadlock"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let line = |start: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("{stdout}"))
            .to_owned()
    };
    assert!(line("canMove").contains("DEADLOCK: 0 moves"), "{stdout}");
    assert!(line("one at a time").contains("built"), "{stdout}");
    assert!(
        line("reservations").contains("built") && line("reservations").contains(" 0 collisions"),
        "{stdout}"
    );
}

#[test]
fn the_servo_rotation_database_has_63_shapes_per_connection_type() {
    let out = Command::new(BIN)
        .args([
            "roombots",
            "srdb",
            "--runs",
            "3",
            "--cases",
            "5",
            "--live-cases",
            "1",
            "--coarse-only",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for t in [
        "parallel (PAR)",
        "perpendicular (PER)",
        "shear-z (SRZ)",
        "shear-s (SRS)",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(t))
            .unwrap();
        let numbers: Vec<&str> = row.split_whitespace().rev().take(5).collect();
        // visited, cells and facing, shapes (the last five columns reversed).
        assert_eq!(
            (numbers[4], numbers[3], numbers[2]),
            ("1296", "315", "63"),
            "{row}"
        );
    }
    assert!(
        stdout.contains("level 3 table") && !stdout.contains("pi/360"),
        "{stdout}"
    );
}
