//! Gait evaluation as in thesis 6.2.1: the robot walks, and its velocity is
//! the straight-line distance in the ground plane travelled by the central
//! module between the end of the warm-up and the end of the walk, divided by
//! that time span. The spec, the samples, the formula and the outcome are
//! `yamor_core::evaluation`'s; this module only walks.

use crate::behaviour::BehaviourMeter;
use crate::physics::Engine;
use crate::sim::{SimError, SimSettings, Simulation};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;
use yamor_core::evaluation::{EvaluationSpec, Sample, Situation, Walk};
use yamor_core::measure::PositionNoise;
use yamor_core::measure::WalkMeter;
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
) -> Result<Walk, SimError> {
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
) -> Result<Walk, SimError> {
    let settings = walk_settings(settings, spec)?;
    let repeats = spec.repeats.max(1);
    // A mean over several starts or engines is not stopped early: its
    // walks are already the averaging a stop would cut short.
    let whole;
    let spec = if (repeats > 1 || spec.world.engines.len() > 1) && spec.early_stop.is_some() {
        whole = EvaluationSpec {
            early_stop: None,
            ..spec.clone()
        };
        &whole
    } else {
        spec
    };
    // Paired worlds: every repeat walks in each engine, the same start and
    // hardware in each.
    let engines: Vec<Engine> = spec
        .world
        .engines
        .iter()
        .map(|name| name.parse())
        .collect::<Result<_, _>>()?;
    // `None`: the settings' own engine.
    let each: Vec<Option<Engine>> = if engines.is_empty() {
        vec![None]
    } else {
        engines.iter().copied().map(Some).collect()
    };
    let slowest_counts = spec.world.slowest_engine && engines.len() > 1;
    let mut outcome: Option<Walk> = None;
    // The sum of each repeat's value: its engines' mean, or their slowest.
    let mut value_sum = 0.0;
    for k in 0..repeats {
        let (mut sum, mut slowest) = (0.0, f64::INFINITY);
        for &engine in &each {
            let mut again = settings;
            again.seed = settings.seed.wrapping_add(u64::from(k));
            if let Some(engine) = engine {
                again.engine = engine;
                again.substeps = None;
            }
            let other = walk(morphology, gait, again, spec, cancel, &mut |_| ())?;
            sum += other.velocity;
            slowest = slowest.min(other.velocity);
            match &mut outcome {
                // The first walk's trajectory stands for all.
                None => outcome = Some(other),
                Some(first) => {
                    first.physics_steps += other.physics_steps;
                    first.wall += other.wall;
                    first.simulated += other.simulated;
                }
            }
        }
        value_sum += if slowest_counts {
            slowest
        } else {
            sum / each.len() as f64
        };
    }
    let mut outcome = outcome.expect("at least one walk");
    outcome.velocity = value_sum / f64::from(repeats);
    if engines.len() > 1 {
        outcome.engine = spec.world.engines.join("+");
    }
    Ok(outcome)
}

/// Walks `gait` once from each of `seeds` (each replacing `spec.seed`), in
/// parallel on up to [`std::thread::available_parallelism`] threads: how a
/// gait is valued over many starts (`yamor_core::starts`). The outcomes are
/// in `seeds`' order and, each walk being deterministic, the same bits
/// whatever the number of threads. `spec.repeats` must be 1: every start is
/// one walk, and a caller wanting more walks passes more seeds.
///
/// On failure, the error is the first failing seed's in `seeds`' order, so
/// it too does not depend on the threads.
pub fn evaluate_starts(
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    seeds: &[u64],
) -> Result<Vec<Walk>, SimError> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    evaluate_starts_on(threads, morphology, gait, settings, spec, seeds)
}

/// [`evaluate_starts`] on at most `threads` threads.
fn evaluate_starts_on(
    threads: usize,
    morphology: &Morphology,
    gait: &RobotConfig,
    settings: SimSettings,
    spec: &EvaluationSpec,
    seeds: &[u64],
) -> Result<Vec<Walk>, SimError> {
    if spec.repeats != 1 {
        return Err(SimError::OutOfRange {
            name: "repeats",
            value: f64::from(spec.repeats),
            expected: "1 when walking several starts (one walk per start)",
        });
    }
    if spec.world.engines.len() > 1 {
        return Err(SimError::OutOfRange {
            name: "world.engines",
            value: spec.world.engines.len() as f64,
            expected: "at most 1 when walking several starts (one walk per start)",
        });
    }
    let settings = walk_settings(settings, spec)?;
    // Walks take different wall times (contacts cost), so threads take the
    // next seed as they finish rather than fixed shares.
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let never_cancelled = AtomicBool::new(false);
    let worker = || {
        let mut done = Vec::new();
        // Seeds are handed out in order, so once one fails every earlier
        // seed has been taken and will finish: the first failure in seed
        // order is always among the results.
        while !failed.load(Ordering::Relaxed) {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(&seed) = seeds.get(index) else { break };
            let one = SimSettings { seed, ..settings };
            let result = walk(morphology, gait, one, spec, &never_cancelled, &mut |_| ());
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            done.push((index, result));
        }
        done
    };
    let mut results: Vec<Option<Result<Walk, SimError>>> =
        std::iter::repeat_with(|| None).take(seeds.len()).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.clamp(1, seeds.len().max(1)))
            .map(|_| scope.spawn(worker))
            .collect();
        for handle in handles {
            let done = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (index, result) in done {
                results[index] = Some(result);
            }
        }
    });
    // Seeds after a failure may not have been walked, but collecting stops
    // at the failure, which comes first.
    results
        .into_iter()
        .map(|r| r.expect("every seed before the first failure is walked"))
        .collect()
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
) -> Result<Walk, SimError> {
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

/// Checks `spec`; its seed, ground friction (when it names one) and world
/// (engine, when it names one, and hardware) override `settings`.
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
    if let Some(name) = &spec.world.engine {
        settings.engine = name.parse()?;
        // The engine's own substeps: a step tuned for one engine is not
        // the other's.
        settings.substeps = None;
    }
    settings.hardware = spec.world.hardware;
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
) -> Result<Walk, SimError> {
    let check_every = ((0.1 / settings.dt).ceil() as u64).max(1);
    let started = Instant::now();
    let mut sim = Simulation::new(morphology, settings)?;
    let lead_in = spec.situation.lead_in.as_ref();
    sim.configure(lead_in.map_or(gait, |l| &l.gait))?;
    enter(&mut sim, &spec.situation)?;
    let switch_at = spec.lead_in_seconds();
    let mut switched = lead_in.is_none();
    // What the position source reports: the world's noise on the truth.
    let mut noise = PositionNoise::new(spec.world.position_noise_m, settings.seed);
    let mut meter = WalkMeter::new(spec, noise.apply(sim.robot_sample()), settings.dt);
    let mut behaviour = BehaviourMeter::new(&sim);
    while meter.walking() {
        if sim.ticks() % check_every == 0 && cancel.load(Ordering::Relaxed) {
            return Err(SimError::Cancelled(sim.time()));
        }
        if !switched && sim.time() + settings.dt / 2.0 >= switch_at {
            switch_gait(&mut sim, gait, &spec.situation)?;
            switched = true;
        }
        sim.tick();
        on_tick(&sim);
        meter.observe(noise.apply(sim.robot_sample()));
        behaviour.observe(&sim, meter.window_start());
    }
    let mut outcome = meter.finish();
    outcome.descriptors = behaviour.finish(&outcome);
    outcome.simulated = outcome.end.t;
    outcome.wall = started.elapsed();
    outcome.physics_steps = sim.ticks();
    outcome.engine = settings.engine.name().to_owned();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn without_wall(mut outcome: Walk) -> Walk {
        outcome.wall = std::time::Duration::ZERO;
        outcome
    }

    /// A walk's samples as bits (PartialEq on f64 would let -0.0 equal 0.0).
    fn sample_bits(walk: &Walk) -> Vec<u64> {
        walk.samples
            .iter()
            .flat_map(|s| [s.t, s.x, s.y, s.z])
            .map(f64::to_bits)
            .collect()
    }

    #[test]
    fn a_walk_measures_its_behaviour_and_re_measures_it_to_the_bit() {
        use yamor_core::evaluation::descriptors as d;
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let spec = |seed| EvaluationSpec {
            warmup: 1.0,
            measure: 3.0,
            seed,
            ..EvaluationSpec::default()
        };
        let settings = SimSettings::default();
        let walk = evaluate(&morphology, &gait, settings, &spec(3)).unwrap();
        let value = |name| walk.descriptor(name).unwrap_or_else(|| panic!("no {name}"));
        let heading = value(d::HEADING);
        assert!((-180.0..=180.0).contains(&heading), "{heading}");
        // The central module rides between 2 and 8 cm on the quadruped.
        let height = value(d::HEIGHT);
        assert!((0.02..0.08).contains(&height), "{height}");
        for duty in [d::FRONT_DUTY, d::BACK_DUTY] {
            let share = value(duty);
            // Walking legs touch the ground part of the time, not never.
            assert!(share > 0.0 && share <= 1.0, "{duty} {share}");
        }
        assert_eq!(value(d::TURN), walk.turn_deg_s);
        let again = evaluate(&morphology, &gait, settings, &spec(3)).unwrap();
        let bits = |w: &Walk| {
            w.descriptors
                .iter()
                .map(|(k, v)| (k.clone(), v.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&walk), bits(&again));
        // Another start walks another walk, and its behaviour differs.
        let other = evaluate(&morphology, &gait, settings, &spec(4)).unwrap();
        assert_ne!(bits(&walk), bits(&other));
    }

    #[test]
    fn a_walk_in_a_drawn_world_re_walks_to_the_bit_and_each_knob_matters() {
        use yamor_core::world::{Hardware, World, WorldDistribution};
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let nominal = EvaluationSpec {
            warmup: 1.0,
            measure: 3.0,
            full_trajectory: true,
            seed: 5,
            ..EvaluationSpec::default()
        };
        let settings = SimSettings::default();
        let walk = |spec: &EvaluationSpec| evaluate(&morphology, &gait, settings, spec).unwrap();
        let (world, friction) = WorldDistribution::robust().draw(42);
        let drawn = EvaluationSpec {
            world: world.clone(),
            ground_friction: friction,
            ..nominal.clone()
        };
        let once = walk(&drawn);
        assert_eq!(sample_bits(&once), sample_bits(&walk(&drawn)));
        assert_eq!(once.engine, world.engine.clone().unwrap());
        let base = walk(&nominal);
        assert_ne!(sample_bits(&once), sample_bits(&base));
        // The nominal world is the world of every figure before worlds.
        let explicit = EvaluationSpec {
            world: World::default(),
            ..nominal.clone()
        };
        assert_eq!(sample_bits(&walk(&explicit)), sample_bits(&base));
        // Every knob on its own changes the walk.
        let with = |hardware: Hardware| EvaluationSpec {
            world: World {
                hardware,
                ..World::default()
            },
            ..nominal.clone()
        };
        for (knob, hardware) in [
            (
                "lag",
                Hardware {
                    servo_lag_s: 0.04,
                    ..Hardware::default()
                },
            ),
            (
                "backlash",
                Hardware {
                    backlash_rad: 0.05,
                    ..Hardware::default()
                },
            ),
            (
                "torque",
                Hardware {
                    torque_scale: 0.5,
                    ..Hardware::default()
                },
            ),
            (
                "speed",
                Hardware {
                    speed_scale: 0.5,
                    ..Hardware::default()
                },
            ),
            (
                "torque sag",
                Hardware {
                    torque_sags: true,
                    ..Hardware::default()
                },
            ),
            (
                "mass",
                Hardware {
                    mass_scale: 1.3,
                    mass_spread: 0.2,
                    mass_seed: 9,
                    ..Hardware::default()
                },
            ),
        ] {
            assert_ne!(
                sample_bits(&walk(&with(hardware))),
                sample_bits(&base),
                "{knob} changed nothing"
            );
        }
        let rapier = EvaluationSpec {
            world: World {
                engine: Some("rapier".into()),
                ..World::default()
            },
            ..nominal.clone()
        };
        assert_eq!(walk(&rapier).engine, "rapier");
        let noisy = EvaluationSpec {
            world: World {
                position_noise_m: 0.003,
                ..World::default()
            },
            ..nominal.clone()
        };
        let seen = walk(&noisy);
        assert_ne!(sample_bits(&seen), sample_bits(&base));
        // Noise moves what is seen, not the robot: the samples stay near.
        let off = seen
            .samples
            .iter()
            .zip(&base.samples)
            .map(|(a, b)| (a.x - b.x).abs())
            .fold(0.0, f64::max);
        assert!(off < 0.02, "{off}");
        // A paired world walks each engine with the same start and
        // hardware, and its value is their mean.
        let (paired, _) = WorldDistribution::paired().draw(42);
        let in_each: Vec<Walk> = ["articulated", "rapier"]
            .iter()
            .map(|engine| {
                walk(&EvaluationSpec {
                    world: World {
                        engine: Some((*engine).to_owned()),
                        engines: Vec::new(),
                        ..paired.clone()
                    },
                    ..nominal.clone()
                })
            })
            .collect();
        let both = walk(&EvaluationSpec {
            world: paired,
            ..nominal.clone()
        });
        assert_eq!(
            both.velocity.to_bits(),
            ((in_each[0].velocity + in_each[1].velocity) / 2.0).to_bits()
        );
        assert_eq!(both.engine, "articulated+rapier");
        let (slowest, _) = WorldDistribution::paired_slowest().draw(42);
        let held_by_slowest = walk(&EvaluationSpec {
            world: slowest,
            ..nominal.clone()
        });
        assert_eq!(
            held_by_slowest.velocity.to_bits(),
            in_each[0].velocity.min(in_each[1].velocity).to_bits()
        );
        assert_eq!(sample_bits(&both), sample_bits(&in_each[0]));
        // A world no simulator has is refused, naming the field.
        let unknown = EvaluationSpec {
            world: World {
                engine: Some("webots".into()),
                ..World::default()
            },
            ..nominal
        };
        let error = evaluate(&morphology, &gait, settings, &unknown).unwrap_err();
        assert!(error.to_string().contains("world.engine"), "{error}");
    }

    #[test]
    fn starts_walk_as_single_evaluations_whatever_the_threads() {
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let spec = EvaluationSpec {
            warmup: 0.5,
            measure: 1.5,
            full_trajectory: true,
            ..EvaluationSpec::default()
        };
        let settings = SimSettings::default();
        let seeds = [3, yamor_core::starts::HELD_OUT_FIRST_SEED, 0, 3, 17];
        let single: Vec<Walk> = seeds
            .iter()
            .map(|&seed| {
                let spec = EvaluationSpec {
                    seed,
                    ..spec.clone()
                };
                without_wall(evaluate(&morphology, &gait, settings, &spec).unwrap())
            })
            .collect();
        for threads in [1, 2, 8] {
            let starts: Vec<Walk> =
                evaluate_starts_on(threads, &morphology, &gait, settings, &spec, &seeds)
                    .unwrap()
                    .into_iter()
                    .map(without_wall)
                    .collect();
            // PartialEq on f64 would let -0.0 equal 0.0; bits do not.
            let bits = |o: &[Walk]| -> Vec<Vec<u64>> {
                o.iter()
                    .map(|o| o.samples.iter().flat_map(|s| [s.t, s.x, s.y, s.z]))
                    .map(|values| values.map(f64::to_bits).collect())
                    .collect()
            };
            assert_eq!(starts, single, "{threads} threads");
            assert_eq!(bits(&starts), bits(&single), "{threads} threads");
        }
        // Different starts walk differently: the seed reached the walk.
        assert_ne!(single[0].velocity, single[1].velocity);
        let public = evaluate_starts(&morphology, &gait, settings, &spec, &seeds).unwrap();
        assert_eq!(
            public.into_iter().map(without_wall).collect::<Vec<_>>(),
            single
        );
    }

    #[test]
    fn starts_refuse_repeats() {
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let spec = EvaluationSpec {
            repeats: 2,
            ..EvaluationSpec::default()
        };
        let error = evaluate_starts(&morphology, &gait, SimSettings::default(), &spec, &[1, 2])
            .unwrap_err();
        assert!(error.to_string().contains("repeats"), "{error}");
    }

    #[test]
    fn a_failing_start_fails_the_lot_with_its_error() {
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let spec = EvaluationSpec {
            warmup: 0.1,
            measure: 0.1,
            ..EvaluationSpec::default()
        };
        let bad = SimSettings {
            dt: -1.0,
            ..SimSettings::default()
        };
        assert!(evaluate_starts(&morphology, &gait, bad, &spec, &[1, 2, 3]).is_err());
        assert_eq!(
            evaluate_starts(&morphology, &gait, SimSettings::default(), &spec, &[])
                .unwrap()
                .len(),
            0
        );
    }

    #[test]
    fn a_hopeless_walk_stops_at_its_checkpoint_and_a_hopeful_one_walks_whole() {
        use yamor_core::evaluation::{CHECKPOINT_FRACTIONS, EarlyStop};
        let (morphology, gait) = crate::robots::load("quadruped", None).unwrap();
        let spec = EvaluationSpec {
            warmup: 1.0,
            measure: 4.0,
            seed: 3,
            ..EvaluationSpec::default()
        };
        let settings = SimSettings::default();
        let whole = without_wall(evaluate(&morphology, &gait, settings, &spec).unwrap());
        assert_eq!(whole.partial_velocities.len(), CHECKPOINT_FRACTIONS.len());
        assert_eq!(whole.stopped_early, None);
        assert!((whole.simulated - 5.0).abs() < 1e-6);

        // Bounds below its partial velocities: walked whole, the same bits.
        let below = EarlyStop {
            min_velocity: whole
                .partial_velocities
                .iter()
                .map(|v| Some(v - 0.01))
                .collect(),
        };
        let spec_below = EvaluationSpec {
            early_stop: Some(below),
            ..spec.clone()
        };
        let kept = without_wall(evaluate(&morphology, &gait, settings, &spec_below).unwrap());
        assert_eq!(kept, whole);

        // Above its half-way velocity: stopped there, its value the partial
        // velocity, a quarter of the window unwalked.
        let above = EarlyStop {
            min_velocity: vec![None, Some(whole.partial_velocities[1] + 0.01)],
        };
        let spec_above = EvaluationSpec {
            early_stop: Some(above),
            ..spec.clone()
        };
        let stopped = evaluate(&morphology, &gait, settings, &spec_above).unwrap();
        assert_eq!(stopped.stopped_early, Some(1));
        assert_eq!(stopped.velocity, whole.partial_velocities[1]);
        assert_eq!(stopped.partial_velocities, whole.partial_velocities);
        assert!(
            (stopped.simulated - 3.0).abs() < 0.02,
            "{}",
            stopped.simulated
        );
    }
}
