//! `powell-cmaes`: Powell's method, then IPOP CMA-ES from its best point.
//!
//! The two methods fail on different landscapes. Powell's line searches
//! settle separable and ill-conditioned problems (BBOB's ellipsoid,
//! linear slope, sum of different powers) in a few hundred evaluations,
//! where CMA-ES first spends a thousand learning its covariance; CMA-ES
//! finds what coordinate-wise searches cannot (attractive sector, step
//! ellipsoid, Schaffers). Run in sequence, Powell first because it is the
//! cheaper one to give up on, they solve more problems than either alone at
//! the same budget (docs/benchmarks.md), which is what a user who does not
//! know their landscape wants from a default.
//!
//! # Schedule
//! 1. **Powell** ([`yamor_powell::Powell`], the chosen variant) from the
//!    user's start, with `powell_restarts` restarts, until it finishes on its
//!    own tolerances or has proposed `powell_share` of the run's budget
//!    (without a budget it runs until it finishes).
//! 2. **Drain**: once phase 1 is over, the phase waits for every proposal
//!    it still has out, so the hand-over point does not depend on the order
//!    in which results arrive.
//! 3. **Confirm** (noise, below): the hand-over point is evaluated again
//!    until it has `1 + handover_reevaluate` evaluations.
//! 4. **CMA-ES** ([`yamor_cmaes::CmaEs`], IPOP) from the best point of
//!    phase 1 with the rest of the budget; then, with `polish_share`, Powell
//!    again from the best point, the same drain and confirmation before each
//!    hand-over and before the chain finishes.
//!
//! # Noise
//! A gait's fitness is noisy (every walk starts from its own random
//! start), and the best single value of a stage is its luckiest: handing
//! over from it starts the next stage at a point that only looked good
//! (the winner's curse), and the stages cannot undo that, since each starts
//! where it is told. So the chain judges every point by the **mean of all
//! its evaluations** (the same coordinates, bit for bit, whichever stage
//! proposed them: Powell's and CMA-ES's own noise handling re-evaluate
//! points, and those values pool), and hands over only from a point
//! *confirmed* by `1 + handover_reevaluate` evaluations (default 2 extra,
//! as Powell's and the PSO's `reevaluate`):
//!
//! - Before a hand-over, the unconfirmed points whose mean beats the best
//!   confirmed one are evaluated again until confirmed, the best
//!   [`CHALLENGERS_PER_ROUND`](crate::CHALLENGERS_PER_ROUND) at once (in parallel), round after round
//!   while an unconfirmed point still leads, at most [`MAX_ROUNDS`] rounds
//!   (at most 24 evaluations per hand-over with the default). Then the
//!   best confirmed point by mean is the next stage's start.
//! - Only the top of the ranking is re-evaluated, not every point a stage
//!   touched: the stages already spend their evaluations on their own
//!   noise handling, and the chain's question is only which point to start
//!   the next stage from.
//! - The same confirmation runs once more when the last stage finishes, so
//!   [`Chain::best`] answers with a mean, never a lone lucky value (with a
//!   budget the runtime usually stops the chain first; [`Chain::best`]
//!   still prefers confirmed points, and the runtime's held-out re-walk
//!   judges the finalists).
//! - A failed evaluation makes a point's mean −∞: the point is worst.
//! - On a deterministic objective a confirmation reproduces the point's
//!   value and costs `handover_reevaluate` evaluations per hand-over;
//!   `handover_reevaluate = 0` re-evaluates nothing (points repeated by a
//!   stage are still judged by their means).
//!
//! # Determinism
//! Both phases are deterministic under any completion order; the hand-over
//! waits for all of phase 1 and its confirmation; a point's mean is summed
//! in proposal order, whatever order its values were told in; the best
//! point breaks ties by the earlier proposal. Replaying a run's results
//! through a fresh instance therefore reproduces it, and the organizer's
//! resume needs nothing more. Phase 2 draws from its own seed (`seed + 1`),
//! so changing the Powell phase does not change CMA-ES's random stream.
//!
//! # Layout
//! - [`PowellCmaes`]: the [`Plugin`] (name [`NAME`], typed settings).
//! - [`PortfolioConfig`]: the settings as Rust values.
//! - [`Chain`]: the [`Optimizer`] that runs the stages, keeps every point's
//!   evaluations and confirms each hand-over.

use std::collections::BTreeMap;

use yamor_cmaes::{CmaEs, CmaesConfig};
use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue,
    Settings, SettingsError, Space, Step,
};
use yamor_powell::{Powell, PowellConfig, Variant};

use crate::MAX_ROUNDS;
use crate::points::{Point, Points};

/// The name the runtime registers this plugin under.
pub const NAME: &str = "powell-cmaes";

/// The default of `handover_reevaluate`.
pub const DEFAULT_REEVALUATE: u32 = 2;

/// The largest `handover_reevaluate`.
pub const MAX_REEVALUATE: u32 = 16;

/// The plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct PowellCmaes;

fn specs() -> Vec<SettingSpec> {
    let d = CmaesConfig::default();
    vec![
        SettingSpec {
            name: "variant".into(),
            description: "the Powell variant of the first phase (see the powell optimizer)".into(),
            kind: SettingKind::Choice {
                options: Variant::NAMES.iter().map(|s| (*s).to_owned()).collect(),
            },
            default: SettingValue::Text("classic".into()),
        },
        SettingSpec {
            name: "powell_share".into(),
            description: "the largest fraction of the run's budget the Powell phase may propose before CMA-ES takes over".into(),
            kind: SettingKind::Float { min: 0.0, max: 1.0 },
            default: SettingValue::Float(0.05),
        },
        SettingSpec {
            name: "powell_restarts".into(),
            description: "Powell restarts from its best point with fresh directions before CMA-ES takes over".into(),
            kind: SettingKind::Integer { min: 0, max: 1000 },
            default: SettingValue::Int(0),
        },
        SettingSpec {
            name: "polish_share".into(),
            description: "the fraction of the run's budget kept for a last Powell run from the best point (0: none)".into(),
            kind: SettingKind::Float { min: 0.0, max: 1.0 },
            default: SettingValue::Float(0.15),
        },
        SettingSpec {
            name: "handover_reevaluate".into(),
            description: "noisy fitness: before a stage hands over (and before the chain's final answer), the best points by mean are evaluated again until the best has this many evaluations beyond its first; points are compared by the mean of all their evaluations (0: no extra evaluations)".into(),
            kind: SettingKind::Integer { min: 0, max: i64::from(MAX_REEVALUATE) },
            default: SettingValue::Int(i64::from(DEFAULT_REEVALUATE)),
        },
    ]
    .into_iter()
    .chain(crate::cmaes_settings(d.sigma0))
    .collect()
}

/// The plugin's settings as Rust values.
#[derive(Debug, Clone, PartialEq)]
pub struct PortfolioConfig {
    pub variant: Variant,
    pub powell_share: f64,
    pub powell_restarts: u32,
    pub polish_share: f64,
    /// Extra evaluations a point needs before the chain hands over from it
    /// (see [`Chain::reevaluating`]).
    pub handover_reevaluate: u32,
    pub sigma0: f64,
    pub population: usize,
}

impl TryFrom<&Settings> for PortfolioConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        Ok(PortfolioConfig {
            variant: Variant::from_setting(s)?,
            powell_share: s.float("powell_share")?,
            powell_restarts: s.count("powell_restarts")?,
            polish_share: s.float("polish_share")?,
            handover_reevaluate: s.count("handover_reevaluate")?,
            sigma0: s.float("sigma0")?,
            population: s.count("population")?,
        })
    }
}

impl Plugin for PowellCmaes {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: NAME.into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Powell's method until it converges (at most powell_share of the budget), then IPOP CMA-ES from its best point, then (polish_share) Powell again from the best point; each hand-over from the best mean of a point evaluated 1 + handover_reevaluate times".into(),
            settings: specs(),
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let config = PortfolioConfig::try_from(settings)?;
        let cmaes = CmaesConfig {
            sigma0: config.sigma0,
            population: config.population,
            ..CmaesConfig::default()
        };
        // Checked here so a bad population is refused at start, not at a
        // hand-over.
        cmaes.to_settings()?;
        let powell = |restarts: u32| PowellConfig {
            variant: config.variant,
            restarts,
            ..PowellConfig::default()
        };
        let share = |fraction: f64| budget.map(|b| (b as f64 * fraction).floor() as u64);
        let (first_end, polish) = (share(config.powell_share), share(config.polish_share));
        if let (Some(a), Some(c), Some(b)) = (first_end, polish, budget)
            && a + c > b
        {
            return Err(SettingsError::Invalid {
                name: "polish_share".into(),
                why: "powell_share and polish_share together exceed the budget".into(),
            });
        }
        // Without a run budget Powell ends on its own restarts, CMA-ES on
        // its own; with one, the first Powell must end on its own too: the
        // budget is what the chain hands on.
        let first = powell(config.powell_restarts);
        Powell::optimizer(space, first.clone(), seed, None)?;
        let mut stages = vec![Stage {
            end: first_end,
            start: Box::new(move |space, _| {
                Powell::optimizer(space, first.clone(), seed, None).expect("checked at create")
            }),
        }];
        let cmaes_end = match (budget, polish) {
            (Some(b), Some(c)) if c > 0 => Some(b - c),
            _ => None,
        };
        stages.push(Stage {
            end: cmaes_end,
            start: Box::new(move |space, rest| {
                Box::new(
                    CmaEs::new(space, &cmaes, seed.wrapping_add(1), rest)
                        .expect("checked at create"),
                )
            }),
        });
        if cmaes_end.is_some() {
            let polish = powell(0);
            stages.push(Stage {
                end: None,
                start: Box::new(move |space, rest| {
                    Powell::optimizer(space, polish.clone(), seed.wrapping_add(2), rest)
                        .expect("checked at create")
                }),
            });
        }
        Ok(Box::new(
            Chain::new(space.clone(), stages, budget).reevaluating(config.handover_reevaluate),
        ))
    }
}

/// Makes a stage's optimizer from the best point so far (as the space's
/// start) and the budget left.
type StartStage = Box<dyn Fn(&Space, Option<u64>) -> Box<dyn Optimizer> + Send>;

/// One optimizer of a [`Chain`].
pub struct Stage {
    /// The number of proposals of the whole chain at which this stage is
    /// cut off; `None`: when it finishes.
    pub end: Option<u64>,
    pub start: StartStage,
}

struct Proposal {
    stage: usize,
    /// The tag the stage gave it; `None` for the chain's own re-evaluation
    /// of a hand-over candidate.
    inner: Option<u64>,
    x: Vec<f64>,
}

/// Optimizers run one after the other, each starting from the best point
/// of all before it: the [`Optimizer`] of [`PowellCmaes`].
///
/// A stage ends when it finishes or when the chain has made its `end`
/// proposals (the rest of its last batch is never proposed). The next stage
/// starts once every proposal of the ended one is told, so the hand-over
/// does not depend on the order results arrive in.
///
/// Points are judged by the mean of all their evaluations: a stage that
/// evaluates a point again (Powell's and CMA-ES's noise handling) or the
/// chain itself adds to the same mean. With [`Chain::reevaluating`]`(k)`,
/// `k` > 0, a point is *confirmed* once it has `1 + k` evaluations, and the
/// chain hands over only from a confirmed point: before a hand-over (and
/// before it finishes) it evaluates the unconfirmed points whose mean beats
/// the best confirmed one until they are confirmed,
/// [`CHALLENGERS_PER_ROUND`](crate::CHALLENGERS_PER_ROUND) at a time (the best first), for at most
/// [`MAX_ROUNDS`] rounds, then hands over from the best confirmed point.
pub struct Chain {
    space: Space,
    stages: Vec<Stage>,
    /// The running stage (index) and its optimizer; `None` while draining
    /// and confirming.
    current: usize,
    running: Option<Box<dyn Optimizer>>,
    budget: Option<u64>,
    proposed: u64,
    /// Proposals out for evaluation, by the chain's tag.
    out: BTreeMap<u64, Proposal>,
    /// Every point told, with how many evaluations beyond its first a
    /// point needs to be handed over from.
    points: Points,
    /// Rounds of re-evaluation spent on the coming hand-over.
    rounds: u32,
}

impl Chain {
    /// Runs `stages` in order over `space`; `budget` is the run's. Points
    /// are compared by their means but nothing is re-evaluated by the chain
    /// itself (see [`Chain::reevaluating`]).
    #[must_use]
    pub fn new(space: Space, stages: Vec<Stage>, budget: Option<u64>) -> Self {
        let running = stages.first().map(|s| (s.start)(&space, budget));
        Chain {
            space,
            stages,
            current: 0,
            running,
            budget,
            proposed: 0,
            out: BTreeMap::new(),
            points: Points::new(0),
            rounds: 0,
        }
    }

    /// Hands over only from points evaluated `1 + extra` times (see the
    /// type's docs); 0, the default, hands over from the best mean as it
    /// stands.
    #[must_use]
    pub fn reevaluating(mut self, extra: u32) -> Self {
        self.points = Points::new(extra);
        self
    }

    /// The stage running or about to run (0-based).
    #[must_use]
    pub fn stage(&self) -> usize {
        self.current
    }

    /// The point the chain hands over from (and answers with) and the mean
    /// of its evaluations: the best confirmed point by mean, or while none
    /// is confirmed the best by mean; ties go to the earlier proposal;
    /// `None` until some evaluation succeeded.
    #[must_use]
    pub fn best(&self) -> Option<(&[f64], f64)> {
        self.best_point().map(|p| (p.x.as_slice(), p.mean()))
    }

    /// How many evaluations the mean [`Chain::best`] reports is over.
    #[must_use]
    pub fn best_evaluations(&self) -> Option<usize> {
        self.best_point().map(|p| p.values.len())
    }

    fn best_point(&self) -> Option<&Point> {
        self.points.best(|_| true)
    }

    /// Tags `batch` (the stage's tag, or `None` for the chain's own) and
    /// records it as out.
    fn wrap(&mut self, batch: Vec<(Option<u64>, Vec<f64>)>) -> Vec<Candidate> {
        batch
            .into_iter()
            .map(|(inner, x)| {
                let tag = self.proposed;
                self.proposed += 1;
                let proposal = Proposal {
                    stage: self.current,
                    inner,
                    x: x.clone(),
                };
                self.out.insert(tag, proposal);
                Candidate { tag, x }
            })
            .collect()
    }

    /// Ends the running stage; the next starts once its proposals are told.
    fn end_stage(&mut self) -> Step {
        self.running = None;
        self.ask()
    }

    /// Every proposal of the ended stage is told: confirm the hand-over
    /// point by re-evaluation, then start the next stage from it.
    fn hand_over(&mut self) -> Step {
        if self.points.reevaluate() > 0 && self.rounds < MAX_ROUNDS {
            let again: Vec<(Option<u64>, Vec<f64>)> = self
                .points
                .confirming(&self.points.challengers(|_| true))
                .into_iter()
                .map(|x| (None, x))
                .collect();
            if !again.is_empty() {
                self.rounds += 1;
                return Step::Evaluate(self.wrap(again));
            }
        }
        self.rounds = 0;
        self.start_next()
    }

    fn start_next(&mut self) -> Step {
        self.current += 1;
        let Some(stage) = self.stages.get(self.current) else {
            return Step::Finished;
        };
        let start = match self.best() {
            Some((x, _)) => self.space.clamp(x),
            None => self.space.start.clone(),
        };
        let space =
            Space::new(self.space.bounds.clone(), start).expect("a clamped point lies in the box");
        let rest = self.budget.map(|b| b.saturating_sub(self.proposed));
        self.running = Some((stage.start)(&space, rest));
        self.ask()
    }
}

impl Optimizer for Chain {
    /// The running stage's own recommendation (CMA-ES's averaged late
    /// means), else the chain's best point by mean.
    fn recommendation(&self) -> Option<Vec<f64>> {
        self.running
            .as_ref()
            .and_then(|stage| stage.recommendation())
            .or_else(|| self.best().map(|(x, _)| x.to_vec()))
    }

    fn ask(&mut self) -> Step {
        let end = self.stages.get(self.current).and_then(|s| s.end);
        let Some(running) = &mut self.running else {
            if self.current >= self.stages.len() {
                return Step::Finished;
            }
            return if self.out.values().any(|p| p.stage == self.current) {
                Step::Wait
            } else {
                self.hand_over()
            };
        };
        let room = end.map(|end| end.saturating_sub(self.proposed));
        if room == Some(0) {
            return self.end_stage();
        }
        match running.ask() {
            Step::Evaluate(mut candidates) => {
                if let Some(room) = room {
                    candidates.truncate(usize::try_from(room).unwrap_or(usize::MAX));
                }
                let batch = candidates.into_iter().map(|c| (Some(c.tag), c.x)).collect();
                Step::Evaluate(self.wrap(batch))
            }
            Step::Wait => Step::Wait,
            Step::Finished => self.end_stage(),
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        let Some(Proposal { stage, inner, x }) = self.out.remove(&tag) else {
            return; // stale, unknown or repeated
        };
        self.points.record(tag, x, stage, outcome.value());
        // An ended stage's late results (and the chain's own
        // re-evaluations) only count towards the means.
        if stage == self.current
            && let (Some(inner), Some(running)) = (inner, &mut self.running)
        {
            running.tell(inner, outcome);
        }
    }
}
