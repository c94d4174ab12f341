//! The real robot from the command line: `yamor host --serial <port>`'s
//! tracker and `yamor emulate`, an emulated robot behind a pseudo-terminal (and an
//! emulated CamApp) to try the real-robot path without hardware.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use yamor_camera::PositionSource;
use yamor_host_agent::serial::{SerialBackend, SerialSettings};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::{EmulatedRobot, EmulationSettings};
use yamor_sim::{SimSettings, Simulation};

/// The real robot's tracker (thesis C.1 settings window).
#[derive(Args, Clone)]
pub struct TrackerOpts {
    /// The CamApp LED tracker, host:port; without it the robot can be
    /// driven but not measured.
    #[arg(long)]
    pub camapp: Option<String>,
    /// Camera model (from `yamor camera calibrate`); default: the thesis'
    /// camera 2.7 m above the floor.
    #[arg(long)]
    pub camera: Option<std::path::PathBuf>,
}

/// The real-robot backend on `settings`' port, measured by the tracker.
pub fn serial_backend(settings: SerialSettings, tracker: &TrackerOpts) -> Result<SerialBackend> {
    let position: Option<Arc<dyn PositionSource>> = match &tracker.camapp {
        None => None,
        Some(address) => Some(yamor_camera::cli::position_source(
            address,
            tracker.camera.as_deref(),
        )?),
    };
    Ok(SerialBackend::new(settings, position)?)
}

#[derive(Args)]
pub struct EmulateArgs {
    /// An embedded example robot.
    #[arg(default_value = "quadruped")]
    robot: String,
    #[command(flatten)]
    settings: EmulationSettings,
    #[command(flatten)]
    hardware: yamor_sim::cli::HardwareArgs,
    /// Also serve an emulated CamApp on this address.
    #[arg(long)]
    camapp: Option<std::net::SocketAddr>,
    /// Pixel noise (standard deviation) of the emulated camera.
    #[arg(long, default_value_t = 0.5)]
    camera_noise: f64,
}

pub fn emulate(args: EmulateArgs) -> Result<()> {
    let example = ExampleRobot::named(&args.robot).with_context(|| {
        format!(
            "unknown robot {:?}; known: {}",
            args.robot,
            ExampleRobot::names().join(", ")
        )
    })?;
    let settings = SimSettings {
        seed: args.settings.seed,
        hardware: args.hardware.hardware(),
        ..SimSettings::default()
    };
    // Values no servo could have are refused here, naming the flag's field.
    let sim = Simulation::new(&example.morphology()?, settings)?;
    let robot = EmulatedRobot::spawn(sim, args.settings)?;
    println!("emulated {} on {}", args.robot, robot.path());
    let _camera = args
        .camapp
        .map(|address| {
            let (noise, seed) = (args.camera_noise, args.settings.seed);
            let leds = yamor_families::emulated::leds(&robot);
            yamor_camera::cli::emulate_for(address, leds, noise, seed)
        })
        .transpose()?;
    let camapp = args.camapp.map(|a| format!(" --camapp {a}"));
    println!(
        "try: yamor host --serial {} --time-scale {}{}",
        robot.path(),
        args.settings.time_scale,
        camapp.unwrap_or_default()
    );
    let (stop_tx, stop) = std::sync::mpsc::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(crate::net::shutdown_signal());
        let _ = stop_tx.send(());
    });
    // Print the robot's state whenever it changes, until Ctrl-C.
    let mut last = String::new();
    while stop.recv_timeout(Duration::from_millis(500)).is_err() {
        let line = robot.observe().to_string();
        if line != last {
            eprintln!("{line}");
            last = line;
        }
    }
    Ok(())
}
