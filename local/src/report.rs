//! Reading a finished run back: its evaluations in the order its optimizer
//! learnt them, and the files `yamor run` leaves behind (and where).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use yamor_core::world::Worlds;
use yamor_organizer::Organizer;
use yamor_organizer::model::Run;

use crate::LocalError;

/// One evaluation of a run as its optimizer learnt it.
pub struct Evaluation {
    pub job: yamor_organizer::model::Job,
    /// The free parameters' names and values, in the run's order.
    pub names: Vec<String>,
    pub values: Vec<f64>,
    /// `None` when the evaluation failed for good.
    pub velocity: Option<f64>,
}

/// Every evaluation of `run_id` the optimizer was told of, in tell order
/// (results recorded after it stopped were never told).
pub fn evaluations(organizer: &Organizer, run_id: u64) -> Result<Vec<Evaluation>, LocalError> {
    let told = organizer.scheduler.store().told_jobs(run_id)?;
    // A walk's velocity as the run counted it (along the axis, when the
    // run asked for that).
    let direction = organizer
        .scheduler
        .store()
        .run(run_id)?
        .map(|row| row.spec.direction)
        .unwrap_or_default();
    let jobs = match organizer.runs.get(run_id) {
        Ok(run) => run.learnt(told),
        Err(_) => told,
    };
    Ok(jobs
        .into_iter()
        .map(|job| {
            let parameters = &job.request.job.parameters;
            Evaluation {
                names: parameters.iter().map(|(name, _)| name.clone()).collect(),
                values: parameters.iter().map(|(_, value)| *value).collect(),
                velocity: job
                    .ranked(direction)
                    .map(|(v, _)| v)
                    .filter(|v| v.is_finite()),
                job,
            }
        })
        .collect())
}

/// How a local run's walks were made: what `yamor sim` needs to walk its
/// gait again the same way.
#[derive(Debug, Clone, Copy)]
pub struct Walks<'a> {
    /// The robot as `yamor run` was given it.
    pub robot: &'a str,
    pub warmup: f64,
    pub measure: f64,
    /// The worlds the run walked in.
    pub worlds: yamor_core::world::Worlds,
    /// Which way its velocities count.
    pub direction: yamor_core::evaluation::Direction,
}

impl Walks<'_> {
    /// Which way the run's figures count, and where `yamor sim` prints the
    /// same figure.
    fn direction_said(&self) -> String {
        use yamor_core::evaluation::Direction;
        match self.direction {
            Direction::Any => "velocities count the distance covered in any direction (--direction any; --direction axis counts only what is along the robot's long axis)".to_owned(),
            Direction::Axis => "velocities count only what is along the robot's long axis, either end first (--direction axis, or the robot's optimize.xml declaring it; --direction any counts every direction): yamor sim prints it as \"along the long axis\"".to_owned(),
        }
    }

    /// The `yamor sim` command that walks `gait` as the run did, from the
    /// run's first `starts` held-out starts.
    fn command(&self, gait: &Path, starts: usize) -> String {
        let families = yamor_families::builtin();
        // A user's own robot is a YaMoR robot (the first family).
        let family = families
            .of_example(self.robot)
            .or_else(|| families.iter().next())
            .expect("the built-in families are never empty");
        let gait = gait.display().to_string();
        match self.worlds {
            Worlds::Single => {
                family.walk_command(self.robot, &gait, starts, self.warmup, self.measure)
            }
            // Held-out start k in held-out world k, as the re-walk paired
            // them (a world's engine overrides the command's).
            Worlds::Robust | Worlds::Paired | Worlds::PairedSlowest => format!(
                "{} --worlds {starts}",
                family.walk_command(self.robot, &gait, 1, self.warmup, self.measure)
            ),
        }
    }
}

/// A run's failed evaluations (held-out re-walks included).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Failures {
    pub count: usize,
    /// The first one's error, as its host gave it.
    pub first: Option<String>,
}

/// How many of run `run`'s evaluations failed, and why the first did: what
/// a user must see before trusting the rest.
pub async fn failures(organizer: &Organizer, run: u64) -> Result<Failures, LocalError> {
    use yamor_organizer::model::{JobFilter, JobState};
    let filter = JobFilter {
        run_id: Some(run),
        states: vec![JobState::Failed],
        ..JobFilter::default()
    };
    let failed = organizer
        .scheduler
        .store()
        .read_async(move |s| s.jobs(&filter))
        .await?;
    Ok(Failures {
        count: failed.len(),
        first: failed.first().map(|j| j.error.clone()),
    })
}

/// best_gait.xml, evaluations.csv and progress.png in `out`; says how
/// `yamor sim` re-walks the gait.
pub fn write_outputs(
    organizer: &Organizer,
    run: &Run,
    out: &Path,
    walks: Walks<'_>,
) -> Result<(), LocalError> {
    if !run.best_gait_xml.is_empty() {
        let path = out.join("best_gait.xml");
        std::fs::write(&path, with_provenance(&run.best_gait_xml, run, &walks))
            .map_err(LocalError::writing(&path))?;
        let figure = match run.held_out {
            Some(spread) => format!("{} over held-out starts", spread.cm_s()),
            None => format!(
                "{:.2} cm/s, one walk: provisional, not re-walked from held-out starts",
                run.best_velocity.unwrap_or(0.0) * 100.0
            ),
        };
        eprintln!("best gait: {} ({figure})", path.display());
        eprintln!("{}", walks.direction_said());
        if let Some(reference) = run.reference {
            eprintln!(
                "the gait as given walks {} over the same starts",
                reference.cm_s()
            );
        }
        if walks.worlds != Worlds::Single {
            let held_out = organizer.scheduler.store().held_out_jobs(run.id)?;
            for (engine, spread) in
                yamor_organizer::runs::held_out_by_engine(&held_out, &run.best_parameters)
            {
                eprintln!("  on {engine}: {} in held-out worlds", spread.cm_s());
            }
        }
        if let Some(spread) = run.held_out {
            eprintln!("re-walk it: {}", walks.command(&path, spread.n));
        }
    }
    let finished = evaluations(organizer, run.id)?;
    let path = out.join("evaluations.csv");
    let best_curve = write_csv(&path, &finished).map_err(LocalError::writing(&path))?;
    eprintln!("evaluations: {} ({} rows)", path.display(), finished.len());
    let (walk_seconds, stopped) = robot_time(&finished);
    eprintln!(
        "robot time: {walk_seconds:.0} walk-seconds over {} evaluations ({stopped} stopped early), held-out re-walks aside",
        finished.len()
    );
    let path = out.join("progress.png");
    plot_progress(&path, &run.name, &best_curve)?;
    eprintln!("plot: {}", path.display());
    Ok(())
}

/// map.json in `out` for a run that keeps a map of gaits, and its summary.
pub async fn write_map(organizer: &Organizer, run: &Run, out: &Path) -> Result<(), LocalError> {
    let Some(map) = organizer.runs.map(run.id).await? else {
        return Ok(());
    };
    let path = out.join("map.json");
    let text = serde_json::to_string_pretty(&map.to_json(run.id)).unwrap_or_default();
    std::fs::write(&path, text).map_err(LocalError::writing(&path))?;
    let re_walked: Vec<f64> = map
        .cells
        .iter()
        .filter_map(|c| c.held_out.map(|s| s.mean))
        .collect();
    eprintln!(
        "map: {} of {} cells ({:.1} %), QD score {:.3} m/s over {} results; {} elites re-walked from held-out starts: {}",
        map.cells.len(),
        map.grid.cells(),
        100.0 * map.coverage(),
        map.qd_score(),
        map.results,
        re_walked.len(),
        path.display()
    );
    Ok(())
}

/// The gait with a comment saying where its figure comes from, so the file
/// alone says how to reproduce it.
fn with_provenance(gait_xml: &str, run: &Run, walks: &Walks<'_>) -> String {
    let figure = match run.held_out {
        Some(spread) => format!(
            "{} over held-out starts {}.. (yamor_core::starts::HELD_OUT_FIRST_SEED onwards), counted {}",
            spread.cm_s(),
            yamor_core::starts::HELD_OUT_FIRST_SEED,
            walks.direction.phrase()
        ),
        None => format!(
            "{:.2} cm/s from one walk (provisional: not re-walked from held-out starts)",
            run.best_velocity.unwrap_or(0.0) * 100.0
        ),
    };
    let settings = yamor_sim::SimSettings::default();
    let comment = format!(
        "<!-- yamor run {} ({}, seed {}, optimizer settings: {}): {figure}; engine {}, step {} s, warm-up {} s, measured {} s; yamor run printed the yamor sim command that walks it again (XML comments cannot hold its double dashes) -->\n",
        run.id,
        run.optimizer,
        run.seed,
        run.settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        settings.engine,
        settings.dt,
        walks.warmup,
        walks.measure,
    );
    match gait_xml.split_once('\n') {
        Some((declaration, rest)) if declaration.starts_with("<?xml") => {
            format!("{declaration}\n{comment}{rest}")
        }
        _ => format!("{comment}{gait_xml}"),
    }
}

/// The robot seconds the evaluations walked, and how many were stopped
/// early: what a run costs on a real robot, where a walk is its length in
/// a person's time.
fn robot_time(finished: &[Evaluation]) -> (f64, usize) {
    let walks = finished.iter().filter_map(|e| e.job.walk());
    walks.fold((0.0, 0), |(seconds, stopped), o| {
        (
            seconds + o.simulated,
            stopped + usize::from(o.stopped_early.is_some()),
        )
    })
}

/// Writes one row per evaluation; returns the best-so-far curve. Each row
/// names the start its walk began from (`yamor sim --seed S` walks it
/// again) and how fast it turned.
fn write_csv(path: &Path, finished: &[Evaluation]) -> std::io::Result<Vec<(f64, f64)>> {
    let mut csv = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut best_curve = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for (index, e) in finished.iter().enumerate() {
        if index == 0 {
            writeln!(
                csv,
                "evaluation,job,host,attempts,start_seed,velocity_m_s,turn_deg_s,walk_s,stopped_early_at,best_m_s,{}",
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
            "{},{},{},{},{},{},{},{},{},{},{}",
            index + 1,
            e.job.id,
            e.job.host,
            e.job.attempts,
            e.job.request.job.spec.seed,
            e.velocity.map_or(String::new(), |v| v.to_string()),
            e.job
                .walk()
                .map_or(String::new(), |w| w.turn_deg_s.to_string()),
            e.job
                .walk()
                .map_or(String::new(), |w| w.simulated.to_string()),
            e.job
                .walk()
                .and_then(|w| w.stopped_early)
                .map_or(String::new(), |k| k.to_string()),
            if best.is_finite() {
                best.to_string()
            } else {
                String::new()
            },
            values.join(",")
        )?;
    }
    csv.flush()?;
    Ok(best_curve)
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
pub fn plot_progress(path: &Path, title: &str, best: &[(f64, f64)]) -> Result<(), LocalError> {
    draw_progress(path, title, best).map_err(|e| LocalError::Plot {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

fn draw_progress<'a>(
    path: &'a Path,
    title: &str,
    best: &[(f64, f64)],
) -> Result<(), Box<dyn std::error::Error + 'a>> {
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

/// Where runs go when no directory is given: never the current directory,
/// which is often a checkout.
pub(crate) fn runs_home() -> PathBuf {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = env("YAMOR_RUNS") {
        return dir.into();
    }
    if let Some(data) = env("XDG_DATA_HOME") {
        return PathBuf::from(data).join("yamor/runs");
    }
    match env("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/yamor/runs"),
        None => PathBuf::from("yamor-runs"),
    }
}

/// A fresh directory for a run of `robot`, named after it and the time
/// (UTC), under `$YAMOR_RUNS`, else `~/.local/share/yamor/runs`; not created.
pub fn new_run_dir(robot: &str) -> Result<PathBuf, LocalError> {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .map_err(LocalError::Time)?;
    let label: String = Path::new(robot)
        .file_stem()
        .map_or_else(|| "robot".into(), |s| s.to_string_lossy().into_owned())
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let base = runs_home().join(format!("{label}-{stamp}"));
    let mut dir = base.clone();
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = PathBuf::from(format!("{}-{n}", base.display()));
    }
    Ok(dir)
}
