//! The dashboard in a real browser: Debian's chromium driven through
//! chromedriver (WebDriver, by `fantoccini`) against a real organizer with
//! real simulation hosts, each a process of this binary.
//!
//! The pages load, a run started from the form appears and its curve grows
//! while it runs, a host killed mid-run turns down, a batch started from the
//! form is named after its settings. Screenshots of every page go to
//! `$YAMOR_SCREENSHOTS` (docs/img when making the docs), else the test's
//! temporary directory.
//!
//! Without chromedriver on PATH when it was built (see build.rs) the test
//! is ignored, and `cargo test` lists it so; with `YAMOR_REQUIRE_BROWSER`
//! set (CI sets it, after installing chromium) it runs and fails instead.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};

const BIN: &str = env!("CARGO_BIN_EXE_yamor");

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's output, read on a thread.
fn lines(reader: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line's word after `prefix`.
fn address_after(lines: &std::sync::mpsc::Receiver<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no line starting {prefix:?}"));
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.split_whitespace().next().unwrap().to_owned();
        }
    }
}

fn find_chromedriver() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromedriver"))
            .find(|p| p.is_file())
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Chromedriver on a free loopback port, and a headless chromium session.
async fn browser(driver: &std::path::Path) -> (Proc, Client) {
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let proc = Proc(child);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1280,1700"]}),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    // Chromedriver answers once it listens; until then connecting fails.
    let client = loop {
        match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(c) => break c,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "chromedriver never answered: {e}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    (proc, client)
}

fn start_host(organizer: &str, name: &str) -> Proc {
    let mut child = Command::new(BIN)
        .args(["host", "--sim", "quadruped", "--organizer", organizer])
        .args(["--name", name])
        .env("RUST_LOG", "warn")
        .env_remove("YAMOR_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn host");
    address_after(
        &lines(child.stdout.take().unwrap()),
        &format!("host {name} "),
    );
    Proc(child)
}

fn screenshots() -> PathBuf {
    let dir = std::env::var_os("YAMOR_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shoot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("screenshot");
    std::fs::write(screenshots().join(format!("dashboard-{name}.png")), png).unwrap();
}

/// Evaluates `script` (a JavaScript expression's body returning a value)
/// until `done` accepts it; reloading the page first when `reload`.
async fn until(
    c: &Client,
    what: &str,
    reload: bool,
    script: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if reload {
            c.refresh().await.unwrap();
        }
        let value = c.execute(script, vec![]).await.unwrap();
        if done(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: last seen {value}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Clicks the button `id` and waits for the page it leads to.
/// The page's heading.
async fn heading_of(c: &Client) -> String {
    c.find(Locator::Css("h1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn click_through(c: &Client, id: &str) {
    // A mark on the old page: gone once the browser shows the new one.
    c.execute("window.yamorOldPage = true", vec![])
        .await
        .unwrap();
    c.find(Locator::Id(id))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        c,
        "the page after the form",
        false,
        "return window.yamorOldPage === undefined && document.readyState === 'complete'",
        |v| v.as_bool() == Some(true),
    )
    .await;
}

/// The text of the element with id `id`.
async fn text_of(c: &Client, id: &str) -> String {
    c.find(Locator::Id(id))
        .await
        .unwrap_or_else(|_| panic!("no #{id}"))
        .text()
        .await
        .unwrap()
}

/// Launches the form's run, checks its page is `name`'s, and waits for
/// the run to finish.
async fn launch_and_finish(c: &Client, name: &str) {
    click_through(c, "launch").await;
    let heading = heading_of(c).await;
    assert!(heading.contains(name), "landed on {heading:?}");
    until(
        c,
        &format!("run {name} to finish"),
        true,
        "return document.getElementById('state').textContent",
        |v| v.as_str() == Some("finished"),
    )
    .await;
}

async fn set_field(c: &Client, name: &str, value: &str) {
    let field = c
        .find(Locator::Css(&format!("[name=\"{name}\"]")))
        .await
        .unwrap_or_else(|_| panic!("field {name}"));
    field.clear().await.unwrap();
    field.send_keys(value).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    no_browser,
    ignore = "no chromedriver on PATH: apt-get install chromium chromium-driver"
)]
async fn the_dashboard_in_a_browser_starts_and_follows_runs_and_sees_hosts_die() {
    let Some(driver) = find_chromedriver() else {
        assert!(
            std::env::var_os("YAMOR_REQUIRE_BROWSER").is_none(),
            "YAMOR_REQUIRE_BROWSER is set but chromedriver is not on PATH"
        );
        eprintln!("skipped: no chromedriver on PATH (apt-get install chromium chromium-driver)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("yamor-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut organizer = Command::new(BIN)
        .args([
            "organizer",
            "--listen",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--heartbeat", "0.2", "--lease", "1.0", "--db"])
        .arg(dir.join("yamor.db"))
        .env("RUST_LOG", "warn")
        .env_remove("YAMOR_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn organizer");
    let banner = lines(organizer.stderr.take().unwrap());
    let _organizer = Proc(organizer);
    let grpc = address_after(&banner, "organizer listening on ");
    let web = address_after(&banner, "dashboard and /metrics on ");
    let _steady = start_host(&grpc, "sim-steady");
    let mut doomed = Some(start_host(&grpc, "sim-doomed"));

    let (_driver, c) = browser(&driver).await;

    // Hosts: both registered and free.
    c.goto(&format!("{web}/hosts")).await.unwrap();
    until(
        &c,
        "two free hosts",
        true,
        "return document.querySelectorAll('#hosts td.free').length",
        |v| v.as_u64() == Some(2),
    )
    .await;
    shoot(&c, "hosts").await;

    // Start a run from the form, with a short walk so that it moves quickly.
    c.goto(&format!("{web}/runs/new")).await.unwrap();
    shoot(&c, "start").await;
    set_field(&c, "name", "browser-run").await;
    // Long enough to still run when a host dies; stopped below.
    set_field(&c, "budget", "100000").await;
    set_field(&c, "warmup", "1").await;
    set_field(&c, "measure", "2").await;
    set_field(&c, "set.cmaes.population", "6").await;
    click_through(&c, "launch").await;
    let heading = heading_of(&c).await;
    assert!(heading.contains("browser-run"), "landed on {heading:?}");
    let run_url = c.current_url().await.unwrap().to_string();

    // Its curve grows while it runs (the page redraws it from events).
    let points = "return document.querySelectorAll('#chart circle.eval').length";
    let first = until(&c, "a first point", false, points, |v| {
        v.as_u64().is_some_and(|n| n > 0)
    })
    .await
    .as_u64()
    .unwrap();
    until(&c, "the curve to grow", false, points, |v| {
        v.as_u64().is_some_and(|n| n > first)
    })
    .await;
    // Everything the page shows stays live: the elapsed time advances
    // without a reload, and the best parameters fill in.
    let elapsed = text_of(&c, "elapsed").await;
    until(
        &c,
        "the elapsed time to advance",
        false,
        "return document.getElementById('elapsed').textContent",
        |v| v.as_str().is_some_and(|now| now != elapsed),
    )
    .await;
    until(
        &c,
        "the best parameters to fill in",
        false,
        "return [document.querySelectorAll('#best-parameters tr').length, window.yamorSwapped||0, window.yamorLiveError||'']",
        |v| v[0].as_u64().is_some_and(|n| n > 1),
    )
    .await;
    // Hovering a point names its evaluation (its SVG title), and the axes
    // carry round tick labels.
    let hover = c
        .execute(
            "const t=document.querySelector('#chart circle.eval title');return [t?t.textContent:'', document.querySelectorAll('#chart .tick-label').length]",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        hover[0]
            .as_str()
            .is_some_and(|t| t.starts_with("evaluation 1: ")),
        "{hover}"
    );
    assert!(hover[1].as_u64().is_some_and(|n| n >= 4), "{hover}");
    shoot(&c, "run-live").await;

    // A host killed mid-run turns down on the hosts page.
    drop(doomed.take());
    c.goto(&format!("{web}/hosts")).await.unwrap();
    until(
        &c,
        "the killed host marked down",
        true,
        "const r=document.querySelector('tr[data-host=\"sim-doomed\"] td.down');return r?r.textContent:''",
        |v| v.as_str() == Some("down"),
    )
    .await;
    shoot(&c, "hosts-down").await;

    // Stopped from its page, it ends with every evaluation drawn, and its
    // best gait is walked again and drawn from above.
    c.goto(&run_url).await.unwrap();
    assert_eq!(
        text_of(&c, "state").await,
        "running",
        "the host died mid-run"
    );
    click_through(&c, "stop").await;
    until(
        &c,
        "the run to stop",
        true,
        "return document.getElementById('state').textContent",
        |v| v.as_str().is_some_and(|s| s != "running"),
    )
    .await;
    let drawn = c.execute(points, vec![]).await.unwrap().as_u64().unwrap();
    let progress = text_of(&c, "progress").await;
    let told: u64 = progress.split_whitespace().next().unwrap().parse().unwrap();
    assert!(drawn > first, "{drawn} points after stopping");
    assert_eq!(drawn, told, "every evaluation is a point ({progress})");
    until(
        &c,
        "the best gait's path",
        false,
        "const i=document.getElementById('trajectory');return i&&i.complete?i.naturalWidth:0",
        |v| v.as_u64().is_some_and(|w| w > 0),
    )
    .await;
    shoot(&c, "run").await;

    // Every evaluation in a table served a page at a time: sorted by value
    // (a click on its header, best first), filtered on the server with a
    // numeric condition, each row opening its job's whole record.
    click_through(&c, "trials-link").await;
    c.execute(
        "window.yamorOldPage=true;document.querySelector('#trials thead th:nth-child(2) a').click()",
        vec![],
    )
    .await
    .unwrap();
    until(
        &c,
        "the table sorted by value",
        false,
        "return window.yamorOldPage===undefined&&document.readyState==='complete'",
        |v| v.as_bool() == Some(true),
    )
    .await;
    let sorted = c
        .execute(
            "const v=[...document.querySelectorAll('#trials tbody tr td:nth-child(2)')].map(t=>parseFloat(t.textContent)).filter(x=>!isNaN(x));             return v.length>1&&v.length<=100&&v.every((x,i)=>i===0||v[i-1]>=x)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(sorted.as_bool(), Some(true), "best first after a click");
    shoot(&c, "trials").await;
    let best: f64 = c
        .execute(
            "return parseFloat(document.querySelector('#trials tbody tr td:nth-child(2)').textContent)",
            vec![],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap();
    c.execute(
        &format!("window.yamorOldPage=true;const f=document.querySelector('#query input[name=q]');f.value='velocity >= {}';document.getElementById('query').submit()", best - 0.001),
        vec![],
    )
    .await
    .unwrap();
    let shown = until(
        &c,
        "the filtered table",
        false,
        "return window.yamorOldPage===undefined&&document.readyState==='complete'?document.querySelectorAll('#trials tbody tr').length:-1",
        |v| v.as_i64().is_some_and(|n| n >= 0),
    )
    .await;
    assert!(
        shown.as_u64().is_some_and(|n| n >= 1),
        "velocity >= the best value keeps the best row: {shown}"
    );
    let matching = text_of(&c, "matching").await;
    assert_eq!(matching, shown.to_string(), "the count says what is shown");
    c.execute(
        "window.yamorOldPage=true;document.querySelector('#trials tbody tr a').click()",
        vec![],
    )
    .await
    .unwrap();
    until(
        &c,
        "a job's page",
        false,
        "return window.yamorOldPage===undefined&&document.getElementById('spec')!==null",
        |v| v.as_bool() == Some(true),
    )
    .await;
    shoot(&c, "job").await;

    // The job seen walking: its boxes in 3-D, replayed frame by frame.
    click_through(&c, "replay").await;
    let frames = until(
        &c,
        "the replay's frames",
        false,
        "return window.yamorReplayError||window.yamorReplayFrames||0",
        |v| v.as_u64().is_some_and(|n| n > 0) || v.is_string(),
    )
    .await;
    assert!(frames.as_u64().is_some_and(|n| n > 20), "replay: {frames}");
    // It plays by itself, without a click, at the speed chosen.
    until(
        &c,
        "the replay to play by itself",
        false,
        "return [window.yamorReplayShown||0, document.getElementById('play').textContent]",
        |v| v[0].as_u64().is_some_and(|n| n >= 3) && v[1] == "pause",
    )
    .await;
    c.execute(
        "const s=document.getElementById('speed');s.value='4';document.getElementById('play').click()",
        vec![],
    )
    .await
    .unwrap();
    c.execute(
        "const s=document.getElementById('time');s.value=Math.floor(s.max/2);s.dispatchEvent(new Event('input'))",
        vec![],
    )
    .await
    .unwrap();
    let clock = text_of(&c, "clock").await;
    assert!(clock.contains("cm/s measured here"), "{clock}");
    // Same engine, same step, same start: the walk its host recorded.
    let (here, recorded) = {
        let number = |after: &str| -> f64 {
            let rest = clock.split(after).nth(1).unwrap_or("");
            rest.trim_start()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        (number("s · "), number("(recorded:"))
    };
    assert_eq!(here, recorded, "{clock}");
    shoot(&c, "replay").await;

    // A batch from the form: one run per line, named after its settings.
    c.goto(&format!("{web}/runs/new")).await.unwrap();
    set_field(&c, "name", "sweep").await;
    set_field(&c, "budget", "6").await;
    set_field(&c, "warmup", "0.5").await;
    set_field(&c, "measure", "1").await;
    set_field(&c, "variants", "population=4\npopulation=6").await;
    click_through(&c, "launch").await;
    let names = until(
        &c,
        "the batch in the runs table",
        true,
        "return [...document.querySelectorAll('#runs tr td:nth-child(3)')].map(t=>t.textContent).join('|')",
        |v| v.as_str().is_some_and(|s| s.contains("sweep population=6")),
    )
    .await;
    assert!(names.as_str().unwrap().contains("sweep population=4"));
    shoot(&c, "runs").await;

    // The two runs of the batch, ticked and compared: their curves on
    // shared axes, their settings side by side with the difference marked.
    until(
        &c,
        "the batch to finish",
        true,
        "return [...document.querySelectorAll('#runs tr')].filter(r=>r.textContent.includes('sweep')&&r.textContent.includes('finished')).length",
        |v| v.as_u64() == Some(2),
    )
    .await;
    c.execute(
        "document.querySelectorAll('#runs tr').forEach(r=>{if(r.textContent.includes('sweep'))r.querySelector('input[name=run]').click()})",
        vec![],
    )
    .await
    .unwrap();
    click_through(&c, "compare-button").await;
    let curves = c
        .execute(
            "return document.querySelectorAll('#by-evaluation .curve').length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(curves.as_u64(), Some(2), "two curves compared");
    let differs = c
        .execute(
            "return [...document.querySelectorAll('#settings tr.differs th')].map(t=>t.textContent).join('|')",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        differs.as_str().unwrap().contains("population"),
        "marked: {differs}"
    );
    // The batch counted its seeds up: shown, not a difference of intent.
    assert!(
        !differs.as_str().unwrap().split('|').any(|d| d == "seed"),
        "marked: {differs}"
    );
    shoot(&c, "compare").await;

    // A finished run's page: its chart marks the gait as given (walked from
    // the same held-out starts as the finalists) and its setup line names
    // the engine that walked it.
    c.execute(
        "[...document.querySelectorAll('#legend a')].find(a=>a.textContent.includes('population=4')).click()",
        vec![],
    )
    .await
    .unwrap();
    until(
        &c,
        "the reference line on the finished run's chart",
        false,
        "return document.querySelectorAll('#chart #reference').length",
        |v| v.as_u64() == Some(1),
    )
    .await;
    let setup = text_of(&c, "setup").await;
    assert!(
        setup.contains("walked by articulated") && setup.contains("the given gait walks"),
        "{setup}"
    );
    shoot(&c, "run-finished").await;

    // A map of gaits: a MAP-Elites run from the form, its heat map, and a
    // click on a square opens that elite's walk.
    c.goto(&format!("{web}/runs/new")).await.unwrap();
    set_field(&c, "name", "map-run").await;
    c.execute(
        "const s=document.querySelector('select[name=optimizer]');s.value='map-elites';s.dispatchEvent(new Event('change'))",
        vec![],
    )
    .await
    .unwrap();
    set_field(&c, "budget", "36").await;
    set_field(&c, "warmup", "0.5").await;
    set_field(&c, "measure", "1").await;
    set_field(&c, "set.map-elites.emitters", "2").await;
    set_field(&c, "set.map-elites.batch", "6").await;
    launch_and_finish(&c, "map-run").await;
    click_through(&c, "map-link").await;
    let squares = c
        .execute(
            "return document.querySelectorAll('#heatmap a.cell').length",
            vec![],
        )
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    assert!(squares > 0, "the heat map shows elites");
    let filled: u64 = text_of(&c, "coverage").await.parse().unwrap();
    // Four axes drawn two at a time: never more squares than elites.
    assert!(squares <= filled, "{squares} squares, {filled} elites");
    let re_walked = text_of(&c, "map-summary").await;
    assert!(
        re_walked.contains(&format!("{filled} elites re-walked")),
        "{re_walked}"
    );
    shoot(&c, "map").await;
    let job = c
        .execute(
            "return document.querySelector('#heatmap a.cell').getAttribute('href')",
            vec![],
        )
        .await
        .unwrap();
    c.execute("window.yamorOldPage = true", vec![])
        .await
        .unwrap();
    c.find(Locator::Css("#heatmap a.cell rect"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &c,
        "the elite's job page",
        false,
        "return window.yamorOldPage === undefined && document.readyState === 'complete' ? location.pathname : ''",
        |v| v.as_str() == job.as_str(),
    )
    .await;
    assert!(
        c.find(Locator::Css("a[href$='/replay']")).await.is_ok(),
        "the elite's page links its replay"
    );

    // The user's own robot, uploaded: the snake's files walked by hosts
    // started for the quadruped.
    c.goto(&format!("{web}/runs/new")).await.unwrap();
    let snake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/robots/snake");
    for (input, file) in [("world", "world.xml"), ("gait", "gait.xml")] {
        let path = snake.join(file).canonicalize().unwrap();
        c.find(Locator::Id(input))
            .await
            .unwrap()
            .send_keys(path.to_str().unwrap())
            .await
            .unwrap();
    }
    until(
        &c,
        "the files read into the form",
        false,
        "return document.querySelector('textarea[name=world_xml]').value.length>0&&document.querySelector('textarea[name=gait_xml]').value.length>0",
        |v| v.as_bool() == Some(true),
    )
    .await;
    set_field(&c, "name", "uploaded-snake").await;
    set_field(&c, "budget", "4").await;
    set_field(&c, "warmup", "0.5").await;
    set_field(&c, "measure", "1").await;
    shoot(&c, "start-upload").await;
    launch_and_finish(&c, "uploaded-snake").await;
    // The form offers it again.
    c.goto(&format!("{web}/runs/new")).await.unwrap();
    let offered = c
        .execute(
            "return [...document.querySelectorAll('select[name=robot] option')].map(o=>o.textContent).join('|')",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        offered.as_str().unwrap().contains("uploaded-snake"),
        "robots offered: {offered}"
    );

    // A refused form comes back with the reason and its values.
    c.goto(&format!("{web}/runs/new")).await.unwrap();
    // (The browser itself refuses numbers out of an input's range.)
    set_field(&c, "name", "refused").await;
    set_field(&c, "variants", "population=many").await;
    click_through(&c, "launch").await;
    let error = text_of(&c, "error").await;
    assert!(error.contains("population"), "error says {error:?}");

    c.goto(&format!("{web}/jobs")).await.unwrap();
    assert!(
        c.find_all(Locator::Css("#jobs tr")).await.unwrap().len() > 10,
        "jobs listed"
    );
    shoot(&c, "jobs").await;
    c.goto(&format!("{web}/gaits")).await.unwrap();
    c.find(Locator::Id("gaits")).await.unwrap();
    shoot(&c, "gaits").await;
    c.close().await.unwrap();
}
