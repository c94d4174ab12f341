//! 002 §5.3's experiment rebuilt: a meta-module lying on a floor of
//! connectors reaches every target of the plane around it
//! ([`crate::reach::plane_targets`]) with each inverse-kinematics variant
//! the seed tried and with ours, from the home pose.
//!
//! The seed counted *solved* (the solver converged) and *reached* (the
//! pose was reached in Webots; a pose through the floor or the robot
//! itself was not). Here *solved* is the same and *free* is a solution
//! free of self-collision and of the floor, checked against the module's
//! shape; the seed's figures were 56–57 solved and 32–40 reached of a
//! plane whose size its text does not give.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::chain::{ConnectionType, MetaModule};
use crate::ik::{SeedVariant, Solver};
use crate::reach::{GridTarget, plane_floor, plane_targets, reach_map};

/// Iterations the seed's variants get (KDL's default is 100; capped steps
/// need more to cross the joint space).
pub const SEED_ITERATIONS: u32 = 1000;

/// One solver's count over the targets.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub name: String,
    pub solved: usize,
    pub free: usize,
    /// Proven-reachable targets it did not solve free of collision.
    pub missed_proven: usize,
}

/// The experiment's result for one connection type.
#[derive(Debug, Clone, PartialEq)]
pub struct IkComparison {
    pub connection: ConnectionType,
    pub targets: usize,
    /// Targets the reachability map proves reachable free of collision.
    pub proven: usize,
    pub tallies: Vec<Tally>,
    /// Our solver's time per target it solved free of collision (µs),
    /// sorted.
    pub our_micros: Vec<f64>,
    /// Its time per target it gave up on (µs), sorted.
    pub refused_micros: Vec<f64>,
    /// Random reachable targets (the end frames of random poses free of
    /// self-collision, no floor): how many, how many solved free, and the
    /// time per solve (µs), sorted.
    pub random_targets: usize,
    pub random_solved: usize,
    pub random_micros: Vec<f64>,
}

impl IkComparison {
    /// The median of sorted `micros` (NaN for none).
    #[must_use]
    pub fn median(micros: &[f64]) -> f64 {
        let n = micros.len();
        if n == 0 {
            return f64::NAN;
        }
        if n % 2 == 1 {
            micros[n / 2]
        } else {
            (micros[n / 2 - 1] + micros[n / 2]) / 2.0
        }
    }
}

/// Runs the experiment for `connection` with the reachability map over a
/// joint grid of `steps` per turn (12: π/6).
#[must_use]
pub fn run(connection: ConnectionType, steps: u32) -> IkComparison {
    let meta = MetaModule::new(connection);
    let mut solver = Solver::new(meta);
    solver.floor = Some(plane_floor());
    let targets = plane_targets();
    let map = reach_map(&solver, steps);
    let proven: Vec<&GridTarget> = targets
        .iter()
        .filter(|t| map.get(t).is_some_and(Option::is_some))
        .collect();
    let is_proven = |t: &GridTarget| proven.contains(&t);
    let mut tallies = Vec::new();
    for variant in SeedVariant::ALL {
        let mut tally = Tally {
            name: variant.name().to_owned(),
            solved: 0,
            free: 0,
            missed_proven: 0,
        };
        for t in &targets {
            let solution = variant.solve(&meta, &t.frame(), [0.0; 6], SEED_ITERATIONS);
            let free = solution.is_some_and(|q| solver.is_free(q));
            tally.solved += usize::from(solution.is_some());
            tally.free += usize::from(free);
            tally.missed_proven += usize::from(is_proven(t) && !free);
        }
        tallies.push(tally);
    }
    let mut ours = Tally {
        name: "ours: damped least squares, lattice restarts".to_owned(),
        solved: 0,
        free: 0,
        missed_proven: 0,
    };
    let (mut micros, mut refused) = (Vec::new(), Vec::new());
    for t in &targets {
        let frame = t.frame();
        let began = Instant::now();
        let result = solver.solve(&frame, [0.0; 6]);
        let took = began.elapsed().as_secs_f64() * 1e6;
        let free = result.is_ok();
        if free {
            micros.push(took)
        } else {
            refused.push(took)
        }
        // Converged but colliding counts as solved, as for the seed's.
        let solved = free || matches!(result, Err(crate::ik::IkError::Colliding));
        ours.solved += usize::from(solved);
        ours.free += usize::from(free);
        ours.missed_proven += usize::from(is_proven(t) && !free);
    }
    tallies.push(ours);
    micros.sort_by(f64::total_cmp);
    refused.sort_by(f64::total_cmp);
    // In free space: random poses of a meta-module lying on the floor
    // mostly reach through it.
    let (random_solved, random_micros) = random_reachable(&Solver::new(meta), RANDOM_TARGETS);
    IkComparison {
        connection,
        targets: targets.len(),
        proven: proven.len(),
        tallies,
        our_micros: micros,
        refused_micros: refused,
        random_targets: RANDOM_TARGETS,
        random_solved,
        random_micros,
    }
}

/// Random reachable targets each run solves.
pub const RANDOM_TARGETS: usize = 200;

/// Solves the end frames of `count` random poses free of collision (a
/// fixed sequence), from the home pose: how many solved free, and each
/// solve's time (µs), sorted.
fn random_reachable(solver: &Solver, count: usize) -> (usize, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut next = || rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
    let (mut solved, mut micros) = (0, Vec::with_capacity(count));
    while micros.len() < count {
        let q: crate::ik::MetaJoints = std::array::from_fn(|_| next());
        if !solver.is_free(q) {
            continue;
        }
        let target = solver.meta().end(q);
        let began = Instant::now();
        let result = solver.solve(&target, [0.0; 6]);
        micros.push(began.elapsed().as_secs_f64() * 1e6);
        solved += usize::from(result.is_ok());
    }
    micros.sort_by(f64::total_cmp);
    (solved, micros)
}
