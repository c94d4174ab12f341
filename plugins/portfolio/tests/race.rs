//! The race: arms propose side by side, an arm clearly behind leaves at a
//! judgement, close arms race to the last one, a lucky single value is
//! confirmed before it can win, and a winner that finishes hands the rest
//! of the budget to CMA-ES.

mod common;

use yamor_optimizer_api::{Bound, Candidate, Fitness, Optimizer, Plugin, Settings, Space, Step};
use yamor_portfolio::{Portfolio, Race, RaceConfig};

/// An arm proposing batches of `size` points in a band of the line
/// (`lo`, `lo + 1e-6`, …), one batch at a time; finishes after `batches`
/// batches when that is given.
struct Band {
    lo: f64,
    size: usize,
    batches: Option<usize>,
    out: usize,
    next: u64,
}

fn band(lo: f64, size: usize, batches: Option<usize>) -> Box<dyn Optimizer> {
    Box::new(Band {
        lo,
        size,
        batches,
        out: 0,
        next: 0,
    })
}

impl Optimizer for Band {
    fn ask(&mut self) -> Step {
        if self.out > 0 {
            return Step::Wait;
        }
        if self.batches == Some(0) {
            return Step::Finished;
        }
        self.batches = self.batches.map(|b| b - 1);
        self.out = self.size;
        Step::Evaluate(
            (0..self.size)
                .map(|_| {
                    self.next += 1;
                    Candidate {
                        tag: self.next,
                        x: vec![self.lo + 1e-6 * self.next as f64],
                    }
                })
                .collect(),
        )
    }

    fn tell(&mut self, _: u64, _: Fitness) {
        self.out -= 1;
    }
}

fn line() -> Space {
    Space::new(vec![Bound::new("x", 0.0, 1.0)], vec![0.5]).unwrap()
}

/// Every proposal of `opt` driven to `budget` (see `common::drive`).
fn drive(
    opt: &mut dyn Optimizer,
    budget: usize,
    walk: &dyn Fn(&[f64], usize) -> f64,
) -> Vec<Candidate> {
    common::drive(opt, Some(budget), walk).concat()
}

/// Arm A's band (x near 0.1) walks `a`, arm B's (near 0.5) walks `b`.
fn two_bands(a: f64, b: f64) -> impl Fn(&[f64], usize) -> f64 {
    move |x, _| if x[0] < 0.3 { a } else { b }
}

fn race(arms: Vec<(&'static str, Box<dyn Optimizer>)>, budget: u64) -> Race {
    let config = RaceConfig {
        reevaluate: 0,
        ..RaceConfig::default()
    };
    Race::with_arms(line(), arms, &config, 1, Some(budget))
}

#[test]
fn the_arm_clearly_ahead_gets_the_rest_of_the_budget() {
    // Budget 600, half of it raced over 3 judgements by 2 arms: rounds of
    // 50 walks each.
    let mut r = race(
        vec![("a", band(0.1, 10, None)), ("b", band(0.5, 10, None))],
        600,
    );
    let proposals = drive(&mut r, 600, &two_bands(1.0, 2.0));
    assert_eq!(proposals.len(), 600);
    assert_eq!(r.judgements(), 1, "A trails by half: out at the first");
    assert_eq!(r.walks(), vec![50, 550]);
    assert_eq!(r.standings(), vec![("a", false), ("b", true)]);
    // Side by side until the judgement: A's walks all come before it.
    let last_a = proposals.iter().rposition(|c| c.x[0] < 0.3).unwrap();
    assert!(last_a < 100, "A proposed at {last_a}");
    // The held-out re-walk judges the best of all and each arm's best,
    // the loser's too.
    let finalists = r.finalists().unwrap();
    assert!(finalists.iter().any(|x| x[0] < 0.3), "{finalists:?}");
    assert!(finalists.iter().filter(|x| x[0] > 0.3).count() >= 3);
    assert!(
        finalists.len()
            <= yamor_portfolio::FINALISTS_OVERALL + 2 * yamor_portfolio::FINALISTS_PER_ARM
    );
}

#[test]
fn arms_within_the_lead_race_to_the_last_judgement() {
    let mut r = race(
        vec![("a", band(0.1, 10, None)), ("b", band(0.5, 10, None))],
        600,
    );
    drive(&mut r, 600, &two_bands(1.0, 1.05));
    assert_eq!(r.judgements(), 3);
    assert_eq!(r.walks(), vec![150, 450]);
    assert_eq!(r.standings(), vec![("a", false), ("b", true)]);
}

#[test]
fn the_leader_may_lose_the_lead_in_a_later_round() {
    // A leads the first round by a little, B passes it in the second.
    let mut r = race(
        vec![("a", band(0.1, 10, None)), ("b", band(0.5, 10, None))],
        600,
    );
    let walk = |x: &[f64], _: usize| {
        // B's n-th proposal sits at 0.5 + n·1e-6.
        let n = ((x[0] - 0.5) * 1e6).round();
        if x[0] < 0.3 {
            1.0
        } else if n > 50.0 {
            1.5
        } else {
            0.95
        }
    };
    drive(&mut r, 600, &walk);
    assert_eq!(r.judgements(), 2, "B ahead by a third at the second");
    assert_eq!(r.walks(), vec![100, 500]);
}

#[test]
fn a_lucky_single_value_is_confirmed_before_it_wins_a_judgement() {
    // A's first point walked 10 once, then 0 and 0 (mean 3.3); B walks 5.
    let walk = |x: &[f64], n: usize| {
        if x[0] == 0.1 + 1e-6 {
            [10.0, 0.0, 0.0][n.min(2)]
        } else if x[0] < 0.3 {
            1.0
        } else {
            5.0
        }
    };
    let config = RaceConfig::default();
    assert_eq!(config.reevaluate, 2);
    let mut r = Race::with_arms(
        line(),
        vec![("a", band(0.1, 10, None)), ("b", band(0.5, 10, None))],
        &config,
        1,
        Some(600),
    );
    let proposals = drive(&mut r, 600, &walk);
    assert_eq!(r.standings(), vec![("a", false), ("b", true)]);
    assert_eq!(r.judgements(), 1);
    let lucky = proposals.iter().filter(|c| c.x[0] == 0.1 + 1e-6).count();
    assert_eq!(lucky, 3, "the lucky point is walked twice more");
    // Without confirmation the lucky value would have won.
    let mut blind = race(
        vec![("a", band(0.1, 10, None)), ("b", band(0.5, 10, None))],
        600,
    );
    drive(&mut blind, 600, &walk);
    assert_eq!(blind.standings(), vec![("a", true), ("b", false)]);
}

#[test]
fn a_winner_that_finishes_hands_the_rest_of_the_budget_to_cmaes() {
    // B wins at the first judgement and finishes after 10 batches (100
    // walks); CMA-ES takes over from B's best point for the rest.
    let mut r = race(
        vec![("a", band(0.1, 10, None)), ("b", band(0.5, 10, Some(10)))],
        600,
    );
    let proposals = drive(&mut r, 600, &|x, _| {
        if x[0] < 0.3 { 1.0 } else { 2.0 + x[0] }
    });
    assert_eq!(proposals.len(), 600, "the budget is used");
    let standings = r.standings();
    assert_eq!(standings.len(), 3);
    assert!(standings[2].1, "{standings:?}");
    assert_eq!(r.walks()[..2], [50, 100]);
    // CMA-ES climbs the line from B's best point.
    let (best, _) = r.best().unwrap();
    assert!(best[0] > 0.9, "{best:?}");
}

#[test]
fn cmaes_and_the_swarm_propose_side_by_side() {
    let space = Space::new(
        (0..5)
            .map(|i| Bound::new(format!("p{i}"), -1.0, 1.0))
            .collect(),
        vec![0.5; 5],
    )
    .unwrap();
    let plugin = Portfolio;
    let settings = Settings::defaults(&plugin.info().settings);
    let mut opt = plugin.create(&space, &settings, 7, Some(2400)).unwrap();
    let Step::Evaluate(first) = opt.ask() else {
        panic!("no first batch")
    };
    // Nothing told yet: CMA-ES waits for its generation, the swarm proposes.
    let Step::Evaluate(second) = opt.ask() else {
        panic!("the swarm did not propose while CMA-ES waits")
    };
    assert_eq!(first.len(), 4 + (3.0 * 5f64.ln()).floor() as usize);
    assert_eq!(second.len(), 20);
    assert_eq!(opt.ask(), Step::Wait);
}

/// A noisy, multimodal function on which both arms make progress.
fn noisy_rastrigin(x: &[f64], n: usize) -> f64 {
    let noise = ((x[0] * 1e4).sin() * 43758.5453 + n as f64).sin() * 0.1;
    -x.iter()
        .map(|v| v * v - 0.1 * (6.0 * std::f64::consts::PI * v).cos())
        .sum::<f64>()
        + noise
}

#[test]
fn the_same_calls_give_the_same_proposals_and_the_budget_is_used() {
    let space = Space::new(
        (0..4)
            .map(|i| Bound::new(format!("p{i}"), -2.0, 2.0))
            .collect(),
        vec![1.5; 4],
    )
    .unwrap();
    let plugin = Portfolio;
    let settings = Settings::defaults(&plugin.info().settings);
    let run = || {
        let mut opt = plugin.create(&space, &settings, 3, Some(1500)).unwrap();
        let proposals = drive(opt.as_mut(), 1500, &noisy_rastrigin);
        (proposals, opt.recommendation().unwrap())
    };
    let (a, best) = run();
    let (b, _) = run();
    assert_eq!(a.len(), 1500);
    assert_eq!(a, b);
    let start = noisy_rastrigin(&space.start, 0);
    assert!(
        noisy_rastrigin(&best, 0) > start + 3.0,
        "{best:?} from {start}"
    );
}
