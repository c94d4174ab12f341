//! SNP: the framed binary wire format spoken by the simulated YaMoR modules
//! and by the Webots-style bridge (thesis 5.4, 5.5 and C.2.4).
//!
//! One frame is
//!
//! ```text
//! sync(1) | len(1) | kind(1) | dst(1) | src(1) | body(len-3) | crc16(2, LE)
//! ```
//!
//! * `sync` selects the channel: [`SNP_SYNC`] (`0xA5`) for module messages,
//!   [`BRIDGE_SYNC`] (`0xB7`) for supervisor commands and their replies.
//! * `len` counts `kind`, `dst`, `src` and the body, so it is `3..=255` and a
//!   whole frame is `len + 4` bytes (7..=259).
//! * `crc16` is CRC-16/IBM-3740 over every byte from `len` through the end of
//!   the body, stored little endian.
//! * On the SNP channel `dst` is a module id, [`BROADCAST`] or [`HOST`]; on
//!   the bridge channel `dst` carries a client-chosen sequence number that the
//!   reply echoes, and `src` is always 0.
//! * Numbers are little endian: `f32`, `f64`, `u32`, `i16`. Floats must be
//!   finite.
//!
//! The byte tables and a worked hex dump are in `docs/snp.md`.
//!
//! Decoding is total: [`decode_frame`] and [`FrameDecoder`] never panic,
//! whatever bytes they are fed, and the streaming decoder always makes
//! progress and resynchronises on the next sync byte.
//!
//! # Layout
//! One file, in sections, top to bottom:
//! - the frame's constants ([`SNP_SYNC`], [`BRIDGE_SYNC`], [`BROADCAST`],
//!   [`HOST`], the size limits) and the kind numbers of each channel
//!   ([`snp_kind`], [`bridge_kind`]), with the state bits ([`flags`]);
//! - types: the [`Channel`], [`SnpFrame`] and its [`SnpMessage`] (with
//!   [`WireLink`]), [`BridgeFrame`] and its [`BridgeMessage`], the defect
//!   codes ([`defect_code`], [`defect_from_code`]), and [`Frame`], either
//!   one;
//! - errors: [`EncodeError`], [`DecodeError`];
//! - encoding: each message's name and body, and `encode` on each frame
//!   and on [`Frame`];
//! - decoding: one whole frame from a buffer ([`decode_frame`]);
//! - streaming: the [`FrameDecoder`] that bytes are pushed into as they
//!   arrive;
//! - what a module's firmware accepts ([`limits`]) and the messages that
//!   configure a module ([`configuration_messages`]);
//! - unit tests: a stalled frame in the stream, the CRC, error messages
//!   cut on a character boundary (round trips, pinned bytes and garbage
//!   are in `tests/codec.rs`).

use thiserror::Error;
use yamor_core::Connector;

/// `dst` addressing every module.
pub const BROADCAST: u8 = 0xFF;
/// Address of the host / PC.
pub const HOST: u8 = 0xFE;
/// Sync byte of an SNP module message.
pub const SNP_SYNC: u8 = 0xA5;
/// Sync byte of a bridge (supervisor) command or reply.
pub const BRIDGE_SYNC: u8 = 0xB7;
/// Largest body: `len` is one byte and also counts kind, dst and src.
pub const MAX_BODY: usize = 255 - 3;
/// Smallest whole frame (empty body).
pub const MIN_FRAME: usize = 7;
/// Largest whole frame.
pub const MAX_FRAME: usize = 255 + 4;
/// Longest [`BridgeMessage::Error`] message written by the encoder, in bytes.
pub const MAX_ERROR_MESSAGE: usize = 200;
/// Most links a [`SnpMessage::CpgStructure`] can carry (`1 + 9 * 27 = 244`).
pub const MAX_LINKS: usize = (MAX_BODY - 1) / 9;

const CRC: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);

/// Bits of [`SnpMessage::Control`] and [`SnpMessage::State`].
pub mod flags {
    /// Module forwards messages over its UART.
    pub const UART: u8 = 1;
    /// The CPG oscillator runs.
    pub const CPG: u8 = 2;
    /// The servo is powered.
    pub const MOTOR: u8 = 4;
}

/// Message kinds of the SNP channel.
pub mod snp_kind {
    pub const BLUETOOTH_CONNECT: u8 = 0x01;
    pub const LIMIT_ANGLES: u8 = 0x02;
    pub const CONTROL: u8 = 0x03;
    pub const CPG_STRUCTURE: u8 = 0x04;
    pub const CPG_PARAMS: u8 = 0x05;
    pub const QUERY_STATE: u8 = 0x06;
    pub const ACK: u8 = 0x80;
    pub const NACK: u8 = 0x81;
    pub const STATE: u8 = 0x82;
}

/// Message kinds of the bridge channel.
pub mod bridge_kind {
    pub const GET_POSITION: u8 = 0x10;
    pub const SET_TIMER: u8 = 0x11;
    pub const GET_TIME: u8 = 0x12;
    pub const SET_MASTER: u8 = 0x13;
    pub const CONNECT: u8 = 0x14;
    pub const DISCONNECT: u8 = 0x15;
    pub const RESET: u8 = 0x16;
    pub const SET_FRICTION: u8 = 0x17;
    pub const DROP: u8 = 0x18;
    pub const DEFECT_MOTOR: u8 = 0x19;
    pub const SET_PACING: u8 = 0x1A;
    pub const OK: u8 = 0x90;
    pub const POSITION: u8 = 0x91;
    pub const TIME: u8 = 0x92;
    pub const TIMER_EXPIRED: u8 = 0x93;
    pub const ERROR: u8 = 0x9F;
}

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

/// Which of the two channels a frame travels on, told by its sync byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Module messages, sync `0xA5`.
    Snp,
    /// Supervisor commands and replies, sync `0xB7`.
    Bridge,
}

impl Channel {
    #[must_use]
    pub fn sync(self) -> u8 {
        match self {
            Channel::Snp => SNP_SYNC,
            Channel::Bridge => BRIDGE_SYNC,
        }
    }

    #[must_use]
    pub fn from_sync(byte: u8) -> Option<Self> {
        match byte {
            SNP_SYNC => Some(Channel::Snp),
            BRIDGE_SYNC => Some(Channel::Bridge),
            _ => None,
        }
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Channel::Snp => "snp",
            Channel::Bridge => "bridge",
        })
    }
}

/// A module message with its addressing.
#[derive(Debug, Clone, PartialEq)]
pub struct SnpFrame {
    /// Module id, [`BROADCAST`] or [`HOST`].
    pub dst: u8,
    /// Sender: module id or [`HOST`].
    pub src: u8,
    pub message: SnpMessage,
}

/// The SNP module messages.
#[derive(Debug, Clone, PartialEq)]
pub enum SnpMessage {
    /// 0x01, network build: module `dst` opens a Bluetooth link to `to`.
    BluetoothConnect { to: u8 },
    /// 0x02: servo limits in radians.
    LimitAngles { min: f32, max: f32 },
    /// 0x03, tristate control (thesis C.2.4): bits of `on` are set, bits of
    /// `off` cleared, the others unchanged. `on & off` must be 0.
    Control { on: u8, off: u8 },
    /// 0x04: the module's outgoing CPG couplings.
    CpgStructure { links: Vec<WireLink> },
    /// 0x05: oscillator parameters.
    CpgParams {
        amplitude: f32,
        offset: f32,
        speed: f32,
    },
    /// 0x06: the module answers with [`SnpMessage::State`].
    QueryState,
    /// 0x80, module → host: request of kind `of_kind` applied.
    Ack { of_kind: u8 },
    /// 0x81, module → host: request of kind `of_kind` refused.
    Nack { of_kind: u8, code: u8 },
    /// 0x82, module → host: flags, servo angle, setpoint and oscillator phase.
    State {
        flags: u8,
        angle: f32,
        setpoint: f32,
        phase: f32,
    },
}

/// One CPG coupling as carried by [`SnpMessage::CpgStructure`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WireLink {
    pub to: u8,
    pub phase: f32,
    pub weight: f32,
}

/// A bridge command or reply. On the wire the `dst` byte carries `seq` and
/// the `src` byte is 0.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeFrame {
    /// Chosen by the client, echoed in the reply.
    pub seq: u8,
    pub command: BridgeMessage,
}

/// The Webots-style supervisor commands (thesis 5.4.1) and their replies.
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeMessage {
    // requests (client -> bridge)
    /// 0x10: position of the central module.
    GetPosition,
    /// 0x11: advance / notify after `millis` of virtual time.
    SetTimer { millis: u32 },
    /// 0x12
    GetTime,
    /// 0x13
    SetMaster { id: u8 },
    /// 0x14: mate `conn_from` of `id_from` to `conn_to` of `id_to`.
    Connect {
        id_from: u8,
        conn_from: Connector,
        id_to: u8,
        conn_to: Connector,
        angle_deg: i16,
    },
    /// 0x15
    Disconnect { id: u8 },
    /// 0x16
    Reset,
    /// 0x17
    SetFriction { mu: f32 },
    /// 0x18
    Drop { height: f32, upside_down: bool },
    /// 0x19
    DefectMotor { id: u8, mode: DefectMode },
    /// 0x1A
    SetPacing { real_time: bool },
    // replies / events (bridge -> client)
    /// 0x90
    Ok,
    /// 0x91
    Position { x: f32, y: f32, z: f32 },
    /// 0x92
    Time { seconds: f64 },
    /// 0x93
    TimerExpired { seconds: f64 },
    /// 0x9F: UTF-8 message, the rest of the body. The encoder truncates it to
    /// [`MAX_ERROR_MESSAGE`] bytes at a character boundary.
    Error { code: u8, message: String },
}

pub use yamor_core::evaluation::DefectMode;

/// Wire code of a defect mode: 0 healthy, 1 limp, 2 stuck, 3 weak.
#[must_use]
pub fn defect_code(mode: DefectMode) -> u8 {
    match mode {
        DefectMode::Healthy => 0,
        DefectMode::Limp => 1,
        DefectMode::Stuck => 2,
        DefectMode::Weak => 3,
    }
}

/// The defect mode of a wire code, `None` for an unknown code.
#[must_use]
pub fn defect_from_code(code: u8) -> Option<DefectMode> {
    match code {
        0 => Some(DefectMode::Healthy),
        1 => Some(DefectMode::Limp),
        2 => Some(DefectMode::Stuck),
        3 => Some(DefectMode::Weak),
        _ => None,
    }
}

/// A decoded frame of either channel.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Snp(SnpFrame),
    Bridge(BridgeFrame),
}

impl From<SnpFrame> for Frame {
    fn from(frame: SnpFrame) -> Self {
        Frame::Snp(frame)
    }
}

impl From<BridgeFrame> for Frame {
    fn from(frame: BridgeFrame) -> Self {
        Frame::Bridge(frame)
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why a frame cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EncodeError {
    #[error("body of kind {kind:#04x} is {len} bytes, more than the 252 a frame holds")]
    BodyTooLong { kind: u8, len: usize },
    #[error("field `{field}` is not a finite number")]
    NonFinite { field: &'static str },
    #[error("invalid message of kind {kind:#04x}: {reason}")]
    Invalid { kind: u8, reason: &'static str },
}

/// Why the bytes at the start of a buffer are not a frame.
///
/// Only [`DecodeError::Incomplete`] is not fatal: wait for more bytes. For
/// every other error [`DecodeError::skip`] tells how many bytes to drop
/// before trying again.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// At least `needed` more bytes are required.
    #[error("incomplete frame: at least {needed} more bytes needed")]
    Incomplete { needed: usize },
    /// The first byte is not a sync byte.
    #[error("bad sync byte {0:#04x}")]
    BadSync(u8),
    /// The length byte is below 3.
    #[error("bad length byte {0}")]
    BadLength(u8),
    #[error("bad checksum: frame says {expected:#06x}, bytes give {found:#06x}")]
    BadChecksum { expected: u16, found: u16 },
    #[error("unknown {channel} message kind {kind:#04x}")]
    UnknownKind { channel: Channel, kind: u8 },
    /// Checksum fine, but the body does not fit the kind.
    #[error("bad body for kind {kind:#04x}: {reason}")]
    BadBody { kind: u8, reason: &'static str },
}

impl DecodeError {
    /// Whether more bytes may turn this into a frame.
    #[must_use]
    pub fn is_incomplete(&self) -> bool {
        matches!(self, DecodeError::Incomplete { .. })
    }

    /// How many bytes at the start of `buf` — the buffer this error came
    /// from — to discard before decoding again:
    ///
    /// * `Incomplete`: 0 (wait for more bytes);
    /// * `BadSync`: the whole run up to the next sync byte (at least 1);
    /// * `BadLength`, `BadChecksum`: 1, only the sync byte, since the length
    ///   cannot be trusted;
    /// * `UnknownKind`, `BadBody`: the whole frame, whose checksum was valid.
    ///
    /// Never more than `buf.len()`; at least 1 for a fatal error on a
    /// non-empty buffer.
    #[must_use]
    pub fn skip(&self, buf: &[u8]) -> usize {
        let n = match self {
            DecodeError::Incomplete { .. } => 0,
            DecodeError::BadSync(_) => buf
                .iter()
                .skip(1)
                .position(|&b| Channel::from_sync(b).is_some())
                .map_or(buf.len(), |p| p + 1),
            DecodeError::BadLength(_) | DecodeError::BadChecksum { .. } => 1,
            DecodeError::UnknownKind { .. } | DecodeError::BadBody { .. } => {
                buf.get(1).map_or(1, |&len| usize::from(len) + 4)
            }
        };
        n.min(buf.len())
    }
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

struct Writer {
    kind: u8,
    body: Vec<u8>,
}

impl Writer {
    fn new(kind: u8) -> Self {
        Writer {
            kind,
            body: Vec::new(),
        }
    }
    fn u8(&mut self, v: u8) {
        self.body.push(v);
    }
    fn bool(&mut self, v: bool) {
        self.body.push(u8::from(v));
    }
    fn i16(&mut self, v: i16) {
        self.body.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.body.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32, field: &'static str) -> Result<(), EncodeError> {
        if !v.is_finite() {
            return Err(EncodeError::NonFinite { field });
        }
        self.body.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn f64(&mut self, v: f64, field: &'static str) -> Result<(), EncodeError> {
        if !v.is_finite() {
            return Err(EncodeError::NonFinite { field });
        }
        self.body.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn bytes(&mut self, v: &[u8]) {
        self.body.extend_from_slice(v);
    }

    /// Wraps the body in a frame.
    fn frame(self, channel: Channel, dst: u8, src: u8) -> Result<Vec<u8>, EncodeError> {
        let Writer { kind, body } = self;
        let len = u8::try_from(body.len() + 3)
            .ok()
            .filter(|_| body.len() <= MAX_BODY)
            .ok_or(EncodeError::BodyTooLong {
                kind,
                len: body.len(),
            })?;
        let mut out = Vec::with_capacity(body.len() + MIN_FRAME);
        out.push(channel.sync());
        out.push(len);
        out.push(kind);
        out.push(dst);
        out.push(src);
        out.extend_from_slice(&body);
        let crc = CRC.checksum(out.get(1..).unwrap_or_default());
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }
}

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

impl SnpMessage {
    /// The message's name in words, for logs and errors.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            SnpMessage::BluetoothConnect { .. } => "Bluetooth connect",
            SnpMessage::LimitAngles { .. } => "limit angles",
            SnpMessage::Control { .. } => "control",
            SnpMessage::CpgStructure { .. } => "CPG structure",
            SnpMessage::CpgParams { .. } => "CPG parameters",
            SnpMessage::QueryState => "query state",
            SnpMessage::Ack { .. } => "acknowledgement",
            SnpMessage::Nack { .. } => "refusal",
            SnpMessage::State { .. } => "state",
        }
    }

    /// The kind byte.
    #[must_use]
    pub fn kind(&self) -> u8 {
        use snp_kind::*;
        match self {
            SnpMessage::BluetoothConnect { .. } => BLUETOOTH_CONNECT,
            SnpMessage::LimitAngles { .. } => LIMIT_ANGLES,
            SnpMessage::Control { .. } => CONTROL,
            SnpMessage::CpgStructure { .. } => CPG_STRUCTURE,
            SnpMessage::CpgParams { .. } => CPG_PARAMS,
            SnpMessage::QueryState => QUERY_STATE,
            SnpMessage::Ack { .. } => ACK,
            SnpMessage::Nack { .. } => NACK,
            SnpMessage::State { .. } => STATE,
        }
    }

    /// Whether this is a host → module request (as opposed to a reply).
    #[must_use]
    pub fn is_request(&self) -> bool {
        self.kind() < 0x80
    }

    fn body(&self) -> Result<Writer, EncodeError> {
        let mut w = Writer::new(self.kind());
        match self {
            SnpMessage::BluetoothConnect { to } => w.u8(*to),
            SnpMessage::LimitAngles { min, max } => {
                w.f32(*min, "min")?;
                w.f32(*max, "max")?;
            }
            SnpMessage::Control { on, off } => {
                if on & off != 0 {
                    return Err(EncodeError::Invalid {
                        kind: w.kind,
                        reason: "a flag is both switched on and off",
                    });
                }
                w.u8(*on);
                w.u8(*off);
            }
            SnpMessage::CpgStructure { links } => {
                let count = u8::try_from(links.len())
                    .ok()
                    .filter(|_| links.len() <= MAX_LINKS)
                    .ok_or(EncodeError::BodyTooLong {
                        kind: w.kind,
                        len: 1 + 9 * links.len(),
                    })?;
                w.u8(count);
                for link in links {
                    w.u8(link.to);
                    w.f32(link.phase, "links.phase")?;
                    w.f32(link.weight, "links.weight")?;
                }
            }
            SnpMessage::CpgParams {
                amplitude,
                offset,
                speed,
            } => {
                w.f32(*amplitude, "amplitude")?;
                w.f32(*offset, "offset")?;
                w.f32(*speed, "speed")?;
            }
            SnpMessage::QueryState => {}
            SnpMessage::Ack { of_kind } => w.u8(*of_kind),
            SnpMessage::Nack { of_kind, code } => {
                w.u8(*of_kind);
                w.u8(*code);
            }
            SnpMessage::State {
                flags,
                angle,
                setpoint,
                phase,
            } => {
                w.u8(*flags);
                w.f32(*angle, "angle")?;
                w.f32(*setpoint, "setpoint")?;
                w.f32(*phase, "phase")?;
            }
        }
        Ok(w)
    }
}

impl BridgeMessage {
    /// The kind byte.
    #[must_use]
    pub fn kind(&self) -> u8 {
        use bridge_kind::*;
        match self {
            BridgeMessage::GetPosition => GET_POSITION,
            BridgeMessage::SetTimer { .. } => SET_TIMER,
            BridgeMessage::GetTime => GET_TIME,
            BridgeMessage::SetMaster { .. } => SET_MASTER,
            BridgeMessage::Connect { .. } => CONNECT,
            BridgeMessage::Disconnect { .. } => DISCONNECT,
            BridgeMessage::Reset => RESET,
            BridgeMessage::SetFriction { .. } => SET_FRICTION,
            BridgeMessage::Drop { .. } => DROP,
            BridgeMessage::DefectMotor { .. } => DEFECT_MOTOR,
            BridgeMessage::SetPacing { .. } => SET_PACING,
            BridgeMessage::Ok => OK,
            BridgeMessage::Position { .. } => POSITION,
            BridgeMessage::Time { .. } => TIME,
            BridgeMessage::TimerExpired { .. } => TIMER_EXPIRED,
            BridgeMessage::Error { .. } => ERROR,
        }
    }

    /// Whether this is a client → bridge request (as opposed to a reply or
    /// event).
    #[must_use]
    pub fn is_request(&self) -> bool {
        self.kind() < 0x80
    }

    fn body(&self) -> Result<Writer, EncodeError> {
        let mut w = Writer::new(self.kind());
        match self {
            BridgeMessage::GetPosition
            | BridgeMessage::GetTime
            | BridgeMessage::Reset
            | BridgeMessage::Ok => {}
            BridgeMessage::SetTimer { millis } => w.u32(*millis),
            BridgeMessage::SetMaster { id } | BridgeMessage::Disconnect { id } => w.u8(*id),
            BridgeMessage::Connect {
                id_from,
                conn_from,
                id_to,
                conn_to,
                angle_deg,
            } => {
                w.u8(*id_from);
                w.u8(conn_from.code());
                w.u8(*id_to);
                w.u8(conn_to.code());
                w.i16(*angle_deg);
            }
            BridgeMessage::SetFriction { mu } => w.f32(*mu, "mu")?,
            BridgeMessage::Drop {
                height,
                upside_down,
            } => {
                w.f32(*height, "height")?;
                w.bool(*upside_down);
            }
            BridgeMessage::DefectMotor { id, mode } => {
                w.u8(*id);
                w.u8(defect_code(*mode));
            }
            BridgeMessage::SetPacing { real_time } => w.bool(*real_time),
            BridgeMessage::Position { x, y, z } => {
                w.f32(*x, "x")?;
                w.f32(*y, "y")?;
                w.f32(*z, "z")?;
            }
            BridgeMessage::Time { seconds } | BridgeMessage::TimerExpired { seconds } => {
                w.f64(*seconds, "seconds")?;
            }
            BridgeMessage::Error { code, message } => {
                w.u8(*code);
                w.bytes(truncate_utf8(message, MAX_ERROR_MESSAGE).as_bytes());
            }
        }
        Ok(w)
    }
}

impl SnpFrame {
    #[must_use]
    pub fn new(dst: u8, src: u8, message: SnpMessage) -> Self {
        SnpFrame { dst, src, message }
    }

    /// The frame's bytes on the wire.
    ///
    /// # Errors
    /// [`EncodeError`] if a float is not finite, the body would exceed
    /// [`MAX_BODY`] bytes or a [`SnpMessage::Control`] switches a flag both
    /// on and off.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        self.message.body()?.frame(Channel::Snp, self.dst, self.src)
    }
}

impl BridgeFrame {
    #[must_use]
    pub fn new(seq: u8, command: BridgeMessage) -> Self {
        BridgeFrame { seq, command }
    }

    /// The frame's bytes on the wire.
    ///
    /// # Errors
    /// [`EncodeError`] if a float is not finite, the body would exceed
    /// [`MAX_BODY`] bytes or a [`SnpMessage::Control`] switches a flag both
    /// on and off.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        self.command.body()?.frame(Channel::Bridge, self.seq, 0)
    }
}

impl Frame {
    /// The frame's bytes on the wire.
    ///
    /// # Errors
    /// [`EncodeError`] if a float is not finite, the body would exceed
    /// [`MAX_BODY`] bytes or a [`SnpMessage::Control`] switches a flag both
    /// on and off.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        match self {
            Frame::Snp(f) => f.encode(),
            Frame::Bridge(f) => f.encode(),
        }
    }

    #[must_use]
    pub fn channel(&self) -> Channel {
        match self {
            Frame::Snp(_) => Channel::Snp,
            Frame::Bridge(_) => Channel::Bridge,
        }
    }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

/// Reads a body without ever indexing out of bounds.
struct Reader<'a> {
    kind: u8,
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bad(&self, reason: &'static str) -> DecodeError {
        DecodeError::BadBody {
            kind: self.kind,
            reason,
        }
    }
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(*head)
            }
            None => Err(self.bad("body too short")),
        }
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        self.take::<1>().map(|[b]| b)
    }
    fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.bad("boolean byte is neither 0 nor 1")),
        }
    }
    fn i16(&mut self) -> Result<i16, DecodeError> {
        self.take().map(i16::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take().map(u32::from_le_bytes)
    }
    fn f32(&mut self) -> Result<f32, DecodeError> {
        let v = f32::from_le_bytes(self.take()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(self.bad("non-finite float"))
        }
    }
    fn f64(&mut self) -> Result<f64, DecodeError> {
        let v = f64::from_le_bytes(self.take()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(self.bad("non-finite float"))
        }
    }
    fn connector(&mut self) -> Result<Connector, DecodeError> {
        let code = self.u8()?;
        Connector::from_code(code).ok_or_else(|| self.bad("unknown connector code"))
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }
    /// The body must be used up.
    fn done<T>(&self, value: T) -> Result<T, DecodeError> {
        if self.rest.is_empty() {
            Ok(value)
        } else {
            Err(self.bad("body too long"))
        }
    }
}

fn decode_snp(kind: u8, body: &[u8]) -> Result<SnpMessage, DecodeError> {
    use snp_kind::*;
    let mut r = Reader { kind, rest: body };
    let message = match kind {
        BLUETOOTH_CONNECT => SnpMessage::BluetoothConnect { to: r.u8()? },
        LIMIT_ANGLES => SnpMessage::LimitAngles {
            min: r.f32()?,
            max: r.f32()?,
        },
        CONTROL => {
            let (on, off) = (r.u8()?, r.u8()?);
            if on & off != 0 {
                return Err(r.bad("a flag is both switched on and off"));
            }
            SnpMessage::Control { on, off }
        }
        CPG_STRUCTURE => {
            let count = usize::from(r.u8()?);
            if r.rest.len() != count * 9 {
                return Err(r.bad("link count does not match body size"));
            }
            let mut links = Vec::with_capacity(count);
            for _ in 0..count {
                links.push(WireLink {
                    to: r.u8()?,
                    phase: r.f32()?,
                    weight: r.f32()?,
                });
            }
            SnpMessage::CpgStructure { links }
        }
        CPG_PARAMS => SnpMessage::CpgParams {
            amplitude: r.f32()?,
            offset: r.f32()?,
            speed: r.f32()?,
        },
        QUERY_STATE => SnpMessage::QueryState,
        ACK => SnpMessage::Ack { of_kind: r.u8()? },
        NACK => SnpMessage::Nack {
            of_kind: r.u8()?,
            code: r.u8()?,
        },
        STATE => SnpMessage::State {
            flags: r.u8()?,
            angle: r.f32()?,
            setpoint: r.f32()?,
            phase: r.f32()?,
        },
        _ => {
            return Err(DecodeError::UnknownKind {
                channel: Channel::Snp,
                kind,
            });
        }
    };
    r.done(message)
}

fn decode_bridge(kind: u8, body: &[u8]) -> Result<BridgeMessage, DecodeError> {
    use bridge_kind::*;
    let mut r = Reader { kind, rest: body };
    let message = match kind {
        GET_POSITION => BridgeMessage::GetPosition,
        SET_TIMER => BridgeMessage::SetTimer { millis: r.u32()? },
        GET_TIME => BridgeMessage::GetTime,
        SET_MASTER => BridgeMessage::SetMaster { id: r.u8()? },
        CONNECT => BridgeMessage::Connect {
            id_from: r.u8()?,
            conn_from: r.connector()?,
            id_to: r.u8()?,
            conn_to: r.connector()?,
            angle_deg: r.i16()?,
        },
        DISCONNECT => BridgeMessage::Disconnect { id: r.u8()? },
        RESET => BridgeMessage::Reset,
        SET_FRICTION => BridgeMessage::SetFriction { mu: r.f32()? },
        DROP => BridgeMessage::Drop {
            height: r.f32()?,
            upside_down: r.bool()?,
        },
        DEFECT_MOTOR => {
            let id = r.u8()?;
            let mode = defect_from_code(r.u8()?).ok_or_else(|| r.bad("unknown defect mode"))?;
            BridgeMessage::DefectMotor { id, mode }
        }
        SET_PACING => BridgeMessage::SetPacing {
            real_time: r.bool()?,
        },
        OK => BridgeMessage::Ok,
        POSITION => BridgeMessage::Position {
            x: r.f32()?,
            y: r.f32()?,
            z: r.f32()?,
        },
        TIME => BridgeMessage::Time { seconds: r.f64()? },
        TIMER_EXPIRED => BridgeMessage::TimerExpired { seconds: r.f64()? },
        ERROR => {
            let code = r.u8()?;
            let message = std::str::from_utf8(r.rest())
                .map_err(|_| r.bad("error message is not UTF-8"))?
                .to_owned();
            BridgeMessage::Error { code, message }
        }
        _ => {
            return Err(DecodeError::UnknownKind {
                channel: Channel::Bridge,
                kind,
            });
        }
    };
    r.done(message)
}

/// Decodes the frame at the start of `buf`; returns it and the number of
/// bytes it took.
///
/// Checks, in order: sync byte ([`DecodeError::BadSync`]), length byte
/// ([`DecodeError::BadLength`]), completeness ([`DecodeError::Incomplete`]),
/// checksum ([`DecodeError::BadChecksum`]), kind
/// ([`DecodeError::UnknownKind`]) and body ([`DecodeError::BadBody`]).
/// Use [`DecodeError::skip`] to know how many bytes to drop after an error.
///
/// # Errors
/// [`DecodeError::Incomplete`] if `buf` holds only the start of a frame
/// (not fatal); any other [`DecodeError`] if the bytes are not a frame.
pub fn decode_frame(buf: &[u8]) -> Result<(Frame, usize), DecodeError> {
    let Some(&sync) = buf.first() else {
        return Err(DecodeError::Incomplete { needed: MIN_FRAME });
    };
    let channel = Channel::from_sync(sync).ok_or(DecodeError::BadSync(sync))?;
    let Some(&len) = buf.get(1) else {
        return Err(DecodeError::Incomplete {
            needed: MIN_FRAME - buf.len(),
        });
    };
    if len < 3 {
        return Err(DecodeError::BadLength(len));
    }
    let total = usize::from(len) + 4;
    let (Some(covered), Some(&[lo, hi])) = (buf.get(1..total - 2), buf.get(total - 2..total))
    else {
        return Err(DecodeError::Incomplete {
            needed: total.saturating_sub(buf.len()).max(1),
        });
    };
    let expected = u16::from_le_bytes([lo, hi]);
    let found = CRC.checksum(covered);
    if expected != found {
        return Err(DecodeError::BadChecksum { expected, found });
    }
    let Some((&[kind, dst, src], body)) = covered.get(1..).and_then(|c| c.split_first_chunk())
    else {
        // Unreachable: len >= 3 guarantees kind, dst and src.
        return Err(DecodeError::BadLength(len));
    };
    let frame = match channel {
        Channel::Snp => Frame::Snp(SnpFrame {
            dst,
            src,
            message: decode_snp(kind, body)?,
        }),
        Channel::Bridge => {
            let command = decode_bridge(kind, body)?;
            if src != 0 {
                return Err(DecodeError::BadBody {
                    kind,
                    reason: "bridge frame with non-zero src byte",
                });
            }
            Frame::Bridge(BridgeFrame { seq: dst, command })
        }
    };
    Ok((frame, total))
}

// ---------------------------------------------------------------------------
// Streaming
// ---------------------------------------------------------------------------

/// Streaming decoder: push bytes as they arrive, pull frames and errors.
///
/// * Garbage (bytes that cannot start a frame) is skipped up to the next sync
///   byte, with one [`DecodeError::BadSync`] per garbage run.
/// * On [`DecodeError::BadLength`] or [`DecodeError::BadChecksum`] only the
///   sync byte is dropped, so a valid frame hidden behind a false sync byte
///   is still found; the non-sync bytes that follow belong to the same
///   corruption and are skipped silently.
/// * On [`DecodeError::UnknownKind`] or [`DecodeError::BadBody`] (checksum
///   valid) the whole frame is dropped.
/// * Every `Some` returned by [`FrameDecoder::next_frame`] consumes at least
///   one byte, so draining it always terminates.
/// * At most [`FrameDecoder::CAPACITY`] bytes are kept: pushing more
///   discards the oldest ones (see [`FrameDecoder::discarded`]).
#[derive(Debug, Default, Clone)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` before `start` are consumed.
    start: usize,
    /// The bytes being skipped already produced an error.
    in_garbage: bool,
    discarded: u64,
}

impl FrameDecoder {
    /// Most bytes buffered.
    pub const CAPACITY: usize = 64 * 1024;

    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start.min(self.buf.len()));
            self.start = 0;
        }
        let total = self.buf.len() + bytes.len();
        if total > Self::CAPACITY {
            let excess = total - Self::CAPACITY;
            self.discarded = self
                .discarded
                .saturating_add(u64::try_from(excess).unwrap_or(u64::MAX));
            // The stream lost bytes: whatever follows is reported afresh.
            self.in_garbage = false;
            if excess >= self.buf.len() {
                let from_new = excess - self.buf.len();
                self.buf.clear();
                self.buf
                    .extend_from_slice(bytes.get(from_new..).unwrap_or_default());
                return;
            }
            self.buf.drain(..excess);
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes waiting to be decoded.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }

    /// Bytes thrown away because the buffer was full.
    #[must_use]
    pub fn discarded(&self) -> u64 {
        self.discarded
    }

    fn pending(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Gives up on a frame that started but never finished: the line went
    /// quiet mid-frame, so a byte was lost or a corrupted length promised
    /// more than will come. Its sync byte is dropped so that frames buffered
    /// behind it are found; without this a corrupted length would hide the
    /// next replies until enough bytes arrived. Returns whether anything was
    /// given up.
    pub fn abandon_partial(&mut self) -> bool {
        let pending = self.pending();
        if pending.is_empty()
            || !matches!(decode_frame(pending), Err(DecodeError::Incomplete { .. }))
        {
            return false;
        }
        self.consume(1);
        self.in_garbage = true;
        true
    }

    /// The next frame or error; `None` when more bytes are needed.
    pub fn next_frame(&mut self) -> Option<Result<Frame, DecodeError>> {
        loop {
            let pending = self.pending();
            let &first = pending.first()?;
            match decode_frame(pending) {
                Ok((frame, used)) => {
                    self.consume(used.max(1));
                    self.in_garbage = false;
                    return Some(Ok(frame));
                }
                Err(DecodeError::Incomplete { .. }) => return None,
                Err(e @ DecodeError::BadSync(_)) => {
                    let skip = e.skip(pending).max(1);
                    self.consume(skip);
                    if !self.in_garbage {
                        self.in_garbage = true;
                        return Some(Err(DecodeError::BadSync(first)));
                    }
                    // Same garbage run, already reported: keep going.
                }
                Err(e @ (DecodeError::BadLength(_) | DecodeError::BadChecksum { .. })) => {
                    self.consume(1);
                    self.in_garbage = true;
                    return Some(Err(e));
                }
                Err(e @ (DecodeError::UnknownKind { .. } | DecodeError::BadBody { .. })) => {
                    let skip = e.skip(pending).max(1);
                    self.consume(skip);
                    self.in_garbage = false;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What a module's firmware accepts, and so what a host may send it.
pub mod limits {
    /// Mechanical range of the handle either side of zero (rad).
    pub const HANDLE_RANGE: f64 = std::f64::consts::FRAC_PI_2;
    /// Largest |amplitude|, |offset| a module accepts (rad): beyond the handle
    /// range the set-point would only ever sit on a limit.
    pub const MAX_ANGLE_PARAMETER: f64 = std::f64::consts::PI;
    /// Largest |ω| a module accepts (rad/s); far above what the servo follows.
    pub const MAX_SPEED: f64 = 100.0;
}

/// The SNP messages a host sends to bring a module to `config` (YaMoR Host 3
/// "Full CPG Refresh", C.2.3), in the order the host sends them.
#[must_use]
pub fn configuration_messages(config: &yamor_core::ModuleConfig) -> Vec<SnpMessage> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stalled_frame_is_abandoned_and_the_frames_behind_it_are_found() {
        let good = SnpFrame::new(HOST, 3, SnpMessage::Ack { of_kind: 2 })
            .encode()
            .unwrap();
        let mut liar = good.clone();
        liar[1] = 200; // the length now promises far more than will come
        let mut decoder = FrameDecoder::new();
        decoder.push(&liar);
        decoder.push(&good);
        assert!(decoder.next_frame().is_none(), "waiting for 204 bytes");
        assert!(decoder.abandon_partial());
        let mut found = None;
        while let Some(next) = decoder.next_frame() {
            if let Ok(frame) = next {
                found = Some(frame);
            }
        }
        assert_eq!(
            found,
            Some(Frame::Snp(SnpFrame::new(
                HOST,
                3,
                SnpMessage::Ack { of_kind: 2 }
            )))
        );
        assert!(!decoder.abandon_partial(), "nothing left to give up");
    }

    #[test]
    fn crc_is_ibm_3740() {
        assert_eq!(CRC.checksum(b"123456789"), 0x29B1);
    }

    #[test]
    fn truncates_on_char_boundary() {
        let s = "é".repeat(150); // 300 bytes
        let t = truncate_utf8(&s, MAX_ERROR_MESSAGE);
        assert_eq!(t.len(), 200);
        let s = format!("a{}", "é".repeat(150));
        assert_eq!(truncate_utf8(&s, MAX_ERROR_MESSAGE).len(), 199);
    }
}
