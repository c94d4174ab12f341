//! `yamor lifelong transform`: thesis 7.5.1 and Fig 7.4. The quadruped
//! walks with its learnt gait on a host of its own; the transformation
//! script shortens two legs and puts the removed knees on the ends of the
//! other two; the robot knows of the change (and sees its velocity drop),
//! builds a new CPG network from its new body (7.4), relearns with Powell's
//! regular-interval variant on every free host of a local cluster, loads the
//! best gait and walks on.
//!
//! Velocity is measured as in 7.3: over three CPG periods, judged by the
//! monitor of `yamor_lifelong::anomaly`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use plotters::prelude::*;
use yamor_core::network::{Limit, plan};
use yamor_core::{Connection, Connector, Morphology, OptimizationConfig, RobotConfig};
use yamor_firmware_sim::robots::ExampleRobot;
use yamor_host_agent::HostService;
use yamor_host_agent::sim::SimBackend;
use yamor_lifelong::anomaly::{Monitor, Verdict, three_periods};
use yamor_proto::transport::{AuthChannel, ClientSecurity, ServerSecurity};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;

use crate::run::{LocalCluster, evaluations, register_font};

#[derive(Args)]
pub struct TransformArgs {
    /// Robot seconds walked before the transformation.
    #[arg(long, default_value_t = 60.0)]
    before: f64,
    /// Wall-clock seconds allowed for relearning.
    #[arg(long, default_value_t = 110.0)]
    relearn_time: f64,
    /// Free parameters of the new network (the thesis used 7).
    #[arg(long, default_value_t = 7)]
    free: usize,
    /// Relearning optimizer: powell (regular-interval line search) or pso.
    #[arg(long, default_value = "powell")]
    optimizer: String,
    /// Simulation hosts for relearning (default: one per core).
    #[arg(long)]
    hosts: Option<usize>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// The best gait of the seven-parameter set found by
/// `yamor experiment gait-time` (seed 4, 19.74 cm/s): the thesis also
/// started from the best gait its quadruped had learnt.
fn learnt_gait() -> Result<RobotConfig> {
    let config = OptimizationConfig::from_xml_str(
        "optimize.xml",
        include_str!("../../examples/robots/quadruped/optimize.xml"),
    )?;
    Ok(config.apply(&[
        0.785,
        0.821_074_830_596_001_5,
        -0.998_538_081_701_504_8,
        3.042_280_326_499_1,
        1.706_121_590_795_657_5,
        1.947_651_829_881_214_9,
        3.122_035_648_520_475_4,
    ])?)
}

/// 7.5.1: knees 5 and 6 come off hips 0 and 1 and go on the ends of knees
/// 7 and 8.
fn transformation() -> Vec<Connection> {
    [(5, 7), (6, 8)]
        .into_iter()
        .map(|(moved, onto)| Connection {
            id_from: moved,
            conn_from: Connector::Front,
            id_to: onto,
            conn_to: Connector::Rear,
            angle_deg: 90,
        })
        .collect()
}

fn detach_script(moves: &[Connection]) -> String {
    let mut s = String::from("<script>\n");
    for c in moves {
        s += &format!("  <disconnect id=\"{}\"/>\n", c.id_from);
    }
    s + "</script>\n"
}

fn attach_script(moves: &[Connection]) -> String {
    let mut s = String::from("<script>\n");
    for c in moves {
        s += &format!(
            "  <connect idfrom=\"{}\" connfrom=\"{}\" idto=\"{}\" connto=\"{}\" angle=\"{}\"/>\n",
            c.id_from,
            c.conn_from.as_str(),
            c.id_to,
            c.conn_to.as_str(),
            c.angle_deg
        );
    }
    s + "</script>\n"
}

/// The morphology after `moves`, as the robot knows it (7.3: physical
/// changes are known directly).
fn transformed(morphology: &Morphology, moves: &[Connection]) -> Morphology {
    let mut m = morphology.clone();
    for c in moves {
        m.connections.retain(|k| !k.involves(c.id_from));
    }
    m.connections.extend_from_slice(moves);
    m
}

/// The robot walking on a host of its own, in virtual time.
struct Walker {
    client: HostAgentClient<AuthChannel>,
    /// Velocity measurements: (robot time at the end, m/s).
    samples: Vec<(f64, f64)>,
}

impl Walker {
    async fn measure(&mut self, seconds: f64) -> Result<f64> {
        let a = self
            .client
            .get_state(pb::GetStateRequest {})
            .await?
            .into_inner();
        let b = self
            .client
            .sleep(pb::SleepRequest {
                seconds,
                clock: pb::Clock::Virtual as i32,
            })
            .await?
            .into_inner();
        let (pa, pb_) = (
            a.position.unwrap_or_default(),
            b.position.unwrap_or_default(),
        );
        let v = (pb_.x - pa.x).hypot(pb_.y - pa.y) / (b.elapsed_s - a.elapsed_s).max(1e-9);
        self.samples.push((b.elapsed_s, v));
        Ok(v)
    }

    async fn elapsed(&mut self) -> Result<f64> {
        Ok(self
            .client
            .get_state(pb::GetStateRequest {})
            .await?
            .into_inner()
            .elapsed_s)
    }
}

pub async fn transform(args: TransformArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)?;
    let example = ExampleRobot::named("quadruped").expect("embedded");
    let morphology = example.morphology()?;
    let gait = learnt_gait()?;
    let period = three_periods(gait.modules.iter().map(|m| m.speed).fold(0.0, f64::max));

    // The robot itself: a host the organizer does not schedule on.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = format!("http://{}", listener.local_addr()?);
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let robot_host = tokio::spawn(yamor_host_agent::serve(
        listener,
        Arc::new(HostService::new(
            "robot",
            Arc::new(SimBackend::example("quadruped", Default::default())?),
        )),
        ServerSecurity::default(),
        async move {
            let mut rx = stop_rx;
            let _ = rx.wait_for(|s| *s).await;
        },
    ));
    let channel = yamor_proto::transport::channel(&address, &ClientSecurity::default())?;
    let mut walker = Walker {
        client: HostAgentClient::new(channel),
        samples: Vec::new(),
    };
    walker
        .client
        .open_simulation(pb::OpenSimulationRequest {
            robot: Some(pb::Robot {
                source: Some(pb::robot::Source::Example("quadruped".into())),
            }),
            seed: args.seed,
            ground_friction: 0.0,
        })
        .await?;
    walker
        .client
        .connect_robot(pb::ConnectRobotRequest {
            config_xml: gait.to_xml_string(),
        })
        .await?;
    let hosts = crate::experiment::default_hosts(args.hosts);
    let cluster = LocalCluster::start("quadruped", hosts, &args.out.join("yamor.db")).await?;
    let wall = Instant::now();

    // Walking: the monitor learns the normal velocity.
    let mut monitor = Monitor::new(0.02);
    let mut wall_marks: Vec<(f64, f64)> = Vec::new(); // (robot time, wall s)
    walker.measure(8.0).await?; // settle into the gait
    while walker.elapsed().await? < args.before {
        let v = walker.measure(period).await?;
        if let Verdict::Anomaly { .. } = monitor.observe(v) {
            monitor.reset();
        }
    }
    let before_v = monitor
        .expected()
        .context("no velocity before the change")?;
    let change_t = walker.elapsed().await?;
    wall_marks.push((change_t, wall.elapsed().as_secs_f64()));
    eprintln!(
        "walking at {:.2} cm/s; transforming at t = {change_t:.0} s",
        before_v * 100.0
    );

    // The transformation; the robot knows its body changed. The longer
    // legs reach below the floor, so the robot is lifted while the knees
    // go on, and falls onto its new legs.
    let moves = transformation();
    walker
        .client
        .run_script(pb::RunScriptRequest {
            script_xml: detach_script(&moves),
        })
        .await?;
    walker
        .client
        .drop_robot(pb::DropRobotRequest {
            height_m: 0.25,
            upside_down: false,
        })
        .await?;
    walker
        .client
        .run_script(pb::RunScriptRequest {
            script_xml: attach_script(&moves),
        })
        .await?;
    let changed_wall = Instant::now();
    let after_change = walker.measure(period).await?;
    let detect_verdict = monitor.observe(after_change);
    let detected_by_velocity = matches!(detect_verdict, Verdict::Anomaly { .. });
    let detect_robot_s = walker.elapsed().await? - change_t;
    eprintln!(
        "after the change: {:.2} cm/s ({}), detected {:.1} s (robot) after it",
        after_change * 100.0,
        if detected_by_velocity {
            "velocity anomaly"
        } else {
            "within threshold; the shape change is known directly"
        },
        detect_robot_s
    );

    // 7.4: a new network for the new body, relearnt on every free host.
    let body = transformed(&morphology, &moves);
    let relearn = plan(
        &body,
        &gait,
        &Limit::Symmetric {
            max: args.free,
            seed: args.seed,
        },
    )?;
    let free: Vec<String> = relearn
        .free_parameters()
        .into_iter()
        .map(|p| p.name)
        .collect();
    eprintln!(
        "new network: {} free parameters ({})",
        free.len(),
        free.join(", ")
    );
    let run = cluster
        .organizer
        .runs
        .start(pb::StartRunRequest {
            name: "relearn".into(),
            optimizer: args.optimizer.clone(),
            settings: if args.optimizer == "powell" {
                [("variant".to_owned(), "interval".to_owned())].into()
            } else {
                Default::default()
            },
            seed: args.seed,
            robot: Some(pb::Robot {
                source: Some(pb::robot::Source::MorphologyXml(body.to_xml_string())),
            }),
            problem: Some(pb::start_run_request::Problem::OptimizationXml(
                relearn.to_xml_string(),
            )),
            spec: Some(pb::EvaluationSpec {
                warmup_s: 4.0,
                measure_s: 8.0,
                ..Default::default()
            }),
            max_seconds: args.relearn_time,
            ..Default::default()
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let done = cluster.follow_quietly(run.id).await?;
    let relearn_wall = changed_wall.elapsed().as_secs_f64();
    let evals = evaluations(&cluster.organizer, run.id)?;
    let target = 0.9 * before_v;
    let mut best = f64::NEG_INFINITY;
    let mut reached: Option<f64> = None;
    let t0 = changed_wall_ms(&evals);
    let mut relearn_curve = Vec::new();
    for e in &evals {
        best = best.max(e.velocity.unwrap_or(f64::NEG_INFINITY));
        let t = (e.job.finished_ms - t0) as f64 / 1000.0;
        relearn_curve.push((t, best));
        if reached.is_none() && best >= target {
            reached = Some(t);
        }
    }
    if done.best_gait_xml.is_empty() {
        bail!("relearning found nothing: {}", done.error);
    }
    let new_gait = RobotConfig::from_xml_str("relearnt gait", &done.best_gait_xml)?;
    std::fs::write(args.out.join("relearnt_gait.xml"), new_gait.to_xml_string())?;

    // Walk on with the relearnt gait.
    walker
        .client
        .connect_robot(pb::ConnectRobotRequest {
            config_xml: new_gait.to_xml_string(),
        })
        .await?;
    let resume_t = walker.elapsed().await?;
    wall_marks.push((resume_t, wall.elapsed().as_secs_f64()));
    walker.measure(8.0).await?;
    let mut after = Vec::new();
    while walker.elapsed().await? < resume_t + 40.0 {
        after.push(walker.measure(period).await?);
    }
    let after_v = after.iter().sum::<f64>() / after.len().max(1) as f64;
    let _ = stop.send(true);
    cluster.shutdown().await;
    let _ = robot_host.await;

    write_csv(&args.out.join("lifelong.csv"), &walker.samples)?;
    plot(
        &args.out.join("fig7_4.png"),
        &walker.samples,
        change_t,
        resume_t,
        &relearn_curve,
        target,
    )?;
    println!(
        "before the change: {:.2} cm/s (learnt gait, 3-period monitor)",
        before_v * 100.0
    );
    println!(
        "right after: {:.2} cm/s; {} {:.1} s of robot time after the change",
        after_change * 100.0,
        if detected_by_velocity {
            "velocity anomaly"
        } else {
            "shape change known"
        },
        detect_robot_s
    );
    println!(
        "relearning: {} evaluations on {hosts} hosts, {relearn_wall:.0} s wall-clock, best {:.2} cm/s (target 90 % = {:.2} cm/s){}",
        evals.len(),
        done.best_velocity_m_s.unwrap_or(0.0) * 100.0,
        target * 100.0,
        reached.map_or(" not reached".into(), |t| format!(
            ", reached after {t:.0} s"
        ))
    );
    println!(
        "walking again at {:.2} cm/s ({:.0} % of before)",
        after_v * 100.0,
        after_v / before_v * 100.0
    );
    println!("wrote {}", args.out.join("fig7_4.png").display());
    Ok(())
}

/// When the relearning run submitted its first job (ms since the epoch).
fn changed_wall_ms(evals: &[crate::run::Evaluation]) -> i64 {
    evals.iter().map(|e| e.job.submitted_ms).min().unwrap_or(0)
}

fn write_csv(path: &Path, samples: &[(f64, f64)]) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(f, "robot_time_s,velocity_m_s")?;
    for (t, v) in samples {
        writeln!(f, "{t},{v}")?;
    }
    f.flush()?;
    Ok(())
}

fn plot(
    path: &Path,
    samples: &[(f64, f64)],
    change_t: f64,
    resume_t: f64,
    relearn: &[(f64, f64)],
    target: f64,
) -> Result<()> {
    register_font();
    let root = BitMapBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(620);
    let top = samples
        .iter()
        .map(|s| s.1)
        .chain(relearn.iter().map(|r| r.1))
        .fold(0.01, f64::max)
        * 110.0;
    let end = samples.last().map_or(1.0, |s| s.0);
    let mut walk = ChartBuilder::on(&left)
        .caption("the robot walking (robot time)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..end, 0.0..top)?;
    walk.configure_mesh()
        .x_desc("robot time (s)")
        .y_desc("velocity (cm/s)")
        .draw()?;
    walk.draw_series(LineSeries::new(
        samples.iter().map(|(t, v)| (*t, v * 100.0)),
        BLUE.stroke_width(2),
    ))?;
    for (t, colour) in [(change_t, RED), (resume_t, GREEN)] {
        walk.draw_series(LineSeries::new(
            [(t, 0.0), (t, top)],
            colour.stroke_width(1),
        ))?;
    }
    walk.draw_series(LineSeries::new(
        [(0.0, target * 100.0), (end, target * 100.0)],
        BLACK.mix(0.4),
    ))?;
    let last = relearn.last().map_or(1.0, |r| r.0).max(1.0);
    let mut learn = ChartBuilder::on(&right)
        .caption("relearning (wall-clock)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..last, 0.0..top)?;
    learn
        .configure_mesh()
        .x_desc("seconds since the change")
        .y_desc("best so far (cm/s)")
        .draw()?;
    learn.draw_series(LineSeries::new(
        relearn
            .iter()
            .filter(|r| r.1.is_finite())
            .map(|(t, v)| (*t, v * 100.0)),
        RED.stroke_width(2),
    ))?;
    learn.draw_series(LineSeries::new(
        [(0.0, target * 100.0), (last, target * 100.0)],
        BLACK.mix(0.4),
    ))?;
    root.present().context("writing the plot")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transformed_quadruped_has_legs_of_one_and_three_modules() {
        let morphology = ExampleRobot::named("quadruped")
            .unwrap()
            .morphology()
            .unwrap();
        let body = transformed(&morphology, &transformation());
        let text = body.to_xml_string();
        let reparsed = Morphology::from_xml_str("transformed", &text).unwrap();
        assert!(reparsed.unreachable_modules().is_empty());
        let (component, edges) = yamor_core::network::cpg_graph(&reparsed);
        assert_eq!(component.len(), 9);
        assert!(edges.contains(&(7, 5)) && edges.contains(&(8, 6)));
        assert!(!edges.contains(&(0, 5)) && !edges.contains(&(1, 6)));
        let relearn = plan(
            &reparsed,
            &learnt_gait().unwrap(),
            &Limit::Symmetric { max: 7, seed: 1 },
        )
        .unwrap();
        assert_eq!(relearn.free_parameters().len(), 7);
        assert!(detach_script(&transformation()).contains("<disconnect id=\"5\"/>"));
        assert!(attach_script(&transformation()).contains("idfrom=\"6\""));
    }
}
