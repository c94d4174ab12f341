//! CMA-ES on a noisy objective: the uncertainty handling's re-evaluations,
//! and a recommendation that is not the luckiest value.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_cmaes::{CmaEs, CmaesConfig, NoiseHandling, noise::EXACT_GENERATIONS};
use yamor_optimizer_api::{Bound, Candidate, Fitness, Optimizer, Space, Step};

const CENTRE: [f64; 5] = [1.3, -0.7, 2.1, 0.4, -1.9];

fn space() -> Space {
    let bounds = (0..CENTRE.len())
        .map(|d| Bound::new(format!("p{d}"), -5.0, 5.0))
        .collect();
    Space::new(bounds, vec![-3.0; CENTRE.len()]).unwrap()
}

/// The noise-free value (minimised): the squared distance to the centre.
fn sphere(x: &[f64]) -> f64 {
    x.iter().zip(CENTRE).map(|(a, c)| (a - c).powi(2)).sum()
}

/// Every batch the optimizer asked, and the point of the best single value
/// told (what an optimizer that believes one value would report).
struct Trace {
    batches: Vec<Vec<Candidate>>,
    luckiest: Vec<f64>,
}

/// Drives `opt` for `budget` evaluations of the sphere plus fresh Gaussian
/// noise of standard deviation `noise` at every evaluation (the same point
/// asked twice gets two draws, as a gait walked from two starts does).
fn drive(opt: &mut CmaEs, noise: f64, seed: u64, budget: usize) -> Trace {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut trace = Trace {
        batches: Vec::new(),
        luckiest: Vec::new(),
    };
    let mut best = f64::INFINITY;
    let mut told = 0;
    while told < budget {
        let Step::Evaluate(batch) = opt.ask() else {
            break;
        };
        for c in &batch {
            let u1: f64 = rng.random::<f64>().max(1e-300);
            let u2: f64 = rng.random();
            let gauss = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            let value = sphere(&c.x) + noise * gauss;
            if value < best {
                best = value;
                trace.luckiest = c.x.clone();
            }
            opt.tell(c.tag, Fitness::Value(-value));
        }
        told += batch.len();
        trace.batches.push(batch);
    }
    trace
}

fn config(noise_handling: NoiseHandling) -> CmaesConfig {
    CmaesConfig {
        noise_handling,
        ..CmaesConfig::default()
    }
}

#[test]
fn on_a_deterministic_objective_re_evaluation_stops_after_a_few_generations() {
    let mut cma = CmaEs::new(&space(), &config(NoiseHandling::Uh), 1, Some(600)).unwrap();
    let trace = drive(&mut cma, 0.0, 1, 600);
    let lambda = trace.batches[0].len();
    let short: Vec<usize> = trace
        .batches
        .iter()
        .enumerate()
        .filter(|(_, b)| b.len() < lambda)
        .map(|(i, _)| i)
        .collect();
    // Generation, re-evaluation, generation, … then whole generations only.
    assert_eq!(short, [1, 3, 5][..EXACT_GENERATIONS as usize], "{short:?}");
    // A re-evaluation asks the generation's own first candidates again.
    for (j, again) in trace.batches[1].iter().enumerate() {
        assert_eq!(again.x, trace.batches[0][j].x);
        assert!(
            again.tag >= lambda as u64,
            "a tag of its own: {}",
            again.tag
        );
    }
}

#[test]
fn on_a_noisy_objective_re_evaluation_continues() {
    let mut cma = CmaEs::new(&space(), &config(NoiseHandling::Uh), 2, Some(900)).unwrap();
    let trace = drive(&mut cma, 1.0, 2, 900);
    let lambda = trace.batches[0].len();
    let again = trace.batches.iter().filter(|b| b.len() < lambda).count();
    let generations = trace.batches.len() - again;
    assert!(
        again + 1 >= generations,
        "{again} re-evaluations in {generations} generations"
    );
    // The same noise without the handling: whole generations only.
    let mut plain = CmaEs::new(&space(), &config(NoiseHandling::None), 2, Some(900)).unwrap();
    let trace = drive(&mut plain, 1.0, 2, 900);
    assert!(trace.batches.iter().all(|b| b.len() == lambda));
}

/// The luckiest single value of a noisy run points at a worse point than
/// the recommendation of the uncertainty-handling CMA-ES (its late means,
/// averaged): the winner's curse a one-sample answer falls for. The
/// one-sample optimizer is the same CMA-ES with `noise_handling=none`,
/// answering with its best value told.
#[test]
fn the_noise_handling_recommendation_beats_a_one_sample_answer_on_a_noisy_sphere() {
    let seeds = 20;
    let mut wins = 0;
    let mut one_sample = Vec::new();
    let mut recommended = Vec::new();
    for seed in 0..seeds {
        let mut plain =
            CmaEs::new(&space(), &config(NoiseHandling::None), seed, Some(1500)).unwrap();
        let lucky = sphere(&drive(&mut plain, 1.0, 100 + seed, 1500).luckiest);
        let mut cma = CmaEs::new(&space(), &config(NoiseHandling::Uh), seed, Some(1500)).unwrap();
        drive(&mut cma, 1.0, 100 + seed, 1500);
        let rec = sphere(
            &cma.recommendation()
                .expect("a recommendation after 1500 evaluations"),
        );
        wins += usize::from(rec < lucky);
        one_sample.push(lucky);
        recommended.push(rec);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (lucky, rec) = (median(&mut one_sample), median(&mut recommended));
    assert!(
        wins >= 16 && rec < 0.5 * lucky,
        "recommendation closer in {wins}/{seeds} seeds; median true distance² {rec:.3} vs \
         the one-sample answer's {lucky:.3}"
    );
}
