//! The third family on the cluster: sled hosts walk a CMA-ES run the
//! organizer schedules and records, and the dashboard shows it, with no
//! line changed outside this crate.

use std::sync::Arc;
use std::time::Duration;

use yamor_core::RobotConfig;
use yamor_core::evaluation::{EvaluationSpec, RobotSource};
use yamor_core::family::RobotFamily;
use yamor_family_sled::{EXAMPLE, FAMILY, SledFamily};
use yamor_host_agent::family::FamilyBackend;
use yamor_local::LocalCluster;
use yamor_organizer::model::{HeldOut, Problem, RunSpec, RunState};

/// One plain HTTP/1.0 GET of `path` on `base` (`http://host:port`),
/// answered within 30 s: the whole answer.
async fn get(base: &str, path: &str) -> String {
    let address = base.trim_start_matches("http://").to_owned();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_family_walks_on_the_cluster_and_shows_on_the_dashboard() {
    let dir = std::env::temp_dir().join(format!("yamor-sled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("sled.db");
    let _ = std::fs::remove_file(&db);
    let family: Arc<dyn RobotFamily> = Arc::new(SledFamily);
    let cluster = LocalCluster::start_with(2, &db, |_| {
        Ok(Arc::new(FamilyBackend::example(
            family.clone(),
            FAMILY,
            None,
        )?))
    })
    .await
    .unwrap();

    let gait: RobotConfig = family.example_gait(FAMILY).unwrap();
    let problem = yamor_local::generic_optimization(FAMILY, gait).unwrap();
    let spec = RunSpec {
        robot: RobotSource::Morphology(EXAMPLE.to_owned()),
        robot_name: "sled".to_owned(),
        spec: EvaluationSpec::lasting_after(1.0, 5.0).unwrap(),
        max_evaluations: 60,
        held_out: HeldOut {
            candidates: 2,
            starts: 4,
        },
        ..RunSpec::new("cmaes", Problem::OptimizationXml(problem))
    };
    let run = cluster.organizer.runs.start(spec).await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(120), cluster.follow_quietly(run.id))
        .await
        .expect("the sled run ends within two minutes")
        .unwrap();
    assert_eq!(done.state, RunState::Finished, "{}", done.error);
    assert!(done.evaluations >= 60, "{done:?}");
    let held_out = done
        .held_out
        .expect("the winner re-walked from held-out starts");
    // The start gait walks at most its model speed + 5 %; the run must
    // find a faster one.
    let start_speed = 1.05 * yamor_family_sled::Sled { mass: 2.0 }.speed(0.3, 0.6, 0.3);
    assert!(
        held_out.mean > start_speed,
        "held out {} m/s, start gait {start_speed} m/s",
        held_out.mean
    );
    assert!(
        done.robot.starts_with("sled (morphology "),
        "{}",
        done.robot
    );

    let runs = get(&cluster.dashboard, "/runs").await;
    assert!(
        runs.starts_with("HTTP/1.1 200") || runs.starts_with("HTTP/1.0 200"),
        "{runs}"
    );
    assert!(
        runs.contains("sled (morphology "),
        "the runs page names the robot"
    );
    let page = get(&cluster.dashboard, &format!("/runs/{}", run.id)).await;
    assert!(
        page.contains("sled (morphology "),
        "the run's page names the robot"
    );
    assert!(
        page.contains(&format!("{:.2}", held_out.mean * 100.0)),
        "the run's page shows the held-out velocity in cm/s"
    );
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
