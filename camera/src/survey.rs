//! The procedures of `yamor camera` (thesis C.2.5), for a command line or
//! any other front end: reading and writing camera models, sample and point
//! files; measuring known floor points with a [`Tracker`]; calibrating with a
//! residual report; watching the tracker and recording its path.
//!
//! Nothing here touches the terminal: reports and prompts go to a
//! `&mut dyn Write`, and "the LED is in place" comes from a callback.
//!
//! Files:
//! - a camera model is JSON with [`CameraModel`]'s field names (missing
//!   fields take the defaults, unknown ones are refused);
//! - samples are CSV rows `x,y,z,px,py` (floor metres, pixels);
//! - points are CSV rows `x,y[,z]` (m), `z` defaulting to the LED's height;
//! - a recorded path is CSV rows `t_s,px,py,x_m,y_m`.
//!
//! The CSV readers skip a header line, blank lines and `#` comments; an
//! error names the file and the line.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::num::ParseFloatError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::model::{Calibration, CameraError, CameraModel, Sample};
use crate::tracker::{Tracker, TrackerError};

/// How long [`measure`] and [`watch`] wait for a frame before giving up
/// (measure) or saying so (watch).
const FRAME_TIMEOUT: Duration = Duration::from_secs(2);

/// Frames farther than this from the median are left out of an average (px).
const STILL_PX: f64 = 3.0;

/// Why a procedure of `yamor camera` failed. Each message names the file
/// (and line) or the point concerned, and includes its cause.
#[derive(Debug, thiserror::Error)]
pub enum SurveyError {
    #[error("reading {}: {error}", path.display())]
    Read { path: PathBuf, error: io::Error },
    #[error("creating {}: {error}", path.display())]
    Create { path: PathBuf, error: io::Error },
    #[error("writing {}: {error}", path.display())]
    Write { path: PathBuf, error: io::Error },
    #[error("{}: not a camera model: {error}", path.display())]
    NotAModel {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("{}: {error}", path.display())]
    InvalidModel { path: PathBuf, error: CameraError },
    /// A CSV row (`line` counts from 1) with a number of values none of `expected`.
    #[error(
        "{}:{line}: {found} numbers, expected {}",
        path.display(),
        alternatives(expected)
    )]
    Columns {
        path: PathBuf,
        line: usize,
        found: usize,
        expected: Vec<usize>,
    },
    /// A CSV row (not the first) with a value that is not a number.
    #[error("{}:{line}: {error}: {text:?}", path.display())]
    NotANumber {
        path: PathBuf,
        line: usize,
        error: ParseFloatError,
        text: String,
    },
    /// A CSV row with an infinite or NaN value.
    #[error("{}:{line}: not a finite number: {text:?}", path.display())]
    NotFinite {
        path: PathBuf,
        line: usize,
        text: String,
    },
    /// No frame while measuring `point` (counted from 1) at `world`.
    #[error("point {point} ({}, {}): {error}", world[0], world[1])]
    NoFix {
        point: usize,
        world: [f64; 3],
        error: TrackerError,
    },
    #[error("point {point}: the LED did not hold still: {why}")]
    Unsteady { point: usize, why: Unsteady },
    #[error("calibration: {0}")]
    Calibration(CameraError),
    /// Writing a report or a prompt, or the prompt's answer.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Why frames have no [`robust_mean`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unsteady {
    #[error("no frames")]
    NoFrames,
    #[error("only {kept} of {frames} frames within 3 px of the median")]
    Scattered { kept: usize, frames: usize },
}

fn alternatives(columns: &[usize]) -> String {
    columns
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

fn reading(path: &Path) -> impl FnOnce(io::Error) -> SurveyError + '_ {
    |error| SurveyError::Read {
        path: path.into(),
        error,
    }
}

fn writing(path: &Path) -> impl FnOnce(io::Error) -> SurveyError + '_ {
    |error| SurveyError::Write {
        path: path.into(),
        error,
    }
}

/// The camera model in the JSON file `path`, checked; without a path, the
/// thesis' default camera.
pub fn load_model(path: Option<&Path>) -> Result<CameraModel, SurveyError> {
    let Some(path) = path else {
        return Ok(CameraModel::default());
    };
    let text = std::fs::read_to_string(path).map_err(reading(path))?;
    let model: CameraModel =
        serde_json::from_str(&text).map_err(|error| SurveyError::NotAModel {
            path: path.into(),
            error,
        })?;
    model.check().map_err(|error| SurveyError::InvalidModel {
        path: path.into(),
        error,
    })?;
    Ok(model)
}

/// Writes `model` to `path` as pretty JSON, which [`load_model`] reads.
pub fn write_model(path: &Path, model: &CameraModel) -> Result<(), SurveyError> {
    let json = serde_json::to_string_pretty(model).map_err(|e| writing(path)(e.into()))?;
    std::fs::write(path, json + "\n").map_err(writing(path))
}

/// Fits a camera `height` m above the floor to `samples`, writes the model
/// to `out` and reports each sample's residual and the fit on `report`.
pub fn calibrate(
    samples: &[Sample],
    height: f64,
    out: &Path,
    report: &mut dyn Write,
) -> Result<Calibration, SurveyError> {
    let start = CameraModel {
        height,
        ..CameraModel::default()
    };
    let fit = start.calibrate(samples).map_err(SurveyError::Calibration)?;
    let m = &fit.model;
    write_model(out, m)?;
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
    Ok(fit)
}

/// Writes each fresh fix of `tracker` to `out`, raw pixels and floor
/// coordinates, until `duration` has passed (`None`: for ever). With
/// `record`, also writes `t_s,px,py,x_m,y_m` rows there, flushed after each
/// so that a process killed by Ctrl-C leaves what it saw on disk. When no
/// fix comes for 2 s it says so on `lost` and goes on watching. Returns the
/// number of fixes.
pub fn watch(
    tracker: &Tracker,
    record: Option<&Path>,
    duration: Option<Duration>,
    out: &mut dyn Write,
    lost: &mut dyn Write,
) -> Result<usize, SurveyError> {
    let mut csv = match record {
        Some(path) => {
            let file = File::create(path).map_err(|error| SurveyError::Create {
                path: path.into(),
                error,
            })?;
            let mut file = BufWriter::new(file);
            writeln!(file, "t_s,px,py,x_m,y_m").map_err(writing(path))?;
            Some((path, file))
        }
        None => None,
    };
    let started = Instant::now();
    let mut last = started - Duration::from_secs(1);
    let mut fixes = 0;
    while duration.is_none_or(|d| started.elapsed() < d) {
        let fix = match tracker.wait_fresh(last, FRAME_TIMEOUT) {
            Ok(fix) => fix,
            Err(e) => {
                writeln!(lost, "{e}")?;
                continue;
            }
        };
        fixes += 1;
        last = fix.at;
        let t = fix.at.duration_since(started).as_secs_f64();
        writeln!(
            out,
            "{t:8.2} s  raw ({:3}, {:3}) px  floor ({:+.3}, {:+.3}) m",
            fix.pixel[0], fix.pixel[1], fix.x, fix.y
        )?;
        if let Some((path, file)) = csv.as_mut() {
            writeln!(
                file,
                "{t:.3},{},{},{:.4},{:.4}",
                fix.pixel[0], fix.pixel[1], fix.x, fix.y
            )
            .and_then(|()| file.flush())
            .map_err(writing(path))?;
        }
    }
    Ok(fixes)
}

/// The numbers of each CSV row, skipping a header, blank lines and
/// `#` comments; every row must have one of `columns` numbers.
fn rows(path: &Path, columns: &[usize]) -> Result<Vec<Vec<f64>>, SurveyError> {
    let text = std::fs::read_to_string(path).map_err(reading(path))?;
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
            Ok(v) if !columns.contains(&v.len()) => {
                return Err(SurveyError::Columns {
                    path: path.into(),
                    line: n + 1,
                    found: v.len(),
                    expected: columns.to_vec(),
                });
            }
            Ok(v) if !v.iter().all(|x| x.is_finite()) => {
                return Err(SurveyError::NotFinite {
                    path: path.into(),
                    line: n + 1,
                    text: line.into(),
                });
            }
            Ok(v) => out.push(v),
            Err(_) if header => {}
            Err(error) => {
                return Err(SurveyError::NotANumber {
                    path: path.into(),
                    line: n + 1,
                    error,
                    text: line.into(),
                });
            }
        }
    }
    Ok(out)
}

/// The `x,y,z,px,py` rows of `path`.
pub fn read_samples(path: &Path) -> Result<Vec<Sample>, SurveyError> {
    Ok(rows(path, &[5])?
        .into_iter()
        .map(|r| Sample {
            world: [r[0], r[1], r[2]],
            pixel: [r[3], r[4]],
        })
        .collect())
}

/// Writes `samples` to `path` as `x,y,z,px,py` rows under a header, which
/// [`read_samples`] reads.
pub fn write_samples(path: &Path, samples: &[Sample]) -> Result<(), SurveyError> {
    let mut text = String::from("x,y,z,px,py\n");
    for s in samples {
        text += &format!(
            "{},{},{},{:.3},{:.3}\n",
            s.world[0], s.world[1], s.world[2], s.pixel[0], s.pixel[1]
        );
    }
    std::fs::write(path, text).map_err(writing(path))
}

/// The `x,y[,z]` rows of `path`, `z` being `led_height` where not given.
pub fn read_points(path: &Path, led_height: f64) -> Result<Vec<[f64; 3]>, SurveyError> {
    Ok(rows(path, &[2, 3])?
        .into_iter()
        .map(|r| [r[0], r[1], r.get(2).copied().unwrap_or(led_height)])
        .collect())
}

/// Asks on `out` for the LED on each point (`enter` returns when it is
/// there; its error abandons the measurement) and averages `average` of
/// frames. Frames more than 3 px from the median are left out: they are
/// from before the LED was still (or a reflection), and one of them would
/// move the mean by centimetres.
pub fn measure(
    points: &[[f64; 3]],
    tracker: &Tracker,
    enter: &mut dyn FnMut() -> io::Result<()>,
    out: &mut dyn Write,
    average: Duration,
) -> Result<Vec<Sample>, SurveyError> {
    let mut samples = Vec::new();
    for (i, &world) in points.iter().enumerate() {
        let point = i + 1;
        write!(
            out,
            "[{point}/{}] place the LED at ({}, {}, {}) m and press Enter ",
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
            let fix =
                tracker
                    .wait_fresh(after, FRAME_TIMEOUT)
                    .map_err(|error| SurveyError::NoFix {
                        point,
                        world,
                        error,
                    })?;
            after = fix.at;
            frames.push([f64::from(fix.pixel[0]), f64::from(fix.pixel[1])]);
        }
        let pixel = robust_mean(&frames).map_err(|why| SurveyError::Unsteady { point, why })?;
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
pub fn robust_mean(frames: &[[f64; 2]]) -> Result<[f64; 2], Unsteady> {
    let median = |axis: usize| {
        let mut v: Vec<f64> = frames.iter().map(|p| p[axis]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    if frames.is_empty() {
        return Err(Unsteady::NoFrames);
    }
    let m = [median(0), median(1)];
    let kept: Vec<&[f64; 2]> = frames
        .iter()
        .filter(|p| (p[0] - m[0]).hypot(p[1] - m[1]) <= STILL_PX)
        .collect();
    if kept.len() * 2 <= frames.len() {
        return Err(Unsteady::Scattered {
            kept: kept.len(),
            frames: frames.len(),
        });
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
    use crate::camapp::{CamApp, CamAppSettings};
    use crate::model::LED_HEIGHT;
    use std::sync::{Arc, Mutex};

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

    /// An emulated CamApp seeing the LED at `led` through [`truth`].
    fn camapp(led: &Arc<Mutex<Option<[f64; 3]>>>) -> CamApp {
        CamApp::serve(
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
        .unwrap()
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
        // Each message names the file.
        let e = load_model(Some(&dir.join("missing.json")))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("reading ") && e.contains("missing.json"),
            "{e}"
        );
        std::fs::write(&csv, "0,0\n1,inf\n").unwrap();
        let e = read_points(&csv, 0.05).unwrap_err().to_string();
        assert!(e.contains("points.csv:2: not a finite number"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn interactive_calibration_against_an_emulated_camapp_finds_its_camera() {
        let points = grid();
        let led: Arc<Mutex<Option<[f64; 3]>>> = Arc::default();
        let camapp = camapp(&led);
        let tracker = Tracker::connect(
            &camapp.address().to_string(),
            CameraModel::default(),
            LED_HEIGHT,
        );
        // "Pressing Enter" is the LED arriving at the next point.
        let mut next = points.iter();
        let mut enter = || -> io::Result<()> {
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
    fn an_abandoned_prompt_stops_the_measurement() {
        let led: Arc<Mutex<Option<[f64; 3]>>> = Arc::default();
        let camapp = camapp(&led);
        let tracker = Tracker::connect(&camapp.address().to_string(), truth(), LED_HEIGHT);
        let mut enter = || Err(io::Error::other("standard input closed"));
        let e = measure(
            &grid(),
            &tracker,
            &mut enter,
            &mut Vec::new(),
            Duration::from_millis(100),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "standard input closed");
    }

    #[test]
    fn watching_prints_and_records_the_fixes() {
        let dir = scratch("watch");
        let led = Arc::new(Mutex::new(Some([0.3, -0.2, LED_HEIGHT])));
        let camapp = camapp(&led);
        let tracker = Tracker::connect(&camapp.address().to_string(), truth(), LED_HEIGHT);
        let record = dir.join("path.csv");
        let (mut out, mut lost) = (Vec::new(), Vec::new());
        let fixes = watch(
            &tracker,
            Some(&record),
            Some(Duration::from_millis(300)),
            &mut out,
            &mut lost,
        )
        .unwrap();
        assert!(fixes > 0);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(out.lines().count(), fixes, "{out}");
        assert!(out.contains(" px  floor (+0."), "{out}");
        let csv = std::fs::read_to_string(&record).unwrap();
        assert!(csv.starts_with("t_s,px,py,x_m,y_m\n"), "{csv}");
        assert_eq!(csv.lines().count(), fixes + 1, "{csv}");
        for row in csv.lines().skip(1) {
            let v: Vec<f64> = row.split(',').map(|x| x.parse().unwrap()).collect();
            assert!((v[3] - 0.3).hypot(v[4] + 0.2) < 0.01, "{row}");
        }
        let e = watch(
            &tracker,
            Some(&dir.join("no/such/dir.csv")),
            Some(Duration::ZERO),
            &mut Vec::new(),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("creating "), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
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
        assert_eq!(
            robust_mean(&scattered),
            Err(Unsteady::Scattered {
                kept: 1,
                frames: 10
            })
        );
        assert_eq!(robust_mean(&[]), Err(Unsteady::NoFrames));
    }
}
