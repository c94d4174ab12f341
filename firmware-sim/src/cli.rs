//! The simulator from the command line: `yamor sim` (walk a robot from the
//! held-out starts of `yamor_core::starts`, or from one seed, print its 6.2.1
//! velocity, write the trajectory), `yamor bridge` (the Webots bridge of 5.4
//! over TCP) and `yamor robots`. Built with the `clap` feature.

use std::future::Future;
use std::path::PathBuf;

use clap::Args;
use yamor_core::evaluation::{EvaluationSpec, Walk};
use yamor_core::starts::{self, MAX_HELD_OUT, Spread};
use yamor_core::world::WorldDistribution;
use yamor_core::{Morphology, RobotConfig};

use crate::EMULATED_HARDWARE;
use crate::robots::{EXAMPLES, LoadError};
use crate::{SimError, SimSettings, evaluate, evaluate_starts, write_trajectory_csv};

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

/// A line on stdout. A reader that went away (`yamor sim | head -1`) ends
/// the command quietly, as Unix tools do, rather than in a panic.
macro_rules! say {
    ($($line:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($line)*) {
            return if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(io("writing to stdout")(e))
            };
        }
    }};
}

#[derive(Args)]
pub struct RobotArgs {
    /// An embedded example (`yamor robots` lists them), a morphology XML file, or a directory holding world.xml and gait.xml.
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
    /// Seed of the oscillators' initial phases (default 0). `yamor sim` given a seed walks that one start only, as a recorded job did.
    #[arg(long)]
    seed: Option<u64>,
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
            seed: self.seed.unwrap_or(0),
            engine: self.engine,
            substeps: self.substeps.map(usize::from),
            hardware: yamor_core::world::Hardware::default(),
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
    /// Length of the walk in seconds; the velocity is measured from the end of the warm-up to the end.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Seconds walked before the measurement starts (the thesis' 8).
    #[arg(long, default_value_t = yamor_core::evaluation::DEFAULT_WARMUP_S)]
    warmup: f64,
    /// Walk from the first N held-out starts and print their mean ± standard error; not with --seed.
    #[arg(long, default_value_t = 20, conflicts_with = "seed",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_HELD_OUT)))]
    starts: u32,
    /// Write the trajectory of the central module (of the first start) to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Walk in N held-out worlds drawn from the robust world distribution (both engines, friction, masses, servo torque, speed, lag and play, camera noise; docs/worlds.md), world k from held-out starts k, k+1, … (--starts of them; with --starts 1, the walks of a `--worlds robust` run's held-out re-walk), reported per engine with the 10th percentile over worlds.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_HELD_OUT)))]
    worlds: Option<u32>,
    /// Walk in the one world the robust distribution draws from this seed (as a run recorded it), instead of the nominal world.
    #[arg(long, conflicts_with = "worlds")]
    world_seed: Option<u64>,
    /// Walk on the emulated real robot's hardware (`yamor emulate`'s defaults: lagging, weak servos with play) instead of the model's ideal servos: thesis 6.3's gap, in the simulator.
    #[arg(long, conflicts_with_all = ["worlds", "world_seed"])]
    as_emulated: bool,
}

/// The emulated real robot's hardware: how it differs from the model the
/// simulator walks, the way a YaMoR does (thesis 6.3: its servos lag).
/// The defaults are a stand-in for the thesis' robot, argued in
/// docs/worlds.md; `--servo-lag-ms 0 --backlash-deg 0 --torque-scale 1
/// --torque-sags false` is the simulator's ideal servo.
#[derive(Args, Debug, Clone, Copy)]
pub struct HardwareArgs {
    /// How late the servos act on a new set-point (ms): a 50 Hz pulse is up to 20 ms old, and the servo's own loop adds about as much.
    #[arg(long, default_value_t = EMULATED_HARDWARE.servo_lag_s * 1e3)]
    servo_lag_ms: f64,
    /// Play of the servos' gearboxes (degrees).
    #[arg(long, default_value_t = EMULATED_HARDWARE.backlash_rad.to_degrees())]
    backlash_deg: f64,
    /// The servos' stall torque, as a share of the data sheet's (a battery under load).
    #[arg(long, default_value_t = EMULATED_HARDWARE.torque_scale)]
    torque_scale: f64,
    /// The servos' torque sags with their speed, as a DC motor's does.
    #[arg(long, default_value_t = EMULATED_HARDWARE.torque_sags, action = clap::ArgAction::Set)]
    torque_sags: bool,
}

impl HardwareArgs {
    #[must_use]
    pub fn hardware(&self) -> yamor_core::world::Hardware {
        yamor_core::world::Hardware {
            servo_lag_s: self.servo_lag_ms / 1e3,
            backlash_rad: self.backlash_deg.to_radians(),
            torque_scale: self.torque_scale,
            torque_sags: self.torque_sags,
            ..yamor_core::world::Hardware::default()
        }
    }
}

#[derive(Args)]
pub struct BridgeArgs {
    #[command(flatten)]
    robot: RobotArgs,
    /// Address to listen on (the thesis' bridge used port 2223).
    #[arg(long, default_value = "127.0.0.1:2223")]
    listen: String,
}

/// Walks a robot from the first `--starts` held-out starts, or from
/// `--seed` alone, prints its velocity and, with `--csv`, writes the (first)
/// trajectory.
pub fn walk(args: WalkArgs) -> Result<(), CliError> {
    let (morphology, gait) = args.robot.load()?;
    let settings = args.robot.settings();
    let mut spec = EvaluationSpec {
        seed: settings.seed,
        sample_interval: 0.01,
        full_trajectory: args.csv.is_some(),
        ..EvaluationSpec::lasting_after(args.warmup, args.seconds).map_err(CliError::Spec)?
    };
    if let Some(worlds) = args.worlds {
        return walk_worlds(&morphology, &gait, settings, &spec, worlds, args.starts);
    }
    if args.as_emulated {
        spec.world.hardware = EMULATED_HARDWARE;
    }
    if let Some(seed) = args.world_seed {
        spec.walk_in(WorldDistribution::robust().draw(seed));
        say!(
            "world {seed}: {}",
            spec.world.describe(spec.ground_friction)
        );
    }
    // Where the trajectory went, for the last line; nothing is written
    // unless asked.
    let write_csv = |evaluation: &Walk| -> Result<Option<String>, CliError> {
        let Some(path) = &args.csv else {
            return Ok(None);
        };
        let shown = path.display().to_string();
        let file = std::fs::File::create(path).map_err(io(format!("creating {shown}")))?;
        write_trajectory_csv(&evaluation.samples, std::io::BufWriter::new(file))
            .map_err(io(format!("writing {shown}")))?;
        Ok(Some(shown))
    };
    if args.robot.seed.is_some() {
        let evaluation = evaluate(&morphology, &gait, settings, &spec)?;
        let written = write_csv(&evaluation)?
            .map(|path| format!("; trajectory in {path}"))
            .unwrap_or_default();
        say!(
            "velocity {:.4} m/s ({:.2} cm/s): {:.3} m from t={:.1}s to t={:.1}s, turning {:+.1}°/s",
            evaluation.velocity,
            evaluation.velocity * 100.0,
            evaluation.distance,
            evaluation.start.t,
            evaluation.end.t,
            evaluation.turn_deg_s
        );
        say!(
            "{} physics steps in {:.3} s wall: {:.0}x real time{written}",
            evaluation.physics_steps,
            evaluation.wall.as_secs_f64(),
            evaluation.real_time_factor(),
        );
        return Ok(());
    }
    let seeds: Vec<u64> = starts::held_out_seeds(args.starts).collect();
    let started = std::time::Instant::now();
    let walks = evaluate_starts(&morphology, &gait, settings, &spec, &seeds)?;
    let wall = started.elapsed().as_secs_f64();
    let written = write_csv(&walks[0])?
        .map(|path| format!("; trajectory of start {} in {path}", seeds[0]))
        .unwrap_or_default();
    for (seed, evaluation) in seeds.iter().zip(&walks) {
        say!(
            "start {seed}: {:.2} cm/s, turning {:+.1}°/s",
            evaluation.velocity * 100.0,
            evaluation.turn_deg_s
        );
    }
    let spread = spread_of(&walks)?;
    // How straight: a fast gait that circles is not what a user asked for.
    let turns: Vec<f64> = walks.iter().map(|w| w.turn_deg_s.abs()).collect();
    say!(
        "velocity {} over held-out starts; turning {:.1}°/s on average (at most {:.1})",
        spread.cm_s(),
        turns.iter().sum::<f64>() / turns.len() as f64,
        turns.iter().copied().fold(0.0, f64::max)
    );
    // The figure of a `--direction axis` run: a crab gait shows here.
    let along: Option<Vec<f64>> = walks
        .iter()
        .map(|w| yamor_core::evaluation::Direction::Axis.velocity(w))
        .collect();
    if let Some(spread) = along.as_deref().and_then(Spread::of) {
        say!("along the long axis {} (either end first)", spread.cm_s());
    }
    // Robot seconds over wall seconds of the whole batch, walks side by side
    // counted together: what a user waiting for the figure gets.
    let simulated: f64 = walks.iter().map(|w| w.simulated).sum();
    say!(
        "{} physics steps in {wall:.3} s wall: {:.0}x real time{written}",
        walks.iter().map(|w| w.physics_steps).sum::<u64>(),
        simulated / wall.max(1e-9),
    );
    Ok(())
}

/// The walks' velocities summarised. A walk that ends nowhere (NaN) has no
/// velocity to summarise.
fn spread_of(walks: &[Walk]) -> Result<Spread, SimError> {
    let velocities: Vec<f64> = walks.iter().map(|w| w.velocity).collect();
    Spread::of(&velocities).ok_or(SimError::OutOfRange {
        name: "velocity",
        value: f64::NAN,
        expected: "finite on every start",
    })
}

/// Walks the gait from `starts` held-out starts in each of `worlds`
/// held-out worlds of the robust distribution and reports, per engine and
/// over all, the spread of the worlds' means (each world's mean over its
/// starts): the mean ± standard error over worlds and their 10th
/// percentile, the figure a gait that must survive another world is
/// judged by.
fn walk_worlds(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    worlds: u32,
    starts: u32,
) -> Result<(), CliError> {
    let distribution = WorldDistribution::robust();
    let started = std::time::Instant::now();
    let mut means: Vec<(String, f64)> = Vec::new();
    let mut simulated = 0.0;
    for (k, world_seed) in starts::held_out_seeds(worlds).enumerate() {
        // World k from held-out starts k, k + 1, …: with one start each,
        // exactly the walks of a run's held-out re-walk in held-out worlds.
        let seeds: Vec<u64> =
            starts::held_out_seeds((k as u32).saturating_add(starts).min(MAX_HELD_OUT))
                .skip(k)
                .collect();
        let mut spec = spec.clone();
        spec.walk_in(distribution.draw(world_seed));
        let walks = evaluate_starts(morphology, gait, settings, &spec, &seeds)?;
        simulated += walks.iter().map(|w| w.simulated).sum::<f64>();
        let spread = spread_of(&walks)?;
        say!(
            "world {world_seed}: {} — {}",
            spread.cm_s(),
            spec.world.describe(spec.ground_friction)
        );
        means.push((walks[0].engine.clone(), spread.mean));
    }
    let mut engines: Vec<&str> = means.iter().map(|(e, _)| e.as_str()).collect();
    engines.sort_unstable();
    engines.dedup();
    for engine in engines {
        let of: Vec<f64> = means
            .iter()
            .filter(|(e, _)| e == engine)
            .map(|(_, v)| *v)
            .collect();
        match Spread::of(&of) {
            Some(spread) => say!("{engine}: {}", spread.cm_s_over("world")),
            None => say!("{engine}: one world, {:.2} cm/s", of[0] * 100.0),
        }
    }
    let all: Vec<f64> = means.iter().map(|(_, v)| *v).collect();
    if let Some(spread) = Spread::of(&all) {
        say!(
            "all worlds: {}; p10 over worlds is {:.0} % of the mean",
            spread.cm_s_over("world"),
            100.0 * spread.p10 / spread.mean
        );
    }
    let wall = started.elapsed().as_secs_f64();
    say!(
        "{} walks in {wall:.1} s wall: {:.0}x real time",
        all.len() * starts as usize,
        simulated / wall.max(1e-9)
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
        say!(
            "{:<10} {} modules, central {}",
            example.name,
            morphology.modules.len(),
            morphology.central
        );
    }
    Ok(())
}
