//! `yamor bench-cluster`: scheduler throughput and parallel speed-up with
//! expression hosts, everything on loopback gRPC with persistence on.

use std::sync::Arc;
use std::time::{Duration, Instant};
use yamor_core::evaluation::{BackendKind, EvaluationJob, Objective};

use anyhow::{Result, bail};
use clap::Args;
use yamor_host_agent::Backend;
use yamor_host_agent::expr::ExprBackend;
use yamor_proto::transport::ClientSecurity;

use yamor_local::LocalCluster;
use yamor_organizer::OrganizerClient;
use yamor_organizer::model::{JobRequest, ParameterBound, Problem, RunSpec};

#[derive(Args)]
pub struct BenchClusterArgs {
    /// Host counts for the throughput test.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    hosts: Vec<usize>,
    /// Jobs per throughput measurement.
    #[arg(long, default_value_t = 20_000)]
    jobs: usize,
    /// Host counts for the PSO speed-up test (empty to skip).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    speedup_hosts: Vec<usize>,
    /// Evaluation delay of the speed-up test, in milliseconds.
    #[arg(long, default_value_t = 50)]
    delay_ms: u64,
    /// PSO generations in the speed-up test (32 particles each).
    #[arg(long, default_value_t = 5)]
    generations: u64,
    /// Evaluations per Powell run in the host-utilisation test (0 to skip).
    #[arg(long, default_value_t = 300)]
    utilisation_budget: u64,
}

const XY: &str = "-(x - 0.3)^2 - (y + 0.2)^2";

/// A local cluster of `hosts` expression hosts evaluating `expression`, on a
/// fresh database.
async fn cluster(
    hosts: usize,
    expression: &str,
    delay: Duration,
    tag: &str,
) -> Result<LocalCluster> {
    let dir = std::env::temp_dir().join(format!("yamor-bench-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let backend: Arc<dyn Backend> = Arc::new(ExprBackend::new(expression, delay)?);
    Ok(LocalCluster::start_with(hosts, &dir.join("yamor.db"), |_| Ok(backend.clone())).await?)
}

/// A job evaluating [`XY`] at `(x, y)` on an expression host.
fn xy_job(x: f64, y: f64) -> JobRequest {
    JobRequest {
        job: EvaluationJob {
            parameters: vec![("x".into(), x), ("y".into(), y)],
            objective: Objective::Expression(XY.into()),
            ..Default::default()
        },
        backend: Some(BackendKind::Expression),
        ..Default::default()
    }
}

async fn throughput(hosts: usize, jobs: usize) -> Result<f64> {
    let c = cluster(hosts, XY, Duration::ZERO, &format!("tp{hosts}")).await?;
    let mut events = c.organizer.scheduler.subscribe_jobs();
    let client = OrganizerClient::new(&c.url, &ClientSecurity::default())?;
    let started = Instant::now();
    let submitter = tokio::spawn(async move {
        let mut sent = 0;
        while sent < jobs {
            let n = (jobs - sent).min(500);
            let batch: Vec<JobRequest> = (0..n)
                .map(|i| xy_job((sent + i) as f64 * 1e-4, 0.0))
                .collect();
            client.submit_jobs("bench", &batch).await?;
            sent += n;
        }
        anyhow::Ok(())
    });
    let mut done = 0;
    while done < jobs {
        match events.recv().await {
            Ok(job) if job.state == yamor_organizer::model::JobState::Done => done += 1,
            Ok(job) if job.state == yamor_organizer::model::JobState::Failed => {
                bail!("job {} failed: {}", job.id, job.error)
            }
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                bail!("benchmark lost {n} events")
            }
            Err(e) => bail!("{e}"),
        }
    }
    submitter.await??;
    c.organizer.scheduler.store().sync().await?;
    let rate = jobs as f64 / started.elapsed().as_secs_f64();
    c.shutdown().await;
    Ok(rate)
}

async fn pso_time(hosts: usize, delay: Duration, generations: u64) -> Result<f64> {
    let c = cluster(hosts, XY, delay, &format!("pso{hosts}")).await?;
    let request = RunSpec {
        settings: [
            ("particles".to_owned(), "32".to_owned()),
            ("iterations".to_owned(), generations.to_string()),
            // Exactly 32 × generations walks: no confirmation rounds, which
            // PSO spends on re-evaluating points (the speed-up is of the
            // swarm's own evaluations).
            ("reevaluate".to_owned(), "0".to_owned()),
        ]
        .into(),
        seed: 1,
        objective: Objective::Expression(XY.into()),
        ..RunSpec::new(
            "pso",
            Problem::Space(vec![
                ParameterBound {
                    name: "x".into(),
                    min: -1.0,
                    max: 1.0,
                    start: 0.0,
                },
                ParameterBound {
                    name: "y".into(),
                    min: -1.0,
                    max: 1.0,
                    start: 0.0,
                },
            ]),
        )
    };
    let mut events = c.organizer.runs.subscribe();
    let started = Instant::now();
    let run = c.organizer.runs.start(request).await?;
    loop {
        let event = events.recv().await?;
        let r = event.run;
        if r.id == run.id && r.state != yamor_organizer::model::RunState::Running {
            if r.evaluations != 32 * generations {
                bail!("run ended after {} evaluations: {}", r.evaluations, r.error);
            }
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    c.shutdown().await;
    Ok(seconds)
}

/// Mean number of busy hosts during a Powell run on 16 expression hosts:
/// total evaluation time over the run's wall time.
async fn powell_utilisation(
    variant: &str,
    budget: u64,
    delay: Duration,
) -> Result<(f64, u64, f64)> {
    let bounds = (0..7)
        .map(|i| ParameterBound {
            name: format!("x{i}"),
            min: -1.0,
            max: 1.0,
            start: -0.8,
        })
        .collect();
    let expression = "-((x0-0.3)^2 + (x1+0.2)^2 + (x2-0.1)^2 + (x3-0.5)^2 + (x4+0.4)^2 + (x5-0.2)^2 + (x6+0.1)^2)";
    let c = cluster(16, expression, delay, &format!("util-{variant}")).await?;
    let request = RunSpec {
        objective: Objective::Expression(expression.into()),
        settings: [("variant".to_owned(), variant.to_owned())].into(),
        seed: 1,
        max_evaluations: budget,
        ..RunSpec::new("powell", Problem::Space(bounds))
    };
    let mut events = c.organizer.runs.subscribe();
    let run = c.organizer.runs.start(request).await?;
    let finished = loop {
        let event = events.recv().await?;
        let r = event.run;
        if r.id == run.id && r.state != yamor_organizer::model::RunState::Running {
            break r;
        }
    };
    c.organizer.scheduler.store().sync().await?;
    let jobs = c
        .organizer
        .scheduler
        .store()
        .jobs(&yamor_organizer::store::JobFilter {
            run_id: Some(run.id),
            ..Default::default()
        })?;
    let busy: i64 = jobs.iter().map(|j| j.finished_ms - j.started_ms).sum();
    let first = jobs.iter().map(|j| j.started_ms).min().unwrap_or(0);
    let last = jobs.iter().map(|j| j.finished_ms).max().unwrap_or(0);
    c.shutdown().await;
    Ok((
        busy as f64 / (last - first).max(1) as f64,
        finished.evaluations,
        finished.best_velocity.unwrap_or(f64::NAN),
    ))
}

pub async fn bench_cluster(args: BenchClusterArgs) -> Result<()> {
    println!(
        "scheduler throughput: expression hosts, no delay, {} jobs, SQLite on",
        args.jobs
    );
    println!("{:>6} {:>14}", "hosts", "evaluations/s");
    for &n in &args.hosts {
        let rate = throughput(n, args.jobs).await?;
        println!("{n:>6} {rate:>14.0}");
    }
    if args.utilisation_budget > 0 {
        println!(
            "\nhost utilisation: Powell on a 7-D expression, 16 hosts, {} ms per evaluation, budget {}",
            args.delay_ms, args.utilisation_budget
        );
        println!(
            "{:<10} {:>16} {:>7} {:>12}",
            "variant", "mean busy hosts", "evals", "best"
        );
        for variant in ["classic", "interval"] {
            let (busy, evals, best) = powell_utilisation(
                variant,
                args.utilisation_budget,
                Duration::from_millis(args.delay_ms),
            )
            .await?;
            println!("{variant:<10} {busy:>16.2} {evals:>7} {best:>12.5}");
        }
    }
    if args.speedup_hosts.is_empty() {
        return Ok(());
    }
    let delay = Duration::from_millis(args.delay_ms);
    println!(
        "\nPSO speed-up: 32 particles x {} generations, {} ms per evaluation",
        args.generations, args.delay_ms
    );
    println!(
        "{:>6} {:>10} {:>9} {:>11}",
        "hosts", "seconds", "speed-up", "efficiency"
    );
    let mut base = None;
    for &n in &args.speedup_hosts {
        let t = pso_time(n, delay, args.generations).await?;
        // Relative to the first host count, taken as perfectly efficient
        // (exact when the list starts at 1, as by default).
        let base = *base.get_or_insert(t * n as f64);
        let speedup = base / t;
        println!(
            "{n:>6} {t:>10.2} {speedup:>9.2} {:>10.0}%",
            100.0 * speedup / n as f64
        );
    }
    Ok(())
}
