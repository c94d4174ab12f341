//! YaMoR's real-robot path without the robot, in one process: an emulated
//! robot behind a pseudo-terminal, an emulated CamApp watching its LEDs,
//! the tracker, and the serial backend that drives and measures it —
//! what `yamor emulate --camapp` and `yamor host --serial --camapp` run as
//! two processes. Tests and `yamor lifelong reset-free` share this one
//! set-up.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use yamor_camera::camapp::{CamApp, CamAppError, CamAppSettings, Leds};
use yamor_camera::{Fix, LED_HEIGHT, PositionSource, Tracker, TrackerError};
use yamor_sim::Simulation;
use yamor_sim::serial_robot::{EmulatedRobot, EmulationError, EmulationSettings};

use yamor_host_agent::HostError;
use yamor_host_agent::serial::{SerialBackend, SerialSettings};

/// Why the emulated set-up did not start.
#[derive(Debug, thiserror::Error)]
pub enum RigError {
    #[error("the emulated robot: {0}")]
    Robot(#[from] EmulationError),
    #[error("the emulated camera: {0}")]
    Camera(#[from] CamAppError),
    #[error("the emulated camera: {0}")]
    Io(#[from] std::io::Error),
    #[error("the emulated camera does not see the robot: {0}")]
    NotSeen(#[from] TrackerError),
    #[error("the serial backend: {0}")]
    Backend(#[from] HostError),
}

/// What the camera looks at on `robot`: its LED, and the second one,
/// dark unless the robot carries it ([`EmulationSettings::heading_led`]).
#[must_use]
pub fn leds(robot: &EmulatedRobot) -> Leds {
    Leds {
        position: Box::new(robot.led()),
        heading: Some(Box::new(robot.heading_led())),
    }
}

/// An emulated robot, watched and driven.
pub struct EmulatedRig {
    pub robot: EmulatedRobot,
    /// Serving while the rig lives.
    pub camapp: CamApp,
    pub tracker: Arc<Tracker>,
    pub backend: Arc<SerialBackend>,
    /// Where the camera first saw the robot.
    pub start: Fix,
}

impl EmulatedRig {
    /// Starts `sim` as an emulated robot, a CamApp on a free loopback port
    /// watching it through `camera`, and the serial backend on the robot's
    /// pseudo-terminal with `serial`'s settings (its port and time scale
    /// are the emulation's); returns once the camera has seen the robot.
    pub async fn start(
        sim: Simulation,
        emulation: EmulationSettings,
        camera: CamAppSettings,
        serial: SerialSettings,
    ) -> Result<Self, RigError> {
        let robot = EmulatedRobot::spawn(sim, emulation)?;
        let camapp = CamApp::serve_leds(TcpListener::bind("127.0.0.1:0")?, leds(&robot), camera)?;
        let tracker = Arc::new(Tracker::connect(
            &camapp.address().to_string(),
            camera.model,
            LED_HEIGHT,
        ));
        let start = tracker
            .wait_fresh_async(Instant::now(), Duration::from_secs(10))
            .await?;
        let backend = Arc::new(SerialBackend::new(
            SerialSettings {
                port: robot.path().to_owned(),
                time_scale: emulation.time_scale,
                ..serial
            },
            Some(tracker.clone() as Arc<dyn PositionSource>),
        )?);
        Ok(EmulatedRig {
            robot,
            camapp,
            tracker,
            backend,
            start,
        })
    }
}
