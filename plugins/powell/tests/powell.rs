use std::collections::BTreeMap;

mod common;

use proptest::prelude::*;
use yamor_optimizer_api::{Bound, Fitness, Plugin, SettingValue, Settings, Space, Step};
use yamor_powell::Powell;

fn space(dim: usize, lo: f64, hi: f64, start: f64) -> Space {
    Space::new(
        (0..dim)
            .map(|i| Bound::new(format!("x{i}"), lo, hi))
            .collect(),
        vec![start; dim],
    )
    .unwrap()
}

fn settings(pairs: &[(&str, SettingValue)]) -> Settings {
    let given: BTreeMap<String, SettingValue> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    Settings::resolve(&Powell.info().settings, &given).unwrap()
}

struct Trace {
    best: f64,
    evaluations: usize,
    batches: Vec<usize>,
    points: Vec<Vec<f64>>,
    finished: bool,
}

/// Drives the plugin to the end (or `budget`) on `f`, telling in reverse order.
fn drive(
    space: &Space,
    variant: &str,
    seed: u64,
    budget: usize,
    f: impl Fn(&[f64]) -> f64,
) -> Trace {
    drive_with(space, variant, seed, budget, None, true, |x| {
        Fitness::Value(f(x))
    })
}

/// Drives the plugin, telling the runtime's `told_budget` (or none), results
/// in reverse order or in proposal order.
fn drive_with(
    space: &Space,
    variant: &str,
    seed: u64,
    budget: usize,
    told_budget: Option<u64>,
    reverse: bool,
    f: impl Fn(&[f64]) -> Fitness,
) -> Trace {
    let s = settings(&[("variant", SettingValue::Text(variant.into()))]);
    drive_settings(space, &s, seed, budget, told_budget, reverse, f)
}

/// The thesis' Powell: `variant` without re-evaluation (`reevaluate` = 0)
/// and with its fixed line-search resolution (`step_tolerance` = 0), for
/// the tests of its exact proposal pattern.
fn thesis(variant: &str) -> Settings {
    settings(&[
        ("variant", SettingValue::Text(variant.into())),
        ("reevaluate", SettingValue::Int(0)),
        ("step_tolerance", SettingValue::Float(0.0)),
    ])
}

/// [`drive_with`] with any settings.
fn drive_settings(
    space: &Space,
    s: &Settings,
    seed: u64,
    budget: usize,
    told_budget: Option<u64>,
    reverse: bool,
    f: impl Fn(&[f64]) -> Fitness,
) -> Trace {
    let mut opt = Powell.create(space, s, seed, told_budget).unwrap();
    let mut trace = Trace {
        best: f64::NEG_INFINITY,
        evaluations: 0,
        batches: vec![],
        points: vec![],
        finished: false,
    };
    while trace.evaluations < budget {
        match opt.ask() {
            Step::Finished => {
                trace.finished = true;
                break;
            }
            Step::Wait => panic!("nothing outstanding, yet the optimizer waits"),
            Step::Evaluate(candidates) => {
                trace.batches.push(candidates.len());
                let mut results: Vec<_> = candidates
                    .iter()
                    .map(|c| {
                        let o = f(&c.x);
                        trace.best = trace.best.max(o.value());
                        trace.evaluations += 1;
                        trace.points.push(c.x.clone());
                        (c.tag, o)
                    })
                    .collect();
                if reverse {
                    results.reverse();
                }
                for (tag, o) in results {
                    opt.tell(tag, o);
                }
            }
        }
    }
    trace
}

fn neg_sphere(x: &[f64]) -> f64 {
    -x.iter().map(|v| (v - 0.3) * (v - 0.3)).sum::<f64>()
}

fn neg_rosenbrock(x: &[f64]) -> f64 {
    -((1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2))
}

#[test]
fn every_variant_finds_the_sphere_maximum() {
    for variant in ["classic", "stadium", "clamp", "interval"] {
        for dim in [2, 5] {
            let t = drive(&space(dim, -1.0, 1.0, -0.8), variant, 1, 5_000, neg_sphere);
            // The regular-interval search resolves a quarter of a grid step
            // (2/9 of the range) per coordinate: about 0.03 here.
            let tolerance = if variant == "interval" { 5e-3 } else { 1e-3 };
            assert!(t.best > -tolerance, "{variant} {dim}-D: {}", t.best);
        }
    }
}

#[test]
fn classic_powell_follows_the_rosenbrock_valley() {
    let t = drive(
        &space(2, -2.0, 2.0, -1.0),
        "classic",
        3,
        20_000,
        neg_rosenbrock,
    );
    assert!(t.best > -1e-2, "{}", t.best);
}

#[test]
fn the_optimum_on_a_wall_is_reached_without_leaving_the_box() {
    // Maximum of x+y on the box is the corner (1, 1).
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let t = drive(&space(2, -1.0, 1.0, 0.0), variant, 5, 2_000, |x| {
            x[0] + x[1]
        });
        assert!(t.best > 1.95, "{variant}: {}", t.best);
        assert!(
            t.points
                .iter()
                .all(|p| p.iter().all(|v| (-1.0..=1.0).contains(v)))
        );
    }
}

#[test]
fn interval_variant_asks_ten_then_five_in_parallel() {
    let t = drive(&space(3, -1.0, 1.0, 0.5), "interval", 1, 500, neg_sphere);
    assert!(t.batches.contains(&10), "{:?}", t.batches);
    assert!(t.batches.iter().all(|b| *b <= 10));
    // The thesis' classic Powell; re-evaluation (`reevaluate` > 0) asks
    // its challenges in parallel batches.
    let classic = drive_settings(
        &space(3, -1.0, 1.0, 0.5),
        &thesis("classic"),
        1,
        500,
        None,
        true,
        |x| Fitness::Value(neg_sphere(x)),
    );
    assert!(
        classic.batches.iter().all(|b| *b == 1),
        "classic Powell is sequential"
    );
}

#[test]
fn same_seed_same_path_different_seed_different_brackets() {
    let a = drive(&space(3, -1.0, 1.0, 0.9), "classic", 7, 300, neg_sphere);
    let b = drive(&space(3, -1.0, 1.0, 0.9), "classic", 7, 300, neg_sphere);
    assert_eq!(a.points, b.points);
    let c = drive(&space(3, -1.0, 1.0, 0.9), "classic", 8, 300, neg_sphere);
    assert_ne!(a.points, c.points);
}

#[test]
fn failures_and_outside_points_rank_below_every_real_value() {
    // Every real value is far below the thesis' old fixed bad value (-1),
    // and the half-plane x0 > 0.5 fails. The search must still climb to the
    // real maximum at (0.3, 0.3), never towards failed or outside points.
    // The thesis' bad-value rule, with `reevaluate` = 0: where 1,500
    // evaluations end in the interval variant's cycle of scans and
    // refinements (so how many of the last 20 are near) depends on every
    // evaluation before; tests/noise.rs checks failures with re-evaluation.
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let t = drive_settings(
            &space(2, -1.0, 1.0, -0.7),
            &thesis(variant),
            1,
            1_500,
            Some(1_500),
            true,
            |x| {
                if x[0] > 0.5 {
                    Fitness::Failed
                } else {
                    Fitness::Value(-1e9 + 1e6 * neg_sphere(x))
                }
            },
        );
        assert!(t.best > -1e9 - 1e-3, "{variant}: {}", t.best);
        // The last proposals gather around the real maximum.
        let last = &t.points[t.points.len() - 20..];
        let near = last
            .iter()
            .filter(|p| p.iter().all(|v| (v - 0.3).abs() < 0.3))
            .count();
        assert!(near >= 10, "{variant}: {last:?}");
    }
}

#[test]
fn the_bounded_line_search_reaches_an_optimum_on_the_box_edge() {
    // The maximum of a linear slope is the corner (1, ..., 1), and the
    // start is at the opposite side: each line search must cross the box.
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let t = drive_with(
            &space(5, -1.0, 1.0, -0.9),
            variant,
            2,
            600,
            Some(600),
            true,
            |x| Fitness::Value(x.iter().sum::<f64>()),
        );
        assert!(t.best > 5.0 - 1e-6, "{variant}: {}", t.best);
    }
}

#[test]
fn with_a_budget_it_never_stops_before_it_and_without_one_it_ends() {
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let t = drive_with(
            &space(3, -1.0, 1.0, 0.5),
            variant,
            3,
            10_000,
            Some(3_000),
            true,
            |x| Fitness::Value(neg_sphere(x)),
        );
        // The sphere is solved long before; restarts keep using the budget.
        assert!(t.best > -1e-12, "{variant}: {}", t.best);
        // It may say Finished once the budget is spent, never before.
        assert!(
            t.evaluations >= 3_000,
            "{variant} stopped after {}",
            t.evaluations
        );
        let t = drive_with(
            &space(3, -1.0, 1.0, 0.5),
            variant,
            3,
            1_000_000,
            None,
            true,
            |x| Fitness::Value(neg_sphere(x)),
        );
        assert!(t.finished, "{variant} never ended by itself");
    }
}

#[test]
fn reversed_tell_order_gives_the_same_proposals() {
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let run = |reverse| {
            drive_with(
                &space(4, -1.0, 1.0, 0.2),
                variant,
                11,
                800,
                Some(800),
                reverse,
                |x| Fitness::Value(neg_rosenbrock(x) - x[2].powi(2) - (x[3] - 0.5).abs()),
            )
            .points
        };
        assert_eq!(run(true), run(false), "{variant}");
    }
}

#[test]
fn every_variant_solves_a_shifted_rotated_quadratic_in_10d() {
    let f = neg_rotated_quadratic_1e3(10);
    for variant in ["classic", "stadium", "clamp", "interval"] {
        let t = drive_with(
            &space(10, -5.0, 5.0, 4.0),
            variant,
            5,
            10_000,
            Some(10_000),
            true,
            |x| Fitness::Value(f(x)),
        );
        assert!(t.best > -1e-8, "{variant}: {}", t.best);
    }
}

/// A test function, chosen per seed.
type Objective = Box<dyn Fn(&[f64]) -> f64>;

/// Proposals until one reaches fitness −1e-8 from x = 4 in [-5, 5]^10
/// (`None`: not within `budget`).
fn evaluations_to_optimum(
    s: &Settings,
    seed: u64,
    budget: u64,
    f: impl Fn(&[f64]) -> f64,
) -> Option<u64> {
    let mut opt = Powell
        .create(&space(10, -5.0, 5.0, 4.0), s, seed, Some(budget))
        .unwrap();
    let mut asked = 0;
    while asked < budget {
        let Step::Evaluate(candidates) = opt.ask() else {
            return None;
        };
        for c in candidates {
            asked += 1;
            let v = f(&c.x);
            if v >= -1e-8 {
                return Some(asked);
            }
            opt.tell(c.tag, Fitness::Value(v));
        }
    }
    None
}

#[test]
fn line_searches_resolve_to_the_move_not_to_a_fixed_resolution() {
    // The thesis' line search resolves every line to `line_tolerance`
    // (1e-8 of the range) however far the optimum still is; on plateaus
    // Brent converges onto a jump and pays ~40 golden steps a line for it.
    // The default resolves to a thousandth of the previous iteration's
    // move: fewer evaluations to the optimum of a 10-D rotated step
    // ellipsoid and of a smooth rotated quadratic (about 0.8 and 0.6 times
    // the thesis' over these five seeds).
    let thesis = thesis("classic");
    let default = settings(&[
        ("variant", SettingValue::Text("classic".into())),
        ("reevaluate", SettingValue::Int(0)),
    ]);
    let budget = 20_000;
    let total = |s: &Settings, f: &dyn Fn(u64) -> Objective| -> u64 {
        (0..5)
            .map(|seed| {
                evaluations_to_optimum(s, seed, budget, f(seed))
                    .unwrap_or_else(|| panic!("seed {seed}: not solved in {budget}"))
            })
            .sum()
    };
    let steps =
        |seed: u64| -> Objective { Box::new(common::neg_rotated_step_ellipsoid(10, 100 + seed)) };
    let (thesis_steps, default_steps) = (total(&thesis, &steps), total(&default, &steps));
    eprintln!("step ellipsoid: thesis {thesis_steps}, default {default_steps}");
    let smooth = |_: u64| -> Objective { Box::new(neg_rotated_quadratic_1e3(10)) };
    let (thesis_smooth, default_smooth) = (total(&thesis, &smooth), total(&default, &smooth));
    eprintln!("rotated quadratic: thesis {thesis_smooth}, default {default_smooth}");
    assert!(
        10 * default_steps <= 9 * thesis_steps,
        "step ellipsoid: {default_steps} against {thesis_steps}"
    );
    assert!(
        10 * default_smooth <= 8 * thesis_smooth,
        "rotated quadratic: {default_smooth} against {thesis_smooth}"
    );
}

#[test]
fn a_restart_uses_fresh_directions() {
    // The start is the maximum, so the first run (coordinate axes) ends
    // after one iteration; its points differ from the start in one
    // coordinate. The restart searches along fresh, oblique directions.
    let start = [0.1, 0.2, -0.3];
    let s = Space::new(space(3, -1.0, 1.0, 0.0).bounds, start.to_vec()).unwrap();
    let t = drive_with(&s, "classic", 1, 300, Some(300), true, |x| {
        Fitness::Value(
            -x.iter()
                .zip(&start)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>(),
        )
    });
    let moved = |p: &Vec<f64>| p.iter().zip(&start).filter(|(a, b)| a != b).count();
    assert!(moved(&t.points[1]) == 1, "{:?}", t.points[1]);
    let first_oblique = t
        .points
        .iter()
        .position(|p| moved(p) == 3)
        .expect("an oblique search");
    assert!(t.points[..first_oblique].iter().all(|p| moved(p) <= 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// The thesis saw NaN with easy direction change; here no asked point is
    /// ever non-finite or outside the box, whatever the objective.
    #[test]
    fn clamp_never_asks_nan_or_outside(seed in 0u64..1000, a in -5.0f64..5.0, b in -5.0f64..5.0, start in -1.0f64..1.0) {
        let t = drive(&space(3, -1.0, 1.0, start), "clamp", seed, 400, |x| a * x[0] - b * x[1] * x[1] + (3.0 * x[2]).sin());
        for p in &t.points {
            prop_assert!(p.iter().all(|v| v.is_finite() && (-1.0..=1.0).contains(v)), "{:?}", p);
        }
        prop_assert!(t.best.is_finite());
    }
}

#[test]
fn a_parameter_without_range_neither_hangs_nor_leaves_its_value() {
    let bounds = vec![Bound::new("fixed", 0.5, 0.5), Bound::new("free", -1.0, 1.0)];
    let s = Space::new(bounds, vec![0.5, -0.5]).unwrap();
    for variant in ["classic", "stadium", "clamp", "interval"] {
        for budget in [Some(400), None] {
            let t = drive_with(&s, variant, 1, 400, budget, true, |x| {
                Fitness::Value(neg_sphere(x))
            });
            assert!(t.points.iter().all(|p| p[0] == 0.5), "{variant}");
            assert!(t.best > -0.04 - 1e-9, "{variant}: {}", t.best);
        }
    }
}

/// −(x − c)ᵀ Qᵀ Λ Q (x − c) with a fixed rotation Q and conditioning 1e3.
fn neg_rotated_quadratic_1e3(dim: usize) -> impl Fn(&[f64]) -> f64 {
    common::neg_rotated_quadratic(dim, 1e3)
}
