//! Lifelong learning (thesis chapter 7): keep a modular robot walking while
//! it breaks, changes shape, falls over and meets new ground.
//!
//! A library: the decisions (pure, no transport), the gaits database in the
//! organizer's SQLite file, and the loop that walks a robot on its host and
//! relearns on the cluster. The thesis' 7.5 scenarios that drive it (with
//! their command line and plots) are `yamor_experiments::lifelong`.
//!
//! # Layout
//! - [`anomaly`]: the velocity monitor of 7.3 (three CPG periods per
//!   measurement, `v := 0.9 v + 0.1 v⁺` while `|v − v⁺| < t`).
//! - [`gaits`]: gait records of 7.8.2 and which stored gaits to try first on
//!   an anomaly.
//! - [`database`]: [`Gaits`](database::Gaits), the stored gaits: read, add,
//!   mark used.
//! - [`learning`]: [`Lifelong`](learning::Lifelong), the loop: watch a walking
//!   robot, reuse stored gaits, relearn on the cluster.
//! - [`homing`]: reset-free learning's policy (pure): a gait's move in the
//!   body frame, the heading from one LED, the homing gait to walk and
//!   when an evaluation needs homing first.
//! - [`reset_free`]: [`ResetFree`](reset_free::ResetFree), the driver:
//!   evaluations from outside with homing walks between them, on a
//!   real-robot host.
//!
//! CPG network construction and the constraints algorithm (7.4) are in
//! `yamor_core::network`.

pub mod anomaly;
pub mod database;
pub mod gaits;
pub mod homing;
pub mod learning;
pub mod reset_free;
