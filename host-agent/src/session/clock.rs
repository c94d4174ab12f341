//! Time for `Sleep` on the real clock: the wall-clock seam and the pacing
//! of virtual time against it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::model::SessionError;

use super::RobotLink;

/// The wall clock a `Sleep` on the real clock keeps pace with. A seam so
/// that tests can check the pacing without waiting for it or measuring it.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
    /// Blocks for about `duration`; the caller checks for cancellation
    /// between calls, so long waits come as short ones.
    fn sleep(&self, duration: Duration);
}

/// The machine's own clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// Virtual time between two wall-clock checks of a paced sleep (s).
const PACE_STEP: f64 = 0.05;

/// Advances `link` by `seconds` of virtual time, never ahead of the wall
/// clock. Chunks are sized from the link's own clock so tick rounding does
/// not accumulate.
pub(super) fn paced(
    link: &mut dyn RobotLink,
    clock: &dyn Clock,
    seconds: f64,
    cancel: &AtomicBool,
) -> Result<(), SessionError> {
    let start = link.elapsed();
    let started = clock.now();
    loop {
        let before = link.elapsed();
        let left = start + seconds - before;
        if left <= 0.0 {
            return Ok(());
        }
        link.advance(left.min(PACE_STEP), cancel)?;
        if link.elapsed() <= before {
            // Less than a tick was left.
            return Ok(());
        }
        let now = clock.now();
        let ahead = (link.elapsed() - start) - now.duration_since(started).as_secs_f64();
        let until = now + Duration::from_secs_f64(ahead.max(0.0));
        while let Some(wait) = until.checked_duration_since(clock.now()) {
            if cancel.load(Ordering::Relaxed) {
                return Err(SessionError::Cancelled);
            }
            if wait.is_zero() {
                break;
            }
            clock.sleep(wait.min(Duration::from_millis(20)));
        }
    }
}
