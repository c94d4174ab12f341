//! Conversions between protobuf messages and the domain, both directions:
//! the gRPC service uses the `*_to_pb` side and the parsers of requests,
//! [`crate::OrganizerClient`] the other, and the store's version-0
//! migration the parsers (old files hold protobuf blobs). Pure functions
//! over [`crate::model`]: no tonic, no store, so both edges can use them
//! without importing each other.

use std::time::Duration;

use yamor_core::evaluation::{BackendKind, Direction, Objective, UnknownDirection};
use yamor_core::starts::Spread;
use yamor_core::world::{UnknownWorlds, Worlds};
use yamor_optimizer_api::{PluginInfo, SettingKind, SettingSpec, SettingValue};
use yamor_proto::evaluation::{
    evaluation_job, evaluation_job_to_pb, outcome_to_pb, parameters_to_pb, robot, spec,
};
use yamor_proto::v1 as pb;

use crate::model::{
    HeldOut, Host, HostState, Job, JobRequest, JobRequestError, JobState, ParameterBound, Problem,
    Run, RunEvaluation, RunEvent, RunSpec, RunState, Starts,
};

/// A message that does not convert to the domain: a field missing, out of
/// range or of an unknown value, or a job request that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{field}: unknown value {value}")]
    UnknownValue { field: &'static str, value: i32 },
    #[error("{0}: missing")]
    Missing(&'static str),
    #[error("worlds: {0}")]
    Worlds(#[from] UnknownWorlds),
    #[error("direction: {0}")]
    Direction(#[from] UnknownDirection),
    #[error("timeout_s must be a non-negative number, got {0}")]
    BadTimeout(f64),
    #[error("problem: give optimization_xml or space")]
    NoProblem,
    #[error(transparent)]
    Field(#[from] yamor_proto::evaluation::ConvertError),
    #[error(transparent)]
    Request(#[from] JobRequestError),
    #[error("job {id}: {source}")]
    Job { id: u64, source: Box<ConvertError> },
    #[error("run {id}: {source}")]
    Run { id: u64, source: Box<ConvertError> },
}

impl ConvertError {
    /// The error of a field of job `id`, said with the job's id.
    fn in_job<E: Into<ConvertError>>(id: u64) -> impl FnOnce(E) -> ConvertError {
        move |e| ConvertError::Job {
            id,
            source: Box::new(e.into()),
        }
    }
}

/// A proto backend; `None` for unspecified.
pub fn backend(value: i32) -> Result<Option<BackendKind>, ConvertError> {
    match pb::Backend::try_from(value) {
        Ok(pb::Backend::Unspecified) => Ok(None),
        Ok(pb::Backend::Simulation) => Ok(Some(BackendKind::Simulation)),
        Ok(pb::Backend::Real) => Ok(Some(BackendKind::Real)),
        Ok(pb::Backend::Expression) => Ok(Some(BackendKind::Expression)),
        Ok(pb::Backend::Planning) => Ok(Some(BackendKind::Planning)),
        Err(_) => Err(ConvertError::UnknownValue {
            field: "backend",
            value,
        }),
    }
}

#[must_use]
pub fn backend_to_pb(kind: Option<BackendKind>) -> pb::Backend {
    match kind {
        None => pb::Backend::Unspecified,
        Some(BackendKind::Simulation) => pb::Backend::Simulation,
        Some(BackendKind::Real) => pb::Backend::Real,
        Some(BackendKind::Expression) => pb::Backend::Expression,
        Some(BackendKind::Planning) => pb::Backend::Planning,
    }
}

/// A proto job request, checked field by field.
pub fn job_request(request: pb::JobRequest) -> Result<JobRequest, ConvertError> {
    if !request.timeout_s.is_finite() || request.timeout_s < 0.0 {
        return Err(ConvertError::BadTimeout(request.timeout_s));
    }
    let request = JobRequest {
        job: evaluation_job(request.job)?,
        backend: backend(request.backend)?,
        max_attempts: request.max_attempts,
        timeout: (request.timeout_s > 0.0).then(|| Duration::from_secs_f64(request.timeout_s)),
    };
    request.check()?;
    Ok(request)
}

#[must_use]
pub fn job_request_to_pb(request: &JobRequest) -> pb::JobRequest {
    pb::JobRequest {
        job: Some(evaluation_job_to_pb(&request.job)),
        backend: backend_to_pb(request.backend) as i32,
        max_attempts: request.max_attempts,
        timeout_s: request.timeout.map_or(0.0, |t| t.as_secs_f64()),
    }
}

/// A proto job state; unspecified is refused.
pub fn job_state(value: i32) -> Result<JobState, ConvertError> {
    Ok(match pb::JobState::try_from(value) {
        Ok(pb::JobState::Queued) => JobState::Queued,
        Ok(pb::JobState::Running) => JobState::Running,
        Ok(pb::JobState::Done) => JobState::Done,
        Ok(pb::JobState::Failed) => JobState::Failed,
        Ok(pb::JobState::Cancelled) => JobState::Cancelled,
        _ => {
            return Err(ConvertError::UnknownValue {
                field: "states",
                value,
            });
        }
    })
}

#[must_use]
pub fn job_state_to_pb(state: JobState) -> pb::JobState {
    match state {
        JobState::Queued => pb::JobState::Queued,
        JobState::Running => pb::JobState::Running,
        JobState::Done => pb::JobState::Done,
        JobState::Failed => pb::JobState::Failed,
        JobState::Cancelled => pb::JobState::Cancelled,
    }
}

#[must_use]
pub fn job_to_pb(job: &Job) -> pb::Job {
    pb::Job {
        id: job.id,
        run_id: job.run_id,
        owner: job.owner.clone(),
        state: job_state_to_pb(job.state) as i32,
        request: Some(job_request_to_pb(&job.request)),
        attempts: job.attempts,
        host: job.host.clone(),
        result: job.outcome.as_ref().map(outcome_to_pb),
        error: job.error.clone(),
        submitted_ms: job.submitted_ms,
        started_ms: job.started_ms,
        finished_ms: job.finished_ms,
        proposal_index: job.seq,
        tell_index: job.tell_seq,
    }
}

/// A job as a remote organizer reports it. Not validated as a request: a
/// brief job has no robot or gait.
pub fn job_from_pb(job: pb::Job) -> Result<Job, ConvertError> {
    let request = job.request.unwrap_or_default();
    Ok(Job {
        id: job.id,
        run_id: job.run_id,
        owner: job.owner,
        seq: job.proposal_index,
        tell_seq: job.tell_index,
        state: job_state(job.state).map_err(ConvertError::in_job(job.id))?,
        request: JobRequest {
            // A stored job is a record, not a request: its spec is shown as
            // it was, so one odd row never breaks a listing.
            job: yamor_proto::evaluation::stored_evaluation_job(request.job)
                .map_err(ConvertError::in_job(job.id))?,
            backend: backend(request.backend)?,
            max_attempts: request.max_attempts,
            timeout: Duration::try_from_secs_f64(request.timeout_s)
                .ok()
                .filter(|t| !t.is_zero()),
        },
        attempts: job.attempts,
        host: job.host,
        outcome: job
            .result
            .map(|r| yamor_proto::evaluation::outcome(Some(r)))
            .transpose()
            .map_err(ConvertError::in_job(job.id))?,
        error: job.error,
        submitted_ms: job.submitted_ms,
        started_ms: job.started_ms,
        finished_ms: job.finished_ms,
    })
}

#[must_use]
pub fn host_state_to_pb(state: HostState) -> pb::HostState {
    match state {
        HostState::Free => pb::HostState::Free,
        HostState::Busy => pb::HostState::Busy,
        HostState::Down => pb::HostState::Down,
    }
}

/// A host as a remote organizer reports it; unknown enum values read as
/// "not told" (backend) and down (state).
#[must_use]
pub fn host_from_pb(h: pb::Host) -> Host {
    Host {
        id: h.id,
        name: h.name,
        address: h.address,
        backend: backend(h.backend).ok().flatten(),
        robot: h.robot,
        objectives: h.objectives,
        state: match pb::HostState::try_from(h.state) {
            Ok(pb::HostState::Free) => HostState::Free,
            Ok(pb::HostState::Busy) => HostState::Busy,
            _ => HostState::Down,
        },
        current_job: h.current_job,
        last_seen: Duration::try_from_secs_f64(h.last_seen_s).unwrap_or_default(),
        evaluations: h.evaluations,
        failures: h.failures,
    }
}

#[must_use]
pub fn host_to_pb(h: &Host) -> pb::Host {
    pb::Host {
        id: h.id,
        name: h.name.clone(),
        address: h.address.clone(),
        backend: backend_to_pb(h.backend) as i32,
        robot: h.robot.clone(),
        objectives: h.objectives.clone(),
        state: host_state_to_pb(h.state) as i32,
        current_job: h.current_job,
        last_seen_s: h.last_seen.as_secs_f64(),
        evaluations: h.evaluations,
        failures: h.failures,
    }
}

/// A proto run request; the problem and budget are checked when the run
/// starts.
pub fn run_spec(request: pb::StartRunRequest) -> Result<RunSpec, ConvertError> {
    let problem = match request.problem {
        Some(pb::start_run_request::Problem::OptimizationXml(xml)) => Problem::OptimizationXml(xml),
        Some(pb::start_run_request::Problem::Space(space)) => Problem::Space(
            space
                .bounds
                .into_iter()
                .map(|b| ParameterBound {
                    start: b.start.unwrap_or((b.min + b.max) / 2.0),
                    name: b.name,
                    min: b.min,
                    max: b.max,
                })
                .collect(),
        ),
        None => return Err(ConvertError::NoProblem),
    };
    let default = HeldOut::default_for(&problem, backend(request.backend)?);
    let held_out = HeldOut {
        candidates: request.held_out_candidates.unwrap_or(default.candidates),
        starts: request.held_out_starts.unwrap_or(default.starts),
    };
    Ok(RunSpec {
        name: request.name,
        optimizer: request.optimizer,
        settings: request.settings.into_iter().collect(),
        seed: request.seed,
        robot: robot(request.robot),
        robot_name: request.robot_name,
        problem,
        spec: spec(request.spec)?,
        backend: backend(request.backend)?,
        max_evaluations: request.max_evaluations,
        max_seconds: request.max_seconds,
        objective: Objective::parse(&request.objective),
        starts: Starts::fixed_when(request.fixed_start),
        held_out,
        max_turn_deg_s: request.max_turn_deg_s,
        direction: request.direction.parse()?,
        early_stop: request.early_stop,
        worlds: request.worlds.parse()?,
        prior: request.prior_run,
    })
}

#[must_use]
pub fn run_state_to_pb(state: RunState) -> pb::RunState {
    match state {
        RunState::Running => pb::RunState::Running,
        RunState::Finished => pb::RunState::Finished,
        RunState::Stopped => pb::RunState::Stopped,
        RunState::Failed => pb::RunState::Failed,
    }
}

#[must_use]
pub fn run_to_pb(run: &Run) -> pb::Run {
    pb::Run {
        id: run.id,
        name: run.name.clone(),
        robot: run.robot.clone(),
        gait: run.gait,
        optimizer: run.optimizer.clone(),
        settings: run
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        seed: run.seed,
        state: run_state_to_pb(run.state) as i32,
        evaluations: run.evaluations,
        max_evaluations: run.max_evaluations,
        max_seconds: run.max_seconds,
        best_velocity_m_s: run.best_velocity,
        best_parameters: parameters_to_pb(&run.best_parameters),
        best_gait_xml: run.best_gait_xml.clone(),
        error: run.error.clone(),
        started_ms: run.started_ms,
        finished_ms: run.finished_ms,
        elapsed_s: run.elapsed_s,
        held_out: run.held_out.map(spread_to_pb),
        reference: run.reference.map(spread_to_pb),
        recommendation: run.recommendation.as_ref().map(|r| pb::Recommendation {
            parameters: parameters_to_pb(&r.parameters),
            held_out: r.held_out.map(spread_to_pb),
        }),
        prior_run: run.prior,
        direction: direction_to_pb(run.direction),
    }
}

/// The wire's spelling: empty for the thesis' any direction, so a
/// request or run from before directions existed reads the same.
fn direction_to_pb(direction: Direction) -> String {
    match direction {
        Direction::Any => String::new(),
        other => other.name().to_owned(),
    }
}

fn spread_to_pb(s: Spread) -> pb::Spread {
    pb::Spread {
        n: u32::try_from(s.n).unwrap_or(u32::MAX),
        mean: s.mean,
        se: s.se,
        p10: s.p10,
        min: s.min,
        max: s.max,
    }
}

fn spread_from_pb(s: pb::Spread) -> Spread {
    Spread {
        n: s.n as usize,
        mean: s.mean,
        se: s.se,
        p10: s.p10,
        min: s.min,
        max: s.max,
    }
}

/// A run as a remote organizer reports it (the CLI's side of the wire).
pub fn run_from_pb(run: pb::Run) -> Result<Run, ConvertError> {
    let state = match pb::RunState::try_from(run.state) {
        Ok(pb::RunState::Running) => RunState::Running,
        Ok(pb::RunState::Finished) => RunState::Finished,
        Ok(pb::RunState::Stopped) => RunState::Stopped,
        Ok(pb::RunState::Failed) => RunState::Failed,
        _ => {
            return Err(ConvertError::Run {
                id: run.id,
                source: Box::new(ConvertError::UnknownValue {
                    field: "state",
                    value: run.state,
                }),
            });
        }
    };
    Ok(Run {
        id: run.id,
        name: run.name,
        robot: run.robot,
        gait: run.gait,
        optimizer: run.optimizer,
        settings: run.settings.into_iter().collect(),
        seed: run.seed,
        state,
        evaluations: run.evaluations,
        max_evaluations: run.max_evaluations,
        max_seconds: run.max_seconds,
        best_velocity: run.best_velocity_m_s,
        best_parameters: run
            .best_parameters
            .into_iter()
            .map(|p| (p.name, p.value))
            .collect(),
        best_gait_xml: run.best_gait_xml,
        error: run.error,
        started_ms: run.started_ms,
        finished_ms: run.finished_ms,
        elapsed_s: run.elapsed_s,
        held_out: run.held_out.map(spread_from_pb),
        reference: run.reference.map(spread_from_pb),
        recommendation: run.recommendation.map(|r| crate::model::Recommendation {
            parameters: r
                .parameters
                .into_iter()
                .map(|p| (p.name, p.value))
                .collect(),
            held_out: r.held_out.map(spread_from_pb),
        }),
        prior: run.prior_run,
        direction: run.direction.parse()?,
    })
}

/// A run event as a remote organizer streams it.
pub fn run_event_from_pb(event: pb::RunEvent) -> Result<RunEvent, ConvertError> {
    Ok(RunEvent {
        run: run_from_pb(event.run.ok_or(ConvertError::Missing("run event: run"))?)?,
        evaluation: event.evaluation.map(|e| RunEvaluation {
            job_id: e.job_id,
            index: e.index,
            parameters: e
                .parameters
                .into_iter()
                .map(|p| (p.name, p.value))
                .collect(),
            velocity: e.velocity_m_s,
            improved: e.improved,
        }),
    })
}

/// A run spec to send to a remote organizer.
#[must_use]
pub fn run_spec_to_pb(spec: &RunSpec) -> pb::StartRunRequest {
    let problem = match &spec.problem {
        Problem::OptimizationXml(xml) => {
            pb::start_run_request::Problem::OptimizationXml(xml.clone())
        }
        Problem::Space(bounds) => pb::start_run_request::Problem::Space(pb::ParameterSpace {
            bounds: bounds
                .iter()
                .map(|b| pb::ParameterBound {
                    name: b.name.clone(),
                    min: b.min,
                    max: b.max,
                    start: Some(b.start),
                })
                .collect(),
        }),
    };
    pb::StartRunRequest {
        name: spec.name.clone(),
        optimizer: spec.optimizer.clone(),
        settings: spec.settings.clone().into_iter().collect(),
        seed: spec.seed,
        robot: yamor_proto::evaluation::robot_to_pb(&spec.robot),
        robot_name: spec.robot_name.clone(),
        problem: Some(problem),
        spec: Some(yamor_proto::evaluation::spec_to_pb(&spec.spec)),
        backend: backend_to_pb(spec.backend) as i32,
        max_evaluations: spec.max_evaluations,
        max_seconds: spec.max_seconds,
        objective: spec.objective.to_text(),
        fixed_start: spec.starts == Starts::Fixed,
        max_turn_deg_s: spec.max_turn_deg_s,
        direction: direction_to_pb(spec.direction),
        early_stop: spec.early_stop,
        worlds: match spec.worlds {
            Worlds::Single => String::new(),
            other => other.name().to_owned(),
        },
        held_out_candidates: Some(spec.held_out.candidates),
        held_out_starts: Some(spec.held_out.starts),
        prior_run: spec.prior,
    }
}

#[must_use]
pub fn run_event_to_pb(event: &RunEvent) -> pb::RunEvent {
    pb::RunEvent {
        run: Some(run_to_pb(&event.run)),
        evaluation: event.evaluation.as_ref().map(|e| pb::Evaluation {
            job_id: e.job_id,
            index: e.index,
            parameters: parameters_to_pb(&e.parameters),
            velocity_m_s: e.velocity,
            improved: e.improved,
        }),
    }
}

#[must_use]
pub fn optimizer_to_pb(info: PluginInfo) -> pb::OptimizerInfo {
    pb::OptimizerInfo {
        name: info.name,
        author: info.author,
        version: info.version,
        description: info.description,
        settings: info
            .settings
            .into_iter()
            .map(|s| {
                let (kind, min, max, options) = match s.kind {
                    SettingKind::Integer { min, max } => {
                        (pb::SettingKind::Integer, min as f64, max as f64, vec![])
                    }
                    SettingKind::Float { min, max } => (pb::SettingKind::Float, min, max, vec![]),
                    SettingKind::Bool => (pb::SettingKind::Bool, 0.0, 0.0, vec![]),
                    SettingKind::File => (pb::SettingKind::File, 0.0, 0.0, vec![]),
                    SettingKind::Choice { options } => (pb::SettingKind::Choice, 0.0, 0.0, options),
                };
                pb::SettingSpec {
                    name: s.name,
                    description: s.description,
                    kind: kind as i32,
                    min,
                    max,
                    options,
                    default_value: s.default.to_string(),
                }
            })
            .collect(),
    }
}

/// An optimizer's description as a remote organizer reports it.
#[must_use]
pub fn optimizer_from_pb(info: pb::OptimizerInfo) -> PluginInfo {
    PluginInfo {
        name: info.name,
        author: info.author,
        version: info.version,
        description: info.description,
        settings: info
            .settings
            .into_iter()
            .map(|s| {
                let kind = match pb::SettingKind::try_from(s.kind) {
                    Ok(pb::SettingKind::Integer) => SettingKind::Integer {
                        min: s.min as i64,
                        max: s.max as i64,
                    },
                    Ok(pb::SettingKind::Float) => SettingKind::Float {
                        min: s.min,
                        max: s.max,
                    },
                    Ok(pb::SettingKind::Bool) => SettingKind::Bool,
                    Ok(pb::SettingKind::Choice) => SettingKind::Choice { options: s.options },
                    _ => SettingKind::File,
                };
                let mut spec = SettingSpec {
                    name: s.name,
                    description: s.description,
                    kind,
                    default: SettingValue::Text(s.default_value.clone()),
                };
                if let Ok(value) = spec.parse(&s.default_value) {
                    spec.default = value;
                }
                spec
            })
            .collect(),
    }
}
