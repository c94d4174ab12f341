//! The calls that open, connect and drive a robot: open and close, connect,
//! flush and refresh, control flags, state and sleep.

use std::collections::BTreeMap;

use yamor_core::{ModuleId, RobotConfig};
use yamor_snp::flags;

use crate::model::{ControlFlags, OpenRequest, SessionError, SessionState, SleepClock};

use super::clock::paced;
use super::state::{Changes, Session};
use super::{MAX_SLEEP, SessionHost};

impl SessionHost {
    /// Opens the robot, replacing any open one; on failure the open one stays.
    pub async fn open_simulation(
        &self,
        request: OpenRequest,
    ) -> Result<SessionState, SessionError> {
        if let Some(f) = request.ground_friction
            && !(f.is_finite() && f > 0.0 && f <= 10.0)
        {
            return Err(SessionError::Invalid(format!(
                "ground_friction must be in (0, 10] (0 for the default), got {f}"
            )));
        }
        let factory = self.factory.clone();
        self.with(move |shared, _| {
            let link = factory.open(&request.robot, request.seed, request.ground_friction)?;
            shared.session = Some(Session {
                link,
                robot: None,
                pending: BTreeMap::new(),
                defects: BTreeMap::new(),
            });
            Ok(shared.state())
        })
        .await
    }

    /// Drops the robot; closing twice is harmless.
    pub async fn close_simulation(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            shared.session = None;
            Ok(shared.state())
        })
        .await
    }

    /// Sends all of a configuration: Bluetooth network, limit angles, CPG
    /// structure and parameters, then UART, CPG and motors on (C.2.2–C.2.4).
    /// Everything is checked before the first message goes out.
    pub async fn connect_robot(&self, config: RobotConfig) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.open()?;
            session.connect(&ids, config)?;
            Ok(shared.state())
        })
        .await
    }

    /// Sends the pending changes only.
    pub async fn flush(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            let (session, ids) = shared.connected()?;
            let pending: Vec<(ModuleId, Changes)> =
                session.pending.iter().map(|(&id, &c)| (id, c)).collect();
            for (id, changes) in pending {
                session.send_parameters(&ids, id, changes)?;
                session.pending.remove(&id);
            }
            Ok(shared.state())
        })
        .await
    }

    /// Resends every parameter of every module (C.2.3 "Full CPG Refresh").
    pub async fn refresh(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| {
            let (session, ids) = shared.connected()?;
            for id in session.module_ids() {
                session.send_parameters(&ids, id, Changes::ALL)?;
                session.pending.remove(&id);
            }
            Ok(shared.state())
        })
        .await
    }

    /// Tristate control flags (C.2.4) to one module or to every module of the
    /// connected robot; motor-on never reaches a defect module (C.2.6).
    pub async fn send_control_message(
        &self,
        request: ControlFlags,
    ) -> Result<SessionState, SessionError> {
        self.with(move |shared, _| {
            let (session, ids) = shared.connected()?;
            let mut on = 0;
            let mut off = 0;
            for (flag, wanted) in [
                (flags::UART, request.uart),
                (flags::CPG, request.cpg),
                (flags::MOTOR, request.motor),
            ] {
                match wanted {
                    Some(true) => on |= flag,
                    Some(false) => off |= flag,
                    None => {}
                }
            }
            let targets = match request.module_id {
                Some(id) => {
                    session.configured(id)?;
                    vec![id]
                }
                None => session.module_ids(),
            };
            for id in targets {
                session.control(&ids, id, on, off)?;
            }
            Ok(shared.state())
        })
        .await
    }

    /// ElapsedTime, SimulationModeEnabled and RobotPosition; works closed too.
    pub async fn get_state(&self) -> Result<SessionState, SessionError> {
        self.with(|shared, _| Ok(shared.state())).await
    }
    /// Lets time pass. Host and virtual clocks advance the simulation as
    /// fast as it goes; the real clock paces it to the wall clock. On a real
    /// robot every clock is the wall clock.
    pub async fn sleep(
        &self,
        seconds: f64,
        clock: SleepClock,
    ) -> Result<SessionState, SessionError> {
        if !(seconds.is_finite() && (0.0..=MAX_SLEEP).contains(&seconds)) {
            return Err(SessionError::Invalid(format!(
                "seconds must be in [0, {MAX_SLEEP}], got {seconds}"
            )));
        }
        let wall = self.clock.clone();
        self.with(move |shared, cancel| {
            let (session, _) = shared.open()?;
            let link = session.link.as_mut();
            if clock == SleepClock::Real && link.simulation_mode() {
                paced(link, wall.as_ref(), seconds, cancel)?;
            } else {
                link.advance(seconds, cancel)?;
            }
            Ok(shared.state())
        })
        .await
    }
}
