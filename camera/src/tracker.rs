//! A client for a CamApp LED tracker (thesis 5.1.2, C.2.5): it reads the
//! stream of `x y` pixel lines over TCP on a background thread, converts
//! each to metres on the floor with a [`CameraModel`] at the LED's height,
//! and keeps the latest fix. It reconnects whenever the connection drops.
//!
//! Bad input never becomes a position: a line that is not two integers in
//! range (0–639, 0–479), is longer than any valid line, or is cut short by
//! the connection dropping is counted ([`TrackerStats::garbage`]), logged
//! (rate-limited) and skipped. The one thing a line protocol cannot catch is
//! garbage made only of digits glued to the front of a valid line.
//!
//! Synchronous callers use [`Tracker::wait_fresh`]; async ones
//! [`Tracker::wait_fresh_async`] or [`Tracker::subscribe`], which never
//! block a runtime thread.

use std::io::Read;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::CameraModel;
use tokio::sync::watch;

use crate::PositionSource;

/// One position from the tracker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fix {
    /// Floor position of the LED (m).
    pub x: f64,
    pub y: f64,
    /// Where the robot's long axis points on the floor (rad,
    /// counter-clockwise from +x): the direction from the LED to the
    /// robot's second LED, when CamApp sees one.
    pub heading: Option<f64>,
    /// What CamApp sent (the first LED's pixel).
    pub pixel: [u16; 2],
    /// When it arrived.
    pub at: Instant,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TrackerError {
    #[error("no LED position from CamApp at {address} for {seconds:.1} s")]
    NoFix { address: String, seconds: f64 },
}

/// Counters of the stream, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrackerStats {
    /// Valid lines, each a fix.
    pub fixes: u64,
    /// Lines skipped as not a pixel pair.
    pub garbage: u64,
    /// Connections made (1 unless it had to reconnect).
    pub connections: u64,
}

/// How the client connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackerOptions {
    /// Longest wait for one connection attempt.
    pub connect_timeout: Duration,
    /// Pause between failed attempts (and after a drop).
    pub retry_after: Duration,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            connect_timeout: Duration::from_secs(1),
            retry_after: Duration::from_millis(200),
        }
    }
}

struct Shared {
    stats: Mutex<TrackerStats>,
    /// The latest fix; also what async waiters watch.
    latest: watch::Sender<Option<Fix>>,
    /// Wakes synchronous waiters; paired with `stats` (a fix bumps both).
    fresh: Condvar,
}

/// A running CamApp client; stops when dropped.
pub struct Tracker {
    address: String,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Longest line accepted: `639 479\r\n` with room for a few extra spaces.
/// Anything longer is garbage, so a peer that never sends a line feed
/// cannot make the client buffer without bound.
pub const MAX_LINE: usize = 32;

/// How often the reader looks at the stop flag while the stream is silent.
const POLL: Duration = Duration::from_millis(100);

impl Tracker {
    /// Starts reading from `address` (host:port) with the default options;
    /// the LED rides `led_height` metres above the floor. Returns at once:
    /// connecting (and reconnecting) happens in the background, so a CamApp
    /// that starts later is picked up.
    pub fn connect(address: &str, model: CameraModel, led_height: f64) -> Self {
        Self::connect_with(address, model, led_height, TrackerOptions::default())
    }

    /// [`connect`](Self::connect) with explicit options.
    pub fn connect_with(
        address: &str,
        model: CameraModel,
        led_height: f64,
        options: TrackerOptions,
    ) -> Self {
        let shared = Arc::new(Shared {
            stats: Mutex::default(),
            latest: watch::Sender::new(None),
            fresh: Condvar::new(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let reader = Reader {
            address: address.to_owned(),
            model,
            led_height,
            options,
            shared: shared.clone(),
            stop: stop.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("camapp-client".into())
            .spawn(move || reader.run())
            // Without a thread there is no tracker at all; the OS refusing
            // one is not something a caller can handle better.
            .expect("spawning the CamApp client thread");
        Tracker {
            address: address.to_owned(),
            shared,
            stop,
            thread: Some(thread),
        }
    }

    #[must_use]
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The latest fix, however old.
    #[must_use]
    pub fn latest(&self) -> Option<Fix> {
        *self.shared.latest.borrow()
    }

    /// Every new fix, for async code (`changed().await`).
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Option<Fix>> {
        self.shared.latest.subscribe()
    }

    #[must_use]
    pub fn stats(&self) -> TrackerStats {
        *self.shared.stats.lock()
    }

    /// Lines skipped as garbage so far.
    #[must_use]
    pub fn garbage(&self) -> u64 {
        self.stats().garbage
    }

    /// Connections made so far (1 unless it had to reconnect).
    #[must_use]
    pub fn connections(&self) -> u64 {
        self.stats().connections
    }

    fn no_fix(&self, timeout: Duration) -> TrackerError {
        TrackerError::NoFix {
            address: self.address.clone(),
            seconds: timeout.as_secs_f64(),
        }
    }

    /// The first fix received after `after`, waiting up to `timeout`.
    /// Blocks the calling thread: from async code use
    /// [`wait_fresh_async`](Self::wait_fresh_async).
    pub fn wait_fresh(&self, after: Instant, timeout: Duration) -> Result<Fix, TrackerError> {
        let deadline = Instant::now() + timeout;
        let mut stats = self.shared.stats.lock();
        loop {
            if let Some(fix) = self.latest()
                && fix.at > after
            {
                return Ok(fix);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.no_fix(timeout));
            }
            self.shared.fresh.wait_for(&mut stats, left);
        }
    }

    /// [`wait_fresh`](Self::wait_fresh) for async code: waits on the watch
    /// channel, never blocking a runtime thread. Needs a tokio runtime with
    /// time enabled.
    pub async fn wait_fresh_async(
        &self,
        after: Instant,
        timeout: Duration,
    ) -> Result<Fix, TrackerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut fixes = self.subscribe();
        loop {
            if let Some(fix) = *fixes.borrow_and_update()
                && fix.at > after
            {
                return Ok(fix);
            }
            match tokio::time::timeout_at(deadline, fixes.changed()).await {
                Ok(Ok(())) => {}
                // The sender lives as long as `self`; a closed channel or
                // the deadline both mean no fix.
                Ok(Err(_)) | Err(_) => return Err(self.no_fix(timeout)),
            }
        }
    }
}

impl PositionSource for Tracker {
    fn fix_after(&self, after: Instant, timeout: Duration) -> Result<(f64, f64), TrackerError> {
        self.wait_fresh(after, timeout).map(|f| (f.x, f.y))
    }

    fn pose_after(&self, after: Instant, timeout: Duration) -> Result<crate::Pose, TrackerError> {
        self.wait_fresh(after, timeout).map(|f| crate::Pose {
            x: f.x,
            y: f.y,
            heading: f.heading,
        })
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A CamApp line (without its `\n`) as the LED's pixel and, when the line
/// has four numbers (`x y x2 y2`), the second LED's; `None` for garbage.
#[must_use]
pub fn parse_frame(line: &[u8]) -> Option<([u16; 2], Option<[u16; 2]>)> {
    if let Some(pixel) = parse_line(line) {
        return Some((pixel, None));
    }
    let text = std::str::from_utf8(line).ok()?;
    let numbers: Vec<&str> = text
        .split([' ', '\t', '\r'])
        .filter(|t| !t.is_empty())
        .collect();
    let [x, y, x2, y2] = numbers.as_slice() else {
        return None;
    };
    Some((pixel(x, y)?, Some(pixel(x2, y2)?)))
}

/// A CamApp line (without its `\n`) as a pixel, or `None` for garbage.
/// Accepts what the emulator sends (`x y`) and the obvious variants of a
/// hand-written tracker: tabs or several spaces, `x,y`, a trailing `\r`.
/// Numbers are plain decimal digits: no sign, no fraction, no exponent.
#[must_use]
pub fn parse_line(line: &[u8]) -> Option<[u16; 2]> {
    const BLANK: [char; 3] = [' ', '\t', '\r'];
    let text = std::str::from_utf8(line).ok()?.trim_matches(BLANK);
    let (x, y) = match text.split_once(',') {
        Some((x, y)) => (x.trim_matches(BLANK), y.trim_matches(BLANK)),
        None => {
            let (x, y) = text.split_once([' ', '\t'])?;
            (x, y.trim_start_matches(BLANK))
        }
    };
    pixel(x, y)
}

/// Two numbers of a CamApp line as a pixel inside the image: plain
/// decimal digits, at most four of them.
fn pixel(x: &str, y: &str) -> Option<[u16; 2]> {
    let number = |s: &str| -> Option<u16> {
        ((1..=4).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (x, y) = (number(x)?, number(y)?);
    (x < 640 && y < 480).then_some([x, y])
}

/// The background half: connects, reads, reconnects.
struct Reader {
    address: String,
    model: CameraModel,
    led_height: f64,
    options: TrackerOptions,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
}

impl Reader {
    fn run(&self) {
        // Only the first failure of a series is worth a warning.
        let mut failing = false;
        while !self.stopped() {
            match self.open() {
                Ok(stream) => {
                    if failing {
                        tracing::info!("CamApp at {} is reachable again", self.address);
                    }
                    failing = false;
                    self.shared.stats.lock().connections += 1;
                    let why = self.read(stream);
                    if !self.stopped() {
                        tracing::warn!("CamApp at {}: {why}; reconnecting", self.address);
                    }
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!(
                            "CamApp at {} is not reachable ({e}); retrying",
                            self.address
                        );
                    }
                    failing = true;
                }
            }
            self.pause(self.options.retry_after);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps, but not past a stop.
    fn pause(&self, how_long: Duration) {
        let until = Instant::now() + how_long;
        while !self.stopped() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(POLL));
        }
    }

    fn open(&self) -> std::io::Result<TcpStream> {
        // Resolved on every attempt: a host name may move.
        let addresses: Vec<SocketAddr> = self.address.to_socket_addrs()?.collect();
        let mut last = std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the address resolves to nothing",
        );
        for a in addresses {
            match TcpStream::connect_timeout(&a, self.options.connect_timeout) {
                Ok(stream) => {
                    stream.set_read_timeout(Some(POLL))?;
                    return Ok(stream);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Reads lines until the connection ends; says why it ended.
    fn read(&self, mut stream: TcpStream) -> String {
        let mut line: Vec<u8> = Vec::with_capacity(MAX_LINE);
        let mut overlong = false;
        let mut buf = [0u8; 4096];
        while !self.stopped() {
            let n = match stream.read(&mut buf) {
                Ok(0) => {
                    if !line.is_empty() || overlong {
                        // Cut short: never glued to the next connection's
                        // first line.
                        self.garbage(&line);
                    }
                    return "the connection was closed".into();
                }
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    continue;
                }
                Err(e) => return format!("reading failed ({e})"),
            };
            for &b in &buf[..n] {
                if b != b'\n' {
                    if line.len() < MAX_LINE {
                        line.push(b);
                    } else {
                        overlong = true;
                    }
                    continue;
                }
                match (overlong, parse_frame(&line)) {
                    (false, Some((pixel, second))) => self.fix(pixel, second),
                    _ => self.garbage(&line),
                }
                line.clear();
                overlong = false;
            }
        }
        "stopped".into()
    }

    fn fix(&self, pixel: [u16; 2], second: Option<[u16; 2]>) {
        let floor = |p: [u16; 2]| {
            self.model
                .unproject([f64::from(p[0]), f64::from(p[1])], self.led_height)
        };
        let [x, y] = floor(pixel);
        // Both LEDs at the same height: the line between them on the floor
        // is the robot's long axis.
        let heading = second.map(|p| {
            let [x2, y2] = floor(p);
            (y2 - y).atan2(x2 - x)
        });
        let fix = Fix {
            x,
            y,
            heading,
            pixel,
            at: Instant::now(),
        };
        // Under the stats lock, so a synchronous waiter that has just
        // checked `latest` cannot miss the wake-up.
        let mut stats = self.shared.stats.lock();
        stats.fixes += 1;
        self.shared.latest.send_replace(Some(fix));
        self.shared.fresh.notify_all();
    }

    fn garbage(&self, line: &[u8]) {
        let count = {
            let mut stats = self.shared.stats.lock();
            stats.garbage += 1;
            stats.garbage
        };
        // Rate-limited: a stream of noise must not become a stream of logs.
        if count.is_power_of_two() {
            let shown: String = String::from_utf8_lossy(line)
                .escape_debug()
                .take(40)
                .collect();
            tracing::warn!(
                garbage = count,
                "CamApp at {} sent a line that is not a pixel pair (x 0–639, y 0–479), skipped: \"{shown}\"",
                self.address
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_two_integers_in_the_image_are_pixels() {
        for (good, pixel) in [
            (&b"320 240"[..], [320, 240]),
            (b" 0,479\r", [0, 479]),
            (b"639\t479", [639, 479]),
            (b"12   34 ", [12, 34]),
            (b"7 , 8", [7, 8]),
            (b"007 08", [7, 8]),
        ] {
            assert_eq!(
                parse_line(good),
                Some(pixel),
                "{:?}",
                String::from_utf8_lossy(good)
            );
        }
        for bad in [
            &b"640 10"[..],
            b"10 480",
            b"-1 5",
            b"+1 5",
            b"1 2 3",
            b"1,2,3",
            b"1, 2 3",
            b"12",
            b"x y",
            b"",
            b"\r",
            b"\xff\xfe",
            b"1.5 2",
            b"1e2 3",
            b"00001 2",
            b"65536 1",
            b"3 4x",
            b"\x003 4",
        ] {
            assert_eq!(parse_line(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_frame_is_one_pixel_pair_or_two() {
        assert_eq!(parse_frame(b"7 , 8"), Some(([7, 8], None)));
        assert_eq!(
            parse_frame(b"320 240 330 238\r"),
            Some(([320, 240], Some([330, 238])))
        );
        for bad in [
            &b"1 2 3"[..],
            b"1 2 3 4 5",
            b"1 2 640 4",
            b"1,2,3,4",
            b"1 2 3 x",
        ] {
            assert_eq!(parse_frame(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
