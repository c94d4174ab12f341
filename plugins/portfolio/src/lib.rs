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
//! 3. **CMA-ES** ([`yamor_cmaes::CmaEs`], IPOP) from the best point of
//!    phase 1 with the rest of the budget.
//!
//! # Determinism
//! Both phases are deterministic under any completion order; the hand-over
//! waits for all of phase 1; the best point breaks ties by the earlier
//! proposal. Replaying a run's results through a fresh instance therefore
//! reproduces it, and the organizer's resume needs nothing more. Phase 2
//! draws from its own seed (`seed + 1`), so changing the Powell phase does
//! not change CMA-ES's random stream.
//!
//! # Layout
//! - [`PowellCmaes`]: the [`Plugin`] (name [`NAME`], typed settings).
//! - [`Chain`]: the [`Optimizer`] that runs the two phases.

use std::collections::BTreeMap;

use yamor_cmaes::{CmaEs, CmaesConfig};
use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue,
    Settings, SettingsError, Space, Step,
};
use yamor_powell::{Powell, PowellConfig, Variant};

/// The name the runtime registers this plugin under.
pub const NAME: &str = "powell-cmaes";

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
            name: "sigma0".into(),
            description: "CMA-ES: initial step size as a fraction of each parameter's range".into(),
            kind: SettingKind::Float { min: 1e-6, max: 1.0 },
            default: SettingValue::Float(d.sigma0),
        },
        SettingSpec {
            name: "population".into(),
            description: "CMA-ES: population of its first run (0: 4 + 3 ln n); IPOP doubles it at each restart".into(),
            kind: SettingKind::Integer { min: 0, max: yamor_cmaes::MAX_POPULATION as i64 },
            default: SettingValue::Int(0),
        },
    ]
}

/// The plugin's settings as Rust values.
#[derive(Debug, Clone, PartialEq)]
pub struct PortfolioConfig {
    pub variant: Variant,
    pub powell_share: f64,
    pub powell_restarts: u32,
    pub polish_share: f64,
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
            description: "Powell's method until it converges (at most powell_share of the budget), then IPOP CMA-ES from its best point, then (polish_share) Powell again from the best point".into(),
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
        Ok(Box::new(Chain::new(space.clone(), stages, budget)))
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
    /// The tag the stage gave it.
    inner: u64,
    x: Vec<f64>,
}

/// Optimizers run one after the other, each starting from the best point
/// of all before it: the [`Optimizer`] of [`PowellCmaes`].
///
/// A stage ends when it finishes or when the chain has made its `end`
/// proposals (the rest of its last batch is never proposed). The next stage
/// starts once every proposal of the ended one is told, so the hand-over
/// does not depend on the order results arrive in.
pub struct Chain {
    space: Space,
    stages: Vec<Stage>,
    /// The running stage (index) and its optimizer; `None` while draining.
    current: usize,
    running: Option<Box<dyn Optimizer>>,
    budget: Option<u64>,
    proposed: u64,
    /// Proposals out for evaluation, by the chain's tag.
    out: BTreeMap<u64, Proposal>,
    /// Best (fitness, tag, point); ties go to the earlier tag.
    best: Option<(f64, u64, Vec<f64>)>,
}

impl Chain {
    /// Runs `stages` in order over `space`; `budget` is the run's.
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
            best: None,
        }
    }

    /// The stage running or about to run (0-based).
    #[must_use]
    pub fn stage(&self) -> usize {
        self.current
    }

    /// The best point told so far and its fitness.
    #[must_use]
    pub fn best(&self) -> Option<(&[f64], f64)> {
        self.best.as_ref().map(|(f, _, x)| (x.as_slice(), *f))
    }

    fn wrap(&mut self, inner: Vec<Candidate>) -> Vec<Candidate> {
        inner
            .into_iter()
            .map(|c| {
                let tag = self.proposed;
                self.proposed += 1;
                let proposal = Proposal {
                    stage: self.current,
                    inner: c.tag,
                    x: c.x.clone(),
                };
                self.out.insert(tag, proposal);
                Candidate { tag, x: c.x }
            })
            .collect()
    }

    /// Ends the running stage; the next starts once its proposals are told.
    fn end_stage(&mut self) -> Step {
        self.running = None;
        self.ask()
    }

    fn start_next(&mut self) -> Step {
        self.current += 1;
        let Some(stage) = self.stages.get(self.current) else {
            return Step::Finished;
        };
        let start = match &self.best {
            Some((_, _, x)) => self.space.clamp(x),
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
    fn ask(&mut self) -> Step {
        let end = self.stages.get(self.current).and_then(|s| s.end);
        let Some(running) = &mut self.running else {
            if self.current >= self.stages.len() {
                return Step::Finished;
            }
            return if self.out.values().any(|p| p.stage == self.current) {
                Step::Wait
            } else {
                self.start_next()
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
                Step::Evaluate(self.wrap(candidates))
            }
            Step::Wait => Step::Wait,
            Step::Finished => self.end_stage(),
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        let Some(Proposal { stage, inner, x }) = self.out.remove(&tag) else {
            return; // stale, unknown or repeated
        };
        let value = outcome.value();
        let better = match &self.best {
            None => value > f64::NEG_INFINITY,
            Some((f, t, _)) => value > *f || (value == *f && tag < *t),
        };
        if better {
            self.best = Some((value, tag, x));
        }
        // An ended stage's late results only count towards the best.
        if stage == self.current
            && let Some(running) = &mut self.running
        {
            running.tell(inner, outcome);
        }
    }
}
