//! The firmware of one YaMoR module: control flags, limit angles, the
//! oscillator parameters and CPG links it was told about, and its reaction to
//! SNP messages. The same code path serves the simulator and, later, the
//! emulated serial robot.

use yamor_core::cpg::OscillatorParams;
use yamor_core::{CpgLink, ModuleId};
use yamor_snp::limits::{HANDLE_RANGE, MAX_ANGLE_PARAMETER, MAX_SPEED};
use yamor_snp::{SnpMessage, flags};

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
                let range = HANDLE_RANGE + 1e-6;
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
                // SNP carries no motion: a YaMoR servo only swings.
                self.params = OscillatorParams {
                    amplitude,
                    offset,
                    omega: speed,
                    motion: yamor_core::Motion::Oscillate,
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
