//! Lifelong learning (thesis chapter 7): keep a modular robot walking while
//! it breaks, changes shape, falls over and meets new ground.
//!
//! This crate holds the decisions, free of any transport: the runtime that
//! walks a robot on a host and starts relearning runs lives with the
//! organizer's clients.
//!
//! # Layout
//! - [`anomaly`]: the velocity monitor of 7.3 (three CPG periods per
//!   measurement, `v := 0.9 v + 0.1 v⁺` while `|v − v⁺| < t`).
//! - [`gaits`]: the gaits database of 7.8.2: records, and which stored gaits
//!   to try first on an anomaly.
//!
//! CPG network construction and the constraints algorithm (7.4) are in
//! `yamor_core::network`.

pub mod anomaly;
pub mod gaits;
