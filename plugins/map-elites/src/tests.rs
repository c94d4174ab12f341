use super::*;
use yamor_optimizer_api::Bound;

fn space(n: usize) -> Space {
    Space::new(
        (0..n)
            .map(|i| Bound::new(format!("p{i}"), -2.0, 2.0))
            .collect(),
        vec![0.5; n],
    )
    .unwrap()
}

fn config(emitter: EmitterKind) -> MapElitesConfig {
    MapElitesConfig {
        grid: Grid::parse("a:-2:2:20,b:-2:2:20").unwrap(),
        emitter,
        emitters: 3,
        batch: 8,
        sigma: 0.1,
        line_sigma: 0.2,
    }
}

/// A toy quality-diversity problem (pyribs' sphere with the first two
/// coordinates, clipped, as descriptors): fitness is the negated sphere.
fn evaluate(x: &[f64]) -> (f64, Vec<f64>) {
    let f = -x.iter().map(|v| (v - 0.4) * (v - 0.4)).sum::<f64>();
    (f, vec![x[0], x[1]])
}

/// Drives `optimizer` for `budget` evaluations, telling results in reverse
/// order of each batch (the runtime may tell in any order); returns every
/// proposal in order.
fn drive(optimizer: &mut MapElites, budget: usize) -> Vec<Vec<f64>> {
    let mut proposed = Vec::new();
    while proposed.len() < budget {
        let Step::Evaluate(batch) = optimizer.ask() else {
            panic!("a map never waits with nothing in flight");
        };
        for c in batch.iter().rev() {
            let (f, d) = evaluate(&c.x);
            optimizer.tell_described(c.tag, Fitness::Value(f), Some(&d));
        }
        proposed.extend(batch.into_iter().map(|c| c.x));
    }
    proposed
}

#[test]
fn every_emitter_fills_the_map_and_stays_in_the_box() {
    let space = space(4);
    for kind in [
        EmitterKind::CmaMe,
        EmitterKind::IsoLine,
        EmitterKind::Gaussian,
    ] {
        let mut map = MapElites::new(&space, &config(kind), 7);
        let proposed = drive(&mut map, 3_000);
        assert!(proposed.iter().all(|x| space.contains(x)), "{kind:?}");
        let archive = map.archive();
        // From one start point to a good share of the 400 cells.
        assert!(archive.len() > 60, "{kind:?}: {} cells", archive.len());
        // Each elite is the best of what landed in its cell.
        for (cell, elite) in archive.elites() {
            assert_eq!(archive.grid().cell(&elite.descriptors), cell);
            let better = proposed
                .iter()
                .map(|x| evaluate(x))
                .filter(|(_, d)| archive.grid().cell(d) == cell)
                .any(|(f, _)| f > elite.fitness);
            assert!(!better, "{kind:?}: cell {cell} kept a worse solution");
        }
        assert_eq!(
            map.finalists().unwrap().len(),
            archive.len(),
            "every elite is a finalist"
        );
        assert_eq!(map.descriptors(), vec!["a".to_owned(), "b".to_owned()]);
    }
}

/// pyribs' sphere benchmark (Fontaine et al. 2020, §5.1) in a box: the
/// negated sphere shifted by 40 % of the range, and as descriptors the
/// sums of the first and of the second half of the coordinates, on a
/// 100×100 grid; most of the map is reached only by pushing a whole half
/// of the coordinates together. The QD score of `evaluations` proposals of
/// `propose` (offset −1,200, below the box's worst value).
fn sphere_qd_score(
    evaluations: usize,
    mut propose: impl FnMut() -> Vec<Candidate>,
    told: &mut dyn FnMut(u64, f64, [f64; 2]),
) {
    let n = 20;
    let mut done = 0;
    while done < evaluations {
        let batch = propose();
        for c in &batch {
            assert_eq!(c.x.len(), n);
            let f = -c.x.iter().map(|v| (v - 2.048).powi(2)).sum::<f64>();
            let (a, b) = c.x.split_at(n / 2);
            told(c.tag, f, [a.iter().sum(), b.iter().sum()]);
        }
        done += batch.len();
    }
}

fn sphere_space() -> Space {
    Space::new(
        (0..20)
            .map(|i| Bound::new(format!("p{i}"), -5.12, 5.12))
            .collect(),
        vec![0.0; 20],
    )
    .unwrap()
}

fn sphere_grid() -> Grid {
    Grid::parse("m1:-51.2:51.2:100,m2:-51.2:51.2:100").unwrap()
}

#[test]
fn every_emitter_illuminates_more_than_sampling_the_box() {
    // Uniform samples of the box sum to the middle of the map (the central
    // limit); an emitter that does not climb out of it fails this.
    let evaluations = 6_000;
    let space = sphere_space();
    let mut random = Archive::new(sphere_grid());
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut tag = 0;
    let mut uniform = || {
        use rand::Rng;
        tag += 1;
        vec![Candidate {
            tag,
            x: (0..20).map(|_| rng.random_range(-5.12..=5.12)).collect(),
        }]
    };
    let mut last = Vec::new();
    sphere_qd_score(
        evaluations,
        || {
            last = uniform();
            last.clone()
        },
        &mut |_, f, d| {
            random.insert(Vec::new(), f, d.to_vec(), 0u64);
        },
    );
    let baseline = random.qd_score(-1_200.0);
    for kind in [
        EmitterKind::CmaMe,
        EmitterKind::IsoLine,
        EmitterKind::Gaussian,
    ] {
        let map = std::cell::RefCell::new(MapElites::new(
            &space,
            &MapElitesConfig {
                grid: sphere_grid(),
                ..config(kind)
            },
            1,
        ));
        sphere_qd_score(
            evaluations,
            || match map.borrow_mut().ask() {
                Step::Evaluate(batch) => batch,
                other => panic!("{kind:?}: {other:?} with nothing in flight"),
            },
            &mut |tag, f, d| {
                map.borrow_mut()
                    .tell_described(tag, Fitness::Value(f), Some(&d))
            },
        );
        let score = map.borrow().archive().qd_score(-1_200.0);
        assert!(
            score > 1.2 * baseline,
            "{kind:?}: QD score {score:.0}, uniform samples {baseline:.0}"
        );
    }
}

#[test]
fn the_same_seed_and_results_make_the_same_proposals() {
    let space = space(3);
    let run = |seed| {
        drive(
            &mut MapElites::new(&space, &config(EmitterKind::CmaMe), seed),
            500,
        )
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

#[test]
fn failures_and_results_without_descriptors_fill_nothing_and_do_not_stall() {
    let space = space(3);
    let mut map = MapElites::new(&space, &config(EmitterKind::CmaMe), 1);
    for round in 0..20 {
        // Every batch was told: the emitters propose again, never wait.
        let Step::Evaluate(batch) = map.ask() else {
            panic!("round {round}: the map stalled");
        };
        for (k, c) in batch.iter().enumerate() {
            match k % 3 {
                0 => map.tell(c.tag, Fitness::Failed),
                1 => map.tell(c.tag, Fitness::Value(1.0)),
                _ => map.tell_described(c.tag, Fitness::Value(f64::NAN), Some(&[0.0, 0.0])),
            }
        }
    }
    assert!(map.archive().is_empty());
}

#[test]
fn the_plugin_resolves_its_settings_and_names_its_grid() {
    let plugin = MapElitesPlugin;
    let specs = plugin.info().settings;
    let defaults = Settings::defaults(&specs);
    let grid = plugin.grid(&defaults).unwrap().unwrap();
    assert_eq!(grid.to_string(), DEFAULT_DESCRIPTORS);
    assert!(grid.cells() >= 1_000, "{} cells", grid.cells());
    let bad = Settings::parse(&specs, [("descriptors", "heading_deg:0:1")]).unwrap();
    let error = plugin.grid(&bad).unwrap_err().to_string();
    assert!(error.contains("descriptors"), "{error}");
    let bad = Settings::parse(&specs, [("emitter", "sobol")]);
    assert!(bad.is_err());
}
