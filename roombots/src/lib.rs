//! Roombots: the three-joint modules that walk and rebuild themselves into
//! furniture (seeds 002 and 003), beside YaMoR's one-servo modules.
//!
//! # Layout
//! - [`module`]: one module's geometry, connectors, frames and forward
//!   kinematics.
//! - [`chain`]: modules joined connector to connector — the four
//!   connection types, the meta-module, any tree of modules.
//! - [`collision`]: whether a pose runs the modules into each other or the
//!   floor, against their shape.
//! - [`ik`]: inverse kinematics of a meta-module (ours, and the variants
//!   the seed tried).
//! - [`reach`]: the reachability of grid targets by exhaustive enumeration
//!   of the joint space, and the seed's §5.3 experiment.
//! - [`experiment`]: 002 §5.3 rebuilt, every IK variant over the plane.
//! - [`supervisor`]: the supervisor language of 002 App. B, read with
//!   clear errors.
//! - [`path`]: the [`path::PathPlanner`]: a way through joint space
//!   between two poses that keeps the cubes clear all along (the straight
//!   line, else RRT-Connect).
//! - [`stage`]: the kinematic [`stage::Stage`]: supervisor commands played
//!   kinematically on a floor of connectors (locks, the inchworm
//!   hand-over, every pose checked).
//! - [`enactment`]: the same commands on simulated meta-modules (one or
//!   several in one world), the bounding trial driving their servos.
//! - [`gait`]: Roombot robots described in `world.xml` (the Roombot
//!   family), walking a CPG gait in the engine as YaMoR robots do.
//! - [`family`]: the Roombots as a `yamor_core::family::RobotFamily`, so
//!   hosts and runs walk them as any family's robots.
//! - [`picture`]: modules drawn as PNG, several moments side by side.
//! - [`scene`]: several modules in one world (the acrobat of 002 §5.3.2)
//!   and two meta-modules climbing a structure (the chair of §5.4), with
//!   the depth-first inchworm planner that finds their way.
//! - [`bounding`]: the reactive servo controller of 002 §4.1.1.
//! - [`supervisor_server`]: the supervisor language as a line protocol
//!   over TCP, on a simulated meta-module.
//! - [`physics`]: modules in the articulated engine: continuous servos,
//!   connectors that lock and unlock while the world runs.

pub mod bounding;
pub mod chain;
pub mod collision;
pub mod enactment;
pub mod experiment;
pub mod family;
pub mod gait;
pub mod ik;
pub mod module;
pub mod path;
pub mod physics;
pub mod picture;
pub mod reach;
pub mod scene;
pub mod stage;
pub mod supervisor;
pub mod supervisor_server;
