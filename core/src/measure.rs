//! The measure loop of a walk (thesis 6.2.1), the one every walker runs:
//! the YaMoR simulator, the Roombot walk and the real robot over its serial
//! line each move the robot their own way and hand every new position to a
//! [`WalkMeter`], which takes the measured window's start, keeps the
//! trajectory at the spec's sampling interval, reads the velocity so far at
//! the early-stopping checkpoints ([`Checkpoints`]), says when the walk is
//! over and makes the [`Walk`]. So a velocity, a trajectory and a walk
//! stopped early mean the same wherever the robot walked.
//!
//! Times are on the walk's clock, in robot seconds. A walker that steps
//! (a simulation tick, a physics step) gives its step: an event falls due
//! at the sample half a step before it, so that times summed from steps
//! never miss one by a rounding. A walker on the wall clock (the real
//! robot) gives its clock's granularity instead and asks
//! [`WalkMeter::next_due`] how long it may sleep.

use crate::evaluation::{Checkpoints, EvaluationSpec, Sample, Walk, planar_velocity};
use crate::starts::mix64;

/// One walk's measurement, fed every new position of the robot.
#[derive(Debug, Clone)]
pub struct WalkMeter<'a> {
    spec: &'a EvaluationSpec,
    /// Where the measured window starts and where the walk ends.
    measure_from: f64,
    end_at: f64,
    /// Half the step: the tolerance of every "is it due" test.
    half_step: f64,
    /// Trajectory spacing: the spec's, at least one step.
    interval: f64,
    next_sample: f64,
    /// The window's first sample, once the walk got there.
    start: Option<Sample>,
    /// The latest position seen: where the walk ends when it ends.
    last: Sample,
    trajectory: Vec<Sample>,
    checkpoints: Checkpoints,
    /// A checkpoint found the walk hopeless.
    stopped: bool,
}

impl<'a> WalkMeter<'a> {
    /// A walk of `spec` from `first`, the robot at t = 0 of the walk's
    /// clock (the lead-in's start when there is one), stepping `step`
    /// seconds. The measured window starts at the first position seen at
    /// the end of the lead-in and warm-up; the walk ends a window later.
    #[must_use]
    pub fn new(spec: &'a EvaluationSpec, first: Sample, step: f64) -> Self {
        let measure_from = spec.lead_in_seconds() + spec.warmup;
        WalkMeter {
            spec,
            measure_from,
            end_at: measure_from + spec.measure,
            half_step: step / 2.0,
            interval: spec.sample_interval.max(step),
            next_sample: spec.sample_interval,
            start: None,
            last: first,
            trajectory: vec![first],
            checkpoints: Checkpoints::of(spec),
            stopped: false,
        }
    }

    /// A walk of `spec` whose measured window starts at `start`, its first
    /// sample: the lead-in and the warm-up were walked before (the real
    /// robot's, unmeasured). Samples follow every `spec.sample_interval`
    /// from `start`; `step` is the clock's granularity.
    #[must_use]
    pub fn from_window_start(spec: &'a EvaluationSpec, start: Sample, step: f64) -> Self {
        WalkMeter {
            measure_from: start.t,
            end_at: start.t + spec.measure,
            next_sample: start.t + spec.sample_interval,
            start: Some(start),
            ..WalkMeter::new(spec, start, step)
        }
    }

    /// Whether the walk goes on: neither stopped at a checkpoint nor at the
    /// end of its measured window (by the latest position seen).
    #[must_use]
    pub fn walking(&self) -> bool {
        !self.stopped && self.last.t + self.half_step <= self.end_at
    }

    /// Takes the robot's position after a step: the window's start when it
    /// is due, a trajectory sample when one is due, the velocity so far at
    /// a checkpoint (which may stop the walk: [`WalkMeter::walking`]).
    pub fn observe(&mut self, here: Sample) {
        let due = |at: f64| here.t + self.half_step >= at;
        self.last = here;
        if self.start.is_none() && due(self.measure_from) {
            self.start = Some(here);
        }
        if due(self.next_sample) {
            self.trajectory.push(here);
            self.next_sample += self.interval;
        }
        if let (Some(from), Some(at)) = (self.start, self.next_checkpoint())
            && due(at)
        {
            self.stopped = self.checkpoints.reached(planar_velocity(&from, &here));
        }
    }

    /// The measured window's first sample, once the walk got there: from
    /// then on a walker measures what only it can see (contacts, poses).
    #[must_use]
    pub fn window_start(&self) -> Option<Sample> {
        self.start
    }

    /// When the next position is wanted (walk clock): the next trajectory
    /// sample, checkpoint or the walk's end, whichever comes first. For
    /// walkers that sleep between positions rather than step.
    #[must_use]
    pub fn next_due(&self) -> f64 {
        let mut due = self.next_sample.min(self.end_at);
        if self.start.is_some()
            && let Some(checkpoint) = self.next_checkpoint()
        {
            due = due.min(checkpoint);
        }
        due
    }

    /// The next checkpoint on the walk's clock.
    fn next_checkpoint(&self) -> Option<f64> {
        self.checkpoints
            .next_into_window(self.spec)
            .map(|at| self.measure_from + at)
    }

    /// The outcome of the walk, measured from the window's start (the first
    /// sample when the walk never got there) to the latest position seen.
    /// The walker adds what only it knows: robot and wall seconds, steps,
    /// engine.
    #[must_use]
    pub fn finish(self) -> Walk {
        let end = self.last;
        let mut trajectory = self.trajectory;
        if trajectory.last() != Some(&end) {
            trajectory.push(end);
        }
        let start = self.start.unwrap_or(trajectory[0]);
        let mut outcome = Walk::from_samples(start, end, trajectory, self.spec.full_trajectory);
        self.checkpoints.record(&mut outcome);
        outcome
    }
}

/// The position source's error: Gaussian, independent per sample, drawn
/// from the walk's own stream so that the walk re-walks to the bit.
pub struct PositionNoise {
    normal: Option<rand_distr::Normal<f64>>,
    rng: rand_chacha::ChaCha8Rng,
}

impl PositionNoise {
    /// Noise of standard deviation `sigma_m` (0: none) for the walk seeded
    /// `seed`.
    #[must_use]
    pub fn new(sigma_m: f64, seed: u64) -> Self {
        use rand::SeedableRng;
        PositionNoise {
            normal: (sigma_m > 0.0)
                .then(|| rand_distr::Normal::new(0.0, sigma_m).ok())
                .flatten(),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(mix64(seed ^ 0x006e_6f69_7365)),
        }
    }

    /// `sample` as the position source reports it (x, y and z each off by
    /// their own error).
    pub fn apply(&mut self, mut sample: Sample) -> Sample {
        use rand_distr::Distribution;
        if let Some(normal) = &self.normal {
            sample.x += normal.sample(&mut self.rng);
            sample.y += normal.sample(&mut self.rng);
            sample.z += normal.sample(&mut self.rng);
        }
        sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_noise_is_seeded_and_of_its_size() {
        let at = Sample::default();
        let draw = |seed| {
            let mut noise = PositionNoise::new(0.005, seed);
            (0..2000).map(|_| noise.apply(at)).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        let xs: Vec<f64> = draw(3).iter().map(|s| s.x).collect();
        let sd = (xs.iter().map(|x| x * x).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((sd - 0.005).abs() < 0.0005, "{sd}");
        let mut none = PositionNoise::new(0.0, 3);
        assert_eq!(none.apply(at), at);
    }

    use crate::evaluation::EarlyStop;

    /// A robot walking along x at `v` m/s, seen every `dt` seconds until
    /// the meter says stop; the meter's outcome.
    fn walk(spec: &EvaluationSpec, v: f64, dt: f64) -> Walk {
        let at = |t: f64| Sample {
            t,
            x: v * t,
            y: 0.0,
            z: 0.05,
        };
        let mut meter = WalkMeter::new(spec, at(0.0), dt);
        let mut t = 0.0;
        while meter.walking() {
            t += dt;
            meter.observe(at(t));
        }
        meter.finish()
    }

    #[test]
    fn a_whole_walk_is_measured_over_its_window_at_its_interval() {
        let spec = EvaluationSpec {
            warmup: 1.0,
            measure: 2.0,
            sample_interval: 0.5,
            full_trajectory: true,
            ..EvaluationSpec::default()
        };
        let o = walk(&spec, 0.1, 0.01);
        assert!((o.start.t - 1.0).abs() < 1e-9, "{o:?}");
        assert!((o.end.t - 3.0).abs() < 1e-9, "{o:?}");
        assert!((o.velocity - 0.1).abs() < 1e-9);
        let times: Vec<f64> = o.samples.iter().map(|s| (s.t * 100.0).round()).collect();
        assert_eq!(times, [0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0]);
        assert_eq!(o.partial_velocities.len(), 2);
        assert_eq!(o.stopped_early, None);
    }

    #[test]
    fn a_hopeless_walk_ends_at_its_checkpoint() {
        let spec = EvaluationSpec {
            warmup: 1.0,
            measure: 4.0,
            early_stop: Some(EarlyStop {
                min_velocity: vec![Some(0.2)],
            }),
            ..EvaluationSpec::default()
        };
        let o = walk(&spec, 0.1, 0.01);
        assert_eq!(o.stopped_early, Some(0));
        assert!((o.end.t - 2.0).abs() < 1e-9, "{o:?}");
        assert_eq!(o.velocity, o.partial_velocities[0]);
    }

    #[test]
    fn a_sleeping_walker_is_told_when_to_look_next() {
        let spec = EvaluationSpec {
            warmup: 8.0,
            measure: 12.0,
            sample_interval: 2.0,
            ..EvaluationSpec::default()
        };
        let start = Sample {
            t: 10.0,
            ..Sample::default()
        };
        let mut meter = WalkMeter::from_window_start(&spec, start, 1e-3);
        let mut looked = Vec::new();
        while meter.walking() {
            let t = meter.next_due();
            looked.push(t);
            meter.observe(Sample { t, ..start });
        }
        // Samples every 2 s, checkpoints at 3 s and 6 s, the end at 12 s.
        assert_eq!(looked, [12.0, 13.0, 14.0, 16.0, 18.0, 20.0, 22.0]);
        let o = meter.finish();
        assert_eq!((o.start.t, o.end.t), (10.0, 22.0));
        assert_eq!(o.sample_count, 7);
        assert_eq!(o.partial_velocities, [0.0, 0.0]);
    }
}
