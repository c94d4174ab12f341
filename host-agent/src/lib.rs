//! The host agent: a gRPC server that wraps exactly one robot behind a
//! [`Backend`] seam: a simulated robot of any family, the real robot over
//! a serial line (issue 5), or an expression standing in for a robot. It
//! links no physics engine and knows no robot family: a family
//! (`yamor_core::family::RobotFamily`) is handed in.
//!
//! # Layout
//! - [`backend`]: the seam: the [`Backend`] trait, the domain types of a
//!   job, and the session seam a backend may offer (`RobotLink`,
//!   `Supervisor`, `SessionFactory`).
//! - [`family`]: [`family::FamilyBackend`], any robot family's robots
//!   walked on a blocking thread (cancellable), a job of another family
//!   refused with an error the organizer retries elsewhere; a family may
//!   add robot sessions.
//! - [`expr`]: the expression backend: a MathEval expression of the
//!   parameters, with an optional delay; the zero-cost host for testing and
//!   benchmarking schedulers and optimizers.
//! - [`serial`]: the real robot over a serial port (SNP through
//!   `serialport`, the 5.2.1 set-up in one call, the 5.5.4 acknowledgement
//!   bug handled, motors off whenever nothing is being evaluated).
//! - [`session`]: the stateful IYaMoRHost3 surface (open, connect, set
//!   parameters, flush, sleep, physical changes) over a
//!   [`session::RobotLink`], so the simulator and the serial robot share it;
//!   it speaks domain types only.
//! - [`model`]: the session's requests, replies and [`SessionError`].
//! - [`grpc`]: the `HostAgent` gRPC service and the protobuf conversions
//!   of its messages, and the host's calls to its organizer (register,
//!   heartbeat, leave) in domain types ([`grpc::OrganizerLink`]); the only
//!   place that knows protobuf or builds a `tonic::Status`; allows one robot
//!   operation at a time.
//! - [`server`]: binding and naming a host ([`HostServer::bind`]: on every
//!   interface, its outward address and the machine's name), serving with
//!   token, health and reflection, and the registration/heartbeat loop that
//!   keeps the host known to its organizer; domain types only.

pub mod backend;
pub mod expr;
pub mod family;
pub mod grpc;
pub mod model;
pub mod serial;
pub mod server;
pub mod session;

pub use backend::{
    Backend, BackendKind, EvaluationJob, EvaluationSpec, HostError, Outcome, RobotSource,
};
pub use grpc::{HostService, RobotClient, RobotClientError};
pub use model::SessionError;
pub use server::{
    HostOptions, HostServer, Registration, StartError, keep_registered, keep_registered_or, serve,
};
