//! Intelligent Trial and Error (Cully, Clune, Tarapore & Mouret, "Robots
//! that can adapt like animals", Nature 2015) as a yamor optimizer plugin:
//! a robot that no longer walks as its map of gaits says (a motor stuck,
//! another floor, the real robot instead of the simulator) finds a gait
//! that works in a handful of walks, by Bayesian optimization over the
//! map's elites.
//!
//! The map is another run's (a `map-elites` run: `RunSpec::prior` names
//! it), each elite with its held-out value. A Gaussian process whose prior
//! mean is that value and whose kernel works on the elites' descriptors
//! (see `model`) is told every walk; the next elite walked is the one with
//! the highest upper confidence bound `μ + κσ`. Only elites are ever
//! walked: the map is the space searched, which is why twenty walks can
//! be enough. The run stops once a walk reached `stop` times the best
//! value any elite is still predicted to walk (IT&E's rule: nothing left
//! is expected to do much better), or when its budget of walks is spent.
//!
//! One walk at a time, as on a robot. Its answer is the elite whose walks
//! were best, and that one alone is re-walked from held-out starts: the
//! adaptation's choice is what is judged, not the luckiest of several.
//!
//! # Layout
//! - [`ItePlugin`], [`IteConfig`]: the plugin and its settings.
//! - [`Ite`]: the optimizer.
//! - `model`: the Gaussian process over the map (friedrich).

mod model;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use yamor_optimizer_api::map::Prior;
use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingSpec, Settings, SettingsError, Space,
    Step,
};

pub use model::{Hyper, Model};

/// The plugin's registered name.
pub const NAME: &str = "ite";

/// The plugin.
pub struct ItePlugin;

impl Plugin for ItePlugin {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: NAME.into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Intelligent Trial and Error: adapt in a few walks by Bayesian \
                          optimization over another run's map of gaits (needs its prior run)"
                .into(),
            settings: vec![
                SettingSpec::float(
                    "kappa",
                    "exploration: the next elite maximises mean + kappa × standard deviation",
                    0.0,
                    10.0,
                    0.05,
                ),
                SettingSpec::float(
                    "length",
                    "Matérn 5/2 length scale over descriptors scaled to [0, 1]",
                    0.01,
                    10.0,
                    0.13,
                ),
                SettingSpec::float(
                    "noise",
                    "standard deviation of one walk, as a share of the map's best value",
                    0.0,
                    1.0,
                    0.03,
                ),
                SettingSpec::float(
                    "stop",
                    "stop once a walk reaches this share of the best value an elite is \
                     predicted to walk (0: walk the whole budget)",
                    0.0,
                    1.0,
                    0.9,
                ),
                SettingSpec::int(
                    "confirm",
                    "walks the answer must have before the stop rule ends the run \
                     (a single walk of a chaotic gait can mislead)",
                    1,
                    10,
                    2,
                ),
                SettingSpec::float(
                    "stop_sd",
                    "the stop rule's best prediction is an elite's mean plus this many \
                     standard deviations (0: IT&E's rule, the mean alone)",
                    0.0,
                    10.0,
                    0.1,
                ),
            ],
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        self.create_from(space, settings, seed, budget, None)
    }

    fn needs_prior(&self) -> bool {
        true
    }

    fn create_from(
        &self,
        space: &Space,
        settings: &Settings,
        _seed: u64,
        _budget: Option<u64>,
        prior: Option<&Prior>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let config = IteConfig::try_from(settings)?;
        let invalid = |why: String| SettingsError::Invalid {
            name: "prior".into(),
            why,
        };
        let prior = prior.ok_or_else(|| {
            invalid("ite adapts from a map: name the map-elites run it starts from".into())
        })?;
        if prior.elites.is_empty() {
            return Err(invalid(format!("run {}'s map holds no elite", prior.run)));
        }
        if let Some(e) = prior.elites.iter().find(|e| e.x.len() != space.dim()) {
            return Err(invalid(format!(
                "run {}'s elites have {} parameters, this run's space {}",
                prior.run,
                e.x.len(),
                space.dim()
            )));
        }
        Ok(Box::new(Ite::new(space, prior, &config)))
    }
}

/// The plugin's settings as Rust values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IteConfig {
    pub kappa: f64,
    pub hyper: Hyper,
    pub stop: f64,
    /// Standard deviations added to each elite's predicted mean in the
    /// stop rule: a region no walk has told anything about yet is not
    /// taken as known to be worse.
    pub stop_sd: f64,
    /// Walks the answer must have before the stop rule ends the run.
    pub confirm: usize,
}

impl Default for IteConfig {
    fn default() -> Self {
        IteConfig {
            kappa: 0.05,
            hyper: Hyper {
                length: 0.13,
                noise: 0.03,
            },
            stop: 0.9,
            stop_sd: 0.1,
            confirm: 2,
        }
    }
}

impl TryFrom<&Settings> for IteConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        Ok(IteConfig {
            kappa: s.float("kappa")?,
            hyper: Hyper {
                length: s.float("length")?,
                noise: s.float("noise")?,
            },
            stop: s.float("stop")?,
            stop_sd: s.float("stop_sd")?,
            confirm: usize::try_from(s.int("confirm")?).unwrap_or(1),
        })
    }
}

/// Bayesian optimization over a map's elites.
pub struct Ite {
    /// Each elite's point, clamped into the run's space.
    points: Vec<Vec<f64>>,
    model: Model,
    config: IteConfig,
    /// The walk out, by tag.
    pending: HashMap<u64, usize>,
    next_tag: u64,
}

/// Why adaptation ended, or that it goes on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress {
    /// Nothing walked yet, or no walk near enough the best prediction.
    Searching,
    /// A walk reached `stop` × the best predicted value.
    Stopped { best: f64, predicted: f64 },
}

impl Ite {
    #[must_use]
    pub fn new(space: &Space, prior: &Prior, config: &IteConfig) -> Self {
        Ite {
            points: prior.elites.iter().map(|e| space.clamp(&e.x)).collect(),
            model: Model::new(prior, config.hyper),
            config: *config,
            pending: HashMap::new(),
            next_tag: 0,
        }
    }

    /// The model, for what it predicts and what was walked.
    #[must_use]
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The elite walked next: the highest upper confidence bound, the
    /// first in map order among equals.
    #[must_use]
    pub fn next_elite(&self) -> usize {
        let kappa = self.config.kappa;
        self.model
            .predict()
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(best, ucb), (i, (m, s))| {
                let u = m + kappa * s;
                if u > ucb { (i, u) } else { (best, ucb) }
            })
            .0
    }

    /// IT&E's stop rule on the walks told so far.
    #[must_use]
    pub fn progress(&self) -> Progress {
        let Some((_, best)) = self.model.best_walked() else {
            return Progress::Searching;
        };
        let predicted = self
            .model
            .predict()
            .iter()
            .map(|(m, sd)| m + self.config.stop_sd * sd)
            .fold(f64::NEG_INFINITY, f64::max);
        if self.config.stop > 0.0 && best >= self.config.stop * predicted {
            Progress::Stopped { best, predicted }
        } else {
            Progress::Searching
        }
    }

    /// The elite whose walks were best on average, the answer.
    #[must_use]
    pub fn answer(&self) -> Option<usize> {
        self.model.best_mean_walked().map(|(elite, _)| elite)
    }

    /// The elite [`Optimizer::ask`] walks next: the best by UCB while the
    /// search goes on, then the answer until it has `confirm` walks;
    /// `None` once the run is over.
    #[must_use]
    pub fn next_walk(&self) -> Option<usize> {
        if !matches!(self.progress(), Progress::Stopped { .. }) {
            return Some(self.next_elite());
        }
        self.answer()
            .filter(|&answer| self.model.walks_of(answer) < self.config.confirm)
    }
}

impl Optimizer for Ite {
    fn ask(&mut self) -> Step {
        if !self.pending.is_empty() {
            return Step::Wait;
        }
        let Some(elite) = self.next_walk() else {
            return Step::Finished;
        };
        let tag = self.next_tag;
        self.next_tag += 1;
        self.pending.insert(tag, elite);
        Step::Evaluate(vec![Candidate {
            tag,
            x: self.points[elite].clone(),
        }])
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        let Some(elite) = self.pending.remove(&tag) else {
            return;
        };
        // A walk that failed for good (every retry spent) walked nowhere
        // the robot could use: believed as bad as standing still or the
        // worst value known, whichever is lower (an objective may be
        // negative), so the search moves on.
        let value = match outcome {
            Fitness::Value(v) if v.is_finite() => v,
            _ => self.model.floor(),
        };
        self.model.observe(elite, value);
    }

    fn recommendation(&self) -> Option<Vec<f64>> {
        self.answer().map(|i| self.points[i].clone())
    }

    fn finalists(&self) -> Option<Vec<Vec<f64>>> {
        self.recommendation().map(|x| vec![x])
    }

    fn beliefs(&self) -> Option<Vec<(f64, f64)>> {
        Some(self.model.predict())
    }
}
