//! A reduced-coordinate rigid-body engine for robots made of one-hinge
//! modules: trees of rigid bodies joined by servo hinges, standing on a
//! ground plane.
//!
//! What it models, and what a general engine would add that these robots
//! do not need: bodies are unions of solid boxes; each tree has a floating
//! root and one angle per hinge, so joints never drift apart; servos are PD
//! laws with a torque limit, integrated implicitly; hinges stop at their
//! limits; box corners touch the ground with Coulomb friction; a hinge
//! that closes a kinematic loop is five stiff constraint rows plus its servo
//! and stops; a weld (a lock added while the world runs) is six. A body may
//! touch the ground with sampled surface points instead of its boxes'
//! corners. Boxes of the robot do not collide with each other.
//!
//! # Layout
//! - [`model`]: bodies, boxes, hinges, loop hinges and welds; mass
//!   properties.
//! - [`world`]: the state and the step (see its docs for the algorithm).
//! - `spatial`: 6-D vectors and inertias in world axes.

pub mod model;
mod spatial;
pub mod world;

pub use model::{Anchor, BodySpec, Hinge, LoopHinge, Model, ModelError, SolidBox, Weld};
pub use world::{BodyState, Servo, Settings, WeldId, World};
