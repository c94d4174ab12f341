//! The stateful IYaMoRHost3 surface (thesis 5.5.3): a session opens a robot
//! world, keeps the host-side copy of every module parameter, queues changes
//! until `Flush`, and drives the robot over SNP.

use tonic::Status;
use yamor_proto::v1 as pb;

/// Opens robot links for sessions; implemented by backends that have a robot.
pub trait SessionFactory: Send + Sync {}

/// The session RPCs of one host.
pub struct SessionHost {}

impl SessionHost {
    /// The session surface of `backend`, or `None` when it has no robot.
    #[must_use]
    pub fn for_backend(backend: &std::sync::Arc<dyn crate::Backend>) -> Option<Self> {
        backend.session().map(|_| SessionHost {})
    }

    pub async fn open_simulation(
        &self,
        _request: pb::OpenSimulationRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("open_simulation"))
    }

    pub async fn close_simulation(
        &self,
        _request: pb::CloseSimulationRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("close_simulation"))
    }

    pub async fn connect_robot(
        &self,
        _request: pb::ConnectRobotRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("connect_robot"))
    }

    pub async fn flush(&self, _request: pb::FlushRequest) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("flush"))
    }

    pub async fn refresh(&self, _request: pb::RefreshRequest) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("refresh"))
    }

    pub async fn send_control_message(
        &self,
        _request: pb::ControlMessageRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("send_control_message"))
    }

    pub async fn get_state(
        &self,
        _request: pb::GetStateRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("get_state"))
    }

    pub async fn sleep(&self, _request: pb::SleepRequest) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("sleep"))
    }

    pub async fn list_modules(
        &self,
        _request: pb::ListModulesRequest,
    ) -> Result<pb::ListModulesResponse, Status> {
        Err(Status::unimplemented("list_modules"))
    }

    pub async fn get_module(
        &self,
        _request: pb::GetModuleRequest,
    ) -> Result<pb::ModuleParameters, Status> {
        Err(Status::unimplemented("get_module"))
    }

    pub async fn set_module(
        &self,
        _request: pb::SetModuleRequest,
    ) -> Result<pb::ModuleParameters, Status> {
        Err(Status::unimplemented("set_module"))
    }

    pub async fn list_couplings(
        &self,
        _request: pb::ListCouplingsRequest,
    ) -> Result<pb::ListCouplingsResponse, Status> {
        Err(Status::unimplemented("list_couplings"))
    }

    pub async fn set_coupling(
        &self,
        _request: pb::SetCouplingRequest,
    ) -> Result<pb::Coupling, Status> {
        Err(Status::unimplemented("set_coupling"))
    }

    pub async fn remove_all_couplings(
        &self,
        _request: pb::RemoveAllCouplingsRequest,
    ) -> Result<pb::ListCouplingsResponse, Status> {
        Err(Status::unimplemented("remove_all_couplings"))
    }

    pub async fn set_defect(
        &self,
        _request: pb::SetDefectRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("set_defect"))
    }

    pub async fn connect_modules(
        &self,
        _request: pb::ConnectModulesRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("connect_modules"))
    }

    pub async fn disconnect_module(
        &self,
        _request: pb::DisconnectModuleRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("disconnect_module"))
    }

    pub async fn run_script(
        &self,
        _request: pb::RunScriptRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("run_script"))
    }

    pub async fn set_ground_friction(
        &self,
        _request: pb::SetGroundFrictionRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("set_ground_friction"))
    }

    pub async fn drop_robot(
        &self,
        _request: pb::DropRobotRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("drop_robot"))
    }

    pub async fn reset_simulation(
        &self,
        _request: pb::ResetSimulationRequest,
    ) -> Result<pb::SessionState, Status> {
        Err(Status::unimplemented("reset_simulation"))
    }

    pub async fn set_id_mapping(&self, _request: pb::IdMapping) -> Result<pb::IdMapping, Status> {
        Err(Status::unimplemented("set_id_mapping"))
    }

    pub async fn get_id_mapping(
        &self,
        _request: pb::GetIdMappingRequest,
    ) -> Result<pb::IdMapping, Status> {
        Err(Status::unimplemented("get_id_mapping"))
    }
}
