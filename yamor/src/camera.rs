//! `yamor camera`: the LED tracker from the command line (thesis C.2.5):
//! watch raw and corrected positions, record a path, calibrate the camera
//! model, or emulate a CamApp.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use yamor_core::camera::{CameraModel, Sample};
use yamor_firmware_sim::camapp::{CamApp, CamAppSettings, LedSource};
use yamor_host_agent::serial::PositionSource;
use yamor_host_agent::tracker::Tracker;

/// Height of the LED above the floor on a YaMoR module (m).
pub const LED_HEIGHT: f64 = 0.05;

#[derive(Subcommand)]
pub enum CameraCommand {
    /// Print raw pixels and floor coordinates as CamApp sends them.
    Watch {
        /// CamApp address, host:port.
        #[arg(long)]
        camapp: String,
        #[arg(long)]
        model: Option<PathBuf>,
        /// Also record t,px,py,x,y to this CSV file.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Stop after this many seconds (0: until Ctrl-C).
        #[arg(long, default_value_t = 0.0)]
        seconds: f64,
    },
    /// Fit the camera model to known floor points and write it as JSON.
    Calibrate {
        /// Rows x,y,z,px,py already measured (header optional).
        #[arg(long, conflicts_with = "points")]
        samples: Option<PathBuf>,
        /// Rows x,y[,z] of floor points: place the LED on each when asked.
        #[arg(long, requires = "camapp")]
        points: Option<PathBuf>,
        #[arg(long)]
        camapp: Option<String>,
        /// Where to write the model.
        #[arg(long, default_value = "camera.json")]
        out: PathBuf,
    },
    /// Serve an emulated CamApp with an LED circling 1 m around the centre.
    Emulate {
        #[arg(long, default_value = "127.0.0.1:5000")]
        listen: SocketAddr,
        #[arg(long, default_value_t = 0.5)]
        noise: f64,
    },
}

/// The camera model in `path`, or the thesis' default camera.
pub fn load_model(path: Option<&Path>) -> Result<CameraModel> {
    match path {
        None => Ok(CameraModel::default()),
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{}: not a camera model", p.display()))
        }
    }
}

/// A tracker reading CamApp at `address` as the real robot's position.
pub fn position_source(address: &str, model: Option<&Path>) -> Result<Arc<dyn PositionSource>> {
    Ok(Arc::new(Tracker::connect(
        address,
        load_model(model)?,
        LED_HEIGHT,
    )))
}

/// An emulated CamApp watching `led`.
pub fn emulate_for(
    address: SocketAddr,
    led: impl Fn() -> Option<[f64; 3]> + Send + Sync + 'static,
    noise: f64,
    seed: u64,
) -> Result<CamApp> {
    let listener =
        std::net::TcpListener::bind(address).with_context(|| format!("binding {address}"))?;
    let led: LedSource = Box::new(led);
    let camapp = CamApp::serve(
        listener,
        led,
        CamAppSettings {
            noise_px: noise,
            seed,
            ..CamAppSettings::default()
        },
    )?;
    eprintln!("emulated CamApp on {}", camapp.address());
    Ok(camapp)
}

pub fn camera(command: CameraCommand) -> Result<()> {
    match command {
        CameraCommand::Watch {
            camapp,
            model,
            record,
            seconds,
        } => watch(&camapp, model.as_deref(), record.as_deref(), seconds),
        CameraCommand::Calibrate {
            samples,
            points,
            camapp,
            out,
        } => {
            let samples = match (samples, points, camapp) {
                (Some(file), _, _) => read_samples(&file)?,
                (None, Some(points), Some(camapp)) => measure(&points, &camapp)?,
                _ => bail!("give --samples FILE, or --points FILE with --camapp HOST:PORT"),
            };
            let (model, rms) = CameraModel::default().calibrate(&samples)?;
            std::fs::write(&out, serde_json::to_string_pretty(&model)?)?;
            println!(
                "camera: focal {:.1} px, principal ({:.1}, {:.1}), k1 {:.4}, yaw {:.4} rad, under the camera ({:.3}, {:.3}) m",
                model.focal, model.px0, model.py0, model.k1, model.yaw, model.cx, model.cy
            );
            println!(
                "{} points, RMS residual {:.1} mm; wrote {}",
                samples.len(),
                rms * 1000.0,
                out.display()
            );
            Ok(())
        }
        CameraCommand::Emulate { listen, noise } => {
            let started = Instant::now();
            let _camapp = emulate_for(
                listen,
                move || {
                    let t = started.elapsed().as_secs_f64() * 0.3;
                    Some([t.cos(), t.sin(), LED_HEIGHT])
                },
                noise,
                1,
            )?;
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(crate::net::shutdown_signal());
            Ok(())
        }
    }
}

fn watch(address: &str, model: Option<&Path>, record: Option<&Path>, seconds: f64) -> Result<()> {
    let model = load_model(model)?;
    let tracker = Tracker::connect(address, model, LED_HEIGHT);
    let mut csv = match record {
        Some(p) => {
            let mut f = std::io::BufWriter::new(std::fs::File::create(p)?);
            writeln!(f, "t_s,px,py,x_m,y_m")?;
            Some(f)
        }
        None => None,
    };
    let started = Instant::now();
    let mut last = started - Duration::from_secs(1);
    while seconds <= 0.0 || started.elapsed().as_secs_f64() < seconds {
        match tracker.wait_fresh(last, Duration::from_secs(2)) {
            Ok(fix) => {
                last = fix.at;
                let t = fix.at.duration_since(started).as_secs_f64();
                println!(
                    "{t:8.2} s  raw ({:3}, {:3}) px  floor ({:+.3}, {:+.3}) m",
                    fix.pixel[0], fix.pixel[1], fix.x, fix.y
                );
                if let Some(f) = csv.as_mut() {
                    writeln!(
                        f,
                        "{t},{},{},{},{}",
                        fix.pixel[0], fix.pixel[1], fix.x, fix.y
                    )?;
                }
            }
            Err(e) => eprintln!("{e}"),
        }
    }
    if let Some(mut f) = csv {
        f.flush()?;
    }
    Ok(())
}

/// Numbers of each CSV row, skipping a header and blank lines.
fn rows(path: &Path, columns: &[usize]) -> Result<Vec<Vec<f64>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let values: Result<Vec<f64>, _> =
            line.split(',').map(|v| v.trim().parse::<f64>()).collect();
        match values {
            Ok(v) if columns.contains(&v.len()) => out.push(v),
            Ok(v) => bail!(
                "{}:{}: {} columns, expected {:?}",
                path.display(),
                n + 1,
                v.len(),
                columns
            ),
            Err(_) if n == 0 => {} // a header
            Err(e) => bail!("{}:{}: {e}", path.display(), n + 1),
        }
    }
    Ok(out)
}

fn read_samples(path: &Path) -> Result<Vec<Sample>> {
    Ok(rows(path, &[5])?
        .into_iter()
        .map(|r| Sample {
            world: [r[0], r[1], r[2]],
            pixel: [r[3], r[4]],
        })
        .collect())
}

/// Asks for the LED on each point and averages a second of pixels.
fn measure(points: &Path, address: &str) -> Result<Vec<Sample>> {
    // Only the raw pixels of the fixes are used: the model is what is fitted.
    let tracker = Tracker::connect(address, CameraModel::default(), LED_HEIGHT);
    let stdin = std::io::stdin();
    let mut samples = Vec::new();
    for r in rows(points, &[2, 3])? {
        let world = [r[0], r[1], r.get(2).copied().unwrap_or(LED_HEIGHT)];
        print!(
            "place the LED at ({}, {}, {}) m and press Enter ",
            world[0], world[1], world[2]
        );
        std::io::stdout().flush()?;
        let mut line = String::new();
        stdin.lock().read_line(&mut line)?;
        let until = Instant::now() + Duration::from_secs(1);
        let mut sum = [0.0, 0.0];
        let mut count = 0u32;
        let mut after = Instant::now();
        while Instant::now() < until {
            let fix = tracker.wait_fresh(after, Duration::from_secs(2))?;
            after = fix.at;
            sum[0] += f64::from(fix.pixel[0]);
            sum[1] += f64::from(fix.pixel[1]);
            count += 1;
        }
        let pixel = [sum[0] / f64::from(count), sum[1] / f64::from(count)];
        println!(
            "  seen at ({:.1}, {:.1}) px over {count} frames",
            pixel[0], pixel[1]
        );
        samples.push(Sample { world, pixel });
    }
    Ok(samples)
}
