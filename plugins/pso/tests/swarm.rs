//! Behaviour of the PSO plugin through its public API: convergence on test
//! functions, the box, determinism under any tell order, failures, settings.
//!
//! Every objective is a closure and every run a small ask/tell loop, so the
//! whole file runs in milliseconds.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{
    Bound, Candidate, Fitness, Optimizer, Plugin, SettingValue, Settings, SettingsError, Space,
    Step,
};
use yamor_pso::{Pso, PsoConfig, Swarm, Topology};

/// A box `[lo, hi]^dim` starting at `start` in every component.
fn cube(lo: f64, hi: f64, dim: usize, start: f64) -> Space {
    let bounds = (0..dim)
        .map(|d| Bound::new(format!("p{d}"), lo, hi))
        .collect();
    Space::new(bounds, vec![start; dim]).unwrap()
}

/// How the results of one generation are reordered before being told.
type Order<'a> = &'a mut dyn FnMut(usize, &mut Vec<Candidate>);

/// Drives `opt` to the end: each generation is evaluated with `f`, reordered
/// by `order` and told. Returns every generation's proposals as asked.
fn drive(
    opt: &mut dyn Optimizer,
    f: &dyn Fn(&[f64]) -> Fitness,
    order: Order<'_>,
) -> Vec<Vec<Candidate>> {
    let mut generations = Vec::new();
    loop {
        match opt.ask() {
            Step::Evaluate(candidates) => {
                assert_eq!(opt.ask(), Step::Wait, "asked twice without telling");
                let mut told = candidates.clone();
                order(generations.len(), &mut told);
                for c in &told {
                    opt.tell(c.tag, f(&c.x));
                }
                generations.push(candidates);
            }
            Step::Wait => panic!("waiting with nothing outstanding"),
            Step::Finished => return generations,
        }
    }
}

fn in_order(_: usize, _: &mut Vec<Candidate>) {}

fn fitness(f: impl Fn(&[f64]) -> f64) -> impl Fn(&[f64]) -> Fitness {
    move |x| Fitness::Value(f(x))
}

/// −Σ (x_d − c_d)², maximal (0) at c_d = 1 + 0.1·d.
fn neg_sphere(x: &[f64]) -> f64 {
    -x.iter()
        .enumerate()
        .map(|(d, v)| (v - 1.0 - 0.1 * d as f64).powi(2))
        .sum::<f64>()
}

fn neg_rosenbrock(x: &[f64]) -> f64 {
    -(100.0 * (x[1] - x[0] * x[0]).powi(2) + (1.0 - x[0]).powi(2))
}

/// The classic PSO (`reevaluate` = 0, single values): the tests of the
/// algorithm itself; the noise handling has its own (`tests/noise.rs`).
fn config(particles: usize, iterations: u64) -> PsoConfig {
    PsoConfig {
        particles,
        iterations,
        reevaluate: 0,
        ..PsoConfig::default()
    }
}

/// Runs `f` over `space` for several seeds and returns the worst best.
fn worst_best(space: &Space, config: &PsoConfig, f: fn(&[f64]) -> f64) -> (Vec<f64>, f64) {
    let mut worst: Option<(Vec<f64>, f64)> = None;
    for seed in 0..10 {
        let mut swarm = Swarm::new(space, config, seed).unwrap();
        let generations = drive(&mut swarm, &fitness(f), &mut in_order);
        assert_eq!(generations.len() as u64, config.iterations);
        let (x, v) = swarm.best().unwrap();
        if worst.as_ref().is_none_or(|(_, w)| v < *w) {
            worst = Some((x.to_vec(), v));
        }
    }
    worst.unwrap()
}

#[test]
fn sphere_2d_converges_with_the_default_budget() {
    let (x, f) = worst_best(&cube(-5.0, 5.0, 2, -3.0), &config(20, 50), neg_sphere);
    assert!(f > -1e-3, "f = {f} at {x:?}");
}

#[test]
fn sphere_5d_converges() {
    let (x, f) = worst_best(&cube(-5.0, 5.0, 5, -3.0), &config(20, 100), neg_sphere);
    assert!(f > -1e-3, "f = {f} at {x:?}");
}

#[test]
fn sphere_10d_converges() {
    let (x, f) = worst_best(&cube(-5.0, 5.0, 10, -3.0), &config(30, 150), neg_sphere);
    assert!(f > -1e-2, "f = {f} at {x:?}");
}

#[test]
fn ring_topology_converges_on_the_sphere() {
    let ring = PsoConfig {
        topology: Topology::Ring,
        ..config(30, 150)
    };
    let (x, f) = worst_best(&cube(-5.0, 5.0, 5, -3.0), &ring, neg_sphere);
    assert!(f > -1e-3, "f = {f} at {x:?}");
}

#[test]
fn rosenbrock_2d_gets_close_to_its_valley_minimum() {
    let (x, f) = worst_best(&cube(-2.0, 2.0, 2, -1.5), &config(30, 150), neg_rosenbrock);
    let distance = ((x[0] - 1.0).powi(2) + (x[1] - 1.0).powi(2)).sqrt();
    assert!(f > -1e-3 && distance < 0.05, "f = {f} at {x:?}");
}

#[test]
fn an_optimum_on_the_wall_is_reached_exactly() {
    // Absorbing walls let particles sit on a bound: the optimum at x = 1 is
    // proposed exactly.
    let space = cube(-1.0, 1.0, 3, 0.0);
    let mut swarm = Swarm::new(&space, &config(10, 30), 3).unwrap();
    drive(&mut swarm, &fitness(|x| x.iter().sum()), &mut in_order);
    let (x, f) = swarm.best().unwrap();
    assert_eq!((x.to_vec(), f), (vec![1.0; 3], 3.0));
}

#[test]
fn ask_and_tell_follow_the_generation_protocol() {
    let space = cube(0.0, 1.0, 2, 0.25);
    let mut swarm = Swarm::new(&space, &config(4, 3), 9).unwrap();
    let Step::Evaluate(first) = swarm.ask() else {
        panic!("no first generation")
    };
    assert_eq!(first.len(), 4);
    assert_eq!(first[0].x, vec![0.25, 0.25], "particle 0 is the start");
    let tags: std::collections::BTreeSet<u64> = first.iter().map(|c| c.tag).collect();
    assert_eq!(tags.len(), 4, "tags are distinct");
    assert_eq!(swarm.ask(), Step::Wait);
    for c in &first[..3] {
        swarm.tell(c.tag, Fitness::Value(1.0));
        assert_eq!(swarm.ask(), Step::Wait);
    }
    // A repeated and an unknown tag change nothing.
    swarm.tell(first[0].tag, Fitness::Value(9.0));
    swarm.tell(u64::MAX, Fitness::Value(9.0));
    assert_eq!(swarm.ask(), Step::Wait);
    assert_eq!(swarm.generations_done(), 0);
    swarm.tell(first[3].tag, Fitness::Failed);
    assert_eq!(swarm.generations_done(), 1);
    assert_eq!(swarm.best().unwrap().1, 1.0);
    let Step::Evaluate(second) = swarm.ask() else {
        panic!("no second generation")
    };
    assert!(second.iter().all(|c| !tags.contains(&c.tag)));
    // A stale result from the first generation is ignored too.
    swarm.tell(first[3].tag, Fitness::Value(5.0));
    for c in &second {
        swarm.tell(c.tag, Fitness::Value(0.0));
    }
    let Step::Evaluate(third) = swarm.ask() else {
        panic!("no third generation")
    };
    for c in &third {
        swarm.tell(c.tag, Fitness::Value(0.0));
    }
    assert_eq!(swarm.ask(), Step::Finished);
    assert_eq!(swarm.ask(), Step::Finished);
    swarm.tell(third[0].tag, Fitness::Value(7.0));
    assert_eq!(swarm.ask(), Step::Finished);
    assert_eq!(swarm.generations_done(), 3);
    assert_eq!(swarm.best().unwrap().1, 1.0);
}

fn bits(generations: &[Vec<Candidate>]) -> Vec<Vec<(u64, Vec<u64>)>> {
    generations
        .iter()
        .map(|g| {
            g.iter()
                .map(|c| (c.tag, c.x.iter().map(|v| v.to_bits()).collect()))
                .collect()
        })
        .collect()
}

/// A sphere with a failing corner, so failures are part of the history.
fn sphere_failing_corner(x: &[f64]) -> Fitness {
    if x[0] > 3.0 {
        Fitness::Failed
    } else {
        Fitness::Value(neg_sphere(x))
    }
}

#[test]
fn same_seed_gives_the_same_proposals_whatever_the_tell_order() {
    let space = cube(-5.0, 5.0, 5, 4.0);
    let settings = Settings::parse_pairs(
        &Pso.info().settings,
        ["particles=12", "iterations=25", "topology=ring"],
    )
    .unwrap();
    let settings = Settings::resolve(&Pso.info().settings, &settings).unwrap();
    let mut a = Pso.create(&space, &settings, 42, None).unwrap();
    let mut b = Pso.create(&space, &settings, 42, None).unwrap();
    let mut c = Pso.create(&space, &settings, 42, None).unwrap();
    let forward = drive(a.as_mut(), &sphere_failing_corner, &mut in_order);
    let reversed = drive(b.as_mut(), &sphere_failing_corner, &mut |_, g| g.reverse());
    let mut shuffler = ChaCha8Rng::seed_from_u64(7);
    let shuffled = drive(c.as_mut(), &sphere_failing_corner, &mut |_, g| {
        g.shuffle(&mut shuffler)
    });
    assert_eq!(forward.len(), 25);
    assert_eq!(bits(&forward), bits(&reversed));
    assert_eq!(bits(&forward), bits(&shuffled));
}

#[test]
fn replaying_recorded_results_reproduces_the_run() {
    // What the runtime does on resume: a fresh instance, the stored results
    // told back, the proposals compared bit for bit.
    let space = cube(-5.0, 5.0, 3, 0.0);
    let mut original = Swarm::new(&space, &config(8, 10), 5).unwrap();
    let recorded = drive(&mut original, &sphere_failing_corner, &mut |_, g| {
        g.rotate_left(3)
    });
    let mut fresh = Swarm::new(&space, &config(8, 10), 5).unwrap();
    let mut step = 0;
    while let Step::Evaluate(generation) = fresh.ask() {
        assert_eq!(
            bits(std::slice::from_ref(&generation)),
            bits(&recorded[step..=step])
        );
        for c in generation.iter().rev() {
            fresh.tell(c.tag, sphere_failing_corner(&c.x));
        }
        step += 1;
    }
    assert_eq!(step, recorded.len());
    assert_eq!(fresh.best(), original.best());
}

#[test]
fn different_seeds_give_different_proposals() {
    let space = cube(-5.0, 5.0, 4, 1.0);
    let run = |seed| {
        let mut swarm = Swarm::new(&space, &config(10, 5), seed).unwrap();
        drive(&mut swarm, &fitness(neg_sphere), &mut in_order)
    };
    let (one, two) = (run(1), run(2));
    // Both start particle 0 at the user's gait, the rest differ.
    assert_eq!(one[0][0].x, space.start);
    assert_eq!(two[0][0].x, space.start);
    for g in 0..5 {
        for i in 1..10 {
            assert_ne!(one[g][i].x, two[g][i].x, "generation {g} particle {i}");
        }
    }
}

#[test]
fn without_include_start_every_particle_starts_at_random() {
    let space = cube(-5.0, 5.0, 4, 1.0);
    let config = PsoConfig {
        include_start: false,
        ..config(10, 1)
    };
    let mut swarm = Swarm::new(&space, &config, 1).unwrap();
    let generations = drive(&mut swarm, &fitness(neg_sphere), &mut in_order);
    assert!(generations[0].iter().all(|c| c.x != space.start));
}

#[test]
fn a_region_that_always_fails_is_avoided() {
    // Everything left of x0 = 0 fails; the optimum (0.5, 0.5) lies right of
    // it, and the user's gait sits in the failing region.
    let space = Space::new(
        vec![Bound::new("a", -1.0, 1.0), Bound::new("b", -1.0, 1.0)],
        vec![-0.5, -0.5],
    )
    .unwrap();
    let f = |x: &[f64]| {
        if x[0] < 0.0 {
            Fitness::Failed
        } else {
            Fitness::Value(-((x[0] - 0.5).powi(2) + (x[1] - 0.5).powi(2)))
        }
    };
    for seed in 0..5 {
        let mut swarm = Swarm::new(&space, &config(20, 50), seed).unwrap();
        let generations = drive(&mut swarm, &f, &mut in_order);
        let (x, value) = swarm.best().unwrap();
        assert!(value > -1e-4, "seed {seed}: best {value} at {x:?}");
        let last = generations.last().unwrap();
        let failing = last.iter().filter(|c| c.x[0] < 0.0).count();
        assert!(
            failing <= 2,
            "seed {seed}: {failing} of the last generation fail"
        );
    }
}

#[test]
fn all_failures_still_end_cleanly_inside_the_box() {
    let space = cube(-1.0, 2.0, 3, 0.0);
    let mut swarm = Swarm::new(&space, &config(6, 20), 11).unwrap();
    let generations = drive(&mut swarm, &|_| Fitness::Failed, &mut in_order);
    assert_eq!(generations.len(), 20);
    assert!(generations.iter().flatten().all(|c| space.contains(&c.x)));
    assert!(swarm.best().is_none());
}

#[test]
fn a_zero_width_parameter_stays_fixed() {
    let space = Space::new(
        vec![Bound::new("fixed", 0.3, 0.3), Bound::new("free", -1.0, 1.0)],
        vec![0.3, 0.0],
    )
    .unwrap();
    let mut swarm = Swarm::new(&space, &config(5, 10), 0).unwrap();
    let generations = drive(
        &mut swarm,
        &fitness(|x| -(x[1] - 0.7).powi(2)),
        &mut in_order,
    );
    assert!(generations.iter().flatten().all(|c| c.x[0] == 0.3));
}

fn resolve(pairs: &[(&str, SettingValue)]) -> Result<Settings, SettingsError> {
    let given: BTreeMap<String, SettingValue> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    Settings::resolve(&Pso.info().settings, &given)
}

#[test]
fn settings_are_declared_with_defaults_and_validated() {
    let info = Pso.info();
    assert_eq!(info.name, "pso");
    assert!(!info.author.is_empty() && !info.version.is_empty());
    assert!(!info.description.is_empty());
    let defaults = resolve(&[]).unwrap();
    assert_eq!(defaults.int("particles"), Ok(20));
    assert_eq!(defaults.int("iterations"), Ok(50));
    assert_eq!(defaults.float("inertia"), Ok(0.7298));
    assert_eq!(defaults.float("cognitive"), Ok(1.49618));
    assert_eq!(defaults.float("social"), Ok(1.49618));
    assert_eq!(defaults.float("max_velocity"), Ok(0.5));
    assert_eq!(defaults.text("topology"), Ok("global"));
    assert_eq!(defaults.bool("include_start"), Ok(true));
    assert_eq!(defaults.int("reevaluate"), Ok(2));
    assert_eq!(
        PsoConfig::try_from(&defaults).unwrap(),
        PsoConfig::default()
    );

    let rejected = [
        ("particles", SettingValue::Int(1)),
        ("particles", SettingValue::Int(1001)),
        ("particles", SettingValue::Text("many".into())),
        ("iterations", SettingValue::Int(0)),
        ("iterations", SettingValue::Int(100_001)),
        ("inertia", SettingValue::Float(f64::NAN)),
        ("inertia", SettingValue::Float(1.5)),
        ("cognitive", SettingValue::Float(-0.1)),
        ("social", SettingValue::Float(5.0)),
        ("max_velocity", SettingValue::Float(0.0)),
        ("topology", SettingValue::Text("star".into())),
        ("include_start", SettingValue::Int(1)),
        ("reevaluate", SettingValue::Int(-1)),
        ("reevaluate", SettingValue::Int(17)),
    ];
    for (name, value) in rejected {
        match resolve(&[(name, value.clone())]) {
            Err(SettingsError::Invalid { name: n, .. }) => assert_eq!(n, name),
            other => panic!("{name}={value} gave {other:?}"),
        }
    }
    assert!(matches!(
        resolve(&[("speed", SettingValue::Int(1))]),
        Err(SettingsError::Unknown { .. })
    ));

    let given = Settings::parse_pairs(
        &info.settings,
        [
            "particles=8",
            "iterations=3",
            "topology=ring",
            "include_start=no",
            "inertia=0.5",
            "max_velocity=1",
            "reevaluate=0",
        ],
    )
    .unwrap();
    let config = PsoConfig::try_from(&Settings::resolve(&info.settings, &given).unwrap()).unwrap();
    assert_eq!(
        config,
        PsoConfig {
            particles: 8,
            iterations: 3,
            inertia: 0.5,
            max_velocity: 1.0,
            topology: Topology::Ring,
            include_start: false,
            reevaluate: 0,
            ..PsoConfig::default()
        }
    );
    assert!(Settings::parse_pairs(&info.settings, ["particles=1"]).is_err());
}

#[test]
fn create_rejects_a_start_outside_the_box() {
    let space = cube(0.0, 1.0, 2, 0.5);
    let mut opt = Pso
        .create(&space, &Settings::defaults(&Pso.info().settings), 0, None)
        .unwrap();
    let Step::Evaluate(first) = opt.ask() else {
        panic!("no first generation")
    };
    assert_eq!(first.len(), 20);

    let outside = Space {
        bounds: space.bounds.clone(),
        start: vec![2.0, 0.5],
    };
    assert!(matches!(
        Pso.create(&outside, &Settings::defaults(&Pso.info().settings), 0, None),
        Err(SettingsError::Space(_))
    ));
    assert!(Swarm::new(&space, &config(1, 5), 0).is_err());
}

/// A random box, a start inside it and a configuration.
fn scenario() -> impl Strategy<Value = (Space, PsoConfig, u64)> {
    let bound = (
        -1000.0f64..1000.0,
        prop_oneof![Just(0.0), 1e-3f64..100.0],
        0.0f64..=1.0,
        any::<bool>(),
    );
    (
        prop::collection::vec(bound, 1..6),
        2usize..12,
        1u64..15,
        0.0f64..=1.0,
        0.0f64..=4.0,
        0.0f64..=4.0,
        0.001f64..=1.0,
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(dims, particles, iterations, inertia, c1, c2, vmax, ring, include_start, seed)| {
                let bounds = dims
                    .iter()
                    .enumerate()
                    .map(|(d, (min, width, _, periodic))| Bound {
                        name: format!("p{d}"),
                        min: *min,
                        max: min + width,
                        periodic: *periodic,
                    })
                    .collect();
                let start = dims
                    .iter()
                    .map(|(min, width, t, _)| (min + t * width).min(min + width))
                    .collect();
                let config = PsoConfig {
                    particles,
                    iterations,
                    inertia,
                    cognitive: c1,
                    social: c2,
                    max_velocity: vmax,
                    topology: if ring {
                        Topology::Ring
                    } else {
                        Topology::Global
                    },
                    include_start,
                    reevaluate: 0,
                };
                (Space::new(bounds, start).unwrap(), config, seed)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Candidates never leave the box, even when the objective drives them
    /// into a wall, and no particle moves further than the velocity limit.
    #[test]
    fn candidates_stay_in_the_box((space, config, seed) in scenario(), weights in prop::collection::vec(-10.0f64..10.0, 6)) {
        let mut swarm = Swarm::new(&space, &config, seed).unwrap();
        let f = |x: &[f64]| {
            let v: f64 = x.iter().zip(&weights).map(|(a, w)| a * w).sum();
            if v.rem_euclid(7.0) < 1.0 { Fitness::Failed } else { Fitness::Value(v) }
        };
        let generations = drive(&mut swarm, &f, &mut |g, c| {
            let n = c.len();
            c.rotate_left(g % n)
        });
        prop_assert_eq!(generations.len() as u64, config.iterations);
        for generation in &generations {
            prop_assert_eq!(generation.len(), config.particles);
            for c in generation {
                prop_assert!(space.contains(&c.x), "{:?} outside {:?}", c.x, space.bounds);
            }
        }
        for pair in generations.windows(2) {
            for (before, after) in pair[0].iter().zip(&pair[1]) {
                for (d, b) in space.bounds.iter().enumerate() {
                    // Round the circle, the short way, for a periodic bound.
                    let step = b.delta(before.x[d], after.x[d]).abs();
                    let limit = config.max_velocity * (b.max - b.min);
                    prop_assert!(step <= limit * (1.0 + 1e-9) + 1e-9, "step {} > {}", step, limit);
                }
            }
        }
    }
}

/// Phase lags over one whole turn with the optimum just across the seam
/// from the start: particles fly through the seam (pulled the short way
/// round), stay in `[−π, π]` and find it.
#[test]
fn periodic_parameters_are_searched_across_the_seam() {
    use std::f64::consts::PI;
    let target = [PI - 0.1, -PI + 0.1];
    let bounds = (0..2)
        .map(|d| Bound::new(format!("phase_{d}"), -PI, PI).wrapping())
        .collect();
    let space = Space::new(bounds, vec![-PI + 0.4, PI - 0.4]).unwrap();
    let f = move |x: &[f64]| {
        x.iter()
            .zip(&target)
            .map(|(x, t)| (x - t).cos() - 1.0)
            .sum::<f64>()
    };
    let mut swarm = Swarm::new(&space, &config(20, 60), 5).unwrap();
    let generations = drive(&mut swarm, &fitness(f), &mut in_order);
    let mut crossed = false;
    for c in generations.iter().flatten() {
        assert!(space.contains(&c.x), "{:?} left the box", c.x);
        crossed |= c.x[0] > 2.0 && c.x[1] < -2.0;
    }
    assert!(crossed, "no particle reached the corner across the seam");
    let (best, value) = swarm.best().unwrap();
    assert!(value > -1e-6, "best {best:?} = {value}");
}
