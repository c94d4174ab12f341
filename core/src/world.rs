//! The physical world one walk happens in, beyond where it starts: the
//! engine, the bodies' masses, the servos' strength, speed, lag and play,
//! and the noise of the position source. A gait learnt in one exact world
//! learns that world's quirks (thesis 6.3: the best Webots gait "could not
//! walk" on the real YaMoR, its servos lagging); a run that draws each
//! walk's world from a [`WorldDistribution`] learns gaits that hold in
//! worlds it never saw.
//!
//! A [`World`] is recorded in the job's spec like its start, so every
//! result re-walks to the bit. [`World::default`] is the nominal world of
//! every figure before worlds existed. Ground friction stays the spec's own
//! field (`EvaluationSpec::ground_friction`), which a draw sets; the
//! position noise is applied where walks are measured
//! ([`crate::measure::PositionNoise`]).

use serde::{Deserialize, Serialize};

use crate::starts::mix64;

/// One world, as drawn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct World {
    /// The physics engine (`articulated`, `rapier`); `None`: the host's own.
    pub engine: Option<String>,
    /// Walk once in each of these engines (same start, same hardware) and
    /// report their mean: a candidate valued in paired worlds, so that
    /// what an optimizer compares is gaits, not engine draws. Empty: one
    /// walk, in `engine`. Not with `engine`.
    pub engines: Vec<String>,
    /// Value a walk in several `engines` by the slowest of them, not their
    /// mean: a gait must hold in every engine, not average out.
    pub slowest_engine: bool,
    /// The robot's bodies and servos as built.
    #[serde(flatten)]
    pub hardware: Hardware,
    /// Standard deviation of the position source's error (m), per sample.
    pub position_noise_m: f64,
}

/// How one robot as built differs from its model: masses and servos.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Hardware {
    /// Every module's mass and inertia, times this.
    pub mass_scale: f64,
    /// Each module's own deviation on top: its mass and inertia times
    /// `1 + mass_spread × u`, `u` in [-1, 1] drawn for the module from
    /// `mass_seed`.
    pub mass_spread: f64,
    pub mass_seed: u64,
    /// The servos' stall torque, times this (a weak battery, a worn motor).
    pub torque_scale: f64,
    /// The servos' top speed, times this.
    pub speed_scale: f64,
    /// How long a servo takes to act on a new set-point (s): the pulse
    /// period and the control loop of a hobby servo.
    pub servo_lag_s: f64,
    /// Play of the gearbox (rad): the output follows the motor only once
    /// the motor has turned through half of it.
    pub backlash_rad: f64,
    /// The servo's torque sags with its speed, as a DC motor's does: all of
    /// the stall torque at rest, none at the no-load speed. Off, the model
    /// servo holds its stall torque at any speed.
    pub torque_sags: bool,
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware {
            mass_scale: 1.0,
            mass_spread: 0.0,
            mass_seed: 0,
            torque_scale: 1.0,
            speed_scale: 1.0,
            servo_lag_s: 0.0,
            backlash_rad: 0.0,
            torque_sags: false,
        }
    }
}

impl Hardware {
    /// The emulated real robot's hardware (`yamor emulate`'s defaults,
    /// argued in docs/worlds.md): servos 40 ms late with 2° of play and
    /// 80 % of the data sheet's torque, sagging with speed.
    pub const EMULATED: Hardware = Hardware {
        mass_scale: 1.0,
        mass_spread: 0.0,
        mass_seed: 0,
        torque_scale: 0.8,
        speed_scale: 1.0,
        servo_lag_s: 0.04,
        backlash_rad: 2.0 * std::f64::consts::PI / 180.0,
        torque_sags: true,
    };

    /// As modelled: nothing differs.
    #[must_use]
    pub fn is_nominal(&self) -> bool {
        *self == Hardware::default()
    }

    /// Refuses values no robot could have (and NaN).
    pub fn check(&self) -> Result<(), WorldError> {
        for (field, value) in [
            ("world.mass_scale", self.mass_scale),
            ("world.torque_scale", self.torque_scale),
            ("world.speed_scale", self.speed_scale),
        ] {
            if !(value > 0.0 && value <= 10.0) {
                return out_of_range(field, value, "in (0, 10]");
            }
        }
        if !(0.0..0.9).contains(&self.mass_spread) {
            return out_of_range("world.mass_spread", self.mass_spread, "in [0, 0.9)");
        }
        if !(0.0..=1.0).contains(&self.servo_lag_s) {
            return out_of_range("world.servo_lag_s", self.servo_lag_s, "in [0, 1] s");
        }
        if !(0.0..=0.5).contains(&self.backlash_rad) {
            return out_of_range("world.backlash_rad", self.backlash_rad, "in [0, 0.5] rad");
        }
        Ok(())
    }

    /// Module `module`'s mass (and inertia) factor.
    #[must_use]
    pub fn mass_factor(&self, module: usize) -> f64 {
        let u = unit(mix64(self.mass_seed ^ mix64(module as u64 + 1))) * 2.0 - 1.0;
        self.mass_scale * (1.0 + self.mass_spread * u)
    }
}

/// A world value out of its range; names the field as the wire does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {value} is out of range (expected {expected})")]
pub struct WorldError {
    pub field: &'static str,
    pub value: f64,
    pub expected: &'static str,
}

fn out_of_range(field: &'static str, value: f64, expected: &'static str) -> Result<(), WorldError> {
    Err(WorldError {
        field,
        value,
        expected,
    })
}

impl World {
    /// The world as a line people read, with the ground's friction
    /// (`None`: the host's own): `rapier, friction 0.86, mass ×1.05 (±10 %
    /// per module), torque ×0.99, speed ×0.76, lag 15 ms, backlash 0.5°,
    /// camera noise 3.7 mm`.
    #[must_use]
    pub fn describe(&self, friction: Option<f64>) -> String {
        let h = &self.hardware;
        let engine = match (&self.engine, self.engines.is_empty()) {
            (Some(engine), _) => engine.clone(),
            (None, false) if self.slowest_engine => {
                format!("each of {}, the slowest counted", self.engines.join(", "))
            }
            (None, false) => format!("each of {}, their mean counted", self.engines.join(", ")),
            (None, true) => "the host's own engine".to_owned(),
        };
        format!(
            "{engine}, friction {}, mass ×{:.2} (±{:.0} % per module), torque ×{:.2}{}, speed ×{:.2}, lag {:.0} ms, backlash {:.1}°, camera noise {:.1} mm",
            friction.map_or("as the host's".to_owned(), |mu| format!("{mu:.2}")),
            h.mass_scale,
            h.mass_spread * 100.0,
            h.torque_scale,
            if h.torque_sags {
                " sagging with speed"
            } else {
                ""
            },
            h.speed_scale,
            h.servo_lag_s * 1e3,
            h.backlash_rad.to_degrees(),
            self.position_noise_m * 1e3
        )
    }

    /// The nominal world: nothing varied.
    #[must_use]
    pub fn is_nominal(&self) -> bool {
        *self == World::default()
    }

    /// Refuses values no robot could have (and NaN).
    pub fn check(&self) -> Result<(), WorldError> {
        if self.engine.is_some() && !self.engines.is_empty() {
            return out_of_range(
                "world.engines",
                self.engines.len() as f64,
                "empty when world.engine names one",
            );
        }
        self.hardware.check()?;
        if !(0.0..=0.5).contains(&self.position_noise_m) {
            return out_of_range(
                "world.position_noise_m",
                self.position_noise_m,
                "in [0, 0.5] m",
            );
        }
        Ok(())
    }
}

/// A number in [0, 1) from 53 bits of `bits`.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A closed range a draw is uniform over (`lo == hi`: fixed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub lo: f64,
    pub hi: f64,
}

impl Range {
    #[must_use]
    pub const fn fixed(value: f64) -> Self {
        Range {
            lo: value,
            hi: value,
        }
    }

    #[must_use]
    pub const fn new(lo: f64, hi: f64) -> Self {
        Range { lo, hi }
    }

    fn draw(self, u: f64) -> f64 {
        self.lo + (self.hi - self.lo) * u
    }
}

/// Where a run's worlds are drawn from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorldDistribution {
    /// Engines drawn with equal odds; empty: the host's own.
    pub engines: Vec<String>,
    /// Every world walks in all of `engines` (a walk each, their mean its
    /// value) instead of drawing one.
    pub paired_engines: bool,
    /// Paired worlds are valued by their slowest engine.
    pub slowest_engine: bool,
    /// Ground friction; `None`: the host's own.
    pub friction: Option<Range>,
    pub mass_scale: Range,
    pub mass_spread: f64,
    pub torque_scale: Range,
    pub speed_scale: Range,
    pub servo_lag_s: Range,
    pub backlash_rad: Range,
    pub position_noise_m: Range,
}

impl Default for WorldDistribution {
    /// The single nominal world (the thesis' protocol).
    fn default() -> Self {
        WorldDistribution {
            engines: Vec::new(),
            paired_engines: false,
            slowest_engine: false,
            friction: None,
            mass_scale: Range::fixed(1.0),
            mass_spread: 0.0,
            torque_scale: Range::fixed(1.0),
            speed_scale: Range::fixed(1.0),
            servo_lag_s: Range::fixed(0.0),
            backlash_rad: Range::fixed(0.0),
            position_noise_m: Range::fixed(0.0),
        }
    }
}

/// The engines a YaMoR simulator offers.
pub const ENGINES: [&str; 2] = ["articulated", "rapier"];

impl WorldDistribution {
    /// The worlds a gait should survive, each range argued from the thesis'
    /// hardware and from what was measured (docs/worlds.md):
    /// - both engines, because the same gait loses a third of its speed
    ///   from one to the other;
    /// - friction 0.5–1.1, the span over which the quadruped's gait was
    ///   measured to keep its speed (rubber to wood and carpet);
    /// - masses ±15 % overall and ±10 % per module: batteries, screws and
    ///   cables the CAD model leaves out;
    /// - stall torque 60–100 % and top speed 70–100 % of the data sheet's:
    ///   a hobby servo's figures are for a fresh battery at no load;
    /// - servo lag 0–60 ms: thesis 6.3 names lagging servos, and a 50 Hz
    ///   pulse alone is up to 20 ms late;
    /// - backlash 0–3°: hobby-servo gearboxes;
    /// - position noise 0–5 mm: the overhead camera's fix (thesis 5.4).
    #[must_use]
    pub fn robust() -> Self {
        WorldDistribution {
            engines: ENGINES.iter().map(|e| (*e).to_owned()).collect(),
            paired_engines: false,
            slowest_engine: false,
            friction: Some(Range::new(0.5, 1.1)),
            mass_scale: Range::new(0.85, 1.15),
            mass_spread: 0.1,
            torque_scale: Range::new(0.6, 1.0),
            speed_scale: Range::new(0.7, 1.0),
            servo_lag_s: Range::new(0.0, 0.06),
            backlash_rad: Range::new(0.0, 3f64.to_radians()),
            position_noise_m: Range::new(0.0, 0.005),
        }
    }

    /// [`WorldDistribution::robust`] with every world walked in both
    /// engines: the robust worlds' value without the luck of the engine
    /// draw, at two walks a candidate.
    #[must_use]
    pub fn paired() -> Self {
        WorldDistribution {
            paired_engines: true,
            ..Self::robust()
        }
    }

    /// [`WorldDistribution::paired`] valued by the slower engine.
    #[must_use]
    pub fn paired_slowest() -> Self {
        WorldDistribution {
            slowest_engine: true,
            ..Self::paired()
        }
    }

    /// Only one world: nothing is drawn.
    #[must_use]
    pub fn is_single(&self) -> bool {
        *self == WorldDistribution::default()
    }

    /// The world drawn from `seed`, with its ground friction (`None`: the
    /// host's own). The same seed draws the same world.
    #[must_use]
    pub fn draw(&self, seed: u64) -> (World, Option<f64>) {
        let mut state = mix64(seed ^ 0x5752_4c44_5345_4544);
        let mut next = || {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            unit(state)
        };
        // Drawn even when paired, so a paired world is the robust world of
        // the same seed walked in every engine.
        let engine = (!self.engines.is_empty())
            .then(|| {
                let k = ((next() * self.engines.len() as f64) as usize).min(self.engines.len() - 1);
                self.engines[k].clone()
            })
            .filter(|_| !self.paired_engines);
        let friction = self.friction.map(|r| r.draw(next()));
        let mass_seed = (next() * (1u64 << 53) as f64) as u64;
        // Without a spread the seed changes nothing: the nominal world
        // stays recognisably nominal.
        let mass_seed = if self.mass_spread > 0.0 { mass_seed } else { 0 };
        let hardware = Hardware {
            mass_scale: self.mass_scale.draw(next()),
            mass_spread: self.mass_spread,
            mass_seed,
            torque_scale: self.torque_scale.draw(next()),
            speed_scale: self.speed_scale.draw(next()),
            servo_lag_s: self.servo_lag_s.draw(next()),
            backlash_rad: self.backlash_rad.draw(next()),
            torque_sags: false,
        };
        let world = World {
            engine,
            engines: if self.paired_engines {
                self.engines.clone()
            } else {
                Vec::new()
            },
            slowest_engine: self.paired_engines && self.slowest_engine,
            hardware,
            position_noise_m: self.position_noise_m.draw(next()),
        };
        (world, friction)
    }
}

/// The world distributions a run can learn over, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Worlds {
    /// One world, the host's own: the thesis' protocol, for its figures.
    #[default]
    Single,
    /// [`WorldDistribution::robust`].
    Robust,
    /// [`WorldDistribution::paired`].
    Paired,
    /// [`WorldDistribution::paired_slowest`].
    PairedSlowest,
}

impl Worlds {
    pub const ALL: [Worlds; 4] = [
        Worlds::Single,
        Worlds::Robust,
        Worlds::Paired,
        Worlds::PairedSlowest,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Worlds::Single => "single",
            Worlds::Robust => "robust",
            Worlds::Paired => "paired",
            Worlds::PairedSlowest => "paired-slowest",
        }
    }

    /// The worlds named `text` (`""` is the single world).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        if text.is_empty() {
            return Some(Worlds::Single);
        }
        Self::ALL.into_iter().find(|w| w.name() == text)
    }

    /// What is drawn from; `None` for the single world (nothing is).
    #[must_use]
    pub fn distribution(self) -> Option<WorldDistribution> {
        match self {
            Worlds::Single => None,
            Worlds::Robust => Some(WorldDistribution::robust()),
            Worlds::Paired => Some(WorldDistribution::paired()),
            Worlds::PairedSlowest => Some(WorldDistribution::paired_slowest()),
        }
    }

    /// What an answer's held-out walks are drawn from: the robust worlds,
    /// one engine a walk, so that each engine's figure is its own.
    #[must_use]
    pub fn held_out_distribution(self) -> Option<WorldDistribution> {
        match self {
            Worlds::Single => None,
            Worlds::Robust | Worlds::Paired | Worlds::PairedSlowest => {
                Some(WorldDistribution::robust())
            }
        }
    }
}

/// A world distribution nobody knows by that name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown worlds {0:?} (known: single, robust, paired, paired-slowest)")]
pub struct UnknownWorlds(pub String);

impl std::str::FromStr for Worlds {
    type Err = UnknownWorlds;

    fn from_str(text: &str) -> Result<Self, UnknownWorlds> {
        Worlds::parse(text).ok_or_else(|| UnknownWorlds(text.to_owned()))
    }
}

impl std::fmt::Display for Worlds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The world the `proposal`-th candidate of the run seeded `run_seed`
/// walks in is drawn from this seed: a stream of its own beside the starts'
/// ([`crate::starts::candidate_seed`]), never a held-out seed, so the
/// worlds a run learns in are never the ones its answer is judged in.
#[must_use]
pub fn candidate_world_seed(run_seed: u64, proposal: u64) -> u64 {
    crate::starts::candidate_seed(run_seed ^ 0x776f_726c_6473, proposal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_world_and_draws_stay_in_range() {
        let d = WorldDistribution::robust();
        assert_eq!(d.draw(7), d.draw(7));
        assert_ne!(d.draw(7), d.draw(8));
        let mut engines = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (w, mu) = d.draw(seed);
            w.check().unwrap();
            let mu = mu.unwrap();
            assert!((0.5..=1.1).contains(&mu), "{mu}");
            assert!((0.85..=1.15).contains(&w.hardware.mass_scale));
            assert!((0.0..=0.06).contains(&w.hardware.servo_lag_s));
            for m in 0..9 {
                let f = w.hardware.mass_factor(m);
                assert!(
                    (0.85 * 0.9 - 1e-12..=1.15 * 1.1 + 1e-12).contains(&f),
                    "{f}"
                );
            }
            engines.insert(w.engine.unwrap());
        }
        assert_eq!(engines.len(), 2, "both engines are drawn");
        // Paired worlds walk both engines with the same drawn hardware.
        let (paired, mu) = WorldDistribution::paired().draw(7);
        assert_eq!((paired.engine.as_deref(), paired.engines.len()), (None, 2));
        assert_eq!(paired.hardware, d.draw(7).0.hardware);
        assert_eq!(mu, d.draw(7).1);
        paired.check().unwrap();
        let both = World {
            engine: Some("rapier".into()),
            ..paired
        };
        assert_eq!(both.check().unwrap_err().field, "world.engines");
        // The single world draws the nominal world every time.
        let (w, mu) = WorldDistribution::default().draw(3);
        assert!(w.is_nominal() && mu.is_none());
        assert_eq!(w.hardware.mass_factor(4), 1.0);
    }

    #[test]
    fn worlds_no_robot_could_have_are_refused() {
        for (w, field) in [
            (
                World {
                    hardware: Hardware {
                        mass_scale: 0.0,
                        ..Hardware::default()
                    },
                    ..World::default()
                },
                "mass_scale",
            ),
            (
                World {
                    hardware: Hardware {
                        torque_scale: f64::NAN,
                        ..Hardware::default()
                    },
                    ..World::default()
                },
                "torque_scale",
            ),
            (
                World {
                    hardware: Hardware {
                        servo_lag_s: 2.0,
                        ..Hardware::default()
                    },
                    ..World::default()
                },
                "servo_lag_s",
            ),
            (
                World {
                    hardware: Hardware {
                        backlash_rad: -0.1,
                        ..Hardware::default()
                    },
                    ..World::default()
                },
                "backlash_rad",
            ),
            (
                World {
                    hardware: Hardware {
                        mass_spread: 0.95,
                        ..Hardware::default()
                    },
                    ..World::default()
                },
                "mass_spread",
            ),
        ] {
            let e = w.check().unwrap_err();
            assert_eq!(e.field, format!("world.{field}"), "{e}");
            assert!(e.to_string().starts_with(&format!("world.{field}:")), "{e}");
        }
    }
}
