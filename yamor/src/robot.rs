//! The real robot from the command line: `yamor host --serial <port>` options
//! and `yamor emulate`, an emulated robot behind a pseudo-terminal (and an
//! emulated CamApp) to try the real-robot path without hardware.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use yamor_camera::PositionSource;
use yamor_host_agent::serial::{SerialBackend, SerialSettings};
use yamor_sim::robots::ExampleRobot;
use yamor_sim::serial_robot::{EmulatedRobot, EmulationSettings};
use yamor_sim::{SimSettings, Simulation};

/// The real robot's line and tracker (thesis C.1 settings window).
#[derive(Args, Clone)]
pub struct SerialOpts {
    /// Drive the real robot on this serial port (e.g. /dev/ttyUSB0, COM3).
    #[arg(long, conflicts_with_all = ["sim", "expr"])]
    pub serial: Option<String>,
    #[arg(long, default_value_t = 115_200)]
    pub baud: u32,
    /// Seconds to wait for a module's reply before sending again.
    #[arg(long, default_value_t = 3.0)]
    pub reply_timeout: f64,
    /// Seconds to wait for a Bluetooth connection's acknowledgement (5.5.4).
    #[arg(long, default_value_t = 10.0)]
    pub join_timeout: f64,
    /// Least seconds between one reply and the next message.
    #[arg(long, default_value_t = 0.0)]
    pub message_gap: f64,
    /// Attempts after the first before a message is given up.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// Robot seconds per wall second: only for an emulated robot run faster.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// The module the dongle talks to (default: the first Bluetooth link's).
    #[arg(long)]
    pub master: Option<u32>,
    /// The CamApp LED tracker, host:port; without it the robot can be
    /// driven but not measured.
    #[arg(long)]
    pub camapp: Option<String>,
    /// Camera model (from `yamor camera calibrate`); default: the thesis'
    /// camera 2.7 m above the floor.
    #[arg(long)]
    pub camera: Option<std::path::PathBuf>,
}

impl SerialOpts {
    /// The backend for `--serial`, if given.
    pub fn backend(&self) -> Result<Option<SerialBackend>> {
        let Some(port) = &self.serial else {
            return Ok(None);
        };
        let settings = SerialSettings {
            baud: self.baud,
            reply_timeout: self.reply_timeout,
            join_timeout: self.join_timeout,
            message_gap: self.message_gap,
            retries: self.retries,
            time_scale: self.time_scale,
            master: self.master,
            ..SerialSettings::new(port.clone())
        };
        let position = self.position()?;
        Ok(Some(SerialBackend::new(settings, position)?))
    }

    fn position(&self) -> Result<Option<Arc<dyn PositionSource>>> {
        match &self.camapp {
            None => Ok(None),
            Some(address) => Ok(Some(crate::camera::position_source(
                address,
                self.camera.as_deref(),
            )?)),
        }
    }
}

#[derive(Args)]
pub struct EmulateArgs {
    /// An embedded example robot.
    #[arg(default_value = "quadruped")]
    robot: String,
    /// Robot seconds per wall second (give the host the same --time-scale).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Most seconds a module takes to join the Bluetooth network.
    #[arg(long, default_value_t = 7.0)]
    join_delay: f64,
    /// Seconds the robot takes per SNP message.
    #[arg(long, default_value_t = 1.0)]
    message_delay: f64,
    /// Probability that a Bluetooth connection is never acknowledged (5.5.4).
    #[arg(long, default_value_t = 0.2)]
    missing_ack: f64,
    /// Probability of a corrupted frame, each direction.
    #[arg(long, default_value_t = 0.0)]
    corrupt_frame: f64,
    /// Probability of a dropped byte per frame, each direction.
    #[arg(long, default_value_t = 0.0)]
    drop_byte: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
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
    for (name, p) in [
        ("missing-ack", args.missing_ack),
        ("corrupt-frame", args.corrupt_frame),
        ("drop-byte", args.drop_byte),
    ] {
        if !(0.0..=1.0).contains(&p) {
            bail!("--{name} is a probability in [0, 1], got {p}");
        }
    }
    let sim = Simulation::new(
        &example.morphology()?,
        SimSettings {
            seed: args.seed,
            ..SimSettings::default()
        },
    )?;
    let robot = EmulatedRobot::spawn(
        sim,
        EmulationSettings {
            time_scale: args.time_scale,
            join_delay: args.join_delay,
            message_delay: args.message_delay,
            missing_ack: args.missing_ack,
            corrupt_frame: args.corrupt_frame,
            drop_byte: args.drop_byte,
            seed: args.seed,
            master: None,
        },
    )?;
    println!("emulated {} on {}", args.robot, robot.path());
    let _camera = match args.camapp {
        Some(address) => Some(crate::camera::emulate_for(
            address,
            robot.led(),
            args.camera_noise,
            args.seed,
        )?),
        None => None,
    };
    println!(
        "try: yamor host --serial {} --time-scale {}{}",
        robot.path(),
        args.time_scale,
        args.camapp
            .map(|a| format!(" --camapp {a}"))
            .unwrap_or_default()
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::spawn(move || {
            runtime.block_on(crate::net::shutdown_signal());
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    let mut last = String::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let o = robot.observe();
        let line = format!(
            "t={:.0}s network={:?} motors_on={:?} led=({:.3}, {:.3}) requests={} lost_acks={} garbage={}",
            o.time, o.network, o.motors_on, o.led[0], o.led[1], o.requests, o.lost_acks, o.garbage
        );
        if line != last {
            eprintln!("{line}");
            last = line;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(())
}
