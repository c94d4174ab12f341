//! CMA-ES (covariance matrix adaptation evolution strategy) with IPOP or
//! BIPOP restarts as a yamor optimizer plugin.
//!
//! CMA-ES samples a generation of `λ` candidates from a multivariate normal
//! distribution and moves its mean, step size and covariance towards the
//! better half. It is the optimizer most gait-learning work uses today: it
//! needs no gradient, is invariant to rescaling and rotating the parameters
//! and, unlike Powell's method, proposes a whole generation at once, which
//! keeps every simulation host busy.
//!
//! # Algorithm
//! Hansen, "The CMA Evolution Strategy: A Tutorial" (arXiv:1604.00772), with
//! its default parameters (`λ = 4 + ⌊3 ln n⌋`, log-linear weights, active
//! covariance update with negative weights, cumulative step-size
//! adaptation), in [`run`], except that the step-size cumulation `c_σ` and
//! damping `d_σ` are pycma 4.5's (a damping that grows with `μ_eff/n`, which
//! the large populations of IPOP need). Termination follows pycma's criteria
//! and defaults. Fitness is maximised; the strategy minimises
//! `g = −fitness`, and [`Fitness::Failed`] is `g = +∞`, ranked worst.
//!
//! **Normalised coordinates.** Each parameter with a non-empty range is
//! scaled to `[0, 1]`; `sigma0` is a fraction of the range, the initial
//! covariance the identity. Parameters whose bounds coincide stay at their
//! value and are not searched.
//!
//! **The box** is handled by pycma's default `BoundTransform` ([`bounds`]):
//! the strategy's genotype is unbounded and every sample is mapped into the
//! box by a periodic, piecewise linear-quadratic map (the identity away from
//! the bounds). Proposals therefore always lie in the box, no penalty has to
//! be tuned, and a bound can be approached as closely as needed. As in
//! pycma with bounds (`maxstd_boundrange = 1/3`), no coordinate's standard
//! deviation may exceed [`MAX_STD`] of its range: a per-coordinate factor
//! on the distribution (pycma's `sigma_vec`) shrinks instead.
//!
//! **Restarts.** A run ends on pycma's termination criteria (`tolfun`,
//! `tolx`, stagnation, condition number, no-effect axis or coordinate, flat
//! fitness, pycma's `maxiter`, step-size blow-up). Then, with `ipop`, the
//! next run has `increase_factor` times the population (Auger & Hansen 2005);
//! with `bipop` (Hansen 2009, as pycma runs it) it alternates between that
//! large-population regime and short runs with a small random population
//! and step size, choosing the regime that has used fewer evaluations so far
//! (the first run counts as small, so the first restart is large; a small
//! run lasts at most half the large runs' evaluations). The first run
//! starts at the user's gait ([`Space::start`]); restarts start at a uniform
//! random point of the box by default (`restart_from = random`): the first run
//! has already searched around the gait, and a fresh point is what lets a
//! larger population find another basin, as in the IPOP and BIPOP
//! benchmarks; `restart_from = start` restarts at the gait instead. With a
//! run budget, restarts continue until the runtime stops the run; without
//! one, the optimizer finishes after `max_restarts` restarts.
//!
//! # Determinism
//! All randomness comes from one `ChaCha8Rng` seeded with the run's seed and
//! is drawn in a fixed order (a generation's normals candidate by candidate,
//! restart points and BIPOP draws when a run ends). A generation's results
//! are stored by candidate index and ranked by value with ties broken by
//! index, so the order in which they are told does not matter, and replaying
//! stored results through a fresh instance reproduces the run bit for bit.
//!
//! # Surrogate
//! With `surrogate = lq`, each run keeps lq-CMA-ES's global linear-quadratic
//! model ([`surrogate`], Hansen 2019) of its recent evaluations. A
//! generation is still sampled whole, but its candidates are proposed best
//! by the model first, in batches that start small and grow until the model
//! ranks the recent evaluations well (Kendall's τ ≥ 0.85); the rest of the
//! generation is ranked by the model and never evaluated, and the model's
//! optimum is injected as one candidate. On smooth objectives this needs a
//! fraction of the evaluations; on noisy ones (a chaotic gait) τ stays low
//! and whole generations are evaluated, at the cost of smaller first
//! batches. The default is `none`: whole generations, which keep every host
//! busy.
//!
//! # Noise
//! A gait's velocity is noisy: every evaluation walks from a fresh start,
//! and the same point walks at 8–21 cm/s. With `noise_handling = uh` the
//! optimizer is UH-CMA-ES ([`noise`], Hansen et al. 2009):
//! after each generation about a third of it (`0.3·λ`, randomly rounded)
//! is evaluated again, each re-evaluated candidate is ranked by the mean of
//! its two values, and when the rank changes the re-evaluations cause show
//! that the ranking is mostly noise, the step size is raised by
//! `1 + 2/(n + 10)`, so the search keeps its spread instead of settling
//! where one lucky walk pointed. An objective that reproduces every
//! re-evaluated value exactly for three generations (a fixed-start
//! simulation, a test function) is deterministic: re-evaluation stops.
//! With the lq surrogate the handling is off (it ranks partial generations).
//! It is not the default: on the quadruped (`yamor run quadruped`, 2,400
//! walks, five seeds) its held-out figure was 17.2–19.1 cm/s against
//! 19.1–20.5 without it; the budget it spends on re-walks and a wider
//! search is what the default run cannot spare. It is for objectives
//! whose noise swamps the differences the search must see.
//!
//! The answer is not the best single value either, which on a noisy
//! objective is the luckiest: [`Optimizer::recommendation`] gives the
//! distribution means of the second half of a run's generations, averaged
//! (the averaging of stochastic gradient descent), from the run whose late
//! generations have the best mean median; the runtime re-walks it with the
//! run's best points from held-out starts before it reports anything.
//! (`tests/noise.rs`: on a 5-D sphere with unit Gaussian noise, 1,500
//! evaluations, 20 seeds, the recommendation lies closer to the optimum
//! than the best-valued point of a one-sample CMA-ES in 20 of 20 seeds,
//! median squared distance 0.05 against 0.34.)
//!
//! # Protocol
//! [`Optimizer::ask`] returns a batch of candidates as one
//! [`Step::Evaluate`] (without the surrogate, the whole generation of `λ`),
//! then [`Step::Wait`] until all of the batch are told, then the next batch;
//! [`Step::Finished`] once `restarts = none` or `max_restarts` (without a
//! budget) are used up. A generation's candidate `k` has tag `base + k`;
//! its re-evaluation `j` (of candidate `j`, proposed as its own batch once
//! the whole generation is told) has tag `base + λ + j`; the next
//! generation's base follows both. Candidates the surrogate ranks without
//! evaluating leave gaps. A
//! tell whose tag is not awaited (stale, unknown or repeated) is ignored.
//! `tell` only stores the value; the learning from a completed batch (model
//! fit, covariance update) happens in the next `ask`, which the runtime runs
//! off the async threads.
//!
//! # Layout
//! - [`Cmaes`]: the [`Plugin`] (name `cmaes`, typed settings, factory).
//! - [`CmaesConfig`], [`RestartStrategy`], [`RestartFrom`], [`Surrogate`], [`NoiseHandling`]:
//!   the settings as Rust values, with defaults and conversion from and to
//!   [`Settings`].
//! - [`CmaEs`]: the [`Optimizer`] state machine (generations, restarts, best).
//! - [`run`]: one CMA-ES run: parameters, sampling, update, termination.
//! - [`bounds`]: the genotype-to-box map.
//! - [`noise`]: the uncertainty handling (rank-change measure, re-evaluation count).
//! - [`surrogate`]: the lq model and Kendall's τ.

pub mod bounds;
pub mod noise;
pub mod run;
pub mod surrogate;

use std::collections::BTreeMap;

use nalgebra::DVector;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue,
    Settings, SettingsError, Space, Step,
};

use noise::NoiseHandler;
use run::Run;
pub use run::{Stop, Tolerances};
use surrogate::{LqModel, TAU_THRESHOLD};

/// The name the runtime registers this plugin under.
pub const NAME: &str = "cmaes";

/// The largest population a restart may grow to.
pub const MAX_POPULATION: usize = 100_000;

/// The largest standard deviation of a coordinate, as a fraction of its
/// range: pycma's default with bounds (`maxstd_boundrange = 1/3`).
pub const MAX_STD: f64 = 1.0 / 3.0;

/// The CMA-ES plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cmaes;

impl Plugin for Cmaes {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: NAME.to_owned(),
            author: "the yamor authors".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: "CMA-ES (Hansen's tutorial, active update) with IPOP or BIPOP \
                          restarts: a whole generation is evaluated in parallel, the \
                          first run starts at the gait, the box is kept by pycma's \
                          BoundTransform."
                .to_owned(),
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
        let config = CmaesConfig::try_from(settings)?;
        Ok(Box::new(CmaEs::new(space, &config, seed, budget)?))
    }
}

/// What happens when a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartStrategy {
    /// Restart with the population multiplied by `increase_factor`.
    #[default]
    Ipop,
    /// Alternate large (IPOP) and small random populations by budget.
    Bipop,
    /// No restart: the optimizer finishes.
    None,
}

impl RestartStrategy {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RestartStrategy::Ipop => "ipop",
            RestartStrategy::Bipop => "bipop",
            RestartStrategy::None => "none",
        }
    }
}

/// Where a restart puts the new mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartFrom {
    /// A uniform random point of the box.
    #[default]
    Random,
    /// The start point ([`Space::start`]).
    Start,
}

impl RestartFrom {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RestartFrom::Random => "random",
            RestartFrom::Start => "start",
        }
    }
}

/// Whether a model of the objective saves evaluations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Surrogate {
    /// Every candidate of every generation is evaluated.
    #[default]
    None,
    /// lq-CMA-ES ([`surrogate`]): candidates are evaluated best-by-model
    /// first, in growing batches, until the model ranks them well; the
    /// model's optimum is injected into every generation.
    Lq,
}

impl Surrogate {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Surrogate::None => "none",
            Surrogate::Lq => "lq",
        }
    }
}

/// What the optimizer does about a noisy objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoiseHandling {
    /// UH-CMA-ES ([`noise`]): a few candidates of each generation are
    /// evaluated again; when the ranking turns out to be mostly noise the
    /// step size is raised. Stops re-evaluating on an objective that
    /// reproduces every value exactly. Only without the surrogate, which
    /// does not evaluate whole generations.
    Uh,
    /// Every candidate is evaluated once; the runtime's held-out re-walk
    /// of the best points by mean, and the recommendation, guard the
    /// answer. The default: on the quadruped at its default budget, UH's
    /// re-evaluations and raised step size cost more than they earned
    /// (docs/benchmarks.md).
    #[default]
    None,
}

impl NoiseHandling {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            NoiseHandling::Uh => "uh",
            NoiseHandling::None => "none",
        }
    }
}

/// The plugin's settings as Rust values.
///
/// [`Default`] gives the same values as the declared setting defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct CmaesConfig {
    /// Population `λ` of the first run; 0: `4 + ⌊3 ln n⌋`.
    pub population: usize,
    /// Initial step size as a fraction of each parameter's range.
    pub sigma0: f64,
    pub restarts: RestartStrategy,
    /// Population factor between large-population runs (1..=10).
    pub increase_factor: f64,
    /// Restarts before finishing when the run has no budget.
    pub max_restarts: u32,
    pub restart_from: RestartFrom,
    /// A run ends when recent best values and the last generation lie
    /// within `tolfun` (fitness units).
    pub tolfun: f64,
    /// A run ends when every standard deviation is below `tolx` (fraction
    /// of the range; the default is pycma's `1e-11` on BBOB's range of 10,
    /// which a run needs to refine rugged optima such as Katsuura's to 1e-8).
    pub tolx: f64,
    /// Stagnation window in generations; 0: `100 + 100·n^1.5/λ`.
    pub tolstagnation: u64,
    /// A run ends when the covariance's condition number exceeds this.
    pub max_condition: f64,
    pub surrogate: Surrogate,
    pub noise_handling: NoiseHandling,
}

impl Default for CmaesConfig {
    fn default() -> Self {
        CmaesConfig {
            population: 0,
            sigma0: 0.2,
            restarts: RestartStrategy::Ipop,
            increase_factor: 2.0,
            max_restarts: 9,
            restart_from: RestartFrom::Random,
            tolfun: 1e-11,
            tolx: 1e-12,
            tolstagnation: 0,
            max_condition: 1e14,
            surrogate: Surrogate::None,
            noise_handling: NoiseHandling::None,
        }
    }
}

impl TryFrom<&Settings> for CmaesConfig {
    type Error = SettingsError;

    /// Also checks what the declared ranges cannot say (a population of 1).
    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        let restarts = match s.text("restarts")? {
            "ipop" => RestartStrategy::Ipop,
            "bipop" => RestartStrategy::Bipop,
            "none" => RestartStrategy::None,
            other => return Err(not_a_choice("restarts", other)),
        };
        let restart_from = match s.text("restart_from")? {
            "random" => RestartFrom::Random,
            "start" => RestartFrom::Start,
            other => return Err(not_a_choice("restart_from", other)),
        };
        let surrogate = match s.text("surrogate")? {
            "none" => Surrogate::None,
            "lq" => Surrogate::Lq,
            other => return Err(not_a_choice("surrogate", other)),
        };
        let noise_handling = match s.text("noise_handling")? {
            "uh" => NoiseHandling::Uh,
            "none" => NoiseHandling::None,
            other => return Err(not_a_choice("noise_handling", other)),
        };
        let population = s.count("population")?;
        if population == 1 {
            return Err(SettingsError::Invalid {
                name: "population".to_owned(),
                why: "a population needs at least 2 candidates (0: the default)".to_owned(),
            });
        }
        Ok(CmaesConfig {
            population,
            sigma0: s.float("sigma0")?,
            restarts,
            increase_factor: s.float("increase_factor")?,
            max_restarts: s.count("max_restarts")?,
            restart_from,
            tolfun: s.float("tolfun")?,
            tolx: s.float("tolx")?,
            tolstagnation: s.count("tolstagnation")?,
            max_condition: s.float("max_condition")?,
            surrogate,
            noise_handling,
        })
    }
}

fn not_a_choice(name: &str, value: &str) -> SettingsError {
    SettingsError::Invalid {
        name: name.to_owned(),
        why: format!("{value:?} is not one of its choices"),
    }
}

impl CmaesConfig {
    /// The same values as [`Settings`] (validated against the declared specs).
    pub fn to_settings(&self) -> Result<Settings, SettingsError> {
        let int = |v: u64| SettingValue::Int(i64::try_from(v).unwrap_or(i64::MAX));
        let text = |v: &str| SettingValue::Text(v.to_owned());
        let given: BTreeMap<String, SettingValue> = [
            ("population", int(self.population as u64)),
            ("sigma0", SettingValue::Float(self.sigma0)),
            ("restarts", text(self.restarts.as_str())),
            ("increase_factor", SettingValue::Float(self.increase_factor)),
            ("max_restarts", int(u64::from(self.max_restarts))),
            ("restart_from", text(self.restart_from.as_str())),
            ("tolfun", SettingValue::Float(self.tolfun)),
            ("tolx", SettingValue::Float(self.tolx)),
            ("tolstagnation", int(self.tolstagnation)),
            ("max_condition", SettingValue::Float(self.max_condition)),
            ("surrogate", text(self.surrogate.as_str())),
            ("noise_handling", text(self.noise_handling.as_str())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let settings = Settings::resolve(&specs(), &given)?;
        // The checks beyond the declared ranges.
        CmaesConfig::try_from(&settings)?;
        Ok(settings)
    }

    fn tolerances(&self) -> Tolerances {
        Tolerances {
            tolfun: self.tolfun,
            tolx: self.tolx,
            stagnation: self.tolstagnation,
            max_condition: self.max_condition,
        }
    }
}

/// The declared settings; the single source of names, ranges and defaults.
fn specs() -> Vec<SettingSpec> {
    let d = CmaesConfig::default();
    let float = |min: f64, max: f64| SettingKind::Float { min, max };
    let choice = |options: &[&str]| SettingKind::Choice {
        options: options.iter().map(|o| (*o).to_owned()).collect(),
    };
    vec![
        SettingSpec::new(
            "population",
            "candidates per generation of the first run (0: 4 + 3 ln n)",
            SettingKind::Integer {
                min: 0,
                max: MAX_POPULATION as i64,
            },
            SettingValue::Int(d.population as i64),
        ),
        SettingSpec::new(
            "sigma0",
            "initial step size, as a fraction of each parameter's range",
            float(1e-6, 1.0),
            SettingValue::Float(d.sigma0),
        ),
        SettingSpec::new(
            "restarts",
            "when a run ends: ipop (larger population), bipop (large and small \
             populations by budget) or none (finish)",
            choice(&["ipop", "bipop", "none"]),
            SettingValue::Text(d.restarts.as_str().to_owned()),
        ),
        SettingSpec::new(
            "increase_factor",
            "population factor from one large-population run to the next",
            float(1.0, 10.0),
            SettingValue::Float(d.increase_factor),
        ),
        SettingSpec::new(
            "max_restarts",
            "restarts before finishing when the run has no evaluation budget",
            SettingKind::Integer { min: 0, max: 1000 },
            SettingValue::Int(i64::from(d.max_restarts)),
        ),
        SettingSpec::new(
            "restart_from",
            "where restarts begin: random (uniform in the box) or start (the gait)",
            choice(&["random", "start"]),
            SettingValue::Text(d.restart_from.as_str().to_owned()),
        ),
        SettingSpec::new(
            "tolfun",
            "restart when recent best fitnesses and the last generation lie within this",
            float(0.0, 1e6),
            SettingValue::Float(d.tolfun),
        ),
        SettingSpec::new(
            "tolx",
            "restart when every standard deviation is below this fraction of the range",
            float(0.0, 1.0),
            SettingValue::Float(d.tolx),
        ),
        SettingSpec::new(
            "tolstagnation",
            "restart when the best and median fitness stop improving over this many \
             generations (0: 100 + 100 n^1.5 / population)",
            SettingKind::Integer {
                min: 0,
                max: 10_000_000,
            },
            SettingValue::Int(d.tolstagnation as i64),
        ),
        SettingSpec::new(
            "max_condition",
            "restart when the covariance's condition number exceeds this",
            float(1e2, 1e20),
            SettingValue::Float(d.max_condition),
        ),
        SettingSpec::new(
            "surrogate",
            "none (evaluate every candidate) or lq (lq-CMA-ES: a quadratic model \
             ranks each generation and only as many candidates are evaluated as \
             it needs; for smooth objectives where evaluations are dear)",
            choice(&["none", "lq"]),
            SettingValue::Text(d.surrogate.as_str().to_owned()),
        ),
        SettingSpec::new(
            "noise_handling",
            "uh (UH-CMA-ES: re-evaluate about a third of each generation from fresh \
             starts and raise the step size when the ranking is mostly noise; \
             stops re-evaluating once the objective reproduces its values \
             exactly; not with surrogate=lq) or none (believe every value)",
            choice(&["uh", "none"]),
            SettingValue::Text(d.noise_handling.as_str().to_owned()),
        ),
    ]
}

/// Where the optimizer is in its ask/tell cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Propose,
    Collect,
    /// A batch has been told; the next `ask` learns from it. The work
    /// (model fit, covariance update) is left to `ask`, which the runtime
    /// runs on a blocking thread, not to `tell`.
    Digest,
    Finished,
}

/// A candidate of the generation out for evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    /// Not proposed (yet): the surrogate may rank it without evaluating it.
    Unasked,
    Pending,
    /// Its value `g` (minimised).
    Told(f64),
}

/// The restart regime of a run (BIPOP keeps the two apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// The first run and the increasing-population restarts.
    Large,
    /// BIPOP's short runs with a small population and step size.
    Small,
}

/// One finished run: its population, generations and why it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSummary {
    pub population: usize,
    pub regime: Regime,
    pub generations: u64,
    pub stop: Stop,
}

/// A running CMA-ES with restarts: the [`Optimizer`] that [`Cmaes`] creates.
#[derive(Debug, Clone)]
pub struct CmaEs {
    config: CmaesConfig,
    budget: Option<u64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    /// Parameters whose `min` and `max` are the same point, a phase over one
    /// whole turn ([`yamor_optimizer_api::Bound::periodic`]): their genotype
    /// wraps round instead of folding at two walls.
    periodic: Vec<bool>,
    /// The start point in user units (fixed parameters keep its values).
    start: Vec<f64>,
    /// Indices of the searched parameters (non-empty range).
    free: Vec<usize>,
    rng: ChaCha8Rng,
    /// `None` when no parameter is free: the start is proposed once.
    run: Option<Run>,
    regime: Regime,
    default_population: usize,
    /// Large-population restarts made so far.
    large_restarts: u32,
    evals_large: u64,
    evals_small: u64,
    history: Vec<RunSummary>,
    /// The generation out for evaluation (genotypes), where each candidate
    /// stands, and the batch proposed last (candidate indices, in order).
    genotypes: Vec<DVector<f64>>,
    slots: Vec<Slot>,
    batch: Vec<usize>,
    pending: usize,
    /// The generation's first `injected` candidates were injected.
    injected: usize,
    /// Candidates of this generation to evaluate before the model is asked.
    to_evaluate: usize,
    /// Tag of the generation's candidate 0; candidate `k` has tag `tag_base + k`.
    tag_base: u64,
    /// The lq surrogate of the current run, when enabled.
    model: Option<LqModel>,
    phase: Phase,
    best: Option<(Vec<f64>, f64)>,
    /// The uncertainty handling, when on (and the surrogate off).
    noise: Option<NoiseHandler>,
    /// The re-evaluations of the generation's first candidates, once the
    /// whole generation is told (empty otherwise); re-evaluation `j` has
    /// tag `tag_base + λ + j`.
    again: Vec<Slot>,
    /// The current run's distribution means and generation medians, one
    /// per generation, for [`Optimizer::recommendation`].
    trail: Vec<(DVector<f64>, f64)>,
    /// The recommendation of the best run that has ended (user units) and
    /// its score (see [`CmaEs::run_recommendation`]).
    ended_favourite: Option<(Vec<f64>, f64)>,
}

impl CmaEs {
    /// A fresh optimizer over `space`. Checks the space and the configuration.
    pub fn new(
        space: &Space,
        config: &CmaesConfig,
        seed: u64,
        budget: Option<u64>,
    ) -> Result<Self, SettingsError> {
        let space = Space::new(space.bounds.clone(), space.start.clone())?;
        config.to_settings()?;
        let lo: Vec<f64> = space.bounds.iter().map(|b| b.min).collect();
        let hi: Vec<f64> = space.bounds.iter().map(|b| b.max).collect();
        let periodic: Vec<bool> = space.bounds.iter().map(|b| b.periodic).collect();
        let free: Vec<usize> = (0..lo.len()).filter(|&i| hi[i] > lo[i]).collect();
        let n = free.len();
        let default_population = 4 + (3.0 * (n.max(1) as f64).ln()).floor() as usize;
        let population = if config.population == 0 {
            default_population
        } else {
            config.population
        };
        let run = (n > 0).then(|| {
            let mean = DVector::from_iterator(
                n,
                free.iter()
                    .map(|&i| genotype_of(periodic[i], (space.start[i] - lo[i]) / (hi[i] - lo[i]))),
            );
            let mut run = Run::new(mean, config.sigma0, population, config.tolerances());
            run.limit_std(MAX_STD);
            run
        });
        Ok(CmaEs {
            config: config.clone(),
            budget,
            lo,
            hi,
            periodic,
            start: space.start.clone(),
            free,
            rng: ChaCha8Rng::seed_from_u64(seed),
            run,
            regime: Regime::Large,
            default_population: population,
            large_restarts: 0,
            evals_large: 0,
            evals_small: 0,
            history: Vec::new(),
            genotypes: Vec::new(),
            slots: Vec::new(),
            batch: Vec::new(),
            pending: 0,
            injected: 0,
            to_evaluate: 0,
            tag_base: 0,
            model: (config.surrogate == Surrogate::Lq).then(|| LqModel::new(n, population)),
            phase: Phase::Propose,
            best: None,
            noise: (config.noise_handling == NoiseHandling::Uh
                && config.surrogate == Surrogate::None
                && n > 0)
                .then(|| NoiseHandler::new(n)),
            again: Vec::new(),
            trail: Vec::new(),
            ended_favourite: None,
        })
    }

    /// The configuration this optimizer runs with.
    #[must_use]
    pub fn config(&self) -> &CmaesConfig {
        &self.config
    }

    /// The population of the current run (1 when nothing is searched).
    #[must_use]
    pub fn population(&self) -> usize {
        self.run.as_ref().map_or(1, |r| r.params.lambda)
    }

    /// The current run's step size, in fractions of the range.
    #[must_use]
    pub fn sigma(&self) -> Option<f64> {
        self.run.as_ref().map(|r| r.sigma)
    }

    /// The runs that have ended, oldest first.
    #[must_use]
    pub fn history(&self) -> &[RunSummary] {
        &self.history
    }

    /// The best point told so far and its fitness; `None` until an
    /// evaluation succeeded. Ties go to the earliest batch, then the
    /// lowest tag.
    #[must_use]
    pub fn best(&self) -> Option<(&[f64], f64)> {
        self.best.as_ref().map(|(x, f)| (x.as_slice(), *f))
    }

    /// The point in user units a genotype stands for (inside the box).
    fn phenotype(&self, genotype: &DVector<f64>) -> Vec<f64> {
        let mut x = self.start.clone();
        for (k, &i) in self.free.iter().enumerate() {
            let y = if self.periodic[i] {
                genotype[k].rem_euclid(1.0)
            } else {
                bounds::to_unit(genotype[k])
            };
            x[i] = (self.lo[i] + y * (self.hi[i] - self.lo[i])).clamp(self.lo[i], self.hi[i]);
        }
        x
    }

    /// The coordinates the surrogate models: the point in the unit box, or
    /// the genotype itself for a periodic parameter (so the model sees no seam).
    fn model_coordinates(&self, genotype: &DVector<f64>) -> DVector<f64> {
        DVector::from_iterator(
            genotype.len(),
            self.free.iter().enumerate().map(|(k, &i)| {
                if self.periodic[i] {
                    genotype[k]
                } else {
                    bounds::to_unit(genotype[k])
                }
            }),
        )
    }

    /// The genotype of a point in model coordinates.
    fn genotype_of_model(&self, u: &DVector<f64>) -> DVector<f64> {
        DVector::from_iterator(
            u.len(),
            self.free.iter().enumerate().map(|(k, &i)| {
                if self.periodic[i] {
                    u[k]
                } else {
                    bounds::from_unit(u[k].clamp(0.0, 1.0))
                }
            }),
        )
    }

    /// Samples the next generation (with the model's optimum injected) and
    /// decides how many of it to evaluate first.
    fn start_generation(&mut self) {
        let Some(run) = &self.run else {
            self.genotypes.clear();
            self.slots = vec![Slot::Unasked];
            self.to_evaluate = 1;
            return;
        };
        let lambda = run.params.lambda;
        let target = self
            .model
            .as_mut()
            .and_then(LqModel::optimum)
            .map(|u| self.genotype_of_model(&u));
        let run = self.run.as_ref().expect("checked above");
        self.genotypes = match &target {
            Some(t) => run.sample_injecting(t, &mut self.rng),
            None => run.sample(&mut self.rng),
        };
        self.injected = usize::from(target.is_some());
        self.slots = vec![Slot::Unasked; lambda];
        self.to_evaluate = match &self.model {
            // pycma: ⌊1 + max(0.02·λ, 3/truncation − size)⌋.
            Some(m) => {
                ((1.0 + (0.02 * lambda as f64).max(4.0 - m.len() as f64)) as usize).min(lambda)
            }
            None => lambda,
        };
    }

    /// The next candidates to evaluate: the unasked ones in the model's
    /// order (best first; index order without a model) until
    /// `to_evaluate` are out or told.
    fn next_batch(&mut self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.slots.len()).collect();
        if self.model.as_ref().is_some_and(|m| m.len() > 1) {
            let coords: Vec<DVector<f64>> = self
                .genotypes
                .iter()
                .map(|g| self.model_coordinates(g))
                .collect();
            let model = self.model.as_mut().expect("checked");
            let values: Vec<f64> = coords.iter().map(|u| model.eval(u)).collect();
            order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
        }
        let out = self.slots.iter().filter(|s| **s != Slot::Unasked).count();
        let wanted = self.to_evaluate.saturating_sub(out);
        order
            .into_iter()
            .filter(|&k| self.slots[k] == Slot::Unasked)
            .take(wanted)
            .collect()
    }

    /// A batch has been told: with the surrogate, learn from it and either
    /// evaluate more of the generation or let the model rank the rest.
    fn complete_batch(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        if let (Some(_), Some(_)) = (&self.run, &self.model) {
            let coords: Vec<(DVector<f64>, f64)> = batch
                .iter()
                .map(|&k| (self.model_coordinates(&self.genotypes[k]), self.told(k)))
                .collect();
            let lambda = self.slots.len();
            let evaluated = self.evaluated();
            let model = self.model.as_mut().expect("checked");
            for (u, g) in coords {
                model.add(u, g);
            }
            model.sort_newest(evaluated);
            if evaluated < lambda {
                // pycma's n_for_tau: ⌊max(15, min(1.2·evaluated, 0.75·λ))⌋.
                let number = (1.2 * evaluated as f64).min(0.75 * lambda as f64).max(15.0);
                if model.kendall(number as usize) < TAU_THRESHOLD {
                    self.to_evaluate =
                        (self.to_evaluate + self.to_evaluate.div_ceil(2)).min(lambda);
                    self.phase = Phase::Propose;
                    return;
                }
            }
        }
        self.finish_generation();
    }

    /// A whole generation is told: with the uncertainty handling, first
    /// evaluate a few of it again; then learn from it.
    fn finish_generation(&mut self) {
        if self.again.is_empty() && self.run.is_some() && self.evaluated() == self.slots.len() {
            let lambda = self.slots.len();
            let count = match &self.noise {
                Some(handler) => handler.count(lambda, &mut self.rng),
                None => 0,
            };
            if count > 0 {
                self.again = vec![Slot::Unasked; count];
                self.phase = Phase::Propose;
                return;
            }
        }
        self.complete_generation();
    }

    /// The re-evaluations' values (minimised), all told.
    fn told_again(&self) -> Vec<f64> {
        self.again
            .iter()
            .map(|s| match s {
                Slot::Told(g) => *g,
                _ => unreachable!("every re-evaluation was told"),
            })
            .collect()
    }

    fn told(&self, k: usize) -> f64 {
        match self.slots[k] {
            Slot::Told(g) => g,
            _ => unreachable!("candidate {k} was told"),
        }
    }

    fn evaluated(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Told(_)))
            .count()
    }

    /// The values the strategy ranks the generation by: the true ones when
    /// every candidate was evaluated, else the model's for all of them,
    /// shifted so that the best equals the best true value (pycma's
    /// `surrogate_values`).
    fn generation_values(&mut self) -> Vec<f64> {
        if self.slots.iter().all(|s| matches!(s, Slot::Told(_))) {
            return (0..self.slots.len()).map(|k| self.told(k)).collect();
        }
        let coords: Vec<DVector<f64>> = self
            .genotypes
            .iter()
            .map(|g| self.model_coordinates(g))
            .collect();
        let best_true = (0..self.slots.len())
            .filter_map(|k| match self.slots[k] {
                Slot::Told(g) if g.is_finite() => Some(g),
                _ => None,
            })
            .fold(f64::INFINITY, f64::min);
        let model = self
            .model
            .as_mut()
            .expect("only the surrogate leaves candidates unasked");
        let values: Vec<f64> = coords.iter().map(|u| model.eval(u)).collect();
        let best_model = values.iter().copied().fold(f64::INFINITY, f64::min);
        if best_true.is_finite() && best_model.is_finite() {
            values.iter().map(|v| v - best_model + best_true).collect()
        } else {
            values
        }
    }

    /// Keeps the best of the batch just told (ties: the lowest tag of the
    /// earliest batch), so [`CmaEs::best`] is current before the next `ask`.
    fn record_best(&mut self) {
        let mut batch = self.batch.clone();
        batch.sort_unstable();
        for k in batch {
            let fitness = -self.told(k);
            if fitness.is_finite() && self.best.as_ref().is_none_or(|(_, b)| fitness > *b) {
                let x = match &self.run {
                    Some(_) => self.phenotype(&self.genotypes[k]),
                    None => self.start.clone(),
                };
                self.best = Some((x, fitness));
            }
        }
    }

    fn complete_generation(&mut self) {
        let evaluated = (self.evaluated() + self.again.len()) as u64;
        self.tag_base += (self.slots.len() + self.again.len()) as u64;
        if self.run.is_none() {
            self.phase = Phase::Finished;
            return;
        }
        let mut g = self.generation_values();
        let mut sigma_factor = 1.0;
        if !self.again.is_empty() {
            let again = self.told_again();
            if let Some(handler) = &mut self.noise {
                sigma_factor = handler.learn(&g, &again);
            }
            for (value, second) in g.iter_mut().zip(&again) {
                *value = 0.5 * (*value + second);
            }
            self.again.clear();
        }
        self.slots.clear();
        // As in pycma's BIPOP, the first run counts to the small budget, so
        // the first restart has a large population.
        if self.regime == Regime::Small || self.history.is_empty() {
            self.evals_small += evaluated;
        } else {
            self.evals_large += evaluated;
        }
        let genotypes = std::mem::take(&mut self.genotypes);
        let run = self.run.as_mut().expect("checked above");
        let stop = run.update_injected(&genotypes, &g, self.injected);
        run.scale_sigma(sigma_factor);
        let mut sorted = g.clone();
        sorted.sort_by(f64::total_cmp);
        let mean = self.run.as_ref().expect("checked above").mean.clone();
        self.trail.push((mean, run::median_sorted(&sorted)));
        let run = self.run.as_mut().expect("checked above");
        if let Some(stop) = stop {
            self.history.push(RunSummary {
                population: run.params.lambda,
                regime: self.regime,
                generations: run.generation,
                stop,
            });
            self.restart();
        } else {
            self.phase = Phase::Propose;
        }
    }

    /// What the current run recommends, and the score it is judged by
    /// against other runs (minimised): the average of the distribution
    /// means over the second half of its generations, scored by the
    /// average of their generation medians. Under noise the mean of one
    /// generation jitters and the best single value is the luckiest;
    /// averaging the late means (as averaged stochastic gradient descent
    /// does) cancels the jitter, and a median over many generations is a
    /// fair score across runs.
    fn run_recommendation(&self) -> Option<(Vec<f64>, f64)> {
        let tail = &self.trail[self.trail.len() / 2..];
        let (first, _) = tail.first()?;
        let mut sum = DVector::zeros(first.len());
        let mut score = 0.0;
        for (mean, median) in tail {
            sum += mean;
            score += median;
        }
        let count = tail.len() as f64;
        Some((self.phenotype(&(sum / count)), score / count))
    }

    /// Starts the next run, or finishes.
    fn restart(&mut self) {
        if let Some((x, score)) = self.run_recommendation()
            && self
                .ended_favourite
                .as_ref()
                .is_none_or(|(_, s)| score < *s)
        {
            self.ended_favourite = Some((x, score));
        }
        self.trail.clear();
        let restarts = self.history.len() as u32;
        if self.config.restarts == RestartStrategy::None
            || (self.budget.is_none() && restarts > self.config.max_restarts)
        {
            self.phase = Phase::Finished;
            return;
        }
        let factor = self.config.increase_factor;
        let large =
            |i: u32| ((self.default_population as f64) * factor.powi(i as i32)).round() as usize;
        let mut max_generations = None;
        let (regime, lambda, sigma) = match self.config.restarts {
            RestartStrategy::Bipop if self.evals_small < self.evals_large.max(1) => {
                // Hansen (2009): λ_s = ⌊λ_def·(½·λ_l/λ_def)^{U²}⌋, σ_s = σ₀·10^{−2U},
                // and (pycma) at most half the large budget per small run.
                let u1: f64 = self.rng.random();
                let u2: f64 = self.rng.random();
                let lambda_l = large(self.large_restarts + 1) as f64;
                let ratio = (0.5 * lambda_l / self.default_population as f64).max(1.0);
                let lambda = (self.default_population as f64 * ratio.powf(u1 * u1))
                    .floor()
                    .clamp(2.0, MAX_POPULATION as f64);
                max_generations = Some((0.5 * self.evals_large as f64 / lambda).max(1.0));
                (
                    Regime::Small,
                    lambda as usize,
                    self.config.sigma0 * 10f64.powf(-2.0 * u2),
                )
            }
            _ => {
                self.large_restarts += 1;
                (
                    Regime::Large,
                    large(self.large_restarts),
                    self.config.sigma0,
                )
            }
        };
        let lambda = lambda.clamp(2, MAX_POPULATION);
        let n = self.free.len();
        let mean = match self.config.restart_from {
            RestartFrom::Random => DVector::from_iterator(
                n,
                self.free
                    .iter()
                    .map(|&i| genotype_of(self.periodic[i], self.rng.random())),
            ),
            RestartFrom::Start => DVector::from_iterator(
                n,
                self.free.iter().map(|&i| {
                    let y = (self.start[i] - self.lo[i]) / (self.hi[i] - self.lo[i]);
                    genotype_of(self.periodic[i], y)
                }),
            ),
        };
        self.regime = regime;
        if self.model.is_some() {
            // As fmin_lq_surr2 without keep_model: each run learns afresh.
            self.model = Some(LqModel::new(n, lambda));
        }
        let mut run = Run::new(mean, sigma, lambda, self.config.tolerances());
        run.limit_std(MAX_STD);
        if let Some(limit) = max_generations {
            run.limit_generations(limit);
        }
        self.run = Some(run);
        self.phase = Phase::Propose;
    }
}

impl Optimizer for CmaEs {
    fn ask(&mut self) -> Step {
        if self.phase == Phase::Digest {
            self.complete_batch();
        }
        match self.phase {
            Phase::Finished => Step::Finished,
            Phase::Digest => unreachable!("complete_batch leaves Digest"),
            Phase::Collect => Step::Wait,
            Phase::Propose if !self.again.is_empty() => {
                let lambda = self.slots.len() as u64;
                self.batch.clear();
                self.pending = self.again.len();
                self.phase = Phase::Collect;
                let candidates = (0..self.again.len())
                    .map(|j| {
                        self.again[j] = Slot::Pending;
                        Candidate {
                            tag: self.tag_base + lambda + j as u64,
                            x: self.phenotype(&self.genotypes[j]),
                        }
                    })
                    .collect();
                Step::Evaluate(candidates)
            }
            Phase::Propose => {
                if self.slots.is_empty() {
                    self.start_generation();
                }
                self.batch = self.next_batch();
                self.pending = self.batch.len();
                self.phase = Phase::Collect;
                for &k in &self.batch {
                    self.slots[k] = Slot::Pending;
                }
                let candidates = self
                    .batch
                    .iter()
                    .map(|&k| Candidate {
                        tag: self.tag_base + k as u64,
                        x: match &self.run {
                            Some(_) => self.phenotype(&self.genotypes[k]),
                            None => self.start.clone(),
                        },
                    })
                    .collect();
                Step::Evaluate(candidates)
            }
        }
    }

    fn recommendation(&self) -> Option<Vec<f64>> {
        let current = self.run_recommendation();
        let best = match (current, &self.ended_favourite) {
            (Some(c), Some(e)) if e.1 < c.1 => e.clone(),
            (Some(c), _) => c,
            (None, e) => e.clone()?,
        };
        Some(best.0)
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        if self.phase != Phase::Collect || tag < self.tag_base {
            return;
        }
        let Ok(k) = usize::try_from(tag - self.tag_base) else {
            return;
        };
        let lambda = self.slots.len();
        let slot = if k < lambda {
            self.slots.get_mut(k)
        } else {
            self.again.get_mut(k - lambda)
        };
        match slot {
            Some(slot @ Slot::Pending) => *slot = Slot::Told(-outcome.value()),
            _ => return,
        }
        self.pending -= 1;
        if self.pending == 0 {
            self.record_best();
            self.phase = Phase::Digest;
        }
    }
}

/// The genotype coordinate of the unit-interval point `y`: the one in the
/// fundamental interval of the box map, or `y` itself for a periodic one.
fn genotype_of(periodic: bool, y: f64) -> f64 {
    if periodic { y } else { bounds::from_unit(y) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_matches_declared_defaults() {
        let s = Settings::resolve(&specs(), &BTreeMap::new()).unwrap();
        assert_eq!(CmaesConfig::try_from(&s).unwrap(), CmaesConfig::default());
        assert_eq!(CmaesConfig::default().to_settings().unwrap(), s);
    }
}
