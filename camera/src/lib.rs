//! The LED tracking set-up of the real YaMoR robot (thesis 4.2.1, 5.1.2,
//! C.2.5): a camera looking down on the floor, whose CamApp streams the
//! pixel of the robot's LED over TCP.
//!
//! Nothing here knows the robot or the simulator: a real-robot host uses
//! [`tracker`] without linking any physics, and the emulator takes the LED's
//! position from a closure.
//!
//! # Layout
//! - [`model`]: [`CameraModel`], floor to pixels and back with barrel
//!   distortion, and its Levenberg–Marquardt calibration.
//! - [`tracker`]: [`Tracker`], the CamApp client: reconnecting, robust to
//!   garbage, the latest fix for sync and async callers.
//! - [`camapp`]: an emulated CamApp streaming a [`CameraModel`]'s view of an
//!   LED, with seeded pixel noise.
//! - [`survey`]: the procedures of `yamor camera`: camera model, sample and
//!   point files; measuring floor points with a [`Tracker`]; calibrating
//!   with a residual report; watching and recording the tracker.
//! - [`cli`]: the arguments of `yamor camera` and the terminal around the
//!   survey procedures.
//! - [`PositionSource`]: what a real-robot host asks for a position.

pub mod camapp;
pub mod cli;
pub mod model;
pub mod survey;
pub mod tracker;

use std::time::{Duration, Instant};

pub use model::{CAMERA_HEIGHT, CameraModel, LED_HEIGHT};
pub use tracker::{Fix, Tracker, TrackerError};

/// Where the robot is on the floor, and which way it faces when that is
/// seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    pub x: f64,
    pub y: f64,
    /// The long axis' direction (rad, counter-clockwise from +x): seen
    /// only with a second LED on the robot.
    pub heading: Option<f64>,
}

/// Where the robot is on the floor: the LED tracker, or a stand-in in tests.
pub trait PositionSource: Send + Sync {
    /// The first position measured after `after`, waiting up to `timeout`;
    /// (x, y) in metres on the floor.
    fn fix_after(&self, after: Instant, timeout: Duration) -> Result<(f64, f64), TrackerError>;

    /// [`fix_after`](Self::fix_after) with the heading, when the source
    /// sees it.
    fn pose_after(&self, after: Instant, timeout: Duration) -> Result<Pose, TrackerError> {
        let (x, y) = self.fix_after(after, timeout)?;
        Ok(Pose {
            x,
            y,
            heading: None,
        })
    }
}
