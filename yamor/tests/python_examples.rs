//! `examples/python`: a host and an external optimizer written from
//! `proto/` alone, against a real organizer. They need `python3` with
//! `grpcio`, `grpcio-tools` and `grpcio-reflection`: `$YAMOR_PYTHON` if set (CI sets it),
//! otherwise a virtual environment this test makes once under `target/`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_stream::StreamExt;
use yamor_core::evaluation::Objective;
use yamor_organizer::model::{
    HostState, JobFilter, JobState, ParameterBound, Problem, RunSpec, RunState,
};
use yamor_organizer::{Organizer, OrganizerClient, SchedulerConfig};
use yamor_proto::transport::{ClientSecurity, ServerSecurity};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A Python with grpcio, grpcio-tools and grpcio-reflection: made once
/// per test binary (the tests run in parallel; two pip installs into one
/// venv at once fail).
fn python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(make_python).clone()
}

fn make_python() -> PathBuf {
    if let Some(python) = std::env::var_os("YAMOR_PYTHON") {
        return python.into();
    }
    let venv = root().join("target").join("python-examples-venv");
    let python = venv.join("bin").join("python");
    // Named after what it holds: an older venv without reflection is redone.
    let ready = venv.join("ready-reflection");
    if !ready.exists() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 is needed for the Python examples' test");
        assert!(made.success(), "python3 -m venv failed");
        let installed = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "grpcio",
                "grpcio-tools",
                "grpcio-reflection",
            ])
            .status()
            .unwrap();
        assert!(
            installed.success(),
            "pip install grpcio grpcio-tools grpcio-reflection failed"
        );
        std::fs::write(&ready, "").unwrap();
    }
    python
}

/// Kills the child when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn organizer() -> (OrganizerClient, Organizer, String) {
    // One directory per organizer: tests of this file run side by side.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("yamor-python-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let organizer = Organizer::start(
        &dir.join("yamor.db"),
        SchedulerConfig::default(),
        ClientSecurity::default(),
        yamor_local::optimizers(),
    )
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(yamor_organizer::serve(
        listener,
        organizer.clone(),
        ServerSecurity::default(),
        std::future::pending(),
    ));
    let client = OrganizerClient::new(&url, &ClientSecurity::default()).unwrap();
    (client, organizer, url)
}

/// Starts examples/python/host.py and waits for its "listening" line.
fn python_host(organizer: &str, name: &str, objectives: &[&str]) -> Running {
    let mut command = Command::new(python());
    command.arg(root().join("examples/python/host.py")).args([
        "--organizer",
        organizer,
        "--name",
        name,
    ]);
    for objective in objectives {
        command.args(["--objective", objective]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("listening on"), "host.py said {line:?}");
    // Keep reading: a closed pipe would make the host's next print fail.
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            eprintln!("host.py: {line}");
        }
    });
    Running(child)
}

/// Polls the organizer until `name` is registered and free.
async fn wait_free(client: &OrganizerClient, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let hosts = client.list_hosts().await.unwrap();
        if hosts
            .iter()
            .any(|h| h.name == name && h.state == HostState::Free)
        {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never registered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn sphere_run(optimizer: &str, objective: &str, budget: u64) -> RunSpec {
    let bounds = (0..3)
        .map(|i| ParameterBound {
            name: format!("x{i}"),
            min: -1.0,
            max: 1.0,
            start: 0.0,
        })
        .collect();
    RunSpec {
        max_evaluations: budget,
        seed: 3,
        objective: Objective::Named(objective.into()),
        ..RunSpec::new(optimizer, Problem::Space(bounds))
    }
}

/// Follows a run to its end; a run that stalls fails the test instead of
/// hanging it.
async fn until_done(client: &OrganizerClient, run_id: u64) -> yamor_organizer::model::Run {
    let follow = async {
        let mut events = client.watch_run(run_id).await.unwrap();
        while let Some(event) = events.next().await {
            let run = event.unwrap().run;
            if run.state != RunState::Running {
                return run;
            }
        }
        panic!("the run's events ended while it ran");
    };
    match tokio::time::timeout(Duration::from_secs(120), follow).await {
        Ok(run) => run,
        Err(_) => {
            let hosts = client.list_hosts().await.unwrap();
            panic!("run {run_id} did not end within 120 s; hosts: {hosts:?}")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_host_serves_a_run_and_a_python_optimizer_drives_the_cluster() {
    let (client, _organizer, url) = organizer().await;
    let _host = python_host(&url, "py-1", &["demo/sphere", "demo/raises"]);
    wait_free(&client, "py-1").await;
    let hosts = client.list_hosts().await.unwrap();
    assert_eq!(hosts[0].objectives, ["demo/sphere", "demo/raises"]);

    // A built-in optimizer on the Python objective.
    let run = client
        .start_run(&sphere_run("pso", "demo/sphere", 60))
        .await
        .unwrap();
    let done = until_done(&client, run.id).await;
    assert_eq!(done.state, RunState::Finished, "{}", done.error);
    assert_eq!(done.evaluations, 60);
    let best = done.best_velocity.unwrap();
    assert!(best <= 0.0 && best > -0.5, "best {best}");

    // The Python optimizer through SubmitJobs/WatchJobs.
    let output = tokio::task::spawn_blocking({
        let url = url.clone();
        move || {
            // coreutils' timeout: a stalled optimizer fails the test.
            Command::new("timeout")
                .arg("120")
                .arg(python())
                .arg(root().join("examples/python/optimizer.py"))
                .args(["--organizer", &url, "--objective", "demo/sphere"])
                .args(["--budget", "64"])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("best") && stdout.contains("after 64 evaluations"),
        "{stdout}"
    );

    // An objective that raises: the jobs fail after their attempts, the
    // host is not taken for dead.
    let run = client
        .start_run(&sphere_run("pso", "demo/raises", 4))
        .await
        .unwrap();
    let done = until_done(&client, run.id).await;
    assert_eq!(done.evaluations, 4);
    assert!(done.best_velocity.is_none());
    let filter = JobFilter {
        run_id: Some(run.id),
        ..JobFilter::default()
    };
    let jobs = client.list_jobs(&filter, true).await.unwrap();
    assert!(jobs.iter().all(|j| j.state == JobState::Failed), "{jobs:?}");
    assert!(jobs.iter().all(|j| j.attempts == 3), "{jobs:?}");
    assert!(jobs[0].error.contains("Unknown"), "{}", jobs[0].error);
    let host = &client.list_hosts().await.unwrap()[0];
    assert_ne!(host.state, HostState::Down);

    // An objective nobody serves is refused at once.
    let error = client
        .start_run(&sphere_run("pso", "demo/unknown", 4))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no registered host"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_grpcio_reflection_lists_the_organizer_api_without_proto_files() {
    let (_client, _organizer, url) = organizer().await;
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(root().join("examples/python/reflect.py"))
            .arg(&url)
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "reflect.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let organizer_line = stdout
        .lines()
        .find(|l| l.starts_with("yamor.v1.Organizer:"))
        .unwrap_or_else(|| panic!("no Organizer service in {stdout}"));
    for method in ["StartRun", "SubmitJobs", "WatchRun", "RegisterHost"] {
        assert!(
            organizer_line.contains(method),
            "{method} missing: {organizer_line}"
        );
    }
    assert!(stdout.contains("grpc.health.v1.Health: Check"), "{stdout}");
}
