//! The firmware of one YaMoR module: control flags, limit angles, the
//! oscillator parameters and CPG links it was told about, and its reaction to
//! SNP messages. The same code path serves the simulator and, later, the
//! emulated serial robot.

use crate::snp::{SnpMessage, WireLink, flags};
use yamor_core::cpg::OscillatorParams;
use yamor_core::{CpgLink, ModuleConfig, ModuleId};

/// Why a module refused a message (the `code` of a `Nack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum NackCode {
    /// The limit angles are inverted or outside the handle range.
    BadLimits = 1,
    /// A CPG parameter is out of range.
    BadParameter = 2,
    /// A CPG link points at a module this one does not know.
    UnknownLink = 3,
    /// The message is not for a module (it is a reply).
    NotARequest = 4,
}

/// State of one module's firmware.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleFirmware {
    pub id: ModuleId,
    /// UART / CPG / MOTOR bits of [`flags`].
    pub flags: u8,
    pub min_angle: f64,
    pub max_angle: f64,
    pub params: OscillatorParams,
    pub links: Vec<CpgLink>,
    /// Bluetooth link this module was asked to open.
    pub bluetooth_to: Option<ModuleId>,
}

/// Largest |amplitude|, |offset| a module accepts (rad): beyond the handle
/// range the set-point would only ever sit on a limit.
pub const MAX_ANGLE_PARAMETER: f64 = std::f64::consts::PI;
/// Largest |ω| a module accepts (rad/s); far above what the servo follows.
pub const MAX_SPEED: f64 = 100.0;

impl ModuleFirmware {
    /// A freshly powered module: everything off, full range, at rest.
    #[must_use]
    pub fn power_on(id: ModuleId) -> Self {
        Self {
            id,
            flags: 0,
            min_angle: -std::f64::consts::FRAC_PI_2,
            max_angle: std::f64::consts::FRAC_PI_2,
            params: OscillatorParams::default(),
            links: Vec::new(),
            bluetooth_to: None,
        }
    }

    #[must_use]
    pub fn cpg_on(&self) -> bool {
        self.flags & flags::CPG != 0
    }

    #[must_use]
    pub fn motor_on(&self) -> bool {
        self.flags & flags::MOTOR != 0
    }

    /// Clamps a set-point to the limit angles (thesis 6.1.2: the CPG itself
    /// never sees them).
    #[must_use]
    pub fn limit(&self, setpoint: f64) -> f64 {
        setpoint.clamp(self.min_angle, self.max_angle)
    }

    /// Applies one request. `known` tells whether a module id exists in the
    /// robot, so links to ghosts are refused instead of silently ignored.
    /// Returns the reply the module sends back.
    pub fn handle(&mut self, message: &SnpMessage, known: impl Fn(u8) -> bool) -> SnpMessage {
        let kind = message.kind();
        let nack = |code: NackCode| SnpMessage::Nack {
            of_kind: kind,
            code: code as u8,
        };
        match message {
            SnpMessage::BluetoothConnect { to } => {
                if !known(*to) {
                    return nack(NackCode::UnknownLink);
                }
                self.bluetooth_to = Some(ModuleId::from(*to));
            }
            SnpMessage::LimitAngles { min, max } => {
                let (min, max) = (f64::from(*min), f64::from(*max));
                let range = f64::from(crate::geometry::HANDLE_RANGE) + 1e-6;
                if min > max || min < -range || max > range {
                    return nack(NackCode::BadLimits);
                }
                self.min_angle = min;
                self.max_angle = max;
            }
            SnpMessage::Control { on, off } => {
                self.flags = (self.flags | on) & !off;
            }
            SnpMessage::CpgStructure { links } => {
                if links.iter().any(|l| !known(l.to)) {
                    return nack(NackCode::UnknownLink);
                }
                self.links = links
                    .iter()
                    .map(|l| CpgLink {
                        to: ModuleId::from(l.to),
                        phase: f64::from(l.phase),
                        weight: f64::from(l.weight),
                    })
                    .collect();
            }
            SnpMessage::CpgParams {
                amplitude,
                offset,
                speed,
            } => {
                let (amplitude, offset, speed) =
                    (f64::from(*amplitude), f64::from(*offset), f64::from(*speed));
                if amplitude.abs() > MAX_ANGLE_PARAMETER
                    || offset.abs() > MAX_ANGLE_PARAMETER
                    || speed.abs() > MAX_SPEED
                {
                    return nack(NackCode::BadParameter);
                }
                self.params = OscillatorParams {
                    amplitude,
                    offset,
                    omega: speed,
                };
            }
            SnpMessage::QueryState => {
                // Answered by the simulator, which knows the servo angle.
            }
            SnpMessage::Ack { .. } | SnpMessage::Nack { .. } | SnpMessage::State { .. } => {
                return nack(NackCode::NotARequest);
            }
        }
        SnpMessage::Ack { of_kind: kind }
    }
}

/// The SNP messages a host sends to bring a module to `config` (YaMoR Host 3
/// "Full CPG Refresh", C.2.3), in the order the host sends them.
#[must_use]
pub fn configuration_messages(config: &ModuleConfig) -> Vec<SnpMessage> {
    let mut messages = Vec::new();
    if let Some(to) = config.bluetooth_to {
        messages.push(SnpMessage::BluetoothConnect { to: to as u8 });
    }
    messages.push(SnpMessage::LimitAngles {
        min: config.min_angle as f32,
        max: config.max_angle as f32,
    });
    messages.push(SnpMessage::CpgStructure {
        links: config
            .cpg_links
            .iter()
            .map(|l| WireLink {
                to: l.to as u8,
                phase: l.phase as f32,
                weight: l.weight as f32,
            })
            .collect(),
    });
    messages.push(SnpMessage::CpgParams {
        amplitude: config.amplitude as f32,
        offset: config.offset as f32,
        speed: config.speed as f32,
    });
    messages
}
