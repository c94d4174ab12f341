//! The optimizer plugin API: an optimizer asks for evaluations of parameter
//! vectors and is told their results; it never sees gRPC or SQLite.
//!
//! Not yet filled: issue 4 (Powell, PSO, brute force) and issue 6
//! (lifelong learning) implement it.
