//! The CPG of thesis section 6.1: one amplitude-controlled phase oscillator
//! per active module, coupled through phase biases.
//!
//! ```text
//! φ̇ᵢ = ωᵢ + Σⱼ wᵢⱼ rⱼ sin(φⱼ − φᵢ − ϕᵢⱼ)
//! r̈ᵢ = a_r (a_r/4 (Rᵢ − rᵢ) − ṙᵢ)
//! ẍᵢ = a_x (a_x/4 (Xᵢ − xᵢ) − ẋᵢ)
//! θᵢ = xᵢ + rᵢ cos φᵢ          (Motion::Oscillate, the thesis)
//! θᵢ = xᵢ + φᵢ                 (Motion::Rotate: a continuous joint)
//! ```
//!
//! A rotating joint turns round at its oscillator's phase, unwrapped
//! (whole turns are counted); its amplitude no longer shapes the joint but
//! still weighs its pull on the oscillators coupled to it.
//!
//! with a_r = a_x = 4 rad/s. The real modules exchange their states over
//! Bluetooth every tick; the simulator treats that exchange as instantaneous,
//! so the coupled system is integrated as one ODE with fixed-step RK4. That
//! keeps the coupling terms inside every RK4 stage instead of freezing the
//! neighbours for a whole tick.

use crate::config::Motion;

/// Convergence gain of the amplitude equation (rad/s).
pub const A_R: f64 = 4.0;
/// Convergence gain of the offset equation (rad/s).
pub const A_X: f64 = 4.0;

/// The control parameters of one oscillator.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OscillatorParams {
    /// Target amplitude R (rad).
    pub amplitude: f64,
    /// Target offset X (rad).
    pub offset: f64,
    /// Intrinsic frequency ω (rad/s).
    pub omega: f64,
    pub motion: Motion,
}

/// The state variables of one oscillator.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OscillatorState {
    /// φ in [0, 2π): only phase differences and cos φ matter to the
    /// equations, and wrapping keeps precision over hours of walking.
    pub phase: f64,
    /// Whole turns the phase has made (it wrapped this often), so that a
    /// rotating joint's angle is continuous.
    pub turns: f64,
    pub r: f64,
    pub dr: f64,
    pub x: f64,
    pub dx: f64,
}

impl OscillatorState {
    fn axpy(self, k: f64, d: OscillatorState) -> OscillatorState {
        OscillatorState {
            phase: self.phase + k * d.phase,
            turns: self.turns,
            r: self.r + k * d.r,
            dr: self.dr + k * d.dr,
            x: self.x + k * d.x,
            dx: self.dx + k * d.dx,
        }
    }

    /// The set-point before limit angles: θ = x + r cos φ, or x + φ
    /// (unwrapped) for a rotating joint.
    #[must_use]
    pub fn output(&self, motion: Motion) -> f64 {
        match motion {
            Motion::Oscillate => self.x + self.r * self.phase.cos(),
            Motion::Rotate => self.x + self.phase + std::f64::consts::TAU * self.turns,
        }
    }
}

/// One coupling term in the equation of the oscillator that owns it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coupling {
    /// Index of the source oscillator j.
    pub from: usize,
    /// Weight wᵢⱼ.
    pub weight: f64,
    /// Phase bias ϕᵢⱼ (rad).
    pub phase_bias: f64,
}

/// A network of coupled oscillators, integrated together.
#[derive(Debug, Clone, Default)]
pub struct CpgNetwork {
    pub params: Vec<OscillatorParams>,
    /// `couplings[i]` are the terms of oscillator i's phase equation.
    pub couplings: Vec<Vec<Coupling>>,
    /// Oscillators whose CPG is switched off keep their state frozen.
    pub running: Vec<bool>,
    pub states: Vec<OscillatorState>,
    scratch: [Vec<OscillatorState>; 5],
}

impl CpgNetwork {
    /// A network of `n` uncoupled oscillators at rest, all running.
    #[must_use]
    pub fn new(n: usize) -> Self {
        Self {
            params: vec![OscillatorParams::default(); n],
            couplings: vec![Vec::new(); n],
            running: vec![true; n],
            states: vec![OscillatorState::default(); n],
            scratch: Default::default(),
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.states.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Set-point of oscillator `i` before limit angles.
    #[must_use]
    pub fn output(&self, i: usize) -> f64 {
        self.states[i].output(self.params[i].motion)
    }

    fn derivative(&self, s: &[OscillatorState], out: &mut [OscillatorState]) {
        for (i, d) in out.iter_mut().enumerate() {
            if !self.running[i] {
                *d = OscillatorState::default();
                continue;
            }
            let p = &self.params[i];
            let me = &s[i];
            let coupling: f64 = self.couplings[i]
                .iter()
                .map(|c| {
                    let other = &s[c.from];
                    c.weight * other.r * (other.phase - me.phase - c.phase_bias).sin()
                })
                .sum();
            *d = OscillatorState {
                phase: p.omega + coupling,
                turns: 0.0,
                r: me.dr,
                dr: A_R * (A_R / 4.0 * (p.amplitude - me.r) - me.dr),
                x: me.dx,
                dx: A_X * (A_X / 4.0 * (p.offset - me.x) - me.dx),
            };
        }
    }

    /// Advances every oscillator by `dt` seconds with one classic RK4 step.
    pub fn step(&mut self, dt: f64) {
        let n = self.len();
        let mut scratch = std::mem::take(&mut self.scratch);
        for buffer in &mut scratch {
            buffer.resize(n, OscillatorState::default());
        }
        let [k1, k2, k3, k4, probe] = &mut scratch;
        self.derivative(&self.states, k1);
        for i in 0..n {
            probe[i] = self.states[i].axpy(dt / 2.0, k1[i]);
        }
        self.derivative(probe, k2);
        for i in 0..n {
            probe[i] = self.states[i].axpy(dt / 2.0, k2[i]);
        }
        self.derivative(probe, k3);
        for i in 0..n {
            probe[i] = self.states[i].axpy(dt, k3[i]);
        }
        self.derivative(probe, k4);
        for i in 0..n {
            let s = self.states[i]
                .axpy(dt / 6.0, k1[i])
                .axpy(dt / 3.0, k2[i])
                .axpy(dt / 3.0, k3[i])
                .axpy(dt / 6.0, k4[i]);
            let tau = std::f64::consts::TAU;
            self.states[i] = OscillatorState {
                phase: s.phase.rem_euclid(tau),
                turns: s.turns + s.phase.div_euclid(tau),
                ..s
            };
        }
        self.scratch = scratch;
    }
}

/// Wraps an angle into (−π, π].
#[must_use]
pub fn wrap_angle(a: f64) -> f64 {
    use std::f64::consts::{PI, TAU};
    let w = a.rem_euclid(TAU);
    if w > PI { w - TAU } else { w }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn pair(bias: f64, weight: f64) -> CpgNetwork {
        let mut net = CpgNetwork::new(2);
        for p in &mut net.params {
            *p = OscillatorParams {
                amplitude: 0.5,
                offset: 0.0,
                omega: 2.0,
                motion: Motion::Oscillate,
            };
        }
        net.couplings[0].push(Coupling {
            from: 1,
            weight,
            phase_bias: bias,
        });
        net.couplings[1].push(Coupling {
            from: 0,
            weight,
            phase_bias: -bias,
        });
        net.states[0].phase = 0.3;
        net.states[1].phase = 2.9;
        net
    }

    #[test]
    fn coupled_pair_locks_to_requested_lag() {
        for bias in [PI / 2.0, -1.0, 2.5, PI] {
            let mut net = pair(bias, 1.0);
            for _ in 0..3000 {
                net.step(0.01);
            }
            let lag = wrap_angle(net.states[1].phase - net.states[0].phase);
            assert!(
                wrap_angle(lag - bias).abs() < 1e-3,
                "bias {bias}: locked at {lag}"
            );
        }
    }

    #[test]
    fn uncoupled_pair_keeps_its_initial_lag() {
        let mut net = pair(PI / 2.0, 0.0);
        let before = wrap_angle(net.states[1].phase - net.states[0].phase);
        for _ in 0..1000 {
            net.step(0.01);
        }
        let after = wrap_angle(net.states[1].phase - net.states[0].phase);
        assert!((before - after).abs() < 1e-9);
    }

    #[test]
    fn amplitude_and_offset_converge_to_targets() {
        let mut net = CpgNetwork::new(1);
        net.params[0] = OscillatorParams {
            amplitude: 0.8,
            offset: -0.4,
            omega: 3.0,
            motion: Motion::Oscillate,
        };
        for _ in 0..800 {
            net.step(0.01);
        }
        let s = net.states[0];
        assert!((s.r - 0.8).abs() < 1e-4, "r = {}", s.r);
        assert!((s.x + 0.4).abs() < 1e-4, "x = {}", s.x);
        assert!(s.dr.abs() < 1e-3 && s.dx.abs() < 1e-3);
    }

    #[test]
    fn rk4_matches_closed_form_of_critically_damped_amplitude() {
        // From r(0) = ṙ(0) = 0 the solution is R (1 − (1 + a t/2) e^(−a t/2)).
        let mut net = CpgNetwork::new(1);
        net.params[0].amplitude = 1.0;
        let dt = 0.01;
        for step in 1..=200 {
            net.step(dt);
            let t = f64::from(step) * dt;
            let exact = 1.0 - (1.0 + A_R * t / 2.0) * (-A_R * t / 2.0).exp();
            assert!((net.states[0].r - exact).abs() < 1e-8, "t={t}");
        }
    }

    #[test]
    fn free_oscillator_advances_at_omega_and_outputs_cosine() {
        let mut net = CpgNetwork::new(1);
        net.params[0] = OscillatorParams {
            amplitude: 0.0,
            offset: 0.0,
            omega: 1.5,
            motion: Motion::Oscillate,
        };
        net.states[0].r = 0.0;
        for _ in 0..100 {
            net.step(0.01);
        }
        assert!((net.states[0].phase - 1.5).abs() < 1e-12);
        net.states[0].r = 0.7;
        net.states[0].x = 0.1;
        assert!((net.output(0) - (0.1 + 0.7 * 1.5f64.cos())).abs() < 1e-12);
    }

    #[test]
    fn stopped_oscillator_is_frozen() {
        let mut net = pair(1.0, 1.0);
        net.running[1] = false;
        let frozen = net.states[1];
        for _ in 0..100 {
            net.step(0.01);
        }
        assert_eq!(net.states[1], frozen);
        assert_ne!(net.states[0], pair(1.0, 1.0).states[0]);
    }

    #[test]
    fn a_rotating_joint_turns_round_continuously_at_omega() {
        let mut net = CpgNetwork::new(1);
        net.params[0] = OscillatorParams {
            amplitude: 0.5,
            offset: 0.3,
            omega: 2.0,
            motion: Motion::Rotate,
        };
        net.states[0].x = 0.3;
        let start = net.output(0);
        let mut last = start;
        for _ in 0..1000 {
            net.step(0.01);
            let now = net.output(0);
            // Continuous through every wrap of the phase: never a jump.
            assert!((now - last - 0.02).abs() < 1e-9, "{last} -> {now}");
            last = now;
        }
        // Ten seconds at 2 rad/s: twenty radians, over three whole turns.
        assert!((last - start - 20.0).abs() < 1e-6, "{}", last - start);
        assert!(net.states[0].turns >= 3.0);
        assert!(net.states[0].phase < std::f64::consts::TAU);
    }
}
