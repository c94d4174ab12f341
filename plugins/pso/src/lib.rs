//! Particle swarm optimisation (PSO) as a yamor optimizer plugin.
//!
//! A swarm of particles flies through the parameter box; each one is pulled
//! towards the best point it has seen itself and the best point its
//! neighbourhood has seen. It needs no gradient and tolerates the noisy,
//! sometimes failing gait evaluations of a simulated robot, and, unlike
//! Powell's method, a whole generation can be evaluated at once, which is what
//! keeps a cluster of simulation hosts busy.
//!
//! # Algorithm
//! The constricted ("standard", SPSO-2007 style) update, per particle `i` and
//! per component `d`, with fresh uniform `r1, r2 ∈ [0, 1)` for every
//! component:
//!
//! ```text
//! v ← w·v + c1·r1·(pbest − x) + c2·r2·(lbest − x)
//! v ← clamp(v, −vmax, vmax)          vmax = max_velocity · (max − min)
//! x ← x + v
//! if x left [min, max]: x ← the wall it crossed, v ← 0
//! ```
//!
//! `w = 0.7298`, `c1 = c2 = 1.49618` are Clerc and Kennedy's constriction
//! coefficients (χ = 0.7298, φ = 4.1), which make the swarm converge without
//! relying on the velocity clamp; the clamp only tames the first generations.
//!
//! **Walls absorb.** A component that would leave the box is clamped to the
//! wall and its velocity is zeroed (SPSO-2007's choice). Gait optima often
//! sit on a bound (the largest amplitude a servo allows), so a particle may
//! rest there; a reflecting wall would keep bouncing it back into the box and
//! waste evaluations, and keeping the velocity would pin it to the wall for
//! several generations.
//!
//! **Periodic parameters have no walls.** A phase lag over one whole turn
//! (`Bound::periodic`) wraps round: `pbest − x` is taken the shorter way
//! round the circle and the new position is brought back by whole turns, so
//! gaits with lags near ±π (the quadruped's best) are one basin, not two
//! halves pressed against opposite walls.
//!
//! **Initial velocities are small**: uniform in ±0.1·range per component, so
//! the first moves are dominated by the pulls towards the bests rather than
//! by a random kick, and the particle seeded at the user's gait
//! (`include_start`) explores around it instead of being thrown away from it.
//!
//! **Topologies**: `global` (every particle follows the swarm's best, fast on
//! smooth landscapes) or `ring` (each particle follows the best of itself and
//! its two index neighbours, slower but less prone to premature convergence).
//!
//! # Noise
//! A gait's fitness is noisy: every evaluation walks from its own random
//! start, so the same point told twice gets two values. The classic PSO
//! keeps its bests on single values, and the best of many noisy values is
//! the luckiest (the winner's curse): one lucky walk becomes the swarm's
//! attractor for good, since no honest value ever beats it. With
//! `reevaluate = k > 0` (default 2):
//!
//! - Every best keeps all its evaluations and is judged by their **mean**
//!   (a failure makes the mean −∞: the point is worst).
//! - The swarm's best, the **incumbent**, is a point evaluated at least
//!   `1 + k` times. A personal best whose mean beats the incumbent's is a
//!   *challenger*: it is evaluated `k` more times (the same `x` under new
//!   tags, proposed after the particles of the next generation and told in
//!   any order), and becomes the incumbent if its mean then still beats the
//!   incumbent's. Every challenger is asked at once, so one generation's
//!   real improvements are not queued behind its lucky ones; while there is
//!   no incumbent (the first generation, or after it failed) only the best
//!   personal best is asked, as everything beats nothing.
//! - The incumbent is evaluated once more with every generation, so its
//!   stored value is the mean of all its walks, not the value that made it
//!   the best (pycma-style aging). A point that got in by luck sinks to its
//!   true mean and is replaced; a really good one stays, ever better known.
//! - A personal best is *not* re-evaluated whenever it is replaced: early on
//!   nearly every particle improves every generation, so that would cost up
//!   to `k` evaluations per particle per generation, while a lucky personal
//!   best misleads only its own particle, and is re-evaluated anyway as soon
//!   as it would lead the swarm (it beats the incumbent). A particle's new
//!   value is compared with its best's mean, so a best that a re-evaluation
//!   brought down is easy to replace.
//! - `global` follows the incumbent once a re-evaluation has disagreed with
//!   its point's first value (before that, and before the first incumbent
//!   is confirmed, the best personal best, as the classic swarm does: see
//!   "Deterministic objectives" below); `ring` follows the best mean among
//!   a particle and its neighbours; [`Swarm::best`] reports the incumbent
//!   and its mean.
//! - After the last generation, the challengers it raised are settled by
//!   one more batch of re-evaluations.
//!
//! Cost on a noisy objective: `k` evaluations per challenger plus one per
//! generation. Why 2: on a noisy sphere (5 dimensions, noise σ = 0.1, 1000
//! evaluations, 100 seeds) the true value of the reported best is −0.053
//! with single values, −0.044, −0.034 and −0.032 with `k` = 1, 2, 3, and
//! the report lies 0.30, 0.11, 0.10, 0.09 above the truth on average; on
//! the trap of `tests/noise.rs` (a region with a worse mean hidden behind
//! σ = 1 noise, σ = 0.02 everywhere) 1 of 20 classic runs ends outside it,
//! 17, 19 and 20 of 20 with `k` = 1, 2, 3. Two is where the gains flatten
//! (Powell's `reevaluate` defaults to 2 as well); on a deterministic
//! objective the re-evaluations stop after three rounds (below).
//!
//! Averaging `1 + k` walks only settles noise comparable to the differences
//! it must resolve. Where the noise is several times the gap between a good
//! and a bad region, lucky points still get in: with σ = 3 in that trap (a
//! gap of 0.5, which takes on the order of a hundred walks per point to
//! resolve) no classic run of 40 ends outside it, 1, 2 and 1 of 40 with
//! `k` = 2, 4, 8. There the runtime's held-out re-walk of the finalists is
//! the arbiter.
//!
//! **Deterministic objectives.** On a noise-free objective (a test
//! function, a simulation from a fixed start) every re-evaluation is
//! wasted, so the swarm detects one, with the rule of the Powell and
//! CMA-ES plugins: a *confirmation round* is a batch's re-evaluations, and
//! when the first [`EXACT_ROUNDS`] (3) rounds reproduce every re-evaluated
//! value bit for bit (equal to its point's first value, or both failed)
//! and no disagreement was ever seen, the swarm stops re-evaluating for the
//! rest of the run and is the classic swarm (`reevaluate = 0`) from then
//! on: no challenges, no incumbent, the best single value seen as the
//! swarm's best ([`Swarm::deterministic`] tells). Any disagreement, in any
//! of those rounds, keeps the re-evaluations for good. While a point's
//! values all agree its value is the first one exactly (a mean of equal
//! values can round off it), and `global` follows the best personal best
//! until a disagreement is seen, so on a deterministic objective the
//! particles are exactly the classic swarm's, generation by generation,
//! with the three rounds' re-evaluations in between: the cost is those
//! re-evaluations, 4 to 40 evaluations with 20 particles (`k` = 2, sphere
//! in 2, 5, 10 dimensions, both topologies, 20 seeds). To the target (the
//! reported best within 1e-8, 1e-6, 1e-4 of the optimum in 2, 5, 10
//! dimensions), that is 1310.7, 1782.7, 2250.3 evaluations against 1298.0,
//! 1763.0, 2229.0 for `reevaluate = 0` with `global` (1550.2, 2611.4,
//! 3720.4 against 1541.0, 2601.0, 3709.0 with `ring`); before the
//! detection the default took 15–26 % more with `global` (1499.0, 2093.2,
//! 2807.6), whose particles followed a confirmed best a generation behind,
//! and 10–11 % more with `ring`. An objective whose noise is everywhere
//! disagrees in the first round and runs exactly as before the detection.
//!
//! Limit: values are compared only where a round re-evaluates. Noise that
//! first shows after the third round is not seen, nor noise confined to a
//! region that the first rounds happen not to re-evaluate: on the trap
//! with exact values outside it (σ = 1 inside), 39 of 100 runs are judged
//! deterministic and 66 end outside the trap, 98 before the detection.
//! A gait walked from a random start is noisy everywhere, so its noise is
//! seen in the first round; an objective exact in some regions and noisy
//! in others can be misjudged (`tests/noise.rs` adds σ = 0.02 everywhere
//! to its trap for that reason, as Powell's trap does).
//!
//! With `reevaluate = 0` nothing is re-evaluated and the swarm is the
//! classic PSO, bit for bit (same proposals, tags and best as before the
//! setting existed; `tests/noise.rs` checks a fingerprint).
//!
//! # Determinism
//! All randomness comes from one `ChaCha8Rng` seeded with the run's seed and
//! is drawn in a fixed order (initialisation, then per generation particle by
//! particle, component by component); re-evaluations draw nothing. Results
//! are buffered until the whole batch is in, then applied in slot order
//! (re-evaluations, the round's verdict on determinism and the promotion
//! they earn, then personal bests by particle index, then the next
//! challenges), so the order in which results of a batch are told does not
//! matter, down to the bits of the means. The runtime relies on this to
//! resume a run by replaying stored results through a fresh instance.
//!
//! # Protocol
//! [`Optimizer::ask`] returns a batch as one [`Step::Evaluate`]: a
//! generation (every particle, in particle order), followed by the
//! re-evaluations it carries (each challenger `k` times in particle order,
//! then the incumbent); then [`Step::Wait`] until every candidate is told,
//! then the next batch. [`Step::Finished`] comes after `iterations`
//! generations (`particles × iterations` evaluations, plus the
//! re-evaluations, plus at most one batch of re-evaluations that settles the
//! last challengers). Tags count proposals from 0, so with `reevaluate = 0`
//! generation `g`'s particle `i` has tag `g·particles + i` as before.
//! [`Fitness::Failed`] counts as −∞ and so never becomes a best; a particle
//! whose evaluations have all failed has no personal attractor (its personal
//! best follows it) and is steered by its inertia and its neighbourhood
//! only. A tell whose tag is not awaited (stale, unknown or repeated) is
//! ignored.
//!
//! # Layout
//! - [`Pso`]: the [`Plugin`] (name `pso`, typed settings, factory).
//! - [`PsoConfig`], [`Topology`]: the settings as Rust values, with defaults
//!   and conversion from and to [`Settings`].
//! - [`Swarm`]: the [`Optimizer`] state machine (particles, personal bests
//!   and the incumbent with their evaluation counts, the re-evaluations of
//!   the current batch, phases).

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::{
    Bound, Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec,
    SettingValue, Settings, SettingsError, Space, Step,
};

/// The name the runtime registers this plugin under.
pub const NAME: &str = "pso";

/// Half-width of the initial velocity interval, as a fraction of each range.
const INITIAL_VELOCITY: f64 = 0.1;

/// The largest `reevaluate` setting.
pub const MAX_REEVALUATE: u32 = 16;

/// Confirmation rounds (batches carrying re-evaluations) that must
/// reproduce every re-evaluated value bit for bit, before any disagreement
/// was seen, for the swarm to call the objective deterministic and stop
/// re-evaluating (crate docs, "Noise"; the Powell and CMA-ES plugins' rule).
pub const EXACT_ROUNDS: u32 = 3;

/// The particle swarm optimiser plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pso;

impl Plugin for Pso {
    fn info(&self) -> PluginInfo {
        PluginInfo {
            name: NAME.to_owned(),
            author: "the yamor authors".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: "Particle swarm optimisation (constricted, SPSO-2007 style): \
                          evaluates a whole generation of particles in parallel, \
                          global or ring topology, particle 0 seeded at the start gait; \
                          on noisy fitness a point must hold its lead over the mean of \
                          several evaluations before it becomes the swarm's best."
                .to_owned(),
            settings: specs(),
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        _budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let config = PsoConfig::try_from(settings)?;
        Ok(Box::new(Swarm::new(space, &config, seed)?))
    }
}

/// Who a particle follows besides its own best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// The best personal best of the whole swarm.
    #[default]
    Global,
    /// The best personal best among the particle and its two index
    /// neighbours (wrapping around).
    Ring,
}

impl Topology {
    /// The setting's text for this topology.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::Global => "global",
            Topology::Ring => "ring",
        }
    }
}

/// The plugin's settings as Rust values.
///
/// [`Default`] gives the same values as the declared setting defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct PsoConfig {
    /// Swarm size (2..=1000).
    pub particles: usize,
    /// Number of generations, the initial one included (1..=100000).
    pub iterations: u64,
    /// Inertia weight `w` (0..=1).
    pub inertia: f64,
    /// Pull towards the particle's own best, `c1` (0..=4).
    pub cognitive: f64,
    /// Pull towards the neighbourhood's best, `c2` (0..=4).
    pub social: f64,
    /// Velocity limit per component, as a fraction of its range (0.001..=1).
    pub max_velocity: f64,
    /// Neighbourhood structure.
    pub topology: Topology,
    /// Whether particle 0 starts at [`Space::start`] (the user's gait).
    pub include_start: bool,
    /// Noisy fitness: extra evaluations a personal best gets before it may
    /// replace the incumbent (the global best), which is then judged by the
    /// mean of all its evaluations (0..=16; 0: single values, the classic
    /// PSO). Stops after [`EXACT_ROUNDS`] rounds that reproduced every
    /// value exactly (a deterministic objective). See the crate docs,
    /// "Noise".
    pub reevaluate: u32,
}

impl Default for PsoConfig {
    fn default() -> Self {
        PsoConfig {
            particles: 20,
            iterations: 50,
            inertia: 0.7298,
            cognitive: 1.49618,
            social: 1.49618,
            max_velocity: 0.5,
            topology: Topology::Global,
            include_start: true,
            reevaluate: 2,
        }
    }
}

impl TryFrom<&Settings> for PsoConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        let topology = match s.text("topology")? {
            "global" => Topology::Global,
            "ring" => Topology::Ring,
            other => {
                return Err(SettingsError::Invalid {
                    name: "topology".to_owned(),
                    why: format!("{other:?} is not global or ring"),
                });
            }
        };
        Ok(PsoConfig {
            particles: s.count("particles")?,
            iterations: s.count("iterations")?,
            inertia: s.float("inertia")?,
            cognitive: s.float("cognitive")?,
            social: s.float("social")?,
            max_velocity: s.float("max_velocity")?,
            topology,
            include_start: s.bool("include_start")?,
            reevaluate: s.count("reevaluate")?,
        })
    }
}

impl PsoConfig {
    /// The same values as [`Settings`] (validated against the declared specs).
    pub fn to_settings(&self) -> Result<Settings, SettingsError> {
        let int = |v: u64| SettingValue::Int(i64::try_from(v).unwrap_or(i64::MAX));
        let given: BTreeMap<String, SettingValue> = [
            ("particles", int(self.particles as u64)),
            ("iterations", int(self.iterations)),
            ("inertia", SettingValue::Float(self.inertia)),
            ("cognitive", SettingValue::Float(self.cognitive)),
            ("social", SettingValue::Float(self.social)),
            ("max_velocity", SettingValue::Float(self.max_velocity)),
            (
                "topology",
                SettingValue::Text(self.topology.as_str().to_owned()),
            ),
            ("include_start", SettingValue::Bool(self.include_start)),
            ("reevaluate", int(u64::from(self.reevaluate))),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        Settings::resolve(&specs(), &given)
    }
}

/// The declared settings; the single source of names, ranges and defaults.
fn specs() -> Vec<SettingSpec> {
    let d = PsoConfig::default();
    let float = |min: f64, max: f64| SettingKind::Float { min, max };
    vec![
        SettingSpec::new(
            "particles",
            "swarm size: candidates evaluated in parallel per generation",
            SettingKind::Integer { min: 2, max: 1000 },
            SettingValue::Int(d.particles as i64),
        ),
        SettingSpec::new(
            "iterations",
            "maximum number of generations (the initial one included)",
            SettingKind::Integer {
                min: 1,
                max: 100_000,
            },
            SettingValue::Int(d.iterations as i64),
        ),
        SettingSpec::new(
            "inertia",
            "inertia weight w (0.7298: Clerc's constriction factor)",
            float(0.0, 1.0),
            SettingValue::Float(d.inertia),
        ),
        SettingSpec::new(
            "cognitive",
            "acceleration c1 towards the particle's own best",
            float(0.0, 4.0),
            SettingValue::Float(d.cognitive),
        ),
        SettingSpec::new(
            "social",
            "acceleration c2 towards the neighbourhood's best",
            float(0.0, 4.0),
            SettingValue::Float(d.social),
        ),
        SettingSpec::new(
            "max_velocity",
            "velocity limit per parameter, as a fraction of its range",
            float(0.001, 1.0),
            SettingValue::Float(d.max_velocity),
        ),
        SettingSpec::new(
            "topology",
            "global: follow the swarm's best; ring: follow the best of self and two neighbours",
            SettingKind::Choice {
                options: vec!["global".into(), "ring".into()],
            },
            SettingValue::Text(d.topology.as_str().to_owned()),
        ),
        SettingSpec::new(
            "include_start",
            "start particle 0 at the gait's current parameters (the rest at random)",
            SettingKind::Bool,
            SettingValue::Bool(d.include_start),
        ),
        SettingSpec::new(
            "reevaluate",
            "noisy fitness: before a particle's best point replaces the swarm's best, it is \
             evaluated this many more times (with the next generation) and compared by the \
             mean of all its evaluations, the swarm's best being evaluated again too; \
             stops once 3 rounds reproduced every value exactly (a deterministic \
             objective); 0 believes single values (the classic PSO)",
            SettingKind::Integer {
                min: 0,
                max: i64::from(MAX_REEVALUATE),
            },
            SettingValue::Int(i64::from(d.reevaluate)),
        ),
    ]
}

/// Where the swarm is in its ask/tell cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The next batch is ready to hand out.
    Propose,
    /// Handed out; waiting for every result of the batch.
    Collect,
    /// `iterations` generations are done and the last challenge is settled.
    Finished,
}

/// A point and the evaluations it has had: a personal best or the
/// incumbent.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    /// Which point this is: the incumbent is a copy of a personal best and
    /// keeps its id, so a re-evaluation of the point counts for both.
    id: u64,
    x: Vec<f64>,
    /// The sum of its values; −∞ once any evaluation failed.
    sum: f64,
    /// How many values the sum holds (at least one).
    count: u32,
    /// Its first value (−∞: failed).
    first: f64,
    /// Whether every value reproduced the first bit for bit (both failed
    /// counts).
    exact: bool,
}

impl Record {
    /// A point with one value (−∞: failed).
    fn new(id: u64, x: Vec<f64>, value: f64) -> Self {
        Record {
            id,
            x,
            sum: value,
            count: 1,
            first: value,
            exact: true,
        }
    }

    /// The mean of its evaluations; while they all agree, the first value
    /// exactly (a mean of equal values can round off it by an ulp).
    fn mean(&self) -> f64 {
        if self.exact {
            self.first
        } else {
            self.sum / f64::from(self.count)
        }
    }

    /// Takes one more value in; whether it reproduced the first bit for bit.
    fn add(&mut self, value: f64) -> bool {
        let same = value.to_bits() == self.first.to_bits();
        self.sum += value;
        self.count += 1;
        self.exact &= same;
        same
    }
}

/// A re-evaluation in a batch: of which point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Again {
    /// The personal best of this particle (the challenger).
    Best(usize),
    /// The incumbent.
    Incumbent,
}

/// The point a particle is pulled towards besides its own best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guide {
    /// The personal best of this particle (itself or a neighbour).
    Best(usize),
    /// The incumbent (the `global` topology once noise was seen).
    Incumbent,
}

/// A running particle swarm: the [`Optimizer`] that [`Pso`] creates.
///
/// State is kept as one vector per quantity (struct of arrays) so a particle
/// can be moved while reading its neighbours' bests.
#[derive(Debug, Clone)]
pub struct Swarm {
    config: PsoConfig,
    /// The box; a periodic bound (a phase over one turn) has no walls: a
    /// particle flies across the seam and is pulled the shorter way round.
    bounds: Vec<Bound>,
    /// Velocity limit per component, `max_velocity · range`.
    vmax: Vec<f64>,
    rng: ChaCha8Rng,
    /// Current positions (the generation being evaluated or about to be).
    x: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
    /// Personal bests, judged by their mean; a particle that never
    /// succeeded has −∞ and its latest position (no pull back into a
    /// failing region).
    best: Vec<Record>,
    /// While re-evaluating, the swarm's best: the personal best with the
    /// highest mean among those evaluated `1 + reevaluate` times or more
    /// (its mean still accumulates). `None` until one is confirmed, and
    /// always with `reevaluate` = 0 or once the objective proved
    /// deterministic, where the best personal best is the swarm's best (the
    /// classic PSO).
    incumbent: Option<Record>,
    /// The re-evaluations proposed after the particles in the current batch.
    again: Vec<Again>,
    /// Whether the current batch holds the particles' positions; `false`
    /// for the batch of re-evaluations that settles the last challenge
    /// after the last generation.
    fresh: bool,
    /// Results of the current batch, by slot (particles, then
    /// re-evaluations).
    results: Vec<Option<f64>>,
    told: usize,
    /// The tag of the current batch's first slot; tags count proposals.
    tag_base: u64,
    /// The id the next new personal best gets.
    next_id: u64,
    /// Index of the current generation, from 0.
    generation: u64,
    phase: Phase,
    /// Confirmation rounds (completed batches with re-evaluations) that
    /// reproduced every re-evaluated value bit for bit.
    exact_rounds: u32,
    /// Whether a re-evaluation ever disagreed with its point's first value.
    noise_seen: bool,
}

impl Swarm {
    /// A fresh swarm over `space`. Checks the space and the configuration
    /// (same ranges as the declared settings).
    pub fn new(space: &Space, config: &PsoConfig, seed: u64) -> Result<Self, SettingsError> {
        // Space's fields are public, so re-check what `Space::new` checks.
        let space = Space::new(space.bounds.clone(), space.start.clone())?;
        config.to_settings()?;
        let n = config.particles;
        let lo: Vec<f64> = space.bounds.iter().map(|b| b.min).collect();
        let hi: Vec<f64> = space.bounds.iter().map(|b| b.max).collect();
        let range: Vec<f64> = lo.iter().zip(&hi).map(|(l, h)| h - l).collect();
        let vmax = range.iter().map(|r| config.max_velocity * r).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);

        // Positions first, then velocities, always drawing the same count of
        // numbers so `include_start` does not shift the random stream.
        let mut x = Vec::with_capacity(n);
        for i in 0..n {
            let random: Vec<f64> = (0..lo.len())
                .map(|d| (lo[d] + rng.random::<f64>() * range[d]).clamp(lo[d], hi[d]))
                .collect();
            x.push(if i == 0 && config.include_start {
                space.start.clone()
            } else {
                random
            });
        }
        let v = (0..n)
            .map(|_| {
                range
                    .iter()
                    .map(|r| (2.0 * rng.random::<f64>() - 1.0) * INITIAL_VELOCITY * r)
                    .collect()
            })
            .collect();
        let best = x
            .iter()
            .enumerate()
            .map(|(i, x)| Record::new(i as u64, Vec::clone(x), f64::NEG_INFINITY))
            .collect();
        Ok(Swarm {
            config: config.clone(),
            bounds: space.bounds.clone(),
            vmax,
            rng,
            best,
            incumbent: None,
            again: Vec::new(),
            fresh: true,
            x,
            v,
            results: Vec::new(),
            told: 0,
            tag_base: 0,
            next_id: n as u64,
            generation: 0,
            phase: Phase::Propose,
            exact_rounds: 0,
            noise_seen: false,
        })
    }

    /// The configuration this swarm runs with.
    #[must_use]
    pub fn config(&self) -> &PsoConfig {
        &self.config
    }

    /// Generations completed (every result told).
    #[must_use]
    pub fn generations_done(&self) -> u64 {
        match self.phase {
            Phase::Finished => self.config.iterations,
            _ => self.generation,
        }
    }

    /// The swarm's best point and its fitness, the mean of its evaluations;
    /// `None` until some evaluation of a completed batch succeeded.
    ///
    /// With `reevaluate` = 0, or once the objective proved deterministic
    /// ([`Swarm::deterministic`]), that is the best single value (ties go to
    /// the lowest particle index). Otherwise it is the incumbent: the best
    /// mean among points evaluated `1 + reevaluate` times or more, so not
    /// the luckiest single value; before any point has been evaluated that
    /// often, the best personal best.
    #[must_use]
    pub fn best(&self) -> Option<(&[f64], f64)> {
        self.best_record()
            .map(|r| (r.x.as_slice(), r.mean()))
            .filter(|(_, f)| f.is_finite())
    }

    /// How many evaluations the mean [`Swarm::best`] reports is over.
    #[must_use]
    pub fn best_evaluations(&self) -> Option<u32> {
        self.best_record()
            .filter(|r| r.mean().is_finite())
            .map(|r| r.count)
    }

    fn best_record(&self) -> Option<&Record> {
        match &self.incumbent {
            Some(incumbent) if incumbent.mean().is_finite() => Some(incumbent),
            _ => argmax(&self.means(), 0..self.best.len()).map(|i| &self.best[i]),
        }
    }

    /// The personal bests' means, by particle.
    fn means(&self) -> Vec<f64> {
        self.best.iter().map(Record::mean).collect()
    }

    /// The particles in the current batch: all of them, or none in the
    /// batch that settles the last challenge.
    fn fresh_count(&self) -> usize {
        if self.fresh { self.config.particles } else { 0 }
    }

    fn record(&self, again: Again) -> &Record {
        match again {
            Again::Best(i) => &self.best[i],
            Again::Incumbent => self
                .incumbent
                .as_ref()
                .expect("an incumbent to re-evaluate"),
        }
    }

    /// The whole batch is in: re-evaluations first (they were asked of the
    /// bests as they stood) and the promotion they earn, then personal
    /// bests in index order, then the challenges for the next batch; then
    /// finish, settle the last challenge, or move every particle.
    fn complete_batch(&mut self) {
        let values: Vec<f64> = self
            .results
            .drain(..)
            .map(|r| r.expect("every result told"))
            .collect();
        self.told = 0;
        self.tag_base += values.len() as u64;
        let n = self.fresh_count();
        let again = std::mem::take(&mut self.again);
        let mut exact = true;
        for (&which, &value) in again.iter().zip(&values[n..]) {
            let id = self.record(which).id;
            for record in self.best.iter_mut().chain(self.incumbent.as_mut()) {
                if record.id == id {
                    exact &= record.add(value);
                }
            }
        }
        if !again.is_empty() {
            if exact {
                self.exact_rounds += 1;
            } else {
                self.noise_seen = true;
            }
            if !self.reevaluating() {
                // Deterministic: from here on the classic swarm, whose best
                // is the best single value seen (the best personal best,
                // every value having reproduced its point's first).
                self.incumbent = None;
            }
        }
        // A point the re-evaluations confirmed is promoted before its
        // particle can replace it with a fresh (unconfirmed) value.
        self.promote();
        for (i, &f) in values[..n].iter().enumerate() {
            // While a particle has only failed, its "best" follows it, so a
            // failed start is no attractor to fly back to.
            let mean = self.best[i].mean();
            if f > mean || mean == f64::NEG_INFINITY {
                self.best[i] = Record::new(self.next_id, self.x[i].clone(), f);
                self.next_id += 1;
            }
        }
        if self.fresh {
            self.generation += 1;
            self.challenge();
        }
        if self.generation < self.config.iterations {
            self.fly();
            self.fresh = true;
            self.phase = Phase::Propose;
        } else if !self.again.iter().any(|a| matches!(a, Again::Best(_))) {
            // Nothing left to settle: the incumbent alone is not worth a batch.
            self.again.clear();
            self.phase = Phase::Finished;
        } else {
            self.fresh = false;
            self.phase = Phase::Propose;
        }
    }

    /// Whether the swarm still confirms its bests: `reevaluate` > 0 and
    /// the objective not (yet) shown deterministic. Once false, it is the
    /// classic swarm (`reevaluate` = 0) for the rest of the run.
    fn reevaluating(&self) -> bool {
        self.config.reevaluate > 0 && (self.noise_seen || self.exact_rounds < EXACT_ROUNDS)
    }

    /// Whether the swarm stopped re-evaluating because its first
    /// [`EXACT_ROUNDS`] confirmation rounds reproduced every re-evaluated
    /// value bit for bit (crate docs, "Noise"); always `false` with
    /// `reevaluate` = 0.
    #[must_use]
    pub fn deterministic(&self) -> bool {
        self.config.reevaluate > 0 && !self.reevaluating()
    }

    /// While re-evaluating: the best confirmed personal best (evaluated
    /// `1 + reevaluate` times) whose mean beats the incumbent's replaces it.
    fn promote(&mut self) {
        if !self.reevaluating() {
            return;
        }
        let need = self.config.reevaluate + 1;
        let means = self.means();
        let above = self.incumbent_mean();
        let confirmed =
            (0..self.best.len()).filter(|&i| self.best[i].count >= need && means[i] > above);
        if let Some(c) = argmax(&means, confirmed) {
            self.incumbent = Some(self.best[c].clone());
        }
    }

    /// While re-evaluating: every unconfirmed personal best that beats
    /// the incumbent is re-evaluated until confirmed, and the incumbent
    /// once, all with the next batch.
    fn challenge(&mut self) {
        if !self.reevaluating() {
            return;
        }
        let need = self.config.reevaluate + 1;
        let means = self.means();
        let above = self.incumbent_mean();
        let open = (0..self.best.len()).filter(|&i| self.best[i].count < need && means[i] > above);
        let open: Vec<usize> = if above.is_finite() {
            open.collect()
        } else {
            // No incumbent (yet, or it failed): every point beats it, so
            // only the best is worth confirming.
            argmax(&means, open).into_iter().collect()
        };
        for i in open {
            let count = self.best[i].count;
            self.again.extend((count..need).map(|_| Again::Best(i)));
        }
        if above.is_finite() {
            self.again.push(Again::Incumbent);
        }
    }

    /// The incumbent's mean; −∞ without one.
    fn incumbent_mean(&self) -> f64 {
        self.incumbent
            .as_ref()
            .map_or(f64::NEG_INFINITY, Record::mean)
    }

    /// The point each particle is pulled towards besides its own best, from
    /// the bests as they stand after the whole generation (synchronous PSO).
    ///
    /// `global` follows the incumbent only once a re-evaluation has
    /// disagreed: while every one so far reproduced its point's value, the
    /// objective may be deterministic, the best personal best is then
    /// exactly as good as its confirmed copy would be, and following it
    /// keeps the proposals those of the classic swarm.
    fn guides(&self) -> Vec<Guide> {
        let n = self.config.particles;
        let means = self.means();
        let incumbent = self.incumbent.as_ref().filter(|_| self.noise_seen);
        match (self.config.topology, incumbent) {
            (Topology::Global, Some(incumbent)) => (0..n)
                .map(|i| {
                    if incumbent.mean() > means[i] {
                        Guide::Incumbent
                    } else {
                        Guide::Best(i)
                    }
                })
                .collect(),
            (Topology::Global, None) => {
                // Before any point is confirmed or noise is seen (and
                // always with `reevaluate` = 0), the best personal best.
                let g = argmax(&means, 0..n).expect("at least two particles");
                (0..n)
                    .map(|i| Guide::Best(if means[g] > means[i] { g } else { i }))
                    .collect()
            }
            (Topology::Ring, _) => (0..n)
                .map(|i| {
                    // Self first, so a tie (or a neighbourhood that only
                    // failed) keeps the particle following its own best.
                    let near = [i, (i + n - 1) % n, (i + 1) % n];
                    let mut b = i;
                    for j in near {
                        if means[j] > means[b] {
                            b = j;
                        }
                    }
                    Guide::Best(b)
                })
                .collect(),
        }
    }

    /// One velocity and position update of every particle.
    fn fly(&mut self) {
        let guides = self.guides();
        let PsoConfig {
            inertia: w,
            cognitive: c1,
            social: c2,
            ..
        } = self.config;
        for (i, &g) in guides.iter().enumerate() {
            let guide = match g {
                Guide::Best(j) => &self.best[j].x,
                Guide::Incumbent => &self.incumbent.as_ref().expect("guided by it").x,
            };
            let own = &self.best[i].x;
            for d in 0..self.bounds.len() {
                let r1: f64 = self.rng.random();
                let r2: f64 = self.rng.random();
                let x = self.x[i][d];
                let vmax = self.vmax[d];
                let bound = &self.bounds[d];
                let mut v = w * self.v[i][d]
                    + c1 * r1 * bound.delta(x, own[d])
                    + c2 * r2 * bound.delta(x, guide[d]);
                v = v.clamp(-vmax, vmax);
                let mut next = x + v;
                if bound.periodic {
                    next = bound.wrap(next);
                } else if next < bound.min {
                    // Absorbing wall: stop at it (see the crate docs).
                    next = bound.min;
                    v = 0.0;
                } else if next > bound.max {
                    next = bound.max;
                    v = 0.0;
                }
                self.x[i][d] = next;
                self.v[i][d] = v;
            }
        }
    }
}

/// The first index in `indices` with the largest value (strict `>` scan).
fn argmax(values: &[f64], indices: impl IntoIterator<Item = usize>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for i in indices {
        if best.is_none_or(|b| values[i] > values[b]) {
            best = Some(i);
        }
    }
    best
}

impl Optimizer for Swarm {
    /// The incumbent: the swarm's best point by the mean of its evaluations.
    fn recommendation(&self) -> Option<Vec<f64>> {
        self.best().map(|(x, _)| x.to_vec())
    }

    fn ask(&mut self) -> Step {
        match self.phase {
            Phase::Finished => Step::Finished,
            Phase::Collect => Step::Wait,
            Phase::Propose => {
                self.phase = Phase::Collect;
                let n = self.fresh_count();
                let points = (0..n)
                    .map(|i| self.x[i].clone())
                    .chain(self.again.iter().map(|&a| self.record(a).x.clone()));
                let batch: Vec<Candidate> = points
                    .enumerate()
                    .map(|(slot, x)| Candidate {
                        tag: self.tag_base + slot as u64,
                        x,
                    })
                    .collect();
                self.results = vec![None; batch.len()];
                Step::Evaluate(batch)
            }
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        if self.phase != Phase::Collect {
            return;
        }
        let Some(slot) = tag
            .checked_sub(self.tag_base)
            .and_then(|s| usize::try_from(s).ok())
            .filter(|&s| s < self.results.len())
        else {
            return;
        };
        if self.results[slot].is_some() {
            return;
        }
        self.results[slot] = Some(outcome.value());
        self.told += 1;
        if self.told == self.results.len() {
            self.complete_batch();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yamor_optimizer_api::Bound;

    fn space(lo: f64, hi: f64, dim: usize) -> Space {
        let bounds = (0..dim)
            .map(|d| Bound::new(format!("p{d}"), lo, hi))
            .collect();
        Space::new(bounds, vec![(lo + hi) / 2.0; dim]).unwrap()
    }

    #[test]
    fn argmax_prefers_the_first_of_equals() {
        let v = [1.0, 3.0, 3.0, f64::NEG_INFINITY];
        assert_eq!(argmax(&v, 0..4), Some(1));
        assert_eq!(argmax(&[f64::NEG_INFINITY; 3], 0..3), Some(0));
        assert_eq!(argmax(&v, 0..0), None);
    }

    #[test]
    fn ring_guides_look_at_self_and_two_neighbours_only() {
        let mut s = Swarm::new(
            &space(0.0, 1.0, 1),
            &PsoConfig {
                particles: 6,
                topology: Topology::Ring,
                ..PsoConfig::default()
            },
            0,
        )
        .unwrap();
        for (record, f) in s
            .best
            .iter_mut()
            .zip([5.0, 1.0, 2.0, 9.0, 0.0, f64::NEG_INFINITY])
        {
            *record = Record::new(record.id, record.x.clone(), f);
        }
        let bests = |g: &[usize]| g.iter().map(|&i| Guide::Best(i)).collect::<Vec<_>>();
        assert_eq!(s.guides(), bests(&[0, 0, 3, 3, 3, 0]));
        s.config.topology = Topology::Global;
        assert_eq!(s.guides(), bests(&[3; 6]));
    }

    #[test]
    fn failures_everywhere_leave_each_particle_on_its_own() {
        let s = Swarm::new(&space(0.0, 1.0, 2), &PsoConfig::default(), 0).unwrap();
        let own: Vec<Guide> = (0..20).map(Guide::Best).collect();
        assert_eq!(s.guides(), own);
        assert!(s.best().is_none());
    }

    #[test]
    fn a_record_whose_values_agree_is_worth_its_first_exactly() {
        let mut r = Record::new(0, vec![0.0], 0.1);
        assert!(r.add(0.1) && r.add(0.1));
        assert_ne!(r.sum / 3.0, 0.1, "the mean of equal values rounds off");
        assert_eq!(r.mean().to_bits(), 0.1f64.to_bits());
        assert!(!r.add(0.4));
        assert_eq!(r.mean(), r.sum / 4.0);
        let mut failed = Record::new(1, vec![0.0], f64::NEG_INFINITY);
        assert!(failed.add(f64::NEG_INFINITY), "both failed agree");
        assert!(!Record::new(2, vec![0.0], 1.0).add(f64::NEG_INFINITY));
    }

    #[test]
    fn default_config_matches_declared_defaults() {
        let s = Settings::resolve(&specs(), &BTreeMap::new()).unwrap();
        assert_eq!(PsoConfig::try_from(&s).unwrap(), PsoConfig::default());
        assert_eq!(PsoConfig::default().to_settings().unwrap(), s);
    }
}
