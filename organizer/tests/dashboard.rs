//! The dashboard and `/metrics` over real HTTP on loopback, against an
//! organizer with real expression hosts: pages list what the API lists, the
//! run page's chart and downloads carry every evaluation, the event stream
//! follows a run to its end, `/metrics` parses as Prometheus text, a
//! token guards every route, other sites' pages can neither read nor change
//! anything, the runs list is paged, and slow clients are cut off.

mod common;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use yamor_core::evaluation::{Objective, Outcome};
use yamor_organizer::Organizer;
use yamor_organizer::http::Options;
use yamor_organizer::model::{JobFilter, RunSpec, RunState};
use yamor_organizer::runs::MAX_BATCH_VARIANTS;
use yamor_proto::transport::Token;

/// An organizer with `hosts` expression hosts and its dashboard's address.
async fn dashboard(name: &str, hosts: usize, token: Option<&str>) -> (Organizer, String) {
    dashboard_with(
        name,
        hosts,
        Options {
            token: token.map(|t| Token::new(t).unwrap()),
            ..Default::default()
        },
    )
    .await
}

/// [`dashboard`] served with `options`.
async fn dashboard_with(name: &str, hosts: usize, options: Options) -> (Organizer, String) {
    let organizer = common::open_organizer(name);
    common::add_expression_hosts(&organizer, hosts, "-(x*x + y*y)", Duration::from_millis(2)).await;
    let address = serve_dashboard(&organizer, options).await;
    (organizer, address)
}

/// Serves `organizer`'s dashboard with `options` on 127.0.0.1:0 until the
/// test's runtime ends; returns its address.
async fn serve_dashboard(organizer: &Organizer, options: Options) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(yamor_organizer::http::serve(
        listener,
        organizer.clone(),
        options,
        std::future::pending(),
    ));
    address
}

/// A response: status code, headers (lower-cased names) and body.
struct Reply {
    status: u16,
    head: String,
    body: String,
}

/// One HTTP/1.1 request, read to the end (`Connection: close`).
async fn request(address: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    send(address, method, path, Some(address), headers, "").await
}

/// A form posted to `path`: `fields` URL-encoded, with `headers`.
async fn post_form(
    address: &str,
    path: &str,
    headers: &[(&str, &str)],
    fields: &[(&str, &str)],
) -> Reply {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}={}", url_encode(k), url_encode(v)))
        .collect();
    let mut headers = headers.to_vec();
    headers.push(("Content-Type", "application/x-www-form-urlencoded"));
    send(
        address,
        "POST",
        path,
        Some(address),
        &headers,
        &body.join("&"),
    )
    .await
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// One HTTP/1.1 request with `Host: host` (none when `None`) and `body`,
/// read to the end (`Connection: close`).
async fn send(
    address: &str,
    method: &str,
    path: &str,
    host: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut text = format!("{method} {path} HTTP/1.1\r\n");
    if let Some(host) = host {
        text.push_str(&format!("Host: {host}\r\n"));
    }
    text.push_str(&format!(
        "Connection: close\r\nContent-Length: {}\r\n",
        body.len()
    ));
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    exchange(address, &text).await
}

/// Sends `text` as it is and reads the reply to the end.
async fn exchange(address: &str, text: &str) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(text.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    Reply {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

async fn get(address: &str, path: &str) -> Reply {
    request(address, "GET", path, &[]).await
}

fn run_spec(budget: u64) -> RunSpec {
    RunSpec {
        name: "sphere <&>".into(),
        max_evaluations: budget,
        seed: 3,
        settings: [("particles".to_owned(), "4".to_owned())].into(),
        objective: Objective::Expression("-(x*x + y*y)".into()),
        ..RunSpec::new("pso", common::sphere_space())
    }
}

/// The id of the run started last.
fn newest_run(organizer: &Organizer) -> u64 {
    organizer
        .runs
        .list()
        .into_iter()
        .map(|r| r.id)
        .max()
        .unwrap()
}

/// Every job of run `id`, briefly (without their trajectories).
async fn run_jobs(organizer: &Organizer, id: u64) -> Vec<yamor_organizer::model::Job> {
    let filter = JobFilter {
        run_id: Some(id),
        ..JobFilter::default()
    };
    organizer.scheduler.list_jobs(filter, true).await.unwrap()
}

async fn until_ended(organizer: &Organizer, id: u64) {
    use tokio_stream::StreamExt;
    let mut events = organizer.runs.watch(id).unwrap();
    while let Some(event) = events.next().await {
        if event.run.state != RunState::Running {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_show_hosts_runs_jobs_and_a_runs_evaluations() {
    let (organizer, address) = dashboard("dash-pages", 2, None).await;
    let run = organizer.runs.start(run_spec(24)).await.unwrap();
    until_ended(&organizer, run.id).await;

    let hosts = get(&address, "/hosts").await;
    assert_eq!(hosts.status, 200);
    assert!(hosts.body.contains("data-host=\"h0\"") && hosts.body.contains("data-host=\"h1\""));
    assert!(
        hosts.body.contains(">expression<") || hosts.body.contains(">expr"),
        "{}",
        hosts.body
    );

    let runs = get(&address, "/runs").await;
    assert_eq!(runs.status, 200);
    // The name is escaped, not injected.
    assert!(runs.body.contains("sphere &lt;&amp;&gt;"), "{}", runs.body);
    assert!(runs.body.contains("24 / 24"));
    // The sparkline has a point per evaluation the run learnt.
    let points = runs
        .body
        .split("points=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a sparkline");
    assert_eq!(points.split_whitespace().count(), 24, "{points}");

    let page = get(&address, &format!("/runs/{}", run.id)).await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.body.matches("class=\"eval\"").count(),
        24,
        "one point per evaluation"
    );
    // Each names its evaluation when hovered and opens its job.
    let first = page.body.split("class=\"eval\"").nth(1).unwrap();
    assert!(first.contains("<title>evaluation "), "{first}");
    assert!(page.body.contains("<a href=\"/jobs/"), "{}", page.body);
    assert!(page.body.contains("id=\"best\""));
    // Kept live by its script (`scripts_are_files_served_with_cache_headers`).
    assert!(page.body.contains("<script src=\"/assets/run.js\""));

    let csv = get(&address, &format!("/runs/{}/evaluations.csv", run.id)).await;
    assert_eq!(csv.status, 200);
    assert!(csv.head.contains("content-type: text/csv"));
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(
        lines[0],
        "index,job,host,attempts,state,fitness,start_seed,turn_deg_s,walk_s,stopped_early_at,x,y"
    );
    assert_eq!(lines.len(), 25);
    // Each row's fitness is the expression at its parameters.
    for line in &lines[1..] {
        let cells: Vec<&str> = line.split(',').collect();
        let number = |i: usize| cells[i].parse::<f64>().unwrap();
        let (f, x, y) = (number(5), number(10), number(11));
        // An expression walks no robot and is never stopped early.
        assert_eq!(cells[9], "", "{line}");
        assert!((f + x * x + y * y).abs() < 1e-9, "{line}");
    }
    let best = organizer.runs.get(run.id).unwrap().best_velocity.unwrap();
    let best_in_csv = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(5).unwrap().parse::<f64>().unwrap())
        .fold(f64::MIN, f64::max);
    assert_eq!(best, best_in_csv);

    // An expression run has no gait to download: a clear 404.
    let xml = get(&address, &format!("/runs/{}/best.xml", run.id)).await;
    assert_eq!(xml.status, 404);
    assert!(xml.body.contains("no best gait"));

    let jobs = get(&address, &format!("/jobs?run={}&state=done", run.id)).await;
    assert_eq!(jobs.status, 200);
    assert_eq!(jobs.body.matches("<td>done</td>").count(), 24);
    let bad = get(&address, "/jobs?state=sleeping").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("unknown job state"));

    assert_eq!(get(&address, "/runs/999").await.status, 404);
    assert_eq!(get(&address, "/gaits").await.status, 200);
    let chart = get(&address, &format!("/runs/{}/chart.svg", run.id)).await;
    assert!(chart.head.contains("image/svg+xml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_paged_newest_first() {
    let (organizer, address) = dashboard("dash-jobs", 2, None).await;
    let run = organizer.runs.start(run_spec(120)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let first = get(&address, "/jobs").await;
    let ids: Vec<u64> = first
        .body
        .split("<tr><td><a href=\"/jobs/")
        .skip(1)
        .map(|row| row.split('"').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 50);
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first");
    assert_eq!(ids[0], 120);
    assert!(first.body.contains("older jobs"));
    let older = get(&address, &format!("/jobs?before={}", ids[49])).await;
    assert!(older.body.contains(&format!(
        "<tr><td><a href=\"/jobs/{0}\">{0}</a></td>",
        ids[49] - 1
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_follows_a_run_to_its_end_and_stop_works() {
    let (organizer, address) = dashboard("dash-events", 1, None).await;
    // A budget it cannot reach before it is stopped.
    let run = organizer.runs.start(run_spec(1_000_000)).await.unwrap();
    let mut progress = organizer.runs.watch(run.id).unwrap();
    let events = {
        let address = address.clone();
        let path = format!("/runs/{}/events", run.id);
        tokio::spawn(async move { get(&address, &path).await })
    };
    // Wait until it has evaluated something, then stop it from the page's form.
    {
        use tokio_stream::StreamExt;
        while let Some(event) = progress.next().await {
            if event.run.evaluations >= 8 {
                break;
            }
        }
    }
    let stop = request(&address, "POST", &format!("/runs/{}/stop", run.id), &[]).await;
    assert_eq!(stop.status, 303, "{}", stop.head);
    let stream = tokio::time::timeout(Duration::from_secs(30), events)
        .await
        .expect("the stream ends with the run")
        .unwrap();
    assert!(stream.head.contains("text/event-stream"));
    let data: Vec<serde_json::Value> = stream
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(data.len() >= 2, "{}", stream.body);
    assert_eq!(data.last().unwrap()["state"], "stopped");
    let counts: Vec<u64> = data
        .iter()
        .map(|d| d["evaluations"].as_u64().unwrap())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_prometheus_text_and_count_jobs() {
    let (organizer, address) = dashboard("dash-metrics", 2, None).await;
    let run = organizer.runs.start(run_spec(24)).await.unwrap();
    until_ended(&organizer, run.id).await;
    // A browser's request, or a scraper's of the classic format, gets
    // text format 0.0.4; Prometheus's gets OpenMetrics.
    let shown = get(&address, "/metrics").await;
    assert!(
        shown
            .head
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{}",
        shown.head
    );
    let prometheus = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    let reply = request(&address, "GET", "/metrics", &[("Accept", prometheus)]).await;
    assert_eq!(reply.status, 200);
    assert!(
        reply
            .head
            .contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{}",
        reply.head
    );
    // OpenMetrics names a counter's family without `_total`, its samples
    // with it, and ends with `# EOF`.
    assert!(
        reply.body.contains("# TYPE yamor_jobs_finished counter\n")
            && reply.body.contains("\nyamor_jobs_finished_total ")
            && reply.body.ends_with("# EOF\n"),
        "{}",
        reply.body
    );
    openmetrics_counters_parse(&reply.body);
    // The classic text, read by a classic parser: every counter is typed
    // as one (its TYPE line names its sample), and no OpenMetrics lines.
    assert!(!shown.body.contains("# EOF"), "{}", shown.body);
    let lines = shown.body.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    for counter in [
        "yamor_jobs_started_total",
        "yamor_jobs_finished_total",
        "yamor_jobs_failed_total",
        "yamor_jobs_retried_total",
        "yamor_runs_started_total",
    ] {
        let sample = scrape
            .samples
            .iter()
            .find(|s| s.metric == counter)
            .unwrap_or_else(|| panic!("no {counter} in\n{}", shown.body));
        assert!(
            matches!(sample.value, prometheus_parse::Value::Counter(_)),
            "{counter} parsed as {:?}",
            sample.value
        );
    }
    let value = |name: &str, label: Option<(&str, &str)>| -> f64 {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
            .unwrap_or_else(|| panic!("no sample {name} {label:?} in\n{}", shown.body))
    };
    assert_eq!(value("yamor_jobs_finished_total", None), 24.0);
    assert!(value("yamor_jobs_started_total", None) >= 24.0);
    assert_eq!(value("yamor_jobs_failed_total", None), 0.0);
    assert_eq!(value("yamor_runs_started_total", None), 1.0);
    assert_eq!(value("yamor_hosts", Some(("state", "free"))), 2.0);
    assert_eq!(value("yamor_hosts", Some(("state", "down"))), 0.0);
    assert_eq!(value("yamor_runs", Some(("state", "finished"))), 1.0);
    let best = organizer.runs.get(run.id).unwrap().best_velocity.unwrap();
    // A run over bare parameters: its best has no unit, and says so.
    assert_eq!(value("yamor_run_best_value", Some(("run", "1"))), best);
    assert!(
        !shown
            .body
            .contains("yamor_run_best_velocity_meters_per_second{"),
        "{}",
        shown.body
    );
    assert_eq!(value("yamor_run_evaluations", Some(("run", "1"))), 24.0);
    // Histograms: 24 evaluation latencies, and the store committed.
    let histogram_count = |name: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name)
            .map(|s| match &s.value {
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.last().map_or(0.0, |b| b.count)
                }
                _ => f64::NAN,
            })
            .unwrap_or_else(|| panic!("no histogram {name} in\n{}", shown.body))
    };
    assert_eq!(histogram_count("yamor_evaluation_seconds"), 24.0);
    assert!(histogram_count("yamor_store_commit_seconds") >= 1.0);
}

/// Reads `body` with a real OpenMetrics parser, Python's `prometheus_client`
/// (strict: it refuses a text without `# EOF` or a counter sample that
/// does not end in `_total`), under `$YAMOR_PYTHON` (CI installs it there);
/// says it skipped without one.
fn openmetrics_counters_parse(body: &str) {
    use std::io::Write as _;
    let Some(python) = std::env::var_os("YAMOR_PYTHON") else {
        eprintln!(
            "skipped: the OpenMetrics parser check needs $YAMOR_PYTHON with prometheus_client"
        );
        return;
    };
    let script = [
        "import sys",
        "from prometheus_client.openmetrics.parser import text_string_to_metric_families",
        "for f in text_string_to_metric_families(sys.stdin.read()):",
        "    print(f.name, f.type)",
    ]
    .join("\n");
    let mut child = std::process::Command::new(python)
        .args(["-c", &script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let families = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    for counter in [
        "yamor_jobs_started",
        "yamor_jobs_finished",
        "yamor_runs_started",
    ] {
        assert!(
            families.lines().any(|l| l == format!("{counter} counter")),
            "{counter} is not a counter: {families}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_every_route() {
    let (_organizer, address) = dashboard("dash-token", 0, Some("s3cret")).await;
    for path in ["/runs", "/hosts", "/metrics", "/jobs", "/runs/1/events"] {
        let reply = get(&address, path).await;
        assert_eq!(reply.status, 401, "{path}");
        assert!(reply.body.contains("needs its token"));
        let wrong = request(&address, "GET", path, &[("Authorization", "Bearer nope")]).await;
        assert_eq!(wrong.status, 401, "{path}");
    }
    let bearer = request(
        &address,
        "GET",
        "/metrics",
        &[("Authorization", "Bearer s3cret")],
    )
    .await;
    assert_eq!(bearer.status, 200);
    // ?token= once sets a cookie that carries it from then on.
    let login = get(&address, "/runs?token=s3cret").await;
    assert_eq!(login.status, 200);
    let cookie = login
        .head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a cookie");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let again = request(&address, "GET", "/hosts", &[("Cookie", &pair)]).await;
    assert_eq!(again.status, 200);
}

/// The start form's fields for a bare-parameter run on expression hosts.
fn sphere_form() -> Vec<(&'static str, &'static str)> {
    vec![
        ("optimizer", "pso"),
        ("params", "x=-1:1\ny=-1:1"),
        ("objective", "expr:-(x*x + y*y)"),
        ("on", "expr"),
        ("budget", "1000000"),
        ("seed", "3"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sites_pages_cannot_start_or_stop_runs() {
    let (organizer, address) = dashboard("dash-origin", 1, None).await;
    let evil = [("Origin", "http://evil.example")];
    let refused = post_form(&address, "/runs", &evil, &sphere_form()).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("evil.example"), "{}", refused.body);
    assert!(organizer.runs.list().is_empty(), "no run started");
    let cross = post_form(
        &address,
        "/runs",
        &[("Sec-Fetch-Site", "cross-site")],
        &sphere_form(),
    )
    .await;
    assert_eq!(cross.status, 403, "{}", cross.body);
    assert!(organizer.runs.list().is_empty(), "no run started");

    // The dashboard's own form: the browser sends its origin.
    let origin = format!("http://{address}");
    let own = [
        ("Origin", origin.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let started = post_form(&address, "/runs", &own, &sphere_form()).await;
    assert_eq!(started.status, 303, "{}", started.body);
    let runs = organizer.runs.list();
    assert_eq!(runs.len(), 1);
    let id = runs[0].id;
    assert_eq!(runs[0].state, RunState::Running);

    let stop = format!("/runs/{id}/stop");
    for headers in [
        &[("Sec-Fetch-Site", "cross-site")][..],
        &evil[..],
        &[("Origin", "null")][..],
        // The right host on another port is another site.
        &[("Origin", "http://127.0.0.1:1")][..],
    ] {
        let reply = request(&address, "POST", &stop, headers).await;
        assert_eq!(reply.status, 403, "{headers:?}: {}", reply.body);
        assert_eq!(
            organizer.runs.get(id).unwrap().state,
            RunState::Running,
            "{headers:?}"
        );
    }
    // Scripts (curl) send neither Origin nor Sec-Fetch-Site.
    let stopped = request(&address, "POST", &stop, &own).await;
    assert_eq!(stopped.status, 303, "{}", stopped.body);
    until_ended(&organizer, id).await;
    assert_eq!(organizer.runs.get(id).unwrap().state, RunState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_answer_only_to_addresses_localhost_and_allowed_names() {
    let (_organizer, address) = dashboard_with(
        "dash-host",
        0,
        Options {
            allowed_hosts: vec!["yamor.lab".into()],
            ..Default::default()
        },
    )
    .await;
    let port = address.rsplit_once(':').unwrap().1;
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("yamor.lab.evil.example:{port}"),
        "127.0.0.1:x".to_owned(),
        "[::1".to_owned(),
    ] {
        let reply = send(&address, "GET", "/runs", Some(&host), &[], "").await;
        assert_eq!(reply.status, 403, "{host}: {}", reply.body);
        assert!(reply.body.contains("--http-host"), "{}", reply.body);
        assert!(!reply.body.contains("<table"), "nothing of the page");
    }
    // Not even a state change, and with no Origin to compare.
    let reply = send(&address, "POST", "/runs", Some("evil.example"), &[], "").await;
    assert_eq!(reply.status, 403);
    for host in [
        address.clone(),
        "127.0.0.1".to_owned(),
        format!("localhost:{port}"),
        "LocalHost".to_owned(),
        format!("[::1]:{port}"),
        "yamor.lab".to_owned(),
        "Yamor.Lab:8443".to_owned(),
    ] {
        let reply = send(&address, "GET", "/runs", Some(&host), &[], "").await;
        assert_eq!(reply.status, 200, "{host}: {}", reply.body);
    }
    // HTTP/1.0 tools may send no Host.
    let old = exchange(&address, "GET /runs HTTP/1.0\r\n\r\n").await;
    assert_eq!(old.status, 200, "{}", old.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_form_refuses_big_batches_and_unknown_host_kinds() {
    let (organizer, address) = dashboard("dash-form", 1, None).await;
    let lines = vec!["particles=4"; MAX_BATCH_VARIANTS + 1].join("\n");
    let mut form = sphere_form();
    form.push(("variants", &lines));
    let big = post_form(&address, "/runs", &[], &form).await;
    assert_eq!(big.status, 400, "{}", big.body);
    assert!(
        big.body
            .contains("a batch holds at most 256 variants, got 257"),
        "{}",
        big.body
    );
    assert!(organizer.runs.list().is_empty());
    let page = get(&address, "/runs/new").await;
    assert!(page.body.contains("at most 256 lines"), "{}", page.body);

    let mut form = sphere_form();
    form.retain(|(k, _)| *k != "on");
    form.push(("on", "moon"));
    let moon = post_form(&address, "/runs", &[], &form).await;
    assert_eq!(moon.status, 400, "{}", moon.body);
    assert!(
        moon.body.contains("moon") && moon.body.contains("any, sim, real, expr"),
        "{}",
        moon.body
    );
    assert!(organizer.runs.list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_form_offers_and_starts_what_yamor_run_does() {
    use std::sync::Arc;
    use yamor_organizer::model::{GAIT_CMAES_POPULATION, GAIT_RUN_BUDGET};
    let organizer = Organizer::open(
        &common::temp_dir("dash-defaults").join("yamor.db"),
        yamor_organizer::SchedulerConfig::default(),
        yamor_proto::transport::ClientSecurity::default(),
        vec![Arc::new(yamor_cmaes::Cmaes)],
    )
    .unwrap();
    // A run of a robot needs a host that walks it.
    let backend =
        yamor_families::sim_backend("quadruped", yamor_sim::SimSettings::default()).unwrap();
    let host = common::serve_host("sim", Arc::new(backend)).await;
    organizer
        .scheduler
        .register_host("sim", &host)
        .await
        .unwrap();
    let problem = include_str!("../../examples/robots/quadruped/optimize.xml");
    let options = Options {
        robots: vec!["quadruped".into()],
        problem_for_robot: Some(Arc::new(move |_: &str| Ok(problem.to_owned()))),
        ..Default::default()
    };
    let address = serve_dashboard(&organizer, options).await;
    let page = get(&address, "/runs/new").await;
    assert!(
        page.body.contains(&format!(
            "name=\"budget\" min=\"0\" value=\"{GAIT_RUN_BUDGET}\""
        )),
        "{}",
        page.body
    );
    let population = page
        .body
        .split("name=\"set.cmaes.population\"")
        .nth(1)
        .and_then(|rest| rest.split("value=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    assert_eq!(population, GAIT_CMAES_POPULATION.to_string());

    // A script posts the robot alone: it gets yamor run's budget and population.
    let bare = [
        ("optimizer", "cmaes"),
        ("robot", "quadruped"),
        ("on", "sim"),
    ];
    let started = post_form(&address, "/runs", &[], &bare).await;
    assert_eq!(started.status, 303, "{}", started.body);
    // The form as shown, its population set back to the plugin's own (0,
    // the automatic size): that choice holds.
    let shown = [
        ("optimizer", "cmaes"),
        ("robot", "quadruped"),
        ("on", "sim"),
        ("budget", "2400"),
        ("set.cmaes.population", "0"),
    ];
    let started = post_form(&address, "/runs", &[], &shown).await;
    assert_eq!(started.status, 303, "{}", started.body);
    let mut runs = organizer.runs.list();
    runs.sort_by_key(|r| r.id);
    assert_eq!(runs.len(), 2);
    // The run says what it walks, in its record and its default name.
    assert_eq!(runs[0].robot, "quadruped");
    assert_eq!(runs[0].name, format!("quadruped-cmaes-{}", runs[0].id));
    // … and every page that shows a run shows it.
    let listed = get(&address, "/runs").await;
    assert!(
        listed.body.contains("<td class=\"robot\">quadruped</td>"),
        "{}",
        listed.body
    );
    let shown = get(&address, &format!("/runs/{}", runs[0].id)).await;
    assert!(
        shown.body.contains("robot <b id=\"robot\">quadruped</b>"),
        "{}",
        shown.body
    );
    let compared = get(
        &address,
        &format!("/compare?run={}&run={}", runs[0].id, runs[1].id),
    )
    .await;
    assert!(
        compared
            .body
            .contains("<tr><th>robot</th><td>quadruped</td><td>quadruped</td></tr>"),
        "{}",
        compared.body
    );
    assert_eq!(runs[0].max_evaluations, GAIT_RUN_BUDGET);
    assert_eq!(
        runs[0].settings["population"],
        GAIT_CMAES_POPULATION.to_string()
    );
    assert_eq!(runs[1].settings["population"], "0");
    for run in runs {
        organizer.runs.stop(run.id).unwrap();
    }
    // StartRun (gRPC) starts the same run from the same request: the
    // organizer fills the gait run's population, not each entry point.
    let by_rpc = organizer
        .runs
        .start(RunSpec {
            robot: yamor_core::evaluation::RobotSource::Example("quadruped".into()),
            ..RunSpec::new(
                "cmaes",
                yamor_organizer::model::Problem::OptimizationXml(problem.to_owned()),
            )
        })
        .await
        .unwrap();
    organizer.runs.stop(by_rpc.id).unwrap();
    assert_eq!(
        by_rpc.settings["population"],
        GAIT_CMAES_POPULATION.to_string()
    );

    // A run that brought its own robot (here the snake's body, as
    // `optimize start --robot DIR` sends it): the form offers that robot
    // again, and starting it carries the same body and problem.
    let snake = yamor_sim::robots::ExampleRobot::named("snake").unwrap();
    let body = yamor_core::evaluation::RobotSource::Morphology(
        snake.morphology().unwrap().to_xml_string(),
    );
    let brought = organizer
        .runs
        .start(RunSpec {
            name: "my snake".into(),
            robot: body.clone(),
            robot_name: "snake-dir".into(),
            ..RunSpec::new(
                "cmaes",
                yamor_organizer::model::Problem::OptimizationXml(problem.to_owned()),
            )
        })
        .await
        .unwrap();
    organizer.runs.stop(brought.id).unwrap();
    let page = get(&address, "/runs/new").await;
    assert_eq!(
        brought.robot,
        format!(
            "snake-dir (morphology {})",
            yamor_organizer::model::morphology_hash(&snake.morphology().unwrap().to_xml_string())
        )
    );
    let offered = format!(
        "<option value=\"run:{}\">{}: the robot of run {} (my snake)</option>",
        brought.id, brought.robot, brought.id
    );
    assert!(page.body.contains(&offered), "{}", page.body);
    let again = [
        ("optimizer", "cmaes"),
        ("robot", &format!("run:{}", brought.id)),
        ("on", "sim"),
    ];
    let started = post_form(&address, "/runs", &[], &again).await;
    assert_eq!(started.status, 303, "{}", started.body);
    let newest = newest_run(&organizer);
    let stored = organizer.scheduler.store().run(newest).unwrap().unwrap();
    assert_eq!(stored.spec.robot, body);
    assert_eq!(stored.spec.robot_name, "snake-dir");
    organizer.runs.stop(newest).unwrap();
    // A robot no run brought is refused by name.
    let unknown = post_form(
        &address,
        "/runs",
        &[],
        &[("optimizer", "cmaes"), ("robot", "run:999")],
    )
    .await;
    assert_eq!(unknown.status, 400);
    assert!(
        unknown.body.contains("run 999 brought no robot"),
        "{}",
        unknown.body
    );

    // Unsaid, which way walks count is the problem's to declare (a robot
    // whose optimize.xml says `direction="axis"`); the form's field
    // overrides it, and a direction nobody knows is refused by name.
    use yamor_core::evaluation::Direction;
    let forward = problem.replacen("<yamorconfig>", "<yamorconfig direction=\"axis\">", 1);
    let declares = organizer
        .runs
        .start(RunSpec {
            name: "forward".into(),
            robot: body.clone(),
            robot_name: "forward-dir".into(),
            ..RunSpec::new(
                "cmaes",
                yamor_organizer::model::Problem::OptimizationXml(forward),
            )
        })
        .await
        .unwrap();
    organizer.runs.stop(declares.id).unwrap();
    // The form offers a body by its newest run, whose problem each run
    // started from it carries on.
    let mut declared_robot = format!("run:{}", declares.id);
    for (direction, expected) in [("", Direction::Axis), ("any", Direction::Any)] {
        let form = [
            ("optimizer", "cmaes"),
            ("robot", declared_robot.as_str()),
            ("on", "sim"),
            ("direction", direction),
        ];
        let started = post_form(&address, "/runs", &[], &form).await;
        assert_eq!(started.status, 303, "{}", started.body);
        let newest = newest_run(&organizer);
        let stored = organizer.scheduler.store().run(newest).unwrap().unwrap();
        assert_eq!(stored.spec.direction, expected, "direction {direction:?}");
        organizer.runs.stop(newest).unwrap();
        declared_robot = format!("run:{newest}");
    }
    let sideways = post_form(
        &address,
        "/runs",
        &[],
        &[
            ("optimizer", "cmaes"),
            ("robot", declared_robot.as_str()),
            ("direction", "sideways"),
        ],
    )
    .await;
    assert_eq!(sideways.status, 400);
    assert!(
        sideways
            .body
            .contains("direction: unknown direction &quot;sideways&quot;"),
        "{}",
        sideways.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_view_shows_a_database_and_changes_nothing() {
    let (organizer, _) = dashboard("dash-view", 2, None).await;
    let finished = organizer.runs.start(run_spec(12)).await.unwrap();
    until_ended(&organizer, finished.id).await;
    // A second run left running, as by a process still at it (or killed).
    let running = organizer.runs.start(run_spec(1_000_000)).await.unwrap();
    organizer.scheduler.store().sync().await.unwrap();
    // The file `dashboard` opened (temp_dir would empty the directory).
    let db = std::env::temp_dir()
        .join(format!("yamor-test-{}-dash-view", std::process::id()))
        .join("yamor.db");
    let view = Organizer::view(&db, vec![std::sync::Arc::new(yamor_pso::Pso)]).unwrap();
    let options = Options {
        read_only: true,
        ..Default::default()
    };
    let address = serve_dashboard(&view, options).await;
    let runs = get(&address, "/runs").await;
    assert_eq!(listed_runs(&runs.body), [running.id, finished.id]);
    let page = get(&address, &format!("/runs/{}", finished.id)).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("finished"), "{}", page.body);
    // Recorded running, shown running (it is not resumed here).
    assert_eq!(view.runs.get(running.id).unwrap().state, RunState::Running);
    // Starting, stopping and drawing (which walks again) are refused.
    let started = post_form(&address, "/runs", &[], &sphere_form()).await;
    assert_eq!(started.status, 405, "{}", started.body);
    assert!(started.body.contains("read-only view"), "{}", started.body);
    let stop = post_form(&address, &format!("/runs/{}/stop", running.id), &[], &[]).await;
    assert_eq!(stop.status, 405, "{}", stop.body);
    let form = get(&address, "/runs/new").await;
    assert!(form.body.contains("read-only view"), "{}", form.body);
    assert_eq!(view.runs.list().len(), 2);
    // Its hosts are recorded, not heard: neither down nor aged from the
    // view's own start.
    let hosts = get(&address, "/hosts").await;
    assert!(hosts.body.contains("not live"), "{}", hosts.body);
    assert!(!hosts.body.contains("class=\"down\""), "{}", hosts.body);
    assert!(!hosts.body.contains(" s ago"), "{}", hosts.body);
    // A commit through the view is refused, not lost silently.
    assert!(matches!(
        view.scheduler.store().check_writable(),
        Err(yamor_organizer::store::StoreError::ViewOnly)
    ));
    organizer.runs.stop(running.id).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chosen_runs_are_compared_curve_by_curve_and_setting_by_setting() {
    let (organizer, address) = dashboard("dash-compare", 2, None).await;
    let four = organizer.runs.start(run_spec(16)).await.unwrap();
    let six = organizer
        .runs
        .start(RunSpec {
            settings: [("particles".to_owned(), "6".to_owned())].into(),
            ..run_spec(18)
        })
        .await
        .unwrap();
    until_ended(&organizer, four.id).await;
    until_ended(&organizer, six.id).await;
    let runs = get(&address, "/runs").await;
    assert!(
        runs.body.contains(&format!(
            "<input type=\"checkbox\" name=\"run\" value=\"{}\" form=\"compare\">",
            four.id
        )),
        "{}",
        runs.body
    );
    let page = get(
        &address,
        &format!("/compare?run={}&run={}", four.id, six.id),
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    // Each chart draws one curve per run.
    for chart in ["by-evaluation", "by-time"] {
        let svg = page
            .body
            .split(&format!("<svg id=\"{chart}\" "))
            .nth(1)
            .and_then(|rest| rest.split("</svg>").next())
            .unwrap_or_else(|| panic!("no {chart} chart in {}", page.body));
        assert_eq!(svg.matches("class=\"curve\"").count(), 2, "{svg}");
        assert!(svg.contains(&format!("data-run=\"{}\"", six.id)), "{svg}");
    }
    // The evaluation axis reaches the longer run's 18 evaluations, with
    // round ticks along it.
    let by_evaluation = page.body.split("<svg id=\"by-evaluation\"").nth(1).unwrap();
    let by_evaluation = by_evaluation.split("</svg>").next().unwrap();
    for tick in ["0", "5", "10", "15"] {
        assert!(
            by_evaluation.contains("class=\"tick-label\" x=")
                && by_evaluation.contains(&format!(">{tick}</text>")),
            "{by_evaluation}"
        );
    }
    // Settings side by side, the differing one marked, the same one not.
    assert!(
        page.body
            .contains("<tr class=\"differs\"><th>particles</th><td>4</td><td>6</td></tr>"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<tr><th>optimizer</th><td>pso</td><td>pso</td></tr>"),
        "{}",
        page.body
    );
    // What they were asked differently is said; the seeds (equal here) and
    // the outcomes are shown, never marked as a difference.
    assert!(
        page.body.contains(
            "<p id=\"differences\">These runs differ in what they were asked by: budget, particles (seeds aside).</p>"
        ),
        "{}",
        page.body
    );
    assert!(page.body.contains("<tr class=\"seed\"><th>seed</th>"));
    assert!(
        page.body.contains("<tr><th>evaluations</th>"),
        "{}",
        page.body
    );
    let bad = get(&address, "/compare?run=abc").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_page_analyses_its_parameters() {
    let (organizer, address) = dashboard("dash-analysis", 2, None).await;
    let run = organizer.runs.start(run_spec(48)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let page = get(&address, &format!("/runs/{}", run.id)).await;
    assert_eq!(page.status, 200);
    // Per parameter: its values with the bounds [-1, 1] drawn, and a slice.
    for name in ["x", "y"] {
        let param = page
            .body
            .split(&format!("<svg class=\"param\" data-param=\"{name}\""))
            .nth(1)
            .and_then(|rest| rest.split("</svg>").next())
            .unwrap_or_else(|| panic!("no chart of {name}"));
        assert!(
            param.contains(">1.000</text>") && param.contains(">-1.000</text>"),
            "{param}"
        );
        assert_eq!(param.matches("class=\"bound\"").count(), 2, "{param}");
        assert_eq!(param.matches("<circle").count(), 48, "{param}");
        assert!(
            page.body
                .contains(&format!("<svg class=\"slice\" data-param=\"{name}\"")),
            "no slice of {name}"
        );
    }
    let parallel = page.body.split("<svg id=\"parallel\"").nth(1).unwrap();
    let lines = parallel
        .split("</svg>")
        .next()
        .unwrap()
        .matches("class=\"best-line\"")
        .count();
    assert_eq!(lines, 20);
    // 48 results: enough for the importance estimate of both.
    let importance = page.body.split("<table id=\"importance\">").nth(1).unwrap();
    let importance = importance.split("</table>").next().unwrap();
    let shares: Vec<f64> = importance
        .split("<td class=\"num\">")
        .skip(1)
        .map(|cell| cell.split('<').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(shares.len(), 2, "{importance}");
    // Normalised: the shares sum to 1 (within the page's rounding).
    assert!(
        (shares.iter().sum::<f64>() - 1.0).abs() <= 0.01,
        "{importance}"
    );
    assert!(page.body.contains("PED-ANOVA"));
}

/// The trials of a run of 230 evaluations: served 100 rows a page,
/// filtered on numbers as numbers, sorted on any column, the matching set
/// exported whole; a filter that cannot be read says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trials_table_is_paged_filtered_and_sorted_on_the_server() {
    let (organizer, address) = dashboard("dash-trials-query", 2, None).await;
    let run = organizer.runs.start(run_spec(230)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let jobs = run_jobs(&organizer, run.id).await;
    let rows = |body: &str| body.split("<tr data-job=").count() - 1;
    let path = format!("/runs/{}/trials", run.id);
    let first = get(&address, &path).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(rows(&first.body), 100);
    assert!(
        first.body.contains(&format!(
            "<span id=\"matching\">{}</span> of {}",
            jobs.len(),
            jobs.len()
        )),
        "{}",
        first.body
    );
    let last = get(&address, &format!("{path}?page=2")).await;
    assert_eq!(rows(&last.body), jobs.len() - 200);
    assert!(last.body.contains("id=\"prev\"") && !last.body.contains("id=\"next\""));

    // Numbers compare as numbers: -0.05 > -0.5, though not as text.
    let better = jobs
        .iter()
        .filter(|j| j.fitness().is_some_and(|v| v > -0.5))
        .count();
    assert!(
        better > 0 && better < jobs.len(),
        "{better} of {}",
        jobs.len()
    );
    let filtered = get(
        &address,
        &format!("{path}?q=value+%3E+-0.5&sort=value&order=desc"),
    )
    .await;
    assert_eq!(filtered.status, 200, "{}", filtered.body);
    assert!(
        filtered.body.contains(&format!(
            "<span id=\"matching\">{better}</span> of {}",
            jobs.len()
        )),
        "{}",
        filtered.body
    );
    let values: Vec<f64> = filtered
        .body
        .split("<tr data-job=")
        .skip(1)
        .map(|row| {
            row.split("<td class=\"num\">")
                .nth(1)
                .unwrap()
                .split('<')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(values.len(), better.min(100));
    assert!(
        values.windows(2).all(|w| w[0] >= w[1]),
        "best first: {values:?}"
    );
    assert!(values.iter().all(|v| *v > -0.5), "{values:?}");

    // The export holds the whole matching set, with the same filter.
    let csv = get(
        &address,
        &format!("/runs/{}/trials.csv?q=value+%3E+-0.5", run.id),
    )
    .await;
    assert_eq!(csv.status, 200);
    assert_eq!(csv.body.lines().count(), better + 1, "{}", csv.body);
    assert!(
        csv.body
            .starts_with("evaluation,job,value,x,y,host,seconds,state,error"),
        "{}",
        csv.body
    );
    let json = get(
        &address,
        &format!("/runs/{}/trials.json?q=value+%3E+-0.5", run.id),
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(json["matching"], better);
    assert_eq!(json["trials"].as_array().unwrap().len(), better);
    assert!(
        json["trials"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["value"].as_f64().unwrap() > -0.5)
    );

    let bad = get(&address, &format!("{path}?q=speed+%3E+3")).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("no column `speed`"), "{}", bad.body);
    let bad = get(
        &address,
        &format!("/runs/{}/trials.csv?q=value+%3E+fast", run.id),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("`fast` is not a number"), "{}", bad.body);
}

/// The run page's script is a file served with cache headers, and the
/// page links it; an asset nobody has is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_files_served_with_cache_headers() {
    let (organizer, address) = dashboard("dash-assets", 1, None).await;
    let run = organizer.runs.start(run_spec(4)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let page = get(&address, &format!("/runs/{}", run.id)).await;
    assert!(
        page.body.contains(&format!(
            "<script src=\"/assets/run.js\" data-run=\"{}\">",
            run.id
        )),
        "{}",
        page.body
    );
    assert!(page.body.contains("<span id=\"elapsed\">"), "{}", page.body);
    let script = get(&address, "/assets/run.js").await;
    assert_eq!(script.status, 200);
    assert!(script.body.contains("EventSource"), "{}", script.body);
    assert!(
        script.head.contains("cache-control: public, max-age=3600"),
        "{}",
        script.head
    );
    assert_eq!(get(&address, "/assets/nothing.js").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_evaluation_is_a_row_that_links_to_its_whole_record() {
    let (organizer, address) = dashboard("dash-trials", 2, None).await;
    let run = organizer.runs.start(run_spec(12)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let trials = get(&address, &format!("/runs/{}/trials", run.id)).await;
    assert_eq!(trials.status, 200, "{}", trials.body);
    let rows: Vec<&str> = trials.body.split("<tr data-job=").skip(1).collect();
    assert_eq!(rows.len(), 12, "{}", trials.body);
    // Header: evaluation, value, each parameter, host, seconds, state,
    // error; each a link sorting by it.
    let columns: Vec<&str> = trials
        .body
        .split("data-column=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "evaluation",
            "value",
            "x",
            "y",
            "host",
            "seconds",
            "state",
            "error"
        ],
        "{}",
        trials.body
    );
    assert!(trials.body.contains("id=\"query\""));
    let job_id: u64 = rows[0]
        .trim_start_matches('"')
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let job = get(&address, &format!("/jobs/{job_id}")).await;
    assert_eq!(job.status, 200, "{}", job.body);
    assert!(
        job.body.contains("<th>start (oscillator seed)</th>"),
        "{}",
        job.body
    );
    assert!(job.body.contains("<pre id=\"spec\">"), "{}", job.body);
    assert!(
        job.body.contains("<th>state</th><td>done</td>"),
        "{}",
        job.body
    );
    let recorded = organizer.scheduler.job(job_id, false).await.unwrap();
    let value = format!("{:.4}", recorded.fitness().unwrap());
    assert!(job.body.contains(&value), "{value} in {}", job.body);
    let missing = get(&address, "/jobs/999999").await;
    assert_eq!(missing.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_says_why_it_cannot_be_had() {
    use yamor_organizer::http::replay::Recording;
    let (organizer, plain) = dashboard("dash-replay", 1, None).await;
    let run = organizer.runs.start(run_spec(4)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let job = organizer
        .scheduler
        .list_jobs(JobFilter::default(), true)
        .await
        .unwrap()[0]
        .id;
    // A dashboard without a simulator offers no replay.
    let none = get(&plain, &format!("/jobs/{job}/replay.json")).await;
    assert_eq!(none.status, 404, "{}", none.body);
    // One with a replayer answers for an expression job with its reason.
    let options = Options {
        replay: Some(std::sync::Arc::new(
            |job: &yamor_organizer::model::Job| match &job.request.job.gait {
                None => Err("this job walks no gait".into()),
                Some(_) => Ok(Recording {
                    frame_interval: 0.05,
                    half_extents: Vec::new(),
                    frames: Vec::new(),
                    velocity: 0.0,
                    recorded_velocity: None,
                }),
            },
        )),
        ..Default::default()
    };
    let address = serve_dashboard(&organizer, options).await;
    let refused = get(&address, &format!("/jobs/{job}/replay.json")).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("walks no gait"), "{}", refused.body);
    let page = get(&address, &format!("/jobs/{job}")).await;
    assert!(
        !page.body.contains("id=\"replay\""),
        "no replay link for an expression job"
    );
}

/// The ids of the runs a runs page lists, in order.
fn listed_runs(body: &str) -> Vec<u64> {
    body.split("<tr data-run=\"")
        .skip(1)
        .map(|row| row.split('"').next().unwrap().parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_paged_newest_first() {
    let (organizer, address) = dashboard("dash-runs", 1, None).await;
    for _ in 0..120 {
        organizer.runs.start(run_spec(4)).await.unwrap();
    }
    let first = get(&address, "/runs").await;
    assert_eq!(first.status, 200);
    assert_eq!(
        listed_runs(&first.body),
        (71..=120).rev().collect::<Vec<u64>>()
    );
    assert!(
        first.body.contains("href=\"/runs?before=71\""),
        "{}",
        first.body
    );
    let second = get(&address, "/runs?before=71").await;
    assert_eq!(
        listed_runs(&second.body),
        (21..=70).rev().collect::<Vec<u64>>()
    );
    assert!(second.body.contains("href=\"/runs?before=21\""));
    let last = get(&address, "/runs?before=21").await;
    assert_eq!(
        listed_runs(&last.body),
        (1..=20).rev().collect::<Vec<u64>>()
    );
    assert!(!last.body.contains("id=\"older\""), "no older runs");
}

/// Reads from `stream` until it closes or `enough` holds of what came;
/// panics if that takes more than `within`.
async fn read_until(
    stream: &mut tokio::net::TcpStream,
    within: Duration,
    enough: impl Fn(&str) -> bool,
) -> String {
    let mut raw = Vec::new();
    tokio::time::timeout(within, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => raw.extend_from_slice(&buffer[..n]),
            }
            if enough(&String::from_utf8_lossy(&raw)) {
                return;
            }
        }
    })
    .await
    .expect("the dashboard cuts a slow client off");
    String::from_utf8_lossy(&raw).into_owned()
}

fn quick() -> Options {
    Options {
        header_read_timeout: Duration::from_millis(200),
        body_read_timeout: Duration::from_millis(200),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_is_cut_off() {
    let (organizer, address) = dashboard_with("dash-slow-body", 0, quick()).await;
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(
            b"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\
              Content-Length: 1000\r\n\r\noptimizer=pso",
        )
        .await
        .unwrap();
    // An answer, and the connection closed.
    let reply = read_until(&mut stream, Duration::from_secs(5), |_| false).await;
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(organizer.runs.list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_line_that_never_ends_is_cut_off() {
    let (_organizer, address) = dashboard_with("dash-slow-head", 0, quick()).await;
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream.write_all(b"GET /ru").await.unwrap();
    // hyper closes it without a word.
    let reply = read_until(&mut stream, Duration::from_secs(5), |_| false).await;
    assert_eq!(reply, "");
    // Whoever sends a whole request is served as before.
    assert_eq!(get(&address, "/runs").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_outlives_the_read_timeouts() {
    let (organizer, address) = dashboard_with("dash-long-stream", 1, quick()).await;
    // Generations enough to outlast the wait below.
    let mut spec = run_spec(1_000_000);
    spec.settings.insert("iterations".into(), "100000".into());
    let run = organizer.runs.start(spec).await.unwrap();
    let mut progress = organizer.runs.watch(run.id).unwrap();
    let events = {
        let address = address.clone();
        let path = format!("/runs/{}/events", run.id);
        tokio::spawn(async move { get(&address, &path).await })
    };
    // Let the stream run well past both timeouts: evaluations keep coming.
    let since = std::time::Instant::now();
    {
        use tokio_stream::StreamExt;
        while let Some(event) = progress.next().await {
            assert_eq!(event.run.state, RunState::Running, "{:?}", event.run);
            if since.elapsed() > Duration::from_millis(1000) && event.run.evaluations >= 8 {
                break;
            }
        }
    }
    organizer.runs.stop(run.id).unwrap();
    let stream = tokio::time::timeout(Duration::from_secs(30), events)
        .await
        .expect("the stream ends with the run")
        .unwrap();
    let last = stream
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap());
    assert_eq!(
        last.as_ref().map(|d| d["state"].clone()),
        Some("stopped".into()),
        "{}",
        stream.body
    );
}

/// A planning job's build, stepped through: the job page says what was
/// built and links to the build; each step draws every meta-module's four
/// cubes, the mover of that step highlighted with where it came from, the
/// unfilled cells of the structure outlined; steps past the end and jobs
/// without a plan are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planning_jobs_build_is_drawn_step_by_step() {
    use std::sync::Arc;
    use yamor_organizer::model::{JobRequest, JobState};
    use yamor_reconfig::planning::{Target, Task};
    // The Roombots' view of their planning jobs, as `yamor` serves it.
    let (organizer, address) = dashboard_with(
        "dash-plan",
        1,
        Options {
            job_views: yamor_families::job_views(),
            ..Default::default()
        },
    )
    .await;
    let planner = common::serve_host(
        "p0",
        Arc::new(yamor_families::planning::PlanningBackend::new(2)),
    )
    .await;
    organizer
        .scheduler
        .register_host("p0", &planner)
        .await
        .unwrap();
    let task = Task {
        target: Target::Platform { bars: 1, rows: 2 },
        connection: yamor_roombots::chain::ConnectionType::ShearS,
        rule: yamor_reconfig::decentralised::Rule::Reserve,
        look_ahead: true,
        size: 13,
        max_rounds: 2000,
        method: yamor_reconfig::planning::Method::Decentralised,
        from: None,
    };
    let mut events = organizer.scheduler.subscribe_jobs();
    let request = JobRequest {
        job: yamor_core::evaluation::EvaluationJob {
            objective: Objective::Named(task.objective()),
            ..Default::default()
        },
        backend: None,
        max_attempts: 0,
        timeout: None,
    };
    let id = organizer
        .scheduler
        .submit("test", 0, vec![(0, request)])
        .await
        .unwrap()[0];
    let job = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let job = events.recv().await.unwrap();
            if job.id == id && job.state != JobState::Queued && job.state != JobState::Running {
                break job;
            }
        }
    })
    .await
    .expect("the planning job never ended");
    assert_eq!(job.state, JobState::Done, "{}", job.error);
    let plan = job
        .outcome
        .as_ref()
        .and_then(Outcome::plan)
        .unwrap()
        .clone();
    assert!(!plan.plan.steps.is_empty());
    assert!(plan.built);
    // A brief listing leaves the plan out (a hundred meta-modules' is half
    // a megabyte) and keeps its figures.
    let brief = organizer
        .scheduler
        .list_jobs(JobFilter::default(), true)
        .await
        .unwrap();
    let listed = brief.iter().find(|j| j.id == id).unwrap();
    let listed_plan = listed.outcome.as_ref().and_then(Outcome::plan).unwrap();
    assert!(listed_plan.plan.steps.is_empty() && listed_plan.plan.start.is_empty());
    assert_eq!(listed_plan.moves, plan.moves);
    let page = get(&address, &format!("/jobs/{id}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("a reconfiguration: platform 1x2 with shear-s"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<th>build</th><td>built: 2 of 2 seeds"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains(&format!("href=\"/jobs/{id}/plan\"")),
        "{}",
        page.body
    );
    let moves = plan.moves as usize;
    assert!(moves >= 2);
    let count = |body: &str, class: &str| body.matches(&format!("<g class=\"{class}\">")).count();
    let start = get(&address, &format!("/jobs/{id}/plan")).await;
    assert_eq!(start.status, 200, "{}", start.body);
    assert!(
        start
            .body
            .contains(&format!("step 0 of {moves}: the start")),
        "{}",
        start.body
    );
    assert_eq!(
        count(&start.body, "cube"),
        8,
        "two meta-modules of four cubes"
    );
    assert_eq!(count(&start.body, "cube mover"), 0);
    assert_eq!(count(&start.body, "open"), 8, "nothing filled yet");
    assert!(start.body.contains(&format!("/jobs/{id}/plan?step=1")));
    let first = get(&address, &format!("/jobs/{id}/plan?step=1")).await;
    assert_eq!(count(&first.body, "cube mover"), 4, "{}", first.body);
    assert_eq!(count(&first.body, "cube"), 4);
    assert_eq!(count(&first.body, "was"), 4);
    assert!(first.body.contains(&format!("/jobs/{id}/plan?step=0")));
    let end = get(&address, &format!("/jobs/{id}/plan?step={moves}")).await;
    assert_eq!(end.status, 200);
    assert_eq!(count(&end.body, "open"), 0, "the end fills every cell");
    assert!(end.body.contains(&format!("step {moves} of {moves}")));
    let past = get(&address, &format!("/jobs/{id}/plan?step={}", moves + 1)).await;
    assert_eq!(past.status, 404, "{}", past.body);
    let bad = get(&address, &format!("/jobs/{id}/plan?step=x")).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    // A walk's job has no build to draw.
    let run = organizer.runs.start(run_spec(2)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let walk = run_jobs(&organizer, run.id).await[0].id;
    let none = get(&address, &format!("/jobs/{walk}/plan")).await;
    assert_eq!(none.status, 404, "{}", none.body);
    assert!(
        none.body.contains("not a finished planning job"),
        "{}",
        none.body
    );
}

/// A job view contributed from outside: served in the dashboard's frame at
/// `/jobs/{id}/{name}` with the query's parameters, linked from the pages
/// of the jobs it shows, naming the objectives it knows; what it inserts
/// is escaped; unknown views, views it refuses and names the dashboard
/// keeps for itself are not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_view_from_outside_is_framed_linked_and_escaped() {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use yamor_organizer::http::views::{JobView, Markup, ViewError};
    use yamor_organizer::model::Job;

    struct Echo(&'static str);
    impl JobView for Echo {
        fn name(&self) -> &str {
            self.0
        }
        fn title(&self) -> &str {
            "an echo"
        }
        fn link_text(&self) -> &str {
            "hear it <again>"
        }
        fn describe_objective(&self, objective: &Objective) -> Option<String> {
            matches!(objective, Objective::Expression(_)).then(|| "an <echoed> expression".into())
        }
        fn shows(&self, job: &Job) -> bool {
            job.seq == 0
        }
        fn render(&self, job: &Job, query: &BTreeMap<String, String>) -> Result<Markup, ViewError> {
            match query.get("say").map(String::as_str) {
                Some("nothing") => Err(ViewError::NotFound("nothing to say not found".into())),
                Some("?") => Err(ViewError::BadQuery("say what?".into())),
                said => {
                    Ok(maud::html! { p #echo { "job " (job.id) " says " (said.unwrap_or("")) } })
                }
            }
        }
    }
    let (organizer, address) = dashboard_with(
        "dash-views",
        1,
        Options {
            job_views: vec![Arc::new(Echo("echo")), Arc::new(Echo("replay"))],
            ..Default::default()
        },
    )
    .await;
    let run = organizer.runs.start(run_spec(2)).await.unwrap();
    until_ended(&organizer, run.id).await;
    let mut jobs = run_jobs(&organizer, run.id).await;
    jobs.sort_by_key(|j| j.seq);
    let (first, second) = (jobs[0].id, jobs[1].id);
    let page = get(&address, &format!("/jobs/{first}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains(&format!(
            "<a id=\"echo\" href=\"/jobs/{first}/echo\">hear it &lt;again&gt;</a>"
        )),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<th>objective</th><td>an &lt;echoed&gt; expression</td>"),
        "{}",
        page.body
    );
    // A task a view names is no walk.
    assert!(!page.body.contains("<th>walk</th>"), "{}", page.body);
    // The view named as the dashboard's own page is left out.
    assert!(!page.body.contains("id=\"replay\""), "{}", page.body);
    let other = get(&address, &format!("/jobs/{second}")).await;
    assert!(!other.body.contains("id=\"echo\""), "{}", other.body);
    let echo = get(&address, &format!("/jobs/{first}/echo?say=%3Cb%3Ehi")).await;
    assert_eq!(echo.status, 200, "{}", echo.body);
    assert!(echo.body.contains("<nav>"), "in the dashboard's frame");
    assert!(
        echo.body
            .contains(&format!("<h1>Job {first}: an echo</h1>"))
    );
    assert!(
        echo.body
            .contains(&format!("<p id=\"echo\">job {first} says &lt;b&gt;hi</p>")),
        "{}",
        echo.body
    );
    let refused = get(&address, &format!("/jobs/{first}/echo?say=nothing")).await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert!(refused.body.contains("nothing to say not found"));
    assert_eq!(
        get(&address, &format!("/jobs/{first}/echo?say=%3F"))
            .await
            .status,
        400
    );
    assert_eq!(
        get(&address, &format!("/jobs/{first}/nothing"))
            .await
            .status,
        404
    );
    assert_eq!(get(&address, "/jobs/999999/echo").await.status, 404);
    // `/jobs/{id}/replay` stays the dashboard's own (it has no replayer).
    let replay = get(&address, &format!("/jobs/{first}/replay")).await;
    assert!(replay.body.contains("no simulator"), "{}", replay.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_run_shows_its_map_and_refuses_what_it_cannot_show() {
    let organizer = Organizer::open(
        &common::temp_dir("dash-map").join("yamor.db"),
        yamor_organizer::SchedulerConfig::default(),
        yamor_proto::transport::ClientSecurity::default(),
        vec![
            std::sync::Arc::new(yamor_pso::Pso),
            std::sync::Arc::new(yamor_map_elites::MapElitesPlugin),
        ],
    )
    .unwrap();
    common::add_expression_hosts(&organizer, 2, "-(x*x + y*y)", Duration::from_millis(2)).await;
    let address = serve_dashboard(&organizer, Options::default()).await;
    // An expression's descriptors are its variables: an 8×8 map over x, y.
    let map_run = organizer
        .runs
        .start(RunSpec {
            settings: [
                ("descriptors".to_owned(), "x:-1:1:8,y:-1:1:8".to_owned()),
                ("emitters".to_owned(), "2".to_owned()),
                ("batch".to_owned(), "6".to_owned()),
            ]
            .into(),
            ..RunSpec {
                optimizer: "map-elites".into(),
                ..run_spec(60)
            }
        })
        .await
        .unwrap();
    until_ended(&organizer, map_run.id).await;
    let map = organizer.runs.map(map_run.id).await.unwrap().unwrap();
    let page = get(&address, &format!("/runs/{}/map", map_run.id)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    // Two axes drawn, two axes in the grid: a square per elite.
    assert_eq!(
        page.body.matches("<a class=\"cell\"").count(),
        map.cells.len()
    );
    assert!(map.cells.len() > 8, "{} cells", map.cells.len());
    assert!(
        page.body.contains(&format!(
            "<b id=\"coverage\">{}</b> of 64 cells",
            map.cells.len()
        )),
        "{}",
        page.body
    );
    let run_page = get(&address, &format!("/runs/{}", map_run.id)).await;
    assert!(run_page.body.contains("id=\"map-link\""));
    let json = get(&address, &format!("/runs/{}/map.json", map_run.id)).await;
    let json: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), map.cells.len());
    assert_eq!(json["descriptors"], serde_json::json!(["x", "y"]));
    // An axis the map does not have, and a run that keeps no map.
    let bad = get(&address, &format!("/runs/{}/map?x=5", map_run.id)).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("axis 5 does not exist"), "{}", bad.body);
    let pso = organizer.runs.start(run_spec(8)).await.unwrap();
    until_ended(&organizer, pso.id).await;
    let none = get(&address, &format!("/runs/{}/map", pso.id)).await;
    assert_eq!(none.status, 404);
    assert!(none.body.contains("keeps no map"), "{}", none.body);
    let run_page = get(&address, &format!("/runs/{}", pso.id)).await;
    assert!(!run_page.body.contains("id=\"map-link\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adaptation_shows_its_walks_on_the_map_and_refuses_a_run_without_a_prior() {
    use yamor_optimizer_api::{Fitness, Optimizer as _, Step};
    let organizer = Organizer::open(
        &common::temp_dir("dash-adapt").join("yamor.db"),
        yamor_organizer::SchedulerConfig::default(),
        yamor_proto::transport::ClientSecurity::default(),
        vec![
            std::sync::Arc::new(yamor_map_elites::MapElitesPlugin),
            std::sync::Arc::new(yamor_ite::ItePlugin),
        ],
    )
    .unwrap();
    common::add_expression_hosts(&organizer, 2, "-(x*x + y*y)", Duration::from_millis(2)).await;
    let address = serve_dashboard(&organizer, Options::default()).await;
    let map_run = organizer
        .runs
        .start(RunSpec {
            settings: [
                ("descriptors".to_owned(), "x:-1:1:6,y:-1:1:6".to_owned()),
                ("emitters".to_owned(), "2".to_owned()),
                ("batch".to_owned(), "6".to_owned()),
            ]
            .into(),
            ..RunSpec {
                optimizer: "map-elites".into(),
                ..run_spec(48)
            }
        })
        .await
        .unwrap();
    until_ended(&organizer, map_run.id).await;
    let walks = 6;
    let ite = organizer
        .runs
        .start(RunSpec {
            name: "adapt <&>".into(),
            optimizer: "ite".into(),
            settings: Default::default(),
            prior: Some(map_run.id),
            ..run_spec(walks)
        })
        .await
        .unwrap();
    until_ended(&organizer, ite.id).await;
    let ended = organizer.runs.get(ite.id).unwrap();
    assert_eq!(ended.state, RunState::Finished, "{}", ended.error);

    // The replay: every walk learnt, in tell order, each an elite of the
    // prior with what the walk was told.
    let adaptation = organizer.runs.adaptation(ite.id).await.unwrap().unwrap();
    assert_eq!(adaptation.prior_run, map_run.id);
    assert_eq!(adaptation.incomplete, None);
    let told = organizer.runs.told_jobs(ite.id).await.unwrap();
    assert_eq!(adaptation.trials.len() as u64, ended.evaluations);
    assert!(!adaptation.trials.is_empty());
    let space = organizer.runs.space(ite.id).await.unwrap();
    let prior = organizer.runs.prior(map_run.id, &space).await.unwrap();
    assert_eq!(adaptation.elites, prior.elites.len());
    for (k, (trial, job)) in adaptation.trials.iter().zip(&told).enumerate() {
        assert_eq!(trial.walk, k + 1);
        assert_eq!(trial.job_id, job.id);
        assert_eq!(trial.value, job.fitness());
        let elite = &prior.elites[trial.elite.expect("an elite of the prior")];
        assert_eq!(trial.cell, Some(elite.cell));
        assert_eq!(trial.descriptors, elite.descriptors);
        let x: Vec<f64> = job.request.job.parameters.iter().map(|p| p.1).collect();
        assert_eq!(x, elite.x);
        // An expression's descriptors are its variables: where it walked.
        assert_eq!(trial.walked_descriptors.as_deref(), Some(&x[..]));
    }
    // What the model predicted before each walk, as a fresh IT&E told the
    // same walks believes: before the first, the map's value of the best
    // elite, which it walks first.
    let mut fresh = yamor_ite::Ite::new(&space, &prior, &yamor_ite::IteConfig::default());
    for trial in &adaptation.trials {
        let Step::Evaluate(c) = fresh.ask() else {
            panic!("IT&E stopped before walk {}", trial.walk)
        };
        let elite = trial.elite.unwrap();
        assert_eq!(c[0].x, prior.elites[elite].x);
        assert_eq!(trial.predicted, Some(fresh.model().predict()[elite]));
        fresh.tell(c[0].tag, Fitness::Value(trial.value.unwrap()));
    }
    let first = &adaptation.trials[0];
    let best = prior
        .elites
        .iter()
        .map(|e| e.value)
        .fold(f64::MIN, f64::max);
    assert!(
        (first.predicted.unwrap().0 - best).abs() < 1e-12,
        "{first:?}"
    );

    // The page: the map with every walked cell numbered, the chart of
    // predicted against walked, a row per walk linking to its job.
    let page = get(&address, &format!("/runs/{}/adaptation", ite.id)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(
        page.body.matches("<a class=\"cell\"").count(),
        adaptation.map.cells.len()
    );
    let cells: std::collections::BTreeSet<usize> =
        adaptation.trials.iter().filter_map(|t| t.cell).collect();
    assert_eq!(page.body.matches("<g class=\"tried\"").count(), cells.len());
    assert!(page.body.contains("id=\"walk-path\""));
    assert!(page.body.contains("id=\"prediction\""));
    assert!(page.body.contains("id=\"band\""));
    assert_eq!(
        page.body.matches("<circle class=\"walked\"").count(),
        adaptation.trials.len()
    );
    assert_eq!(
        page.body.matches("<circle class=\"predicted\"").count(),
        adaptation.trials.len()
    );
    for trial in &adaptation.trials {
        assert!(
            page.body
                .contains(&format!("<a href=\"/jobs/{0}\">job {0}</a>", trial.job_id)),
            "{}",
            page.body
        );
    }
    assert!(page.body.contains(&format!(
        "<b id=\"walks\">{}</b> walks",
        adaptation.trials.len()
    )));
    assert!(
        page.body.contains("adapt &lt;&amp;&gt;"),
        "names are escaped"
    );
    assert!(
        page.body
            .contains(&format!("href=\"/runs/{}/map\"", map_run.id))
    );
    // Other axes, as on the map page, and one it does not have.
    let across = get(&address, &format!("/runs/{}/adaptation?x=1&y=0", ite.id)).await;
    assert_eq!(across.status, 200);
    let bad = get(&address, &format!("/runs/{}/adaptation?y=4", ite.id)).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("axis 4 does not exist"), "{}", bad.body);

    let json = get(&address, &format!("/runs/{}/adaptation.json", ite.id)).await;
    assert_eq!(json.status, 200);
    let json: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(json["prior_run"], map_run.id);
    assert_eq!(json["descriptors"], serde_json::json!(["x", "y"]));
    let listed = json["walks"].as_array().unwrap();
    assert_eq!(listed.len(), adaptation.trials.len());
    assert_eq!(listed[0]["job"], first.job_id);
    assert_eq!(listed[0]["predicted_mean"], first.predicted.unwrap().0);
    assert_eq!(listed[0]["predicted_sd"], first.predicted.unwrap().1);
    assert_eq!(listed[0]["value"], first.value.unwrap());

    // The run page links to it; a run without a prior has none, and its
    // adaptation is refused in words.
    let run_page = get(&address, &format!("/runs/{}", ite.id)).await;
    assert!(run_page.body.contains("id=\"adaptation-link\""));
    let run_page = get(&address, &format!("/runs/{}", map_run.id)).await;
    assert!(!run_page.body.contains("id=\"adaptation-link\""));
    assert!(
        organizer
            .runs
            .adaptation(map_run.id)
            .await
            .unwrap()
            .is_none()
    );
    for path in ["adaptation", "adaptation.json"] {
        let none = get(&address, &format!("/runs/{}/{path}", map_run.id)).await;
        assert_eq!(none.status, 404);
        assert!(none.body.contains("names no prior run"), "{}", none.body);
    }
    assert_eq!(get(&address, "/runs/999999/adaptation").await.status, 404);
}
