//! The PSO on a noisy objective (`reevaluate`): one lucky value does not
//! become the swarm's best, the incumbent is judged by its mean, and the
//! determinism contract holds with re-evaluations in the batches;
//! `reevaluate = 0` is the classic PSO, bit for bit; a deterministic
//! objective is detected after three confirmation rounds and the swarm is
//! the classic one from then on.

use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{Bound, Candidate, Fitness, Optimizer, Plugin, Settings, Space, Step};
use yamor_pso::{EXACT_ROUNDS, Pso, PsoConfig, Swarm, Topology};

fn square(lo: f64, hi: f64, dim: usize, start: f64) -> Space {
    let bounds = (0..dim)
        .map(|d| Bound::new(format!("p{d}"), lo, hi))
        .collect();
    Space::new(bounds, vec![start; dim]).unwrap()
}

fn config(particles: usize, iterations: u64, reevaluate: u32) -> PsoConfig {
    PsoConfig {
        particles,
        iterations,
        reevaluate,
        ..PsoConfig::default()
    }
}

/// A standard normal draw (Box–Muller), so the tests need no distribution
/// crate.
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The trap's true (mean) fitness: −‖x‖², maximal (0) at the origin, and
/// 0.5 worse right of x₀ = 0.5.
fn trap_mean(x: &[f64]) -> f64 {
    -x.iter().map(|v| v * v).sum::<f64>() - if x[0] > 0.5 { 0.5 } else { 0.0 }
}

/// The trap's noise: a little everywhere (every walk has its own start),
/// and right of x₀ = 0.5 a lot.
const QUIET: f64 = 0.02;
const LOUD: f64 = 1.0;

/// One walk of the trap: every evaluation adds fresh N(0, 0.02²) noise,
/// and right of x₀ = 0.5 fresh N(0, 1) noise too, so a worse mean hides
/// behind lucky values. (Without the little noise outside, the first
/// confirmation rounds may compare exact points only and call the
/// objective deterministic: the limit `noise_confined_to_the_trap_*`
/// measures.)
fn trap(x: &[f64], noise: &mut impl Rng) -> f64 {
    trap_mean(x)
        + QUIET * normal(noise)
        + if x[0] > 0.5 {
            LOUD * normal(noise)
        } else {
            0.0
        }
}

/// Runs a swarm on the trap with fresh noise for every evaluation; the
/// reported best, its true mean and its evaluation count.
fn run_trap(reevaluate: u32, seed: u64) -> (Vec<f64>, f64, f64, u32) {
    let space = square(-1.0, 1.0, 2, -0.4);
    let mut swarm = Swarm::new(&space, &config(20, 40, reevaluate), seed).unwrap();
    let mut noise = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    while let Step::Evaluate(batch) = swarm.ask() {
        for c in &batch {
            swarm.tell(c.tag, Fitness::Value(trap(&c.x, &mut noise)));
        }
    }
    let (x, reported) = swarm.best().unwrap();
    let evaluations = swarm.best_evaluations().unwrap();
    (x.to_vec(), reported, trap_mean(x), evaluations)
}

#[test]
fn one_lucky_value_does_not_trap_a_re_evaluating_swarm() {
    const SEEDS: u64 = 20;
    // Seeds whose reported best lies outside the trap, and the mean
    // |reported − true| error, for single values and for `reevaluate` = 2.
    let mut outside = [0; 2];
    let mut error = [0.0; 2];
    for seed in 0..SEEDS {
        for (slot, reevaluate) in [0, 2].into_iter().enumerate() {
            let (x, reported, truth, evaluations) = run_trap(reevaluate, seed);
            let trapped = x[0] > 0.5;
            outside[slot] += usize::from(!trapped);
            error[slot] += (reported - truth).abs() / SEEDS as f64;
            if reevaluate > 0 {
                // The report is a mean over at least 1 + reevaluate
                // evaluations, within 3 standard errors of the truth.
                assert!(evaluations > reevaluate, "seed {seed}: {evaluations}");
                let sigma = if trapped { QUIET.hypot(LOUD) } else { QUIET };
                let limit = 3.0 * sigma / f64::from(evaluations).sqrt() + 1e-12;
                assert!(
                    (reported - truth).abs() <= limit,
                    "seed {seed}: reported {reported}, true {truth}, {evaluations} evaluations"
                );
            }
        }
    }
    // Measured: single values end outside the trap in 1 of 20 seeds and
    // report 2.9 above the truth on average; re-evaluated, in 19 (17 with
    // reevaluate = 1, 20 with 3), 0.07 off it (the same before and after
    // the detection of deterministic objectives: the noise outside the
    // trap shows in the first round).
    assert!(outside[0] <= 5, "outside the trap: {outside:?}");
    assert!(outside[1] >= 18, "outside the trap: {outside:?}");
    assert!(error[0] > 1.0, "mean error: {error:?}");
    assert!(error[1] < 0.1, "mean error: {error:?}");
}

/// FNV-1a over every batch (size, tags, coordinates' bits) and the best of
/// 24 varied runs: dimensions 1–5, periodic bounds, both topologies,
/// failures, reordered tells.
fn fingerprint(reevaluate: u32) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut mix = |v: u64| {
        for byte in v.to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for case in 0..24u64 {
        let dim = 1 + (case % 5) as usize;
        let bounds = (0..dim)
            .map(|d| {
                let b = Bound::new(format!("p{d}"), -2.0 - d as f64, 3.0);
                if (case + d as u64).is_multiple_of(3) {
                    b.wrapping()
                } else {
                    b
                }
            })
            .collect();
        let space = Space::new(bounds, vec![0.5; dim]).unwrap();
        let config = PsoConfig {
            particles: 3 + (case % 7) as usize,
            iterations: 10 + case,
            topology: if case.is_multiple_of(2) {
                Topology::Global
            } else {
                Topology::Ring
            },
            include_start: case % 4 != 1,
            inertia: if case % 5 == 0 { 0.5 } else { 0.7298 },
            reevaluate,
            ..PsoConfig::default()
        };
        let mut swarm = Swarm::new(&space, &config, case * 7919).unwrap();
        let f = |x: &[f64]| {
            let s: f64 = x
                .iter()
                .enumerate()
                .map(|(d, v)| (v - 0.3 * d as f64).powi(2))
                .sum();
            if x[0] > 2.5 {
                Fitness::Failed
            } else {
                Fitness::Value(-s + (3.0 * x[0]).sin())
            }
        };
        let mut batches = 0u64;
        while let Step::Evaluate(batch) = swarm.ask() {
            mix(batch.len() as u64);
            for c in &batch {
                mix(c.tag);
                for v in &c.x {
                    mix(v.to_bits());
                }
            }
            let mut order: Vec<usize> = (0..batch.len()).collect();
            order.rotate_left(batches as usize % batch.len().max(1));
            if batches % 2 == 1 {
                order.reverse();
            }
            for i in order {
                swarm.tell(batch[i].tag, f(&batch[i].x));
            }
            batches += 1;
        }
        let best = swarm.best();
        mix(best.map_or(0, |(_, v)| v.to_bits()));
        for v in best.map(|(x, _)| x).unwrap_or_default() {
            mix(v.to_bits());
        }
        mix(batches);
    }
    hash
}

#[test]
fn reevaluate_zero_is_the_classic_swarm_bit_for_bit() {
    // The fingerprint of the same runs through the swarm before
    // `reevaluate` existed (git ba4d309, plugins/pso/src/lib.rs).
    assert_eq!(fingerprint(0), 0xc1cc_d7a3_0487_fa70);
    assert_ne!(fingerprint(1), fingerprint(0));
}

/// An objective whose noise depends on the proposal's tag only (the
/// runtime's per-proposal start seed), so any tell order gets the same
/// values; a corner fails.
fn noisy_by_tag(c: &Candidate) -> Fitness {
    if c.x[0] > 3.0 {
        return Fitness::Failed;
    }
    let mut walk = ChaCha8Rng::seed_from_u64(c.tag.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let sphere: f64 = c.x.iter().map(|v| (v - 1.0).powi(2)).sum();
    Fitness::Value(-sphere + 0.3 * normal(&mut walk))
}

/// Every batch as asked, told in the order `order` gives.
fn drive(
    opt: &mut dyn Optimizer,
    order: &mut dyn FnMut(&mut Vec<Candidate>),
) -> Vec<Vec<(u64, Vec<u64>)>> {
    let mut batches = Vec::new();
    while let Step::Evaluate(batch) = opt.ask() {
        assert_eq!(opt.ask(), Step::Wait, "asked twice without telling");
        let mut told = batch.clone();
        order(&mut told);
        for c in &told {
            opt.tell(c.tag, noisy_by_tag(c));
        }
        batches.push(
            batch
                .iter()
                .map(|c| (c.tag, c.x.iter().map(|v| v.to_bits()).collect()))
                .collect(),
        );
    }
    batches
}

#[test]
fn re_evaluations_keep_the_proposals_independent_of_the_tell_order() {
    let space = square(-5.0, 5.0, 3, 4.0);
    for topology in ["global", "ring"] {
        let settings = Settings::parse(
            &Pso.info().settings,
            [
                ("particles", "10"),
                ("iterations", "30"),
                ("reevaluate", "3"),
                ("topology", topology),
            ],
        )
        .unwrap();
        let run = |order: &mut dyn FnMut(&mut Vec<Candidate>)| {
            let mut opt = Pso.create(&space, &settings, 42, None).unwrap();
            drive(opt.as_mut(), order)
        };
        let forward = run(&mut |_| {});
        let reversed = run(&mut |b| b.reverse());
        let mut shuffler = ChaCha8Rng::seed_from_u64(7);
        let shuffled = run(&mut |b| b.shuffle(&mut shuffler));
        assert!(forward.len() >= 30);
        assert!(
            forward.iter().any(|b| b.len() > 10),
            "{topology}: no re-evaluation was proposed"
        );
        assert_eq!(forward, reversed, "{topology}");
        assert_eq!(forward, shuffled, "{topology}");
    }
}

#[test]
fn replaying_a_noisy_run_reproduces_it() {
    let space = square(-5.0, 5.0, 2, 0.0);
    let mut original = Swarm::new(&space, &config(8, 12, 2), 5).unwrap();
    let recorded = drive(&mut original, &mut |b| b.rotate_left(3));
    let mut fresh = Swarm::new(&space, &config(8, 12, 2), 5).unwrap();
    let replayed = drive(&mut fresh, &mut |b| b.reverse());
    assert_eq!(recorded, replayed);
    assert_eq!(fresh.best(), original.best());
    assert_eq!(fresh.best_evaluations(), original.best_evaluations());
}

fn batch(opt: &mut Swarm) -> Vec<Candidate> {
    match opt.ask() {
        Step::Evaluate(batch) => batch,
        other => panic!("expected a batch, got {other:?}"),
    }
}

#[test]
fn a_challenger_is_re_evaluated_with_the_next_generation_and_judged_by_its_mean() {
    let space = square(0.0, 1.0, 1, 0.5);
    let mut swarm = Swarm::new(&space, &config(3, 3, 1), 1).unwrap();
    let first = batch(&mut swarm);
    assert_eq!(first.len(), 3);
    for (c, v) in first.iter().zip([1.0, 5.0, 2.0]) {
        swarm.tell(c.tag, Fitness::Value(v));
    }
    // Nothing is confirmed yet: the best single value stands in.
    assert_eq!(swarm.best(), Some((first[1].x.as_slice(), 5.0)));
    assert_eq!(swarm.best_evaluations(), Some(1));

    // The generation, then particle 1's best again under a new tag.
    let second = batch(&mut swarm);
    assert_eq!(second.len(), 4);
    assert_eq!(second[3].x, first[1].x);
    let tags: Vec<u64> = first.iter().chain(&second).map(|c| c.tag).collect();
    assert_eq!(tags, (0..7).collect::<Vec<_>>());
    // The re-evaluation first, a stale and an unknown tag in between.
    swarm.tell(second[3].tag, Fitness::Value(3.0));
    swarm.tell(first[0].tag, Fitness::Value(100.0));
    swarm.tell(99, Fitness::Value(100.0));
    for c in &second[..3] {
        swarm.tell(c.tag, Fitness::Value(0.0));
    }
    assert_eq!(swarm.best(), Some((first[1].x.as_slice(), 4.0)));
    assert_eq!(swarm.best_evaluations(), Some(2));

    // The incumbent is evaluated again with every generation (its mean
    // ages); a lucky 9 of particle 0 in the last generation is settled by
    // one more batch after it.
    let third = batch(&mut swarm);
    assert_eq!(third.len(), 4);
    assert_eq!(third[3].x, first[1].x);
    swarm.tell(third[0].tag, Fitness::Value(9.0));
    swarm.tell(third[1].tag, Fitness::Value(0.0));
    swarm.tell(third[2].tag, Fitness::Value(0.0));
    swarm.tell(third[3].tag, Fitness::Value(2.0));
    assert_eq!(swarm.generations_done(), 3);
    let settle = batch(&mut swarm);
    assert_eq!(
        settle.iter().map(|c| &c.x).collect::<Vec<_>>(),
        [&third[0].x, &first[1].x]
    );
    // Particle 0's mean (9 + 1) / 2 = 5 beats the incumbent's
    // (5 + 3 + 2 + 4) / 4 = 3.5.
    swarm.tell(settle[1].tag, Fitness::Value(4.0));
    swarm.tell(settle[0].tag, Fitness::Value(1.0));
    assert_eq!(swarm.ask(), Step::Finished);
    assert_eq!(swarm.best(), Some((third[0].x.as_slice(), 5.0)));
    assert_eq!(swarm.best_evaluations(), Some(2));
}

#[test]
fn a_lucky_challenger_falls_back_to_its_mean_and_is_not_the_best() {
    let space = square(0.0, 1.0, 1, 0.5);
    let mut swarm = Swarm::new(&space, &config(2, 2, 2), 3).unwrap();
    let first = batch(&mut swarm);
    swarm.tell(first[0].tag, Fitness::Value(1.0));
    swarm.tell(first[1].tag, Fitness::Value(1.5));
    let second = batch(&mut swarm);
    // Particle 1's best twice more; particle 0 is below it, not asked.
    assert_eq!(second.len(), 4);
    assert!(second[2..].iter().all(|c| c.x == first[1].x));
    for (c, v) in second.iter().zip([0.0, 0.0, 0.6, 0.9]) {
        swarm.tell(c.tag, Fitness::Value(v));
    }
    // Particle 1's best is confirmed at (1.5 + 0.6 + 0.9) / 3 = 1; the
    // last generation leaves particle 0 (a single 1.0) unconfirmed but not
    // above it, so nothing is settled.
    assert_eq!(swarm.ask(), Step::Finished);
    assert_eq!(swarm.best(), Some((first[1].x.as_slice(), 1.0)));
    assert_eq!(swarm.best_evaluations(), Some(3));
}

#[test]
fn a_failed_re_evaluation_makes_the_incumbent_worst() {
    let space = square(0.0, 1.0, 1, 0.5);
    let mut swarm = Swarm::new(&space, &config(2, 3, 1), 2).unwrap();
    let first = batch(&mut swarm);
    swarm.tell(first[0].tag, Fitness::Value(1.0));
    swarm.tell(first[1].tag, Fitness::Value(2.0));
    let second = batch(&mut swarm);
    for (c, v) in second.iter().zip([0.5, 0.5, 2.0]) {
        swarm.tell(c.tag, Fitness::Value(v));
    }
    assert_eq!(swarm.best(), Some((first[1].x.as_slice(), 2.0)));
    let third = batch(&mut swarm);
    assert_eq!(third[2].x, first[1].x, "the incumbent, again");
    swarm.tell(third[2].tag, Fitness::Failed);
    swarm.tell(third[0].tag, Fitness::Value(0.5));
    swarm.tell(third[1].tag, Fitness::Value(0.5));
    // The incumbent failed: the best remaining personal best (particle 0's
    // single 1.0) is confirmed by one more evaluation and takes its place.
    let settle = batch(&mut swarm);
    assert_eq!(settle.len(), 1);
    assert_eq!(settle[0].x, first[0].x);
    swarm.tell(settle[0].tag, Fitness::Value(0.8));
    assert_eq!(swarm.ask(), Step::Finished);
    assert_eq!(swarm.best(), Some((first[0].x.as_slice(), 0.9)));
}

/// −‖x − 1‖², maximal (0) at (1, …, 1).
fn neg_sphere(x: &[f64]) -> f64 {
    -x.iter().map(|v| (v - 1.0).powi(2)).sum::<f64>()
}

/// A run on the deterministic sphere until [`Swarm::best`] reaches
/// `target` (checked after every batch) or the generations run out.
struct SphereRun {
    /// The particles' positions of every generation's batch, as bits.
    particles: Vec<Vec<Vec<u64>>>,
    /// The re-evaluations in each batch.
    again: Vec<usize>,
    /// Evaluations until the best reached the target.
    to_target: Option<usize>,
    best: (Vec<f64>, f64),
    deterministic: bool,
}

fn sphere_run(dim: usize, topology: Topology, reevaluate: u32, seed: u64) -> SphereRun {
    let space = square(-5.0, 5.0, dim, -3.0);
    let config = PsoConfig {
        topology,
        ..config(20, 400, reevaluate)
    };
    let mut swarm = Swarm::new(&space, &config, seed).unwrap();
    let mut run = SphereRun {
        particles: Vec::new(),
        again: Vec::new(),
        to_target: None,
        best: (Vec::new(), 0.0),
        deterministic: false,
    };
    let mut evaluations = 0;
    while let Step::Evaluate(batch) = swarm.ask() {
        let fresh = batch.len().min(20);
        run.particles.push(
            batch[..fresh]
                .iter()
                .map(|c| c.x.iter().map(|v| v.to_bits()).collect())
                .collect(),
        );
        run.again.push(batch.len() - fresh);
        for c in &batch {
            evaluations += 1;
            swarm.tell(c.tag, Fitness::Value(neg_sphere(&c.x)));
        }
        if run.to_target.is_none() && swarm.best().is_some_and(|(_, f)| f >= -1e-6) {
            run.to_target = Some(evaluations);
        }
    }
    let (x, f) = swarm.best().unwrap();
    run.best = (x.to_vec(), f);
    run.deterministic = swarm.deterministic();
    run
}

#[test]
fn a_deterministic_objective_stops_the_re_evaluations_after_three_rounds() {
    // Measured (20 seeds, 20 particles, evaluations until the reported
    // best is within 1e-8, 1e-6, 1e-4 of the optimum in 2, 5, 10
    // dimensions): before the detection, reevaluate = 2 took 15–26 % more
    // than reevaluate = 0 with `global` (it followed a confirmed best one
    // generation behind) and 10–11 % more with `ring`; now the particles
    // are the classic swarm's bit for bit and the overhead is the three
    // rounds' re-evaluations, 4 to 40.
    for topology in [Topology::Global, Topology::Ring] {
        for dim in [2, 5] {
            for seed in 0..4 {
                let case = format!("{topology:?}, {dim}-D, seed {seed}");
                let classic = sphere_run(dim, topology, 0, seed);
                let default = sphere_run(dim, topology, 2, seed);
                assert!(!classic.deterministic, "{case}");
                assert!(default.deterministic, "{case}");
                // Re-evaluations in the three batches after the first
                // (the first round confirms the first generation's best
                // twice), none after them.
                assert_eq!(default.again[0], 0, "{case}");
                let rounds = 1..=EXACT_ROUNDS as usize;
                assert!(rounds.clone().all(|b| default.again[b] > 0), "{case}");
                assert_eq!(default.again[1], 2, "{case}");
                assert!(
                    default.again[EXACT_ROUNDS as usize + 1..]
                        .iter()
                        .all(|&a| a == 0),
                    "{case}: {:?}",
                    default.again
                );
                // The same particles, generation by generation, and the
                // same best point, value and reach.
                assert_eq!(default.particles, classic.particles, "{case}");
                assert_eq!(default.best, classic.best, "{case}");
                let overhead: usize = default.again.iter().sum();
                assert!(overhead <= 60, "{case}: {overhead}");
                let (Some(with), Some(without)) = (default.to_target, classic.to_target) else {
                    panic!("{case}: target not reached");
                };
                assert_eq!(with, without + overhead, "{case}");
            }
        }
    }
}

/// Evaluates `noisy_by_tag`'s sphere without noise in the batches before
/// `from` and with it from there on; the re-evaluations of each batch and
/// whether the swarm ended deterministic.
fn noise_from_batch(from: usize, reevaluate: u32) -> (Vec<usize>, bool) {
    let space = square(-5.0, 5.0, 3, 4.0);
    let mut swarm = Swarm::new(&space, &config(10, 20, reevaluate), 9).unwrap();
    let mut again = Vec::new();
    while let Step::Evaluate(batch) = swarm.ask() {
        let noisy = again.len() >= from;
        again.push(batch.len().saturating_sub(10));
        for c in batch.iter().rev() {
            let value = match noisy_by_tag(c) {
                Fitness::Value(_) if !noisy => Fitness::Value(neg_sphere(&c.x)),
                outcome => outcome,
            };
            swarm.tell(c.tag, value);
        }
    }
    (again, swarm.deterministic())
}

#[test]
fn noise_seen_in_any_of_the_first_rounds_keeps_the_re_evaluations_for_good() {
    // Batch b > 0 carries round b. Noise in round 1, 2 or 3 keeps every
    // later generation confirming (the incumbent at least, once per
    // generation).
    for from in 0..=EXACT_ROUNDS as usize {
        let (again, deterministic) = noise_from_batch(from, 2);
        assert!(!deterministic, "noise from batch {from}");
        assert!(again[1..20].iter().all(|&a| a > 0), "{from}: {again:?}");
    }
}

#[test]
fn noise_that_first_appears_after_the_third_round_is_not_seen() {
    // The documented limit: three exact rounds and the swarm is the
    // classic one for good, whatever the values do later.
    let (again, deterministic) = noise_from_batch(EXACT_ROUNDS as usize + 1, 2);
    assert!(deterministic);
    assert!(again[1..=3].iter().all(|&a| a > 0), "{again:?}");
    assert!(again[4..].iter().all(|&a| a == 0), "{again:?}");
    assert_eq!(again.len(), 20);
}

#[test]
fn noise_confined_to_the_trap_can_hide_from_the_first_rounds() {
    // The same limit where the noise is confined to a region: with exact
    // values outside the trap, the first rounds compare only exact points
    // in some runs, and those runs are the classic swarm, lured by lucky
    // values. Measured: 39 of 100 seeds judged deterministic, 66 end
    // outside the trap (98 before the detection); 5 of the 20 here.
    let space = square(-1.0, 1.0, 2, -0.4);
    let mut judged = 0;
    for seed in 0..20 {
        let mut swarm = Swarm::new(&space, &config(20, 40, 2), seed).unwrap();
        let mut noise = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        while let Step::Evaluate(batch) = swarm.ask() {
            for c in &batch {
                let loud = if c.x[0] > 0.5 {
                    normal(&mut noise)
                } else {
                    0.0
                };
                swarm.tell(c.tag, Fitness::Value(trap_mean(&c.x) + loud));
            }
        }
        judged += usize::from(swarm.deterministic());
    }
    assert!((1..10).contains(&judged), "judged deterministic: {judged}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With re-evaluations every candidate stays in the box, tags are
    /// never reused, each generation's batch holds the whole swarm first
    /// and every re-evaluation repeats a point proposed before.
    #[test]
    fn re_evaluations_repeat_earlier_points_inside_the_box(
        dim in 1usize..4,
        particles in 2usize..8,
        iterations in 1u64..12,
        reevaluate in 1u32..=4,
        ring in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let space = square(-1.0, 2.0, dim, 0.0);
        let config = PsoConfig {
            topology: if ring { Topology::Ring } else { Topology::Global },
            ..config(particles, iterations, reevaluate)
        };
        let mut swarm = Swarm::new(&space, &config, seed).unwrap();
        let mut noise = ChaCha8Rng::seed_from_u64(seed);
        let mut seen: Vec<Vec<f64>> = Vec::new();
        let mut tags = std::collections::BTreeSet::new();
        let mut batches = 0u64;
        while let Step::Evaluate(batch) = swarm.ask() {
            let fresh = if batches < iterations { particles } else { 0 };
            prop_assert!(batch.len() >= fresh);
            for (i, c) in batch.iter().enumerate() {
                prop_assert!(space.contains(&c.x), "{:?}", c.x);
                prop_assert!(tags.insert(c.tag), "tag {} reused", c.tag);
                if i >= fresh {
                    prop_assert!(seen.contains(&c.x), "{:?} was never proposed", c.x);
                }
            }
            seen.extend(batch.iter().map(|c| c.x.clone()));
            for c in batch.iter().rev() {
                let value = if noise.random::<f64>() < 0.1 {
                    Fitness::Failed
                } else {
                    Fitness::Value(c.x.iter().sum::<f64>() + normal(&mut noise))
                };
                swarm.tell(c.tag, value);
            }
            batches += 1;
        }
        prop_assert!(batches == iterations || batches == iterations + 1);
        prop_assert_eq!(swarm.generations_done(), iterations);
    }
}
