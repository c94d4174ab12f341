//! Gait evaluation as in thesis 6.2.1: the robot walks, and its velocity is
//! the straight-line distance in the ground plane travelled by the central
//! module between the end of the warm-up (8 s) and the end of the walk,
//! divided by that time span.

use crate::sim::{SimError, SimSettings, Simulation};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use yamor_core::{ModuleId, Morphology, RobotConfig};
use yamor_snp::{DefectMode, SnpMessage, flags};

/// The state of the world a walk starts in, beyond the robot and its gait:
/// what lifelong learning (thesis 7.5) must reproduce on every evaluation
/// host to relearn for the robot as it now is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Situation {
    /// The robot starts upside down (dropped from a few centimetres).
    pub upside_down: bool,
    /// Motor defects (C.2.6).
    pub defects: Vec<(ModuleId, DefectMode)>,
    /// Modules whose CPG node is dead: their oscillators are switched off
    /// and their joints hold the angle the oscillator stopped at.
    pub dead_cpg: Vec<ModuleId>,
}

impl Situation {
    /// Brings a freshly configured `sim` into this situation.
    pub fn apply(&self, sim: &mut Simulation) -> Result<(), SimError> {
        for &(id, mode) in &self.defects {
            sim.set_defect(id, mode)?;
        }
        for &id in &self.dead_cpg {
            let wire = u8::try_from(id).map_err(|_| SimError::IdOutOfRange(id))?;
            sim.deliver(
                wire,
                &SnpMessage::Control {
                    on: 0,
                    off: flags::CPG,
                },
            )?;
        }
        if self.upside_down {
            sim.drop_robot(0.02, true)?;
        }
        Ok(())
    }
}

/// When to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvaluationSpec {
    /// Time for messages to arrive and the CPG to converge (s).
    pub warmup: f64,
    /// Length of the measured window (s).
    pub measure: f64,
    /// Trajectory sampling interval (s); 0 records every tick.
    pub sample_interval: f64,
}

impl Default for EvaluationSpec {
    /// The thesis' quadruped protocol: 8 s warm-up, 12 s measured.
    fn default() -> Self {
        Self {
            warmup: 8.0,
            measure: 12.0,
            sample_interval: 0.01,
        }
    }
}

impl EvaluationSpec {
    /// A spec whose walk lasts `seconds` in total, with the default warm-up.
    pub fn lasting(seconds: f64) -> Result<Self, SimError> {
        let spec = Self {
            measure: seconds - Self::default().warmup,
            ..Self::default()
        };
        spec.check()?;
        Ok(spec)
    }

    fn check(&self) -> Result<(), SimError> {
        let bad = |name, value, expected| {
            Err(SimError::OutOfRange {
                name,
                value,
                expected,
            })
        };
        if !(self.warmup >= 0.0 && self.warmup <= 3600.0) {
            return bad("warm-up", self.warmup, "in [0, 3600] s");
        }
        if !(self.measure > 0.0 && self.measure <= 36000.0) {
            return bad(
                "measured window",
                self.measure,
                "in (0, 36000] s (the walk must last longer than the 8 s warm-up)",
            );
        }
        if !(self.sample_interval >= 0.0 && self.sample_interval.is_finite()) {
            return bad("sample interval", self.sample_interval, "finite and >= 0 s");
        }
        Ok(())
    }
}

/// One trajectory sample of the central module.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

/// The outcome of one walk.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Planar velocity (m/s) over the measured window.
    pub velocity: f64,
    /// Planar distance (m) over the measured window.
    pub distance: f64,
    pub start: Sample,
    pub end: Sample,
    pub trajectory: Vec<Sample>,
    pub physics_steps: u64,
    /// Wall-clock time spent simulating (not part of the result's identity).
    pub wall_time: Duration,
}

impl Evaluation {
    /// Simulated seconds per wall-clock second.
    #[must_use]
    pub fn real_time_factor(&self) -> f64 {
        self.end.t / self.wall_time.as_secs_f64().max(1e-9)
    }

    /// Writes the trajectory as CSV with a header (`t,x,y,z`, SI units).
    pub fn write_csv(&self, mut out: impl Write) -> std::io::Result<()> {
        writeln!(out, "t,x,y,z")?;
        for s in &self.trajectory {
            writeln!(out, "{:.4},{:.6},{:.6},{:.6}", s.t, s.x, s.y, s.z)?;
        }
        Ok(())
    }
}

fn sample(sim: &Simulation) -> Sample {
    let p = sim.robot_position();
    Sample {
        t: sim.time(),
        x: f64::from(p.x),
        y: f64::from(p.y),
        z: f64::from(p.z),
    }
}

/// Builds the robot, configures the gait over SNP at t = 0, walks and measures.
pub fn evaluate(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: EvaluationSpec,
) -> Result<Evaluation, SimError> {
    evaluate_cancellable(morphology, gait, settings, spec, &AtomicBool::new(false))
}

/// [`evaluate`] that gives up with [`SimError::Cancelled`] soon after
/// `cancel` is set (checked every simulated tenth of a second), so a host can
/// stop a walk nobody waits for any more.
pub fn evaluate_cancellable(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: EvaluationSpec,
    cancel: &AtomicBool,
) -> Result<Evaluation, SimError> {
    evaluate_in(
        morphology,
        gait,
        settings,
        spec,
        &Situation::default(),
        cancel,
    )
}

/// [`evaluate_cancellable`] starting from `situation` instead of a healthy
/// robot standing on its feet.
pub fn evaluate_in(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: EvaluationSpec,
    situation: &Situation,
    cancel: &AtomicBool,
) -> Result<Evaluation, SimError> {
    spec.check()?;
    let check_every = ((0.1 / settings.dt).ceil() as u64).max(1);
    let started = Instant::now();
    let mut sim = Simulation::new(morphology, settings)?;
    sim.configure(gait)?;
    situation.apply(&mut sim)?;
    let total = spec.warmup + spec.measure;
    let mut trajectory = vec![sample(&sim)];
    let mut start = None;
    let mut next_sample = spec.sample_interval;
    while sim.time() + settings.dt / 2.0 <= total {
        if sim.ticks() % check_every == 0 && cancel.load(Ordering::Relaxed) {
            return Err(SimError::Cancelled(sim.time()));
        }
        sim.tick();
        if start.is_none() && sim.time() + settings.dt / 2.0 >= spec.warmup {
            start = Some(sample(&sim));
        }
        if sim.time() + settings.dt / 2.0 >= next_sample {
            trajectory.push(sample(&sim));
            next_sample += spec.sample_interval.max(settings.dt);
        }
    }
    let end = sample(&sim);
    if trajectory.last() != Some(&end) {
        trajectory.push(end);
    }
    let start = start.unwrap_or(trajectory[0]);
    let distance = (end.x - start.x).hypot(end.y - start.y);
    Ok(Evaluation {
        velocity: distance / (end.t - start.t).max(f64::EPSILON),
        distance,
        start,
        end,
        trajectory,
        physics_steps: sim.ticks(),
        wall_time: started.elapsed(),
    })
}
