//! The organizer's client commands (`yamor hosts`, `yamor jobs`, and the
//! arguments of `yamor optimize` and `yamor run`): clap arguments, and the
//! handlers that need no more than an [`OrganizerClient`] and
//! [`text`](crate::text) to print its answers. Reading a robot's files into
//! a run and following it with a progress bar are `yamor_local`'s (above
//! this crate), and so is `optimize`'s handler.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use tokio_stream::StreamExt;
use yamor_core::evaluation::BackendKind;
use yamor_proto::transport::{ClientSecurity, Token};

use crate::OrganizerClient;
use crate::model::{HeldOut, JobFilter, Run};
use crate::text;

/// How to reach the organizer, and whether to print JSON.
#[derive(Args, Clone, Debug)]
pub struct ClientOpts {
    /// The organizer's URL.
    #[arg(
        long,
        env = "YAMOR_ORGANIZER",
        default_value = "http://127.0.0.1:7070",
        global = true
    )]
    pub organizer: String,
    /// File holding the shared token (otherwise $YAMOR_TOKEN).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
    /// CA certificate (PEM) for https:// URLs.
    #[arg(long, global = true)]
    pub tls_ca: Option<PathBuf>,
    /// Print JSON (one document on stdout) instead of a table, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
}

impl ClientOpts {
    pub fn security(&self) -> Result<ClientSecurity> {
        Ok(ClientSecurity {
            token: Token::from_file_or_env(self.token_file.as_deref())?,
            tls_ca: self.tls_ca.clone(),
            tls_domain: None,
        })
    }

    pub fn format(&self) -> text::Format {
        if self.json {
            text::Format::Json
        } else {
            text::Format::Text
        }
    }

    pub fn organizer(&self) -> Result<OrganizerClient> {
        Ok(OrganizerClient::new(&self.organizer, &self.security()?)?)
    }
}

#[derive(Subcommand)]
pub enum HostsCommand {
    /// List hosts: state, current job, last heartbeat.
    List,
    /// Add a host by address (it is probed first).
    Add {
        /// The host's gRPC address, e.g. http://10.0.0.5:7071.
        address: String,
        /// Its unique name (default: the address).
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Remove a host by name or id; its running job is re-queued.
    Remove {
        /// The host's name or id.
        host: String,
    },
}

/// Runs one `yamor hosts` command and prints the organizer's answer.
pub async fn hosts(client: ClientOpts, command: HostsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    let answer = match command {
        HostsCommand::List => text::hosts(&organizer.list_hosts().await?, client.format()),
        HostsCommand::Add { address, name } => {
            let host = organizer.register_host(&name, &address).await?;
            text::host_added(&host, client.format())
        }
        HostsCommand::Remove { host } => {
            organizer.deregister_host(&host).await?;
            format!("removed {host}\n")
        }
    };
    print!("{answer}");
    Ok(())
}

/// `optimize start` and `optimize batch`: a run on the cluster's hosts.
#[derive(Args, Clone)]
pub struct RunSpecArgs {
    /// Robot simulation hosts build (an embedded example).
    #[arg(long, default_value = "quadruped")]
    pub robot: String,
    #[command(flatten)]
    pub options: RunOptions,
}

/// `--budget`: a count of evaluations, said so when it is not one (clap
/// would take `-5` for a flag and suggest `-- -5`).
// A `value_parser` only needs a displayable error; a String is clap's idiom.
fn budget(text: &str) -> Result<u64, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n as u64),
        _ => Err(format!(
            "budget must be a positive number of evaluations (0: the optimizer's own schedule), got {text}"
        )),
    }
}

/// `--time`: seconds, none negative.
fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s >= 0.0 && s.is_finite() => Ok(s),
        _ => Err(format!(
            "time must be a positive number of seconds (0: unlimited), got {text}"
        )),
    }
}

/// What a run optimizes and how; `yamor run` shares these.
#[derive(Args, Clone)]
pub struct RunOptions {
    /// Optimizer plugin (see `yamor optimize optimizers`). CMA-ES is the
    /// default: on the quadruped it reached 95 % of the best known gait
    /// sooner and more often than PSO (docs/benchmarks.md, time to a gait).
    #[arg(long, default_value = "cmaes")]
    pub optimizer: String,
    /// Optimization configuration: yamorconfig with <optimize> rules (thesis 5.7.2).
    /// Defaults to the robot's own.
    #[arg(long, conflicts_with = "param")]
    pub config: Option<PathBuf>,
    /// Bare parameters: name=min:max[:start] (repeatable); needs --objective.
    #[arg(long, requires = "objective")]
    pub param: Vec<String>,
    /// What a run over --param maximises: expr:<MathEval text> (served by
    /// `yamor host --expr <text>`) or an external objective's name.
    #[arg(long)]
    pub objective: Option<String>,
    /// Optimizer setting name=value (repeatable).
    #[arg(long = "set")]
    pub settings: Vec<String>,
    /// Seed of the optimizer and of the walks (batch: the first run's).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Maximum evaluations (0: the optimizer's own schedule; `yamor run`:
    /// 2400, about 30 s on two cores).
    #[arg(long, allow_negative_numbers = true, value_parser = budget)]
    pub budget: Option<u64>,
    /// Maximum seconds (0: unlimited).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = seconds)]
    pub time: f64,
    /// Seconds walked before the measurement starts.
    #[arg(long, default_value_t = 8.0)]
    pub warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 12.0)]
    pub measure: f64,
    /// A label for the run (default: <robot>-<optimizer>-<id>, or <optimizer>-<id> over bare parameters; a batch: after its settings).
    #[arg(long)]
    pub name: Option<String>,
    /// Which hosts evaluate: sim (default for gaits), real (robots on a
    /// serial line) or expr (default for bare parameters).
    #[arg(long, value_parser = host_kind())]
    pub on: Option<BackendKind>,
    /// Walk every candidate from the start --seed (the thesis' protocol), not a fresh start each.
    #[arg(long)]
    pub fixed_start: bool,
    /// Held-out starts the finalists are re-walked from; the best mean is
    /// reported (0: none). Default: 20 for a gait in simulation; 0 on a
    /// real robot and for bare parameters (--param), whose run then reports
    /// its best single value (give a number for a noisy objective).
    #[arg(long)]
    pub held_out: Option<u32>,
    /// Finalists re-walked from the held-out starts.
    #[arg(long, default_value_t = HeldOut::DEFAULT.candidates)]
    pub finalists: u32,
    /// Ask for a straight gait: walks turning faster than this many degrees
    /// per second (either way) rank below every walk that does not, and the
    /// reported gait keeps it over the held-out starts when a finalist does.
    #[arg(long, value_name = "DEG_PER_S")]
    pub max_turn: Option<f64>,
    /// Which way a walk's velocity counts: `any` (the distance the central
    /// module covers in any direction, the thesis') or `axis` (only along
    /// the robot's long axis, either end first: a gait that walks sideways
    /// counts nothing). The reported figure says which. Default: what the
    /// robot's optimize.xml declares (`<yamorconfig direction="axis">`),
    /// else `any`.
    #[arg(long)]
    pub direction: Option<yamor_core::evaluation::Direction>,
    /// Stop hopeless walks early: a walk slower, a quarter or half way
    /// through its measured window, than every walk of the run's best
    /// quarter was at that point ends there (told as its velocity so far).
    #[arg(long)]
    pub early_stop: bool,
    /// The worlds walks are drawn from: `single` (the host's own world, the thesis' protocol), `robust` (both engines, friction, masses, servo torque, speed, lag and play, camera noise, drawn for every walk and recorded), `paired` (each drawn world walked in both engines, valued by their mean; two walks a candidate) or `paired-slowest` (by the slower engine). The held-out re-walk is then in held-out worlds, reported per engine (docs/worlds.md).
    #[arg(long, default_value_t)]
    pub worlds: yamor_core::world::Worlds,
    /// Walk the robot damaged (repeatable): stuck:M, limp:M, weak:M (module
    /// M's motor), dead-cpg:M, upside-down, friction:F (the floor), engine:NAME
    /// (another physics engine), lag:S (servos S seconds late), emulated (the
    /// emulated real robot's servos: late, with play, weaker).
    #[arg(long, value_name = "DAMAGE")]
    pub damage: Vec<yamor_core::damage::Damage>,
    /// Adapt from this run's map of gaits (a map-elites run of the same
    /// robot and parameters): what `--optimizer ite` searches.
    #[arg(long, value_name = "RUN")]
    pub prior: Option<u64>,
}

/// `--on`'s values: the kinds' short names.
fn host_kind() -> impl clap::builder::TypedValueParser<Value = BackendKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(BackendKind::ALL.map(BackendKind::short))
        .map(|text| BackendKind::from_short(&text).expect("one of the possible values"))
}

#[derive(Subcommand)]
pub enum OptimizeCommand {
    /// Start one run.
    Start(RunSpecArgs),
    /// Start one run per variant, each named after its settings; seeds count up from --seed.
    Batch {
        #[command(flatten)]
        spec: RunSpecArgs,
        /// One run's settings, e.g. 'particles=10,inertia=0.6' (repeatable).
        #[arg(long, required = true)]
        variant: Vec<String>,
    },
    /// List runs.
    List,
    /// One run: state, settings, best value and parameters.
    Show {
        /// The run's id.
        run: u64,
    },
    /// Print a run's best gait as yamorconfig XML (or its parameters).
    Best {
        /// The run's id.
        run: u64,
        /// Print the best parameters (name value per line) instead of XML.
        #[arg(long)]
        params: bool,
    },
    /// List optimizers and their settings.
    Optimizers,
    /// Stop a run; it keeps what it found.
    Stop {
        /// The run's id.
        run: u64,
    },
    /// Follow a run: progress and best so far; Ctrl-C stops watching, not the run.
    Watch {
        /// The run's id.
        run: u64,
    },
}

/// A run's one-line summary (`text::run_row`) on stdout.
pub fn print_run(r: &Run) {
    println!("{}", text::run_row(r));
}

#[derive(Subcommand)]
pub enum JobsCommand {
    /// List jobs, newest first.
    List {
        /// Only this run's jobs (0: every job).
        #[arg(long, default_value_t = 0)]
        run: u64,
        /// Jobs per page.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Only jobs older than this id (the next page).
        #[arg(long)]
        before: Option<u64>,
    },
    /// Follow job state changes as they happen.
    Watch {
        /// Only this run's jobs (0: the jobs named, or every job).
        #[arg(long, default_value_t = 0)]
        run: u64,
        /// Job ids to follow.
        job: Vec<u64>,
    },
}

/// Runs one `yamor jobs` command and prints the organizer's answer.
pub async fn jobs(client: ClientOpts, command: JobsCommand) -> Result<()> {
    let organizer = client.organizer()?;
    match command {
        JobsCommand::List { run, limit, before } => {
            let limit = limit.max(1);
            // One more than asked tells whether older jobs remain.
            let filter = JobFilter {
                run_id: (run > 0).then_some(run),
                before_id: Some(before.unwrap_or(u64::MAX)),
                limit: Some(limit + 1),
                ..JobFilter::default()
            };
            let mut jobs = organizer.list_jobs(&filter, true).await?;
            let more = jobs.len() > limit as usize;
            jobs.truncate(limit as usize);
            print!("{}", text::jobs(&jobs, client.format()));
            if let (true, Some(oldest)) = (more, jobs.last()) {
                eprintln!(
                    "{}",
                    text::older_jobs(run, oldest.id, limit, client.format())
                );
            }
        }
        JobsCommand::Watch { run, job } => {
            let mut stream = organizer.watch_jobs(run, job, true).await?;
            if !client.json {
                println!("{}", text::job_header());
            }
            while let Some(j) = stream.next().await {
                println!("{}", text::job_line(&j?, client.format()));
            }
        }
    }
    Ok(())
}
