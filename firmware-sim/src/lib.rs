//! The simulated YaMoR robot.
//!
//! Module firmware (control flags, limit angles, CPG parameters, the
//! oscillators of thesis 6.1) runs inside a rapier3d world; a Webots-style
//! supervisor answers the special commands of thesis 5.4; the bridge serves
//! both over TCP with the SNP framing of `docs/snp.md`.
//!
//! # Layout
//! - The wire format is the `yamor_snp` crate.
//! - [`firmware`]: what one module does with each SNP message.
//! - [`geometry`]: module dimensions, masses, servo figures and connector
//!   frames; the placement rule of thesis 5.4.2.
//! - [`physics`]: the [`physics::Physics`] seam, rigid clusters joined by
//!   servo hinges, and the engines behind it ([`physics::Engine`]).
//! - [`mjcf`]: the robot as a MuJoCo model, for the peer benchmark.
//! - [`sim`]: [`Simulation`], the device loop (read sensors → integrate
//!   oscillators → write servos → step) and the supervisor commands.
//! - [`evaluate`]: gait evaluation as in thesis 6.2.1 and trajectories.
//! - [`family`]: YaMoR as a `yamor_core::family::RobotFamily`: its
//!   examples, its documents, walks and replays through the simulator.
//! - [`replay`]: a walk recorded for watching, every box's pose per frame.
//! - [`bridge`]: the TCP server playing the YaMoR Webots Bridge.
//! - [`robots`]: the example robots of `examples/robots`, embedded.
//! - [`serial_robot`]: the robot behind a pseudo-terminal, as the real-robot
//!   backend sees it over a serial line.
//! - `cli` (feature `clap`): `yamor sim`, `yamor bridge` and `yamor robots`.

mod behaviour;
pub mod bridge;
#[cfg(feature = "clap")]
pub mod cli;
pub mod evaluate;
pub mod family;
pub mod firmware;
pub mod geometry;
mod hardware;
pub mod mjcf;
pub mod physics;
pub mod replay;
pub mod robots;
pub mod serial_robot;
pub mod sim;

pub use evaluate::{
    evaluate, evaluate_cancellable, evaluate_observed, evaluate_starts, write_trajectory_csv,
};
pub use hardware::EMULATED_HARDWARE;
pub use sim::{SimError, SimSettings, Simulation};
