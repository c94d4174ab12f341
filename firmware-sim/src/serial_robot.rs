//! An emulated YaMoR robot behind a pseudo-terminal: the real-robot backend
//! opens [`EmulatedRobot::path`] with `serialport` exactly as it would open
//! the USB adapter of the Bluetooth dongle, and speaks SNP to it.
//!
//! Behind the terminal the same module firmware and physics as the simulator
//! run in (scaled) real time, with what makes the real robot slow and
//! unreliable (thesis 5.2.1, 5.5.4):
//! - every message takes [`EmulationSettings::message_delay`] robot seconds
//!   to be handled, and a module takes up to
//!   [`EmulationSettings::join_delay`] to join the Bluetooth network;
//! - only the master module (the one the dongle talks to) and the modules the
//!   network has reached answer: a message to any other module is lost on
//!   the radio and gets no reply at all;
//! - the acknowledgement of a Bluetooth connection is sometimes never sent
//!   ([`EmulationSettings::missing_ack`]), although the module did join;
//! - the line can corrupt or drop bytes in both directions.
//!
//! Broadcast messages are handled by every module in the network and
//! answered by none, as radio broadcasts are.
//!
//! A motor can break while the robot runs ([`EmulatedRobot::damage`]): a
//! stuck, limp or weak servo, as a real one breaks, without a word on the
//! line, so that a host has to find out by walking.

use std::collections::{BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serialport::{SerialPort, TTYPort};
use yamor_core::ModuleId;

use crate::Simulation;
use yamor_snp::{BROADCAST, DefectMode, Frame, FrameDecoder, HOST, SnpFrame, SnpMessage, flags};

/// How the emulated robot behaves on the line.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct EmulationSettings {
    /// Robot seconds per wall-clock second: 1 is real time, 20 runs a 20 s
    /// walk in one second (the host must be told the same scale).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1.0))]
    pub time_scale: f64,
    /// Most robot seconds a module takes to join the network; each join
    /// takes between half of it and all of it (thesis 5.2.1: up to 7 s).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 7.0))]
    pub join_delay: f64,
    /// Robot seconds the robot takes to handle one SNP message (about 1 s
    /// on the real robot).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1.0))]
    pub message_delay: f64,
    /// Probability that a Bluetooth connection is made but never
    /// acknowledged (thesis 5.5.4).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.2))]
    pub missing_ack: f64,
    /// Probability that a frame, in either direction, has one byte flipped.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub corrupt_frame: f64,
    /// Probability that a frame, in either direction, loses one byte.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub drop_byte: f64,
    /// Seeds the delays and the line noise.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub seed: u64,
    /// The module the dongle talks to; default: the simulation's master, or
    /// else the central module.
    #[cfg_attr(feature = "clap", arg(long))]
    pub master: Option<ModuleId>,
    /// A second LED this far (m) from the first along the robot's long
    /// axis, so that the camera sees which way the robot faces; 0: one LED,
    /// as the thesis' robot.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub heading_led: f64,
}

impl Default for EmulationSettings {
    /// The real robot as the thesis describes it, on a clean line.
    fn default() -> Self {
        EmulationSettings {
            time_scale: 1.0,
            join_delay: 7.0,
            message_delay: 1.0,
            missing_ack: 0.2,
            corrupt_frame: 0.0,
            drop_byte: 0.0,
            seed: 0,
            master: None,
            heading_led: 0.0,
        }
    }
}

/// What an observer (a test, the emulated camera) can see of the robot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// Robot time (s).
    pub time: f64,
    /// The central module's body centre (m), where its LED is.
    pub led: [f64; 3],
    /// The second LED, along the long axis, when the robot carries one.
    pub heading_led: Option<[f64; 3]>,
    /// Modules whose servo is powered.
    pub motors_on: Vec<ModuleId>,
    /// Modules reachable over the Bluetooth network, the master included.
    pub network: Vec<ModuleId>,
    /// SNP requests received intact.
    pub requests: u64,
    /// Received bytes or frames that were not SNP requests.
    pub garbage: u64,
    /// Bluetooth connections made without an acknowledgement.
    pub lost_acks: u64,
    /// Requests to modules outside the network (lost on the radio).
    pub unreachable: u64,
}

/// One line for a terminal: what changed is what the user watches.
impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "t={:.0}s network={:?} motors_on={:?} led=({:.3}, {:.3}) requests={} lost_acks={} garbage={}",
            self.time,
            self.network,
            self.motors_on,
            self.led[0],
            self.led[1],
            self.requests,
            self.lost_acks,
            self.garbage
        )
    }
}

/// A robot running behind a pseudo-terminal until dropped.
pub struct EmulatedRobot {
    path: String,
    observed: Arc<Mutex<Observed>>,
    /// Damages not yet applied by the robot's thread.
    damages: Arc<Mutex<Vec<(ModuleId, DefectMode)>>>,
    modules: Vec<ModuleId>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Errors starting an emulated robot.
#[derive(Debug, thiserror::Error)]
pub enum EmulationError {
    #[error("creating the pseudo-terminal: {0}")]
    Pty(#[from] serialport::Error),
    #[error("the pseudo-terminal has no device path")]
    NoPath,
    #[error("master module {0} is not in the robot")]
    UnknownMaster(ModuleId),
    #[error("time_scale must be positive and finite, got {0}")]
    TimeScale(f64),
    #[error("{name} is a probability in [0, 1], got {value}")]
    Probability { name: &'static str, value: f64 },
    #[error("module {0} is not in the robot: nothing to damage")]
    UnknownModule(ModuleId),
    #[error("heading_led is the second LED's distance from the first, 0 to 1 m, got {0}")]
    HeadingLed(f64),
}

impl EmulatedRobot {
    /// Starts the robot `sim` (as built: powered on, idle) behind a new
    /// pseudo-terminal.
    pub fn spawn(sim: Simulation, settings: EmulationSettings) -> Result<Self, EmulationError> {
        if !(settings.time_scale.is_finite() && settings.time_scale > 0.0) {
            return Err(EmulationError::TimeScale(settings.time_scale));
        }
        if !(settings.heading_led.is_finite() && (0.0..=1.0).contains(&settings.heading_led)) {
            return Err(EmulationError::HeadingLed(settings.heading_led));
        }
        for (name, value) in [
            ("missing_ack", settings.missing_ack),
            ("corrupt_frame", settings.corrupt_frame),
            ("drop_byte", settings.drop_byte),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(EmulationError::Probability { name, value });
            }
        }
        let master = settings
            .master
            .or(sim.master())
            .unwrap_or(sim.morphology().central);
        if sim.module_index(master).is_err() {
            return Err(EmulationError::UnknownMaster(master));
        }
        let (mut port, device) = TTYPort::pair()?;
        let path = device.name().ok_or(EmulationError::NoPath)?;
        // The device end is closed here (it holds an exclusive lock) and
        // opened by the backend like any serial device; until then reads
        // on this side fail, which only means nothing came.
        drop(device);
        port.set_timeout(Duration::from_millis(2))?;
        let observed = Arc::new(Mutex::new(Observed::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let damages = Arc::new(Mutex::new(Vec::new()));
        let modules = sim.modules().iter().map(|m| m.id).collect();
        let long_axis = crate::behaviour::LongAxis::of(&sim).in_body;
        let centre = sim
            .module_index(sim.morphology().central)
            .expect("the central module always exists");
        let mut robot = Robot {
            long_axis,
            centre,
            sim,
            settings,
            rng: ChaCha8Rng::seed_from_u64(settings.seed),
            network: BTreeSet::from([master]),
            queue: VecDeque::new(),
            busy_until: 0.0,
            observed: Observed::default(),
        };
        let thread = {
            let (observed, stop, damages) = (observed.clone(), stop.clone(), damages.clone());
            std::thread::Builder::new()
                .name("emulated-robot".into())
                .spawn(move || robot.run(&mut port, &observed, &damages, &stop))
                .expect("spawning a thread")
        };
        Ok(EmulatedRobot {
            path,
            observed,
            damages,
            modules,
            stop,
            thread: Some(thread),
        })
    }

    /// The device to open, e.g. `/dev/pts/7`.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// A snapshot of the robot.
    #[must_use]
    pub fn observe(&self) -> Observed {
        self.observed.lock().clone()
    }

    /// Breaks (or, with [`DefectMode::Healthy`], mends) module `id`'s
    /// motor from the robot's next physics step on: a stuck motor holds
    /// its angle, a limp one follows the load, a weak one keeps part of its
    /// torque (C.2.6). Nothing is said on the line.
    pub fn damage(&self, id: ModuleId, mode: DefectMode) -> Result<(), EmulationError> {
        if !self.modules.contains(&id) {
            return Err(EmulationError::UnknownModule(id));
        }
        self.damages.lock().push((id, mode));
        Ok(())
    }

    /// The LED position as a closure, for the emulated camera.
    pub fn led(&self) -> impl Fn() -> Option<[f64; 3]> + Send + Sync + 'static {
        let observed = self.observed.clone();
        move || Some(observed.lock().led)
    }

    /// The second LED's position as a closure, for the emulated camera
    /// (always dark without [`EmulationSettings::heading_led`]).
    pub fn heading_led(&self) -> impl Fn() -> Option<[f64; 3]> + Send + Sync + 'static {
        let observed = self.observed.clone();
        move || observed.lock().heading_led
    }
}

impl Drop for EmulatedRobot {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Robot {
    sim: Simulation,
    /// The long axis in the central module's body frame, where the second
    /// LED sits.
    long_axis: rapier3d::math::Vector,
    /// The central module's index, whose body carries both LEDs.
    centre: usize,
    settings: EmulationSettings,
    rng: ChaCha8Rng,
    network: BTreeSet<ModuleId>,
    /// Requests waiting for the robot, with the robot time they are handled at.
    queue: VecDeque<(f64, SnpFrame)>,
    busy_until: f64,
    observed: Observed,
}

/// Most physics steps between two looks at the line, so a slow machine
/// still answers promptly (it then falls behind the wall clock).
const MAX_TICKS_PER_TURN: usize = 8;

impl Robot {
    fn run(
        &mut self,
        port: &mut TTYPort,
        observed: &Mutex<Observed>,
        damages: &Mutex<Vec<(ModuleId, DefectMode)>>,
        stop: &AtomicBool,
    ) {
        let started = Instant::now();
        let t0 = self.sim.time();
        let mut decoder = FrameDecoder::new();
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            match port.read(&mut buf) {
                Ok(n) if n > 0 => {
                    let bytes = self.noise(&buf[..n]);
                    decoder.push(&bytes);
                }
                // The line went quiet: a frame still incomplete never will be.
                Ok(_) => {
                    decoder.abandon_partial();
                }
                // Nobody has the device open: reads fail at once, so wait
                // as long as a read would have.
                Err(e) if e.kind() != std::io::ErrorKind::TimedOut => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(_) => {
                    decoder.abandon_partial();
                }
            }
            while let Some(next) = decoder.next_frame() {
                match next {
                    Ok(Frame::Snp(frame)) if frame.dst != HOST && frame.message.is_request() => {
                        self.observed.requests += 1;
                        self.enqueue(frame);
                    }
                    _ => self.observed.garbage += 1,
                }
            }
            for (id, mode) in std::mem::take(&mut *damages.lock()) {
                // Checked against the robot's modules when asked for.
                if let Err(e) = self.sim.set_defect(id, mode) {
                    tracing::error!("emulated robot: damaging module {id}: {e}");
                }
            }
            let target = t0 + started.elapsed().as_secs_f64() * self.settings.time_scale;
            for _ in 0..MAX_TICKS_PER_TURN {
                if self.sim.time() >= target {
                    break;
                }
                self.sim.tick();
            }
            while let Some(&(due, _)) = self.queue.front() {
                if due > self.sim.time() {
                    break;
                }
                let (_, frame) = self.queue.pop_front().expect("peeked");
                if let Some(reply) = self.handle(&frame) {
                    let bytes = match SnpFrame::new(HOST, frame.dst, reply).encode() {
                        Ok(bytes) => bytes,
                        Err(e) => {
                            tracing::error!("emulated robot: unencodable reply: {e}");
                            continue;
                        }
                    };
                    let bytes = self.noise(&bytes);
                    // A host that went away loses the reply, as on the radio.
                    let _ = port.write_all(&bytes).and_then(|()| port.flush());
                }
            }
            self.publish(observed);
        }
    }

    fn enqueue(&mut self, frame: SnpFrame) {
        // Lost on the radio: it never occupies the robot.
        if frame.dst != BROADCAST && !self.network.contains(&ModuleId::from(frame.dst)) {
            self.observed.unreachable += 1;
            return;
        }
        let now = self.sim.time();
        let delay = match frame.message {
            SnpMessage::BluetoothConnect { .. } => {
                let max = self.settings.join_delay.max(0.0);
                self.rng
                    .random_range(max / 2.0..=max.max(f64::MIN_POSITIVE))
            }
            _ => self.settings.message_delay.max(0.0),
        };
        // One message at a time, as the master relays them.
        self.busy_until = self.busy_until.max(now) + delay;
        self.queue.push_back((self.busy_until, frame));
    }

    /// The module's reply, or `None` when nothing comes back.
    fn handle(&mut self, frame: &SnpFrame) -> Option<SnpMessage> {
        if frame.dst == BROADCAST {
            for id in self.network.clone() {
                let _ = self.sim.deliver(wire(id)?, &frame.message);
            }
            return None;
        }
        let id = ModuleId::from(frame.dst);
        if !self.network.contains(&id) {
            self.observed.unreachable += 1;
            return None;
        }
        let reply = self.sim.deliver(frame.dst, &frame.message).ok()?;
        if let (SnpMessage::BluetoothConnect { to }, SnpMessage::Ack { .. }) =
            (&frame.message, &reply)
        {
            self.network.insert(ModuleId::from(*to));
            if self
                .rng
                .random_bool(self.settings.missing_ack.clamp(0.0, 1.0))
            {
                self.observed.lost_acks += 1;
                return None;
            }
        }
        Some(reply)
    }

    /// The line's damage to one burst of bytes.
    fn noise(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        if out.is_empty() {
            return out;
        }
        if self
            .rng
            .random_bool(self.settings.corrupt_frame.clamp(0.0, 1.0))
        {
            let at = self.rng.random_range(0..out.len());
            out[at] ^= 1 << self.rng.random_range(0..8);
        }
        if self
            .rng
            .random_bool(self.settings.drop_byte.clamp(0.0, 1.0))
        {
            let at = self.rng.random_range(0..out.len());
            out.remove(at);
        }
        out
    }

    fn publish(&mut self, observed: &Mutex<Observed>) {
        let p = self.sim.robot_position();
        self.observed.time = self.sim.time();
        self.observed.led = [f64::from(p.x), f64::from(p.y), f64::from(p.z)];
        self.observed.heading_led = (self.settings.heading_led > 0.0).then(|| {
            let pose = self
                .sim
                .physics()
                .part_state(crate::physics::part_index(
                    self.centre,
                    crate::geometry::Part::Body,
                ))
                .pose;
            let q = pose.translation
                + pose.rotation * self.long_axis * self.settings.heading_led as f32;
            [f64::from(q.x), f64::from(q.y), f64::from(q.z)]
        });
        self.observed.motors_on = self
            .sim
            .modules()
            .iter()
            .filter(|m| m.firmware.flags & flags::MOTOR != 0)
            .map(|m| m.id)
            .collect();
        self.observed.motors_on.sort_unstable();
        self.observed.network = self.network.iter().copied().collect();
        *observed.lock() = self.observed.clone();
    }
}

fn wire(id: ModuleId) -> Option<u8> {
    u8::try_from(id).ok()
}
