//! Powell on a noisy objective: `reevaluate` (crate docs, "Noise").

mod common;
use common::neg_rotated_quadratic;
use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{Bound, Fitness, Optimizer, Plugin, SettingValue, Settings, Space, Step};
use yamor_powell::{Incumbent, Powell, PowellConfig};

fn settings(pairs: &[(&str, SettingValue)]) -> Settings {
    let given: BTreeMap<String, SettingValue> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    Settings::resolve(&Powell.info().settings, &given).unwrap()
}

fn config(variant: &str, reevaluate: i64) -> PowellConfig {
    PowellConfig::try_from(&settings(&[
        ("variant", SettingValue::Text(variant.into())),
        ("reevaluate", SettingValue::Int(reevaluate)),
    ]))
    .unwrap()
}

fn square(dim: usize, start: &[f64]) -> Space {
    Space::new(
        (0..dim)
            .map(|i| Bound::new(format!("x{i}"), -1.0, 1.0))
            .collect(),
        start.to_vec(),
    )
    .unwrap()
}

/// One standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// How results are told back.
#[derive(Clone, Copy)]
enum Order {
    Forward,
    Reverse,
    /// Odd positions first, then even ones, with an unknown tag and a
    /// stale one (from the previous batch) told in between.
    Shuffled,
}

struct Run {
    points: Vec<Vec<f64>>,
    batches: Vec<usize>,
    best: Option<Incumbent>,
}

/// Drives a search for `evaluations` proposals (or to its end). The
/// objective is asked in proposal order, so it may draw fresh noise from
/// its own generator for every evaluation; results are told in `order`.
fn drive(
    space: &Space,
    config: PowellConfig,
    seed: u64,
    evaluations: usize,
    order: Order,
    mut f: impl FnMut(&[f64]) -> Fitness,
) -> Run {
    let mut opt = Powell::search(space, config, seed, Some(evaluations as u64)).unwrap();
    let mut run = Run {
        points: vec![],
        batches: vec![],
        best: None,
    };
    let mut stale = None;
    while run.points.len() < evaluations {
        let candidates = match opt.ask() {
            Step::Evaluate(candidates) => candidates,
            Step::Wait => panic!("waits with nothing outstanding"),
            Step::Finished => break,
        };
        run.batches.push(candidates.len());
        let mut results: Vec<(u64, Fitness)> = candidates
            .iter()
            .map(|c| {
                run.points.push(c.x.clone());
                (c.tag, f(&c.x))
            })
            .collect();
        match order {
            Order::Forward => {}
            Order::Reverse => results.reverse(),
            Order::Shuffled => {
                let (odd, even): (Vec<_>, Vec<_>) =
                    results.iter().enumerate().partition(|(i, _)| i % 2 == 1);
                results = odd.into_iter().chain(even).map(|(_, r)| *r).collect();
            }
        }
        for (i, (tag, outcome)) in results.iter().enumerate() {
            if matches!(order, Order::Shuffled) && i == results.len() / 2 {
                opt.tell(u64::MAX - 3, Fitness::Value(1e9));
                if let Some(old) = stale {
                    opt.tell(old, Fitness::Value(1e9));
                }
            }
            opt.tell(*tag, *outcome);
        }
        stale = results.first().map(|(tag, _)| *tag);
    }
    run.best = opt.best();
    run
}

/// The true (mean) fitness of the trap objective: −‖x‖², and 0.5 less in
/// the trap x0 > 0.5.
fn trap_mean(x: &[f64]) -> f64 {
    -x.iter().map(|v| v * v).sum::<f64>() - if x[0] > 0.5 { 0.5 } else { 0.0 }
}

/// One evaluation of the trap objective: a little noise everywhere, and
/// in the trap a lot (3·N(0, 1)), fresh at every evaluation.
fn trap(rng: &mut ChaCha8Rng, x: &[f64]) -> Fitness {
    let noise = 0.02 * normal(rng) + if x[0] > 0.5 { 3.0 * normal(rng) } else { 0.0 };
    Fitness::Value(trap_mean(x) + noise)
}

/// Where a search on the trap ends: in the good region or not, and how
/// far its reported fitness is from the true one there.
fn trap_runs(config: &PowellConfig) -> (usize, f64) {
    let mut good = 0;
    let mut error = 0.0;
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(1_000 + seed);
        let run = drive(
            &square(2, &[-0.6, 0.5]),
            config.clone(),
            seed,
            300,
            Order::Reverse,
            |x| trap(&mut rng, x),
        );
        let best = run.best.expect("an incumbent");
        if best.x[0] <= 0.5 {
            good += 1;
        }
        error += (best.fitness - trap_mean(&best.x)).abs() / 20.0;
    }
    (good, error)
}

#[test]
fn one_lucky_walk_in_a_noisy_trap_does_not_fool_reevaluating_powell() {
    // The trap (x0 > 0.5) is worse on average but much noisier: the best of
    // a few of its values beats everything real. One-sample Powell moves
    // in on such a value and stays, since nothing real beats it again;
    // re-evaluating Powell sees through it.
    let one_sample = trap_runs(&PowellConfig {
        reevaluate: 0,
        ..PowellConfig::default()
    });
    let reevaluating = trap_runs(&PowellConfig::default());
    println!("one sample: {one_sample:?}, reevaluating (default): {reevaluating:?}");
    assert!(
        reevaluating.0 >= 17 && reevaluating.0 >= one_sample.0 + 5,
        "ends in the good region: one sample {}/20, reevaluating {}/20",
        one_sample.0,
        reevaluating.0
    );
    // The winner's curse: the value reported for the best point against
    // its true value.
    assert!(
        reevaluating.1 < 0.3 && reevaluating.1 < one_sample.1 / 4.0,
        "mean |reported - true|: one sample {}, reevaluating {}",
        one_sample.1,
        reevaluating.1
    );
}

#[test]
fn the_default_reevaluates_and_best_reports_the_mean_and_its_count() {
    assert_eq!(
        PowellConfig::default().reevaluate,
        yamor_powell::DEFAULT_REEVALUATE
    );
    // Noise-free: the challenges repeat points (k of the candidate, k of
    // the incumbent, in one batch) and the means are the values.
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let run = drive(
            &square(3, &[-0.8, 0.5, 0.1]),
            config(variant, 3),
            4,
            600,
            Order::Reverse,
            |x| Fitness::Value(-x.iter().map(|v| (v - 0.3).powi(2)).sum::<f64>()),
        );
        let best = run.best.unwrap();
        assert!(best.fitness > -1e-3, "{variant}: {best:?}");
        assert!(best.evaluations >= 4, "{variant}: {best:?}");
        let value = -best.x.iter().map(|v| (v - 0.3).powi(2)).sum::<f64>();
        assert!(
            (best.fitness - value).abs() <= 1e-12 * value.abs(),
            "{variant}: {best:?}"
        );
        let seen = run.points.iter().filter(|p| **p == best.x).count();
        assert_eq!(seen, best.evaluations as usize, "{variant}");
        assert!(
            run.batches.contains(&6),
            "{variant}: a challenge batch {:?}",
            run.batches
        );
    }
}

/// FNV-1a over every proposal's bits and every batch's size.
fn fingerprint(run: &Run) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut mix = |v: u64| {
        for byte in v.to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut points = run.points.iter();
    for size in &run.batches {
        mix(*size as u64);
        // The order the old probe hashed them in: each batch reversed.
        let batch: Vec<&Vec<f64>> = points.by_ref().take(*size).collect();
        for p in batch.iter().rev() {
            p.iter().for_each(|v| mix(v.to_bits()));
        }
    }
    hash
}

#[test]
fn reevaluate_zero_proposes_exactly_what_powell_did_before_it() {
    // Recorded from the plugin before `reevaluate` existed (its code as
    // of commit ba4d309): every proposal of every variant, with a budget
    // and without (restarts), on an objective with failures, walls and a
    // valley.
    let before = [
        ("classic", true, 0x0128_893c_9c09_bdcd_u64, 1_500),
        ("classic", false, 0x4cc0_d1f7_78a7_330e, 1_301),
        ("stadium", true, 0x273f_bf84_ab56_3037, 1_500),
        ("stadium", false, 0xd3e1_e23c_74d4_a978, 1_294),
        ("clamp", true, 0x1a58_d1a2_7dbd_a890, 1_500),
        ("clamp", false, 0x53eb_aef1_09f0_53fd, 1_804),
        ("interval", true, 0x80c4_5018_a165_7215, 1_503),
        ("interval", false, 0xde4d_37d4_ce4c_e1d4, 4_172),
    ];
    for (variant, with_budget, hash, evaluations) in before {
        let space = Space::new(
            (0..4)
                .map(|i| Bound::new(format!("x{i}"), -1.0, 1.0))
                .collect(),
            vec![0.2, -0.4, 0.6, 0.0],
        )
        .unwrap();
        let (budget, cap) = if with_budget {
            (Some(1_500), 1_500)
        } else {
            (None, 50_000)
        };
        let mut opt = Powell
            .create(
                &space,
                &settings(&[
                    ("variant", SettingValue::Text(variant.into())),
                    ("reevaluate", SettingValue::Int(0)),
                    // The thesis' fixed line-search resolution.
                    ("step_tolerance", SettingValue::Float(0.0)),
                ]),
                13,
                budget,
            )
            .unwrap();
        let mut run = Run {
            points: vec![],
            batches: vec![],
            best: None,
        };
        while run.points.len() < cap {
            let Step::Evaluate(candidates) = opt.ask() else {
                break;
            };
            run.batches.push(candidates.len());
            for c in &candidates {
                run.points.push(c.x.clone());
            }
            for c in candidates.iter().rev() {
                let x = &c.x;
                let outcome = if x[1] > 0.7 {
                    Fitness::Failed
                } else {
                    Fitness::Value(
                        -(x[0] - 0.3).powi(2)
                            - 10.0 * (x[1] - x[0] * x[0]).powi(2)
                            - (x[2] + 0.5).abs()
                            - 3.0 * (x[3] - 0.9).powi(2),
                    )
                };
                opt.tell(c.tag, outcome);
            }
        }
        assert_eq!(
            (fingerprint(&run), run.points.len()),
            (hash, evaluations),
            "{variant}, budget {budget:?}"
        );
    }
}

#[test]
fn noisy_results_told_in_any_order_give_the_same_proposals() {
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let run = |order| {
            let mut rng = ChaCha8Rng::seed_from_u64(77);
            let run = drive(
                &square(3, &[0.9, -0.2, 0.4]),
                config(variant, 2),
                5,
                700,
                order,
                |x| trap(&mut rng, x),
            );
            (run.points, run.best)
        };
        let forward = run(Order::Forward);
        assert!(forward.0.len() >= 700, "{variant}");
        assert_eq!(forward, run(Order::Reverse), "{variant}");
        assert_eq!(forward, run(Order::Shuffled), "{variant}");
    }
}

#[test]
fn a_point_with_a_failed_evaluation_is_never_the_incumbent() {
    // Every point's first walk succeeds; walks again at x0 > 0 fail. The
    // optimum (0.3, 0.3) looks best, but nothing with x0 > 0 can pass its
    // challenge: the incumbent stays where every evaluation succeeded, and
    // its mean is a real number.
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let mut seen: Vec<Vec<f64>> = Vec::new();
        let run = drive(
            &square(2, &[-0.9, -0.9]),
            config(variant, 2),
            3,
            800,
            Order::Reverse,
            |x| {
                let again = seen.iter().any(|p| p == x);
                seen.push(x.to_vec());
                if again && x[0] > 0.0 {
                    Fitness::Failed
                } else {
                    Fitness::Value(-x.iter().map(|v| (v - 0.3).powi(2)).sum::<f64>())
                }
            },
        );
        let best = run.best.unwrap();
        assert!(best.x[0] <= 0.0, "{variant}: {best:?}");
        assert!(best.fitness.is_finite(), "{variant}: {best:?}");
        assert!(best.evaluations >= 3, "{variant}: {best:?}");
        // It still climbed the allowed half (from -2.9; -0.09 at best).
        assert!(best.fitness > -0.2, "{variant}: {best:?}");
    }
}

#[test]
fn a_failed_incumbent_is_replaced_by_any_real_value() {
    // The start fails; any point that walks is better than it.
    let run = drive(
        &square(2, &[0.0, 0.0]),
        config("classic", 2),
        1,
        300,
        Order::Reverse,
        |x| {
            if x.iter().all(|v| *v == 0.0) {
                Fitness::Failed
            } else {
                Fitness::Value(-x.iter().map(|v| (v - 0.5).powi(2)).sum::<f64>())
            }
        },
    );
    let best = run.best.unwrap();
    assert!(best.fitness > -1e-3, "{best:?}");
}

/// The valley of the replay test above (a failing region, walls, a
/// curved valley), noise-free.
fn valley(x: &[f64]) -> Fitness {
    if x[1] > 0.7 {
        Fitness::Failed
    } else {
        Fitness::Value(
            -(x[0] - 0.3).powi(2)
                - 10.0 * (x[1] - x[0] * x[0]).powi(2)
                - (x[2] + 0.5).abs()
                - 3.0 * (x[3] - 0.9).powi(2),
        )
    }
}

/// A run's proposals, batch by batch, told in reverse order, up to `cap`
/// proposals or the search's end, and its recommendation at the end.
fn batches(
    space: &Space,
    config: PowellConfig,
    seed: u64,
    budget: Option<u64>,
    cap: usize,
    f: impl Fn(&[f64]) -> Fitness,
) -> (Vec<Vec<Vec<f64>>>, Option<Vec<f64>>) {
    let mut opt = Powell::search(space, config, seed, budget).unwrap();
    let mut batches: Vec<Vec<Vec<f64>>> = Vec::new();
    while batches.iter().map(Vec::len).sum::<usize>() < cap {
        let Step::Evaluate(candidates) = opt.ask() else {
            break;
        };
        batches.push(candidates.iter().map(|c| c.x.clone()).collect());
        for c in candidates.iter().rev() {
            opt.tell(c.tag, f(&c.x));
        }
    }
    assert_eq!(opt.recommendation(), opt.best().map(|b| b.x));
    (batches, opt.recommendation())
}

/// Splits proposals into first proposals of a point and re-proposals of a
/// point proposed before (in a batch of its own or in an earlier one),
/// with the indices of the batches that hold re-proposals.
fn split_repeats(batches: &[Vec<Vec<f64>>]) -> (Vec<Vec<f64>>, usize, Vec<usize>) {
    let mut seen: Vec<&Vec<f64>> = Vec::new();
    let (mut fresh, mut repeats, mut holding) = (Vec::new(), 0, Vec::new());
    for (i, batch) in batches.iter().enumerate() {
        let mut any = false;
        for x in batch {
            if seen.contains(&x) {
                repeats += 1;
                any = true;
            } else {
                seen.push(x);
                fresh.push(x.clone());
            }
        }
        if any {
            holding.push(i);
        }
    }
    (fresh, repeats, holding)
}

#[test]
fn a_deterministic_objective_is_confirmed_three_times_then_searched_as_by_the_thesis_powell() {
    // The default re-evaluates; on a noise-free objective its first
    // EXACT_ROUNDS confirmations reproduce every value bit for bit, and it
    // stops. Its proposals are then the thesis' (reevaluate = 0), proposal
    // for proposal, with those few confirmation batches in between, and it
    // ends on the same point.
    let k = yamor_powell::DEFAULT_REEVALUATE as usize;
    let space = square(4, &[0.2, -0.4, 0.6, 0.0]);
    for variant in ["classic", "stadium", "clamp", "interval"] {
        for seed in [13, 14] {
            // At the thesis' fixed line-search resolution: with
            // `step_tolerance` the resolution follows the moves only once
            // the search no longer re-evaluates, so the default and
            // `reevaluate` = 0 differ from their first line search.
            let fixed = |reevaluate| PowellConfig {
                step_tolerance: 0.0,
                ..config(variant, reevaluate)
            };
            let (default, recommended) = batches(&space, fixed(2), seed, None, 50_000, valley);
            let (thesis, thesis_recommended) =
                batches(&space, fixed(0), seed, None, 50_000, valley);
            let (fresh, repeats, holding) = split_repeats(&default);
            assert_eq!(
                repeats,
                yamor_powell::EXACT_ROUNDS as usize * 2 * k,
                "{variant}, seed {seed}"
            );
            assert_eq!(holding.len(), yamor_powell::EXACT_ROUNDS as usize);
            for i in holding {
                assert_eq!(default[i].len(), 2 * k, "{variant}: a whole challenge");
            }
            let thesis: Vec<Vec<f64>> = thesis.concat();
            assert!(thesis.len() > 1_000, "{variant}: {}", thesis.len());
            assert!(fresh == thesis, "{variant}, seed {seed}: another path");
            assert_eq!(recommended, thesis_recommended, "{variant}, seed {seed}");
        }
    }
}

#[test]
fn the_detection_is_the_same_whatever_the_tell_order() {
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let run = |order| {
            let run = drive(
                &square(4, &[0.2, -0.4, 0.6, 0.0]),
                config(variant, 2),
                5,
                900,
                order,
                valley,
            );
            (run.points, run.batches, run.best)
        };
        let forward = run(Order::Forward);
        assert_eq!(forward, run(Order::Reverse), "{variant}");
        assert_eq!(forward, run(Order::Shuffled), "{variant}");
    }
}

/// Evaluations until one reaches fitness −1e-8 (in proposal order).
fn evaluations_to_target(
    variant: &str,
    reevaluate: i64,
    seed: u64,
    f: &dyn Fn(&[f64]) -> f64,
) -> usize {
    let space = Space::new(
        (0..10)
            .map(|i| Bound::new(format!("x{i}"), -5.0, 5.0))
            .collect(),
        vec![4.0; 10],
    )
    .unwrap();
    // At the thesis' fixed line-search resolution, where the detection
    // leaves the default on `reevaluate` = 0's path (see
    // a_deterministic_objective_is_confirmed_three_times_then_searched_as_by_the_thesis_powell).
    let config = PowellConfig {
        step_tolerance: 0.0,
        ..config(variant, reevaluate)
    };
    let mut opt = Powell::search(&space, config, seed, Some(20_000)).unwrap();
    let mut evaluations = 0;
    loop {
        let Step::Evaluate(candidates) = opt.ask() else {
            panic!("{variant}: the target is not reached");
        };
        let values: Vec<f64> = candidates.iter().map(|c| f(&c.x)).collect();
        for (i, v) in values.iter().enumerate() {
            if *v >= -1e-8 {
                return evaluations + i + 1;
            }
        }
        evaluations += candidates.len();
        for (c, v) in candidates.iter().zip(values).rev() {
            opt.tell(c.tag, Fitness::Value(v));
        }
    }
}

#[test]
fn on_a_noise_free_10d_ellipsoid_the_default_costs_a_few_evaluations_more_than_none() {
    // Before the detection, the default took about 1.5 times the
    // evaluations of reevaluate = 0 here; now the three confirmations
    // (2·k·3 = 12 evaluations) are all it pays.
    let extra = yamor_powell::EXACT_ROUNDS as usize * 2 * yamor_powell::DEFAULT_REEVALUATE as usize;
    for (name, condition) in [("sphere", 1.0), ("ellipsoid", 1e3)] {
        let f = neg_rotated_quadratic(10, condition);
        for variant in ["classic", "stadium", "clamp", "interval"] {
            for seed in 0..2 {
                let none = evaluations_to_target(variant, 0, seed, &f);
                let default = evaluations_to_target(variant, 2, seed, &f);
                assert!(
                    default <= none + extra,
                    "{name}, {variant}, seed {seed}: {default} against {none}"
                );
                if condition > 1.0 {
                    assert!(
                        default as f64 <= 1.1 * none as f64,
                        "{name}, {variant}, seed {seed}: {default} against {none}"
                    );
                }
            }
        }
    }
}

#[test]
fn noise_seen_in_any_of_the_first_rounds_keeps_the_reevaluation_for_good() {
    // Noise-free, except that re-evaluations from the `from`-th on (0-based)
    // land 1e-12 off: a disagreement in the second or the third round keeps
    // the confirmations going to the end; one that starts only after the
    // third round is never seen (the detection's limit).
    let k = yamor_powell::DEFAULT_REEVALUATE as usize;
    for (from, keeps) in [(0, true), (2 * k, true), (4 * k, true), (6 * k, false)] {
        let mut seen: Vec<Vec<f64>> = Vec::new();
        let mut repeats = 0;
        let run = drive(
            &square(4, &[0.2, -0.4, 0.6, 0.0]),
            config("classic", 2),
            4,
            1_500,
            Order::Reverse,
            |x| {
                let value = valley(x);
                if seen.iter().any(|p| p == x) {
                    repeats += 1;
                    if repeats > from {
                        return Fitness::Value(value.value() + 1e-12);
                    }
                } else {
                    seen.push(x.to_vec());
                }
                value
            },
        );
        let batches: Vec<Vec<Vec<f64>>> = {
            let mut points = run.points.iter();
            run.batches
                .iter()
                .map(|n| points.by_ref().take(*n).cloned().collect())
                .collect()
        };
        let (_, repeats, holding) = split_repeats(&batches);
        let rounds = yamor_powell::EXACT_ROUNDS as usize;
        if keeps {
            // Every later line search that looks better is still confirmed.
            assert!(holding.len() > 3 * rounds, "from {from}: {holding:?}");
            assert_eq!(repeats, holding.len() * 2 * k, "from {from}");
        } else {
            assert_eq!(holding.len(), rounds, "from {from}: {holding:?}");
        }
    }
}

#[test]
fn the_recommendation_is_the_incumbent() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut opt = Powell::search(
        &square(2, &[-0.6, 0.5]),
        PowellConfig::default(),
        2,
        Some(300),
    )
    .unwrap();
    assert_eq!(opt.recommendation(), None);
    let mut asks = 0;
    while let Step::Evaluate(candidates) = opt.ask() {
        asks += 1;
        // Published before the batch: the incumbent, never its challenger.
        assert_eq!(opt.recommendation(), opt.best().map(|b| b.x));
        for c in candidates.iter().rev() {
            opt.tell(c.tag, trap(&mut rng, &c.x));
        }
    }
    assert!(asks > 10);
    let best = opt.best().unwrap();
    assert!(best.evaluations > 1, "{best:?}");
    assert_eq!(opt.recommendation(), Some(best.x));
}
