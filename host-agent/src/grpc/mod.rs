//! Everything gRPC of the host: the `HostAgent` service and the conversions
//! between protobuf messages and the domain (core's evaluation types, the
//! session's [`crate::model`]). The only place that builds a `tonic::Status`
//! or reads a proto enum number; it also allows one robot operation at a
//! time.
//!
//! # Layout
//! - this file: the service and its conversions.
//! - [`client`]: [`RobotClient`], the session as a remote caller (lifelong
//!   learning, scripts) drives it, in domain types.
//! - [`organizer`]: [`OrganizerLink`], the host's register, heartbeat and
//!   leave calls to its organizer, in domain types.

pub mod client;
pub mod organizer;

pub use client::{RobotClient, RobotClientError};
pub use organizer::{LinkError, OrganizerLink, Registered, Standing};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::{Semaphore, SemaphorePermit};
use tonic::{Request, Response, Status};
use yamor_core::RobotConfig;
use yamor_proto::evaluation;
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_server::{HostAgent, HostAgentServer};

use crate::backend::{Backend, BackendKind, CancelOnDrop, EvaluationJob, HostError};
use crate::model::{
    ControlFlags, Coupling, CouplingChange, ModuleChange, ModuleView, OpenRequest, SessionError,
    SessionState, SleepClock,
};
use crate::session::{Clock, SessionHost, SystemClock};
use yamor_core::evaluation::DefectMode;
use yamor_core::script::{Script, connection};

/// The service state shared by all connections.
pub struct HostService {
    name: String,
    backend: Arc<dyn Backend>,
    sessions: Option<SessionHost>,
    /// One permit: the robot does one thing at a time.
    robot: Semaphore,
    evaluations: AtomicU64,
}

impl HostService {
    pub fn new(name: impl Into<String>, backend: Arc<dyn Backend>) -> Self {
        Self::with_clock(name, backend, Arc::new(SystemClock))
    }

    /// A service whose real-clock sleeps keep pace with `clock` rather than
    /// the machine's clock.
    pub fn with_clock(
        name: impl Into<String>,
        backend: Arc<dyn Backend>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        HostService {
            name: name.into(),
            sessions: SessionHost::for_backend(&backend, clock),
            backend,
            robot: Semaphore::new(1),
            evaluations: AtomicU64::new(0),
        }
    }

    pub fn info(&self) -> pb::HostInfo {
        pb::HostInfo {
            name: self.name.clone(),
            backend: backend_to_proto(self.backend.kind()) as i32,
            robot: self.backend.describe(),
            simulation_mode: self.backend.kind() != BackendKind::Real,
            busy: self.robot.available_permits() == 0,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            evaluations: self.evaluations.load(Ordering::Relaxed),
            objectives: self.backend.objectives(),
        }
    }

    /// Brings the robot to a safe stop ([`Backend::halt`]) off the runtime.
    pub async fn halt(&self) {
        let backend = self.backend.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || backend.halt()).await {
            tracing::error!("halting the robot: {e}");
        }
    }

    fn exclusive(&self) -> Result<SemaphorePermit<'_>, Status> {
        self.robot.try_acquire().map_err(|_| {
            let mut metadata = tonic::metadata::MetadataMap::new();
            metadata.insert(
                yamor_proto::BUSY_METADATA,
                tonic::metadata::MetadataValue::from_static("1"),
            );
            Status::with_metadata(
                tonic::Code::ResourceExhausted,
                "host is busy: it runs one evaluation at a time",
                metadata,
            )
        })
    }

    fn sessions(&self) -> Result<&SessionHost, Status> {
        self.sessions.as_ref().ok_or_else(|| {
            Status::unimplemented(format!(
                "the {} backend has no robot session",
                self.backend.kind().as_str()
            ))
        })
    }
}

/// `service` as tonic serves it: gaits and results may be large.
#[must_use]
pub fn server(service: Arc<HostService>) -> HostAgentServer<HostService> {
    HostAgentServer::from_arc(service)
        .max_decoding_message_size(yamor_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(yamor_proto::MAX_MESSAGE_BYTES)
}

#[must_use]
pub fn backend_to_proto(kind: BackendKind) -> pb::Backend {
    match kind {
        BackendKind::Simulation => pb::Backend::Simulation,
        BackendKind::Real => pb::Backend::Real,
        BackendKind::Expression => pb::Backend::Expression,
        BackendKind::Planning => pb::Backend::Planning,
    }
}

/// A proto job as the domain's, every field checked and named in the error
/// (the mapping `yamor_proto::evaluation` shares with the organizer).
pub fn job_from_proto(job: Option<pb::EvaluationJob>) -> Result<EvaluationJob, Status> {
    evaluation::evaluation_job(job).map_err(|e| Status::invalid_argument(e.to_string()))
}

/// Domain errors become `Status` here and nowhere else.
#[must_use]
pub fn host_error_to_status(e: HostError) -> Status {
    match e {
        HostError::InvalidJob(m) => Status::invalid_argument(m),
        e @ HostError::Unsupported { .. } => Status::unimplemented(e.to_string()),
        HostError::Cancelled => Status::cancelled("evaluation cancelled"),
        HostError::Failed(m) => Status::internal(m),
    }
}

#[tonic::async_trait]
impl HostAgent for HostService {
    async fn get_info(
        &self,
        _request: Request<pb::GetInfoRequest>,
    ) -> Result<Response<pb::HostInfo>, Status> {
        Ok(Response::new(self.info()))
    }

    async fn evaluate(
        &self,
        request: Request<pb::EvaluateRequest>,
    ) -> Result<Response<pb::EvaluateResponse>, Status> {
        let request = request.into_inner();
        let job = job_from_proto(request.job)?;
        // Never evaluate something else than what was asked: the organizer
        // retries the job on a host that serves it.
        let served = self.backend.objectives();
        if !job.objective.served_by(Some(self.backend.kind()), &served) {
            return Err(Status::failed_precondition(format!(
                "this host ({}) does not serve {}",
                self.backend.describe(),
                job.objective
            )));
        }
        let _permit = self.exclusive()?;
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        let started = Instant::now();
        let outcome = self
            .backend
            .evaluate(job, cancel)
            .await
            .map_err(host_error_to_status)?;
        self.evaluations.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            job = request.job_id,
            attempt = request.attempt,
            kind = outcome.kind(),
            fitness = outcome.fitness(),
            wall_ms = started.elapsed().as_secs_f64() * 1e3,
            "evaluated"
        );
        Ok(Response::new(pb::EvaluateResponse {
            result: Some(evaluation::outcome_to_pb(&outcome)),
        }))
    }

    async fn open_simulation(
        &self,
        request: Request<pb::OpenSimulationRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let r = request.into_inner();
        let request = OpenRequest {
            robot: evaluation::robot(r.robot),
            seed: r.seed,
            ground_friction: (r.ground_friction != 0.0).then_some(r.ground_friction),
        };
        state(self.sessions()?.open_simulation(request).await)
    }

    async fn close_simulation(
        &self,
        _request: Request<pb::CloseSimulationRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        state(self.sessions()?.close_simulation().await)
    }

    async fn connect_robot(
        &self,
        request: Request<pb::ConnectRobotRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let sessions = self.sessions()?;
        let config = RobotConfig::from_xml_str("config_xml", &request.into_inner().config_xml)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        state(sessions.connect_robot(config).await)
    }

    async fn flush(
        &self,
        _request: Request<pb::FlushRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        state(self.sessions()?.flush().await)
    }

    async fn refresh(
        &self,
        _request: Request<pb::RefreshRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        state(self.sessions()?.refresh().await)
    }

    async fn send_control_message(
        &self,
        request: Request<pb::ControlMessageRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let r = request.into_inner();
        let flags = ControlFlags {
            module_id: r.module_id,
            uart: r.uart,
            cpg: r.cpg,
            motor: r.motor,
        };
        state(self.sessions()?.send_control_message(flags).await)
    }

    async fn get_state(
        &self,
        _request: Request<pb::GetStateRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        state(self.sessions()?.get_state().await)
    }

    async fn sleep(
        &self,
        request: Request<pb::SleepRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let sessions = self.sessions()?;
        let r = request.into_inner();
        let clock = match pb::Clock::try_from(r.clock) {
            Ok(pb::Clock::Unspecified | pb::Clock::Host) => SleepClock::Host,
            Ok(pb::Clock::Virtual) => SleepClock::Virtual,
            Ok(pb::Clock::Real) => SleepClock::Real,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "clock: unknown value {}",
                    r.clock
                )));
            }
        };
        state(sessions.sleep(r.seconds, clock).await)
    }

    async fn list_modules(
        &self,
        _request: Request<pb::ListModulesRequest>,
    ) -> Result<Response<pb::ListModulesResponse>, Status> {
        let _permit = self.exclusive()?;
        let modules = self.sessions()?.list_modules().await.map_err(status)?;
        Ok(Response::new(pb::ListModulesResponse {
            modules: modules.into_iter().map(module_to_proto).collect(),
        }))
    }

    async fn get_module(
        &self,
        request: Request<pb::GetModuleRequest>,
    ) -> Result<Response<pb::ModuleParameters>, Status> {
        let _permit = self.exclusive()?;
        let id = request.into_inner().id;
        let module = self.sessions()?.get_module(id).await.map_err(status)?;
        Ok(Response::new(module_to_proto(module)))
    }

    async fn set_module(
        &self,
        request: Request<pb::SetModuleRequest>,
    ) -> Result<Response<pb::ModuleParameters>, Status> {
        let _permit = self.exclusive()?;
        let r = request.into_inner();
        let change = ModuleChange {
            id: r.id,
            amplitude: r.amplitude,
            offset: r.offset,
            speed: r.speed,
            min_angle: r.min_angle,
            max_angle: r.max_angle,
        };
        let module = self.sessions()?.set_module(change).await.map_err(status)?;
        Ok(Response::new(module_to_proto(module)))
    }

    async fn list_couplings(
        &self,
        _request: Request<pb::ListCouplingsRequest>,
    ) -> Result<Response<pb::ListCouplingsResponse>, Status> {
        let _permit = self.exclusive()?;
        couplings(self.sessions()?.list_couplings().await)
    }

    async fn set_coupling(
        &self,
        request: Request<pb::SetCouplingRequest>,
    ) -> Result<Response<pb::Coupling>, Status> {
        let _permit = self.exclusive()?;
        let r = request.into_inner();
        let change = CouplingChange {
            from: r.from,
            to: r.to,
            phase: r.phase,
            weight: r.weight,
        };
        let coupling = self
            .sessions()?
            .set_coupling(change)
            .await
            .map_err(status)?;
        Ok(Response::new(coupling_to_proto(coupling)))
    }

    async fn remove_all_couplings(
        &self,
        _request: Request<pb::RemoveAllCouplingsRequest>,
    ) -> Result<Response<pb::ListCouplingsResponse>, Status> {
        let _permit = self.exclusive()?;
        couplings(self.sessions()?.remove_all_couplings().await)
    }

    async fn set_defect(
        &self,
        request: Request<pb::SetDefectRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let sessions = self.sessions()?;
        let r = request.into_inner();
        let mode = defect_mode("mode", r.mode)?;
        state(sessions.set_defect(r.module_id, mode).await)
    }

    async fn connect_modules(
        &self,
        request: Request<pb::ConnectModulesRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let sessions = self.sessions()?;
        let r = request.into_inner();
        let connection = connection(
            ["conn_from", "conn_to", "angle_deg"],
            r.id_from,
            &r.conn_from,
            r.id_to,
            &r.conn_to,
            f64::from(r.angle_deg),
        )
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
        state(sessions.connect_modules(connection).await)
    }

    async fn disconnect_module(
        &self,
        request: Request<pb::DisconnectModuleRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let id = request.into_inner().module_id;
        state(self.sessions()?.disconnect_module(id).await)
    }

    async fn run_script(
        &self,
        request: Request<pb::RunScriptRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let sessions = self.sessions()?;
        let script = Script::from_xml_str(&request.into_inner().script_xml)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        state(sessions.run_script(script).await)
    }

    async fn set_ground_friction(
        &self,
        request: Request<pb::SetGroundFrictionRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let friction = request.into_inner().friction;
        state(self.sessions()?.set_ground_friction(friction).await)
    }

    async fn drop_robot(
        &self,
        request: Request<pb::DropRobotRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        let r = request.into_inner();
        state(self.sessions()?.drop_robot(r.height_m, r.upside_down).await)
    }

    async fn reset_simulation(
        &self,
        _request: Request<pb::ResetSimulationRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        state(self.sessions()?.reset_simulation().await)
    }

    async fn set_id_mapping(
        &self,
        request: Request<pb::IdMapping>,
    ) -> Result<Response<pb::IdMapping>, Status> {
        let _permit = self.exclusive()?;
        let mapping = request.into_inner().real_to_sim;
        let real_to_sim = self
            .sessions()?
            .set_id_mapping(mapping)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::IdMapping { real_to_sim }))
    }

    async fn get_id_mapping(
        &self,
        _request: Request<pb::GetIdMappingRequest>,
    ) -> Result<Response<pb::IdMapping>, Status> {
        let _permit = self.exclusive()?;
        let real_to_sim = self.sessions()?.get_id_mapping().await.map_err(status)?;
        Ok(Response::new(pb::IdMapping { real_to_sim }))
    }
}

/// Session errors become `Status` here and nowhere else.
fn status(e: SessionError) -> Status {
    match e {
        SessionError::Invalid(m) => Status::invalid_argument(m),
        SessionError::NotReady(m) => Status::failed_precondition(m),
        SessionError::Unsupported(m) => Status::unimplemented(m),
        e @ SessionError::Cancelled => Status::cancelled(e.to_string()),
        SessionError::Failed(m) => Status::internal(m),
    }
}

fn state(result: Result<SessionState, SessionError>) -> Result<Response<pb::SessionState>, Status> {
    result
        .map(|s| Response::new(state_to_proto(s)))
        .map_err(status)
}

fn couplings(
    result: Result<Vec<Coupling>, SessionError>,
) -> Result<Response<pb::ListCouplingsResponse>, Status> {
    let couplings = result.map_err(status)?;
    Ok(Response::new(pb::ListCouplingsResponse {
        couplings: couplings.into_iter().map(coupling_to_proto).collect(),
    }))
}

/// A session state as a remote host reports it.
#[must_use]
pub fn state_from_proto(s: pb::SessionState) -> SessionState {
    SessionState {
        open: s.open,
        connected: s.connected,
        simulation_mode: s.simulation_mode,
        elapsed: s.elapsed_s,
        position: s.position.map(|p| evaluation::sample(Some(p))),
        pending_changes: s.pending_changes,
        up: s.up,
    }
}

#[must_use]
pub fn state_to_proto(s: SessionState) -> pb::SessionState {
    pb::SessionState {
        open: s.open,
        connected: s.connected,
        simulation_mode: s.simulation_mode,
        elapsed_s: s.elapsed,
        position: s.position.as_ref().map(evaluation::position),
        pending_changes: s.pending_changes,
        up: s.up,
    }
}

#[must_use]
pub fn module_to_proto(m: ModuleView) -> pb::ModuleParameters {
    pb::ModuleParameters {
        id: m.id,
        amplitude: m.amplitude,
        offset: m.offset,
        speed: m.speed,
        min_angle: m.min_angle,
        max_angle: m.max_angle,
        defect: m.defect,
    }
}

#[must_use]
pub fn coupling_to_proto(c: Coupling) -> pb::Coupling {
    pb::Coupling {
        from: c.from,
        to: c.to,
        phase: c.phase,
        weight: c.weight,
    }
}

/// A `DefectMode` off the wire; `field` names it in the error.
fn defect_mode(field: &str, mode: i32) -> Result<DefectMode, Status> {
    evaluation::defect_mode(field, mode).map_err(|e| Status::invalid_argument(e.to_string()))
}
