//! What reaches the robot: SNP requests, control flags with defect motors
//! kept off, parameter messages and the whole ConnectRobot sequence.

use std::collections::HashMap;

use yamor_core::{ModuleId, RobotConfig};
use yamor_snp::configuration_messages;
use yamor_snp::{MAX_LINKS, SnpMessage, flags};

use crate::model::SessionError;

use super::check::{check_module, not_in_world};
use super::ids::Ids;
use super::state::{Changes, Session};

impl Session {
    /// Sends one request to module `real`; a `Nack` is a bad request (`SessionError::Invalid`).
    fn send(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
        message: &SnpMessage,
    ) -> Result<(), SessionError> {
        let dst = ids.wire(real)?;
        match self.link.send(dst, message)? {
            SnpMessage::Nack { code, .. } => Err(SessionError::Invalid(format!(
                "module {real} refused the {} message: {}",
                message.name(),
                nack_reason(code)
            ))),
            _ => Ok(()),
        }
    }

    /// A control message to module `real`, with motor-on stripped for a
    /// defect motor (C.2.6).
    pub(super) fn control(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
        on: u8,
        off: u8,
    ) -> Result<(), SessionError> {
        let on = if self.is_defect(real) {
            on & !flags::MOTOR
        } else {
            on
        };
        if on == 0 && off == 0 {
            return Ok(());
        }
        self.send(ids, real, &SnpMessage::Control { on, off })
    }

    /// The parameter messages of module `real` selected by `changes`.
    pub(super) fn send_parameters(
        &mut self,
        ids: &Ids<'_>,
        real: ModuleId,
        changes: Changes,
    ) -> Result<(), SessionError> {
        let Ok(module) = self.configured(real) else {
            return Ok(());
        };
        let wire = ids.wire_config(module)?;
        for message in configuration_messages(&wire) {
            if changes.wants(&message) {
                self.send(ids, real, &message)?;
            }
        }
        Ok(())
    }

    /// ConnectRobot: checks everything, then sends the whole configuration.
    pub(super) fn connect(
        &mut self,
        ids: &Ids<'_>,
        config: RobotConfig,
    ) -> Result<(), SessionError> {
        let world = self.link.supervisor().map(|s| s.modules());
        let mut owner = HashMap::new();
        for module in &config.modules {
            check_module(module)?;
            if module.cpg_links.len() > MAX_LINKS {
                return Err(SessionError::Invalid(format!(
                    "module {} has {} couplings, more than the {MAX_LINKS} one SNP message carries",
                    module.id,
                    module.cpg_links.len()
                )));
            }
            let id = ids.robot(module.id)?;
            ids.wire(module.id)?;
            if let Some(other) = owner.insert(id, module.id) {
                return Err(SessionError::Invalid(format!(
                    "real ids {other} and {} both map to simulation id {id}",
                    module.id
                )));
            }
            if let Some(world) = &world
                && !world.contains(&id)
            {
                return Err(not_in_world(module.id, id, world));
            }
        }
        // Modules of the previous robot that are not in this one leave the network.
        for id in self.module_ids() {
            if config.module(id).is_none() {
                self.send(
                    ids,
                    id,
                    &SnpMessage::Control {
                        on: 0,
                        off: flags::UART | flags::CPG | flags::MOTOR,
                    },
                )?;
            }
        }
        self.robot = None;
        self.pending.clear();
        // Thesis 5.2.1, in the order its user typed it: B (the Bluetooth
        // network, in file order, which C.2.1 makes a walk from the master),
        // L, U and C, N, O, and M last so that nothing moves before its
        // parameters are in.
        let mut messages = Vec::new();
        for module in &config.modules {
            messages.push((module.id, configuration_messages(&ids.wire_config(module)?)));
        }
        use yamor_snp::snp_kind::{BLUETOOTH_CONNECT, CPG_PARAMS, CPG_STRUCTURE, LIMIT_ANGLES};
        let phase = |session: &mut Self, kind: u8| -> Result<(), SessionError> {
            for (id, list) in &messages {
                for message in list.iter().filter(|m| m.kind() == kind) {
                    session.send(ids, *id, message)?;
                }
            }
            Ok(())
        };
        phase(self, BLUETOOTH_CONNECT)?;
        phase(self, LIMIT_ANGLES)?;
        for module in &config.modules {
            self.control(ids, module.id, flags::UART | flags::CPG, 0)?;
        }
        phase(self, CPG_STRUCTURE)?;
        phase(self, CPG_PARAMS)?;
        for module in &config.modules {
            if self.is_defect(module.id) {
                self.control(ids, module.id, 0, flags::MOTOR)?;
            } else {
                self.control(ids, module.id, flags::MOTOR, 0)?;
            }
        }
        self.robot = Some(config);
        Ok(())
    }
}

/// The firmware's `NackCode`s in words.
fn nack_reason(code: u8) -> String {
    match code {
        1 => "limit angles inverted or beyond the servo range".to_owned(),
        2 => "a CPG parameter is out of range".to_owned(),
        3 => "a link points at a module it does not know".to_owned(),
        4 => "not a request".to_owned(),
        code => format!("nack code {code}"),
    }
}
