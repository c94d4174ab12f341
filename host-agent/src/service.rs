//! The `HostAgent` gRPC service: converts proto messages to domain types at
//! the boundary, enforces one evaluation at a time, and maps errors to
//! `Status`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::{Semaphore, SemaphorePermit};
use tonic::{Request, Response, Status};
use yamor_core::RobotConfig;
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_server::HostAgent;

use crate::backend::{
    Backend, BackendKind, CancelOnDrop, HostError, Job, Outcome, RobotSource, Sample, Spec,
};
use crate::session::{SessionHost, defect_mode};
use yamor_core::evaluation::{MAX_REPEATS, Situation};

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
        HostService {
            name: name.into(),
            sessions: SessionHost::for_backend(&backend),
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
            Status::resource_exhausted("host is busy: it runs one evaluation at a time")
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

#[must_use]
pub fn backend_to_proto(kind: BackendKind) -> pb::Backend {
    match kind {
        BackendKind::Simulation => pb::Backend::Simulation,
        BackendKind::Real => pb::Backend::Real,
        BackendKind::Expression => pb::Backend::Expression,
    }
}

/// Converts a proto job to a domain job, naming the offending field.
pub fn job_from_proto(job: Option<pb::EvaluationJob>) -> Result<Job, Status> {
    let job = job.ok_or_else(|| Status::invalid_argument("job: missing"))?;
    let robot = match job.robot.and_then(|r| r.source) {
        None => RobotSource::Default,
        Some(pb::robot::Source::Example(name)) => RobotSource::Example(name),
        Some(pb::robot::Source::MorphologyXml(xml)) => RobotSource::Morphology(xml),
    };
    let gait = if job.gait_xml.trim().is_empty() {
        None
    } else {
        Some(
            RobotConfig::from_xml_str("job.gait_xml", &job.gait_xml)
                .map_err(|e| Status::invalid_argument(e.to_string()))?,
        )
    };
    let mut parameters = Vec::with_capacity(job.parameters.len());
    for p in job.parameters {
        if !p.value.is_finite() {
            return Err(Status::invalid_argument(format!(
                "job.parameters: {} = {} is not a finite number",
                p.name, p.value
            )));
        }
        parameters.push((p.name, p.value));
    }
    let spec = spec_from_proto(job.spec.unwrap_or_default())?;
    Ok(Job {
        robot,
        gait,
        parameters,
        spec,
    })
}

fn spec_from_proto(spec: pb::EvaluationSpec) -> Result<Spec, Status> {
    let defaults = Spec::default();
    let pick = |name: &str, v: f64, default: f64, max: f64| -> Result<f64, Status> {
        if v == 0.0 {
            Ok(default)
        } else if v.is_finite() && v > 0.0 && v <= max {
            Ok(v)
        } else {
            Err(Status::invalid_argument(format!(
                "spec.{name} must be in (0, {max}], got {v}"
            )))
        }
    };
    Ok(Spec {
        warmup: pick("warmup_s", spec.warmup_s, defaults.warmup, 3600.0)?,
        measure: pick("measure_s", spec.measure_s, defaults.measure, 3600.0)?,
        sample_interval: pick(
            "sample_interval_s",
            spec.sample_interval_s,
            defaults.sample_interval,
            60.0,
        )?,
        seed: spec.seed,
        ground_friction: if spec.ground_friction == 0.0 {
            None
        } else {
            Some(pick("ground_friction", spec.ground_friction, 0.0, 10.0)?)
        },
        full_trajectory: spec.full_trajectory,
        situation: Situation {
            upside_down: spec.upside_down,
            defects: spec
                .defects
                .iter()
                .map(|d| Ok((d.module_id, defect_mode("spec.defects.mode", d.mode)?)))
                .collect::<Result<_, Status>>()?,
            dead_cpg: spec.dead_cpg.clone(),
        },
        repeats: match spec.repeats {
            0 => 1,
            n @ 1..=MAX_REPEATS => n,
            n => {
                return Err(Status::invalid_argument(format!(
                    "spec.repeats must be at most {MAX_REPEATS}, got {n}"
                )));
            }
        },
    })
}

fn point(p: Sample) -> pb::Position {
    pb::Position {
        t: p.t,
        x: p.x,
        y: p.y,
        z: p.z,
    }
}

/// The proto form of an outcome.
#[must_use]
pub fn outcome_to_proto(o: &Outcome) -> pb::EvaluationResult {
    let wall = o.wall.as_secs_f64();
    pb::EvaluationResult {
        velocity_m_s: o.velocity,
        trajectory: Some(pb::TrajectorySummary {
            start: Some(point(o.start)),
            end: Some(point(o.end)),
            distance_m: o.distance,
            path_length_m: o.path_length,
            min_height_m: o.min_height,
            max_height_m: o.max_height,
            sample_count: o.sample_count,
            samples: o.samples.iter().copied().map(point).collect(),
        }),
        timings: Some(pb::Timings {
            simulated_s: o.simulated,
            wall_s: wall,
            real_time_factor: if wall > 0.0 { o.simulated / wall } else { 0.0 },
            physics_steps: o.physics_steps,
        }),
    }
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
            velocity = outcome.velocity,
            wall_ms = started.elapsed().as_secs_f64() * 1e3,
            "evaluated"
        );
        Ok(Response::new(pb::EvaluateResponse {
            result: Some(outcome_to_proto(&outcome)),
        }))
    }

    async fn open_simulation(
        &self,
        request: Request<pb::OpenSimulationRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .open_simulation(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn close_simulation(
        &self,
        request: Request<pb::CloseSimulationRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .close_simulation(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn connect_robot(
        &self,
        request: Request<pb::ConnectRobotRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .connect_robot(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn flush(
        &self,
        request: Request<pb::FlushRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .flush(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn refresh(
        &self,
        request: Request<pb::RefreshRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .refresh(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn send_control_message(
        &self,
        request: Request<pb::ControlMessageRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .send_control_message(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn get_state(
        &self,
        request: Request<pb::GetStateRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .get_state(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn sleep(
        &self,
        request: Request<pb::SleepRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .sleep(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_modules(
        &self,
        request: Request<pb::ListModulesRequest>,
    ) -> Result<Response<pb::ListModulesResponse>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .list_modules(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn get_module(
        &self,
        request: Request<pb::GetModuleRequest>,
    ) -> Result<Response<pb::ModuleParameters>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .get_module(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn set_module(
        &self,
        request: Request<pb::SetModuleRequest>,
    ) -> Result<Response<pb::ModuleParameters>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .set_module(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn list_couplings(
        &self,
        request: Request<pb::ListCouplingsRequest>,
    ) -> Result<Response<pb::ListCouplingsResponse>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .list_couplings(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn set_coupling(
        &self,
        request: Request<pb::SetCouplingRequest>,
    ) -> Result<Response<pb::Coupling>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .set_coupling(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn remove_all_couplings(
        &self,
        request: Request<pb::RemoveAllCouplingsRequest>,
    ) -> Result<Response<pb::ListCouplingsResponse>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .remove_all_couplings(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn set_defect(
        &self,
        request: Request<pb::SetDefectRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .set_defect(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn connect_modules(
        &self,
        request: Request<pb::ConnectModulesRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .connect_modules(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn disconnect_module(
        &self,
        request: Request<pb::DisconnectModuleRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .disconnect_module(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn run_script(
        &self,
        request: Request<pb::RunScriptRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .run_script(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn set_ground_friction(
        &self,
        request: Request<pb::SetGroundFrictionRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .set_ground_friction(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn drop_robot(
        &self,
        request: Request<pb::DropRobotRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .drop_robot(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn reset_simulation(
        &self,
        request: Request<pb::ResetSimulationRequest>,
    ) -> Result<Response<pb::SessionState>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .reset_simulation(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn set_id_mapping(
        &self,
        request: Request<pb::IdMapping>,
    ) -> Result<Response<pb::IdMapping>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .set_id_mapping(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn get_id_mapping(
        &self,
        request: Request<pb::GetIdMappingRequest>,
    ) -> Result<Response<pb::IdMapping>, Status> {
        let _permit = self.exclusive()?;
        self.sessions()?
            .get_id_mapping(request.into_inner())
            .await
            .map(Response::new)
    }
}
