//! The YaMoR Webots Bridge of thesis 5.4, over the simulator.
//!
//! A TCP server: clients send SNP frames (forwarded to the modules, whose
//! replies come back) and bridge frames (the supervisor's special commands).
//! The frame format is in `docs/snp.md`.
//!
//! # Layout
//! - [`serve`]: the listener; accepts clients until the injected shutdown
//!   future completes. Any number of clients may connect, disconnect and
//!   reconnect (the thesis' "Repeated Connect" bug does not exist here).
//! - one handler task per client: decodes frames, answers garbage with an
//!   `Error` frame and keeps reading, so one bad client never stops others.
//! - the simulation thread: owns the [`Simulation`] and runs it on a plain
//!   OS thread so physics never blocks the async runtime.
//!
//! # Time
//! In virtual time (the default) the world only advances while some client
//! has a timer pending: `SetTimer(ms)` runs the simulation `ms` of virtual
//! time as fast as the CPU allows and then answers `TimerExpired`. Commands
//! therefore take effect at exact virtual instants, which keeps runs
//! reproducible. With `SetPacing(real_time)` the world runs continuously,
//! paced to the wall clock, as the thesis' Webots did.

use crate::sim::{SimError, SimSettings, Simulation};
use std::future::Future;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use yamor_core::{Connection, Morphology};
use yamor_snp::{BridgeFrame, BridgeMessage, Frame, FrameDecoder, HOST, SnpFrame};

/// Error codes of `BridgeMessage::Error`.
pub mod error_code {
    /// The bytes could not be decoded as a frame.
    pub const MALFORMED: u8 = 1;
    /// The simulator refused the command (unknown module, out of range...).
    pub const REFUSED: u8 = 2;
    /// A reply or event was sent as a request.
    pub const NOT_A_REQUEST: u8 = 3;
}

type ReplyTx = mpsc::UnboundedSender<Frame>;

struct Request {
    frame: Frame,
    reply: ReplyTx,
}

struct Timer {
    deadline: f64,
    seq: u8,
    reply: ReplyTx,
}

/// Serves the bridge on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    morphology: Morphology,
    settings: SimSettings,
    shutdown: impl Future<Output = ()>,
) -> Result<(), SimError> {
    let sim = Simulation::new(&morphology, settings)?;
    let (requests, inbox) = std_mpsc::channel::<Request>();
    let worker = std::thread::Builder::new()
        .name("yamor-sim".into())
        .spawn(move || run_simulation(sim, inbox))
        .expect("spawning the simulation thread");
    tokio::pin!(shutdown);
    let mut clients = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tracing::info!(%peer, "bridge client connected");
                    let requests = requests.clone();
                    clients.spawn(async move {
                        if let Err(error) = handle_client(stream, requests).await {
                            tracing::debug!(%peer, %error, "bridge client gone");
                        }
                        tracing::info!(%peer, "bridge client disconnected");
                    });
                }
                Err(error) => tracing::warn!(%error, "accept failed"),
            },
            // Reap finished handlers so a long-lived bridge does not accumulate them.
            Some(_) = clients.join_next(), if !clients.is_empty() => {}
            () = &mut shutdown => break,
        }
    }
    // Connected clients are cut off so their handlers drop their senders;
    // the worker ends once every sender is gone.
    clients.shutdown().await;
    drop(requests);
    tokio::task::spawn_blocking(move || worker.join())
        .await
        .ok();
    Ok(())
}

async fn handle_client(
    stream: TcpStream,
    requests: std_mpsc::Sender<Request>,
) -> std::io::Result<()> {
    let (mut reader, mut writer) = stream.into_split();
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<Frame>();
    let write_task = tokio::spawn(async move {
        while let Some(frame) = reply_rx.recv().await {
            let bytes = match frame.encode() {
                Ok(bytes) => bytes,
                Err(error) => {
                    tracing::error!(%error, "could not encode a reply");
                    continue;
                }
            };
            if writer.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 4096];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        decoder.push(&buf[..n]);
        while let Some(decoded) = decoder.next_frame() {
            match decoded {
                Ok(frame) => {
                    let request = Request {
                        frame,
                        reply: reply_tx.clone(),
                    };
                    if requests.send(request).is_err() {
                        return Ok(());
                    }
                }
                Err(error) => {
                    let _ =
                        reply_tx.send(error_frame(0, error_code::MALFORMED, &error.to_string()));
                }
            }
        }
    }
    drop(reply_tx);
    let _ = write_task.await;
    Ok(())
}

fn error_frame(seq: u8, code: u8, message: &str) -> Frame {
    Frame::Bridge(BridgeFrame {
        seq,
        command: BridgeMessage::Error {
            code,
            message: message.to_owned(),
        },
    })
}

/// The simulation thread: applies requests in arrival order and advances
/// time while timers are pending (or continuously when paced).
fn run_simulation(mut sim: Simulation, inbox: std_mpsc::Receiver<Request>) {
    let mut timers: Vec<Timer> = Vec::new();
    let mut real_time = false;
    let mut pace_origin = (Instant::now(), sim.time());
    loop {
        let advancing = real_time || !timers.is_empty();
        if !advancing {
            match inbox.recv() {
                Ok(request) => handle_request(&mut sim, request, &mut timers, &mut real_time),
                Err(_) => return,
            }
            pace_origin = (Instant::now(), sim.time());
        }
        loop {
            match inbox.try_recv() {
                Ok(request) => {
                    let was_paced = real_time;
                    handle_request(&mut sim, request, &mut timers, &mut real_time);
                    if real_time != was_paced {
                        pace_origin = (Instant::now(), sim.time());
                    }
                }
                Err(std_mpsc::TryRecvError::Empty) => break,
                Err(std_mpsc::TryRecvError::Disconnected) => return,
            }
        }
        if !real_time && timers.is_empty() {
            continue;
        }
        sim.tick();
        let now = sim.time();
        timers.retain(|timer| {
            if timer.deadline > now + sim.settings().dt / 2.0 {
                return !timer.reply.is_closed();
            }
            let _ = timer.reply.send(Frame::Bridge(BridgeFrame {
                seq: timer.seq,
                command: BridgeMessage::TimerExpired { seconds: now },
            }));
            false
        });
        if real_time {
            let due = pace_origin.0 + Duration::from_secs_f64(now - pace_origin.1);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                // Sleeping is the pacing itself, not a synchronisation.
                std::thread::sleep(wait.min(Duration::from_millis(50)));
            }
        }
    }
}

fn handle_request(
    sim: &mut Simulation,
    request: Request,
    timers: &mut Vec<Timer>,
    real_time: &mut bool,
) {
    let reply = match request.frame {
        Frame::Snp(SnpFrame { dst, message, .. }) => match sim.deliver(dst, &message) {
            Ok(answer) => Frame::Snp(SnpFrame {
                dst: HOST,
                src: dst,
                message: answer,
            }),
            Err(error) => error_frame(0, error_code::REFUSED, &error.to_string()),
        },
        Frame::Bridge(BridgeFrame { seq, command }) => {
            match supervise(sim, seq, command, &request.reply, timers, real_time) {
                Ok(Some(answer)) => Frame::Bridge(BridgeFrame {
                    seq,
                    command: answer,
                }),
                Ok(None) => return,
                Err((code, message)) => error_frame(seq, code, &message),
            }
        }
    };
    let _ = request.reply.send(reply);
}

/// Executes one supervisor command; `None` means the answer comes later.
fn supervise(
    sim: &mut Simulation,
    seq: u8,
    command: BridgeMessage,
    reply: &ReplyTx,
    timers: &mut Vec<Timer>,
    real_time: &mut bool,
) -> Result<Option<BridgeMessage>, (u8, String)> {
    let refused = |e: SimError| (error_code::REFUSED, e.to_string());
    let ok = Ok(Some(BridgeMessage::Ok));
    match command {
        BridgeMessage::GetPosition => {
            let p = sim.robot_position();
            Ok(Some(BridgeMessage::Position {
                x: p.x,
                y: p.y,
                z: p.z,
            }))
        }
        BridgeMessage::SetTimer { millis } => {
            timers.push(Timer {
                deadline: sim.time() + f64::from(millis) / 1000.0,
                seq,
                reply: reply.clone(),
            });
            Ok(None)
        }
        BridgeMessage::GetTime => Ok(Some(BridgeMessage::Time {
            seconds: sim.time(),
        })),
        BridgeMessage::SetMaster { id } => sim.set_master(id.into()).map_err(refused).and(ok),
        BridgeMessage::Connect {
            id_from,
            conn_from,
            id_to,
            conn_to,
            angle_deg,
        } => sim
            .connect(Connection {
                id_from: id_from.into(),
                conn_from,
                id_to: id_to.into(),
                conn_to,
                angle_deg: angle_deg.into(),
            })
            .map_err(refused)
            .and(ok),
        BridgeMessage::Disconnect { id } => sim.disconnect(id.into()).map_err(refused).and(ok),
        BridgeMessage::Reset => {
            sim.reset();
            // Pending timers refer to the old clock.
            timers.clear();
            ok
        }
        BridgeMessage::SetFriction { mu } => sim
            .set_ground_friction(f64::from(mu))
            .map_err(refused)
            .and(ok),
        BridgeMessage::Drop {
            height,
            upside_down,
        } => sim
            .drop_robot(f64::from(height), upside_down)
            .map_err(refused)
            .and(ok),
        BridgeMessage::DefectMotor { id, mode } => {
            sim.set_defect(id.into(), mode).map_err(refused).and(ok)
        }
        BridgeMessage::SetPacing { real_time: paced } => {
            *real_time = paced;
            ok
        }
        BridgeMessage::Ok
        | BridgeMessage::Position { .. }
        | BridgeMessage::Time { .. }
        | BridgeMessage::TimerExpired { .. }
        | BridgeMessage::Error { .. } => Err((
            error_code::NOT_A_REQUEST,
            "replies and events cannot be sent to the bridge".to_owned(),
        )),
    }
}
