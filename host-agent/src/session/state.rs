//! What a host holds: the open robot with its host copy, pending changes and
//! defect marks, and the state shared by every call.

use std::collections::{BTreeMap, HashMap};

use yamor_core::{ModuleConfig, ModuleId, RobotConfig};
use yamor_snp::{DefectMode, SnpMessage};

use crate::model::{ModuleView, SessionError, SessionState};

use super::check::not_in_world;
use super::ids::Ids;
use super::{RobotLink, Supervisor};

/// Which of a module's three parameter messages must be sent again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Changes {
    pub(super) limits: bool,
    pub(super) structure: bool,
    pub(super) params: bool,
}

impl Changes {
    pub(super) const ALL: Changes = Changes {
        limits: true,
        structure: true,
        params: true,
    };

    fn count(self) -> u32 {
        u32::from(self.limits) + u32::from(self.structure) + u32::from(self.params)
    }

    fn merge(&mut self, other: Changes) {
        self.limits |= other.limits;
        self.structure |= other.structure;
        self.params |= other.params;
    }

    pub(super) fn wants(self, message: &SnpMessage) -> bool {
        match message {
            SnpMessage::LimitAngles { .. } => self.limits,
            SnpMessage::CpgStructure { .. } => self.structure,
            SnpMessage::CpgParams { .. } => self.params,
            _ => false,
        }
    }
}

/// An open robot.
pub(super) struct Session {
    pub(super) link: Box<dyn RobotLink>,
    /// The host-side copy of the configuration, in real ids; `None` until
    /// `ConnectRobot`.
    pub(super) robot: Option<RobotConfig>,
    /// Real id → what changed since the last flush.
    pub(super) pending: BTreeMap<ModuleId, Changes>,
    /// Real id → defect mode (never `Healthy`).
    pub(super) defects: BTreeMap<ModuleId, DefectMode>,
}

pub(super) struct Shared {
    /// Of the backend, reported while no session is open.
    pub(super) simulation_mode: bool,
    pub(super) session: Option<Session>,
    /// real id → simulation id (C.1).
    pub(super) mapping: HashMap<u32, u32>,
}

fn no_robot() -> SessionError {
    SessionError::NotReady("no robot is connected: call ConnectRobot first".to_owned())
}

impl Shared {
    pub(super) fn open(&mut self) -> Result<(&mut Session, Ids<'_>), SessionError> {
        let session = self.session.as_mut().ok_or_else(|| {
            SessionError::NotReady("no simulation is open: call OpenSimulation first".to_owned())
        })?;
        let ids = Ids {
            mapping: &self.mapping,
            active: session.link.simulation_mode(),
        };
        Ok((session, ids))
    }

    pub(super) fn connected(&mut self) -> Result<(&mut Session, Ids<'_>), SessionError> {
        let (session, ids) = self.open()?;
        session.config()?;
        Ok((session, ids))
    }

    pub(super) fn state(&self) -> SessionState {
        match &self.session {
            None => SessionState {
                simulation_mode: self.simulation_mode,
                ..SessionState::default()
            },
            Some(s) => SessionState {
                open: true,
                connected: s.robot.is_some(),
                simulation_mode: s.link.simulation_mode(),
                elapsed: s.link.elapsed(),
                position: Some(s.link.position()),
                pending_changes: s.pending.values().map(|c| c.count()).sum(),
                up: s.link.up(),
            },
        }
    }
}

impl Session {
    pub(super) fn config(&self) -> Result<&RobotConfig, SessionError> {
        self.robot.as_ref().ok_or_else(no_robot)
    }

    pub(super) fn module_ids(&self) -> Vec<ModuleId> {
        self.robot
            .as_ref()
            .map(|r| r.modules.iter().map(|m| m.id).collect())
            .unwrap_or_default()
    }

    /// Module `real` of the connected configuration.
    pub(super) fn configured(&self, real: ModuleId) -> Result<&ModuleConfig, SessionError> {
        let robot = self.config()?;
        robot.module(real).ok_or_else(|| {
            let known: Vec<String> = robot.modules.iter().map(|m| m.id.to_string()).collect();
            SessionError::Invalid(format!(
                "unknown module id {real}: the connected robot has modules {}",
                known.join(", ")
            ))
        })
    }

    pub(super) fn supervisor(&mut self) -> Result<&mut dyn Supervisor, SessionError> {
        self.link.supervisor().ok_or_else(|| {
            SessionError::Unsupported(
                "this robot has no supervisor: only a simulation can do that".to_owned(),
            )
        })
    }

    /// The robot's id for `real`, checked against the world when the link
    /// can tell, otherwise against the configuration when one is connected.
    pub(super) fn known(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
    ) -> Result<ModuleId, SessionError> {
        let id = ids.robot(real)?;
        let world = self.link.supervisor().map(|s| s.modules());
        match world {
            Some(world) if !world.contains(&id) => Err(not_in_world(real, id, &world)),
            Some(_) => Ok(id),
            None if self.robot.is_some() => self.configured(real).map(|_| id),
            None => Ok(id),
        }
    }

    pub(super) fn is_defect(&self, real: ModuleId) -> bool {
        self.defects.contains_key(&real)
    }

    pub(super) fn module_view(&self, m: &ModuleConfig) -> ModuleView {
        ModuleView::of(m, self.is_defect(m.id))
    }

    /// Replaces a module of the host copy and queues `changes`.
    pub(super) fn store(
        &mut self,
        module: ModuleConfig,
        changes: Changes,
    ) -> Result<(), SessionError> {
        let id = module.id;
        let robot = self.robot.as_mut().ok_or_else(no_robot)?;
        if let Some(slot) = robot.module_mut(id) {
            *slot = module;
        }
        if changes.count() > 0 {
            self.pending.entry(id).or_default().merge(changes);
        }
        Ok(())
    }
}
