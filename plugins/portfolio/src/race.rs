//! `portfolio`: CMA-ES and a particle swarm raced side by side, the walks
//! of the rest of the run given to the one that is ahead.
//!
//! No single method wins on every robot (docs/benchmarks.md, the bench of
//! morphologies): IPOP CMA-ES is the best on most, a particle swarm finds
//! gaits a quarter faster on the Roombot quadruped and the salamander. A
//! user who does not know their robot's landscape wants the one that suits
//! it, and a cluster makes trying both at once cheap: the two propose side
//! by side, so their generations run on the hosts together. This is
//! successive halving over optimizers (as Nevergrad's NGOpt chooses among
//! algorithms, but decided on the robot itself): each method gets equal
//! walks per round, after each round the methods are compared, and a method
//! clearly behind leaves the race.
//!
//! # Schedule
//! 1. **Race**: every arm ([`Arms`]) may propose `round` walks per round
//!    (`race_share` of the budget over `judgements` rounds and the arms;
//!    the arm with the fewest walks is asked first; a generation is proposed
//!    whole, so an arm may pass its share by less than one generation). An
//!    arm that waits for results lets the others propose, which keeps every
//!    host busy.
//! 2. **Judgement**, once every arm has used its round and every proposal is
//!    told: each arm's best points are confirmed (below), and an arm whose
//!    best confirmed mean trails the leader's by more than `lead` (a
//!    fraction of the leader's) leaves the race; at the last judgement every
//!    arm but the leader leaves.
//! 3. **The winner** runs on with the rest of the budget from its own state
//!    (nothing is restarted). An arm that finishes on its own schedule (the
//!    swarm's 50 generations) hands the rest of the budget to IPOP CMA-ES
//!    started from the best confirmed point, once.
//! 4. **The answer**: the run's held-out re-walk judges the best points of
//!    all and each arm's best ([`Optimizer::finalists`]), so the arm that
//!    lost the race still competes on starts no arm saw.
//!
//! # Noise
//! Arms are compared, and the race answers, by the mean of all evaluations
//! of a point (a walk starts from its own random start, so a best single
//! value is the luckiest): before each judgement the unconfirmed points of
//! each arm whose mean beats that arm's best confirmed one are evaluated
//! again until they have `1 + reevaluate` evaluations (at most
//! [`CHALLENGERS_PER_ROUND`](crate::CHALLENGERS_PER_ROUND) per arm at once,
//! [`MAX_ROUNDS`](crate::MAX_ROUNDS) rounds), as `powell-cmaes` confirms a
//! hand-over.
//!
//! # Determinism
//! Given the same calls in the same order, the race makes the same
//! proposals (the plugin contract): which arm is asked depends only on the
//! walks each has proposed and on which are waiting, and judgements happen
//! only when nothing is out. Each arm draws from its own seed.
//!
//! # Layout
//! - [`Portfolio`]: the [`Plugin`] (name [`NAME`], typed settings).
//! - [`RaceConfig`], [`Arms`]: the settings as Rust values.
//! - [`Race`]: the [`Optimizer`].

use std::collections::BTreeMap;

use yamor_cmaes::{CmaEs, CmaesConfig};
use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingSpec, Settings, SettingsError, Space,
    Step,
};
use yamor_powell::{Powell, PowellConfig};
use yamor_pso::{PsoConfig, Swarm};

use crate::MAX_ROUNDS;
use crate::points::{Point, Points};

/// The name the runtime registers this plugin under.
pub const NAME: &str = "portfolio";

/// Walks per arm per round when the run has no budget, per parameter.
pub const ROUND_PER_PARAMETER: u64 = 30;

/// The best points of all that the held-out re-walk judges
/// ([`Optimizer::finalists`]) …
pub const FINALISTS_OVERALL: usize = 3;

/// … and of each arm.
pub const FINALISTS_PER_ARM: usize = 2;

/// The plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct Portfolio;

/// The optimizers that race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arms {
    /// IPOP CMA-ES and a particle swarm.
    CmaesPso,
    /// The same and Powell's method (bounded, `interval`).
    CmaesPsoPowell,
}

impl Arms {
    pub const NAMES: [&'static str; 2] = ["cmaes+pso", "cmaes+pso+powell"];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Arms::CmaesPso => Self::NAMES[0],
            Arms::CmaesPsoPowell => Self::NAMES[1],
        }
    }

    fn parse(text: &str) -> Result<Self, SettingsError> {
        match text {
            "cmaes+pso" => Ok(Arms::CmaesPso),
            "cmaes+pso+powell" => Ok(Arms::CmaesPsoPowell),
            other => Err(SettingsError::Invalid {
                name: "arms".into(),
                why: format!("{other:?} is not one of {}", Self::NAMES.join(", ")),
            }),
        }
    }
}

/// The plugin's settings as Rust values.
#[derive(Debug, Clone, PartialEq)]
pub struct RaceConfig {
    pub arms: Arms,
    pub race_share: f64,
    pub judgements: u32,
    pub lead: f64,
    pub reevaluate: u32,
    pub sigma0: f64,
    pub population: usize,
}

impl Default for RaceConfig {
    fn default() -> Self {
        RaceConfig {
            arms: Arms::CmaesPso,
            race_share: 0.5,
            judgements: 3,
            lead: 0.1,
            reevaluate: 2,
            sigma0: CmaesConfig::default().sigma0,
            population: 0,
        }
    }
}

fn specs() -> Vec<SettingSpec> {
    let d = RaceConfig::default();
    vec![
        SettingSpec::choice(
            "arms",
            "the optimizers that race",
            &Arms::NAMES,
            d.arms.as_str(),
        ),
        SettingSpec::float(
            "race_share",
            "the largest fraction of the run's budget the race takes before the leader gets the rest",
            0.0,
            1.0,
            d.race_share,
        ),
        SettingSpec::int(
            "judgements",
            "how many times the race compares its arms (equal walks each between two)",
            1,
            20,
            i64::from(d.judgements),
        ),
        SettingSpec::float(
            "lead",
            "an arm whose best confirmed mean trails the leader's by more than this fraction leaves the race at a judgement",
            0.0,
            1.0,
            d.lead,
        ),
        SettingSpec::int(
            "reevaluate",
            "noisy fitness: evaluations beyond its first a point needs before an arm is judged by it",
            0,
            i64::from(crate::chain::MAX_REEVALUATE),
            i64::from(d.reevaluate),
        ),
    ]
    .into_iter()
    .chain(crate::cmaes_settings(d.sigma0))
    .collect()
}

impl TryFrom<&Settings> for RaceConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        Ok(RaceConfig {
            arms: Arms::parse(s.text("arms")?)?,
            race_share: s.float("race_share")?,
            judgements: s.count("judgements")?,
            lead: s.float("lead")?,
            reevaluate: s.count("reevaluate")?,
            sigma0: s.float("sigma0")?,
            population: s.count("population")?,
        })
    }
}

impl RaceConfig {
    fn cmaes(&self) -> CmaesConfig {
        CmaesConfig {
            sigma0: self.sigma0,
            population: self.population,
            ..CmaesConfig::default()
        }
    }
}

impl Plugin for Portfolio {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: NAME.into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "CMA-ES and a particle swarm (and optionally Powell) side by side, equal walks each, compared after each round on confirmed means; the one ahead gets the rest of the budget".into(),
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
        let config = RaceConfig::try_from(settings)?;
        Ok(Box::new(Race::new(space, &config, seed, budget)?))
    }
}

/// One optimizer of the race.
struct Arm {
    name: &'static str,
    /// `None` once it has finished on its own.
    optimizer: Option<Box<dyn Optimizer>>,
    proposed: u64,
    racing: bool,
}

struct Proposal {
    arm: usize,
    /// The arm's own tag; `None` for the race's re-evaluation of a point.
    inner: Option<u64>,
    x: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Racing,
    /// One arm runs on: its index.
    Winner(usize),
    /// The last arm finished; its answer is confirmed, then the race ends.
    Ending,
    Done,
}

/// The [`Optimizer`] of [`Portfolio`].
pub struct Race {
    space: Space,
    config: RaceConfig,
    seed: u64,
    budget: Option<u64>,
    arms: Vec<Arm>,
    /// Walks each arm may propose per round.
    round: u64,
    judged: u32,
    phase: Phase,
    /// Whether CMA-ES has taken over from a finished winner.
    continued: bool,
    proposed: u64,
    out: BTreeMap<u64, Proposal>,
    points: Points,
    /// Rounds of re-evaluation spent on the coming judgement.
    confirming: u32,
}

impl Race {
    /// The race over `space` with `config`; `budget` is the run's.
    pub fn new(
        space: &Space,
        config: &RaceConfig,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Self, SettingsError> {
        let space = Space::new(space.bounds.clone(), space.start.clone())?;
        let mut arms: Vec<(&'static str, Box<dyn Optimizer>)> = vec![
            (
                "cmaes",
                Box::new(CmaEs::new(&space, &config.cmaes(), seed, budget)?),
            ),
            (
                "pso",
                Box::new(Swarm::new(
                    &space,
                    &PsoConfig::default(),
                    seed.wrapping_add(1),
                )?),
            ),
        ];
        if config.arms == Arms::CmaesPsoPowell {
            let powell = PowellConfig {
                variant: yamor_powell::Variant::Interval,
                ..PowellConfig::default()
            };
            arms.push((
                "powell",
                Powell::optimizer(&space, powell, seed.wrapping_add(2), None)?,
            ));
        }
        Ok(Self::with_arms(space, arms, config, seed, budget))
    }

    /// The race between `arms` (named optimizers over `space`), with
    /// `config`'s schedule (its `arms` and CMA-ES settings are not used
    /// but for the CMA-ES that takes over from a finished winner).
    #[must_use]
    pub fn with_arms(
        space: Space,
        arms: Vec<(&'static str, Box<dyn Optimizer>)>,
        config: &RaceConfig,
        seed: u64,
        budget: Option<u64>,
    ) -> Self {
        let arms: Vec<Arm> = arms
            .into_iter()
            .map(|(name, optimizer)| Arm::new(name, optimizer))
            .collect();
        assert!(!arms.is_empty(), "a race needs an arm");
        let shares = u64::from(config.judgements.max(1)) * arms.len() as u64;
        let round = match budget {
            Some(b) => ((b as f64 * config.race_share) as u64 / shares).max(1),
            None => ROUND_PER_PARAMETER * space.dim() as u64,
        };
        Race {
            space,
            config: config.clone(),
            seed,
            budget,
            arms,
            round,
            judged: 0,
            phase: Phase::Racing,
            continued: false,
            proposed: 0,
            out: BTreeMap::new(),
            points: Points::new(config.reevaluate),
            confirming: 0,
        }
    }

    /// The arms' names in order, and whether each is still racing (or, after
    /// the race, is the one running on).
    #[must_use]
    pub fn standings(&self) -> Vec<(&'static str, bool)> {
        self.arms
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let on = match self.phase {
                    Phase::Racing => a.racing,
                    Phase::Winner(w) => w == i,
                    Phase::Ending | Phase::Done => false,
                };
                (a.name, on)
            })
            .collect()
    }

    /// Walks each arm has proposed (re-evaluations by the race not counted).
    #[must_use]
    pub fn walks(&self) -> Vec<u64> {
        self.arms.iter().map(|a| a.proposed).collect()
    }

    /// How many judgements the race has made.
    #[must_use]
    pub fn judgements(&self) -> u32 {
        self.judged
    }

    /// The race's answer and the mean of its evaluations: the best
    /// confirmed point of any arm (see [`Points`]).
    #[must_use]
    pub fn best(&self) -> Option<(&[f64], f64)> {
        self.points
            .best(|_| true)
            .map(|p| (p.x.as_slice(), p.mean()))
    }

    /// The walks each arm may have proposed by the end of this round.
    fn quota(&self) -> u64 {
        self.round * u64::from(self.judged + 1)
    }

    fn wrap(&mut self, arm: usize, batch: Vec<(Option<u64>, Vec<f64>)>) -> Vec<Candidate> {
        batch
            .into_iter()
            .map(|(inner, x)| {
                let tag = self.proposed;
                self.proposed += 1;
                if inner.is_some() {
                    self.arms[arm].proposed += 1;
                }
                self.out.insert(
                    tag,
                    Proposal {
                        arm,
                        inner,
                        x: x.clone(),
                    },
                );
                Candidate { tag, x }
            })
            .collect()
    }

    /// Asks arm `i` once; `None` when it waits or has just finished.
    fn ask_arm(&mut self, i: usize) -> Option<Step> {
        let optimizer = self.arms[i].optimizer.as_mut()?;
        match optimizer.ask() {
            Step::Evaluate(candidates) => {
                let batch = candidates.into_iter().map(|c| (Some(c.tag), c.x)).collect();
                Some(Step::Evaluate(self.wrap(i, batch)))
            }
            Step::Wait => None,
            Step::Finished => {
                self.arms[i].optimizer = None;
                None
            }
        }
    }

    fn race(&mut self) -> Step {
        let quota = self.quota();
        let mut order: Vec<usize> = (0..self.arms.len())
            .filter(|&i| self.arms[i].racing && self.arms[i].proposed < quota)
            .collect();
        order.sort_by_key(|&i| (self.arms[i].proposed, i));
        for i in order {
            if let Some(step) = self.ask_arm(i) {
                return step;
            }
        }
        if !self.out.is_empty() {
            return Step::Wait;
        }
        // Every arm has used its round, finished, or waits with nothing
        // out (it cannot go on): judge.
        self.judge()
    }

    /// Every proposal is told and the round is over: confirm, compare,
    /// and send the arms clearly behind out of the race.
    fn judge(&mut self) -> Step {
        if let Some(step) = self.confirm(|race, owner| race.arms[owner].racing) {
            return step;
        }
        let scores: Vec<Option<f64>> = (0..self.arms.len())
            .map(|i| {
                self.arms[i].racing.then(|| {
                    self.points
                        .best(|o| o == i)
                        .map_or(f64::NEG_INFINITY, Point::mean)
                })
            })
            .collect();
        let leader = (0..self.arms.len())
            .filter(|&i| scores[i].is_some())
            .fold(None, |best: Option<usize>, i| match best {
                Some(b) if scores[i] <= scores[b] => Some(b),
                _ => Some(i),
            })
            .expect("a race has an arm racing");
        self.judged += 1;
        let lead = scores[leader].expect("the leader races");
        let floor = lead - self.config.lead * lead.abs();
        let last = self.judged >= self.config.judgements;
        for (i, arm) in self.arms.iter_mut().enumerate() {
            if i != leader && (last || scores[i].is_some_and(|s| s < floor)) {
                arm.racing = false;
            }
        }
        let scored: Vec<String> = (0..self.arms.len())
            .filter_map(|i| scores[i].map(|s| format!("{} {s:.4}", self.arms[i].name)))
            .collect();
        let leaving: Vec<&str> = (0..self.arms.len())
            .filter(|&i| scores[i].is_some() && !self.arms[i].racing)
            .map(|i| self.arms[i].name)
            .collect();
        // A user reads from the run's log which method their robot got.
        tracing::info!(
            "portfolio: judgement {} of {} after {} walks: {} (best confirmed means); {}",
            self.judged,
            self.config.judgements,
            self.proposed,
            scored.join(", "),
            if leaving.is_empty() {
                "all race on".to_owned()
            } else {
                format!("{} left the race", leaving.join(" and "))
            }
        );
        if self.arms.iter().filter(|a| a.racing).count() == 1 {
            self.phase = Phase::Winner(leader);
        }
        self.ask()
    }

    /// Re-evaluations that confirm the best points of the arms `owned`
    /// accepts, or `None` when there is nothing (more) to confirm.
    fn confirm(&mut self, owned: impl Fn(&Race, usize) -> bool) -> Option<Step> {
        if self.points.reevaluate() == 0 || self.confirming >= MAX_ROUNDS {
            self.confirming = 0;
            return None;
        }
        let arms: Vec<usize> = (0..self.arms.len()).filter(|&i| owned(self, i)).collect();
        let mut again = Vec::new();
        for i in arms {
            let challengers = self.points.challengers(|o| o == i);
            again.extend(
                self.points
                    .confirming(&challengers)
                    .into_iter()
                    .map(|x| (i, x)),
            );
        }
        if again.is_empty() {
            self.confirming = 0;
            return None;
        }
        self.confirming += 1;
        let candidates = again
            .into_iter()
            .flat_map(|(i, x)| self.wrap(i, vec![(None, x)]))
            .collect();
        Some(Step::Evaluate(candidates))
    }

    fn run_on(&mut self, winner: usize) -> Step {
        if let Some(step) = self.ask_arm(winner) {
            return step;
        }
        if self.arms[winner].optimizer.is_some() {
            return Step::Wait;
        }
        if !self.out.is_empty() {
            return Step::Wait;
        }
        let left = self.budget.map(|b| b.saturating_sub(self.proposed));
        if self.continued || left == Some(0) {
            self.phase = Phase::Ending;
            return self.ask();
        }
        // The winner finished on its own schedule with walks to spare.
        self.continued = true;
        let start = self
            .best()
            .map_or_else(|| self.space.start.clone(), |(x, _)| self.space.clamp(x));
        let space =
            Space::new(self.space.bounds.clone(), start).expect("a clamped point lies in the box");
        let cmaes = CmaEs::new(
            &space,
            &self.config.cmaes(),
            self.seed.wrapping_add(10),
            left,
        )
        .expect("checked when the race was made");
        self.arms
            .push(Arm::new("cmaes (after the winner)", Box::new(cmaes)));
        let next = self.arms.len() - 1;
        self.phase = Phase::Winner(next);
        self.ask()
    }
}

impl Arm {
    fn new(name: &'static str, optimizer: Box<dyn Optimizer>) -> Self {
        Arm {
            name,
            optimizer: Some(optimizer),
            proposed: 0,
            racing: true,
        }
    }
}

impl Optimizer for Race {
    /// The winner's own recommendation (CMA-ES's averaged late means, the
    /// swarm's incumbent) once the race is decided, else the best confirmed
    /// point of any arm.
    fn recommendation(&self) -> Option<Vec<f64>> {
        let own = match self.phase {
            Phase::Winner(w) => self.arms[w]
                .optimizer
                .as_ref()
                .and_then(|o| o.recommendation()),
            _ => None,
        };
        own.or_else(|| self.best().map(|(x, _)| x.to_vec()))
    }

    /// Each arm's best points as well as the best of all: the held-out
    /// re-walk then judges the arms' answers on starts none of them saw,
    /// rather than the winner's neighbours only (a mean over three
    /// training walks still flatters a gait that falls on other starts).
    fn finalists(&self) -> Option<Vec<Vec<f64>>> {
        let mut finalists: Vec<Vec<f64>> = Vec::new();
        let overall = self.points.ranked(|_| true, FINALISTS_OVERALL);
        let per_arm = (0..self.arms.len())
            .flat_map(|i| self.points.ranked(move |o| o == i, FINALISTS_PER_ARM));
        for p in overall.into_iter().chain(per_arm) {
            if !finalists.contains(&p.x) {
                finalists.push(p.x.clone());
            }
        }
        (!finalists.is_empty()).then_some(finalists)
    }

    fn ask(&mut self) -> Step {
        match self.phase {
            Phase::Racing => self.race(),
            Phase::Winner(w) => self.run_on(w),
            Phase::Ending => {
                if !self.out.is_empty() {
                    return Step::Wait;
                }
                self.confirm(|_, _| true).unwrap_or_else(|| {
                    self.phase = Phase::Done;
                    Step::Finished
                })
            }
            Phase::Done => Step::Finished,
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        let Some(Proposal { arm, inner, x }) = self.out.remove(&tag) else {
            return; // stale, unknown or repeated
        };
        self.points.record(tag, x, arm, outcome.value());
        if let (Some(inner), Some(optimizer)) = (inner, self.arms[arm].optimizer.as_mut()) {
            optimizer.tell(inner, outcome);
        }
    }
}
