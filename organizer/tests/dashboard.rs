//! The dashboard and `/metrics` over real HTTP on loopback, against an
//! organizer with real expression hosts: pages list what the API lists, the
//! run page's chart and downloads carry every evaluation, the event stream
//! follows a run to its end, `/metrics` parses as Prometheus text, and a
//! token guards every route.

mod common;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use yamor_core::evaluation::Objective;
use yamor_organizer::Organizer;
use yamor_organizer::model::{RunSpec, RunState};
use yamor_proto::transport::Token;

/// An organizer with `hosts` expression hosts and its dashboard's address.
async fn dashboard(name: &str, hosts: usize, token: Option<&str>) -> (Organizer, String) {
    let organizer = common::open_organizer(name);
    common::add_expression_hosts(&organizer, hosts, "-(x*x + y*y)", Duration::from_millis(2)).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(yamor_organizer::http::serve(
        listener,
        organizer.clone(),
        yamor_organizer::http::Options {
            token: token.map(|t| Token::new(t).unwrap()),
            ..Default::default()
        },
        std::future::pending(),
    ));
    (organizer, address)
}

/// A response: status code, headers (lower-cased names) and body.
struct Reply {
    status: u16,
    head: String,
    body: String,
}

/// One HTTP/1.1 request, read to the end (`Connection: close`).
async fn request(address: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: 0\r\n"
    );
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
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
    assert!(runs.body.contains("<polyline"), "a sparkline");

    let page = get(&address, &format!("/runs/{}", run.id)).await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.body.matches("class=\"eval\"").count(),
        24,
        "one point per evaluation"
    );
    assert!(page.body.contains("id=\"best\""));
    assert!(page.body.contains("EventSource"));

    let csv = get(&address, &format!("/runs/{}/evaluations.csv", run.id)).await;
    assert_eq!(csv.status, 200);
    assert!(csv.head.contains("content-type: text/csv"));
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(lines[0], "index,job,host,attempts,state,fitness,x,y");
    assert_eq!(lines.len(), 25);
    // Each row's fitness is the expression at its parameters.
    for line in &lines[1..] {
        let cells: Vec<f64> = line
            .split(',')
            .skip(5)
            .map(|c| c.parse().unwrap())
            .collect();
        let (f, x, y) = (cells[0], cells[1], cells[2]);
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
        .split("<tr><td>")
        .skip(1)
        .map(|row| row.split('<').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 50);
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first");
    assert_eq!(ids[0], 120);
    assert!(first.body.contains("older jobs"));
    let older = get(&address, &format!("/jobs?before={}", ids[49])).await;
    assert!(
        older
            .body
            .contains(&format!("<tr><td>{}</td>", ids[49] - 1))
    );
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
    let reply = get(&address, "/metrics").await;
    assert_eq!(reply.status, 200);
    let lines = reply.body.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
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
            .unwrap_or_else(|| panic!("no sample {name} {label:?} in\n{}", reply.body))
    };
    assert_eq!(value("yamor_jobs_finished_total", None), 24.0);
    assert!(value("yamor_jobs_started_total", None) >= 24.0);
    assert_eq!(value("yamor_jobs_failed_total", None), 0.0);
    assert_eq!(value("yamor_runs_started_total", None), 1.0);
    assert_eq!(value("yamor_hosts", Some(("state", "free"))), 2.0);
    assert_eq!(value("yamor_hosts", Some(("state", "down"))), 0.0);
    assert_eq!(value("yamor_runs", Some(("state", "finished"))), 1.0);
    let best = organizer.runs.get(run.id).unwrap().best_velocity.unwrap();
    assert_eq!(value("yamor_run_best_fitness", Some(("run", "1"))), best);
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
            .unwrap_or_else(|| panic!("no histogram {name} in\n{}", reply.body))
    };
    assert_eq!(histogram_count("yamor_evaluation_seconds"), 24.0);
    assert!(histogram_count("yamor_store_commit_seconds") >= 1.0);
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
