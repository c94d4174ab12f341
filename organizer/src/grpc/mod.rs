//! Everything gRPC, and the only place that builds a `tonic::Status` or
//! reads a proto enum number; validation errors name the offending field.
//!
//! # Layout
//! - this file: the `Organizer` service over [`Scheduler`] and [`Runs`].
//! - [`hosts`]: the scheduler's [`HostClient`] over the `HostAgent` service.
//! - [`client`]: [`OrganizerClient`], the typed client the CLI and scripts
//!   use; it speaks [`crate::model`], never protobuf.
//!
//! The conversions between protobuf messages and the domain live one level
//! up, in [`crate::convert`], because the store's migration of version-0
//! files (protobuf blobs) needs them too; they are re-exported here.

pub mod client;
pub mod hosts;

pub use crate::convert::*;
pub use client::{ClientError, OrganizerClient};
pub use hosts::GrpcConnector;

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::Stream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;
use tonic::{Request, Response, Status};
use yamor_proto::v1 as pb;
use yamor_proto::v1::organizer_server::Organizer as OrganizerApi;

use crate::model::{Job, JobFilter, RunVariant};
use crate::runs::Runs;
use crate::scheduler::{ScheduleError, Scheduler};

pub struct OrganizerService {
    pub scheduler: Arc<Scheduler>,
    pub runs: Arc<Runs>,
}

fn status(e: ScheduleError) -> Status {
    match e {
        ScheduleError::Invalid(m) => Status::invalid_argument(m),
        ScheduleError::NotFound(m) => Status::not_found(m),
        e @ ScheduleError::Unreachable { .. } => Status::failed_precondition(e.to_string()),
        // A full disk passes: the caller may try again later.
        ScheduleError::Store(e @ crate::store::StoreError::Unwritable { .. }) => {
            Status::unavailable(e.to_string())
        }
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
        if r.keep_id {
            self.scheduler
                .host_leaving(r.host_id, &r.name)
                .map_err(status)?;
        } else {
            self.scheduler
                .deregister_host(r.host_id, &r.name)
                .await
                .map_err(status)?;
        }
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
                .map_err(|e| Status::invalid_argument(e.to_string()))?,
            after_id: r.after_id,
            before_id: r.newest_first.then_some(if r.before_id == 0 {
                u64::MAX
            } else {
                r.before_id
            }),
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
        let spec =
            run_spec(request.into_inner()).map_err(|e| Status::invalid_argument(e.to_string()))?;
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
        let base = run_spec(base).map_err(|e| Status::invalid_argument(e.to_string()))?;
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
