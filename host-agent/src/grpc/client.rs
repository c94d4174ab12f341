//! [`RobotClient`]: a remote host's robot session (the IYaMoRHost3 surface)
//! in domain types, for callers that drive a robot step by step, as
//! lifelong learning does. Protobuf stays here.

use tonic::{Code, Status};
use yamor_core::RobotConfig;
use yamor_core::script::Script;
use yamor_proto::evaluation;
use yamor_proto::transport::{self, AuthChannel, ClientSecurity, TransportError};
use yamor_proto::v1 as pb;
use yamor_proto::v1::host_agent_client::HostAgentClient;

use super::state_from_proto;
use crate::model::{OpenRequest, SessionState, SleepClock};

/// A failed call on a robot's host.
#[derive(Debug, thiserror::Error)]
pub enum RobotClientError {
    /// The host refused the request (bad gait, unknown module, wrong state).
    #[error("the robot's host at {url} refused: {message}")]
    Refused { url: String, message: String },
    #[error("cannot reach the robot's host at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the robot's host at {url}: {message}")]
    Failed { url: String, message: String },
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// A typed client of one host's robot session. Cheap to clone.
#[derive(Clone)]
pub struct RobotClient {
    url: String,
    inner: HostAgentClient<AuthChannel>,
}

impl RobotClient {
    pub fn new(url: &str, security: &ClientSecurity) -> Result<Self, RobotClientError> {
        Ok(RobotClient {
            url: url.to_owned(),
            inner: HostAgentClient::new(transport::channel(url, security)?),
        })
    }

    fn error(&self, status: &Status) -> RobotClientError {
        let (url, message) = (self.url.clone(), status.message().to_owned());
        match status.code() {
            Code::InvalidArgument
            | Code::FailedPrecondition
            | Code::OutOfRange
            | Code::NotFound => RobotClientError::Refused { url, message },
            Code::Unavailable => RobotClientError::Unreachable { url, message },
            _ => RobotClientError::Failed { url, message },
        }
    }

    fn reply(
        &self,
        reply: Result<tonic::Response<pb::SessionState>, Status>,
    ) -> Result<SessionState, RobotClientError> {
        reply
            .map(|r| state_from_proto(r.into_inner()))
            .map_err(|s| self.error(&s))
    }

    /// Opens a simulation of `request.robot` (simulation hosts only).
    pub async fn open_simulation(
        &self,
        request: &OpenRequest,
    ) -> Result<SessionState, RobotClientError> {
        let reply = self
            .inner
            .clone()
            .open_simulation(pb::OpenSimulationRequest {
                robot: evaluation::robot_to_pb(&request.robot),
                seed: request.seed,
                ground_friction: request.ground_friction.unwrap_or(0.0),
            })
            .await;
        self.reply(reply)
    }

    /// Loads a gait (yamorconfig) and starts it walking.
    pub async fn connect_robot(
        &self,
        gait: &RobotConfig,
    ) -> Result<SessionState, RobotClientError> {
        let reply = self
            .inner
            .clone()
            .connect_robot(pb::ConnectRobotRequest {
                config_xml: gait.to_xml_string(),
            })
            .await;
        self.reply(reply)
    }

    pub async fn get_state(&self) -> Result<SessionState, RobotClientError> {
        let reply = self.inner.clone().get_state(pb::GetStateRequest {}).await;
        self.reply(reply)
    }

    /// Lets the robot walk for `seconds` of `clock`.
    pub async fn sleep(
        &self,
        seconds: f64,
        clock: SleepClock,
    ) -> Result<SessionState, RobotClientError> {
        let clock = match clock {
            SleepClock::Host => pb::Clock::Host,
            SleepClock::Virtual => pb::Clock::Virtual,
            SleepClock::Real => pb::Clock::Real,
        };
        let reply = self
            .inner
            .clone()
            .sleep(pb::SleepRequest {
                seconds,
                clock: clock as i32,
            })
            .await;
        self.reply(reply)
    }

    /// Runs a transformation script (C.2.7).
    pub async fn run_script(&self, script: &Script) -> Result<SessionState, RobotClientError> {
        let reply = self
            .inner
            .clone()
            .run_script(pb::RunScriptRequest {
                script_xml: script.to_xml_string(),
            })
            .await;
        self.reply(reply)
    }

    /// Lifts the robot `height` metres and lets it fall, on its back if asked.
    pub async fn drop_robot(
        &self,
        height: f64,
        upside_down: bool,
    ) -> Result<SessionState, RobotClientError> {
        let reply = self
            .inner
            .clone()
            .drop_robot(pb::DropRobotRequest {
                height_m: height,
                upside_down,
            })
            .await;
        self.reply(reply)
    }

    /// Module `module`'s motor breaks as `mode` says (healthy mends it).
    pub async fn set_defect(
        &self,
        module: yamor_core::ModuleId,
        mode: yamor_core::evaluation::DefectMode,
    ) -> Result<SessionState, RobotClientError> {
        let reply = self
            .inner
            .clone()
            .set_defect(pb::SetDefectRequest {
                module_id: module,
                mode: evaluation::defect_mode_to_pb(mode).into(),
            })
            .await;
        self.reply(reply)
    }

    pub async fn set_ground_friction(
        &self,
        friction: f64,
    ) -> Result<SessionState, RobotClientError> {
        let reply = self
            .inner
            .clone()
            .set_ground_friction(pb::SetGroundFrictionRequest { friction })
            .await;
        self.reply(reply)
    }
}
