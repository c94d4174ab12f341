//! Powell on the seven-parameter set of Table 6.1.
//!
//! - `yamor experiment timeline` (Fig 6.8): every evaluation's parameters and
//!   velocity, with the evaluations that move along a new (diagonal)
//!   direction marked, as the thesis' red arrow does.
//! - `yamor experiment compare` (Fig 6.12): classic Powell against the
//!   regular-interval line search (6.2.5) from ten random starting points,
//!   best velocity so far against evaluations, and a better/equal/worse table
//!   beside the thesis' own.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use plotters::prelude::*;
use rand::{Rng, SeedableRng};
use yamor_core::optimize::OptimizationConfig;

use crate::{best_so_far, quadruped_run};
use yamor_local::default_hosts;
use yamor_local::{Evaluation, LocalCluster, default_optimization, evaluations, register_font};

#[derive(Args)]
pub struct TimelineArgs {
    /// Evaluations (the thesis' Figs 6.8 and 6.9 show about 450).
    #[arg(long, default_value_t = 450)]
    budget: u64,
    /// Powell variant: classic, stadium, clamp or interval.
    #[arg(long, default_value = "classic")]
    variant: String,
    /// Seed of the oscillators and of the starting points.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulation hosts (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Directory for the figure and its CSV.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Starting points, drawn uniformly inside the bounds (the thesis used ten).
    #[arg(long, default_value_t = 10)]
    starts: usize,
    /// Evaluations per run.
    #[arg(long, default_value_t = 300)]
    budget: u64,
    /// Seeds the starting points; run i of both methods uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Relative difference of the final bests below which two runs count as
    /// equal.
    #[arg(long, default_value_t = 0.05)]
    equal_within: f64,
    /// Simulation hosts (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Directory for the figure and its CSV.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// The shipped Table 6.1 configuration.
fn seven_parameters() -> Result<OptimizationConfig> {
    Ok(OptimizationConfig::from_xml_str(
        "quadruped optimize.xml",
        &default_optimization("quadruped")?,
    )?)
}

/// The same configuration starting at `start` (one value per free parameter).
fn starting_at(config: &OptimizationConfig, start: &[f64]) -> Result<String> {
    let robot = config.apply(start)?;
    Ok(OptimizationConfig::new(robot, config.rules().to_vec())?.to_xml_string())
}

/// Indices of evaluations that differ from the best point so far in two or
/// more parameters. Axis line searches probe from the current (best) point
/// along one parameter; anything else is Powell trying or using a combined
/// direction.
fn diagonal_moves(evaluations: &[Evaluation]) -> Vec<usize> {
    let mut best: Option<(f64, &[f64])> = None;
    let mut out = Vec::new();
    for (index, e) in evaluations.iter().enumerate() {
        if let Some((_, at)) = best {
            let moved = e
                .values
                .iter()
                .zip(at)
                .filter(|(a, b)| (*a - *b).abs() > 1e-9)
                .count();
            if moved >= 2 {
                out.push(index);
            }
        }
        if let Some(v) = e.velocity
            && best.is_none_or(|(b, _)| v > b)
        {
            best = Some((v, &e.values));
        }
    }
    out
}

pub async fn timeline(args: TimelineArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)?;
    let hosts = default_hosts(args.hosts);
    let cluster = LocalCluster::start("quadruped", hosts, &args.out.join("yamor.db")).await?;
    let run = cluster
        .run_to_end(quadruped_run(
            "powell",
            &[("variant", args.variant.clone())],
            default_optimization("quadruped")?,
            args.budget,
            args.seed,
        ))
        .await?;
    let all = evaluations(&cluster.organizer, run.id)?;
    cluster.shutdown().await;
    let Some(first) = all.first() else {
        bail!("the run made no evaluation: {}", run.error);
    };
    let mut csv = std::io::BufWriter::new(std::fs::File::create(args.out.join("timeline.csv"))?);
    writeln!(csv, "evaluation,velocity_m_s,{}", first.names.join(","))?;
    for (i, e) in all.iter().enumerate() {
        let values: Vec<String> = e.values.iter().map(f64::to_string).collect();
        let v = e.velocity.map_or(String::new(), |v| v.to_string());
        writeln!(csv, "{},{v},{}", i + 1, values.join(","))?;
    }
    csv.flush()?;
    let diagonal = diagonal_moves(&all);
    let png = args.out.join("timeline.png");
    plot_timeline(&png, &args.variant, &all, &diagonal)?;
    println!(
        "timeline: Powell {} on 7 parameters, {} evaluations, best {:.2} cm/s, {} evaluations off the axes",
        args.variant,
        all.len(),
        run.best_velocity.unwrap_or(0.0) * 100.0,
        diagonal.len()
    );
    println!("wrote {} and timeline.csv", png.display());
    Ok(())
}

fn plot_timeline(path: &Path, variant: &str, all: &[Evaluation], diagonal: &[usize]) -> Result<()> {
    register_font();
    let root = BitMapBackend::new(path, (1000, 760)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, lower) = root.split_vertically(420);
    let n = all.len() as f64;
    let mut params = ChartBuilder::on(&upper)
        .caption(
            format!("Powell ({variant}) on the seven parameters of Table 6.1"),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n + 1.0, -3.3..3.3)?;
    params.configure_mesh().y_desc("parameter (rad)").draw()?;
    for (k, name) in all[0].names.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        params
            .draw_series(LineSeries::new(
                all.iter()
                    .enumerate()
                    .map(|(i, e)| ((i + 1) as f64, e.values[k])),
                colour.stroke_width(1),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
    }
    // Red ticks along the top: evaluations off the coordinate axes.
    params.draw_series(diagonal.iter().map(|&i| {
        PathElement::new(
            vec![((i + 1) as f64, 2.9), ((i + 1) as f64, 3.3)],
            RED.stroke_width(2),
        )
    }))?;
    params
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    let velocities: Vec<f64> = all
        .iter()
        .map(|e| e.velocity.unwrap_or(0.0) * 100.0)
        .collect();
    let top = velocities.iter().copied().fold(1.0, f64::max) * 1.1;
    let bottom = velocities.iter().copied().fold(0.0, f64::min);
    let mut speed = ChartBuilder::on(&lower)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n + 1.0, bottom..top)?;
    speed
        .configure_mesh()
        .x_desc("evaluation")
        .y_desc("velocity (cm/s)")
        .draw()?;
    speed.draw_series(LineSeries::new(
        velocities
            .iter()
            .enumerate()
            .map(|(i, v)| ((i + 1) as f64, *v)),
        BLUE.stroke_width(1),
    ))?;
    let best = best_so_far(all.iter().map(|e| e.velocity));
    speed.draw_series(LineSeries::new(
        best.iter()
            .enumerate()
            .filter(|(_, b)| b.is_finite())
            .map(|(i, b)| ((i + 1) as f64, b * 100.0)),
        BLACK.stroke_width(2),
    ))?;
    root.present().context("writing the timeline plot")?;
    Ok(())
}

/// One start of Fig 6.12: best so far after each evaluation, per method.
struct Pair {
    label: char,
    start: Vec<f64>,
    classic: Vec<f64>,
    interval: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Better,
    Equal,
    Worse,
}

/// How the interval method's final best compares with the classic one's.
fn verdict(classic: f64, interval: f64, equal_within: f64) -> Verdict {
    let scale = classic.abs().max(interval.abs()).max(1e-9);
    if (interval - classic).abs() <= equal_within * scale {
        Verdict::Equal
    } else if interval > classic {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

pub async fn compare(args: CompareArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)?;
    let hosts = default_hosts(args.hosts);
    let config = seven_parameters()?;
    let free = config.free_parameters();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
    let starts: Vec<Vec<f64>> = (0..args.starts)
        .map(|_| {
            free.iter()
                .map(|p| rng.random_range(p.min..=p.max))
                .collect()
        })
        .collect();
    let cluster = LocalCluster::start("quadruped", hosts, &args.out.join("yamor.db")).await?;
    // Every run is started at once: the scheduler shares the hosts among
    // them, so the slow serial classic runs overlap with each other.
    let mut runs = Vec::new();
    for (i, start) in starts.iter().enumerate() {
        let xml = starting_at(&config, start)?;
        for variant in ["classic", "interval"] {
            let mut request = quadruped_run(
                "powell",
                &[("variant", variant.into())],
                xml.clone(),
                args.budget,
                args.seed + i as u64,
            );
            request.name = format!("{}-{variant}", label(i));
            let run = cluster.organizer.runs.start(request).await?;
            runs.push(run.id);
        }
    }
    eprintln!(
        "compare: {} runs of up to {} evaluations on {hosts} host(s)",
        runs.len(),
        args.budget
    );
    let mut pairs = Vec::new();
    for (i, start) in starts.into_iter().enumerate() {
        let classic = cluster.follow(runs[2 * i]).await?;
        let interval = cluster.follow(runs[2 * i + 1]).await?;
        let curve = |id| -> Result<Vec<f64>> {
            Ok(best_so_far(
                evaluations(&cluster.organizer, id)?
                    .iter()
                    .map(|e| e.velocity),
            ))
        };
        if !classic.error.is_empty() || !interval.error.is_empty() {
            bail!("start {}: {} {}", label(i), classic.error, interval.error);
        }
        pairs.push(Pair {
            label: label(i),
            start,
            classic: curve(classic.id)?,
            interval: curve(interval.id)?,
        });
    }
    cluster.shutdown().await;

    let mut csv = std::io::BufWriter::new(std::fs::File::create(args.out.join("compare.csv"))?);
    writeln!(csv, "start,method,evaluation,best_m_s")?;
    for p in &pairs {
        for (method, curve) in [("classic", &p.classic), ("interval", &p.interval)] {
            for (i, b) in curve.iter().enumerate() {
                writeln!(csv, "{},{method},{},{b}", p.label, i + 1)?;
            }
        }
    }
    csv.flush()?;
    let png = args.out.join("compare.png");
    plot_compare(&png, &pairs, args.budget)?;
    print_table(&pairs, &free, args.equal_within);
    println!("wrote {} and compare.csv", png.display());
    Ok(())
}

fn label(i: usize) -> char {
    char::from(b'a' + (i % 26) as u8)
}

fn last(curve: &[f64]) -> f64 {
    curve
        .last()
        .copied()
        .filter(|b| b.is_finite())
        .unwrap_or(0.0)
}

/// Markdown: one row per start, then the counts beside the thesis'.
fn print_table(pairs: &[Pair], free: &[yamor_core::optimize::FreeParameter], equal_within: f64) {
    let names: Vec<&str> = free.iter().map(|p| p.name.as_str()).collect();
    println!("\nstart ({})", names.join(", "));
    println!(
        "| start | classic best (cm/s) | evals | interval best (cm/s) | evals | interval is |"
    );
    println!("|---|---|---|---|---|---|");
    let mut counts = [0usize; 3];
    for p in pairs {
        let (c, i) = (last(&p.classic), last(&p.interval));
        let v = verdict(c, i, equal_within);
        counts[v as usize] += 1;
        println!(
            "| {} | {:.2} | {} | {:.2} | {} | {} |",
            p.label,
            c * 100.0,
            p.classic.len(),
            i * 100.0,
            p.interval.len(),
            match v {
                Verdict::Better => "better",
                Verdict::Equal => "equal",
                Verdict::Worse => "worse",
            }
        );
    }
    for p in pairs {
        let s: Vec<String> = p.start.iter().map(|v| format!("{v:.2}")).collect();
        println!("start {}: ({})", p.label, s.join(", "));
    }
    println!(
        "\n| | better | equal | worse |\n|---|---|---|---|\n| thesis (Fig 6.12) | 4 (a, b, e, f) | 3 (c, h, i) | 2 (d, j) |\n| yamor (within {:.0}% is equal) | {} | {} | {} |",
        equal_within * 100.0,
        counts[0],
        counts[1],
        counts[2]
    );
}

fn plot_compare(path: &Path, pairs: &[Pair], budget: u64) -> Result<()> {
    register_font();
    let root = BitMapBackend::new(path, (1500, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        "best velocity so far: classic Powell (blue) vs regular-interval line search (red)",
        ("sans-serif", 20),
    )?;
    let columns = pairs.len().div_ceil(2).max(1);
    let panels = body.split_evenly((2, columns));
    let top = pairs
        .iter()
        .flat_map(|p| [last(&p.classic), last(&p.interval)])
        .fold(0.01, f64::max)
        * 110.0;
    for (p, panel) in pairs.iter().zip(panels.iter()) {
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{}", p.label), ("sans-serif", 16))
            .margin(6)
            .x_label_area_size(24)
            .y_label_area_size(36)
            .build_cartesian_2d(0.0..budget as f64, 0.0..top)?;
        chart
            .configure_mesh()
            .x_labels(4)
            .y_labels(5)
            .disable_x_mesh()
            .draw()?;
        for (curve, colour) in [(&p.classic, BLUE), (&p.interval, RED)] {
            chart.draw_series(LineSeries::new(
                curve
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.is_finite())
                    .map(|(i, b)| ((i + 1) as f64, b * 100.0)),
                colour.stroke_width(2),
            ))?;
        }
    }
    root.present().context("writing the comparison plot")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluation(values: &[f64], velocity: f64) -> Evaluation {
        Evaluation {
            job: yamor_organizer::model::Job {
                id: 0,
                run_id: 0,
                owner: String::new(),
                seq: 0,
                tell_seq: None,
                state: yamor_organizer::model::JobState::Done,
                request: Default::default(),
                attempts: 1,
                host: String::new(),
                outcome: Some(yamor_core::evaluation::Outcome::Walk(
                    yamor_core::evaluation::Walk {
                        velocity,
                        ..Default::default()
                    },
                )),
                error: String::new(),
                submitted_ms: 0,
                started_ms: 0,
                finished_ms: 0,
            },
            names: vec![],
            values: values.to_vec(),
            velocity: Some(velocity),
        }
    }

    #[test]
    fn only_moves_off_the_axes_of_the_best_point_count_as_diagonal() {
        let all = [
            evaluation(&[0.0, 0.0, 0.0], 1.0),
            // An axis probe that does not improve, then one that does.
            evaluation(&[0.5, 0.0, 0.0], 0.5),
            evaluation(&[-0.5, 0.0, 0.0], 2.0),
            // The next axis search starts at the new best: one change from it,
            // although two from the previous evaluation.
            evaluation(&[-0.5, 0.3, 0.0], 1.5),
            // Extrapolation along the combined direction.
            evaluation(&[-1.0, 0.6, 0.0], 1.0),
        ];
        assert_eq!(diagonal_moves(&all), [4]);
    }

    #[test]
    fn verdicts_use_a_relative_band() {
        assert_eq!(verdict(0.10, 0.104, 0.05), Verdict::Equal);
        assert_eq!(verdict(0.10, 0.12, 0.05), Verdict::Better);
        assert_eq!(verdict(0.10, 0.08, 0.05), Verdict::Worse);
        assert_eq!(verdict(0.0, 0.0, 0.05), Verdict::Equal);
    }

    #[test]
    fn a_start_becomes_the_configurations_starting_point() {
        let config = seven_parameters().unwrap();
        let free = config.free_parameters();
        assert_eq!(free.len(), 7, "Table 6.1 has seven free parameters");
        let start: Vec<f64> = free.iter().map(|p| 0.3 * p.min + 0.7 * p.max).collect();
        let moved =
            OptimizationConfig::from_xml_str("start", &starting_at(&config, &start).unwrap())
                .unwrap();
        let got: Vec<f64> = moved.free_parameters().iter().map(|p| p.start).collect();
        for (a, b) in got.iter().zip(&start) {
            assert!((a - b).abs() < 1e-12, "{got:?} vs {start:?}");
        }
        // The tied parameters follow their expressions at the new start.
        let names: Vec<String> = moved
            .free_parameters()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(
            names,
            free.iter().map(|p| p.name.clone()).collect::<Vec<_>>()
        );
    }
}
