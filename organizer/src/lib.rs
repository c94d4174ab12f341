//! The organizer: host registry, the semaphore-of-free-hosts scheduler,
//! persistence (SQLite) and the optimizer runtime.
//!
//! Not yet filled: issue 3.
