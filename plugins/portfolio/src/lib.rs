//! Optimizers made of optimizers: for a user who does not know their
//! robot's landscape, no single method is the right default.
//!
//! - `powell-cmaes` ([`PowellCmaes`], module `chain`): Powell's method,
//!   then IPOP CMA-ES from its best point, then Powell again — methods in
//!   sequence, each starting where the last left off.
//! - `portfolio` ([`Portfolio`], module `race`): CMA-ES and a particle
//!   swarm side by side, compared on the robot after each round of equal
//!   walks; the one ahead gets the rest of the budget. `yamor run`'s
//!   default (docs/benchmarks.md, the bench of morphologies).
//!
//! Both judge a point by the mean of all its evaluations and evaluate the
//! best points again before they act on them (a walk's fitness is noisy).
//!
//! # Layout
//! - `chain`: [`PowellCmaes`], [`Chain`], [`Stage`], [`PortfolioConfig`].
//! - `race`: [`Portfolio`], [`Race`], [`RaceConfig`], [`Arms`].
//! - `points`: every point told and its evaluations, the best confirmed
//!   one and the challengers to confirm (shared by both).

mod chain;
mod points;
mod race;

pub use chain::{
    Chain, DEFAULT_REEVALUATE, MAX_REEVALUATE, NAME, PortfolioConfig, PowellCmaes, Stage,
};
pub use race::{
    Arms, FINALISTS_OVERALL, FINALISTS_PER_ARM, NAME as PORTFOLIO, Portfolio, ROUND_PER_PARAMETER,
    Race, RaceConfig,
};

/// Points re-evaluated at once (per optimizer) while confirming.
pub const CHALLENGERS_PER_ROUND: usize = 4;

/// Rounds of re-evaluation at most before a hand-over or a judgement; then
/// the best confirmed point is taken.
pub const MAX_ROUNDS: u32 = 3;

/// The settings both plugins pass to their CMA-ES: its initial step size
/// (`sigma0` by default) and the population of its first run.
fn cmaes_settings(sigma0: f64) -> [yamor_optimizer_api::SettingSpec; 2] {
    use yamor_optimizer_api::SettingSpec;
    [
        SettingSpec::float(
            "sigma0",
            "CMA-ES: initial step size as a fraction of each parameter's range",
            1e-6,
            1.0,
            sigma0,
        ),
        SettingSpec::int(
            "population",
            "CMA-ES: population of its first run (0: 4 + 3 ln n); IPOP doubles it at each restart",
            0,
            yamor_cmaes::MAX_POPULATION as i64,
            0,
        ),
    ]
}
