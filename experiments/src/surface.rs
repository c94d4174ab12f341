//! `yamor experiment surface`: thesis Figs 6.3 and 6.5–6.7. The quadruped's
//! velocity over the outer offsets × the inner-to-outer phase lag (the other
//! five Table 6.1 parameters held at the reference gait), measured on a
//! regular grid by the brute-force plugin, then classic Powell paths from the
//! thesis' three starting points drawn on it.

use std::f64::consts::TAU;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use plotters::prelude::*;
use yamor_core::optimize::ParamName;
use yamor_sim::robots::ExampleRobot;

use crate::quadruped_run;
use yamor_local::{LocalCluster, evaluations};

#[derive(Args)]
pub struct SurfaceArgs {
    /// Grid points per axis (the thesis used 64: 4096 walks).
    #[arg(long, default_value_t = 64)]
    resolution: u32,
    /// Evaluations per Powell path (0: no paths).
    #[arg(long, default_value_t = 150)]
    powell_budget: u64,
    /// Simulation hosts (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    /// Directory for the figures and their CSV.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// The two free parameters: the inner→outer lag on every leg and the outer
/// offsets, starting at (`phase`, `offset`).
fn surface_config(phase: f64, offset: f64) -> Result<String> {
    let mut gait = ExampleRobot::named("quadruped").expect("embedded").gait()?;
    for (inner, outer) in [(0, 5), (1, 6), (2, 7), (3, 8)] {
        ParamName::Phase(inner, outer).set(&mut gait, phase);
        ParamName::Offset(outer).set(&mut gait, offset);
    }
    let rules = format!(
        r#"  <optimize param="phase_0_5" min="0" max="{TAU}"/>
  <optimize param="offset_5" min="-1.5" max="1.5"/>
  <optimize param="phase_1_6" expr="phase_0_5()"/>
  <optimize param="phase_2_7" expr="phase_0_5()"/>
  <optimize param="phase_3_8" expr="phase_0_5()"/>
  <optimize param="offset_6" expr="offset_5()"/>
  <optimize param="offset_7" expr="offset_5()"/>
  <optimize param="offset_8" expr="offset_5()"/>
"#
    );
    let xml = gait.to_xml_string();
    let at = xml.rfind("</yamorconfig>").expect("root closes");
    Ok(format!("{}{rules}{}", &xml[..at], &xml[at..]))
}

/// (phase, offset, velocity) of every evaluation of `run`, in tell order.
fn points(cluster: &LocalCluster, run: u64) -> Result<Vec<(f64, f64, f64)>> {
    Ok(evaluations(&cluster.organizer, run)?
        .into_iter()
        .filter_map(|e| match e.values[..] {
            [phase, offset] => Some((phase, offset, e.velocity.unwrap_or(0.0))),
            _ => None,
        })
        .collect())
}

pub async fn surface(args: SurfaceArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)?;
    let hosts = yamor_local::default_hosts(args.hosts);
    let cluster = LocalCluster::start("quadruped", hosts, &args.out.join("yamor.db")).await?;
    let n = args.resolution.max(2);
    eprintln!("surface: {n}x{n} walks on {hosts} host(s)");
    let grid = cluster
        .run_to_end(quadruped_run(
            "brute-force",
            &[("resolution", n.to_string()), ("dimensions", "2".into())],
            surface_config(std::f64::consts::FRAC_PI_2, -0.7)?,
            0,
            1,
        ))
        .await?;
    let cells = points(&cluster, grid.id)?;
    let mut csv = std::io::BufWriter::new(std::fs::File::create(args.out.join("surface.csv"))?);
    writeln!(csv, "phase_inner_outer,offset_outer,velocity_m_s")?;
    for (p, o, v) in &cells {
        writeln!(csv, "{p},{o},{v}")?;
    }
    csv.flush()?;
    let mut paths = Vec::new();
    if args.powell_budget > 0 {
        // The thesis' starting points of Figs 6.5, 6.6 and 6.7.
        for (phase, offset) in [(0.0, -0.5), (2.0, -1.5), (2.0, 0.5)] {
            eprintln!("Powell from ({phase}, {offset})");
            let run = cluster
                .run_to_end(quadruped_run(
                    "powell",
                    &[("variant", "classic".into())],
                    surface_config(phase, offset)?,
                    args.powell_budget,
                    1,
                ))
                .await?;
            paths.push((
                (phase, offset),
                points(&cluster, run.id)?,
                run.best_velocity,
            ));
        }
    }
    plot(&args.out.join("surface.png"), n, &cells, &paths)?;
    let best = cells.iter().map(|c| c.2).fold(f64::NEG_INFINITY, f64::max);
    println!(
        "surface: {} walks, best {:.2} cm/s",
        cells.len(),
        best * 100.0
    );
    for ((p, o), path, best) in &paths {
        println!(
            "Powell from ({p}, {o}): {} evaluations, best {:.2} cm/s",
            path.len(),
            best.unwrap_or(0.0) * 100.0
        );
    }
    println!("wrote {}", args.out.join("surface.png").display());
    cluster.shutdown().await;
    Ok(())
}

type Path2 = ((f64, f64), Vec<(f64, f64, f64)>, Option<f64>);

fn plot(path: &std::path::Path, n: u32, cells: &[(f64, f64, f64)], paths: &[Path2]) -> Result<()> {
    yamor_local::register_font();
    let root = BitMapBackend::new(path, (900, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "quadruped velocity: inner-outer phase lag x outer offset",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..TAU, -1.5..1.5)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("phase lag inner-outer (rad)")
        .y_desc("offset outer (rad)")
        .draw()?;
    let (lo, hi) = cells
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), c| {
            (l.min(c.2), h.max(c.2))
        });
    let (dx, dy) = (TAU / f64::from(n - 1), 3.0 / f64::from(n - 1));
    chart.draw_series(cells.iter().map(|&(p, o, v)| {
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
        // Dark blue (slow) to red (fast), as in the thesis' figure.
        let colour = HSLColor(0.66 * (1.0 - t), 0.9, 0.25 + 0.3 * t);
        Rectangle::new(
            [(p - dx / 2.0, o - dy / 2.0), (p + dx / 2.0, o + dy / 2.0)],
            colour.filled(),
        )
    }))?;
    for (index, (_, all, _)) in paths.iter().enumerate() {
        let colour = [WHITE, BLACK, MAGENTA][index % 3];
        // The path is the sequence of points that improved on the best so
        // far; line-search probes around it are not drawn.
        let mut best = f64::NEG_INFINITY;
        let points: Vec<&(f64, f64, f64)> = all
            .iter()
            .filter(|p| {
                let better = p.2 > best;
                best = best.max(p.2);
                better
            })
            .collect();
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.1)),
                colour.stroke_width(2),
            ))?
            .label(format!("Powell path {}", index + 1))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(
            points
                .first()
                .map(|p| Circle::new((p.0, p.1), 5, colour.filled())),
        )?;
    }
    if !paths.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .draw()?;
    }
    root.present().context("writing the surface plot")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use yamor_core::optimize::OptimizationConfig;

    #[test]
    fn the_surface_has_two_free_parameters_tied_across_the_legs() {
        let config =
            OptimizationConfig::from_xml_str("surface", &surface_config(2.0, -0.5).unwrap())
                .unwrap();
        let free = config.free_parameters();
        let names: Vec<&str> = free.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["phase_0_5", "offset_5"]);
        assert_eq!((free[0].start, free[1].start), (2.0, -0.5));
        let robot = config.apply(&[1.0, 0.25]).unwrap();
        for (inner, outer) in [(0, 5), (1, 6), (2, 7), (3, 8)] {
            assert_eq!(ParamName::Phase(inner, outer).get(&robot), Some(1.0));
            assert_eq!(ParamName::Offset(outer).get(&robot), Some(0.25));
        }
        // The five other Table 6.1 parameters keep the reference gait.
        assert_eq!(ParamName::Amplitude(0).get(&robot), Some(0.7));
        assert_eq!(ParamName::Amplitude(5).get(&robot), Some(0.6));
    }
}
