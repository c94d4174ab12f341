//! The simulator from the command line: `yamor sim` (walk a robot, print
//! its 6.2.1 velocity, write the trajectory), `yamor bridge` (the Webots
//! bridge of 5.4 over TCP) and `yamor robots`. Built with the `clap`
//! feature.

use std::future::Future;
use std::path::PathBuf;

use clap::Args;
use yamor_core::evaluation::EvaluationSpec;
use yamor_core::{Morphology, RobotConfig};

use crate::robots::{EXAMPLES, LoadError};
use crate::{SimError, SimSettings, evaluate, write_trajectory_csv};

/// Why a simulator command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Xml(#[from] yamor_core::XmlError),
    #[error("--seconds: {0}")]
    Spec(yamor_core::evaluation::SpecError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CliError {
    let what = what.into();
    move |source| CliError::Io { what, source }
}

#[derive(Args)]
pub struct RobotArgs {
    /// An embedded example (quadruped, snake, trebuchet, dog, wheel), a morphology XML file, or a directory holding world.xml and gait.xml.
    #[arg(default_value = "quadruped")]
    robot: String,
    /// Gait (yamorconfig XML); defaults to the example's gait or `gait.xml` beside the morphology file.
    #[arg(long)]
    gait: Option<PathBuf>,
    /// Physics step and firmware tick in seconds.
    #[arg(long, default_value_t = crate::sim::DEFAULT_DT)]
    dt: f64,
    /// Ground friction coefficient.
    #[arg(long, default_value_t = 0.8)]
    friction: f64,
    /// Seed of the oscillators' initial phases.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Physics engine.
    #[arg(long, default_value_t)]
    engine: crate::physics::Engine,
    /// Solver substeps per tick (default: the engine's own, rapier 4, articulated 2).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    substeps: Option<u16>,
}

impl RobotArgs {
    #[must_use]
    pub fn settings(&self) -> SimSettings {
        SimSettings {
            dt: self.dt,
            ground_friction: self.friction,
            seed: self.seed,
            engine: self.engine,
            substeps: self.substeps.map(usize::from),
        }
    }

    pub fn load(&self) -> Result<(Morphology, RobotConfig), LoadError> {
        crate::robots::load(&self.robot, self.gait.as_deref())
    }
}

#[derive(Args)]
pub struct WalkArgs {
    #[command(flatten)]
    robot: RobotArgs,
    /// Length of the walk in seconds; the velocity is measured from 8 s to the end.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Where to write the trajectory of the central module.
    #[arg(long, default_value = "trajectory.csv")]
    csv: PathBuf,
}

#[derive(Args)]
pub struct BridgeArgs {
    #[command(flatten)]
    robot: RobotArgs,
    /// Address to listen on (the thesis' bridge used port 2223).
    #[arg(long, default_value = "127.0.0.1:2223")]
    listen: String,
}

/// Walks a robot, prints its velocity and writes its trajectory as CSV.
pub fn walk(args: WalkArgs) -> Result<(), CliError> {
    let (morphology, gait) = args.robot.load()?;
    let settings = args.robot.settings();
    let spec = EvaluationSpec {
        seed: settings.seed,
        sample_interval: 0.01,
        full_trajectory: true,
        ..EvaluationSpec::lasting(args.seconds).map_err(CliError::Spec)?
    };
    let evaluation = evaluate(&morphology, &gait, settings, &spec)?;
    let csv = args.csv.display();
    let file = std::fs::File::create(&args.csv).map_err(io(format!("creating {csv}")))?;
    write_trajectory_csv(&evaluation.samples, std::io::BufWriter::new(file))
        .map_err(io(format!("writing {csv}")))?;
    println!(
        "velocity {:.4} m/s ({:.2} cm/s): {:.3} m from t={:.1}s to t={:.1}s",
        evaluation.velocity,
        evaluation.velocity * 100.0,
        evaluation.distance,
        evaluation.start.t,
        evaluation.end.t
    );
    println!(
        "{} physics steps in {:.3} s wall: {:.0}x real time; trajectory in {csv}",
        evaluation.physics_steps,
        evaluation.wall.as_secs_f64(),
        evaluation.real_time_factor(),
    );
    Ok(())
}

/// Serves the robot as a Webots bridge until `shutdown`.
pub async fn bridge(args: BridgeArgs, shutdown: impl Future<Output = ()>) -> Result<(), CliError> {
    let (morphology, _) = args.robot.load()?;
    let settings = args.robot.settings();
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(io(format!("binding {}", args.listen)))?;
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "bridge listening");
    }
    crate::bridge::serve(listener, morphology, settings, shutdown).await?;
    Ok(())
}

/// Lists the embedded example robots.
pub fn robots() -> Result<(), CliError> {
    for example in EXAMPLES {
        let morphology = example.morphology()?;
        println!(
            "{:<10} {} modules, central {}",
            example.name,
            morphology.modules.len(),
            morphology.central
        );
    }
    Ok(())
}
