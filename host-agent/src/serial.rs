//! The real robot over a serial line: SNP frames through `serialport` to the
//! Bluetooth dongle of the master module, positions from the LED tracker.
//!
//! What the thesis' YaMoR Host 2.0 user typed by hand (5.2.1: B, L, U255,
//! C255, N, O, M255) is [`SerialRobot::program`]: build the Bluetooth
//! network along the configuration's tree, send limit angles, enable UART
//! and CPG, send CPG structure and parameters, then switch the motors on.
//! Only messages whose content differs from what the robot already
//! acknowledged are sent again, which matters at one message per second.
//!
//! Choices where the thesis is silent:
//! - Every request waits for its reply (`Ack`, `Nack` or `State` of the same
//!   kind from the same module); replies of an earlier attempt that arrive
//!   late are recognised and ignored. A missing reply is retried
//!   [`SerialSettings::retries`] times, then fails naming module and message.
//!   Every SNP request is idempotent, so a retry never does harm.
//! - The missing acknowledgement of a Bluetooth connection (5.5.4): YaMoR
//!   Host 3 waited ten seconds and assumed success. Here the host waits
//!   [`SerialSettings::join_timeout`] (10 s), then asks the new module for
//!   its state: an answer proves it joined, silence means the connection is
//!   retried. So a lost acknowledgement costs one timeout, and a failed join
//!   is never mistaken for a good one.
//! - Motors run only while an evaluation runs: at its end, on any error and
//!   on cancellation every motor is switched off (a broadcast first, which
//!   stops everything at once, then each module with acknowledgement), and
//!   [`Backend::halt`] does the same when the host stops or loses its
//!   organizer. A robot never walks unattended.
//! - In real mode time is the wall clock. [`SerialSettings::time_scale`]
//!   only exists for emulated robots that run faster than real time.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use yamor_core::measure::WalkMeter;
use yamor_core::{ModuleId, RobotConfig};
use yamor_snp::configuration_messages;
use yamor_snp::{BROADCAST, Frame, FrameDecoder, HOST, SnpFrame, SnpMessage, flags};

use crate::backend::{
    Backend, BackendKind, BoxFuture, CancelFlag, EvaluationJob, HostError, Outcome, RobotSource,
    Sample, Walk,
};
use crate::session::{RobotLink, SessionFactory};
use yamor_camera::{PositionSource, TrackerError};

/// How to reach the robot and how patient to be with it. Durations are in
/// robot seconds (the wall clock unless `time_scale` says otherwise). With
/// the `clap` feature these are `yamor host`'s `--serial` options.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SerialSettings {
    /// Drive the real robot on this serial port (e.g. /dev/ttyUSB0, COM3).
    #[cfg_attr(
        feature = "clap",
        arg(long = "serial", id = "serial", value_name = "PORT")
    )]
    pub port: String,
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 115_200))]
    pub baud: u32,
    /// Seconds to wait for a module's reply before sending again.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 3.0))]
    pub reply_timeout: f64,
    /// Seconds to wait for a Bluetooth connection's acknowledgement (thesis
    /// 5.2.1: a module takes up to 7 s to join; 5.5.4: 10 s).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 10.0))]
    pub join_timeout: f64,
    /// Least seconds between the reply to one message and the next message
    /// (the real robot handles about one per second).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.0))]
    pub message_gap: f64,
    /// Attempts after the first before a message is given up.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 3))]
    pub retries: u32,
    /// Robot seconds per wall second; 1 for the real robot (more only for
    /// an emulated robot run faster).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1.0))]
    pub time_scale: f64,
    /// The module the dongle talks to; default: the root of the
    /// configuration's Bluetooth tree.
    #[cfg_attr(feature = "clap", arg(long))]
    pub master: Option<ModuleId>,
}

impl SerialSettings {
    /// The thesis' real robot on `port`.
    #[must_use]
    pub fn new(port: impl Into<String>) -> Self {
        SerialSettings {
            port: port.into(),
            baud: 115_200,
            reply_timeout: 3.0,
            join_timeout: 10.0,
            message_gap: 0.0,
            retries: 3,
            time_scale: 1.0,
            master: None,
        }
    }

    fn check(&self) -> Result<(), HostError> {
        let bad = |what: &str| Err(HostError::InvalidJob(format!("serial settings: {what}")));
        if self.port.is_empty() {
            return bad("the port is empty");
        }
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return bad("time_scale must be positive");
        }
        for (name, v) in [
            ("reply_timeout", self.reply_timeout),
            ("join_timeout", self.join_timeout),
            ("message_gap", self.message_gap),
        ] {
            if !(v.is_finite() && (0.0..=600.0).contains(&v)) {
                return bad(&format!("{name} must be in [0, 600] s, got {v}"));
            }
        }
        Ok(())
    }

    /// Wall-clock duration of `robot_seconds`.
    fn wall(&self, robot_seconds: f64) -> Duration {
        Duration::from_secs_f64((robot_seconds / self.time_scale).max(0.0))
    }
}

/// A position the tracker could not give fails the walk, not the job: another
/// attempt (or host) may see the LED.
fn position_lost(e: TrackerError) -> HostError {
    HostError::Failed(e.to_string())
}

/// Counters of the line, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    pub requests: u64,
    pub retries: u64,
    /// Frames that were corrupt or not a reply we waited for.
    pub discarded: u64,
    /// Bluetooth connections confirmed by a state query after the
    /// acknowledgement went missing (5.5.4).
    pub silent_joins: u64,
}

/// The open serial line.
struct Line {
    port: Box<dyn serialport::SerialPort>,
    decoder: FrameDecoder,
    last_reply: Instant,
}

/// One robot on one serial port; shared by evaluations and sessions.
struct RobotState {
    settings: Arc<SerialSettings>,
    line: Option<Line>,
    /// (module, message kind) → the encoded message the module acknowledged.
    acknowledged: HashMap<(u8, u8), Vec<u8>>,
    /// Modules known to be in the Bluetooth network.
    network: BTreeSet<ModuleId>,
    stats: LineStats,
}

/// The real robot.
pub struct SerialRobot {
    /// Outside the lock: a walk holds the lock for its whole length, and
    /// `GetInfo`, heartbeats and session clocks must answer meanwhile.
    settings: Arc<SerialSettings>,
    state: Mutex<RobotState>,
    position: Option<Arc<dyn PositionSource>>,
    /// Set by [`Backend::halt`]: whatever runs stops at once.
    halted: AtomicBool,
}

impl SerialRobot {
    /// Checks the settings; the port is opened on first use.
    pub fn new(
        settings: SerialSettings,
        position: Option<Arc<dyn PositionSource>>,
    ) -> Result<Self, HostError> {
        settings.check()?;
        let settings = Arc::new(settings);
        Ok(SerialRobot {
            settings: settings.clone(),
            state: Mutex::new(RobotState {
                settings,
                line: None,
                acknowledged: HashMap::new(),
                network: BTreeSet::new(),
                stats: LineStats::default(),
            }),
            position,
            halted: AtomicBool::new(false),
        })
    }

    #[must_use]
    pub fn stats(&self) -> LineStats {
        self.state.lock().stats
    }

    /// Sends the whole of 5.2.1 for `config` (only what changed since the
    /// robot last acknowledged it), motors last.
    pub fn program(&self, config: &RobotConfig, cancel: &AtomicBool) -> Result<(), HostError> {
        let stop = Stop(cancel, &self.halted);
        self.state.lock().program(config, &stop)
    }

    /// Every motor off; best effort, never fails.
    pub fn motors_off(&self) {
        let never = AtomicBool::new(false);
        let stop = Stop(&never, &never);
        self.state.lock().motors_off(&stop);
    }

    /// One walk: program, warm up, measure between two tracker fixes, motors off.
    fn walk(&self, job: &EvaluationJob, cancel: &AtomicBool) -> Result<Walk, HostError> {
        let gait = job
            .gait
            .as_ref()
            .ok_or_else(|| HostError::InvalidJob("the job carries no gait".into()))?;
        let position = self.position.clone().ok_or_else(|| {
            HostError::Failed(
                "no position source: give the host a CamApp tracker to measure velocity".into(),
            )
        })?;
        let started = Instant::now();
        let stop = Stop(cancel, &self.halted);
        let mut state = self.state.lock();
        let result = (|| {
            if let Some(lead_in) = &job.spec.situation.lead_in {
                state.program(&lead_in.gait, &stop)?;
                let wall = state.settings.wall(lead_in.seconds);
                stop.sleep(wall)?;
            }
            state.program(gait, &stop)?;
            let settings = &self.settings;
            let robot_time =
                |at: Instant| at.duration_since(started).as_secs_f64() * settings.time_scale;
            let fix_timeout = settings
                .wall(settings.reply_timeout)
                .max(Duration::from_secs(2));
            stop.sleep(settings.wall(job.spec.warmup))?;
            let begin = Instant::now();
            let at_start = position
                .pose_after(begin, fix_timeout)
                .map_err(position_lost)?;
            let start = Sample {
                t: robot_time(begin),
                x: at_start.x,
                y: at_start.y,
                z: 0.0,
            };
            // The meter says when the next sample or checkpoint is due (a
            // hopeless walk ends at its checkpoint: a person's time is what
            // a real robot's walk costs); the host sleeps till then. Its
            // clock is the wall's, to the millisecond.
            let mut meter =
                WalkMeter::from_window_start(&job.spec, start, settings.time_scale * 1e-3);
            while meter.walking() {
                let due = started + settings.wall(meter.next_due());
                stop.sleep(due.saturating_duration_since(Instant::now()))?;
                let at = Instant::now();
                let (x, y) = position.fix_after(at, fix_timeout).map_err(position_lost)?;
                meter.observe(Sample {
                    t: robot_time(at),
                    x,
                    y,
                    z: 0.0,
                });
            }
            let mut outcome = meter.finish();
            outcome.simulated = robot_time(Instant::now());
            // A robot with a second LED says which way it faced: the
            // heading of the walk against its long axis, as a simulator
            // measures it, and its pose for whoever walks it next.
            if let Some(yaw_start) = at_start.heading {
                let at_end = position
                    .pose_after(Instant::now(), fix_timeout)
                    .map_err(position_lost)?;
                if let Some(yaw_end) = at_end.heading {
                    outcome
                        .descriptors
                        .extend(seen_heading(&outcome, yaw_start, yaw_end));
                }
            }
            Ok(outcome)
        })();
        // Whatever happened, the robot stops walking.
        let never = AtomicBool::new(false);
        state.motors_off(&Stop(&never, &never));
        let mut outcome = result?;
        outcome.wall = started.elapsed();
        Ok(outcome)
    }
}

/// What a walk seen with its heading at the window's start and end
/// (`yaw_start`, `yaw_end`, rad) adds to its descriptors.
fn seen_heading(
    walk: &yamor_core::evaluation::Walk,
    yaw_start: f64,
    yaw_end: f64,
) -> [(String, f64); 3] {
    use yamor_core::cpg::wrap_angle;
    use yamor_core::evaluation::descriptors::{HEADING, YAW_END, YAW_START, heading_deg};
    let degrees = |a: f64| wrap_angle(a).to_degrees();
    let travel = (walk.end.x - walk.start.x, walk.end.y - walk.start.y);
    [
        (
            HEADING.to_owned(),
            heading_deg((yaw_start.cos(), yaw_start.sin()), travel),
        ),
        (YAW_START.to_owned(), degrees(yaw_start)),
        (YAW_END.to_owned(), degrees(yaw_end)),
    ]
}

/// The reasons to give up a wait: the caller's cancel and the robot's halt.
struct Stop<'a>(&'a AtomicBool, &'a AtomicBool);

impl Stop<'_> {
    fn check(&self) -> Result<(), HostError> {
        if self.0.load(Ordering::Relaxed) || self.1.load(Ordering::Relaxed) {
            Err(HostError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Sleeps `d`, waking every 20 ms to look at the flags.
    fn sleep(&self, d: Duration) -> Result<(), HostError> {
        let until = Instant::now() + d;
        loop {
            self.check()?;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
    }
}

impl RobotState {
    fn line(&mut self) -> Result<&mut Line, HostError> {
        if self.line.is_none() {
            let port = serialport::new(&self.settings.port, self.settings.baud)
                .timeout(Duration::from_millis(10))
                .open()
                .map_err(|e| {
                    HostError::Failed(format!("opening serial port {}: {e}", self.settings.port))
                })?;
            // Anything already buffered belongs to no request of ours.
            let _ = port.clear(serialport::ClearBuffer::All);
            self.line = Some(Line {
                port,
                decoder: FrameDecoder::new(),
                last_reply: Instant::now(),
            });
        }
        Ok(self.line.as_mut().expect("just opened"))
    }

    /// The port failed: close it, and forget what the robot acknowledged so
    /// that everything is sent again once the line is back.
    fn lose_line(&mut self, e: &std::io::Error) -> HostError {
        self.line = None;
        self.acknowledged.clear();
        self.network.clear();
        HostError::Failed(format!("serial port {}: {e}", self.settings.port))
    }

    /// One attempt: sends `message` to `dst` and waits up to `timeout` robot
    /// seconds for its reply. `Ok(None)`: no reply in time.
    fn exchange(
        &mut self,
        dst: u8,
        message: &SnpMessage,
        timeout: f64,
        stop: &Stop<'_>,
    ) -> Result<Option<SnpMessage>, HostError> {
        let bytes = SnpFrame::new(dst, HOST, message.clone())
            .encode()
            .map_err(|e| HostError::InvalidJob(format!("module {dst}: {e}")))?;
        let gap = self.settings.wall(self.settings.message_gap);
        let wait = self.settings.wall(timeout);
        self.stats.requests += 1;
        let line = self.line()?;
        stop.sleep(gap.saturating_sub(line.last_reply.elapsed()))?;
        let written = line.port.write_all(&bytes).and_then(|()| line.port.flush());
        if let Err(e) = written {
            return Err(self.lose_line(&e));
        }
        if dst == BROADCAST {
            return Ok(None);
        }
        let deadline = Instant::now() + wait;
        let mut buf = [0u8; 256];
        loop {
            stop.check()?;
            let line = self.line.as_mut().expect("opened above");
            while let Some(next) = line.decoder.next_frame() {
                match next {
                    Ok(Frame::Snp(frame)) if answers(&frame, dst, message) => {
                        line.last_reply = Instant::now();
                        return Ok(Some(frame.message));
                    }
                    _ => self.stats.discarded += 1,
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            let line = self.line.as_mut().expect("opened above");
            match line.port.read(&mut buf) {
                Ok(n @ 1..) => line.decoder.push(&buf[..n]),
                // Quiet for a whole read timeout mid-frame: at 115200 baud
                // that is over a hundred byte times, so the frame is dead.
                Ok(0) => {
                    line.decoder.abandon_partial();
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    line.decoder.abandon_partial();
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.lose_line(&e)),
            }
        }
    }

    /// Sends until a reply comes, up to `1 + retries` attempts; a `Nack` is
    /// an error naming the module and the message.
    fn request(&mut self, dst: u8, message: &SnpMessage, stop: &Stop<'_>) -> Result<(), HostError> {
        let timeout = self.settings.reply_timeout;
        for attempt in 0..=self.settings.retries {
            if attempt > 0 {
                self.stats.retries += 1;
                tracing::warn!(
                    module = dst,
                    kind = message.kind(),
                    attempt,
                    "no reply; sending again"
                );
            }
            match self.exchange(dst, message, timeout, stop)? {
                Some(SnpMessage::Nack { code, .. }) => {
                    return Err(HostError::InvalidJob(format!(
                        "module {dst} refused the {} message (nack code {code})",
                        message.name()
                    )));
                }
                Some(_) => return Ok(()),
                None => {}
            }
        }
        Err(HostError::Failed(format!(
            "module {dst} did not answer the {} message after {} attempts of {timeout} s; is it powered and in the Bluetooth network?",
            message.name(),
            self.settings.retries + 1
        )))
    }

    /// `from` opens its Bluetooth link to `to` (5.5.4 handled, see the
    /// module docs).
    fn join(&mut self, from: u8, to: u8, stop: &Stop<'_>) -> Result<(), HostError> {
        let message = SnpMessage::BluetoothConnect { to };
        for attempt in 0..=self.settings.retries {
            if attempt > 0 {
                self.stats.retries += 1;
            }
            let timeout = self.settings.join_timeout;
            match self.exchange(from, &message, timeout, stop)? {
                Some(SnpMessage::Nack { code, .. }) => {
                    return Err(HostError::InvalidJob(format!(
                        "module {from} refused to connect to module {to} (nack code {code})"
                    )));
                }
                Some(_) => return Ok(()),
                None => {
                    let timeout = self.settings.reply_timeout;
                    if let Some(SnpMessage::State { .. }) =
                        self.exchange(to, &SnpMessage::QueryState, timeout, stop)?
                    {
                        self.stats.silent_joins += 1;
                        tracing::info!(from, to, "joined without acknowledgement (thesis 5.5.4)");
                        return Ok(());
                    }
                    tracing::warn!(from, to, "module did not join; connecting again");
                }
            }
        }
        Err(HostError::Failed(format!(
            "module {to} did not join the Bluetooth network through module {from} after {} attempts",
            self.settings.retries + 1
        )))
    }

    /// Sends `message` unless `dst` already acknowledged exactly it.
    fn send_changed(
        &mut self,
        dst: u8,
        message: &SnpMessage,
        stop: &Stop<'_>,
    ) -> Result<(), HostError> {
        let encoded = SnpFrame::new(dst, HOST, message.clone())
            .encode()
            .map_err(|e| HostError::InvalidJob(format!("module {dst}: {e}")))?;
        let key = (dst, message.kind());
        if self.acknowledged.get(&key) == Some(&encoded) {
            return Ok(());
        }
        self.acknowledged.remove(&key);
        self.request(dst, message, stop)?;
        self.acknowledged.insert(key, encoded);
        Ok(())
    }

    /// Thesis 5.2.1 in order: B, L, U+C, N, O, M.
    fn program(&mut self, config: &RobotConfig, stop: &Stop<'_>) -> Result<(), HostError> {
        let ids: Vec<u8> = config
            .modules
            .iter()
            .map(|m| wire_id(m.id))
            .collect::<Result<_, _>>()?;
        let master = match self.settings.master {
            Some(m) => m,
            None => bluetooth_master(config)?,
        };
        self.network.insert(master);
        // B: along the tree, each connection from a module already reached.
        let mut links: Vec<(ModuleId, ModuleId)> = config.bluetooth_edges().collect();
        while !links.is_empty() {
            let Some(i) = links
                .iter()
                .position(|(from, _)| self.network.contains(from))
            else {
                let stranded: Vec<String> =
                    links.iter().map(|(f, t)| format!("{f}->{t}")).collect();
                return Err(HostError::InvalidJob(format!(
                    "bluetooth links {} cannot be reached from the master module {master}",
                    stranded.join(", ")
                )));
            };
            let (from, to) = links.remove(i);
            if !self.network.contains(&to) {
                self.join(wire_id(from)?, wire_id(to)?, stop)?;
                self.network.insert(to);
            }
        }
        if let Some(m) = config
            .modules
            .iter()
            .find(|m| !self.network.contains(&m.id))
        {
            return Err(HostError::InvalidJob(format!(
                "module {} is not in the Bluetooth network of master {master}: add a <bluetooth> link to it",
                m.id
            )));
        }
        let messages: Vec<Vec<SnpMessage>> =
            config.modules.iter().map(configuration_messages).collect();
        let pick =
            |kind: u8| move |ms: &Vec<SnpMessage>| ms.iter().find(|m| m.kind() == kind).cloned();
        use yamor_snp::snp_kind::{CPG_PARAMS, CPG_STRUCTURE, LIMIT_ANGLES};
        for (&id, ms) in ids.iter().zip(&messages) {
            if let Some(m) = pick(LIMIT_ANGLES)(ms) {
                self.send_changed(id, &m, stop)?;
            }
        }
        for &id in &ids {
            let on = SnpMessage::Control {
                on: flags::UART | flags::CPG,
                off: 0,
            };
            self.send_changed(id, &on, stop)?;
        }
        for kind in [CPG_STRUCTURE, CPG_PARAMS] {
            for (&id, ms) in ids.iter().zip(&messages) {
                if let Some(m) = pick(kind)(ms) {
                    self.send_changed(id, &m, stop)?;
                }
            }
        }
        for &id in &ids {
            let motor = SnpMessage::Control {
                on: flags::MOTOR,
                off: 0,
            };
            self.request(id, &motor, stop)?;
        }
        // Control messages toggle flags: their cached form would be wrong
        // after the motors go off, so only the UART/CPG one is remembered.
        Ok(())
    }

    /// A broadcast stops every module at once; then each module in the
    /// network confirms. Errors are logged, never returned: this runs on the
    /// way out of failures.
    fn motors_off(&mut self, stop: &Stop<'_>) {
        let off = SnpMessage::Control {
            on: 0,
            off: flags::MOTOR,
        };
        if self.line.is_none() {
            return;
        }
        if let Err(e) = self.exchange(BROADCAST, &off, 0.0, stop) {
            tracing::error!("motors off (broadcast): {e}");
            return;
        }
        for id in self.network.clone() {
            let Ok(id) = wire_id(id) else { continue };
            if let Err(e) = self.request(id, &off, stop) {
                tracing::error!("motor of module {id} not confirmed off: {e}");
            }
        }
    }
}

/// Whether `frame` is `dst`'s reply to `message`.
fn answers(frame: &SnpFrame, dst: u8, message: &SnpMessage) -> bool {
    if frame.dst != HOST || frame.src != dst {
        return false;
    }
    match (&frame.message, message) {
        (SnpMessage::State { .. }, SnpMessage::QueryState) => true,
        (SnpMessage::Ack { of_kind } | SnpMessage::Nack { of_kind, .. }, m) => *of_kind == m.kind(),
        _ => false,
    }
}

fn wire_id(id: ModuleId) -> Result<u8, HostError> {
    u8::try_from(id).ok().filter(|&w| w < HOST).ok_or_else(|| {
        HostError::InvalidJob(format!(
            "module id {id} does not fit an SNP address (0..=253)"
        ))
    })
}

/// C.2.1: the first Bluetooth link starts at the master node (the one the
/// dongle talks to); a robot without links is its first module alone.
fn bluetooth_master(config: &RobotConfig) -> Result<ModuleId, HostError> {
    config
        .bluetooth_edges()
        .next()
        .map(|(from, _)| from)
        .or(config.modules.first().map(|m| m.id))
        .ok_or_else(|| HostError::InvalidJob("the configuration has no module".into()))
}

/// The serial robot as a host backend.
pub struct SerialBackend {
    robot: Arc<SerialRobot>,
}

impl SerialBackend {
    pub fn new(
        settings: SerialSettings,
        position: Option<Arc<dyn PositionSource>>,
    ) -> Result<Self, HostError> {
        Ok(SerialBackend {
            robot: Arc::new(SerialRobot::new(settings, position)?),
        })
    }

    #[must_use]
    pub fn robot(&self) -> &Arc<SerialRobot> {
        &self.robot
    }
}

impl Backend for SerialBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Real
    }

    fn describe(&self) -> String {
        format!("real robot on {}", self.robot.settings.port)
    }

    fn evaluate(
        &self,
        job: EvaluationJob,
        cancel: CancelFlag,
    ) -> BoxFuture<'_, Result<Outcome, HostError>> {
        let robot = self.robot.clone();
        Box::pin(async move {
            if !matches!(job.robot, RobotSource::Default) {
                tracing::debug!("a real robot is what it is: the job's robot source is ignored");
            }
            tokio::task::spawn_blocking(move || robot.walk(&job, &cancel))
                .await
                .map_err(|e| HostError::Failed(format!("serial thread: {e}")))?
                .map(Outcome::Walk)
        })
    }

    fn session(&self) -> Option<Arc<dyn SessionFactory>> {
        Some(Arc::new(SerialSessions {
            robot: self.robot.clone(),
        }))
    }

    fn halt(&self) {
        self.robot.halted.store(true, Ordering::Relaxed);
        self.robot.motors_off();
        self.robot.halted.store(false, Ordering::Relaxed);
    }
}

struct SerialSessions {
    robot: Arc<SerialRobot>,
}

impl SessionFactory for SerialSessions {
    fn simulation_mode(&self) -> bool {
        false
    }

    fn open(
        &self,
        _robot: &RobotSource,
        _seed: u64,
        _ground_friction: Option<f64>,
    ) -> Result<Box<dyn RobotLink>, HostError> {
        self.robot.state.lock().line()?;
        Ok(Box::new(SerialLink {
            robot: self.robot.clone(),
            opened: Instant::now(),
        }))
    }
}

/// A session's view of the serial robot: wall-clock time, tracker position.
struct SerialLink {
    robot: Arc<SerialRobot>,
    opened: Instant,
}

impl RobotLink for SerialLink {
    fn simulation_mode(&self) -> bool {
        false
    }

    fn elapsed(&self) -> f64 {
        self.opened.elapsed().as_secs_f64() * self.robot.settings.time_scale
    }

    fn position(&self) -> Sample {
        let t = self.elapsed();
        match &self.robot.position {
            Some(p) => match p.fix_after(
                Instant::now() - Duration::from_secs(1),
                Duration::from_secs(1),
            ) {
                Ok((x, y)) => Sample { t, x, y, z: 0.0 },
                Err(e) => {
                    tracing::warn!("position: {e}");
                    Sample {
                        t,
                        x: f64::NAN,
                        y: f64::NAN,
                        z: f64::NAN,
                    }
                }
            },
            None => Sample {
                t,
                x: f64::NAN,
                y: f64::NAN,
                z: f64::NAN,
            },
        }
    }

    fn send(&mut self, dst: u8, message: &SnpMessage) -> Result<SnpMessage, HostError> {
        let never = AtomicBool::new(false);
        let stop = Stop(&never, &self.robot.halted);
        let mut state = self.robot.state.lock();
        if let SnpMessage::BluetoothConnect { to } = message {
            state.join(dst, *to, &stop)?;
            state.network.insert(ModuleId::from(*to));
            return Ok(SnpMessage::Ack {
                of_kind: message.kind(),
            });
        }
        let timeout = state.settings.reply_timeout;
        for _ in 0..=state.settings.retries {
            if let Some(reply) = state.exchange(dst, message, timeout, &stop)? {
                state.network.insert(ModuleId::from(dst));
                // The session decides what is current; the evaluation cache
                // must not skip a message the session changed behind it.
                state.acknowledged.retain(|(id, _), _| *id != dst);
                return Ok(reply);
            }
            state.stats.retries += 1;
        }
        Err(HostError::Failed(format!(
            "module {dst} did not answer the {} message",
            message.name()
        )))
    }

    fn advance(&mut self, seconds: f64, cancel: &AtomicBool) -> Result<(), HostError> {
        let wall = self.robot.settings.wall(seconds);
        Stop(cancel, &self.robot.halted).sleep(wall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_master_starts_the_first_bluetooth_link() {
        let gait = yamor_sim::robots::ExampleRobot::named("quadruped")
            .unwrap()
            .gait()
            .unwrap();
        assert_eq!(bluetooth_master(&gait).unwrap(), 4);
        let mut unlinked = gait.clone();
        for m in &mut unlinked.modules {
            m.bluetooth_to = None;
        }
        assert_eq!(bluetooth_master(&unlinked).unwrap(), unlinked.modules[0].id);
    }

    #[test]
    fn only_a_reply_of_the_same_kind_from_the_same_module_answers() {
        let limits = SnpMessage::LimitAngles {
            min: -1.0,
            max: 1.0,
        };
        let ack = |src, of_kind| SnpFrame::new(HOST, src, SnpMessage::Ack { of_kind });
        assert!(answers(&ack(3, limits.kind()), 3, &limits));
        assert!(!answers(&ack(4, limits.kind()), 3, &limits));
        assert!(!answers(&ack(3, SnpMessage::QueryState.kind()), 3, &limits));
        let state = SnpFrame::new(
            HOST,
            3,
            SnpMessage::State {
                flags: 0,
                angle: 0.0,
                setpoint: 0.0,
                phase: 0.0,
            },
        );
        assert!(answers(&state, 3, &SnpMessage::QueryState));
        assert!(!answers(&state, 3, &limits));
    }
}
