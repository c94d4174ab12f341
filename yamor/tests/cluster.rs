//! Multi-process tests: a real organizer and real host processes on
//! 127.0.0.1, driven through the public gRPC API. Synchronisation is by the
//! processes' own output and by the organizer's watch streams, never by
//! sleeping for a guessed time.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_stream::StreamExt;
use tonic::Code;
use yamor_proto::transport::{AuthChannel, ClientSecurity, Token, channel};
use yamor_proto::v1 as pb;
use yamor_proto::v1::organizer_client::OrganizerClient;

const BIN: &str = env!("CARGO_BIN_EXE_yamor");
const EXPR: &str = "-(x - 0.3)^2 - (y + 0.2)^2";

/// A child process killed when dropped.
struct Proc {
    child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn kill9(&mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("reap");
    }

    /// SIGTERM, and waits for the process to end by itself.
    fn terminate(&mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
        let status = self.child.wait().expect("reap");
        assert!(status.success(), "an orderly shutdown exits 0: {status}");
    }
}

/// Reads lines of `reader` until one contains `marker`; returns that line.
fn wait_for_line(reader: impl std::io::Read + Send + 'static, marker: &'static str) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if !sent && line.contains(marker) {
                let _ = tx.send(line);
                sent = true;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("process never printed {marker:?}"))
}

fn start_organizer(db: &Path, listen: &str, token: Option<&str>) -> (Proc, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["organizer", "--listen", listen, "--db"])
        .arg(db)
        .args([
            "--heartbeat",
            "0.2",
            "--lease",
            "1.0",
            "--http",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match token {
        Some(t) => cmd.env("YAMOR_TOKEN", t),
        None => cmd.env_remove("YAMOR_TOKEN"),
    };
    let mut child = cmd.spawn().expect("spawn organizer");
    let line = wait_for_line(child.stderr.take().unwrap(), "organizer listening on ");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http"))
        .expect("url in banner")
        .to_owned();
    (Proc { child }, url)
}

fn start_host(organizer: &str, name: &str, delay_ms: u64) -> Proc {
    start_host_of(
        organizer,
        name,
        &["--expr", EXPR, "--delay-ms", &delay_ms.to_string()],
    )
}

/// A `yamor host` of `kind` (`--expr …`, `--sim ROBOT`) registered as `name`.
fn start_host_of(organizer: &str, name: &str, kind: &[&str]) -> Proc {
    let mut child = Command::new(BIN)
        .arg("host")
        .args(kind)
        .args(["--organizer", organizer, "--name", name])
        .env("RUST_LOG", "warn")
        .env_remove("YAMOR_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn host");
    wait_for_line(child.stdout.take().unwrap(), "listening on");
    Proc { child }
}

fn client(url: &str) -> OrganizerClient<AuthChannel> {
    OrganizerClient::new(channel(url, &ClientSecurity::default()).unwrap())
}

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yamor-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("yamor.db")
}

/// Every job the organizer holds (up to a page).
async fn all_jobs(org: &mut OrganizerClient<AuthChannel>) -> Vec<pb::Job> {
    org.list_jobs(pb::ListJobsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .jobs
}

/// Polls ListHosts until `n` hosts are free (the organizer's own view).
async fn wait_free_hosts(org: &mut OrganizerClient<AuthChannel>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = org.list_hosts(pb::ListHostsRequest {}).await {
            let free = r
                .into_inner()
                .hosts
                .iter()
                .filter(|h| h.state == pb::HostState::Free as i32)
                .count();
            if free >= n {
                return;
            }
        }
        assert!(Instant::now() < deadline, "hosts never became free");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pso_run(budget: u64, particles: u32) -> pb::StartRunRequest {
    pb::StartRunRequest {
        optimizer: "pso".into(),
        settings: [("particles".to_owned(), particles.to_string())].into(),
        seed: 7,
        problem: Some(pb::start_run_request::Problem::Space(pb::ParameterSpace {
            bounds: vec![
                pb::ParameterBound {
                    name: "x".into(),
                    min: -1.0,
                    max: 1.0,
                    start: Some(0.0),
                },
                pb::ParameterBound {
                    name: "y".into(),
                    min: -1.0,
                    max: 1.0,
                    start: Some(0.0),
                },
            ],
        })),
        max_evaluations: budget,
        objective: format!("expr:{EXPR}"),
        ..Default::default()
    }
}

/// A run that spends all of `budget`: CMA-ES restarts until then (PSO
/// may converge and finish early).
fn endless_run(budget: u64) -> pb::StartRunRequest {
    pb::StartRunRequest {
        optimizer: "cmaes".into(),
        settings: Default::default(),
        ..pso_run(budget, 4)
    }
}

/// Follows a run until it is no longer running; a stalled run fails the
/// test instead of hanging it.
async fn wait_run_end(org: &mut OrganizerClient<AuthChannel>, run_id: u64) -> pb::Run {
    let follow = async {
        let mut stream = org
            .watch_run(pb::WatchRunRequest { run_id })
            .await
            .unwrap()
            .into_inner();
        while let Some(event) = stream.next().await {
            let run = event.unwrap().run.unwrap();
            if run.state != pb::RunState::Running as i32 {
                return run;
            }
        }
        panic!("watch stream ended before the run did");
    };
    tokio::time::timeout(Duration::from_secs(300), follow)
        .await
        .unwrap_or_else(|_| panic!("run {run_id} did not end within 300 s"))
}

async fn run_jobs(org: &mut OrganizerClient<AuthChannel>, run_id: u64) -> Vec<pb::Job> {
    org.list_jobs(pb::ListJobsRequest {
        run_id,
        limit: 10_000,
        brief: true,
        ..Default::default()
    })
    .await
    .unwrap()
    .into_inner()
    .jobs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hosts_complete_every_job_and_survive_a_host_killed_mid_job() {
    let db = temp_db("kill-host");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let mut hosts: Vec<Proc> = (0..3)
        .map(|i| start_host(&url, &format!("h{i}"), 150))
        .collect();
    let mut org = client(&url);
    wait_free_hosts(&mut org, 3).await;

    let mut jobs = org
        .watch_jobs(pb::WatchJobsRequest {
            brief: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let run = org.start_run(pso_run(40, 8)).await.unwrap().into_inner();
    // Kill the host of the first job seen running on "h1".
    let victim_job = loop {
        let job = jobs.next().await.unwrap().unwrap();
        if job.state == pb::JobState::Running as i32 && job.host == "h1" {
            hosts[1].kill9();
            break job.id;
        }
    };
    let finished = wait_run_end(&mut org, run.id).await;
    assert_eq!(
        finished.state,
        pb::RunState::Finished as i32,
        "{}",
        finished.error
    );
    assert_eq!(finished.evaluations, 40);
    let all = run_jobs(&mut org, run.id).await;
    assert_eq!(all.len(), 40);
    assert!(all.iter().all(|j| j.state == pb::JobState::Done as i32));
    let victim = all.iter().find(|j| j.id == victim_job).unwrap();
    assert!(
        victim.attempts >= 2,
        "the killed host's job was not retried"
    );
    assert_ne!(victim.host, "h1");
    // The organizer saw the host go.
    let listed = org
        .list_hosts(pb::ListHostsRequest {})
        .await
        .unwrap()
        .into_inner()
        .hosts;
    let h1 = listed.iter().find(|h| h.name == "h1").unwrap();
    assert_eq!(h1.state, pb::HostState::Down as i32);
    // The best point is near the expression's maximum at (0.3, -0.2).
    assert!(finished.best_velocity_m_s.unwrap() > -0.05);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organizer_killed_and_restarted_resumes_the_run_without_rerunning() {
    kill_organizer_mid_run(
        "kill-organizer-pso",
        pso_run(60, 6),
        "particles",
        "6",
        Stop::Kill,
    )
    .await;
}

/// SIGTERM (what docker stop and a reboot send) is an orderly shutdown, not
/// a stop of the runs: started again, the organizer resumes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organizer_given_sigterm_leaves_its_run_to_resume() {
    kill_organizer_mid_run(
        "term-organizer-pso",
        pso_run(60, 6),
        "particles",
        "6",
        Stop::Term,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_powell_run_replays_its_line_searches() {
    let mut run = pso_run(60, 6);
    run.optimizer = "powell".into();
    run.settings = [("variant".to_owned(), "interval".to_owned())].into();
    kill_organizer_mid_run(
        "kill-organizer-powell",
        run,
        "variant",
        "interval",
        Stop::Kill,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_brute_force_run_continues_its_grid() {
    let mut run = pso_run(60, 6);
    run.optimizer = "brute-force".into();
    run.settings = [("resolution".to_owned(), "9".to_owned())].into();
    kill_organizer_mid_run("kill-organizer-grid", run, "resolution", "9", Stop::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_cmaes_run_replays_its_generations() {
    let mut run = pso_run(60, 6);
    run.optimizer = "cmaes".into();
    // Population 6 on 2 parameters: 10 generations, the kill lands in the third.
    run.settings = [("population".to_owned(), "6".to_owned())].into();
    kill_organizer_mid_run("kill-organizer-cmaes", run, "population", "6", Stop::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_powell_cmaes_run_replays_its_stages() {
    let mut run = pso_run(60, 6);
    run.optimizer = "powell-cmaes".into();
    // 60 evaluations: Powell's first 3, CMA-ES (population 6) up to 51, the
    // polishing Powell after; the kill lands in CMA-ES, the resume replays
    // the hand-over.
    run.settings = [("population".to_owned(), "6".to_owned())].into();
    kill_organizer_mid_run("kill-organizer-chain", run, "population", "6", Stop::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_elites_run_killed_mid_run_resumes_with_every_result_in_its_map() {
    let (run, grid) = map_run(72);
    let (db, run_id, evaluations) =
        kill_organizer_mid_run("kill-organizer-map", run, "descriptors", grid, Stop::Kill).await;
    // Read back from the file: the map is rebuilt from the stored results.
    let organizer = yamor_organizer::Organizer::open(
        &db,
        yamor_organizer::SchedulerConfig::default(),
        ClientSecurity::default(),
        yamor_local::optimizers(),
    )
    .unwrap();
    let map = organizer.runs.map(run_id).await.unwrap().expect("a map");
    assert_eq!(map.results as u64, evaluations);
    // Every result is in it: each cell holds the best value that landed there.
    let told = organizer.scheduler.told_jobs(run_id).await.unwrap();
    let mut best: std::collections::BTreeMap<usize, f64> = Default::default();
    for job in &told {
        let xy: Vec<f64> = job.request.job.parameters.iter().map(|(_, v)| *v).collect();
        let value = job.fitness().expect("every job was done");
        let cell = map.grid.cell(&xy);
        let slot = best.entry(cell).or_insert(f64::NEG_INFINITY);
        *slot = slot.max(value);
    }
    let cells: std::collections::BTreeMap<usize, f64> =
        map.cells.iter().map(|c| (c.cell, c.fitness)).collect();
    assert_eq!(cells, best);
    assert!(map.cells.len() > 8, "{} cells", map.cells.len());
    for cell in &map.cells {
        assert_eq!(map.grid.cell(&cell.descriptors), cell.cell);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_adaptation_killed_mid_run_resumes_with_no_walk_lost_or_repeated() {
    let (map, _) = map_run(96);
    // The adaptation walks the same expression: its walks are told one at
    // a time, and it walks its whole budget (stop = 0), so the organizer
    // is killed with walks out.
    let mut adapt = pso_run(30, 6);
    adapt.optimizer = "ite".into();
    adapt.settings = [("stop".to_owned(), "0".to_owned())].into();
    let (db, run_id, evaluations) = kill_organizer_mid_run_after(
        "kill-organizer-ite",
        Some(map),
        adapt,
        "stop",
        "0",
        Stop::Kill,
    )
    .await;
    assert_eq!(evaluations, 30);
    // Every walk was of an elite of the map, in the order a model told
    // every walk in order would choose: the resumed optimizer replayed
    // the walks before the kill and went on from there.
    let organizer = yamor_organizer::Organizer::open(
        &db,
        yamor_organizer::SchedulerConfig::default(),
        ClientSecurity::default(),
        yamor_local::optimizers(),
    )
    .unwrap();
    let run = organizer.runs.get(run_id).unwrap();
    let space = yamor_optimizer_api::Space::new(
        vec![
            yamor_optimizer_api::Bound::new("x", -1.0, 1.0),
            yamor_optimizer_api::Bound::new("y", -1.0, 1.0),
        ],
        vec![0.0, 0.0],
    )
    .unwrap();
    let prior = organizer
        .runs
        .prior(run.prior.expect("a prior"), &space)
        .await
        .unwrap();
    let mut replay = yamor_ite::Ite::new(
        &space,
        &prior,
        &yamor_ite::IteConfig {
            stop: 0.0,
            ..yamor_ite::IteConfig::default()
        },
    );
    let told = organizer.scheduler.told_jobs(run_id).await.unwrap();
    assert_eq!(told.len(), 30);
    for job in &told {
        let x: Vec<f64> = job.request.job.parameters.iter().map(|(_, v)| *v).collect();
        let yamor_optimizer_api::Step::Evaluate(c) =
            yamor_optimizer_api::Optimizer::ask(&mut replay)
        else {
            panic!("the replay stopped")
        };
        assert_eq!(c[0].x, x, "walk {} is not the one the model chose", job.seq);
        let value = job.fitness().expect("every walk was done");
        yamor_optimizer_api::Optimizer::tell(
            &mut replay,
            c[0].tag,
            yamor_optimizer_api::Fitness::Value(value),
        );
    }
}

/// A map-elites run of `budget` walks on the expression, and its grid: an
/// expression's descriptors are its variables, an 8×8 map over x, y.
fn map_run(budget: u64) -> (pb::StartRunRequest, &'static str) {
    let mut run = pso_run(budget, 6);
    run.optimizer = "map-elites".into();
    let grid = "x:-1:1:8,y:-1:1:8";
    run.settings = [
        ("descriptors".to_owned(), grid.to_owned()),
        ("emitters".to_owned(), "2".to_owned()),
        ("batch".to_owned(), "6".to_owned()),
    ]
    .into();
    (run, grid)
}

/// How the organizer goes down mid-run.
#[derive(Clone, Copy, PartialEq)]
enum Stop {
    /// kill -9: a crash.
    Kill,
    /// SIGTERM: docker stop, a reboot, an orderly shutdown.
    Term,
}

async fn kill_organizer_mid_run(
    tag: &str,
    request: pb::StartRunRequest,
    setting: &str,
    value: &str,
    stop: Stop,
) -> (PathBuf, u64, u64) {
    kill_organizer_mid_run_after(tag, None, request, setting, value, stop).await
}

/// [`kill_organizer_mid_run`], with `first` run to its end before and
/// named as the killed run's prior (the map it adapts from).
async fn kill_organizer_mid_run_after(
    tag: &str,
    first: Option<pb::StartRunRequest>,
    mut request: pb::StartRunRequest,
    setting: &str,
    value: &str,
    stop: Stop,
) -> (PathBuf, u64, u64) {
    let db = temp_db(tag);
    let (mut organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let listen = url.trim_start_matches("http://").to_owned();
    let _hosts: Vec<Proc> = (0..3)
        .map(|i| start_host(&url, &format!("r{i}"), 40))
        .collect();
    let mut org = client(&url);
    wait_free_hosts(&mut org, 3).await;
    if let Some(first) = first {
        let first = org.start_run(first).await.unwrap().into_inner();
        let done = wait_run_end(&mut org, first.id).await;
        assert_eq!(done.state, pb::RunState::Finished as i32, "{}", done.error);
        request.prior_run = Some(first.id);
    }
    let budget = request.max_evaluations;
    let optimizer = request.optimizer.clone();
    let run = org.start_run(request).await.unwrap().into_inner();
    // Wait until part of the run is done, then kill -9 the organizer.
    let mut stream = org
        .watch_run(pb::WatchRunRequest { run_id: run.id })
        .await
        .unwrap()
        .into_inner();
    let part_done = async {
        while let Some(event) = stream.next().await {
            if event.unwrap().run.unwrap().evaluations >= 15 {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), part_done)
        .await
        .expect("15 evaluations within 120 s");
    match stop {
        Stop::Kill => organizer.kill9(),
        Stop::Term => organizer.terminate(),
    }
    drop(stream);

    let (_organizer, url2) = start_organizer(&db, &listen, None);
    assert_eq!(url, url2);
    let mut org = client(&url);
    let finished = wait_run_end(&mut org, run.id).await;
    assert_eq!(
        finished.state,
        pb::RunState::Finished as i32,
        "{}",
        finished.error
    );
    // PSO runs to its budget; Powell may converge before it.
    assert!(
        finished.evaluations == budget || (optimizer == "powell" && finished.evaluations < budget)
    );
    assert!(finished.evaluations > 15, "{}", finished.evaluations);
    assert_eq!(
        finished.settings.get(setting).map(String::as_str),
        Some(value)
    );
    let all = run_jobs(&mut org, run.id).await;
    // Exactly one job per proposal: nothing re-run, nothing lost.
    assert_eq!(
        all.len() as u64,
        finished.evaluations,
        "jobs: {}",
        all.len()
    );
    assert!(all.iter().all(|j| j.state == pb::JobState::Done as i32));
    (db, run.id, finished.evaluations)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_invalid_argument_and_a_wrong_token_unauthenticated() {
    let db = temp_db("bad-input");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", Some("t0ken"));
    let good = ClientSecurity {
        token: Some(Token::new("t0ken").unwrap()),
        ..Default::default()
    };
    let mut org = OrganizerClient::new(channel(&url, &good).unwrap());

    // Malformed gait XML.
    let job = |gait: &str| pb::JobRequest {
        job: Some(pb::EvaluationJob {
            gait_xml: gait.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = org
        .submit_jobs(pb::SubmitJobsRequest {
            jobs: vec![job("<yamorconfig><modulelist>")],
            owner: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("jobs[0]"), "{}", err.message());

    // Out-of-range parameter: start outside its bounds; unknown optimizer; bad setting.
    let mut run = pso_run(10, 4);
    if let Some(pb::start_run_request::Problem::Space(space)) = &mut run.problem {
        space.bounds[0].start = Some(5.0);
    }
    let err = org.start_run(run).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().contains('x') && err.message().contains("outside"),
        "{}",
        err.message()
    );
    let mut run = pso_run(10, 4);
    run.optimizer = "gradient-descent".into();
    let err = org.start_run(run).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("gradient-descent"));
    let err = org.start_run(pso_run(10, 1)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("particles"), "{}", err.message());
    // Unknown host.
    let err = org
        .deregister_host(pb::DeregisterHostRequest {
            host_id: 99,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);

    // Wrong and missing tokens change nothing.
    for token in [Some(Token::new("wrong").unwrap()), None] {
        let security = ClientSecurity {
            token,
            ..Default::default()
        };
        let mut intruder = OrganizerClient::new(channel(&url, &security).unwrap());
        let err = intruder.start_run(pso_run(10, 4)).await.unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
        let err = intruder
            .list_runs(pb::ListRunsRequest {})
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
    }
    let runs = org
        .list_runs(pb::ListRunsRequest {})
        .await
        .unwrap()
        .into_inner()
        .runs;
    assert!(runs.is_empty(), "a rejected request created a run");
    let jobs = org
        .list_jobs(pb::ListJobsRequest {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert!(jobs.is_empty());
}

#[test]
fn exposed_listener_without_token_is_refused() {
    let out = Command::new(BIN)
        .args(["organizer", "--listen", "0.0.0.0:0", "--db"])
        .arg(temp_db("exposed"))
        .env_remove("YAMOR_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without a token"), "{stderr}");
}

#[test]
fn a_taken_dashboard_port_stops_the_organizer_before_it_announces_anything() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let db = temp_db("taken-http");
    let out = Command::new(BIN)
        .args(["organizer", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .args(["--http", &taken.local_addr().unwrap().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("binding the dashboard"), "{stderr}");
    assert!(
        stderr.contains("--no-http"),
        "the message says the way out: {stderr}"
    );
    assert!(
        !stderr.contains("listening on"),
        "announced a service it then abandoned: {stderr}"
    );
    assert!(!db.exists(), "nothing was opened before the ports were had");
}

/// A list command against an organizer that is not there prints its one
/// line and nothing else: no table header, no error chain.
#[test]
fn listing_an_unreachable_organizer_is_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    for command in [["optimize", "list"], ["hosts", "list"]] {
        let out = Command::new(BIN)
            .args(command)
            .args(["--organizer", &url])
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{command:?}");
        assert!(out.stdout.is_empty(), "{command:?}: {:?}", out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.trim_end(),
            format!(
                "Error: cannot reach the organizer at {url}: connection refused; \
                 start one with `yamor organizer` or pass --organizer"
            ),
            "{command:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_without_colour_and_say_run_started() {
    let db = temp_db("json-logs");
    let mut child = Command::new(BIN)
        .args([
            "--log-format",
            "json",
            "organizer",
            "--listen",
            "127.0.0.1:0",
        ])
        .args([
            "--http",
            "127.0.0.1:0",
            "--heartbeat",
            "0.2",
            "--lease",
            "1.0",
            "--db",
        ])
        .arg(&db)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn organizer");
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let _organizer = Proc { child };
    let mut seen = Vec::new();
    let next = |seen: &mut Vec<String>| {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no more output after {seen:#?}"));
        seen.push(line.clone());
        line
    };
    let url = loop {
        let line = next(&mut seen);
        if let Some(rest) = line.strip_prefix("organizer listening on ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let _host = start_host(&url, "h0", 0);
    let mut org = client(&url);
    wait_free_hosts(&mut org, 1).await;
    let run = org.start_run(pso_run(6, 3)).await.unwrap().into_inner();
    loop {
        let line = next(&mut seen);
        if !line.starts_with('{') {
            continue; // the banners are for people
        }
        let entry: serde_json::Value =
            serde_json::from_str(&line).expect("one JSON object per line");
        if entry["fields"]["message"] == "run started" {
            assert_eq!(entry["fields"]["run"], run.id);
            assert_eq!(entry["level"], "INFO");
            break;
        }
    }
    assert!(
        seen.iter().all(|l| !l.contains('\u{1b}')),
        "colour codes: {seen:#?}"
    );
}

/// `yamor <args> --organizer <url>`: success, stdout, stderr.
fn cli(url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .args(["--organizer", url])
        .env("RUST_BACKTRACE", "0")
        .env_remove("YAMOR_TOKEN")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The CLI as a script uses it: JSON from every list and show command,
/// batch runs named after their settings, watch lines in a log, jobs
/// newest first with a pointer to the next page, and plain words when
/// there is nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_is_scriptable_and_says_what_it_did() {
    let db = temp_db("cli");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let _host = start_host(&url, "h0", 0);
    let mut org = client(&url);
    wait_free_hosts(&mut org, 1).await;
    let objective = format!("expr:{EXPR}");
    let (ok, out, err) = cli(
        &url,
        &[
            "optimize",
            "batch",
            "--param",
            "x=-1:1",
            "--param",
            "y=-1:1",
            "--objective",
            &objective,
            "--optimizer",
            "pso",
            "--budget",
            "30",
            "--variant",
            "particles=5",
            "--variant",
            "particles=6",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let started = json(&out);
    let names: Vec<&str> = started
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pso particles=5", "pso particles=6"]);
    let first = started[0]["id"].as_u64().unwrap();
    let second = started[1]["id"].as_u64().unwrap();

    // Watching from a log: progress lines on stderr, the final row on stdout.
    let (ok, out, err) = cli(&url, &["optimize", "watch", &second.to_string()]);
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("run {second}: ")),
        "no progress lines: {err}"
    );
    assert!(out.contains("finished"), "{out}");
    wait_run_end(&mut org, first).await;

    let (ok, out, _) = cli(&url, &["optimize", "list", "--json"]);
    assert!(ok);
    for run in json(&out).as_array().unwrap() {
        assert_eq!(run["state"], "finished", "{run}");
        assert_eq!(run["evaluations"], 30, "{run}");
    }
    let (ok, out, _) = cli(&url, &["optimize", "show", &first.to_string(), "--json"]);
    assert!(ok);
    let shown = json(&out);
    assert_eq!(shown["settings"]["particles"], "5");
    let best: Vec<&str> = shown["best_parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(best, ["x", "y"]);
    let (ok, out, _) = cli(&url, &["optimize", "best", &first.to_string(), "--params"]);
    assert!(ok);
    assert!(out.starts_with("x ") && out.contains("\ny "), "{out}");
    let (ok, _, err) = cli(&url, &["optimize", "best", &first.to_string()]);
    assert!(!ok);
    assert!(err.contains("--params"), "{err}");
    let (ok, out, _) = cli(&url, &["optimize", "stop", &first.to_string()]);
    assert!(ok);
    assert!(out.contains("already finished"), "{out}");

    // Sixty jobs: five newest, then the rest from where those end.
    let (ok, out, err) = cli(&url, &["jobs", "list", "--limit", "5", "--json"]);
    assert!(ok, "{err}");
    let page: Vec<u64> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_u64().unwrap())
        .collect();
    assert_eq!(page.len(), 5);
    assert!(
        page.windows(2).all(|w| w[0] > w[1]),
        "newest first: {page:?}"
    );
    let oldest = page[4];
    assert!(
        // The next page as this one was asked for: JSON, five at a time.
        err.contains(&format!(
            "yamor jobs list --json --limit 5 --before {oldest}"
        )),
        "no pointer to the next page: {err}"
    );
    let (ok, out, err) = cli(
        &url,
        &[
            "jobs",
            "list",
            "--before",
            &oldest.to_string(),
            "--limit",
            "100",
            "--json",
        ],
    );
    assert!(ok);
    let rest = json(&out);
    assert_eq!(rest.as_array().unwrap().len(), 55);
    assert!(err.is_empty(), "nothing older remains: {err}");

    let (ok, out, _) = cli(&url, &["hosts", "list", "--json"]);
    assert!(ok);
    let hosts = json(&out);
    assert_eq!(hosts[0]["name"], "h0");
    assert_eq!(hosts[0]["evaluations"], 60);
}

/// `yamor run` on a robot directory of the user's own (not an embedded
/// example), writing into a fresh run directory, not the current one.
#[test]
fn yamor_run_takes_a_robot_directory_and_writes_a_run_directory() {
    let home = temp_db("own-robot").with_file_name("runs");
    let robot = temp_db("own-robot").with_file_name("my-quadruped");
    std::fs::create_dir_all(&robot).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/robots/quadruped");
    for file in ["world.xml", "gait.xml"] {
        std::fs::copy(examples.join(file), robot.join(file)).unwrap();
    }
    let cwd = temp_db("own-robot-cwd").with_file_name("");
    let out = Command::new(BIN)
        .arg("run")
        .arg(&robot)
        .args([
            "--budget",
            "12",
            "--hosts",
            "1",
            "--warmup",
            "1",
            "--measure",
            "1",
        ])
        .current_dir(&cwd)
        .env("YAMOR_RUNS", &home)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Every host halted its robot before the process ended.
    assert!(!stderr.contains("ERROR"), "{stderr}");
    let runs: Vec<PathBuf> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let dir = &runs[0];
    // The run is recorded in the database every yamor run shares, under
    // its directory's name, and not in a database of its own.
    assert!(!dir.join("yamor.db").exists());
    let recorded = yamor_organizer::Store::open(&home.join("yamor.db"))
        .unwrap()
        .runs()
        .unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].name, dir.file_name().unwrap().to_string_lossy());
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("my-quadruped-"),
        "{dir:?}"
    );
    assert!(
        stderr.contains(&format!("outputs in {}", dir.display())),
        "{stderr}"
    );
    let best = std::fs::read_to_string(dir.join("best_gait.xml")).unwrap();
    assert!(
        best.contains("<yamorconfig") || best.contains("yamor"),
        "{best}"
    );
    // Nothing landed where it was started.
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
}

/// Ctrl-C on `optimize watch` stops the watching, not the run, and shows
/// how far the run really is (not its budget).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_watch_leaves_the_run_going_and_shows_its_true_count() {
    let db = temp_db("watch-interrupt");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let _host = start_host(&url, "h0", 5);
    let mut org = client(&url);
    wait_free_hosts(&mut org, 1).await;
    let run = org
        .start_run(endless_run(2_000))
        .await
        .unwrap()
        .into_inner();
    let mut watch = Command::new(BIN)
        .args([
            "optimize",
            "watch",
            &run.id.to_string(),
            "--organizer",
            &url,
        ])
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first progress line says it is watching.
    let (tx, lines) = std::sync::mpsc::channel();
    let stderr = watch.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Progress lines until one shows evaluations (the first is the start).
    let prefix = format!("run {}: ", run.id);
    loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(line.starts_with(&prefix), "{line}");
        if !line.starts_with(&format!("{prefix}0/")) {
            break;
        }
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let out = watch.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // Everything it said, up to its exit.
    let said: Vec<String> = lines.iter().collect();
    assert!(
        said.iter().any(|l| l.starts_with("stopped watching")),
        "{said:?}"
    );
    let row = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = row.split_whitespace().collect();
    // id, name, robot (words), plugin, state, evaluations, …
    let state = fields
        .iter()
        .position(|f| *f == "running")
        .unwrap_or_else(|| panic!("not running: {row}"));
    let count: u64 = fields[state + 1].parse().unwrap();
    assert!(count > 0 && count < 2_000, "{row}");
    let now = org
        .get_run(pb::GetRunRequest { run_id: run.id })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(now.state, pb::RunState::Running as i32, "the run goes on");
    org.stop_run(pb::StopRunRequest { run_id: run.id })
        .await
        .unwrap();
}

/// An error quoting a huge field stays small enough for every client: the
/// status message is cut, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_about_a_huge_field_is_a_short_status() {
    let db = temp_db("huge-field");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let mut org = client(&url);
    let huge = "x".repeat(10_000);
    let mut request = pso_run(10, 4);
    request.optimizer = huge.clone();
    let status = org.start_run(request).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().len() <= 1024,
        "{} bytes",
        status.message().len()
    );
    assert!(
        status.message().ends_with("(message shortened)"),
        "{}",
        status.message()
    );
    // The same call with a short name still gets the whole sentence.
    let mut request = pso_run(10, 4);
    request.optimizer = "no-such-optimizer".into();
    let status = org.start_run(request).await.unwrap_err();
    assert!(
        status.message().contains("no-such-optimizer"),
        "{}",
        status.message()
    );
    assert!(!status.message().contains("shortened"));
}

/// After a resume the run's count never goes back: not to the count last
/// saved with the run, not to where the replay found its best.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_never_shows_fewer_evaluations_than_it_has_recorded() {
    let db = temp_db("count-after-resume");
    let (mut organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let listen = url.trim_start_matches("http://").to_owned();
    let mut host = start_host(&url, "h0", 20);
    let mut org = client(&url);
    wait_free_hosts(&mut org, 1).await;
    let run = org
        .start_run(endless_run(100_000))
        .await
        .unwrap()
        .into_inner();
    let mut stream = org
        .watch_run(pb::WatchRunRequest { run_id: run.id })
        .await
        .unwrap()
        .into_inner();
    while let Some(event) = stream.next().await {
        if event.unwrap().run.unwrap().evaluations >= 40 {
            break;
        }
    }
    // Everything stops at once; nothing new can arrive after the restart.
    organizer.kill9();
    host.kill9();
    drop(stream);
    let (_organizer, _) = start_organizer(&db, &listen, None);
    let mut org = client(&url);
    let recorded = run_jobs(&mut org, run.id)
        .await
        .iter()
        .filter(|j| j.state == pb::JobState::Done as i32)
        .count() as u64;
    assert!(recorded >= 30, "{recorded} results recorded");
    // The organizer sets a run's count from its recorded results before it
    // answers anything (organizer/tests/client.rs checks that on its own),
    // so the first answer after the restart, the one a lagging count would
    // show, already has them all.
    let shown = org
        .get_run(pb::GetRunRequest { run_id: run.id })
        .await
        .unwrap()
        .into_inner()
        .evaluations;
    assert!(shown >= recorded, "recorded {recorded}, shown {shown}");
}

/// A host stopped with SIGTERM says it is leaving: it is down at once (no
/// lease to wait for), and started again under its name it has its id back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_given_sigterm_is_down_at_once_and_comes_back_under_its_id() {
    let db = temp_db("host-sigterm");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let mut host = start_host(&url, "h0", 0);
    let mut org = client(&url);
    wait_free_hosts(&mut org, 1).await;
    let hosts = |org: &mut OrganizerClient<AuthChannel>| {
        let mut org = org.clone();
        async move {
            org.list_hosts(pb::ListHostsRequest {})
                .await
                .unwrap()
                .into_inner()
                .hosts
        }
    };
    let before = hosts(&mut org).await;
    assert_eq!(before.len(), 1);
    host.terminate();
    let gone = hosts(&mut org).await;
    assert_eq!(gone.len(), 1, "still known: {gone:?}");
    assert_eq!(
        gone[0].state,
        pb::HostState::Down as i32,
        "down before any lease ran out"
    );
    let _again = start_host(&url, "h0", 0);
    wait_free_hosts(&mut org, 1).await;
    let back = hosts(&mut org).await;
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(back[0].id, before[0].id, "the same id");
    assert_ne!(
        back[0].address, before[0].address,
        "a new port, the same host"
    );
}

/// A user's own robot goes to the cluster: `optimize start --robot DIR`
/// carries its morphology and gait to the organizer, and a host that was
/// started for another robot walks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_own_robot_runs_on_hosts_that_never_heard_of_it() {
    let db = temp_db("own-robot-cluster");
    let robot = db.with_file_name("my-snake");
    std::fs::create_dir_all(&robot).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/robots/snake");
    for file in ["world.xml", "gait.xml"] {
        std::fs::copy(examples.join(file), robot.join(file)).unwrap();
    }
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let _host = start_host_of(&url, "quad", &["--sim", "quadruped"]);
    let mut org = client(&url);
    wait_free_hosts(&mut org, 1).await;
    let (ok, out, err) = cli(
        &url,
        &[
            "optimize",
            "start",
            "--json",
            "--robot",
            robot.to_str().unwrap(),
            "--optimizer",
            "pso",
            "--budget",
            "8",
            "--warmup",
            "0.5",
            "--measure",
            "1",
            "--held-out",
            "0",
        ],
    );
    assert!(ok, "{err}");
    let run_id = json(&out)[0]["id"].as_u64().unwrap();
    let run = wait_run_end(&mut org, run_id).await;
    assert_eq!(run.state, pb::RunState::Finished as i32, "{}", run.error);
    let jobs = run_jobs(&mut org, run_id).await;
    assert_eq!(jobs.len(), 8);
    for job in &jobs {
        assert_eq!(job.state, pb::JobState::Done as i32, "{}", job.error);
    }
    // What was walked is the snake's body, recorded with the run's jobs.
    let full = org
        .get_job(pb::GetJobRequest { job_id: jobs[0].id })
        .await
        .unwrap()
        .into_inner();
    let source = full
        .request
        .unwrap()
        .job
        .unwrap()
        .robot
        .unwrap()
        .source
        .unwrap();
    let pb::robot::Source::MorphologyXml(xml) = source else {
        panic!("the job names no morphology: {source:?}");
    };
    let snake = std::fs::read_to_string(robot.join("world.xml")).unwrap();
    let modules = |text: &str| text.matches("<module ").count();
    assert_eq!(modules(&xml), modules(&snake), "{xml}");
}

/// Seed 003's builds as cluster jobs: a planning job whose host is killed
/// mid-plan is planned again on the other host, and what is stored is the
/// plan an uninterrupted planner makes from that start; running the batch
/// command again re-uses the stored plan instead of planning it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planning_job_killed_mid_plan_is_planned_elsewhere_with_nothing_lost() {
    use yamor_reconfig::decentralised::Rule;
    use yamor_reconfig::planning::{Planner, Target, Task};
    let db = temp_db("kill-planner");
    let (_organizer, url) = start_organizer(&db, "127.0.0.1:0", None);
    let mut hosts: Vec<Proc> = (0..2)
        .map(|i| start_host_of(&url, &format!("p{i}"), &["--plan"]))
        .collect();
    let mut org = client(&url);
    wait_free_hosts(&mut org, 2).await;
    // 40 meta-modules: a plan that takes long enough to be killed in.
    let task = Task {
        target: Target::Platform { bars: 4, rows: 10 },
        connection: yamor_roombots::chain::ConnectionType::ShearS,
        rule: Rule::Reserve,
        look_ahead: true,
        size: 40,
        max_rounds: 2000,
        method: yamor_reconfig::planning::Method::Decentralised,
        from: None,
    };
    let mut events = org
        .watch_jobs(pb::WatchJobsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let job_id = org
        .submit_jobs(pb::SubmitJobsRequest {
            jobs: vec![pb::JobRequest {
                job: Some(pb::EvaluationJob {
                    objective: task.objective(),
                    spec: Some(pb::EvaluationSpec {
                        seed: 1,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            owner: "test".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .job_ids[0];
    let victim = loop {
        let job = events.next().await.unwrap().unwrap();
        if job.id == job_id && job.state == pb::JobState::Running as i32 {
            let k: usize = job.host.trim_start_matches('p').parse().unwrap();
            hosts[k].kill9();
            break job.host;
        }
    };
    let done = loop {
        let job = events.next().await.unwrap().unwrap();
        if job.id == job_id && job.state >= pb::JobState::Done as i32 {
            break job;
        }
    };
    assert_eq!(done.state, pb::JobState::Done as i32, "{}", done.error);
    assert!(done.attempts >= 2, "the killed host's job was not retried");
    assert_ne!(done.host, victim);
    let stored = org
        .get_job(pb::GetJobRequest { job_id })
        .await
        .unwrap()
        .into_inner();
    let result = yamor_proto::evaluation::outcome(stored.result).unwrap();
    let fitness = result.fitness();
    let yamor_core::evaluation::Outcome::Plan(plan) = result else {
        panic!("a planning job's result is a plan: {result:?}")
    };
    let uninterrupted = {
        let task = task.clone();
        tokio::task::spawn_blocking(move || Planner::new(2).plan(&task, 1, &|| false).unwrap())
            .await
            .unwrap()
    };
    assert!(plan.built && uninterrupted.report.built);
    assert_eq!(plan.collisions, 0);
    assert_eq!(plan.moves as usize, uninterrupted.report.moves.len());
    assert_eq!(
        yamor_reconfig::plan::Plan::try_from(&plan.plan).unwrap(),
        uninterrupted.plan
    );
    assert_eq!(fitness, -f64::from(plan.moves));

    // The batch command finds seed 1 planned and plans only seeds 0 and 2.
    let (ok, out, err) = cli(
        &url,
        &[
            "roombots",
            "plan",
            "--platform",
            "4x10",
            "--size",
            "40",
            "--starts",
            "3",
        ],
    );
    assert!(ok, "{out}\n{err}");
    assert!(
        err.contains("1 of 3 starts already planned or under way; queueing 2"),
        "{err}"
    );
    assert!(
        out.contains("built 3/3; 0 collisions; 0 jobs failed"),
        "{out}"
    );
    let seed_1 = out
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("no row for seed 1: {out}"));
    assert_eq!(
        seed_1.split_whitespace().nth(1),
        Some(job_id.to_string().as_str()),
        "{out}"
    );
    let listed = all_jobs(&mut org).await;
    assert_eq!(listed.len(), 3, "one job per start, none planned twice");

    // The centralised method as a job: 003 Fig 1.2's stool taken apart
    // from six meta-modules to four, on the same hosts.
    let structure = |name: &str| {
        format!(
            "{}/../examples/roombots/structures/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let (ok, out, err) = cli(
        &url,
        &[
            "roombots",
            "plan",
            &structure("stool-4.xml"),
            "--from",
            &structure("stool-6.xml"),
            "--central",
            "--starts",
            "1",
        ],
    );
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("built 1/1; 0 collisions; 0 jobs failed"),
        "{out}"
    );
    let listed = all_jobs(&mut org).await;
    let central = listed
        .iter()
        .find(|j| {
            let job = j.request.as_ref().and_then(|r| r.job.as_ref()).unwrap();
            job.objective.contains("\"central\"")
        })
        .expect("the centralised job is stored");
    let Some(pb::evaluation_result::Kind::Plan(plan)) =
        central.result.as_ref().and_then(|r| r.kind.as_ref())
    else {
        panic!("the centralised job's result is a plan: {central:?}")
    };
    assert!(plan.built && plan.moves >= 2, "{plan:?}");
    assert_eq!(
        plan.plan.as_ref().unwrap().start.len(),
        6,
        "six stand at the start"
    );
}
