//! Roombot self-reconfiguration (seed 003): meta-modules that move over a
//! grid of cells, one cube per cell, to build a structure.
//!
//! # Layout
//! - [`grid`]: cells, directions, the cube's 24 turns, and the 7 × 7 × 7
//!   window a meta-module sees as a six-word bit set.
//! - [`srdb`]: the Servo Rotation Database of 003 §2.4 — every lattice
//!   pose of the six servos, indexed by goal cell and by shape — and the
//!   cells a move sweeps.
//! - [`sweep`]: the swept cells fast (products of exponentials), and
//!   every pair of configurations swept once into bit sets.
//! - [`structure`]: target structures from the XML of 003 §2.7.2, with
//!   clear errors.
//! - [`search`]: a way from one configuration to another around occupied
//!   cells, through up to two intermediate ones (levels 1–3).
//! - [`world`]: the grid world and its [`world::WorldController`]: the
//!   cell codes, a floor of connectors, the meta-modules, the seeds opening
//!   level by level, what a meta-module is told of its surroundings.
//! - [`decentralised`]: the decentralised build of 003 §2.6: a Gradient
//!   Controller per meta-module ([`decentralised::Build`]), rounds, the
//!   rules of who may move, the moves, the
//!   [`decentralised::BuildReport`] and a build's film.
//! - [`starts`]: where a build's meta-modules start: random floor cells
//!   spread out, another structure's places, 003 Fig 3.5's deadlock.
//! - [`trials`]: batches of decentralised builds from random starts,
//!   tallied.
//! - [`central`]: the fewest moves of several meta-modules at once (A*
//!   over whole configurations), to check the decentralised build
//!   against and to take a structure apart.
//! - [`plan`]: a build written down (start and every move) as text, read
//!   back with line errors, replayed step by step.
//! - [`replay`]: a plan replayed in the module's physics simulation (the
//!   servos driven pose to pose, locks as welds), measuring how the locks
//!   hold and whether the simulation ends on the plan's cells.
//! - [`planning`]: a reconfiguration as a cluster job (the `reconfig:`
//!   objective, a [`planning::Task`]) and the [`planning::Planner`] a
//!   planning host runs.
//! - [`timing`]: 003 §3.1's timings measured here (the database, the
//!   searches at the seed's rotation steps, live and tabled).

pub mod central;
pub mod decentralised;
pub mod grid;
pub mod plan;
pub mod planning;
pub mod replay;
pub mod search;
pub mod srdb;
pub mod starts;
pub mod structure;
pub mod sweep;
pub mod timing;
pub mod trials;
pub mod world;
