//! An emulated CamApp (thesis 5.1.2): a TCP server that streams where the
//! camera sees the robot's LED, as integer pixel pairs, to every client.
//!
//! Wire format (the thesis only says "a continuous stream of integer pixel
//! pairs"): ASCII lines `x y\n`, x in 0–639 and y in 0–479, at a fixed rate.
//! When the LED is not visible (out of the image, or no position) nothing
//! is sent, as a tracker that finds no lit LED has nothing to report.
//!
//! The pixel is the LED's world position through a [`CameraModel`]
//! (distortion included), plus Gaussian pixel noise, rounded.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_core::camera::CameraModel;

/// Where the LED is now (world metres), or `None` when it is dark.
pub type LedSource = Box<dyn Fn() -> Option<[f64; 3]> + Send + Sync>;

/// The running emulated CamApp; stops when dropped.
pub struct CamApp {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// How the emulated camera behaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CamAppSettings {
    pub model: CameraModel,
    /// Standard deviation of the pixel noise.
    pub noise_px: f64,
    /// Positions sent per second.
    pub rate_hz: f64,
    pub seed: u64,
}

impl Default for CamAppSettings {
    fn default() -> Self {
        CamAppSettings {
            model: CameraModel::default(),
            noise_px: 0.5,
            rate_hz: 25.0,
            seed: 0,
        }
    }
}

impl CamApp {
    /// Serves on `listener` until dropped.
    pub fn serve(
        listener: TcpListener,
        led: LedSource,
        settings: CamAppSettings,
    ) -> std::io::Result<Self> {
        let address = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let accept = {
            let (stop, clients) = (stop.clone(), clients.clone());
            std::thread::Builder::new()
                .name("camapp-accept".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match listener.accept() {
                            Ok((stream, _)) => {
                                let _ = stream.set_nodelay(true);
                                let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
                                clients
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push(stream);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(5)),
                        }
                    }
                })?
        };
        let stream = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("camapp-stream".into())
                .spawn(move || {
                    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
                    let period = Duration::from_secs_f64(1.0 / settings.rate_hz.clamp(0.1, 1000.0));
                    let mut next = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(line) = pixel_line(&led, &settings, &mut rng) {
                            // A client that went away (or stalls) is dropped; the
                            // others keep their stream.
                            clients
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .retain_mut(|c| c.write_all(line.as_bytes()).is_ok());
                        }
                        next += period;
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                })?
        };
        Ok(CamApp {
            address,
            stop,
            threads: vec![accept, stream],
        })
    }

    #[must_use]
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

/// The line CamApp sends for the LED now, if it sees it.
fn pixel_line(led: &LedSource, settings: &CamAppSettings, rng: &mut ChaCha8Rng) -> Option<String> {
    let p = settings.model.project(led()?)?;
    let noisy = [
        p[0] + gaussian(rng) * settings.noise_px,
        p[1] + gaussian(rng) * settings.noise_px,
    ];
    let pixel = [noisy[0].round(), noisy[1].round()];
    CameraModel::in_image(pixel).then(|| format!("{} {}\n", pixel[0] as i64, pixel[1] as i64))
}

/// A standard normal draw (Box–Muller).
fn gaussian(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl Drop for CamApp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
