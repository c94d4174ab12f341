//! Defect motors (C.2.6), marked on any robot, and the calls only a
//! physical world answers: module connections and C.2.7 scripts, ground
//! friction, dropping, resetting.

use std::sync::atomic::AtomicBool;

use yamor_core::script::{Script, ScriptStep, Step};
use yamor_core::{Connection, ModuleId};
use yamor_snp::{DefectMode, flags};

use crate::model::{SessionError, SessionState};

use super::ids::Ids;
use super::state::Session;
use super::{MAX_SLEEP, SessionHost};

impl SessionHost {
    /// Marks a motor defect (C.2.6) or heals it.
    pub async fn set_defect(
        &self,
        id: ModuleId,
        mode: DefectMode,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            let sim = session.known(&ids, id)?;
            if let Some(supervisor) = session.link.supervisor() {
                supervisor.set_defect(sim, mode)?;
            }
            let connected = session.robot.is_some();
            if mode == DefectMode::Healthy {
                session.defects.remove(&id);
                if connected {
                    session.control(&ids, id, flags::MOTOR, 0)?;
                }
            } else {
                session.defects.insert(id, mode);
                if connected {
                    session.control(&ids, id, 0, flags::MOTOR)?;
                }
            }
            Ok(shared.state())
        })
        .await
    }

    pub async fn connect_modules(
        &self,
        connection: Connection,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            session.run_step(&ids, &Step::Connect(connection), &AtomicBool::new(false))?;
            Ok(shared.state())
        })
        .await
    }

    pub async fn disconnect_module(&self, id: ModuleId) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            session.run_step(&ids, &Step::Disconnect(id), &AtomicBool::new(false))?;
            Ok(shared.state())
        })
        .await
    }

    /// Runs a C.2.7 transformation script. A step that fails stops the
    /// script, with the steps before it applied, and the error names its line.
    pub async fn run_script(&self, script: Script) -> Result<SessionState, SessionError> {
        self.with(move |shared, cancel| {
            check_pauses(&script)?;
            let (session, ids) = shared.open()?;
            session.supervisor()?;
            for ScriptStep { line, step } in &script.steps {
                session.run_step(&ids, step, cancel).map_err(|e| {
                    e.context(&format!("script_xml:{line}: <{}>: ", step.element()))
                })?;
            }
            Ok(shared.state())
        })
        .await
    }

    pub async fn set_ground_friction(&self, friction: f64) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.open()?;
            session.supervisor()?.set_ground_friction(friction)?;
            Ok(shared.state())
        })
        .await
    }

    /// Lifts the robot to `height` m and lets it fall.
    pub async fn drop_robot(
        &self,
        height: f64,
        upside_down: bool,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, _) = shared.open()?;
            session.supervisor()?.drop_robot(height, upside_down)?;
            Ok(shared.state())
        })
        .await
    }

    /// The world as opened, every module powered on but idle: the modules
    /// forgot their configuration, so the robot must be connected again.
    /// Defect marks stay, and their physical side is applied again.
    pub async fn reset_simulation(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            let (session, ids) = shared.open()?;
            session.supervisor()?.reset()?;
            session.robot = None;
            session.pending.clear();
            let defects: Vec<(ModuleId, DefectMode)> =
                session.defects.iter().map(|(&id, &d)| (id, d)).collect();
            for (id, mode) in defects {
                let sim = ids.robot(id)?;
                session.supervisor()?.set_defect(sim, mode)?;
            }
            Ok(shared.state())
        })
        .await
    }
}

impl Session {
    /// One connect, disconnect or pause, ids translated.
    fn run_step(
        &mut self,
        ids: &Ids<'_>,
        step: &Step,
        cancel: &AtomicBool,
    ) -> Result<(), SessionError> {
        match *step {
            Step::Connect(c) => {
                self.supervisor()?;
                let connection = Connection {
                    id_from: self.known(ids, c.id_from)?,
                    id_to: self.known(ids, c.id_to)?,
                    ..c
                };
                self.supervisor()?.connect(connection)?;
            }
            Step::Disconnect(real) => {
                self.supervisor()?;
                let id = self.known(ids, real)?;
                self.supervisor()?.disconnect(id)?;
            }
            Step::Pause(seconds) => self.link.advance(seconds, cancel)?,
        }
        Ok(())
    }
}

/// A script may not sleep longer than one `Sleep` call; the error names the
/// pause that goes over.
fn check_pauses(script: &Script) -> Result<(), SessionError> {
    match script.pauses_exceed(MAX_SLEEP) {
        Some(line) => Err(SessionError::Invalid(format!(
            "script_xml:{line}: <pause>: the pauses add up to more than {MAX_SLEEP} s"
        ))),
        None => Ok(()),
    }
}
