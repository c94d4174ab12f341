//! `yamor run`: the whole cluster in one process. An organizer with its
//! SQLite file, one simulation host per core on loopback gRPC (the same code
//! path as a real cluster), one optimizer run; then the best gait, every
//! evaluation and a plot are written out.

use std::f64::consts::PI;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use plotters::prelude::*;
use prost::Message;
use yamor_firmware_sim::robots::ExampleRobot;
use yamor_host_agent::sim::SimBackend;
use yamor_host_agent::{Backend, HostService, Registration};
use yamor_organizer::{Organizer, SchedulerConfig};
use yamor_proto::transport::{ClientSecurity, ServerSecurity};
use yamor_proto::v1 as pb;

use crate::cluster::{RunSpecArgs, follow_run, plugins, print_run};

#[derive(Args)]
pub struct RunArgs {
    /// An embedded example robot.
    #[arg(default_value = "quadruped")]
    robot: String,
    #[command(flatten)]
    spec: RunSpecOverrides,
    /// Simulation hosts to start (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Output directory for best_gait.xml, evaluations.csv, progress.png and yamor.db.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// The run options of `optimize start`, minus the robot (given positionally).
#[derive(Args)]
pub struct RunSpecOverrides {
    #[arg(long, default_value = "pso")]
    optimizer: String,
    #[arg(
        long,
        help = "Optimization configuration (yamorconfig with <optimize> rules)"
    )]
    config: Option<PathBuf>,
    #[arg(long = "set", help = "Optimizer setting name=value (repeatable)")]
    settings: Vec<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Maximum evaluations; the default finishes in about a minute on two cores.
    #[arg(long, default_value_t = 480)]
    budget: u64,
    /// Maximum seconds (0: unlimited).
    #[arg(long, default_value_t = 0.0)]
    time: f64,
}

/// The optimization configuration shipped with `robot`, or a generic one:
/// every oscillating module's amplitude and offset, and every coupled pair's
/// phase lag, within the module's limit angles.
pub fn default_optimization(robot: &str) -> Result<String> {
    if robot == "quadruped" {
        return Ok(include_str!("../../examples/robots/quadruped/optimize.xml").to_owned());
    }
    let example = ExampleRobot::named(robot).with_context(|| {
        format!(
            "unknown robot {robot:?}; known: {}",
            ExampleRobot::names().join(", ")
        )
    })?;
    let gait = example.gait()?;
    let mut rules = String::new();
    for m in &gait.modules {
        if m.speed == 0.0 {
            continue;
        }
        let reach = m.max_angle.abs().min(m.min_angle.abs());
        let amplitude = m.amplitude.clamp(0.0, reach);
        rules += &format!(
            "  <optimize param=\"amplitude_{}\" min=\"0\" max=\"{}\"/>\n",
            m.id,
            reach.max(amplitude)
        );
        let offset = reach / 2.0;
        if m.offset.abs() <= offset {
            rules += &format!(
                "  <optimize param=\"offset_{}\" min=\"{}\" max=\"{}\"/>\n",
                m.id, -offset, offset
            );
        }
        for link in &m.cpg_links {
            if link.to > m.id && (-PI..=PI).contains(&link.phase) {
                rules += &format!(
                    "  <optimize param=\"phase_{}_{}\" min=\"{}\" max=\"{}\"/>\n",
                    m.id, link.to, -PI, PI
                );
            }
        }
    }
    let xml = gait.to_xml_string();
    let Some(at) = xml.rfind("</yamorconfig>") else {
        bail!("the gait of {robot} did not serialise as yamorconfig");
    };
    Ok(format!("{}{}{}", &xml[..at], rules, &xml[at..]))
}

pub async fn run(args: RunArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let hosts = args
        .hosts
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    let spec = RunSpecArgs {
        optimizer: args.spec.optimizer.clone(),
        robot: args.robot.clone(),
        config: args.spec.config.clone(),
        param: vec![],
        settings: args.spec.settings.clone(),
        seed: args.spec.seed,
        budget: args.spec.budget,
        time: args.spec.time,
        warmup: 8.0,
        measure: 12.0,
        name: None,
        on: None,
    };
    let request = spec.request()?;
    let db = args.out.join("yamor.db");
    let cluster = LocalCluster::start(&args.robot, hosts, &db).await?;
    let organizer = cluster.organizer.clone();
    let run = organizer
        .runs
        .start(request)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!(
        "run {} ({}) on {hosts} local simulation host(s); Ctrl-C stops and keeps what was found",
        run.id, run.optimizer
    );
    let run_id = run.id;
    let runs = organizer.runs.clone();
    let interrupt = tokio::spawn(async move {
        crate::net::shutdown_signal().await;
        eprintln!("\nstopping; keeping what was found");
        let _ = runs.stop(run_id);
    });
    let final_run = cluster.follow(run_id).await?;
    interrupt.abort();
    print_run(&final_run);
    write_outputs(&organizer, &final_run, &args.out)?;
    cluster.shutdown().await;
    Ok(())
}

/// An organizer with its SQLite file and `hosts` simulation hosts of
/// `robot`, all on loopback gRPC in this process: the same code paths as a
/// real cluster.
pub struct LocalCluster {
    pub organizer: Organizer,
    /// The organizer's gRPC address.
    pub url: String,
    stop: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<Result<(), yamor_proto::transport::TransportError>>,
}

impl LocalCluster {
    /// `hosts` simulation hosts of the embedded `robot`.
    pub async fn start(robot: &str, hosts: usize, db: &Path) -> Result<LocalCluster> {
        Self::start_with(hosts, db, |_| {
            Ok(Arc::new(SimBackend::example(robot, Default::default())?))
        })
        .await
    }

    /// `hosts` hosts with the backends `backend(index)` makes. Every host is
    /// admitted before this returns, then keeps itself registered.
    pub async fn start_with(
        hosts: usize,
        db: &Path,
        backend: impl Fn(usize) -> Result<Arc<dyn Backend>>,
    ) -> Result<LocalCluster> {
        let organizer = Organizer::open(
            db,
            SchedulerConfig::default(),
            ClientSecurity::default(),
            plugins(),
        )
        .with_context(|| format!("opening {}", db.display()))?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let organizer_url = format!("http://{}", listener.local_addr()?);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let server = tokio::spawn(yamor_organizer::serve(
            listener,
            organizer.clone(),
            ServerSecurity::default(),
            stopped(stop_rx.clone()),
        ));
        for index in 0..hosts {
            let backend = backend(index)?;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let address = format!("http://{}", listener.local_addr()?);
            let name = format!("local-{}", index + 1);
            let service = Arc::new(HostService::new(name.clone(), backend));
            tokio::spawn(yamor_host_agent::serve(
                listener,
                service,
                ServerSecurity::default(),
                stopped(stop_rx.clone()),
            ));
            organizer
                .scheduler
                .register_host(&name, &address)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let registration = Registration {
                organizer: organizer_url.clone(),
                security: ClientSecurity::default(),
                name,
                address,
            };
            tokio::spawn(yamor_host_agent::keep_registered(
                registration,
                stopped(stop_rx.clone()),
            ));
        }
        Ok(LocalCluster {
            organizer,
            url: organizer_url,
            stop,
            server,
        })
    }

    /// Starts a run and waits for its end, showing progress.
    pub async fn run_to_end(&self, request: pb::StartRunRequest) -> Result<pb::Run> {
        let run = self
            .organizer
            .runs
            .start(request)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        self.follow(run.id).await
    }

    /// Shows a run's progress until it ends; returns it once its results
    /// are on disk.
    pub async fn follow(&self, run_id: u64) -> Result<pb::Run> {
        let events = self
            .organizer
            .runs
            .watch(run_id)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let done = follow_run(tokio_stream::StreamExt::map(events, Ok)).await?;
        self.organizer.scheduler.store().sync().await?;
        Ok(done)
    }

    /// Waits for a run's end without showing progress.
    pub async fn follow_quietly(&self, run_id: u64) -> Result<pb::Run> {
        use tokio_stream::StreamExt as _;
        let mut events = self
            .organizer
            .runs
            .watch(run_id)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        while let Some(event) = events.next().await {
            if let Some(run) = event.run
                && run.state != pb::RunState::Running as i32
            {
                self.organizer.scheduler.store().sync().await?;
                return Ok(run);
            }
        }
        bail!("the events of run {run_id} ended before the run")
    }

    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.server).await;
    }
}

/// One evaluation of a run as its optimizer learnt it.
pub struct Evaluation {
    pub job: yamor_organizer::store::JobRow,
    /// The free parameters' names and values, in the run's order.
    pub names: Vec<String>,
    pub values: Vec<f64>,
    /// `None` when the evaluation failed for good.
    pub velocity: Option<f64>,
}

/// Every evaluation of `run_id` the optimizer was told of, in tell order.
pub fn evaluations(organizer: &Organizer, run_id: u64) -> Result<Vec<Evaluation>> {
    let mut jobs = organizer
        .scheduler
        .store()
        .jobs(&yamor_organizer::store::JobFilter {
            run_id: Some(run_id),
            ..Default::default()
        })?;
    jobs.retain(|j| j.tell_seq.is_some());
    jobs.sort_by_key(|j| j.tell_seq);
    jobs.into_iter()
        .map(|job| {
            let request = pb::JobRequest::decode(job.request.as_slice())?;
            let parameters = request.job.map(|j| j.parameters).unwrap_or_default();
            Ok(Evaluation {
                names: parameters.iter().map(|p| p.name.clone()).collect(),
                values: parameters.iter().map(|p| p.value).collect(),
                velocity: job.velocity,
                job,
            })
        })
        .collect()
}

/// best_gait.xml, evaluations.csv and progress.png.
fn write_outputs(organizer: &Organizer, run: &pb::Run, out: &Path) -> Result<()> {
    if !run.best_gait_xml.is_empty() {
        let path = out.join("best_gait.xml");
        std::fs::write(&path, &run.best_gait_xml)?;
        eprintln!(
            "best gait: {} ({:.2} cm/s)",
            path.display(),
            run.best_velocity_m_s.unwrap_or(0.0) * 100.0
        );
    }
    let finished = evaluations(organizer, run.id)?;
    let path = out.join("evaluations.csv");
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut best_curve = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for (index, e) in finished.iter().enumerate() {
        if index == 0 {
            writeln!(
                csv,
                "evaluation,job,host,attempts,velocity_m_s,best_m_s,{}",
                e.names.join(",")
            )?;
        }
        if let Some(v) = e.velocity {
            best = best.max(v);
        }
        if best.is_finite() {
            best_curve.push(((index + 1) as f64, best));
        }
        let values: Vec<String> = e.values.iter().map(f64::to_string).collect();
        writeln!(
            csv,
            "{},{},{},{},{},{},{}",
            index + 1,
            e.job.id,
            e.job.host,
            e.job.attempts,
            e.velocity.map_or(String::new(), |v| v.to_string()),
            if best.is_finite() {
                best.to_string()
            } else {
                String::new()
            },
            values.join(",")
        )?;
    }
    csv.flush()?;
    eprintln!("evaluations: {} ({} rows)", path.display(), finished.len());
    let path = out.join("progress.png");
    plot_progress(&path, &run.name, &best_curve)?;
    eprintln!("plot: {}", path.display());
    Ok(())
}

/// Plots must render on machines without system fonts, so one is embedded.
pub fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
        if plotters::style::register_font("sans-serif", FontStyle::Normal, font).is_err() {
            tracing::warn!("the embedded font could not be registered; plot labels may be missing");
        }
    });
}

/// Best velocity so far against evaluations.
pub fn plot_progress(path: &Path, title: &str, best: &[(f64, f64)]) -> Result<()> {
    register_font();
    let root = BitMapBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = best.last().map_or(1.0, |p| p.0).max(1.0);
    let top = best
        .iter()
        .map(|p| p.1 * 100.0)
        .fold(0.0f64, f64::max)
        .max(0.1)
        * 1.1;
    let bottom = best.iter().map(|p| p.1 * 100.0).fold(0.0f64, f64::min);
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title}: best velocity so far"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..n, bottom..top)?;
    chart
        .configure_mesh()
        .x_desc("evaluations")
        .y_desc("velocity (cm/s)")
        .draw()?;
    chart.draw_series(LineSeries::new(
        best.iter().map(|&(x, y)| (x, y * 100.0)),
        BLUE.stroke_width(2),
    ))?;
    root.present()?;
    Ok(())
}
