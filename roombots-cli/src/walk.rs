//! `yamor roombots walk` and `bridge`: a Roombot robot's gait from
//! held-out starts, and a simulated meta-module served to a supervisor.

use anyhow::Result;
use clap::Args;
use yamor_roombots::chain::ConnectionType;
use yamor_roombots::picture::floor_around;

#[derive(Args)]
pub struct WalkArgs {
    /// An embedded Roombot robot (roombots-meta, roombots-quadruped).
    robot: String,
    /// The gait (yamorconfig XML, one oscillator per joint); the robot's
    /// own when not given.
    #[arg(long)]
    gait: Option<std::path::PathBuf>,
    /// Held-out starts to walk from (yamor_core::starts).
    #[arg(long, default_value_t = 20)]
    starts: u32,
    /// Length of each walk (s), warm-up included.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Warm-up before the measured window (s).
    #[arg(long, default_value_t = 8.0)]
    warmup: f64,
    /// Draw the first start's walk every quarter of its length into this
    /// PNG, side by side.
    #[arg(long)]
    picture: Option<std::path::PathBuf>,
}

#[derive(Args)]
pub struct BridgeArgs {
    /// Address to listen on (the YaMoR bridge's port plus one).
    #[arg(long, default_value = "127.0.0.1:2224")]
    listen: String,
    /// How the meta-module's two modules are joined.
    #[arg(long, default_value = "parallel")]
    connection: ConnectionType,
}

pub fn walk(args: &WalkArgs) -> Result<()> {
    use anyhow::Context;
    use yamor_core::evaluation::EvaluationSpec;
    use yamor_core::starts::{Spread, held_out_seeds};
    use yamor_roombots::gait::RoombotExample;
    let example = RoombotExample::named(&args.robot).with_context(|| {
        format!(
            "unknown Roombot robot {:?}; known: {}",
            args.robot,
            RoombotExample::names().join(", ")
        )
    })?;
    let robot = example.robot()?;
    let gait = match &args.gait {
        Some(path) => yamor_core::RobotConfig::from_file(path)?,
        None => example.gait()?,
    };
    anyhow::ensure!(args.starts >= 1, "--starts must be at least 1");
    let spec = EvaluationSpec::lasting_after(args.warmup, args.seconds)
        .context("--seconds must exceed --warmup")?;
    let never = std::sync::atomic::AtomicBool::new(false);
    let mut velocities = Vec::new();
    let mut moments = Vec::new();
    for (k, seed) in held_out_seeds(args.starts).enumerate() {
        let every = args.seconds / 4.0;
        let mut next = 0.0;
        let mut on_step = |t: f64, sim: &yamor_roombots::physics::Robot| {
            if k == 0 && args.picture.is_some() && t + 1e-9 >= next {
                moments.push(sim.module_poses());
                next += every;
            }
        };
        let walked = yamor_roombots::gait::walk_observed(
            &robot,
            &gait,
            &EvaluationSpec {
                seed,
                ..spec.clone()
            },
            &never,
            &mut on_step,
        )?;
        println!(
            "start {seed}: {:.2} cm/s, turning {:+.1}°/s",
            walked.velocity * 100.0,
            walked.turn_deg_s
        );
        velocities.push(walked.velocity);
    }
    let spread = Spread::of(&velocities).context("a walk ended nowhere (not finite)")?;
    println!("velocity {} over held-out starts", spread.cm_s());
    if let Some(path) = &args.picture {
        yamor_roombots::picture::draw(path, &moments, floor_around(&moments))?;
        println!("picture: {}", path.display());
    }
    Ok(())
}

/// Serves the meta-module until `until_stopped` resolves.
pub async fn bridge(
    args: BridgeArgs,
    until_stopped: impl std::future::Future<Output = ()>,
) -> Result<()> {
    use anyhow::Context;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    if let Ok(address) = listener.local_addr() {
        println!(
            "a {} meta-module served on {address}: one command per line",
            args.connection
        );
    }
    yamor_roombots::supervisor_server::serve(listener, args.connection, until_stopped)
        .await
        .context("serving the Roombot bridge")?;
    Ok(())
}
