//! The gRPC contracts of yamor (`HostAgent`, `Organizer`).
//!
//! Not yet filled: issue 3 adds `proto/yamor/*.proto`, the tonic build
//! script and `include_proto!`. The crate exists so the dependency graph of
//! `shared/design.md` is visible from the start: it may depend only on
//! prost/tonic.
