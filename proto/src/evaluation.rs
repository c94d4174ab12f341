//! The messages of `common.proto` to and from `yamor_core::evaluation`, in
//! one place for both services: the organizer sends jobs and reads results
//! with these, the host agent reads jobs and sends results with the same
//! functions, so the two sides cannot disagree on a default or a bound.
//!
//! Zeros in a proto spec mean "the default", as the proto comments say.
//! Errors name the offending field.

use std::time::Duration;

use yamor_core::RobotConfig;
use yamor_core::evaluation::{
    DefectMode, EarlyStop, EvaluationJob, EvaluationSpec, LeadIn, Objective, Outcome, PlanResult,
    RobotSource, Sample, Situation, Walk,
};
use yamor_core::plan::{Cell, LatticeMove, LatticePlan, Placed};
use yamor_core::world::{Hardware, World};

use crate::v1 as pb;

/// A field of a message that is missing or out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

impl From<ConvertError> for String {
    fn from(e: ConvertError) -> String {
        e.0
    }
}

fn invalid(message: String) -> ConvertError {
    ConvertError(message)
}

#[must_use]
pub fn robot(robot: Option<pb::Robot>) -> RobotSource {
    match robot.and_then(|r| r.source) {
        None => RobotSource::Default,
        Some(pb::robot::Source::Example(name)) => RobotSource::Example(name),
        Some(pb::robot::Source::MorphologyXml(xml)) => RobotSource::Morphology(xml),
    }
}

#[must_use]
pub fn robot_to_pb(robot: &RobotSource) -> Option<pb::Robot> {
    let source = match robot {
        RobotSource::Default => return None,
        RobotSource::Example(name) => pb::robot::Source::Example(name.clone()),
        RobotSource::Morphology(xml) => pb::robot::Source::MorphologyXml(xml.clone()),
    };
    Some(pb::Robot {
        source: Some(source),
    })
}

/// A wire defect mode; `field` names it in the error.
pub fn defect_mode(field: &str, mode: i32) -> Result<DefectMode, ConvertError> {
    match pb::DefectMode::try_from(mode) {
        Ok(pb::DefectMode::None) => Ok(DefectMode::Healthy),
        Ok(pb::DefectMode::Limp) => Ok(DefectMode::Limp),
        Ok(pb::DefectMode::Stuck) => Ok(DefectMode::Stuck),
        Ok(pb::DefectMode::Weak) => Ok(DefectMode::Weak),
        _ => Err(invalid(format!(
            "{field}: give NONE, LIMP, STUCK or WEAK, got {mode}"
        ))),
    }
}

#[must_use]
pub fn defect_mode_to_pb(mode: DefectMode) -> pb::DefectMode {
    match mode {
        DefectMode::Healthy => pb::DefectMode::None,
        DefectMode::Limp => pb::DefectMode::Limp,
        DefectMode::Stuck => pb::DefectMode::Stuck,
        DefectMode::Weak => pb::DefectMode::Weak,
    }
}

/// A proto spec, every field checked by [`EvaluationSpec::check`] (zeros
/// mean defaults).
pub fn spec(spec: Option<pb::EvaluationSpec>) -> Result<EvaluationSpec, ConvertError> {
    let spec = stored_spec(spec)?;
    spec.check().map_err(|e| invalid(e.to_string()))?;
    Ok(spec)
}

/// A proto spec as it was stored, its ranges unchecked: what was recorded
/// is shown as it is, and a listing never fails because of one row.
pub fn stored_spec(spec: Option<pb::EvaluationSpec>) -> Result<EvaluationSpec, ConvertError> {
    let spec = spec.unwrap_or_default();
    let defaults = EvaluationSpec::default();
    let or_default = |v: f64, default: f64| if v == 0.0 { default } else { v };
    Ok(EvaluationSpec {
        warmup: or_default(spec.warmup_s, defaults.warmup),
        measure: or_default(spec.measure_s, defaults.measure),
        sample_interval: or_default(spec.sample_interval_s, defaults.sample_interval),
        seed: spec.seed,
        ground_friction: (spec.ground_friction != 0.0).then_some(spec.ground_friction),
        full_trajectory: spec.full_trajectory,
        situation: Situation {
            upside_down: spec.upside_down,
            defects: spec
                .defects
                .iter()
                .map(|d| Ok((d.module_id, defect_mode("spec.defects.mode", d.mode)?)))
                .collect::<Result<_, ConvertError>>()?,
            dead_cpg: spec.dead_cpg,
            lead_in: lead_in(&spec.lead_in_gait_xml, spec.lead_in_s)?,
        },
        repeats: spec.repeats.max(1),
        early_stop: early_stop(&spec.early_stop)?,
        world: spec.world.map(world).unwrap_or_default(),
    })
}

fn world(w: pb::World) -> World {
    World {
        engine: (!w.engine.is_empty()).then_some(w.engine),
        engines: w.engines,
        slowest_engine: w.slowest_engine,
        hardware: Hardware {
            mass_scale: w.mass_scale.unwrap_or(1.0),
            mass_spread: w.mass_spread,
            mass_seed: w.mass_seed,
            torque_scale: w.torque_scale.unwrap_or(1.0),
            speed_scale: w.speed_scale.unwrap_or(1.0),
            servo_lag_s: w.servo_lag_s,
            backlash_rad: w.backlash_rad,
            torque_sags: w.torque_sags,
        },
        position_noise_m: w.position_noise_m,
    }
}

fn world_to_pb(w: &World) -> Option<pb::World> {
    let h = &w.hardware;
    (!w.is_nominal()).then(|| pb::World {
        engine: w.engine.clone().unwrap_or_default(),
        engines: w.engines.clone(),
        slowest_engine: w.slowest_engine,
        mass_scale: Some(h.mass_scale),
        mass_spread: h.mass_spread,
        mass_seed: h.mass_seed,
        torque_scale: Some(h.torque_scale),
        speed_scale: Some(h.speed_scale),
        servo_lag_s: h.servo_lag_s,
        backlash_rad: h.backlash_rad,
        position_noise_m: w.position_noise_m,
        torque_sags: h.torque_sags,
    })
}

#[must_use]
pub fn spec_to_pb(spec: &EvaluationSpec) -> pb::EvaluationSpec {
    pb::EvaluationSpec {
        warmup_s: spec.warmup,
        measure_s: spec.measure,
        sample_interval_s: spec.sample_interval,
        seed: spec.seed,
        ground_friction: spec.ground_friction.unwrap_or(0.0),
        full_trajectory: spec.full_trajectory,
        upside_down: spec.situation.upside_down,
        defects: spec
            .situation
            .defects
            .iter()
            .map(|(module_id, mode)| pb::ModuleDefect {
                module_id: *module_id,
                mode: defect_mode_to_pb(*mode) as i32,
            })
            .collect(),
        dead_cpg: spec.situation.dead_cpg.clone(),
        repeats: spec.repeats,
        lead_in_gait_xml: spec
            .situation
            .lead_in
            .as_ref()
            .map(|l| l.gait.to_xml_string())
            .unwrap_or_default(),
        lead_in_s: spec.lead_in_seconds(),
        early_stop: spec
            .early_stop
            .iter()
            .flat_map(|e| e.min_velocity.iter().enumerate())
            .filter_map(|(k, bound)| {
                Some(pb::CheckpointBound {
                    checkpoint: u32::try_from(k).ok()?,
                    min_velocity_m_s: (*bound)?,
                })
            })
            .collect(),
        world: world_to_pb(&spec.world),
    }
}

/// The wire's checkpoint bounds as the domain's (a checkpoint beyond the
/// known ones is an error naming it).
fn early_stop(bounds: &[pb::CheckpointBound]) -> Result<Option<EarlyStop>, ConvertError> {
    if bounds.is_empty() {
        return Ok(None);
    }
    let count = yamor_core::evaluation::CHECKPOINT_FRACTIONS.len();
    let mut min_velocity = vec![None; count];
    for b in bounds {
        let slot = usize::try_from(b.checkpoint)
            .ok()
            .and_then(|k| min_velocity.get_mut(k))
            .ok_or_else(|| {
                invalid(format!(
                    "spec.early_stop.checkpoint: {} is not a checkpoint (0..{count})",
                    b.checkpoint
                ))
            })?;
        *slot = Some(b.min_velocity_m_s);
    }
    Ok(Some(EarlyStop { min_velocity }))
}

/// The lead-in of a proto spec: a gait and its seconds, both or neither
/// (their range is [`EvaluationSpec::check`]'s).
fn lead_in(gait_xml: &str, seconds: f64) -> Result<Option<LeadIn>, ConvertError> {
    match (gait_xml.trim().is_empty(), seconds) {
        (true, 0.0) => Ok(None),
        (true, _) => Err(invalid(format!(
            "spec.lead_in_s = {seconds} needs spec.lead_in_gait_xml"
        ))),
        (false, s) => Ok(Some(LeadIn {
            gait: RobotConfig::from_xml_str("spec.lead_in_gait_xml", gait_xml)
                .map_err(|e| invalid(e.to_string()))?,
            seconds: s,
        })),
    }
}

/// A proto evaluation job, its gait parsed and every field checked.
pub fn evaluation_job(job: Option<pb::EvaluationJob>) -> Result<EvaluationJob, ConvertError> {
    job_with_spec(job, spec)
}

/// A proto evaluation job as it was stored: its spec's ranges unchecked
/// ([`stored_spec`]).
pub fn stored_evaluation_job(
    job: Option<pb::EvaluationJob>,
) -> Result<EvaluationJob, ConvertError> {
    job_with_spec(job, stored_spec)
}

fn job_with_spec(
    job: Option<pb::EvaluationJob>,
    spec: fn(Option<pb::EvaluationSpec>) -> Result<EvaluationSpec, ConvertError>,
) -> Result<EvaluationJob, ConvertError> {
    let job = job.ok_or_else(|| invalid("job: missing".into()))?;
    let gait = if job.gait_xml.trim().is_empty() {
        None
    } else {
        Some(
            RobotConfig::from_xml_str("job.gait_xml", &job.gait_xml)
                .map_err(|e| invalid(e.to_string()))?,
        )
    };
    let mut parameters = Vec::with_capacity(job.parameters.len());
    for p in job.parameters {
        if !p.value.is_finite() {
            return Err(invalid(format!(
                "job.parameters: {} = {} is not a finite number",
                p.name, p.value
            )));
        }
        parameters.push((p.name, p.value));
    }
    Ok(EvaluationJob {
        objective: Objective::parse(&job.objective),
        robot: robot(job.robot),
        gait,
        parameters,
        spec: spec(job.spec)?,
    })
}

#[must_use]
pub fn evaluation_job_to_pb(job: &EvaluationJob) -> pb::EvaluationJob {
    pb::EvaluationJob {
        robot: robot_to_pb(&job.robot),
        gait_xml: job
            .gait
            .as_ref()
            .map(RobotConfig::to_xml_string)
            .unwrap_or_default(),
        parameters: parameters_to_pb(&job.parameters),
        spec: Some(spec_to_pb(&job.spec)),
        objective: job.objective.to_text(),
    }
}

#[must_use]
pub fn parameters_to_pb(parameters: &[(String, f64)]) -> Vec<pb::Parameter> {
    parameters
        .iter()
        .map(|(name, value)| pb::Parameter {
            name: name.clone(),
            value: *value,
        })
        .collect()
}

/// A wire position as a sample; absent reads as the origin at t = 0.
#[must_use]
pub fn sample(p: Option<pb::Position>) -> Sample {
    let p = p.unwrap_or_default();
    Sample {
        t: p.t,
        x: p.x,
        y: p.y,
        z: p.z,
    }
}

/// A trajectory sample on the wire.
#[must_use]
pub fn position(s: &Sample) -> pb::Position {
    pb::Position {
        t: s.t,
        x: s.x,
        y: s.y,
        z: s.z,
    }
}

/// What a host found. A response without a result is an error, never a
/// fitness of 0 (which would be the optimum of a negated objective).
pub fn outcome(result: Option<pb::EvaluationResult>) -> Result<Outcome, ConvertError> {
    use pb::evaluation_result::Kind;
    let kind = result
        .and_then(|r| r.kind)
        .ok_or_else(|| invalid("result: missing (a walk, a value or a plan)".into()))?;
    let outcome = match kind {
        Kind::Walk(w) => Outcome::Walk(walk(w)),
        Kind::Value(v) => Outcome::Value {
            value: v.value,
            wall: seconds(v.wall_s),
            descriptors: v.descriptors.into_iter().collect(),
        },
        Kind::Plan(p) => Outcome::Plan(PlanResult {
            built: p.built,
            rounds: p.rounds,
            moves: p.moves,
            collisions: p.collisions,
            deadlock: p.deadlock,
            filled: p.filled,
            seeds: p.seeds,
            plan: lattice_plan(p.plan.unwrap_or_default())?,
            wall: seconds(p.wall_s),
        }),
    };
    let fitness = outcome.fitness();
    if !fitness.is_finite() {
        return Err(invalid(format!(
            "result: the {}'s fitness {fitness} is not a finite number",
            outcome.kind()
        )));
    }
    let descriptors = match &outcome {
        Outcome::Walk(w) => Some(&w.descriptors),
        Outcome::Value { descriptors, .. } => Some(descriptors),
        Outcome::Plan(_) => None,
    };
    if let Some((name, v)) = descriptors
        .into_iter()
        .flatten()
        .find(|(_, v)| !v.is_finite())
    {
        return Err(invalid(format!(
            "result: descriptor {name:?} is {v}, not a finite number"
        )));
    }
    Ok(outcome)
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

fn walk(result: pb::WalkResult) -> Walk {
    let t = result.trajectory.unwrap_or_default();
    let timings = result.timings.unwrap_or_default();
    Walk {
        velocity: result.velocity_m_s,
        start: sample(t.start),
        end: sample(t.end),
        distance: t.distance_m,
        path_length: t.path_length_m,
        turn_deg_s: t.turn_deg_s,
        min_height: t.min_height_m,
        max_height: t.max_height_m,
        sample_count: t.sample_count,
        samples: t.samples.into_iter().map(|p| sample(Some(p))).collect(),
        partial_velocities: t.partial_velocities_m_s,
        stopped_early: t.stopped_early_at,
        simulated: timings.simulated_s,
        wall: seconds(timings.wall_s),
        physics_steps: timings.physics_steps,
        engine: timings.engine,
        descriptors: result.descriptors.into_iter().collect(),
    }
}

fn cells(c: Option<pb::Cells>) -> Result<Vec<Cell>, ConvertError> {
    let xyz = c.unwrap_or_default().xyz;
    if !xyz.len().is_multiple_of(3) {
        return Err(invalid(format!(
            "result.plan: {} coordinates are not whole cells",
            xyz.len()
        )));
    }
    Ok(xyz.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

fn lattice_plan(p: pb::LatticePlan) -> Result<LatticePlan, ConvertError> {
    let size: [i32; 3] = p
        .size
        .as_slice()
        .try_into()
        .map_err(|_| invalid(format!("result.plan.size: {} sizes, not 3", p.size.len())))?;
    Ok(LatticePlan {
        size,
        target: p
            .target
            .into_iter()
            .map(|c| cells(Some(c)))
            .collect::<Result<_, _>>()?,
        start: p
            .start
            .into_iter()
            .map(|m| {
                Ok(Placed {
                    id: m.id,
                    cells: cells(m.cells)?,
                })
            })
            .collect::<Result<_, ConvertError>>()?,
        steps: p
            .steps
            .into_iter()
            .map(|s| {
                Ok(LatticeMove {
                    round: s.round,
                    id: s.id,
                    filled: s.filled,
                    to: cells(s.to)?,
                    via: s
                        .via
                        .into_iter()
                        .map(|c| cells(Some(c)))
                        .collect::<Result<_, _>>()?,
                })
            })
            .collect::<Result<_, ConvertError>>()?,
    })
}

fn cells_to_pb(cells: &[Cell]) -> pb::Cells {
    pb::Cells {
        xyz: cells.iter().flatten().copied().collect(),
    }
}

fn lattice_plan_to_pb(p: &LatticePlan) -> pb::LatticePlan {
    pb::LatticePlan {
        size: p.size.to_vec(),
        target: p.target.iter().map(|c| cells_to_pb(c)).collect(),
        start: p
            .start
            .iter()
            .map(|m| pb::PlacedModule {
                id: m.id,
                cells: Some(cells_to_pb(&m.cells)),
            })
            .collect(),
        steps: p
            .steps
            .iter()
            .map(|s| pb::LatticeMove {
                round: s.round,
                id: s.id,
                filled: s.filled,
                to: Some(cells_to_pb(&s.to)),
                via: s.via.iter().map(|c| cells_to_pb(c)).collect(),
            })
            .collect(),
    }
}

fn walk_to_pb(o: &Walk) -> pb::WalkResult {
    pb::WalkResult {
        velocity_m_s: o.velocity,
        trajectory: Some(pb::TrajectorySummary {
            start: Some(position(&o.start)),
            end: Some(position(&o.end)),
            distance_m: o.distance,
            path_length_m: o.path_length,
            min_height_m: o.min_height,
            max_height_m: o.max_height,
            sample_count: o.sample_count,
            samples: o.samples.iter().map(position).collect(),
            turn_deg_s: o.turn_deg_s,
            partial_velocities_m_s: o.partial_velocities.clone(),
            stopped_early_at: o.stopped_early,
        }),
        timings: Some(pb::Timings {
            simulated_s: o.simulated,
            wall_s: o.wall.as_secs_f64(),
            real_time_factor: o.real_time_factor(),
            physics_steps: o.physics_steps,
            engine: o.engine.clone(),
        }),
        descriptors: o.descriptors.clone().into_iter().collect(),
    }
}

#[must_use]
pub fn outcome_to_pb(o: &Outcome) -> pb::EvaluationResult {
    use pb::evaluation_result::Kind;
    let kind = match o {
        Outcome::Walk(w) => Kind::Walk(walk_to_pb(w)),
        Outcome::Value {
            value,
            wall,
            descriptors,
        } => Kind::Value(pb::ValueResult {
            value: *value,
            wall_s: wall.as_secs_f64(),
            descriptors: descriptors.clone().into_iter().collect(),
        }),
        Outcome::Plan(p) => Kind::Plan(pb::PlanResult {
            built: p.built,
            rounds: p.rounds,
            moves: p.moves,
            collisions: p.collisions,
            deadlock: p.deadlock,
            filled: p.filled,
            seeds: p.seeds,
            plan: Some(lattice_plan_to_pb(&p.plan)),
            wall_s: p.wall.as_secs_f64(),
        }),
    };
    pb::EvaluationResult { kind: Some(kind) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_survives_the_wire_and_zeros_mean_defaults() {
        let spec = EvaluationSpec {
            seed: 7,
            ground_friction: Some(0.4),
            repeats: 3,
            situation: Situation {
                upside_down: true,
                defects: vec![(5, DefectMode::Limp)],
                dead_cpg: vec![2],
                lead_in: Some(LeadIn {
                    gait: learnt_gait(),
                    seconds: 4.0,
                }),
            },
            ..EvaluationSpec::default()
        };
        assert_eq!(super::spec(Some(spec_to_pb(&spec))).unwrap(), spec);
        assert_eq!(super::spec(None).unwrap(), EvaluationSpec::default());
        // A drawn world survives it too, to the bit; the nominal one is
        // left off the wire.
        let (world, friction) = yamor_core::world::WorldDistribution::robust().draw(11);
        let drawn = EvaluationSpec {
            world,
            ground_friction: friction,
            ..spec
        };
        assert_eq!(super::spec(Some(spec_to_pb(&drawn))).unwrap(), drawn);
        assert!(spec_to_pb(&EvaluationSpec::default()).world.is_none());
        let impossible = pb::EvaluationSpec {
            world: Some(pb::World {
                torque_scale: Some(0.0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let error = super::spec(Some(impossible)).unwrap_err().0;
        assert!(error.contains("world.torque_scale"), "{error}");
    }

    #[test]
    fn out_of_range_fields_are_named() {
        let bad = pb::EvaluationSpec {
            repeats: yamor_core::evaluation::MAX_REPEATS + 1,
            ..Default::default()
        };
        assert!(
            super::spec(Some(bad))
                .unwrap_err()
                .0
                .contains("spec.repeats")
        );
        let bad = pb::EvaluationSpec {
            warmup_s: -1.0,
            ..Default::default()
        };
        assert!(
            super::spec(Some(bad))
                .unwrap_err()
                .0
                .contains("spec.warmup_s")
        );
    }

    fn learnt_gait() -> RobotConfig {
        RobotConfig::from_xml_str(
            "learnt.xml",
            include_str!("../../examples/robots/quadruped/learnt.xml"),
        )
        .unwrap()
    }

    #[test]
    fn a_lead_in_needs_a_gait_and_seconds_in_range() {
        let xml = learnt_gait().to_xml_string();
        for (gait_xml, seconds, named) in [
            ("", 3.0, "spec.lead_in_gait_xml"),
            (xml.as_str(), 0.0, "spec.lead_in_s"),
            (xml.as_str(), -1.0, "spec.lead_in_s"),
            (xml.as_str(), f64::NAN, "spec.lead_in_s"),
            ("<robot><module", 3.0, "spec.lead_in_gait_xml"),
        ] {
            let bad = pb::EvaluationSpec {
                lead_in_gait_xml: gait_xml.to_owned(),
                lead_in_s: seconds,
                ..Default::default()
            };
            let error = super::spec(Some(bad)).unwrap_err().0;
            assert!(error.contains(named), "{seconds}: {error}");
        }
    }

    #[test]
    fn a_response_without_a_result_is_an_error_not_a_zero() {
        assert!(outcome(None).is_err());
        assert!(outcome(Some(pb::EvaluationResult { kind: None })).is_err());
        let nan = Outcome::value(f64::NAN, Duration::ZERO);
        assert!(outcome(Some(outcome_to_pb(&nan))).is_err());
        let nan_descriptor = Outcome::Value {
            value: 1.0,
            wall: Duration::ZERO,
            descriptors: [("x".to_owned(), f64::INFINITY)].into(),
        };
        let error = outcome(Some(outcome_to_pb(&nan_descriptor))).unwrap_err();
        assert!(error.0.contains("descriptor \"x\""), "{}", error.0);
    }

    #[test]
    fn every_kind_of_result_survives_the_wire_as_itself() {
        let walk = Outcome::Walk(Walk {
            velocity: 0.1,
            turn_deg_s: 3.0,
            partial_velocities: vec![0.05],
            stopped_early: Some(0),
            engine: "rapier".into(),
            wall: Duration::from_millis(250),
            descriptors: [("heading_deg".to_owned(), -35.0)].into(),
            ..Walk::default()
        });
        let value = Outcome::Value {
            value: -2.5,
            wall: Duration::from_millis(3),
            descriptors: [("x".to_owned(), 0.25), ("y".to_owned(), -1.0)].into(),
        };
        let plan = Outcome::Plan(PlanResult {
            built: true,
            rounds: 4,
            moves: 9,
            filled: 2,
            seeds: 2,
            plan: LatticePlan::parse(
                "world 5 5 5\ntarget 1,1,0 1,1,1\nstart 7 0,0,0 0,0,1\nmove 1 7 fill 1,1,0 1,1,1\nvia 0,0,0 0,1,0\n",
            )
            .unwrap(),
            wall: Duration::from_secs(2),
            ..PlanResult::default()
        });
        for o in [walk, value, plan] {
            assert_eq!(outcome(Some(outcome_to_pb(&o))).unwrap(), o);
        }
        // Coordinates that are not whole cells are refused, not truncated.
        let mut bad = outcome_to_pb(&Outcome::Plan(PlanResult::default()));
        if let Some(pb::evaluation_result::Kind::Plan(p)) = &mut bad.kind {
            p.plan = Some(pb::LatticePlan {
                size: vec![5, 5, 5],
                target: vec![pb::Cells { xyz: vec![1, 2] }],
                ..Default::default()
            });
        }
        assert!(outcome(Some(bad)).unwrap_err().0.contains("whole cells"));
    }
}
