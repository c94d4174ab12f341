//! Gait evaluation as in thesis 6.2.1: the robot walks, and its velocity is
//! the straight-line distance in the ground plane travelled by the central
//! module between the end of the warm-up and the end of the walk, divided by
//! that time span. The spec, the samples, the formula and the outcome are
//! `yamor_core::evaluation`'s; this module only walks.

use crate::sim::{SimError, SimSettings, Simulation};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use yamor_core::evaluation::{EvaluationSpec, Outcome, Sample, Situation};
use yamor_core::{Morphology, RobotConfig};
use yamor_snp::{SnpMessage, flags};

/// Brings a freshly configured `sim` into `situation`.
pub fn enter(sim: &mut Simulation, situation: &Situation) -> Result<(), SimError> {
    for &(id, mode) in &situation.defects {
        sim.set_defect(id, mode)?;
    }
    switch_off_dead_cpgs(sim, &situation.dead_cpg)?;
    if situation.upside_down {
        sim.drop_robot(0.02, true)?;
    }
    Ok(())
}

/// Loads `gait` on a robot that is walking (a lead-in's end): as on the
/// robot, the new configuration turns every CPG on, so the dead ones are
/// switched off again.
fn switch_gait(
    sim: &mut Simulation,
    gait: &RobotConfig,
    situation: &Situation,
) -> Result<(), SimError> {
    sim.configure(gait)?;
    switch_off_dead_cpgs(sim, &situation.dead_cpg)
}

fn switch_off_dead_cpgs(
    sim: &mut Simulation,
    dead: &[yamor_core::ModuleId],
) -> Result<(), SimError> {
    for &id in dead {
        let wire = u8::try_from(id).map_err(|_| SimError::IdOutOfRange(id))?;
        sim.deliver(
            wire,
            &SnpMessage::Control {
                on: 0,
                off: flags::CPG,
            },
        )?;
    }
    Ok(())
}

/// Writes a trajectory as CSV with a header (`t,x,y,z`, SI units).
pub fn write_trajectory_csv(samples: &[Sample], mut out: impl Write) -> std::io::Result<()> {
    writeln!(out, "t,x,y,z")?;
    for s in samples {
        writeln!(out, "{:.4},{:.6},{:.6},{:.6}", s.t, s.x, s.y, s.z)?;
    }
    Ok(())
}

/// Builds the robot, configures the gait over SNP at t = 0, walks and
/// measures as `spec` says. The spec's seed and ground friction (when it
/// names one) override `settings`; with `repeats > 1` the velocity is the
/// mean over seeds `seed`, `seed + 1`, … and the first walk's trajectory
/// stands for all.
pub fn evaluate(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
) -> Result<Outcome, SimError> {
    evaluate_cancellable(morphology, gait, settings, spec, &AtomicBool::new(false))
}

/// [`evaluate`] that gives up with [`SimError::Cancelled`] soon after
/// `cancel` is set (checked every simulated tenth of a second), so a host can
/// stop a walk nobody waits for any more.
pub fn evaluate_cancellable(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    cancel: &AtomicBool,
) -> Result<Outcome, SimError> {
    let settings = walk_settings(settings, spec)?;
    let repeats = spec.repeats.max(1);
    let mut outcome = walk(morphology, gait, settings, spec, cancel, &mut |_| ())?;
    let mut velocity_sum = outcome.velocity;
    for k in 1..repeats {
        let mut again = settings;
        again.seed = settings.seed.wrapping_add(u64::from(k));
        let other = walk(morphology, gait, again, spec, cancel, &mut |_| ())?;
        velocity_sum += other.velocity;
        outcome.physics_steps += other.physics_steps;
        outcome.wall += other.wall;
        outcome.simulated += other.simulated;
    }
    outcome.velocity = velocity_sum / f64::from(repeats);
    Ok(outcome)
}

/// One walk of [`evaluate`] (its first seed) that shows the simulation to
/// `on_tick` after every tick: for benchmarks that record what the servos
/// were told or compare engines along the way.
pub fn evaluate_observed(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    on_tick: &mut dyn FnMut(&Simulation),
) -> Result<Outcome, SimError> {
    let settings = walk_settings(settings, spec)?;
    walk(
        morphology,
        gait,
        settings,
        spec,
        &AtomicBool::new(false),
        on_tick,
    )
}

/// Checks `spec`; its seed and ground friction (when it names one)
/// override `settings`.
fn walk_settings(
    mut settings: SimSettings,
    spec: &EvaluationSpec,
) -> Result<SimSettings, SimError> {
    spec.check().map_err(|e| SimError::OutOfRange {
        name: e.field,
        value: e.value,
        expected: e.expected,
    })?;
    settings.seed = spec.seed;
    if let Some(mu) = spec.ground_friction {
        settings.ground_friction = mu;
    }
    Ok(settings)
}

/// One walk from `spec.situation`.
fn walk(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    cancel: &AtomicBool,
    on_tick: &mut dyn FnMut(&Simulation),
) -> Result<Outcome, SimError> {
    let check_every = ((0.1 / settings.dt).ceil() as u64).max(1);
    let started = Instant::now();
    let mut sim = Simulation::new(morphology, settings)?;
    let lead_in = spec.situation.lead_in.as_ref();
    sim.configure(lead_in.map_or(gait, |l| &l.gait))?;
    enter(&mut sim, &spec.situation)?;
    let total = spec.walk_seconds();
    let switch_at = spec.lead_in_seconds();
    let measure_from = switch_at + spec.warmup;
    let mut switched = lead_in.is_none();
    let mut trajectory = vec![sim.robot_sample()];
    let mut start = None;
    let mut next_sample = spec.sample_interval;
    while sim.time() + settings.dt / 2.0 <= total {
        if sim.ticks() % check_every == 0 && cancel.load(Ordering::Relaxed) {
            return Err(SimError::Cancelled(sim.time()));
        }
        if !switched && sim.time() + settings.dt / 2.0 >= switch_at {
            switch_gait(&mut sim, gait, &spec.situation)?;
            switched = true;
        }
        sim.tick();
        on_tick(&sim);
        if start.is_none() && sim.time() + settings.dt / 2.0 >= measure_from {
            start = Some(sim.robot_sample());
        }
        if sim.time() + settings.dt / 2.0 >= next_sample {
            trajectory.push(sim.robot_sample());
            next_sample += spec.sample_interval.max(settings.dt);
        }
    }
    let end = sim.robot_sample();
    if trajectory.last() != Some(&end) {
        trajectory.push(end);
    }
    let start = start.unwrap_or(trajectory[0]);
    let mut outcome = Outcome::from_samples(start, end, trajectory, spec.full_trajectory);
    outcome.simulated = end.t;
    outcome.wall = started.elapsed();
    outcome.physics_steps = sim.ticks();
    Ok(outcome)
}
