//! The YaMoR domain model shared by every yamor crate.
//!
//! Nothing here knows about physics, networks or storage: this crate is the
//! vocabulary the simulator, the host agents, the organizer and the optimizers
//! speak.
//!
//! # Layout
//! - [`config`]: the robot configuration of thesis appendix C.4 (`yamorconfig`
//!   XML): modules with their oscillator parameters and limit angles, CPG
//!   links, the Bluetooth tree.
//! - [`morphology`]: how modules are physically assembled: modules, passive
//!   modules and connector-to-connector connections (the vocabulary of the
//!   C.2.7 transformation scripts).
//! - [`evaluation`]: one evaluation as every crate speaks of it: the spec
//!   (warm-up, window, seed, situation), trajectory samples, the velocity of
//!   thesis 6.2.1, and what a job found as one of three kinds
//!   ([`evaluation::Outcome`]: a walk, a value or a plan) with its fitness.
//! - [`world`]: the physical world a walk happens in (engine, masses,
//!   servos' torque, speed, lag and play, position noise), a distribution
//!   runs draw worlds from, and the named presets (`single`, `robust`,
//!   `paired`, `paired-slowest`).
//! - [`plan`]: a plan on a cubic lattice (a self-reconfiguration's world,
//!   target, start and moves) as structured data and as its text form.
//! - [`family`]: the seam between yamor and a kind of module: a
//!   [`family::RobotFamily`] names its examples, recognises its robot
//!   documents and builds a [`family::Walker`] that walks gaits;
//!   [`family::Families`] is a process's registry of them.
//! - [`measure`]: the measure loop every walker (simulator, Roombot walk,
//!   real robot) runs: [`measure::WalkMeter`], fed the robot's positions,
//!   takes the measured window's start, the trajectory samples and the
//!   early-stopping checkpoints, says when the walk ends (and, for a walker
//!   on the wall clock, when it next wants a position) and makes the
//!   [`evaluation::Walk`]; [`measure::PositionNoise`], a world's error on
//!   the positions it is fed.
//! - [`cpg`]: the coupled oscillator network of thesis equation set 6.1 and
//!   its fixed-step RK4 integrator.
//! - [`matheval`]: MathEval (thesis 5.6): expressions with functions and
//!   parameters, parsed once and evaluated by a real or an integer engine,
//!   errors with positions.
//! - [`optimize`]: the optimization configuration of thesis 5.7.2: a robot
//!   plus `<optimize>` rules, free parameters with bounds and constraint
//!   expressions, and `apply` from an optimizer's values to a robot.
//! - [`script`]: transformation scripts of thesis C.2.7 (`<connect>`,
//!   `<disconnect>`, `<pause>`), read and written.
//! - [`network`]: CPG network construction for lifelong learning (thesis
//!   7.4): couplings from the physical graph, loops, the constraints
//!   algorithm, symmetries, and the relearning optimization.
//! - [`starts`]: where walks start: fresh candidate starts from (run seed,
//!   proposal), the fixed public held-out starts a gait's velocity is
//!   reported over, and [`starts::Spread`], a velocity over many starts.
//! - [`error`]: errors that name the file, the element and the problem.
//! - [`read_xml_file`]: reads an XML file in the encoding its byte order
//!   mark or XML declaration names (the thesis' files declare
//!   Windows-1252), UTF-8 otherwise; every `from_file` goes through it.
//!
//! Units are SI and radians everywhere inside; the XML keeps the thesis'
//! attribute names and units.

pub mod config;
pub mod cpg;
pub mod damage;
pub mod error;
pub mod evaluation;
pub mod family;
pub mod matheval;
pub mod measure;
pub mod morphology;
pub mod network;
pub mod optimize;
pub mod plan;
pub mod script;
pub mod starts;
pub mod world;
mod xml;

pub use config::{CpgLink, IdAttribute, ModuleConfig, Motion, RobotConfig};
pub use error::{Problem, XmlError};
pub use matheval::{Expr, ExprError};
pub use morphology::{Connection, Connector, Morphology, MorphologyModule};
pub use optimize::{OptimizationConfig, ParamName};
pub use xml::read_xml_file;

/// A module identifier as written in the XML files (`id` / `realid`).
pub type ModuleId = u32;
