//! `yamor camera`: the LED tracker from the command line (thesis C.2.5):
//! watch raw and corrected positions, record a path, calibrate the camera
//! model, or emulate a CamApp. See docs/camera.md.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use yamor_camera::PositionSource;
use yamor_camera::camapp::{CamApp, CamAppSettings, LedSource};
use yamor_camera::model::{CameraModel, LED_HEIGHT, Sample};
use yamor_camera::tracker::Tracker;

#[derive(Subcommand)]
pub enum CameraCommand {
    /// Print raw pixels and floor coordinates as CamApp sends them.
    Watch {
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
    },
    /// Fit the camera model to known floor points and write it as JSON.
    Calibrate {
        /// Rows x,y,z,px,py already measured (header and # comments allowed).
        #[arg(long, conflicts_with_all = ["points", "camapp"])]
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
        #[arg(long, default_value_t = yamor_camera::model::CAMERA_HEIGHT)]
        height: f64,
        /// Seconds of frames averaged at each point.
        #[arg(long, default_value_t = 1.0)]
        average: f64,
    },
    /// Serve an emulated CamApp with an LED circling the centre.
    Emulate {
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
    },
}

/// The camera model in `path`, or the thesis' default camera.
pub fn load_model(path: Option<&Path>) -> Result<CameraModel> {
    let Some(p) = path else {
        return Ok(CameraModel::default());
    };
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    let model: CameraModel = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a camera model", p.display()))?;
    model.check().with_context(|| p.display().to_string())?;
    Ok(model)
}

/// A tracker reading CamApp at `address` as the real robot's position.
pub fn position_source(address: &str, model: Option<&Path>) -> Result<Arc<dyn PositionSource>> {
    Ok(Arc::new(Tracker::connect(
        address,
        load_model(model)?,
        LED_HEIGHT,
    )))
}

/// An emulated CamApp watching `led` through the default camera.
pub fn emulate_for(
    address: SocketAddr,
    led: impl Fn() -> Option<[f64; 3]> + Send + Sync + 'static,
    noise: f64,
    seed: u64,
) -> Result<CamApp> {
    serve(address, Box::new(led), CameraModel::default(), noise, seed)
}

fn serve(
    address: SocketAddr,
    led: LedSource,
    model: CameraModel,
    noise: f64,
    seed: u64,
) -> Result<CamApp> {
    let listener =
        std::net::TcpListener::bind(address).with_context(|| format!("binding {address}"))?;
    let camapp = CamApp::serve(
        listener,
        led,
        CamAppSettings {
            model,
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
            led_height,
            seconds,
        } => watch(
            &camapp,
            load_model(model.as_deref())?,
            record.as_deref(),
            led_height,
            seconds,
        ),
        CameraCommand::Calibrate {
            samples,
            points,
            camapp,
            out,
            save_samples,
            led_height,
            height,
            average,
        } => {
            let samples = match (samples, points, camapp) {
                (Some(file), _, _) => read_samples(&file)?,
                (None, Some(points), Some(camapp)) => {
                    let points = read_points(&points, led_height)?;
                    let tracker = Tracker::connect(&camapp, CameraModel::default(), led_height);
                    let stdin = std::io::stdin();
                    let mut enter = || -> Result<()> {
                        let mut line = String::new();
                        if stdin.lock().read_line(&mut line)? == 0 {
                            bail!("standard input closed: calibration abandoned");
                        }
                        Ok(())
                    };
                    let samples = measure(
                        &points,
                        &tracker,
                        &mut enter,
                        &mut std::io::stdout(),
                        Duration::from_secs_f64(average),
                    )?;
                    if let Some(path) = save_samples {
                        write_samples(&path, &samples)?;
                        println!("wrote {} samples to {}", samples.len(), path.display());
                    }
                    samples
                }
                _ => bail!("give --samples FILE, or --points FILE with --camapp HOST:PORT"),
            };
            calibrate(&samples, height, &out, &mut std::io::stdout())
        }
        CameraCommand::Emulate {
            listen,
            noise,
            radius,
            model,
        } => {
            let started = Instant::now();
            let _camapp = serve(
                listen,
                Box::new(move || {
                    let t = started.elapsed().as_secs_f64() * 0.3;
                    Some([radius * t.cos(), radius * t.sin(), LED_HEIGHT])
                }),
                load_model(model.as_deref())?,
                noise,
                1,
            )?;
            eprintln!(
                "the LED circles {radius} m around the origin at {LED_HEIGHT} m; Ctrl-C stops"
            );
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(crate::net::shutdown_signal());
            Ok(())
        }
    }
}

/// Fits, writes the model to `out` and reports the residuals.
fn calibrate(samples: &[Sample], height: f64, out: &Path, report: &mut dyn Write) -> Result<()> {
    let start = CameraModel {
        height,
        ..CameraModel::default()
    };
    let fit = start.calibrate(samples).context("calibration")?;
    let m = fit.model;
    std::fs::write(out, serde_json::to_string_pretty(&m)? + "\n")
        .with_context(|| format!("writing {}", out.display()))?;
    writeln!(
        report,
        "   x (m)    y (m)    z (m)    px      py     error (mm)"
    )?;
    for (s, r) in samples.iter().zip(&fit.residuals) {
        writeln!(
            report,
            "{:+8.3} {:+8.3} {:8.3} {:7.1} {:7.1}   {:5.1} ({:+.1}, {:+.1})",
            s.world[0],
            s.world[1],
            s.world[2],
            s.pixel[0],
            s.pixel[1],
            r[0].hypot(r[1]) * 1000.0,
            r[0] * 1000.0,
            r[1] * 1000.0
        )?;
    }
    writeln!(
        report,
        "camera: focal {:.1} px, principal point ({:.1}, {:.1}) px, k1 {:.4}, yaw {:.4} rad, \
         above ({:.3}, {:.3}) m at {} m",
        m.focal, m.px0, m.py0, m.k1, m.yaw, m.cx, m.cy, m.height
    )?;
    writeln!(
        report,
        "{} points: RMS {:.1} mm, worst {:.1} mm on the floor ({:.2} px RMS); wrote {}",
        samples.len(),
        fit.rms_m * 1000.0,
        fit.max_m * 1000.0,
        fit.rms_px,
        out.display()
    )?;
    Ok(())
}

fn watch(
    address: &str,
    model: CameraModel,
    record: Option<&Path>,
    led_height: f64,
    seconds: f64,
) -> Result<()> {
    let tracker = Tracker::connect(address, model, led_height);
    let mut csv = match record {
        Some(p) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
            );
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
                        "{t:.3},{},{},{:.4},{:.4}",
                        fix.pixel[0], fix.pixel[1], fix.x, fix.y
                    )?;
                    // Ctrl-C ends the process: what was seen must be on disk.
                    f.flush()?;
                }
            }
            Err(e) => eprintln!("{e}"),
        }
    }
    Ok(())
}

/// The numbers of each CSV row, skipping a header, blank lines and
/// `#` comments; every row must have one of `columns` numbers.
fn rows(path: &Path, columns: &[usize]) -> Result<Vec<Vec<f64>>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut first = true;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let values: Result<Vec<f64>, _> =
            line.split(',').map(|v| v.trim().parse::<f64>()).collect();
        let header = std::mem::take(&mut first);
        match values {
            Ok(v) if columns.contains(&v.len()) && v.iter().all(|x| x.is_finite()) => out.push(v),
            Ok(v) => bail!(
                "{}:{}: {} numbers, expected {}",
                path.display(),
                n + 1,
                v.len(),
                columns
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Err(_) if header => {}
            Err(e) => bail!("{}:{}: {e}: {line:?}", path.display(), n + 1),
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

fn write_samples(path: &Path, samples: &[Sample]) -> Result<()> {
    let mut text = String::from("x,y,z,px,py\n");
    for s in samples {
        text += &format!(
            "{},{},{},{:.3},{:.3}\n",
            s.world[0], s.world[1], s.world[2], s.pixel[0], s.pixel[1]
        );
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn read_points(path: &Path, led_height: f64) -> Result<Vec<[f64; 3]>> {
    Ok(rows(path, &[2, 3])?
        .into_iter()
        .map(|r| [r[0], r[1], r.get(2).copied().unwrap_or(led_height)])
        .collect())
}

/// Asks for the LED on each point (`enter` returns when it is there) and
/// averages `average` of frames. Frames more than 3 px from the median are
/// left out: they are from before the LED was still (or a reflection),
/// and one of them would move the mean by centimetres.
fn measure(
    points: &[[f64; 3]],
    tracker: &Tracker,
    enter: &mut dyn FnMut() -> Result<()>,
    out: &mut dyn Write,
    average: Duration,
) -> Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for (i, &world) in points.iter().enumerate() {
        write!(
            out,
            "[{}/{}] place the LED at ({}, {}, {}) m and press Enter ",
            i + 1,
            points.len(),
            world[0],
            world[1],
            world[2]
        )?;
        out.flush()?;
        enter()?;
        let start = Instant::now();
        let mut after = start;
        let mut frames: Vec<[f64; 2]> = Vec::new();
        while after < start + average {
            let fix = tracker
                .wait_fresh(after, Duration::from_secs(2))
                .with_context(|| format!("point {} ({}, {})", i + 1, world[0], world[1]))?;
            after = fix.at;
            frames.push([f64::from(fix.pixel[0]), f64::from(fix.pixel[1])]);
        }
        let pixel = robust_mean(&frames)
            .with_context(|| format!("point {}: the LED did not hold still", i + 1))?;
        writeln!(
            out,
            "  seen at ({:.1}, {:.1}) px over {} frames",
            pixel[0],
            pixel[1],
            frames.len()
        )?;
        samples.push(Sample { world, pixel });
    }
    Ok(samples)
}

/// The mean of the frames within 3 px of their median, if that is most of them.
fn robust_mean(frames: &[[f64; 2]]) -> Result<[f64; 2]> {
    let median = |axis: usize| {
        let mut v: Vec<f64> = frames.iter().map(|p| p[axis]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    if frames.is_empty() {
        bail!("no frames");
    }
    let m = [median(0), median(1)];
    let kept: Vec<&[f64; 2]> = frames
        .iter()
        .filter(|p| (p[0] - m[0]).hypot(p[1] - m[1]) <= 3.0)
        .collect();
    if kept.len() * 2 <= frames.len() {
        bail!(
            "only {} of {} frames within 3 px of the median",
            kept.len(),
            frames.len()
        );
    }
    let n = kept.len() as f64;
    Ok([
        kept.iter().map(|p| p[0]).sum::<f64>() / n,
        kept.iter().map(|p| p[1]).sum::<f64>() / n,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("yamor-camera-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn truth() -> CameraModel {
        CameraModel {
            cx: 0.1,
            cy: -0.05,
            yaw: 0.04,
            focal: 600.0,
            px0: 318.0,
            py0: 243.0,
            k1: -0.1,
            ..CameraModel::default()
        }
    }

    fn grid() -> Vec<[f64; 3]> {
        let mut points = Vec::new();
        for i in -2..=2 {
            for j in -1..=1 {
                points.push([f64::from(i) * 0.6, f64::from(j) * 0.7, LED_HEIGHT]);
            }
        }
        points
    }

    #[test]
    fn calibrating_from_a_samples_file_writes_a_model_that_loads() {
        let dir = scratch("samples");
        let samples: Vec<Sample> = grid()
            .into_iter()
            .map(|w| Sample {
                world: w,
                pixel: truth().project(w).unwrap(),
            })
            .collect();
        let file = dir.join("samples.csv");
        write_samples(&file, &samples).unwrap();
        let read = read_samples(&file).unwrap();
        assert_eq!(read.len(), samples.len());
        let out = dir.join("camera.json");
        let mut report = Vec::new();
        calibrate(&read, 2.7, &out, &mut report).unwrap();
        let report = String::from_utf8(report).unwrap();
        assert!(report.contains("15 points: RMS 0.0 mm"), "{report}");
        let model = load_model(Some(&out)).unwrap();
        assert!((model.focal - 600.0).abs() < 0.1, "{model:?}");
        assert!((model.cx - 0.1).abs() < 1e-3, "{model:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let dir = scratch("bad");
        let file = dir.join("model.json");
        std::fs::write(&file, r#"{"focal": 600, "focul": 1}"#).unwrap();
        let e = format!("{:#}", load_model(Some(&file)).unwrap_err());
        assert!(
            e.contains("not a camera model") && e.contains("focul"),
            "{e}"
        );
        std::fs::write(&file, r#"{"focal": -3}"#).unwrap();
        let e = format!("{:#}", load_model(Some(&file)).unwrap_err());
        assert!(e.contains("focal must be positive"), "{e}");
        // Missing fields take the defaults.
        std::fs::write(&file, r#"{"k1": -0.1}"#).unwrap();
        assert_eq!(load_model(Some(&file)).unwrap().height, 2.7);
        let csv = dir.join("points.csv");
        std::fs::write(&csv, "x,y\n0,0\n1,zero\n").unwrap();
        let e = format!("{:#}", read_points(&csv, 0.05).unwrap_err());
        assert!(e.contains("points.csv:3"), "{e}");
        std::fs::write(&csv, "0,0\n1,2,3,4\n").unwrap();
        let e = format!("{:#}", read_points(&csv, 0.05).unwrap_err());
        assert!(e.contains(":2: 4 numbers, expected 2 or 3"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn interactive_calibration_against_an_emulated_camapp_finds_its_camera() {
        let points = grid();
        let led: Arc<Mutex<Option<[f64; 3]>>> = Arc::default();
        let camapp = CamApp::serve(
            std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
            Box::new({
                let led = led.clone();
                move || *led.lock().unwrap()
            }),
            CamAppSettings {
                model: truth(),
                noise_px: 0.5,
                rate_hz: 200.0,
                seed: 9,
            },
        )
        .unwrap();
        let tracker = Tracker::connect(
            &camapp.address().to_string(),
            CameraModel::default(),
            LED_HEIGHT,
        );
        // "Pressing Enter" is the LED arriving at the next point.
        let mut next = points.iter();
        let mut enter = || -> Result<()> {
            *led.lock().unwrap() = next.next().copied();
            Ok(())
        };
        let mut prompts = Vec::new();
        let samples = measure(
            &points,
            &tracker,
            &mut enter,
            &mut prompts,
            Duration::from_millis(300),
        )
        .unwrap();
        let prompts = String::from_utf8(prompts).unwrap();
        assert!(
            prompts.contains("[15/15] place the LED at (1.2, 0.7, 0.05) m"),
            "{prompts}"
        );
        let fit = CameraModel::default().calibrate(&samples).unwrap();
        assert!(fit.rms_m < 0.003, "{fit:?}");
        for s in &samples {
            let [x, y] = fit.model.unproject(s.pixel, LED_HEIGHT);
            let [tx, ty] = truth().unproject(s.pixel, LED_HEIGHT);
            assert!((x - tx).hypot(y - ty) < 0.005, "{s:?}");
        }
    }

    #[test]
    fn a_stray_frame_does_not_move_the_average() {
        let mut frames = vec![[100.0, 200.0]; 20];
        frames.push([400.0, 10.0]);
        frames[3] = [101.0, 200.0];
        let m = robust_mean(&frames).unwrap();
        assert!(
            (m[0] - 100.05).abs() < 1e-9 && (m[1] - 200.0).abs() < 1e-9,
            "{m:?}"
        );
        let scattered: Vec<[f64; 2]> = (0..10).map(|i| [f64::from(i) * 10.0, 0.0]).collect();
        assert!(robust_mean(&scattered).is_err());
    }
}
