//! The optimizer plugin API: an optimizer proposes parameter vectors and is
//! told how well they did. It never sees gRPC, SQLite, hosts or clocks; the
//! runtime (the organizer) owns budgets, termination, persistence and
//! observers, and decides where evaluations run.
//!
//! This is the thesis' `IOptimizer` (appendix D.2.2) turned inside out: the
//! C# optimizer ran its own thread and raised `SubmitSimulation`; here it is a
//! state machine driven by [`Optimizer::ask`] and [`Optimizer::tell`], which is
//! what lets the runtime batch, parallelise and replay it.
//!
//! # Contract
//! - Fitness is *maximised* (a gait's velocity in m/s).
//! - [`Optimizer::ask`] returns every candidate the optimizer can use right
//!   now; proposals of one [`Step::Evaluate`] may run in parallel. It returns
//!   [`Step::Wait`] while it needs results before it can propose more.
//! - Results may be told in any order.
//! - **Determinism**: given the same settings, [`Space`], seed and the same
//!   sequence of `ask`/`tell` calls, an optimizer makes the same proposals.
//!   The runtime resumes an interrupted run by replaying its stored results
//!   through a fresh instance, so plugins need no serialisation code, but they
//!   must draw randomness only from the seed they are given.
//!
//! # Layout
//! - [`Optimizer`], [`Step`], [`Candidate`], [`Fitness`]: the ask/tell loop.
//! - [`Space`], [`Bound`]: the box the parameters live in and the start point.
//! - [`Plugin`], [`PluginInfo`], [`SettingSpec`], [`Settings`]: how a plugin
//!   describes and validates its typed settings (thesis D.2.3 `UserConfig`).
//! - [`map`]: the grid of elites a quality-diversity plugin fills and the
//!   runtime shows; such a plugin names its descriptors
//!   ([`Optimizer::descriptors`]) and is told them with each result
//!   ([`Optimizer::tell_described`]).

pub mod map;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// One named parameter and its closed interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub name: String,
    pub min: f64,
    pub max: f64,
    /// `min` and `max` are the same point (a phase lag over one whole
    /// turn): an optimizer may step across them and wrap with
    /// [`Bound::wrap`]; one that does not simply treats the interval as a
    /// box, which is always correct, only slower.
    #[serde(default)]
    pub periodic: bool,
}

impl Bound {
    /// A closed interval, not periodic.
    #[must_use]
    pub fn new(name: impl Into<String>, min: f64, max: f64) -> Self {
        Bound {
            name: name.into(),
            min,
            max,
            periodic: false,
        }
    }

    /// The same interval as one whole turn: `min` and `max` are one point.
    #[must_use]
    pub fn wrapping(self) -> Self {
        Bound {
            periodic: true,
            ..self
        }
    }

    /// `x` brought into `[min, max]`: by whole periods when periodic (so
    /// `max` itself becomes `min`), otherwise by clamping.
    #[must_use]
    pub fn wrap(&self, x: f64) -> f64 {
        let range = self.max - self.min;
        if self.periodic && range > 0.0 && !(self.min..=self.max).contains(&x) {
            (self.min + (x - self.min).rem_euclid(range)).clamp(self.min, self.max)
        } else {
            x.clamp(self.min, self.max)
        }
    }

    /// The signed step from `from` to `to`: the shorter way round when
    /// periodic, so a swarm or line search can cross the seam.
    #[must_use]
    pub fn delta(&self, from: f64, to: f64) -> f64 {
        let range = self.max - self.min;
        let d = to - from;
        if self.periodic && range > 0.0 {
            (d + range / 2.0).rem_euclid(range) - range / 2.0
        } else {
            d
        }
    }
}

/// The search space: bounds per dimension and where the user's gait sits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Space {
    pub bounds: Vec<Bound>,
    /// The starting point (the gait's current values), inside the bounds.
    pub start: Vec<f64>,
}

impl Space {
    /// Checks that bounds are finite and ordered and the start lies inside.
    pub fn new(bounds: Vec<Bound>, start: Vec<f64>) -> Result<Self, SpaceError> {
        if bounds.is_empty() {
            return Err(SpaceError::Empty);
        }
        if start.len() != bounds.len() {
            return Err(SpaceError::StartLength {
                expected: bounds.len(),
                got: start.len(),
            });
        }
        for (b, &x) in bounds.iter().zip(&start) {
            if !(b.min.is_finite() && b.max.is_finite()) || b.min > b.max {
                return Err(SpaceError::BadBound(b.name.clone()));
            }
            if !(x >= b.min && x <= b.max) {
                return Err(SpaceError::StartOutside {
                    name: b.name.clone(),
                    value: x,
                });
            }
        }
        Ok(Space { bounds, start })
    }

    #[must_use]
    pub fn dim(&self) -> usize {
        self.bounds.len()
    }

    #[must_use]
    pub fn contains(&self, x: &[f64]) -> bool {
        x.len() == self.dim()
            && self
                .bounds
                .iter()
                .zip(x)
                .all(|(b, &v)| v >= b.min && v <= b.max)
    }

    /// The nearest point of the box (component-wise clamp).
    #[must_use]
    pub fn clamp(&self, x: &[f64]) -> Vec<f64> {
        self.bounds
            .iter()
            .zip(x)
            .map(|(b, &v)| v.clamp(b.min, b.max))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpaceError {
    #[error("the search space has no parameters")]
    Empty,
    #[error("the start point has {got} values but the space has {expected} parameters")]
    StartLength { expected: usize, got: usize },
    #[error("parameter {0}: bounds must be finite with min <= max")]
    BadBound(String),
    #[error("parameter {name}: start value {value} lies outside its bounds")]
    StartOutside { name: String, value: f64 },
}

/// A proposal, tagged by the optimizer so it can match the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub tag: u64,
    pub x: Vec<f64>,
}

/// What the optimizer wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Evaluate these (possibly in parallel), then tell each result.
    Evaluate(Vec<Candidate>),
    /// Nothing to propose until more results are told.
    Wait,
    /// Converged or exhausted its own schedule; the run ends.
    Finished,
}

/// What an optimizer is told of one evaluation: the one number it
/// maximises, or that there is none. (What a walk measured, trajectory and
/// all, is core's `evaluation::Outcome`; this is the number taken from it.)
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Fitness {
    /// The measured fitness (higher is better).
    Value(f64),
    /// The evaluation failed for good (every retry exhausted); treat it as a
    /// very bad point rather than stopping.
    Failed,
}

impl Fitness {
    /// The fitness, with failures mapped to `-inf` so comparisons stay total.
    #[must_use]
    pub fn value(self) -> f64 {
        match self {
            Fitness::Value(v) if v.is_finite() => v,
            _ => f64::NEG_INFINITY,
        }
    }
}

/// A black-box maximiser driven by the runtime.
pub trait Optimizer: Send {
    /// Candidates to evaluate now, [`Step::Wait`] or [`Step::Finished`].
    fn ask(&mut self) -> Step;
    /// The result of the candidate tagged `tag`.
    fn tell(&mut self, tag: u64, outcome: Fitness);
    /// The point the optimizer would answer with now, when it has a better
    /// guess than its best single value: on a noisy objective the best
    /// value told is the luckiest, and a model of the objective (CMA-ES's
    /// distribution mean) is often a better answer. The runtime re-walks it
    /// with the run's finalists before it reports a best. `None` (the
    /// default): no such guess.
    fn recommendation(&self) -> Option<Vec<f64>> {
        None
    }
    /// The behaviour descriptors this optimizer files results under, by
    /// name (a quality-diversity archive's axes). Empty (the default): an
    /// optimizer of the one number.
    fn descriptors(&self) -> Vec<String> {
        Vec::new()
    }
    /// The result of `tag` with its [`Optimizer::descriptors`] in order;
    /// `None` when the result has not every one of them (a failed walk, a
    /// walker that cannot tell). The default forgets them.
    fn tell_described(&mut self, tag: u64, outcome: Fitness, descriptors: Option<&[f64]>) {
        let _ = descriptors;
        self.tell(tag, outcome);
    }
    /// The points the runtime re-walks from held-out starts instead of
    /// its best few: a map's elites, every one, so each cell has an honest
    /// value. `None` (the default): the best few.
    fn finalists(&self) -> Option<Vec<Vec<f64>>> {
        None
    }
    /// What a model-based optimizer made from a map now believes of each
    /// elite of its prior ([`map::Prior::elites`], in that order): the
    /// predicted value and its standard deviation, after the results told
    /// so far. A page shows it beside what the walks gave. `None` (the
    /// default): the optimizer keeps no such belief.
    fn beliefs(&self) -> Option<Vec<(f64, f64)>> {
        None
    }
}

/// A setting's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for SettingValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingValue::Bool(v) => write!(f, "{v}"),
            SettingValue::Int(v) => write!(f, "{v}"),
            SettingValue::Float(v) => write!(f, "{v}"),
            SettingValue::Text(v) => write!(f, "{v}"),
        }
    }
}

/// The kind of a setting and its constraints (thesis D.2.3 `UserConfig`
/// fields, plus floats and choices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SettingKind {
    Integer { min: i64, max: i64 },
    Float { min: f64, max: f64 },
    Bool,
    File,
    Choice { options: Vec<String> },
}

/// One typed setting with its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingSpec {
    pub name: String,
    pub description: String,
    pub kind: SettingKind,
    pub default: SettingValue,
}

impl SettingSpec {
    /// A setting of any kind; the kind's own constructors below say less.
    #[must_use]
    pub fn new(name: &str, description: &str, kind: SettingKind, default: SettingValue) -> Self {
        SettingSpec {
            name: name.into(),
            description: description.into(),
            kind,
            default,
        }
    }

    /// A number in `min ..= max`.
    #[must_use]
    pub fn float(name: &str, description: &str, min: f64, max: f64, default: f64) -> Self {
        Self::new(
            name,
            description,
            SettingKind::Float { min, max },
            SettingValue::Float(default),
        )
    }

    /// An integer in `min ..= max`.
    #[must_use]
    pub fn int(name: &str, description: &str, min: i64, max: i64, default: i64) -> Self {
        Self::new(
            name,
            description,
            SettingKind::Integer { min, max },
            SettingValue::Int(default),
        )
    }

    /// A switch.
    #[must_use]
    pub fn bool(name: &str, description: &str, default: bool) -> Self {
        Self::new(
            name,
            description,
            SettingKind::Bool,
            SettingValue::Bool(default),
        )
    }

    /// A path to a file (`default` may be empty: none).
    #[must_use]
    pub fn file(name: &str, description: &str, default: &str) -> Self {
        Self::new(
            name,
            description,
            SettingKind::File,
            SettingValue::Text(default.into()),
        )
    }

    /// One of `options`.
    #[must_use]
    pub fn choice(name: &str, description: &str, options: &[&str], default: &str) -> Self {
        Self::new(
            name,
            description,
            SettingKind::Choice {
                options: options.iter().map(|&o| o.to_owned()).collect(),
            },
            SettingValue::Text(default.into()),
        )
    }

    /// Parses a value given as text (command line, batch file) for this setting.
    pub fn parse(&self, text: &str) -> Result<SettingValue, SettingsError> {
        let bad = |why: String| SettingsError::Invalid {
            name: self.name.clone(),
            why,
        };
        let value = match &self.kind {
            SettingKind::Integer { .. } => SettingValue::Int(
                text.trim()
                    .parse()
                    .map_err(|_| bad(format!("{text:?} is not an integer")))?,
            ),
            SettingKind::Float { .. } => SettingValue::Float(
                text.trim()
                    .parse()
                    .map_err(|_| bad(format!("{text:?} is not a number")))?,
            ),
            SettingKind::Bool => SettingValue::Bool(match text.trim() {
                "true" | "yes" | "on" | "1" => true,
                "false" | "no" | "off" | "0" => false,
                _ => return Err(bad(format!("{text:?} is not true or false"))),
            }),
            SettingKind::File | SettingKind::Choice { .. } => SettingValue::Text(text.to_owned()),
        };
        self.check(&value)?;
        Ok(value)
    }

    /// Checks type and range.
    pub fn check(&self, value: &SettingValue) -> Result<(), SettingsError> {
        let bad = |why: String| {
            Err(SettingsError::Invalid {
                name: self.name.clone(),
                why,
            })
        };
        match (&self.kind, value) {
            (SettingKind::Integer { min, max }, SettingValue::Int(v)) => {
                if v < min || v > max {
                    return bad(format!("{v} is outside [{min}, {max}]"));
                }
            }
            (SettingKind::Float { min, max }, SettingValue::Float(v)) => {
                if !v.is_finite() || v < min || v > max {
                    return bad(format!("{v} is outside [{min}, {max}]"));
                }
            }
            (SettingKind::Float { min, max }, SettingValue::Int(v)) => {
                let v = *v as f64;
                if v < *min || v > *max {
                    return bad(format!("{v} is outside [{min}, {max}]"));
                }
            }
            (SettingKind::Bool, SettingValue::Bool(_)) => {}
            (SettingKind::File, SettingValue::Text(_)) => {}
            (SettingKind::Choice { options }, SettingValue::Text(v)) => {
                if !options.contains(v) {
                    return bad(format!("{v:?} is not one of {}", options.join(", ")));
                }
            }
            (kind, v) => return bad(format!("{v} does not fit a {kind:?} setting")),
        }
        Ok(())
    }
}

/// Settings resolved against a plugin's declared [`SettingSpec`]s: every
/// declared setting has a value of the right type and range, and there is
/// no other. Only [`Settings::resolve`], [`Settings::parse`] and
/// [`Settings::defaults`] make one, so
/// a plugin converts it into its typed configuration (`TryFrom<&Settings>`)
/// without checking it again.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Settings(BTreeMap<String, SettingValue>);

impl Settings {
    /// Fills defaults for missing settings and checks every given one.
    pub fn resolve(
        specs: &[SettingSpec],
        given: &BTreeMap<String, SettingValue>,
    ) -> Result<Self, SettingsError> {
        for name in given.keys() {
            if !specs.iter().any(|s| &s.name == name) {
                return Err(SettingsError::unknown(name, specs));
            }
        }
        let mut values = BTreeMap::new();
        for spec in specs {
            let value = given
                .get(&spec.name)
                .cloned()
                .unwrap_or_else(|| spec.default.clone());
            spec.check(&value)?;
            values.insert(spec.name.clone(), value);
        }
        Ok(Settings(values))
    }

    /// Every setting at its default.
    #[must_use]
    pub fn defaults(specs: &[SettingSpec]) -> Self {
        Settings(
            specs
                .iter()
                .map(|s| (s.name.clone(), s.default.clone()))
                .collect(),
        )
    }

    /// Settings given as text, one `(name, value)` each (a command line, a
    /// form, a gRPC request), parsed and resolved in one pass.
    pub fn parse<'a>(
        specs: &[SettingSpec],
        given: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, SettingsError> {
        Settings::resolve(specs, &parse_given(specs, given)?)
    }

    /// Parses `name=value` pairs (as typed by a user) against `specs`,
    /// without filling defaults.
    pub fn parse_pairs<'a>(
        specs: &[SettingSpec],
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, SettingValue>, SettingsError> {
        let pairs: Vec<(&str, &str)> = pairs
            .into_iter()
            .map(split_setting)
            .collect::<Result<_, _>>()?;
        parse_given(specs, pairs)
    }

    /// Every value, by name.
    #[must_use]
    pub fn values(&self) -> &BTreeMap<String, SettingValue> {
        &self.0
    }

    /// Every value as text, by name (what a person reads and types).
    #[must_use]
    pub fn to_text(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect()
    }

    fn value(&self, name: &str, kind: &str) -> Result<&SettingValue, SettingsError> {
        self.0.get(name).ok_or_else(|| SettingsError::Invalid {
            name: name.to_owned(),
            why: format!(
                "these settings have no {kind} of that name (resolved for another optimizer?)"
            ),
        })
    }

    pub fn int(&self, name: &str) -> Result<i64, SettingsError> {
        match self.value(name, "integer")? {
            SettingValue::Int(v) => Ok(*v),
            other => Err(SettingsError::wrong_kind(name, other, "an integer")),
        }
    }

    /// An integer setting as the count type `T` it is used as (`usize`,
    /// `u32`, …): an error naming it when it does not fit.
    pub fn count<T: TryFrom<i64>>(&self, name: &str) -> Result<T, SettingsError> {
        let value = self.int(name)?;
        T::try_from(value).map_err(|_| SettingsError::Invalid {
            name: name.to_owned(),
            why: format!("{value} is not a count this optimizer can use"),
        })
    }

    pub fn float(&self, name: &str) -> Result<f64, SettingsError> {
        match self.value(name, "number")? {
            SettingValue::Float(v) => Ok(*v),
            SettingValue::Int(v) => Ok(*v as f64),
            other => Err(SettingsError::wrong_kind(name, other, "a number")),
        }
    }

    pub fn bool(&self, name: &str) -> Result<bool, SettingsError> {
        match self.value(name, "bool")? {
            SettingValue::Bool(v) => Ok(*v),
            other => Err(SettingsError::wrong_kind(name, other, "true or false")),
        }
    }

    pub fn text(&self, name: &str) -> Result<&str, SettingsError> {
        match self.value(name, "text")? {
            SettingValue::Text(v) => Ok(v),
            other => Err(SettingsError::wrong_kind(name, other, "a text")),
        }
    }
}

/// Splits one `name=value` as people type it, both sides trimmed.
pub fn split_setting(pair: &str) -> Result<(&str, &str), SettingsError> {
    pair.split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .ok_or_else(|| SettingsError::Syntax(pair.to_owned()))
}

fn parse_given<'a>(
    specs: &[SettingSpec],
    given: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<BTreeMap<String, SettingValue>, SettingsError> {
    let mut values = BTreeMap::new();
    for (name, text) in given {
        let spec = specs
            .iter()
            .find(|s| s.name == name.trim())
            .ok_or_else(|| SettingsError::unknown(name.trim(), specs))?;
        values.insert(spec.name.clone(), spec.parse(text)?);
    }
    Ok(values)
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// A name no setting has; `nearest` is the setting it most likely meant.
    #[error("unknown setting {name:?}{}; the settings are {}", .nearest.as_ref().map(|n| format!(" (did you mean {n:?}?)")).unwrap_or_default(), .known.join(", "))]
    Unknown {
        name: String,
        nearest: Option<String>,
        known: Vec<String>,
    },
    #[error("setting {name}: {why}")]
    Invalid { name: String, why: String },
    #[error("expected name=value, got {0:?}")]
    Syntax(String),
    #[error(transparent)]
    Space(#[from] SpaceError),
}

impl SettingsError {
    fn wrong_kind(name: &str, value: &SettingValue, expected: &str) -> Self {
        SettingsError::Invalid {
            name: name.to_owned(),
            why: format!("{value} is not {expected}"),
        }
    }

    /// `name` is no setting of `specs`: say which it most likely meant (at
    /// most a third of its letters off) and list them all.
    fn unknown(name: &str, specs: &[SettingSpec]) -> Self {
        let nearest = specs
            .iter()
            .map(|s| (edit_distance(name, &s.name), &s.name))
            .min()
            .filter(|(d, _)| *d <= name.chars().count().max(3) / 3)
            .map(|(_, n)| n.clone());
        SettingsError::Unknown {
            name: name.to_owned(),
            nearest,
            known: specs.iter().map(|s| s.name.clone()).collect(),
        }
    }
}

/// Levenshtein distance, case-insensitive: insertions, deletions and
/// substitutions of one character each cost one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// Who a plugin is and what it can be told (thesis `IOptimizer` properties).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginInfo {
    pub name: String,
    pub author: String,
    pub version: String,
    pub description: String,
    pub settings: Vec<SettingSpec>,
}

/// A factory of optimizers; the runtime keeps a registry of these.
pub trait Plugin: Send + Sync {
    fn info(&self) -> PluginInfo;
    /// A fresh optimizer over `space`; `settings` were resolved against
    /// [`PluginInfo::settings`] (the type guarantees it), so a plugin only
    /// converts them into its typed configuration. `budget` is the run's evaluation
    /// budget when it has one: a plugin may plan restarts with it, but never
    /// needs to stop at it (the runtime does). Without one the plugin ends
    /// on its own schedule.
    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError>;
    /// The grid a run with these settings fills, for a quality-diversity
    /// plugin: what the runtime rebuilds the run's map on from its stored
    /// results. `None` (the default): the plugin keeps no map.
    fn grid(&self, settings: &Settings) -> Result<Option<map::Grid>, SettingsError> {
        let _ = settings;
        Ok(None)
    }
    /// Whether a run of this plugin adapts from another run's map (its
    /// `prior`): such a plugin is made with [`Plugin::create_from`] and
    /// refuses to start without one.
    fn needs_prior(&self) -> bool {
        false
    }
    /// [`Plugin::create`] with a map to adapt from. The default, for a
    /// plugin that takes none, makes it without one and refuses a map.
    fn create_from(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        budget: Option<u64>,
        prior: Option<&map::Prior>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        match prior {
            None => self.create(space, settings, seed, budget),
            Some(prior) => Err(SettingsError::Invalid {
                name: "prior".into(),
                why: format!(
                    "{} does not adapt from a map (run {}); an optimizer that does: ite",
                    self.info().name,
                    prior.run
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_periodic_bound_wraps_by_whole_turns_and_steps_the_short_way() {
        use std::f64::consts::PI;
        let phase = Bound::new("phase_0_5", -PI, PI).wrapping();
        assert!((phase.wrap(PI + 0.25) - (-PI + 0.25)).abs() < 1e-12);
        assert!((phase.wrap(-PI - 0.25) - (PI - 0.25)).abs() < 1e-12);
        assert!((phase.wrap(7.0 * PI + 0.5) - (-PI + 0.5)).abs() < 1e-9);
        assert_eq!(phase.wrap(0.3), 0.3);
        assert!((phase.delta(PI - 0.1, -PI + 0.1) - 0.2).abs() < 1e-12);
        assert!((phase.delta(-PI + 0.1, PI - 0.1) + 0.2).abs() < 1e-12);
        assert_eq!(phase.delta(-1.0, 1.0), 2.0);
        // A box is clamped and measured straight.
        let amplitude = Bound::new("amplitude_0", 0.0, 1.0);
        assert_eq!(amplitude.wrap(1.25), 1.0);
        assert_eq!(amplitude.wrap(-0.5), 0.0);
        assert_eq!(amplitude.delta(0.9, 0.1), -0.8);
    }

    fn specs() -> Vec<SettingSpec> {
        vec![
            SettingSpec {
                name: "particles".into(),
                description: String::new(),
                kind: SettingKind::Integer { min: 1, max: 100 },
                default: SettingValue::Int(10),
            },
            SettingSpec {
                name: "variant".into(),
                description: String::new(),
                kind: SettingKind::Choice {
                    options: vec!["a".into(), "b".into()],
                },
                default: SettingValue::Text("a".into()),
            },
        ]
    }

    #[test]
    fn defaults_fill_and_values_are_checked() {
        let specs = specs();
        let given = Settings::parse_pairs(&specs, ["particles=30"]).unwrap();
        let s = Settings::resolve(&specs, &given).unwrap();
        assert_eq!(s.int("particles"), Ok(30));
        assert_eq!(s.text("variant"), Ok("a"));
        assert!(matches!(
            Settings::parse_pairs(&specs, ["particles=0"]),
            Err(SettingsError::Invalid { .. })
        ));
        assert!(matches!(
            Settings::parse_pairs(&specs, ["variant=c"]),
            Err(SettingsError::Invalid { .. })
        ));
        assert!(matches!(
            Settings::parse_pairs(&specs, ["speed=1"]),
            Err(SettingsError::Unknown { nearest: None, .. })
        ));
        let misspelt = Settings::parse_pairs(&specs, ["partciles=4"]).unwrap_err();
        assert!(
            matches!(&misspelt, SettingsError::Unknown { nearest: Some(n), .. } if n == "particles"),
            "{misspelt:?}"
        );
        assert!(
            misspelt.to_string().starts_with(
                r#"unknown setting "partciles" (did you mean "particles"?); the settings are "#
            ),
            "{misspelt}"
        );
        assert!(matches!(
            Settings::parse_pairs(&specs, ["particles"]),
            Err(SettingsError::Syntax(_))
        ));
    }

    #[test]
    fn text_settings_parse_and_resolve_in_one_pass() {
        let specs = specs();
        let s = Settings::parse(&specs, [("particles", " 7 ")]).unwrap();
        assert_eq!(s.to_text().get("particles").map(String::as_str), Some("7"));
        assert_eq!(s.to_text().get("variant").map(String::as_str), Some("a"));
        assert_eq!(
            Settings::defaults(&specs),
            Settings::parse(&specs, []).unwrap()
        );
        assert!(matches!(
            Settings::parse(&specs, [("partciles", "4")]),
            Err(SettingsError::Unknown {
                nearest: Some(_),
                ..
            })
        ));
        // A getter of another kind, or of a name not declared, is an error
        // naming the setting, not a panic.
        assert!(
            matches!(s.text("particles"), Err(SettingsError::Invalid { name, .. }) if name == "particles")
        );
        assert!(
            matches!(s.int("speed"), Err(SettingsError::Invalid { name, .. }) if name == "speed")
        );
        assert_eq!(split_setting(" a = b=c "), Ok(("a", "b=c")));
    }

    #[test]
    fn space_rejects_start_outside() {
        let b = vec![Bound::new("x", 0.0, 1.0)];
        assert!(Space::new(b.clone(), vec![0.5]).is_ok());
        assert!(matches!(
            Space::new(b, vec![2.0]),
            Err(SpaceError::StartOutside { .. })
        ));
    }
}
