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
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("yamor_descriptor");
