//! `yamor roombots plan`: self-reconfigurations planned as cluster jobs,
//! one job per start, on an organizer's planning hosts or on a local
//! cluster of them; stored, and resumed by running the command again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use clap::Args;
use tokio_stream::StreamExt;
use yamor_core::evaluation::{EvaluationJob, EvaluationSpec, Objective, Outcome};
use yamor_organizer::OrganizerClient;
use yamor_organizer::model::{Job, JobFilter, JobRequest, JobState};
use yamor_reconfig::planning::Task;

use crate::task::TaskArgs;

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    task: TaskArgs,
    /// Starts to plan from: one job per seed, --first-seed onwards.
    #[arg(long, default_value_t = 10)]
    starts: u64,
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Queue the jobs on this organizer's planning hosts (`yamor host
    /// --plan`); without it, a local cluster plans them.
    #[arg(long, env = "YAMOR_ORGANIZER")]
    organizer: Option<String>,
    /// The local cluster's planning hosts (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// The local cluster's database (default: the one every yamor run
    /// records into). Planning again with the same database re-uses the
    /// plans it holds and finishes the ones left unfinished.
    #[arg(long)]
    db: Option<PathBuf>,
    /// Write each finished plan to DIR/seed-K.plan.
    #[arg(long)]
    write: Option<PathBuf>,
}

/// The owner planning jobs are fairly shared under.
const OWNER: &str = "plan";

pub fn plan(args: &PlanArgs) -> Result<()> {
    let task = args.task.task()?;
    ensure!(args.starts >= 1, "--starts must be at least 1");
    ensure!(
        args.starts == 1 || !args.task.takes_apart(),
        "a structure taken apart (--from) has one start, whatever the seed: use --starts 1"
    );
    let last = args
        .first_seed
        .checked_add(args.starts)
        .context("--first-seed + --starts is past the last seed")?;
    let seeds: Vec<u64> = (args.first_seed..last).collect();
    crate::block_on(async {
        let jobs = match &args.organizer {
            Some(url) => {
                let organizer = OrganizerClient::new(url, &Default::default())?;
                let served = organizer.list_hosts().await?.iter().any(|h| {
                    h.objectives
                        .iter()
                        .any(|o| o == yamor_reconfig::planning::SERVED)
                });
                if !served {
                    eprintln!(
                        "no host of {url} plans reconfigurations now: the jobs wait for one (`yamor host --plan --organizer {url}`)"
                    );
                }
                plan_on(&organizer, &task, &seeds).await?
            }
            None => {
                let db = args
                    .db
                    .clone()
                    .unwrap_or_else(yamor_local::shared::shared_database);
                let _claim = yamor_local::shared::Claim::try_hold(&db)?.with_context(|| {
                    format!(
                        "{} is held by another yamor process; give --db",
                        db.display()
                    )
                })?;
                let hosts = yamor_local::default_hosts(args.hosts).max(1);
                // One planner for every local host: the database and each
                // connection type's swept cells are made once, on every core.
                let planner = Arc::new(yamor_reconfig::planning::Planner::new(hosts));
                let cluster = yamor_local::LocalCluster::start_with(hosts, &db, |_| {
                    Ok(Arc::new(yamor_families::planning::PlanningBackend::sharing(
                        planner.clone(),
                    )) as Arc<dyn yamor_host_agent::Backend>)
                })
                .await?;
                eprintln!(
                    "planning on {hosts} local host(s); database {}; dashboard {}",
                    db.display(),
                    cluster.dashboard
                );
                let organizer = OrganizerClient::new(&cluster.url, &Default::default())?;
                let jobs = plan_on(&organizer, &task, &seeds).await;
                cluster.organizer.scheduler.store().sync().await?;
                cluster.shutdown().await;
                jobs?
            }
        };
        report(&task, &jobs, args.write.as_deref())
    })
}

/// Queues one job per seed that the organizer does not already hold done
/// or under way, and waits for all of them; returns them by seed.
async fn plan_on(
    organizer: &OrganizerClient,
    task: &Task,
    seeds: &[u64],
) -> Result<BTreeMap<u64, Job>> {
    let objective = Objective::Named(task.objective());
    let mut held = BTreeMap::new();
    for job in direct_jobs(organizer).await? {
        let seed = job.request.job.spec.seed;
        let usable = matches!(
            job.state,
            JobState::Done | JobState::Queued | JobState::Running
        );
        if usable && job.request.job.objective == objective && seeds.contains(&seed) {
            held.entry(seed).or_insert(job.id);
        }
    }
    let missing: Vec<u64> = seeds
        .iter()
        .copied()
        .filter(|s| !held.contains_key(s))
        .collect();
    let requests: Vec<JobRequest> = missing
        .iter()
        .map(|seed| JobRequest {
            job: EvaluationJob {
                objective: objective.clone(),
                spec: EvaluationSpec {
                    seed: *seed,
                    ..EvaluationSpec::default()
                },
                ..EvaluationJob::default()
            },
            backend: None,
            max_attempts: 0,
            timeout: None,
        })
        .collect();
    if !held.is_empty() {
        eprintln!(
            "{} of {} starts already planned or under way; queueing {}",
            held.len(),
            seeds.len(),
            missing.len()
        );
    }
    let ids = if requests.is_empty() {
        Vec::new()
    } else {
        organizer.submit_jobs(OWNER, &requests).await?
    };
    held.extend(missing.into_iter().zip(ids));
    let seed_of: BTreeMap<u64, u64> = held.iter().map(|(s, id)| (*id, *s)).collect();
    let mut ended = BTreeMap::new();
    let mut events = organizer
        .watch_jobs(0, held.values().copied().collect(), false)
        .await?;
    while ended.len() < held.len() {
        let job = events
            .next()
            .await
            .context("the organizer stopped sending job updates")??;
        if let Some(seed) = seed_of.get(&job.id)
            && matches!(
                job.state,
                JobState::Done | JobState::Failed | JobState::Cancelled
            )
        {
            ended.insert(*seed, job);
        }
    }
    Ok(ended)
}

/// Every job queued outside a run, oldest first.
async fn direct_jobs(organizer: &OrganizerClient) -> Result<Vec<Job>> {
    let mut all = Vec::new();
    let mut after_id = 0;
    loop {
        let page = organizer
            .list_jobs(
                &JobFilter {
                    after_id,
                    limit: Some(200),
                    ..JobFilter::default()
                },
                // Without the plans' text: the finished ones are read
                // one by one when watched.
                true,
            )
            .await?;
        let Some(last) = page.last() else {
            return Ok(all);
        };
        after_id = last.id;
        all.extend(page.into_iter().filter(|j| j.run_id == 0));
    }
}

fn report(task: &Task, jobs: &BTreeMap<u64, Job>, write: Option<&std::path::Path>) -> Result<()> {
    if let Some(dir) = write {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    println!("{}: {} starts", task.describe(), jobs.len());
    println!("seed   job  built  rounds  moves  collisions  plan ms  host (attempts)");
    let (mut built, mut collisions, mut failed) = (0, 0, 0);
    let mut moves = Vec::new();
    let mut ms = Vec::new();
    for (seed, job) in jobs {
        let Some(plan) = job.outcome.as_ref().and_then(Outcome::plan) else {
            failed += 1;
            println!(
                "{seed:>4} {:>5}  {:?}: {}",
                job.id,
                job.state,
                job.error.lines().next().unwrap_or("")
            );
            continue;
        };
        let wall = plan.wall.as_secs_f64();
        built += usize::from(plan.built);
        collisions += plan.collisions;
        if plan.built {
            moves.push(plan.moves);
            ms.push(wall * 1e3);
        }
        println!(
            "{seed:>4} {:>5}  {:>5}  {:>6}  {:>5}  {:>10}  {:>7.1}  {} ({})",
            job.id,
            if plan.built { "yes" } else { "NO" },
            plan.rounds,
            plan.moves,
            plan.collisions,
            wall * 1e3,
            job.host,
            job.attempts
        );
        if let Some(dir) = write {
            let path = dir.join(format!("seed-{seed}.plan"));
            std::fs::write(&path, plan.plan.to_text())
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    moves.sort_unstable();
    ms.sort_by(f64::total_cmp);
    println!(
        "built {built}/{}; {collisions} collisions; {failed} jobs failed; built ones: median {} moves, {:.1} ms planning",
        jobs.len(),
        moves.get(moves.len() / 2).copied().unwrap_or(0),
        ms.get(ms.len() / 2).copied().unwrap_or(0.0)
    );
    ensure!(failed == 0, "{failed} planning job(s) failed");
    ensure!(
        built == jobs.len(),
        "{} of {} builds did not finish",
        jobs.len() - built,
        jobs.len()
    );
    Ok(())
}
