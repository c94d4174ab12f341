//! The chain on a noisy objective: points are judged by the mean of all
//! their evaluations, a lucky single value is evaluated again before the
//! chain hands over from it or answers with it, and the re-evaluations keep
//! the proposals independent of the order results arrive in.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use yamor_optimizer_api::{
    Bound, Candidate, Fitness, Optimizer, Plugin, SettingValue, Settings, Space, Step,
};
use yamor_portfolio::{CHALLENGERS_PER_ROUND, Chain, MAX_ROUNDS, PowellCmaes, Stage};

/// A stage that proposes fixed batches one after another, then finishes.
struct Script {
    batches: VecDeque<Vec<Vec<f64>>>,
    out: usize,
    tag: u64,
}

impl Optimizer for Script {
    fn ask(&mut self) -> Step {
        if self.out > 0 {
            return Step::Wait;
        }
        let Some(batch) = self.batches.pop_front() else {
            return Step::Finished;
        };
        self.out = batch.len();
        Step::Evaluate(
            batch
                .into_iter()
                .map(|x| {
                    self.tag += 1;
                    Candidate { tag: self.tag, x }
                })
                .collect(),
        )
    }

    fn tell(&mut self, _: u64, _: Fitness) {
        self.out -= 1;
    }
}

type Starts = Arc<Mutex<Vec<Vec<f64>>>>;

/// A chain of scripted stages; `starts` records where each one started.
fn chain(scripts: Vec<Vec<Vec<Vec<f64>>>>, reevaluate: u32, starts: &Starts) -> Chain {
    let stages = scripts
        .into_iter()
        .map(|batches| {
            let starts = Arc::clone(starts);
            Stage {
                end: None,
                start: Box::new(move |space: &Space, _| {
                    starts.lock().unwrap().push(space.start.clone());
                    Box::new(Script {
                        batches: batches.clone().into(),
                        out: 0,
                        tag: 0,
                    }) as Box<dyn Optimizer>
                }),
            }
        })
        .collect();
    let space = Space::new(
        vec![Bound::new("a", 0.0, 1.0), Bound::new("b", 0.0, 1.0)],
        vec![0.5, 0.5],
    )
    .unwrap();
    Chain::new(space, stages, None).reevaluating(reevaluate)
}

fn drive(opt: &mut dyn Optimizer, walk: &dyn Fn(&[f64], usize) -> f64) -> Vec<Vec<Candidate>> {
    common::drive(opt, None, walk)
}

const HONEST: [f64; 2] = [0.1, 0.1];
const LUCKY: [f64; 2] = [0.9, 0.9];

/// HONEST walks 1.0 every time; LUCKY walked 3.0 once, then −1 and −2
/// (mean 0); anything else 0.
fn walk(x: &[f64], n: usize) -> f64 {
    if x == HONEST {
        1.0
    } else if x == LUCKY {
        [3.0, -1.0, -2.0, 0.0][n.min(3)]
    } else {
        0.0
    }
}

#[test]
fn a_lucky_value_is_evaluated_again_before_the_hand_over_and_the_answer() {
    let scripts = || {
        vec![
            vec![vec![HONEST.to_vec(), LUCKY.to_vec()]],
            vec![vec![vec![0.5, 0.2]]],
        ]
    };
    // Believing single values, the next stage starts at the lucky point
    // and the chain answers with its 3.0.
    let starts = Starts::default();
    let mut single = chain(scripts(), 0, &starts);
    let batches = drive(&mut single, &walk);
    assert_eq!(batches.len(), 2);
    assert_eq!(starts.lock().unwrap()[1], LUCKY);
    assert_eq!(single.best(), Some((&LUCKY[..], 3.0)));

    // With 2 extra evaluations the chain evaluates both points (neither is
    // confirmed, so both are challengers) twice more before handing over.
    let starts = Starts::default();
    let mut confirmed = chain(scripts(), 2, &starts);
    let batches = drive(&mut confirmed, &walk);
    let xs: Vec<Vec<&[f64]>> = batches
        .iter()
        .map(|b| b.iter().map(|c| c.x.as_slice()).collect())
        .collect();
    assert_eq!(
        xs,
        [
            vec![&HONEST[..], &LUCKY[..]],
            vec![&LUCKY[..], &LUCKY[..], &HONEST[..], &HONEST[..]],
            vec![&[0.5, 0.2][..]],
        ]
    );
    // The lucky point's mean is (3 − 1 − 2) / 3 = 0: the next stage starts
    // at the honest one, and the final answer (after the last stage, whose
    // only point is below it, so nothing more is asked) is its mean.
    assert_eq!(starts.lock().unwrap()[1], HONEST);
    assert_eq!(confirmed.best(), Some((&HONEST[..], 1.0)));
    assert_eq!(confirmed.best_evaluations(), Some(3));
    assert_eq!(confirmed.ask(), Step::Finished);
}

#[test]
fn a_stage_s_own_re_evaluations_count_as_means() {
    // A stage that evaluates one point twice (as UH-CMA-ES and Powell do
    // on noise): 5 then −1, mean 2, against another point's single 3.
    let twice = [0.3, 0.7];
    let other = [0.6, 0.4];
    let walk = move |x: &[f64], n: usize| {
        if x == twice {
            [5.0, -1.0, 0.0][n.min(2)]
        } else if x == other {
            [3.0, 0.0][n.min(1)]
        } else {
            0.0
        }
    };
    let scripts = || {
        vec![vec![
            vec![twice.to_vec(), other.to_vec()],
            vec![twice.to_vec()],
        ]]
    };
    // Without extra evaluations: the mean 2 loses to the single 3, where
    // the best single value (5) would have won.
    let starts = Starts::default();
    let mut means = chain(scripts(), 0, &starts);
    drive(&mut means, &walk);
    assert_eq!(means.best(), Some((&other[..], 3.0)));

    // With one: the twice-evaluated point is confirmed; the single 3 beats
    // its mean, so it is evaluated once more (0): its mean 1.5 loses.
    let mut confirmed = chain(scripts(), 1, &starts);
    let batches = drive(&mut confirmed, &walk);
    assert_eq!(batches.last().unwrap().len(), 1);
    assert_eq!(batches.last().unwrap()[0].x, other);
    assert_eq!(confirmed.best(), Some((&twice[..], 2.0)));
    assert_eq!(confirmed.best_evaluations(), Some(2));
}

#[test]
fn confirming_a_hand_over_is_bounded() {
    // Twenty points, each of whose first walk is luckier than any mean a
    // re-evaluation leaves: every round finds four new challengers, until
    // the rounds of one hand-over run out.
    let points: Vec<Vec<f64>> = (0..20).map(|i| vec![f64::from(i) / 20.0, 0.5]).collect();
    let walk = |x: &[f64], n: usize| if n == 0 { 10.0 + 20.0 * x[0] } else { 0.0 };
    let starts = Starts::default();
    let mut chain = chain(vec![vec![points.clone()], vec![]], 2, &starts);
    let batches = drive(&mut chain, &walk);
    // At the hand-over, MAX_ROUNDS rounds of the four luckiest left (each
    // point twice more), points 19 down to 8; the empty second stage
    // finishes at once, and the final answer needs the remaining 8 points
    // in two more rounds, after which nothing unconfirmed beats the best.
    let rounds = MAX_ROUNDS as usize + 2;
    assert_eq!(batches.len(), 1 + rounds);
    for (round, batch) in batches[1..].iter().enumerate() {
        let asked: Vec<&[f64]> = batch.iter().map(|c| c.x.as_slice()).collect();
        let expected: Vec<&[f64]> = (0..CHALLENGERS_PER_ROUND)
            .flat_map(|j| {
                let i = 19 - round * CHALLENGERS_PER_ROUND - j;
                [points[i].as_slice(); 2]
            })
            .collect();
        assert_eq!(asked, expected, "round {round}");
    }
    // The hand-over and the answer: the best confirmed point.
    assert_eq!(starts.lock().unwrap()[1], points[19]);
    let (x, mean) = chain.best().unwrap();
    assert_eq!(x, points[19].as_slice());
    assert_eq!(mean, (10.0 + 20.0 * 0.95) / 3.0);
    assert_eq!(chain.best_evaluations(), Some(3));
}

#[test]
fn a_failure_makes_a_point_worst_even_after_a_lucky_value() {
    // The lucky point's second walk fails: its mean is −∞.
    let walk = |x: &[f64], n: usize| {
        if x == LUCKY && n > 0 {
            f64::NAN
        } else {
            walk(x, n)
        }
    };
    let scripts = vec![vec![vec![HONEST.to_vec(), LUCKY.to_vec()]]];
    let mut chain = chain(scripts, 1, &Starts::default());
    drive(&mut chain, &walk);
    assert_eq!(chain.best(), Some((&HONEST[..], 1.0)));
    assert_eq!(chain.best_evaluations(), Some(2));
}

/// A noisy objective whose noise belongs to the proposal (its tag), as the
/// runtime's per-proposal start seed does.
fn noisy(c: &Candidate) -> f64 {
    let mut z = c.tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let u = (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    -c.x.iter().map(|v| (v - 0.5).powi(2)).sum::<f64>() + 0.5 * u
}

#[test]
fn the_same_proposals_on_noise_whatever_order_results_arrive_in() {
    let space = Space::new(
        (0..3)
            .map(|i| Bound::new(format!("x{i}"), -5.0, 5.0))
            .collect(),
        vec![3.0; 3],
    )
    .unwrap();
    let settings = Settings::resolve(&PowellCmaes.info().settings, &BTreeMap::new()).unwrap();
    assert_eq!(settings.int("handover_reevaluate"), Ok(2));
    let run = |order: fn(&mut Vec<Candidate>)| {
        let mut opt = PowellCmaes.create(&space, &settings, 4, Some(500)).unwrap();
        let mut seen = Vec::new();
        while seen.len() < 500 {
            let mut batch = match opt.ask() {
                Step::Evaluate(c) => c,
                Step::Wait => panic!("waits with nothing outstanding"),
                Step::Finished => break,
            };
            batch.truncate(500 - seen.len());
            seen.extend(batch.iter().map(|c| (c.tag, c.x.clone())));
            order(&mut batch);
            for c in batch {
                opt.tell(c.tag, Fitness::Value(noisy(&c)));
            }
        }
        seen
    };
    let forward = run(|_| {});
    assert_eq!(forward.len(), 500);
    assert_eq!(forward, run(|b| b.reverse()));
    assert_eq!(
        forward,
        run(|b| {
            let half = b.len() / 2;
            b.rotate_left(half);
        })
    );
}

#[test]
fn handover_reevaluate_is_a_checked_setting() {
    let specs = PowellCmaes.info().settings;
    let given = |v: i64| -> BTreeMap<String, SettingValue> {
        [("handover_reevaluate".to_owned(), SettingValue::Int(v))].into()
    };
    assert!(Settings::resolve(&specs, &given(16)).is_ok());
    assert!(Settings::resolve(&specs, &given(17)).is_err());
    assert!(Settings::resolve(&specs, &given(-1)).is_err());
}
