//! MAP-Elites as a yamor optimizer plugin: a grid of elites over behaviour
//! descriptors the walks measure (a map of gaits), filled by emitters that
//! each propose a batch and are told its results, as pyribs' schedulers do.
//!
//! The emitters work in the unit box (every parameter scaled to `[0, 1]`),
//! so one step size suits parameters of any range:
//! - **CMA-ME improvement** (`cma-me`, the default; Fontaine et al.,
//!   "Covariance Matrix Adaptation for the Rapid Illumination of Behavior
//!   Space", GECCO 2020): a CMA-ES run whose generation is ranked by
//!   two-stage improvement (new cells first by fitness, then improved
//!   cells by their gain, then the rest by fitness) and which restarts from
//!   a random elite when a generation adds nothing or CMA-ES itself stops
//!   (pyribs' `EvolutionStrategyEmitter` with `ranker="2imp"`,
//!   `restart_rule="no_improvement"`). Samples outside the box are drawn
//!   again (up to ten times, then clipped), as pyribs does.
//! - **iso+line** (`iso-line`; Vassiliades & Mouret, GECCO 2018): between
//!   two random elites, `x₁ + σ_iso·N(0, I) + σ_line·N(0, 1)·(x₂ − x₁)`.
//! - **Gaussian** (`gaussian`): classic MAP-Elites, `x + σ·N(0, I)` from a
//!   random elite.
//!
//! Before the map holds an elite, every emitter samples around the start
//! point (the robot's own gait). The plugin never finishes on its own: the
//! run's budget ends it. Its finalists are every elite, so the runtime
//! re-walks each one from held-out starts.
//!
//! # Layout
//! - [`MapElitesPlugin`], [`MapElitesConfig`]: the plugin and its settings.
//! - [`MapElites`]: the optimizer, one archive and its emitters.
//! - `emitter`: the three emitter kinds.

mod emitter;

use std::collections::HashMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use yamor_optimizer_api::map::{Archive, Grid};
use yamor_optimizer_api::{
    Candidate, Fitness, Optimizer, Plugin, PluginInfo, SettingKind, SettingSpec, SettingValue,
    Settings, SettingsError, Space, Step,
};

pub use emitter::EmitterKind;
use emitter::{Emitter, Told};

/// The plugin's registered name.
pub const NAME: &str = "map-elites";

/// The default map of gaits: direction of travel against the robot's long
/// axis in 30° cells, mean body height from 2 to 8 cm in 1 cm cells (a
/// YaMoR module lying flat holds its centre at about 3 cm), and the duty
/// factor of the front and back limbs in fifths: 12·6·5·5 = 1,800 cells
/// (docs/maps.md says why).
pub const DEFAULT_DESCRIPTORS: &str =
    "heading_deg:-180:180:12,height_m:0.02:0.08:6,front_duty:0:1:5,back_duty:0:1:5";

/// The quality-diversity plugin.
pub struct MapElitesPlugin;

impl Plugin for MapElitesPlugin {
    fn info(&self) -> PluginInfo {
        let options = [
            EmitterKind::CmaMe,
            EmitterKind::IsoLine,
            EmitterKind::Gaussian,
        ]
        .map(|k| k.as_str().to_owned())
        .to_vec();
        PluginInfo {
            name: NAME.into(),
            author: "the yamor authors".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "MAP-Elites: a map of the best gait of every behaviour, filled by \
                          CMA-ME, iso+line or Gaussian emitters"
                .into(),
            settings: vec![
                SettingSpec {
                    name: "descriptors".into(),
                    description: "the map's axes, name:min:max:bins separated by commas \
                                  (heading_deg, height_m, front_duty, back_duty, turn_deg_s, \
                                  or what a Python host reports)"
                        .into(),
                    kind: SettingKind::File,
                    default: SettingValue::Text(DEFAULT_DESCRIPTORS.into()),
                },
                SettingSpec {
                    name: "emitter".into(),
                    description: "how new solutions are proposed: cma-me (improvement \
                                  emitters), iso-line or gaussian"
                        .into(),
                    kind: SettingKind::Choice { options },
                    default: SettingValue::Text(EmitterKind::CmaMe.as_str().into()),
                },
                SettingSpec {
                    name: "emitters".into(),
                    description: "emitters proposing side by side".into(),
                    kind: SettingKind::Integer { min: 1, max: 256 },
                    default: SettingValue::Int(5),
                },
                SettingSpec {
                    name: "batch".into(),
                    description: "solutions each emitter proposes at a time (CMA-ES' λ for cma-me)"
                        .into(),
                    kind: SettingKind::Integer { min: 2, max: 4096 },
                    default: SettingValue::Int(12),
                },
                SettingSpec {
                    name: "sigma".into(),
                    description: "step size in the unit box: CMA-ES' initial σ, the Gaussian's σ, \
                                  iso+line's isotropic σ"
                        .into(),
                    kind: SettingKind::Float {
                        min: 1e-6,
                        max: 1.0,
                    },
                    default: SettingValue::Float(0.1),
                },
                SettingSpec {
                    name: "line_sigma".into(),
                    description: "iso+line's step along the line between two elites".into(),
                    kind: SettingKind::Float {
                        min: 0.0,
                        max: 10.0,
                    },
                    default: SettingValue::Float(0.2),
                },
            ],
        }
    }

    fn create(
        &self,
        space: &Space,
        settings: &Settings,
        seed: u64,
        _budget: Option<u64>,
    ) -> Result<Box<dyn Optimizer>, SettingsError> {
        let config = MapElitesConfig::try_from(settings)?;
        Ok(Box::new(MapElites::new(space, &config, seed)))
    }

    fn grid(&self, settings: &Settings) -> Result<Option<Grid>, SettingsError> {
        Ok(Some(MapElitesConfig::try_from(settings)?.grid))
    }
}

/// The plugin's settings as Rust values.
#[derive(Debug, Clone, PartialEq)]
pub struct MapElitesConfig {
    pub grid: Grid,
    pub emitter: EmitterKind,
    pub emitters: usize,
    pub batch: usize,
    pub sigma: f64,
    pub line_sigma: f64,
}

impl TryFrom<&Settings> for MapElitesConfig {
    type Error = SettingsError;

    fn try_from(s: &Settings) -> Result<Self, SettingsError> {
        let invalid = |name: &str, why: String| SettingsError::Invalid {
            name: name.into(),
            why,
        };
        Ok(MapElitesConfig {
            grid: Grid::parse(s.text("descriptors")?)
                .map_err(|e| invalid("descriptors", e.to_string()))?,
            emitter: s
                .text("emitter")?
                .parse()
                .map_err(|e: String| invalid("emitter", e))?,
            emitters: s.count("emitters")?,
            batch: s.count("batch")?,
            sigma: s.float("sigma")?,
            line_sigma: s.float("line_sigma")?,
        })
    }
}

/// One map and the emitters filling it.
pub struct MapElites {
    space: Space,
    archive: Archive<u64>,
    emitters: Vec<Emitter>,
    rng: ChaCha8Rng,
    next_tag: u64,
    /// Proposals in flight: tag → (emitter, its index in the emitter's batch).
    pending: HashMap<u64, (usize, usize)>,
}

impl MapElites {
    #[must_use]
    pub fn new(space: &Space, config: &MapElitesConfig, seed: u64) -> Self {
        let start = unit(space, &space.start);
        MapElites {
            space: space.clone(),
            archive: Archive::new(config.grid.clone()),
            emitters: (0..config.emitters)
                .map(|_| Emitter::new(config, &start))
                .collect(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_tag: 0,
            pending: HashMap::new(),
        }
    }

    /// The map so far: each cell's elite, tagged with its proposal.
    #[must_use]
    pub fn archive(&self) -> &Archive<u64> {
        &self.archive
    }

    fn elites_in_unit_box(&self) -> Vec<Vec<f64>> {
        self.archive
            .elites()
            .map(|(_, e)| unit(&self.space, &e.x))
            .collect()
    }
}

impl Optimizer for MapElites {
    fn ask(&mut self) -> Step {
        let mut candidates = Vec::new();
        let elites = self.elites_in_unit_box();
        for (e, emitter) in self.emitters.iter_mut().enumerate() {
            if !emitter.idle() {
                continue;
            }
            for (i, u) in emitter.ask(&elites, &mut self.rng).into_iter().enumerate() {
                let tag = self.next_tag;
                self.next_tag += 1;
                self.pending.insert(tag, (e, i));
                candidates.push(Candidate {
                    tag,
                    x: point(&self.space, &u),
                });
            }
        }
        if candidates.is_empty() {
            Step::Wait
        } else {
            Step::Evaluate(candidates)
        }
    }

    fn tell(&mut self, tag: u64, outcome: Fitness) {
        self.tell_described(tag, outcome, None);
    }

    fn tell_described(&mut self, tag: u64, outcome: Fitness, descriptors: Option<&[f64]>) {
        let Some((e, i)) = self.pending.remove(&tag) else {
            return;
        };
        let told = match (outcome, descriptors) {
            (Fitness::Value(f), Some(d)) if f.is_finite() => {
                let x = point(&self.space, self.emitters[e].proposal(i));
                let (_, insertion) = self.archive.insert(x, f, d.to_vec(), tag);
                Told::Filed(f, insertion)
            }
            _ => Told::Failed,
        };
        if self.emitters[e].told(i, told) {
            let elites = self.elites_in_unit_box();
            self.emitters[e].next_generation(&elites, &mut self.rng);
        }
    }

    fn descriptors(&self) -> Vec<String> {
        self.archive.grid().names()
    }

    fn finalists(&self) -> Option<Vec<Vec<f64>>> {
        Some(self.archive.elites().map(|(_, e)| e.x.clone()).collect())
    }

    fn recommendation(&self) -> Option<Vec<f64>> {
        None
    }
}

/// `x` in the unit box of `space` (a point of a zero-width bound is 0).
fn unit(space: &Space, x: &[f64]) -> Vec<f64> {
    space
        .bounds
        .iter()
        .zip(x)
        .map(|(b, &v)| {
            let range = b.max - b.min;
            if range > 0.0 {
                (v - b.min) / range
            } else {
                0.0
            }
        })
        .collect()
}

/// The point of `space` at unit coordinates `u`: wrapped on a periodic
/// bound, clamped on the others.
fn point(space: &Space, u: &[f64]) -> Vec<f64> {
    space
        .bounds
        .iter()
        .zip(u)
        .map(|(b, &v)| b.wrap(b.min + v * (b.max - b.min)))
        .collect()
}

#[cfg(test)]
mod tests;
