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
//! # Determinism
//! All randomness comes from one `ChaCha8Rng` seeded with the run's seed and
//! is drawn in a fixed order (initialisation, then per generation particle by
//! particle, component by component). Results are buffered until the whole
//! generation is in, and bests are updated by scanning particles in index
//! order, so the order in which results of a generation are told does not
//! matter. The runtime relies on this to resume a run by replaying stored
//! results through a fresh instance.
//!
//! # Protocol
//! [`Optimizer::ask`] returns a generation (every particle, in particle order)
//! as one [`Step::Evaluate`], then [`Step::Wait`] until every candidate is
//! told, then the next generation, and [`Step::Finished`] after `iterations`
//! generations (`particles × iterations` evaluations). [`Fitness::Failed`]
//! counts as −∞ and so never becomes a best; a particle whose evaluations
//! have all failed has no personal attractor (its personal best follows it)
//! and is steered by its inertia and its neighbourhood only. A tell whose tag is not awaited
//! (stale, unknown or repeated) is ignored.
//!
//! # Layout
//! - [`Pso`]: the [`Plugin`] (name `pso`, typed settings, factory).
//! - [`PsoConfig`], [`Topology`]: the settings as Rust values, with defaults
//!   and conversion from and to [`Settings`].
//! - [`Swarm`]: the [`Optimizer`] state machine (particles, bests, phases).

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
                          global or ring topology, particle 0 seeded at the start gait."
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
    let spec =
        |name: &str, description: &str, kind: SettingKind, default: SettingValue| SettingSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            kind,
            default,
        };
    let float = |min: f64, max: f64| SettingKind::Float { min, max };
    vec![
        spec(
            "particles",
            "swarm size: candidates evaluated in parallel per generation",
            SettingKind::Integer { min: 2, max: 1000 },
            SettingValue::Int(d.particles as i64),
        ),
        spec(
            "iterations",
            "maximum number of generations (the initial one included)",
            SettingKind::Integer {
                min: 1,
                max: 100_000,
            },
            SettingValue::Int(d.iterations as i64),
        ),
        spec(
            "inertia",
            "inertia weight w (0.7298: Clerc's constriction factor)",
            float(0.0, 1.0),
            SettingValue::Float(d.inertia),
        ),
        spec(
            "cognitive",
            "acceleration c1 towards the particle's own best",
            float(0.0, 4.0),
            SettingValue::Float(d.cognitive),
        ),
        spec(
            "social",
            "acceleration c2 towards the neighbourhood's best",
            float(0.0, 4.0),
            SettingValue::Float(d.social),
        ),
        spec(
            "max_velocity",
            "velocity limit per parameter, as a fraction of its range",
            float(0.001, 1.0),
            SettingValue::Float(d.max_velocity),
        ),
        spec(
            "topology",
            "global: follow the swarm's best; ring: follow the best of self and two neighbours",
            SettingKind::Choice {
                options: vec!["global".into(), "ring".into()],
            },
            SettingValue::Text(d.topology.as_str().to_owned()),
        ),
        spec(
            "include_start",
            "start particle 0 at the gait's current parameters (the rest at random)",
            SettingKind::Bool,
            SettingValue::Bool(d.include_start),
        ),
    ]
}

/// Where the swarm is in its ask/tell cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The current generation's positions are ready to hand out.
    Propose,
    /// Handed out; waiting for every result of the generation.
    Collect,
    /// `iterations` generations are done.
    Finished,
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
    /// Personal bests; a particle that never succeeded has fitness −∞ and
    /// its latest position (no pull back into a failing region).
    best_x: Vec<Vec<f64>>,
    best_f: Vec<f64>,
    /// Results of the current generation, by particle.
    results: Vec<Option<f64>>,
    told: usize,
    /// Index of the current generation, from 0.
    generation: u64,
    phase: Phase,
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
        Ok(Swarm {
            config: config.clone(),
            bounds: space.bounds.clone(),
            vmax,
            rng,
            best_x: x.clone(),
            best_f: vec![f64::NEG_INFINITY; n],
            x,
            v,
            results: vec![None; n],
            told: 0,
            generation: 0,
            phase: Phase::Propose,
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

    /// The best point found so far and its fitness; `None` until some
    /// evaluation of a completed generation succeeded. Ties go to the lowest
    /// particle index.
    #[must_use]
    pub fn best(&self) -> Option<(&[f64], f64)> {
        let i = argmax(&self.best_f, 0..self.best_f.len())?;
        self.best_f[i]
            .is_finite()
            .then(|| (self.best_x[i].as_slice(), self.best_f[i]))
    }

    fn tag(&self, i: usize) -> u64 {
        self.generation * self.config.particles as u64 + i as u64
    }

    /// The whole generation is in: update personal bests in index order,
    /// then finish or move every particle.
    fn complete_generation(&mut self) {
        for i in 0..self.config.particles {
            let f = self.results[i].take().expect("every result told");
            // While a particle has only failed, its "best" follows it, so a
            // failed start is no attractor to fly back to.
            if f > self.best_f[i] || self.best_f[i] == f64::NEG_INFINITY {
                self.best_f[i] = f;
                self.best_x[i].clone_from(&self.x[i]);
            }
        }
        self.told = 0;
        self.generation += 1;
        if self.generation >= self.config.iterations {
            self.phase = Phase::Finished;
        } else {
            self.fly();
            self.phase = Phase::Propose;
        }
    }

    /// The neighbourhood best each particle follows, from the bests as they
    /// stand after the whole generation (synchronous PSO).
    fn guides(&self) -> Vec<usize> {
        let n = self.config.particles;
        match self.config.topology {
            Topology::Global => {
                let g = argmax(&self.best_f, 0..n).expect("at least two particles");
                (0..n)
                    .map(|i| {
                        if self.best_f[g] > self.best_f[i] {
                            g
                        } else {
                            i
                        }
                    })
                    .collect()
            }
            Topology::Ring => (0..n)
                .map(|i| {
                    // Self first, so a tie (or a neighbourhood that only
                    // failed) keeps the particle following its own best.
                    let near = [i, (i + n - 1) % n, (i + 1) % n];
                    let mut b = i;
                    for j in near {
                        if self.best_f[j] > self.best_f[b] {
                            b = j;
                        }
                    }
                    b
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
            for d in 0..self.bounds.len() {
                let r1: f64 = self.rng.random();
                let r2: f64 = self.rng.random();
                let x = self.x[i][d];
                let vmax = self.vmax[d];
                let bound = &self.bounds[d];
                let mut v = w * self.v[i][d]
                    + c1 * r1 * bound.delta(x, self.best_x[i][d])
                    + c2 * r2 * bound.delta(x, self.best_x[g][d]);
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
    fn ask(&mut self) -> Step {
        match self.phase {
            Phase::Finished => Step::Finished,
            Phase::Collect => Step::Wait,
            Phase::Propose => {
                self.phase = Phase::Collect;
                Step::Evaluate(
                    (0..self.config.particles)
                        .map(|i| Candidate {
                            tag: self.tag(i),
                            x: self.x[i].clone(),
                        })
                        .collect(),
                )
            }
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        if self.phase != Phase::Collect {
            return;
        }
        let n = self.config.particles as u64;
        if tag / n != self.generation {
            return;
        }
        let i = (tag % n) as usize;
        if self.results[i].is_some() {
            return;
        }
        self.results[i] = Some(outcome.value());
        self.told += 1;
        if self.told == self.config.particles {
            self.complete_generation();
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
        s.best_f = vec![5.0, 1.0, 2.0, 9.0, 0.0, f64::NEG_INFINITY];
        assert_eq!(s.guides(), vec![0, 0, 3, 3, 3, 0]);
        s.config.topology = Topology::Global;
        assert_eq!(s.guides(), vec![3; 6]);
    }

    #[test]
    fn failures_everywhere_leave_each_particle_on_its_own() {
        let s = Swarm::new(&space(0.0, 1.0, 2), &PsoConfig::default(), 0).unwrap();
        assert_eq!(s.guides(), (0..20).collect::<Vec<_>>());
        assert!(s.best().is_none());
    }

    #[test]
    fn default_config_matches_declared_defaults() {
        let s = Settings::resolve(&specs(), &BTreeMap::new()).unwrap();
        assert_eq!(PsoConfig::try_from(&s).unwrap(), PsoConfig::default());
        assert_eq!(PsoConfig::default().to_settings().unwrap(), s);
    }
}
