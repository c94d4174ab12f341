//! Prometheus metrics of one organizer, in OpenMetrics text (for a scraper
//! that asks for it) or Prometheus' classic text format 0.0.4 (for anyone
//! else: [`classic_text`]).
//!
//! Counters and histograms are updated where things happen (the scheduler
//! when a job starts, ends or is re-queued; the store's writer after each
//! group commit). Gauges that describe the current state (hosts by state,
//! queue depth, runs by state, each run's best) are set from the live state
//! when scraped, so they can never drift from what the API reports.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

fn label(key: &str, value: impl ToString) -> Labels {
    vec![(key.to_owned(), value.to_string())]
}

/// The organizer's metrics registry.
pub struct Metrics {
    registry: Registry,
    pub jobs_started: Counter,
    pub jobs_finished: Counter,
    pub jobs_failed: Counter,
    pub jobs_retried: Counter,
    pub runs_started: Counter,
    /// Seconds from an attempt's start to its result.
    pub evaluation_seconds: Histogram,
    hosts: Family<Labels, Gauge>,
    queued: Family<Labels, Gauge>,
    runs: Family<Labels, Gauge>,
    best_velocity: Family<Labels, Gauge<f64, AtomicU64>>,
    best_value: Family<Labels, Gauge<f64, AtomicU64>>,
    evaluations: Family<Labels, Gauge>,
    database_writable: Gauge,
}

/// The state a scrape reports, read from the scheduler and the runs.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// (state name, hosts in it).
    pub hosts: Vec<(&'static str, i64)>,
    /// (run id, 0 for jobs outside runs; jobs queued).
    pub queued: Vec<(u64, i64)>,
    /// (state name, runs in it).
    pub runs: Vec<(&'static str, i64)>,
    /// (run id, run name, whether a gait (the best is m/s) or bare
    /// parameters (no unit), best value, evaluations).
    pub run_best: Vec<(u64, String, bool, Option<f64>, u64)>,
    /// Whether the last commit succeeded (false on a full disk).
    pub database_writable: bool,
}

impl Metrics {
    /// A registry with every metric registered; `commit_seconds` is the
    /// store's group-commit latency histogram.
    #[must_use]
    pub fn new(commit_seconds: Histogram) -> Self {
        let mut registry = Registry::with_prefix("yamor");
        let jobs_started = Counter::default();
        let jobs_finished = Counter::default();
        let jobs_failed = Counter::default();
        let jobs_retried = Counter::default();
        let runs_started = Counter::default();
        // 1 ms .. ~9 min: an expression evaluates in a millisecond, a
        // real robot's walk takes minutes.
        let evaluation_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 20));
        let hosts = Family::<Labels, Gauge>::default();
        let queued = Family::<Labels, Gauge>::default();
        let runs = Family::<Labels, Gauge>::default();
        let best_velocity = Family::<Labels, Gauge<f64, AtomicU64>>::default();
        let best_value = Family::<Labels, Gauge<f64, AtomicU64>>::default();
        let evaluations = Family::<Labels, Gauge>::default();
        let database_writable = Gauge::default();
        registry.register(
            "jobs_started",
            "Job attempts sent to a host",
            jobs_started.clone(),
        );
        registry.register(
            "jobs_finished",
            "Jobs that ended with a result",
            jobs_finished.clone(),
        );
        registry.register(
            "jobs_failed",
            "Jobs that failed for good",
            jobs_failed.clone(),
        );
        registry.register(
            "jobs_retried",
            "Attempts re-queued after a failure, a timeout or a lost host",
            jobs_retried.clone(),
        );
        registry.register(
            "runs_started",
            "Optimizer runs started",
            runs_started.clone(),
        );
        registry.register(
            "evaluation_seconds",
            "Time from an attempt's start to its result",
            evaluation_seconds.clone(),
        );
        registry.register(
            "store_commit_seconds",
            "Duration of one SQLite group commit",
            commit_seconds,
        );
        registry.register("hosts", "Registered hosts by state", hosts.clone());
        registry.register(
            "jobs_queued",
            "Jobs waiting for a host, by run (run 0: jobs outside runs)",
            queued.clone(),
        );
        registry.register("runs", "Optimizer runs by state", runs.clone());
        registry.register(
            "run_best_velocity_meters_per_second",
            "Best velocity of each gait run so far (its held-out mean once re-walked)",
            best_velocity.clone(),
        );
        registry.register(
            "run_best_value",
            "Best value of each run over bare parameters so far (maximised; the objective's own, no unit)",
            best_value.clone(),
        );
        registry.register(
            "run_evaluations",
            "Evaluations told to each run",
            evaluations.clone(),
        );
        registry.register(
            "database_writable",
            "1 while commits succeed, 0 while the database cannot be written (a full disk): results wait in memory",
            database_writable.clone(),
        );
        Metrics {
            registry,
            jobs_started,
            jobs_finished,
            jobs_failed,
            jobs_retried,
            runs_started,
            evaluation_seconds,
            hosts,
            queued,
            runs,
            best_velocity,
            best_value,
            evaluations,
            database_writable,
        }
    }

    /// The text exposition of every metric, gauges set from `snapshot`.
    #[must_use]
    pub fn render(&self, snapshot: &Snapshot) -> String {
        self.hosts.clear();
        for (state, n) in &snapshot.hosts {
            self.hosts.get_or_create(&label("state", state)).set(*n);
        }
        self.queued.clear();
        for (run, n) in &snapshot.queued {
            self.queued.get_or_create(&label("run", run)).set(*n);
        }
        self.runs.clear();
        for (state, n) in &snapshot.runs {
            self.runs.get_or_create(&label("state", state)).set(*n);
        }
        self.best_velocity.clear();
        self.best_value.clear();
        self.evaluations.clear();
        for (id, name, gait, best, evaluations) in &snapshot.run_best {
            let labels = vec![
                ("run".to_owned(), id.to_string()),
                ("name".to_owned(), name.clone()),
            ];
            let family = if *gait {
                &self.best_velocity
            } else {
                &self.best_value
            };
            if let Some(best) = best {
                family.get_or_create(&labels).set(*best);
            }
            self.evaluations
                .get_or_create(&labels)
                .set(i64::try_from(*evaluations).unwrap_or(i64::MAX));
        }
        self.database_writable
            .set(i64::from(snapshot.database_writable));
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

/// `openmetrics` (as [`Metrics::render`] writes it) in Prometheus' classic
/// text format 0.0.4, which is what `text/plain` promises: a counter's
/// `# HELP` and `# TYPE` name its samples' `_total` name (OpenMetrics names
/// the family without it, and a classic parser then reads every counter as
/// untyped), and OpenMetrics' `# UNIT` and `# EOF` lines go.
#[must_use]
pub fn classic_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let descriptor = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|prefix| line.strip_prefix(prefix).map(|rest| (prefix, rest)));
        match descriptor {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                if counters.contains(name) {
                    out.push_str(&format!("{prefix}{name}_total {tail}"));
                } else {
                    out.push_str(line);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A histogram for the store's commit latency (100 µs .. ~3 s).
#[must_use]
pub fn commit_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}
