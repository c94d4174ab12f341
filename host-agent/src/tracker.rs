//! A client for a CamApp LED tracker (thesis 5.1.2, C.2.5): it reads the
//! stream of `x y` pixel lines over TCP on a background thread, converts
//! each to metres on the floor with a [`CameraModel`] at the LED's height,
//! and keeps the latest fix. It reconnects whenever the connection drops.
//!
//! Bad input never becomes a position: a line that is not two integers in
//! range (0–639, 0–479), or is longer than any valid line, is counted and
//! skipped.

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use yamor_core::camera::{CameraModel, IMAGE_HEIGHT, IMAGE_WIDTH};

use crate::backend::HostError;
use crate::serial::PositionSource;

/// One position from the tracker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fix {
    /// Floor position of the LED (m).
    pub x: f64,
    pub y: f64,
    /// What CamApp sent.
    pub pixel: [u16; 2],
    /// When it arrived.
    pub at: Instant,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TrackerError {
    #[error("no LED position from CamApp at {address} for {seconds:.1} s")]
    NoFix { address: String, seconds: f64 },
}

#[derive(Default)]
struct State {
    latest: Option<Fix>,
    garbage: u64,
    connections: u64,
}

/// A running CamApp client; stops when dropped.
pub struct Tracker {
    address: String,
    shared: Arc<(Mutex<State>, Condvar)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Longest valid line, `639 479\r\n`, with room for spaces.
const MAX_LINE: usize = 32;

impl Tracker {
    /// Starts reading from `address` (host:port); the LED rides
    /// `led_height` metres above the floor.
    pub fn connect(address: &str, model: CameraModel, led_height: f64) -> Self {
        let shared: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (address, shared, stop) = (address.to_owned(), shared.clone(), stop.clone());
            std::thread::Builder::new()
                .name("camapp-client".into())
                .spawn(move || run(&address, &model, led_height, &shared, &stop))
                .expect("spawning a thread")
        };
        Tracker {
            address: address.to_owned(),
            shared,
            stop,
            thread: Some(thread),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[must_use]
    pub fn latest(&self) -> Option<Fix> {
        self.state().latest
    }

    /// Lines skipped as garbage so far.
    #[must_use]
    pub fn garbage(&self) -> u64 {
        self.state().garbage
    }

    /// Connections made so far (1 unless it had to reconnect).
    #[must_use]
    pub fn connections(&self) -> u64 {
        self.state().connections
    }

    /// The first fix received after `after`, waiting up to `timeout`.
    pub fn wait_fresh(&self, after: Instant, timeout: Duration) -> Result<Fix, TrackerError> {
        let deadline = Instant::now() + timeout;
        let mut state = self.state();
        loop {
            if let Some(fix) = state.latest
                && fix.at > after
            {
                return Ok(fix);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TrackerError::NoFix {
                    address: self.address.clone(),
                    seconds: timeout.as_secs_f64(),
                });
            }
            state = self
                .shared
                .1
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl PositionSource for Tracker {
    fn fix_after(&self, after: Instant, timeout: Duration) -> Result<(f64, f64), HostError> {
        self.wait_fresh(after, timeout)
            .map(|f| (f.x, f.y))
            .map_err(|e| HostError::Failed(e.to_string()))
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

/// A CamApp line as a pixel, or `None` for garbage.
#[must_use]
pub fn parse_line(line: &[u8]) -> Option<[u16; 2]> {
    let text = std::str::from_utf8(line).ok()?.trim();
    let mut parts = text.split([' ', ',', '\t']).filter(|p| !p.is_empty());
    let x: u16 = parts.next()?.parse().ok()?;
    let y: u16 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || f64::from(x) >= IMAGE_WIDTH || f64::from(y) >= IMAGE_HEIGHT {
        return None;
    }
    Some([x, y])
}

fn run(
    address: &str,
    model: &CameraModel,
    led_height: f64,
    shared: &(Mutex<State>, Condvar),
    stop: &AtomicBool,
) {
    let mut warned = false;
    while !stop.load(Ordering::Relaxed) {
        let stream = address
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_millis(500)).ok());
        let Some(mut stream) = stream else {
            if !warned {
                tracing::warn!("CamApp at {address} is not reachable; retrying");
                warned = true;
            }
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        warned = false;
        let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
        shared
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .connections += 1;
        let mut line: Vec<u8> = Vec::with_capacity(MAX_LINE);
        let mut overlong = false;
        let mut buf = [0u8; 1024];
        while !stop.load(Ordering::Relaxed) {
            let n = match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue;
                }
                Err(_) => break,
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
                let parsed = if overlong { None } else { parse_line(&line) };
                let mut state = shared.0.lock().unwrap_or_else(|e| e.into_inner());
                match parsed {
                    Some(pixel) => {
                        let [x, y] =
                            model.unproject([f64::from(pixel[0]), f64::from(pixel[1])], led_height);
                        state.latest = Some(Fix {
                            x,
                            y,
                            pixel,
                            at: Instant::now(),
                        });
                        shared.1.notify_all();
                    }
                    None => {
                        state.garbage += 1;
                        if state.garbage.is_power_of_two() {
                            tracing::warn!(
                                garbage = state.garbage,
                                "CamApp at {address} sent lines that are not pixel pairs"
                            );
                        }
                    }
                }
                line.clear();
                overlong = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_two_integers_in_the_image_are_pixels() {
        assert_eq!(parse_line(b"320 240"), Some([320, 240]));
        assert_eq!(parse_line(b" 0,479\r"), Some([0, 479]));
        for bad in [
            &b"640 10"[..],
            b"10 480",
            b"-1 5",
            b"1 2 3",
            b"12",
            b"x y",
            b"",
            b"\xff\xfe",
            b"1.5 2",
        ] {
            assert_eq!(parse_line(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
