//! `yamor camera`: the LED tracker from the command line (thesis C.2.5):
//! watch raw and corrected positions, record a path, calibrate the camera
//! model, or emulate a CamApp. The procedures are [`crate::survey`]'s; here
//! are the arguments and the terminal. See docs/camera.md.

use std::io::{self, BufRead};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::PositionSource;
use crate::camapp::{CamApp, CamAppError, CamAppSettings, Leds, circling};
use crate::model::{CAMERA_HEIGHT, CameraModel, LED_HEIGHT, Sample};
use crate::survey::{self, SurveyError, load_model};
use crate::tracker::Tracker;

/// Why a `yamor camera` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Survey(#[from] SurveyError),
    #[error(transparent)]
    CamApp(#[from] CamAppError),
    #[error("--average: {0}")]
    Average(std::time::TryFromFloatSecsError),
}

type Result<T> = std::result::Result<T, CliError>;

#[derive(Subcommand)]
pub enum CameraCommand {
    /// Print raw pixels and floor coordinates as CamApp sends them.
    Watch(WatchArgs),
    /// Fit the camera model to known floor points and write it as JSON.
    Calibrate(CalibrateArgs),
    /// Serve an emulated CamApp with an LED circling the centre.
    Emulate(EmulateArgs),
}

#[derive(Args)]
pub struct WatchArgs {
    /// CamApp address, host:port.
    #[arg(long)]
    camapp: String,
    /// Camera model (JSON from `yamor camera calibrate`); default: the thesis' camera.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Also record t_s,px,py,x_m,y_m to this CSV file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Height of the LED above the floor (m).
    #[arg(long, default_value_t = LED_HEIGHT)]
    led_height: f64,
    /// Stop after this many seconds (0: until Ctrl-C).
    #[arg(long, default_value_t = 0.0)]
    seconds: f64,
}

#[derive(Args)]
pub struct CalibrateArgs {
    /// Rows x,y,z,px,py already measured (header and # comments allowed).
    #[arg(long, conflicts_with_all = ["points", "camapp"], required_unless_present = "points")]
    samples: Option<PathBuf>,
    /// Rows x,y[,z] of floor points (m): place the LED on each when asked.
    #[arg(long, requires = "camapp")]
    points: Option<PathBuf>,
    /// CamApp address, host:port (with --points).
    #[arg(long)]
    camapp: Option<String>,
    /// Where to write the model.
    #[arg(long, default_value = "camera.json")]
    out: PathBuf,
    /// With --points: also write the measured x,y,z,px,py rows here,
    /// to refit later with --samples.
    #[arg(long, requires = "points")]
    save_samples: Option<PathBuf>,
    /// The LED's height for points given without z (m).
    #[arg(long, default_value_t = LED_HEIGHT)]
    led_height: f64,
    /// The camera's height above the floor (m): measured, not fitted.
    #[arg(long, default_value_t = CAMERA_HEIGHT)]
    height: f64,
    /// Seconds of frames averaged at each point.
    #[arg(long, default_value_t = 1.0)]
    average: f64,
}

#[derive(Args)]
pub struct EmulateArgs {
    /// Address the emulated CamApp listens on.
    #[arg(long, default_value = "127.0.0.1:5000")]
    listen: SocketAddr,
    /// Pixel noise (standard deviation).
    #[arg(long, default_value_t = 0.5)]
    noise: f64,
    /// Radius of the LED's circle (m); one turn takes 2π/0.3 ≈ 21 s.
    #[arg(long, default_value_t = 1.0)]
    radius: f64,
    /// The emulated camera (JSON); default: the thesis' camera.
    #[arg(long)]
    model: Option<PathBuf>,
}

/// A tracker reading CamApp at `address` as the real robot's position.
pub fn position_source(address: &str, model: Option<&Path>) -> Result<Arc<dyn PositionSource>> {
    let model = load_model(model)?;
    Ok(Arc::new(Tracker::connect(address, model, LED_HEIGHT)))
}

/// An emulated CamApp watching `leds` through the default camera.
pub fn emulate_for(address: SocketAddr, leds: Leds, noise: f64, seed: u64) -> Result<CamApp> {
    let settings = CamAppSettings::new(CameraModel::default(), noise, seed);
    serve(address, leds, settings)
}

fn serve(address: SocketAddr, leds: Leds, settings: CamAppSettings) -> Result<CamApp> {
    let camapp = CamApp::bind(address, leds, settings)?;
    eprintln!("emulated CamApp on {}", camapp.address());
    Ok(camapp)
}

/// Runs one `yamor camera` command; `until_stopped` resolves on Ctrl-C.
pub fn camera(
    command: CameraCommand,
    until_stopped: impl std::future::Future<Output = ()>,
) -> Result<()> {
    match command {
        CameraCommand::Watch(a) => {
            let tracker =
                Tracker::connect(&a.camapp, load_model(a.model.as_deref())?, a.led_height);
            // 0 (or less): until Ctrl-C.
            let duration = Duration::try_from_secs_f64(a.seconds)
                .ok()
                .filter(|d| !d.is_zero());
            let (mut out, mut lost) = (io::stdout(), io::stderr());
            survey::watch(&tracker, a.record.as_deref(), duration, &mut out, &mut lost)?;
        }
        CameraCommand::Calibrate(a) => {
            // clap requires --samples, or --points with --camapp.
            let samples = match (&a.samples, &a.points, &a.camapp) {
                (None, Some(points), Some(camapp)) => measure(&a, points, camapp)?,
                (Some(file), _, _) => survey::read_samples(file)?,
                _ => unreachable!("clap enforces --samples or --points with --camapp"),
            };
            survey::calibrate(&samples, a.height, &a.out, &mut io::stdout())?;
        }
        CameraCommand::Emulate(a) => {
            let settings = CamAppSettings::new(load_model(a.model.as_deref())?, a.noise, 1);
            let _camapp = serve(a.listen, circling(a.radius).into(), settings)?;
            let radius = a.radius;
            eprintln!(
                "the LED circles {radius} m around the origin at {LED_HEIGHT} m; Ctrl-C stops"
            );
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(SurveyError::Io)?
                .block_on(until_stopped);
        }
    }
    Ok(())
}

/// Asks on the terminal for the LED on each point, Enter when it is there.
fn measure(a: &CalibrateArgs, points: &Path, camapp: &str) -> Result<Vec<Sample>> {
    let points = survey::read_points(points, a.led_height)?;
    let average = Duration::try_from_secs_f64(a.average).map_err(CliError::Average)?;
    let tracker = Tracker::connect(camapp, CameraModel::default(), a.led_height);
    const ABANDONED: &str = "standard input closed: calibration abandoned";
    let mut enter = || match io::stdin().lock().read_line(&mut String::new())? {
        0 => Err(io::Error::other(ABANDONED)),
        _ => Ok(()),
    };
    let mut out = io::stdout();
    let samples = survey::measure(&points, &tracker, &mut enter, &mut out, average)?;
    if let Some(path) = &a.save_samples {
        survey::write_samples(path, &samples)?;
        println!("wrote {} samples to {}", samples.len(), path.display());
    }
    Ok(samples)
}
