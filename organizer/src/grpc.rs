//! Everything gRPC: the `Organizer` service, the host client over the
//! `HostAgent` service, and the conversions between protobuf messages and
//! the domain ([`crate::model`]; jobs, specs and results through
//! `yamor_proto::evaluation`, which the host agent shares). The only place
//! that builds a `tonic::Status` or reads a proto enum number; validation
//! errors name the offending field.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio_stream::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;
use tonic::{Code, Request, Response, Status};
use yamor_core::evaluation::{BackendKind, EvaluationJob, Outcome};
use yamor_optimizer_api::{PluginInfo, SettingKind};
use yamor_proto::evaluation::{
    evaluation_job, evaluation_job_to_pb, outcome, outcome_to_pb, parameters_to_pb, robot, spec,
};
use yamor_proto::transport::{AuthChannel, ClientSecurity};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;
use yamor_proto::v1::organizer_server::Organizer as OrganizerApi;

use crate::model::{
    Host, HostInfo, HostState, Job, JobFilter, JobRequest, JobState, ParameterBound, Problem, Run,
    RunEvaluation, RunEvent, RunSpec, RunState, RunVariant,
};
use crate::runs::Runs;
use crate::scheduler::{BoxFuture, HostClient, HostConnector, HostError, ScheduleError, Scheduler};

pub struct OrganizerService {
    pub scheduler: Arc<Scheduler>,
    pub runs: Arc<Runs>,
}

fn status(e: ScheduleError) -> Status {
    match e {
        ScheduleError::Invalid(m) => Status::invalid_argument(m),
        ScheduleError::NotFound(m) => Status::not_found(m),
        e @ ScheduleError::Unreachable { .. } => Status::failed_precondition(e.to_string()),
        ScheduleError::Store(e) => Status::internal(e.to_string()),
    }
}

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl OrganizerApi for OrganizerService {
    async fn register_host(
        &self,
        request: Request<pb::RegisterHostRequest>,
    ) -> Result<Response<pb::RegisterHostResponse>, Status> {
        let r = request.into_inner();
        let host = self
            .scheduler
            .register_host(&r.name, &r.address)
            .await
            .map_err(status)?;
        let host = host_to_pb(&host);
        let config = self.scheduler.config();
        Ok(Response::new(pb::RegisterHostResponse {
            host: Some(host),
            heartbeat_interval_s: config.heartbeat_interval.as_secs_f64(),
            lease_s: config.lease.as_secs_f64(),
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let state = self
            .scheduler
            .heartbeat(request.into_inner().host_id)
            .map_err(status)?;
        Ok(Response::new(pb::HeartbeatResponse {
            state: host_state_to_pb(state) as i32,
        }))
    }

    async fn deregister_host(
        &self,
        request: Request<pb::DeregisterHostRequest>,
    ) -> Result<Response<pb::DeregisterHostResponse>, Status> {
        let r = request.into_inner();
        self.scheduler
            .deregister_host(r.host_id, &r.name)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::DeregisterHostResponse {}))
    }

    async fn list_hosts(
        &self,
        _request: Request<pb::ListHostsRequest>,
    ) -> Result<Response<pb::ListHostsResponse>, Status> {
        Ok(Response::new(pb::ListHostsResponse {
            hosts: self.scheduler.hosts().iter().map(host_to_pb).collect(),
        }))
    }

    async fn submit_jobs(
        &self,
        request: Request<pb::SubmitJobsRequest>,
    ) -> Result<Response<pb::SubmitJobsResponse>, Status> {
        let r = request.into_inner();
        if r.jobs.is_empty() {
            return Err(Status::invalid_argument("jobs: at least one job is needed"));
        }
        if r.owner.starts_with("run-") {
            return Err(Status::invalid_argument(
                "owner: names starting with \"run-\" are reserved for optimizer runs",
            ));
        }
        let mut jobs = Vec::with_capacity(r.jobs.len());
        for (index, job) in r.jobs.into_iter().enumerate() {
            let job = job_request(job)
                .map_err(|e| Status::invalid_argument(format!("jobs[{index}]: {e}")))?;
            jobs.push((0, job));
        }
        let job_ids = self
            .scheduler
            .submit(&r.owner, 0, jobs)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::SubmitJobsResponse { job_ids }))
    }

    async fn get_job(
        &self,
        request: Request<pb::GetJobRequest>,
    ) -> Result<Response<pb::Job>, Status> {
        let job = self
            .scheduler
            .job(request.into_inner().job_id, false)
            .await
            .map_err(status)?;
        Ok(Response::new(job_to_pb(&job)))
    }

    async fn list_jobs(
        &self,
        request: Request<pb::ListJobsRequest>,
    ) -> Result<Response<pb::ListJobsResponse>, Status> {
        let r = request.into_inner();
        let filter = JobFilter {
            run_id: (r.run_id > 0).then_some(r.run_id),
            states: r
                .states
                .iter()
                .map(|s| job_state(*s))
                .collect::<Result<_, _>>()
                .map_err(Status::invalid_argument)?,
            after_id: r.after_id,
            limit: Some(if r.limit == 0 {
                100
            } else {
                r.limit.min(10_000)
            }),
        };
        let jobs = self
            .scheduler
            .list_jobs(filter, r.brief)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ListJobsResponse {
            jobs: jobs.iter().map(job_to_pb).collect(),
        }))
    }

    async fn cancel_jobs(
        &self,
        request: Request<pb::CancelJobsRequest>,
    ) -> Result<Response<pb::CancelJobsResponse>, Status> {
        let cancelled = self
            .scheduler
            .cancel(&request.into_inner().job_ids)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::CancelJobsResponse { cancelled }))
    }

    type WatchJobsStream = EventStream<pb::Job>;

    async fn watch_jobs(
        &self,
        request: Request<pb::WatchJobsRequest>,
    ) -> Result<Response<Self::WatchJobsStream>, Status> {
        let r = request.into_inner();
        // Subscribe first so nothing between the snapshot and the stream is lost.
        let events = BroadcastStream::new(self.scheduler.subscribe_jobs());
        let mut current = Vec::new();
        for id in &r.job_ids {
            current.push(self.scheduler.job(*id, r.brief).await.map_err(status)?);
        }
        if r.run_id > 0 {
            let filter = JobFilter {
                run_id: Some(r.run_id),
                ..JobFilter::default()
            };
            current.extend(
                self.scheduler
                    .list_jobs(filter, r.brief)
                    .await
                    .map_err(status)?,
            );
        }
        let ids = r.job_ids.clone();
        let run_id = r.run_id;
        let selected = move |job: &Job| {
            (ids.is_empty() && run_id == 0)
                || ids.contains(&job.id)
                || (run_id > 0 && job.run_id == run_id)
        };
        let snapshot = tokio_stream::iter(current.into_iter().map(|j| Ok(job_to_pb(&j))));
        let live = events.filter_map(move |event| match event {
            Ok(job) if selected(&job) => Some(Ok(job_to_pb(&job))),
            Ok(_) => None,
            Err(tokio_stream::wrappers::errors::BroadcastStreamRecvError::Lagged(n)) => {
                Some(Err(Status::data_loss(format!(
                    "watcher fell {n} events behind; re-read with ListJobs and watch again"
                ))))
            }
        });
        Ok(Response::new(Box::pin(snapshot.chain(live))))
    }

    async fn list_optimizers(
        &self,
        _request: Request<pb::ListOptimizersRequest>,
    ) -> Result<Response<pb::ListOptimizersResponse>, Status> {
        Ok(Response::new(pb::ListOptimizersResponse {
            optimizers: self
                .runs
                .optimizers()
                .into_iter()
                .map(optimizer_to_pb)
                .collect(),
        }))
    }

    async fn start_run(
        &self,
        request: Request<pb::StartRunRequest>,
    ) -> Result<Response<pb::Run>, Status> {
        let spec = run_spec(request.into_inner()).map_err(Status::invalid_argument)?;
        let run = self.runs.start(spec).await.map_err(status)?;
        Ok(Response::new(run_to_pb(&run)))
    }

    async fn batch_start_runs(
        &self,
        request: Request<pb::BatchStartRunsRequest>,
    ) -> Result<Response<pb::BatchStartRunsResponse>, Status> {
        let r = request.into_inner();
        let base = r
            .base
            .ok_or_else(|| Status::invalid_argument("base: missing"))?;
        let base = run_spec(base).map_err(Status::invalid_argument)?;
        let variants = r
            .variants
            .into_iter()
            .map(|v| RunVariant {
                name: v.name,
                settings: v.settings.into_iter().collect(),
                seed: v.seed,
            })
            .collect();
        let runs = self
            .runs
            .batch_start(base, variants)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::BatchStartRunsResponse {
            runs: runs.iter().map(run_to_pb).collect(),
        }))
    }

    async fn stop_run(
        &self,
        request: Request<pb::StopRunRequest>,
    ) -> Result<Response<pb::Run>, Status> {
        let run = self
            .runs
            .stop(request.into_inner().run_id)
            .map_err(status)?;
        Ok(Response::new(run_to_pb(&run)))
    }

    async fn get_run(
        &self,
        request: Request<pb::GetRunRequest>,
    ) -> Result<Response<pb::Run>, Status> {
        let run = self.runs.get(request.into_inner().run_id).map_err(status)?;
        Ok(Response::new(run_to_pb(&run)))
    }

    async fn list_runs(
        &self,
        _request: Request<pb::ListRunsRequest>,
    ) -> Result<Response<pb::ListRunsResponse>, Status> {
        Ok(Response::new(pb::ListRunsResponse {
            runs: self.runs.list().iter().map(run_to_pb).collect(),
        }))
    }

    type WatchRunStream = EventStream<pb::RunEvent>;

    async fn watch_run(
        &self,
        request: Request<pb::WatchRunRequest>,
    ) -> Result<Response<Self::WatchRunStream>, Status> {
        let events = self
            .runs
            .watch(request.into_inner().run_id)
            .map_err(status)?;
        Ok(Response::new(Box::pin(
            events.map(|e| Ok(run_event_to_pb(&e))),
        )))
    }
}

// ---------------------------------------------------------------- hosts

/// Dials hosts' `HostAgent` services.
pub struct GrpcConnector {
    pub security: ClientSecurity,
}

impl HostConnector for GrpcConnector {
    fn connect(&self, address: &str) -> Result<Arc<dyn HostClient>, String> {
        let channel =
            yamor_proto::transport::channel(address, &self.security).map_err(|e| e.to_string())?;
        Ok(Arc::new(GrpcHost {
            client: HostAgentClient::new(channel),
        }))
    }
}

struct GrpcHost {
    client: HostAgentClient<AuthChannel>,
}

impl HostClient for GrpcHost {
    fn info(&self) -> BoxFuture<'static, Result<HostInfo, HostError>> {
        let mut client = self.client.clone();
        Box::pin(async move {
            let info = client
                .get_info(pb::GetInfoRequest {})
                .await
                .map_err(host_error)?
                .into_inner();
            Ok(HostInfo {
                backend: backend(info.backend).ok().flatten(),
                robot: info.robot,
            })
        })
    }

    fn evaluate(
        &self,
        job_id: u64,
        attempt: u32,
        job: &EvaluationJob,
    ) -> BoxFuture<'static, Result<Outcome, HostError>> {
        let mut client = self.client.clone();
        let request = pb::EvaluateRequest {
            job: Some(evaluation_job_to_pb(job)),
            job_id,
            attempt,
        };
        Box::pin(async move {
            let response = client.evaluate(request).await.map_err(host_error)?;
            // A reply without a result is the host's fault, not a fitness of 0.
            outcome(response.into_inner().result)
                .map_err(|e| HostError::Failed(format!("the host's reply: {e}")))
        })
    }
}

/// Whose fault a failed call is, by its status code.
fn host_error(status: Status) -> HostError {
    let message = format!("{:?}: {}", status.code(), status.message());
    match status.code() {
        Code::InvalidArgument
        | Code::Unimplemented
        | Code::FailedPrecondition
        | Code::OutOfRange => HostError::InvalidJob(message),
        Code::Unavailable | Code::Unknown | Code::Unauthenticated | Code::DeadlineExceeded => {
            HostError::Unavailable(message)
        }
        _ => HostError::Failed(message),
    }
}

// ---------------------------------------------------------- conversions

/// A proto backend; `None` for unspecified.
pub fn backend(value: i32) -> Result<Option<BackendKind>, String> {
    match pb::Backend::try_from(value) {
        Ok(pb::Backend::Unspecified) => Ok(None),
        Ok(pb::Backend::Simulation) => Ok(Some(BackendKind::Simulation)),
        Ok(pb::Backend::Real) => Ok(Some(BackendKind::Real)),
        Ok(pb::Backend::Expression) => Ok(Some(BackendKind::Expression)),
        Err(_) => Err(format!("backend: unknown value {value}")),
    }
}

#[must_use]
pub fn backend_to_pb(kind: Option<BackendKind>) -> pb::Backend {
    match kind {
        None => pb::Backend::Unspecified,
        Some(BackendKind::Simulation) => pb::Backend::Simulation,
        Some(BackendKind::Real) => pb::Backend::Real,
        Some(BackendKind::Expression) => pb::Backend::Expression,
    }
}

/// A proto job request, checked field by field.
pub fn job_request(request: pb::JobRequest) -> Result<JobRequest, String> {
    if !request.timeout_s.is_finite() || request.timeout_s < 0.0 {
        return Err(format!(
            "timeout_s must be a non-negative number, got {}",
            request.timeout_s
        ));
    }
    let request = JobRequest {
        job: evaluation_job(request.job)?,
        backend: backend(request.backend)?,
        max_attempts: request.max_attempts,
        timeout: (request.timeout_s > 0.0).then(|| Duration::from_secs_f64(request.timeout_s)),
    };
    crate::scheduler::validate(&request)?;
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
pub fn job_state(value: i32) -> Result<JobState, String> {
    Ok(match pb::JobState::try_from(value) {
        Ok(pb::JobState::Queued) => JobState::Queued,
        Ok(pb::JobState::Running) => JobState::Running,
        Ok(pb::JobState::Done) => JobState::Done,
        Ok(pb::JobState::Failed) => JobState::Failed,
        Ok(pb::JobState::Cancelled) => JobState::Cancelled,
        _ => return Err(format!("states: unknown value {value}")),
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
    }
}

#[must_use]
pub fn host_state_to_pb(state: HostState) -> pb::HostState {
    match state {
        HostState::Free => pb::HostState::Free,
        HostState::Busy => pb::HostState::Busy,
        HostState::Down => pb::HostState::Down,
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
        state: host_state_to_pb(h.state) as i32,
        current_job: h.current_job,
        last_seen_s: h.last_seen.as_secs_f64(),
        evaluations: h.evaluations,
        failures: h.failures,
    }
}

/// A proto run request; the problem and budget are checked when the run
/// starts.
pub fn run_spec(request: pb::StartRunRequest) -> Result<RunSpec, String> {
    let problem = match request.problem {
        Some(pb::start_run_request::Problem::OptimizationXml(xml)) => Problem::OptimizationXml(xml),
        Some(pb::start_run_request::Problem::Space(space)) => Problem::Space(
            space
                .bounds
                .into_iter()
                .map(|b| ParameterBound {
                    name: b.name,
                    min: b.min,
                    max: b.max,
                    start: b.start,
                })
                .collect(),
        ),
        None => return Err("problem: give optimization_xml or space".into()),
    };
    Ok(RunSpec {
        name: request.name,
        optimizer: request.optimizer,
        settings: request.settings.into_iter().collect(),
        seed: request.seed,
        robot: robot(request.robot),
        problem,
        spec: spec(request.spec)?,
        backend: backend(request.backend)?,
        max_evaluations: request.max_evaluations,
        max_seconds: request.max_seconds,
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
    }
}

/// A run as a remote organizer reports it (the CLI's side of the wire).
pub fn run_from_pb(run: pb::Run) -> Result<Run, String> {
    let state = match pb::RunState::try_from(run.state) {
        Ok(pb::RunState::Running) => RunState::Running,
        Ok(pb::RunState::Finished) => RunState::Finished,
        Ok(pb::RunState::Stopped) => RunState::Stopped,
        Ok(pb::RunState::Failed) => RunState::Failed,
        _ => {
            return Err(format!(
                "run {}: state: unknown value {}",
                run.id, run.state
            ));
        }
    };
    Ok(Run {
        id: run.id,
        name: run.name,
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
    })
}

/// A run event as a remote organizer streams it.
pub fn run_event_from_pb(event: pb::RunEvent) -> Result<RunEvent, String> {
    Ok(RunEvent {
        run: run_from_pb(event.run.ok_or("run event: run: missing")?)?,
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
                    start: b.start,
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
        problem: Some(problem),
        spec: Some(yamor_proto::evaluation::spec_to_pb(&spec.spec)),
        backend: backend_to_pb(spec.backend) as i32,
        max_evaluations: spec.max_evaluations,
        max_seconds: spec.max_seconds,
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
