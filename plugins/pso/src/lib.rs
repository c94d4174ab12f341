//! PSO (filled by issue 3).
