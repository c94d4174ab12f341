//! An emulated CamApp (thesis 5.1.2): a TCP server that streams where the
//! camera sees the robot's LED, as integer pixel pairs, to every client.
//!
//! Wire format (the thesis only says "a continuous stream of integer pixel
//! pairs", x in 0–639, y in 0–479): one ASCII line per camera frame,
//! `x y\n` — two decimal integers, one space, a line feed, nothing else.
//! Every connected client gets the same frames, at `rate_hz`.
//!
//! When the LED is not visible (no position, or outside the image after the
//! noise) the frame sends nothing: a tracker that finds no lit LED has no
//! pair of pixels to report, and a sentinel such as `-1 -1` would be a
//! number a careless client could take for a position. A client knows the
//! LED is lost by the silence (`wait_fresh` times out).
//!
//! A robot may carry a second LED along its long axis, so that the camera
//! sees which way it faces as well as where it is (one LED's track tells a
//! heading only from how the robot moved, which a chaotic gait makes a
//! poor guess). Its frames carry both pixels on one line, the position
//! LED first: `x y x2 y2\n`. A frame where the second LED is not seen
//! sends the first alone, as a one-LED CamApp does.
//!
//! The pixel is the LED's world position through a [`CameraModel`]
//! (distortion included), plus seeded Gaussian pixel noise, rounded to the
//! nearest integer as a blob centroid reported in whole pixels would be.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::{CameraModel, LED_HEIGHT};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Where the LED is now (world metres), or `None` when it is dark.
pub type LedSource = Box<dyn Fn() -> Option<[f64; 3]> + Send + Sync>;

/// What the camera looks at: the LED whose position is the robot's, and
/// optionally a second one whose direction from the first is the robot's
/// heading.
pub struct Leds {
    pub position: LedSource,
    pub heading: Option<LedSource>,
}

impl From<LedSource> for Leds {
    fn from(position: LedSource) -> Self {
        Leds {
            position,
            heading: None,
        }
    }
}

/// An LED `radius` m around the origin at [`LED_HEIGHT`], circling at
/// 0.3 rad/s (a turn in about 21 s) from now.
#[must_use]
pub fn circling(radius: f64) -> LedSource {
    let started = Instant::now();
    Box::new(move || {
        let t = started.elapsed().as_secs_f64() * 0.3;
        Some([radius * t.cos(), radius * t.sin(), LED_HEIGHT])
    })
}

/// Why the emulated CamApp did not start.
#[derive(Debug, thiserror::Error)]
pub enum CamAppError {
    #[error("CamApp settings: {0}")]
    Settings(String),
    #[error("CamApp: {0}")]
    Io(#[from] std::io::Error),
    #[error("binding {address}: {error}")]
    Bind {
        address: SocketAddr,
        error: std::io::Error,
    },
}

/// How the emulated camera behaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CamAppSettings {
    pub model: CameraModel,
    /// Standard deviation of the pixel noise (pixels, ≥ 0).
    pub noise_px: f64,
    /// Frames per second (0 < rate ≤ 1000).
    pub rate_hz: f64,
    /// Seed of the noise: the same seed gives the same frame sequence.
    pub seed: u64,
}

impl Default for CamAppSettings {
    /// 25 frames/s, a PAL camera's rate; half a pixel of noise, about what
    /// a blob centroid of a small LED wobbles by.
    fn default() -> Self {
        CamAppSettings {
            model: CameraModel::default(),
            noise_px: 0.5,
            rate_hz: 25.0,
            seed: 0,
        }
    }
}

impl CamAppSettings {
    /// The default rate with this camera, noise (px) and seed.
    #[must_use]
    pub fn new(model: CameraModel, noise_px: f64, seed: u64) -> Self {
        CamAppSettings {
            model,
            noise_px,
            seed,
            ..CamAppSettings::default()
        }
    }

    fn check(&self) -> Result<(), CamAppError> {
        if !(self.noise_px.is_finite() && self.noise_px >= 0.0) {
            return Err(CamAppError::Settings(format!(
                "noise_px must be a finite number ≥ 0, got {}",
                self.noise_px
            )));
        }
        if !(self.rate_hz > 0.0 && self.rate_hz <= 1000.0) {
            return Err(CamAppError::Settings(format!(
                "rate_hz must be in (0, 1000], got {}",
                self.rate_hz
            )));
        }
        self.model
            .check()
            .map_err(|e| CamAppError::Settings(e.to_string()))
    }
}

/// Frames a slow client may have queued before it misses some: a camera
/// does not wait for its readers, and one stalled reader must not hold up
/// the others.
const QUEUE: usize = 16;

/// A client stalled longer than this in one write is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the accept loop looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

struct Client {
    frames: SyncSender<Arc<str>>,
    writer: JoinHandle<()>,
}

/// The running emulated CamApp; stops when dropped or [shut down](Self::shutdown).
pub struct CamApp {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    clients: Arc<Mutex<Vec<Client>>>,
    threads: Vec<JoinHandle<()>>,
}

impl CamApp {
    /// Binds `address` (port 0: any free port) and [serves](Self::serve) there.
    pub fn bind(
        address: SocketAddr,
        leds: Leds,
        settings: CamAppSettings,
    ) -> Result<Self, CamAppError> {
        let listener =
            TcpListener::bind(address).map_err(|error| CamAppError::Bind { address, error })?;
        Self::serve_leds(listener, leds, settings)
    }

    /// Serves frames of `led` on `listener` until shut down.
    pub fn serve(
        listener: TcpListener,
        led: LedSource,
        settings: CamAppSettings,
    ) -> Result<Self, CamAppError> {
        Self::serve_leds(listener, led.into(), settings)
    }

    /// Serves frames of both `leds` on `listener` until shut down.
    pub fn serve_leds(
        listener: TcpListener,
        leds: Leds,
        settings: CamAppSettings,
    ) -> Result<Self, CamAppError> {
        settings.check()?;
        let address = listener.local_addr()?;
        // Non-blocking so that the accept loop can notice the stop flag.
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Arc<Mutex<Vec<Client>>> = Arc::default();
        let accept = {
            let (stop, clients) = (stop.clone(), clients.clone());
            std::thread::Builder::new()
                .name("camapp-accept".into())
                .spawn(move || accept_loop(&listener, &stop, &clients))?
        };
        let frames = {
            let (stop, clients) = (stop.clone(), clients.clone());
            std::thread::Builder::new()
                .name("camapp-frames".into())
                .spawn(move || frame_loop(&leds, &settings, &stop, &clients))?
        };
        Ok(CamApp {
            address,
            stop,
            clients,
            threads: vec![accept, frames],
        })
    }

    #[must_use]
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Clients connected now (as far as CamApp knows: a client that left is
    /// noticed at the next frame sent to it).
    #[must_use]
    pub fn clients(&self) -> usize {
        self.clients.lock().len()
    }

    /// Stops serving and closes every connection.
    pub fn shutdown(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Dropping the senders ends each writer after its queued frames.
        let writers: Vec<JoinHandle<()>> =
            self.clients.lock().drain(..).map(|c| c.writer).collect();
        for w in writers {
            let _ = w.join();
        }
    }
}

impl Drop for CamApp {
    fn drop(&mut self) {
        self.stop_all();
    }
}

fn accept_loop(listener: &TcpListener, stop: &AtomicBool, clients: &Mutex<Vec<Client>>) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                let spawned = (|| -> std::io::Result<Client> {
                    stream.set_nonblocking(false)?;
                    stream.set_nodelay(true)?;
                    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
                    let (frames, queue) = std::sync::mpsc::sync_channel(QUEUE);
                    let writer = std::thread::Builder::new()
                        .name("camapp-client".into())
                        .spawn(move || write_loop(stream, &queue))?;
                    Ok(Client { frames, writer })
                })();
                match spawned {
                    Ok(client) => clients.lock().push(client),
                    Err(e) => tracing::warn!("CamApp: dropping client {peer}: {e}"),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(e) => {
                // Usually a client that reset before being accepted; the
                // listener itself is fine.
                tracing::debug!("CamApp accept: {e}");
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

/// Sends one client its frames until it leaves or CamApp stops.
fn write_loop(mut stream: TcpStream, queue: &Receiver<Arc<str>>) {
    while let Ok(line) = queue.recv() {
        if stream.write_all(line.as_bytes()).is_err() {
            return;
        }
    }
}

fn frame_loop(
    leds: &Leds,
    settings: &CamAppSettings,
    stop: &AtomicBool,
    clients: &Mutex<Vec<Client>>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let period = Duration::from_secs_f64(1.0 / settings.rate_hz);
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let second = leds.heading.as_ref().and_then(|led| led());
        if let Some(line) = frame((leds.position)(), second, settings, &mut rng) {
            let line: Arc<str> = line.into();
            // A full queue is a slow reader: it misses this frame. A
            // disconnected one is a writer that ended: the client left.
            clients.lock().retain(|c| {
                !matches!(
                    c.frames.try_send(line.clone()),
                    Err(TrySendError::Disconnected(_))
                )
            });
        }
        next += period;
        let now = Instant::now();
        if next < now {
            // Running late (a slow machine): skip frames rather than burst.
            next = now;
        }
        std::thread::sleep(next - now);
    }
}

/// The line CamApp sends for an LED at `led` (and a second at `second`),
/// if it sees it.
fn frame(
    led: Option<[f64; 3]>,
    second: Option<[f64; 3]>,
    settings: &CamAppSettings,
    rng: &mut ChaCha8Rng,
) -> Option<String> {
    let mut seen = |led: [f64; 3]| {
        let p = settings.model.project(led)?;
        let pixel = [
            (p[0] + gaussian(rng) * settings.noise_px).round(),
            (p[1] + gaussian(rng) * settings.noise_px).round(),
        ];
        // The noise may push a point at the edge out: then CamApp has lost it.
        CameraModel::in_image(pixel).then_some([pixel[0] as u16, pixel[1] as u16])
    };
    let [x, y] = seen(led?)?;
    Some(match second.and_then(seen) {
        Some([x2, y2]) => format!("{x} {y} {x2} {y2}\n"),
        None => format!("{x} {y}\n"),
    })
}

/// A standard normal draw (Box–Muller; rand_distr is not a dependency).
fn gaussian(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};

    fn serve(led: Arc<Mutex<Option<[f64; 3]>>>, noise_px: f64) -> CamApp {
        CamApp::serve(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            Box::new(move || *led.lock()),
            CamAppSettings {
                noise_px,
                rate_hz: 200.0,
                ..CamAppSettings::default()
            },
        )
        .unwrap()
    }

    fn client(server: &CamApp) -> BufReader<TcpStream> {
        let stream = TcpStream::connect(server.address()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        BufReader::new(stream)
    }

    /// The next line, parsed strictly as the wire format says.
    fn next_pixel(reader: &mut BufReader<TcpStream>) -> [u16; 2] {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let body = line.strip_suffix('\n').expect("a whole line");
        let (x, y) = body.split_once(' ').expect("two numbers");
        let pixel = [x.parse().unwrap(), y.parse().unwrap()];
        assert!(pixel[0] < 640 && pixel[1] < 480, "{pixel:?}");
        pixel
    }

    #[test]
    fn every_client_gets_the_led_and_one_leaving_does_not_disturb_the_others() {
        let world = [0.6, -0.4, 0.05];
        let server = serve(Arc::new(Mutex::new(Some(world))), 0.0);
        let expected = CameraModel::default().project(world).unwrap();
        let expected = [expected[0].round() as u16, expected[1].round() as u16];
        let mut a = client(&server);
        let mut b = client(&server);
        let c = client(&server);
        assert_eq!(next_pixel(&mut a), expected);
        assert_eq!(next_pixel(&mut b), expected);
        drop(c);
        drop(a);
        // b keeps its stream while CamApp notices the others left.
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.clients() > 1 {
            assert_eq!(next_pixel(&mut b), expected);
            assert!(Instant::now() < deadline, "{} clients", server.clients());
        }
        for _ in 0..20 {
            assert_eq!(next_pixel(&mut b), expected);
        }
        // A late client joins the same stream.
        let mut d = client(&server);
        assert_eq!(next_pixel(&mut d), expected);
    }

    #[test]
    fn a_dark_or_unseen_led_sends_nothing() {
        let led = Arc::new(Mutex::new(None));
        let server = serve(led.clone(), 0.5);
        let mut reader = client(&server);
        reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut line = String::new();
        let silent = reader.read_line(&mut line).unwrap_err();
        assert!(
            matches!(
                silent.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{silent}"
        );
        // 3 m to the side is outside the image: still nothing.
        *led.lock() = Some([3.0, 0.0, 0.05]);
        assert!(reader.read_line(&mut line).is_err() && line.is_empty());
        // In view again: the stream resumes.
        *led.lock() = Some([0.0, 0.0, 0.05]);
        reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(next_pixel(&mut reader), [320, 240]);
    }

    #[test]
    fn the_noise_is_gaussian_around_the_true_pixel_and_seeded() {
        let settings = CamAppSettings {
            noise_px: 2.0,
            ..CamAppSettings::default()
        };
        let led = [0.3, 0.2, 0.05];
        let world = Some(led);
        let truth = settings.model.project(led).unwrap();
        let draw = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..4000)
                .map(|_| {
                    let line = frame(world, None, &settings, &mut rng).unwrap();
                    let (x, y) = line.trim_end().split_once(' ').unwrap();
                    [x.parse::<f64>().unwrap(), y.parse::<f64>().unwrap()]
                })
                .collect::<Vec<_>>()
        };
        let pixels = draw(3);
        assert_eq!(pixels, draw(3), "the same seed, the same frames");
        assert_ne!(pixels, draw(4));
        for axis in 0..2 {
            let n = pixels.len() as f64;
            let mean = pixels.iter().map(|p| p[axis]).sum::<f64>() / n;
            let sd = (pixels.iter().map(|p| (p[axis] - mean).powi(2)).sum::<f64>() / n).sqrt();
            assert!(
                (mean - truth[axis]).abs() < 0.1,
                "axis {axis}: mean {mean} vs {truth:?}"
            );
            // Rounding adds 1/12 px² of variance.
            let expected = (4.0_f64 + 1.0 / 12.0).sqrt();
            assert!((sd - expected).abs() < 0.1, "axis {axis}: sd {sd}");
        }
    }

    #[test]
    fn impossible_settings_are_refused() {
        for settings in [
            CamAppSettings {
                rate_hz: 0.0,
                ..CamAppSettings::default()
            },
            CamAppSettings {
                noise_px: f64::NAN,
                ..CamAppSettings::default()
            },
        ] {
            let error = CamApp::serve(
                TcpListener::bind("127.0.0.1:0").unwrap(),
                Box::new(|| None),
                settings,
            )
            .err()
            .unwrap();
            assert!(matches!(error, CamAppError::Settings(_)), "{error}");
        }
    }

    #[test]
    fn binding_a_taken_address_names_it() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = taken.local_addr().unwrap();
        let error = CamApp::bind(address, circling(1.0).into(), CamAppSettings::default())
            .err()
            .unwrap();
        assert!(
            error
                .to_string()
                .starts_with(&format!("binding {address}: ")),
            "{error}"
        );
        let any = "127.0.0.1:0".parse().unwrap();
        let server = CamApp::bind(any, circling(1.0).into(), CamAppSettings::default()).unwrap();
        assert_ne!(server.address().port(), 0);
    }

    #[test]
    fn the_circling_led_keeps_its_radius_and_height() {
        let led = circling(2.0);
        for _ in 0..3 {
            let [x, y, z] = led().unwrap();
            assert!((x.hypot(y) - 2.0).abs() < 1e-9, "({x}, {y})");
            assert_eq!(z, LED_HEIGHT);
        }
    }

    #[test]
    fn shutting_down_closes_the_connections() {
        let server = serve(Arc::new(Mutex::new(None)), 0.0);
        let mut reader = client(&server);
        server.shutdown();
        let mut line = String::new();
        // End of stream (or a reset), not a timeout.
        match reader.read_line(&mut line) {
            Ok(n) => assert_eq!(n, 0),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }
}
