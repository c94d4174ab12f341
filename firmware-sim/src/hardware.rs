//! What stands between the firmware's set-point and the hinge on a robot
//! as built, beyond the model's ideal servo: the servo acts on a set-point
//! late ([`Hardware::servo_lag_s`]), and its gearbox has play
//! ([`Hardware::backlash_rad`]) — the two causes thesis 6.3 names for the
//! Webots gait that could not walk on the real YaMoR. Masses, torque and
//! speed are scaled where the simulation builds bodies and commands servos.

use std::collections::VecDeque;

use yamor_core::world::Hardware;

/// The emulated real robot's hardware ([`Hardware::EMULATED`]).
pub const EMULATED_HARDWARE: Hardware = Hardware::EMULATED;

/// Every module's servo path: a delay line of set-points and the gearbox's
/// output position.
#[derive(Debug, Clone)]
pub(crate) struct ServoPath {
    /// Set-points late by this many ticks (fractional: interpolated).
    delay_ticks: f64,
    half_play: f32,
    /// Each module's recent set-points, the newest last.
    history: Vec<VecDeque<f32>>,
    /// Each module's gearbox output, within half the play of the motor.
    output: Vec<f32>,
}

impl ServoPath {
    pub(crate) fn new(modules: usize, hardware: &Hardware, dt: f64) -> Self {
        let delay_ticks = hardware.servo_lag_s / dt;
        let keep = delay_ticks.ceil() as usize + 1;
        ServoPath {
            delay_ticks,
            half_play: (hardware.backlash_rad / 2.0) as f32,
            history: vec![VecDeque::from(vec![0.0; keep]); modules],
            output: vec![0.0; modules],
        }
    }

    /// The set-point module `i`'s servo acts on now, given the firmware's
    /// `setpoint` this tick: the one of `servo_lag_s` ago (interpolated
    /// between ticks; the robot at rest before its first tick).
    pub(crate) fn lagged(&mut self, i: usize, setpoint: f32) -> f32 {
        let history = &mut self.history[i];
        history.pop_front();
        history.push_back(setpoint);
        let newest = history.len() - 1;
        let whole = self.delay_ticks.floor() as usize;
        let frac = (self.delay_ticks - whole as f64) as f32;
        let at = |k: usize| history[newest.saturating_sub(k)];
        at(whole) * (1.0 - frac) + at(whole + 1) * frac
    }

    /// Where module `i`'s gearbox holds the hinge while its motor is at
    /// `motor`: it follows only once the motor has taken up the play.
    pub(crate) fn through_play(&mut self, i: usize, motor: f32) -> f32 {
        let out = &mut self.output[i];
        *out = out.clamp(motor - self.half_play, motor + self.half_play);
        *out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lagging_servo_acts_on_the_set_point_of_its_lag_ago() {
        let hardware = Hardware {
            servo_lag_s: 0.025,
            ..Hardware::default()
        };
        // 2.5 ticks of 10 ms late.
        let mut path = ServoPath::new(1, &hardware, 0.01);
        let seen: Vec<f32> = (1..=6).map(|t| path.lagged(0, t as f32)).collect();
        // At tick t the servo sees t - 2.5: rest (0) until there is history.
        assert_eq!(seen[..2], [0.0, 0.0]);
        assert!((seen[2] - 0.5).abs() < 1e-6, "{seen:?}");
        assert!((seen[5] - 3.5).abs() < 1e-6, "{seen:?}");
        // Without lag the set-point passes straight through.
        let mut prompt = ServoPath::new(1, &Hardware::default(), 0.01);
        assert_eq!(prompt.lagged(0, 0.7), 0.7);
    }

    #[test]
    fn the_gearbox_follows_only_once_the_play_is_taken_up() {
        let hardware = Hardware {
            backlash_rad: 0.2,
            ..Hardware::default()
        };
        let mut path = ServoPath::new(1, &hardware, 0.01);
        assert_eq!(path.through_play(0, 0.05), 0.0, "inside the play");
        assert!((path.through_play(0, 0.3) - 0.2).abs() < 1e-6);
        // Turning back, the output stays until the play is crossed.
        assert!((path.through_play(0, 0.15) - 0.2).abs() < 1e-6);
        assert!((path.through_play(0, 0.0) - 0.1).abs() < 1e-6);
        let mut tight = ServoPath::new(1, &Hardware::default(), 0.01);
        assert_eq!(tight.through_play(0, 0.3), 0.3);
    }
}
