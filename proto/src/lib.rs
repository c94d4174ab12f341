//! The gRPC contracts of yamor, generated from `proto/yamor/v1/*.proto`.
//!
//! # Layout
//! - `proto/yamor/v1/common.proto`: evaluation jobs, specs and results.
//! - `proto/yamor/v1/host.proto`: the `HostAgent` service (one robot, the
//!   thesis' IYaMoRHost3 surface plus `Evaluate`).
//! - `proto/yamor/v1/organizer.proto`: the `Organizer` service (hosts, jobs,
//!   optimizer runs).
//!
//! - [`evaluation`]: the messages of `common.proto` to and from
//!   `yamor_core::evaluation`, shared by both services so they cannot
//!   disagree on a default or a bound.
//! - [`transport`]: token check, TLS, reflection: what every server and
//!   client shares.
//!
//! Everything lives in the single package [`v1`]; [`FILE_DESCRIPTOR_SET`]
//! feeds server reflection so `grpcurl` works without the .proto files.

pub mod evaluation;
pub mod transport;

pub mod v1 {
    #![allow(clippy::all)]
    tonic::include_proto!("yamor.v1");
}

/// The encoded descriptors of every yamor service, for `tonic-reflection`.
/// The metadata key a host's RESOURCE_EXHAUSTED carries when it refused a
/// job only because it is still evaluating another: nothing ran, and the
/// organizer re-queues the job without counting an attempt. Other
/// RESOURCE_EXHAUSTED (a message too large, a quota) are failures.
pub const BUSY_METADATA: &str = "yamor-busy";

/// The largest message yamor's clients and servers accept (a plan of a
/// hundred meta-modules is half a megabyte; tonic's default is 4 MB).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("yamor_descriptor");
