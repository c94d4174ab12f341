//! The host agent: a gRPC server that wraps exactly one robot behind a
//! `Backend` seam (the simulator of `yamor-firmware-sim`, or the real robot
//! over a serial line).
//!
//! Not yet filled: issue 3 builds it on top of the simulator and the bridge
//! protocol that `yamor-firmware-sim` provides today.
