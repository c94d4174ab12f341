//! Anomaly detection by velocity (thesis 7.3).
//!
//! The robot's velocity is measured over three CPG periods, which averages
//! out the quasi-periodic wobble of a gait. With `v` the stored velocity,
//! `v⁺` the last measurement and `t` the threshold: while `|v − v⁺| < t`,
//! `v := 0.9 v + 0.1 v⁺` (slow drift is normal life); otherwise an anomaly is
//! signalled. Physical changes the robot knows of directly (a module added
//! or removed, a motor reported dead) are anomalies without measuring.

use serde::{Deserialize, Serialize};

/// What a measurement means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// The first measurement: it becomes the stored velocity.
    Learning,
    /// Within the threshold; the stored velocity drifted towards it.
    Normal { velocity: f64 },
    /// Outside the threshold.
    Anomaly { expected: f64, measured: f64 },
}

/// What caused an anomaly, when known (7.3's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Symptom {
    /// The velocity changed beyond the threshold for no known reason
    /// (motor or module defect, falling over, ground change).
    VelocityDrop,
    VelocityRise,
    /// The robot's up axis turned over (a fall, thesis 7.5.2).
    TurnedOver,
    ModuleInserted,
    ModuleRemoved,
    /// A motor or a CPG node reported dead.
    MotorDefect,
}

impl Symptom {
    pub const ALL: [Symptom; 6] = [
        Symptom::VelocityDrop,
        Symptom::VelocityRise,
        Symptom::TurnedOver,
        Symptom::ModuleInserted,
        Symptom::ModuleRemoved,
        Symptom::MotorDefect,
    ];

    /// The name stored in the gaits database.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Symptom::VelocityDrop => "velocity-drop",
            Symptom::VelocityRise => "velocity-rise",
            Symptom::TurnedOver => "turned-over",
            Symptom::ModuleInserted => "module-inserted",
            Symptom::ModuleRemoved => "module-removed",
            Symptom::MotorDefect => "motor-defect",
        }
    }

    /// The inverse of [`Symptom::as_str`].
    #[must_use]
    pub fn parse(name: &str) -> Option<Symptom> {
        Symptom::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// The velocity monitor of 7.3.
#[derive(Debug, Clone, PartialEq)]
pub struct Monitor {
    threshold: f64,
    stored: Option<f64>,
}

/// The thesis' smoothing weight of the stored velocity.
pub const KEEP: f64 = 0.9;

impl Monitor {
    /// `threshold` in m/s.
    #[must_use]
    pub fn new(threshold: f64) -> Self {
        Monitor {
            threshold: threshold.abs(),
            stored: None,
        }
    }

    /// The stored velocity `v`.
    #[must_use]
    pub fn expected(&self) -> Option<f64> {
        self.stored
    }

    /// Judges one measurement `v⁺` (m/s over three CPG periods).
    pub fn observe(&mut self, measured: f64) -> Verdict {
        match self.stored {
            None => {
                self.stored = Some(measured);
                Verdict::Learning
            }
            Some(v) if (v - measured).abs() < self.threshold => {
                let v = KEEP * v + (1.0 - KEEP) * measured;
                self.stored = Some(v);
                Verdict::Normal { velocity: v }
            }
            Some(v) => Verdict::Anomaly {
                expected: v,
                measured,
            },
        }
    }

    /// Starts over after an adaptation: the next measurement is the new
    /// normal.
    pub fn reset(&mut self) {
        self.stored = None;
    }

    /// Starts over expecting `velocity` (a gait whose velocity is known).
    pub fn expect(&mut self, velocity: f64) {
        self.stored = Some(velocity);
    }
}

/// Seconds of three periods of an oscillator at `omega` rad/s.
#[must_use]
pub fn three_periods(omega: f64) -> f64 {
    3.0 * std::f64::consts::TAU / omega.abs().max(1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_changes_drift_and_large_ones_are_anomalies() {
        let mut m = Monitor::new(0.01);
        assert_eq!(m.observe(0.05), Verdict::Learning);
        let Verdict::Normal { velocity } = m.observe(0.055) else {
            panic!("within the threshold")
        };
        assert!((velocity - (0.9 * 0.05 + 0.1 * 0.055)).abs() < 1e-12);
        assert_eq!(
            m.observe(0.02),
            Verdict::Anomaly {
                expected: velocity,
                measured: 0.02
            }
        );
        // An anomaly does not move the stored velocity.
        assert_eq!(m.expected(), Some(velocity));
        // A rise beyond the threshold is an anomaly too.
        assert!(matches!(m.observe(0.09), Verdict::Anomaly { .. }));
        m.reset();
        assert_eq!(m.observe(0.02), Verdict::Learning);
    }

    #[test]
    fn a_slow_drift_never_triggers() {
        let mut m = Monitor::new(0.01);
        let mut v = 0.05;
        m.observe(v);
        for _ in 0..200 {
            v -= 0.0004;
            assert!(matches!(m.observe(v), Verdict::Normal { .. }), "{v}");
        }
    }

    #[test]
    fn symptom_names_round_trip() {
        for s in Symptom::ALL {
            assert_eq!(Symptom::parse(s.as_str()), Some(s));
        }
        assert_eq!(Symptom::parse("sneeze"), None);
    }

    #[test]
    fn three_periods_of_the_quadruped() {
        assert!((three_periods(5.0) - 3.7699).abs() < 1e-3);
    }
}
