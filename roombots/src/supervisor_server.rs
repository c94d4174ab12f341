//! The supervisor language as a text protocol over TCP: the Roombots'
//! side of the YaMoR Webots Bridge (thesis 5.4), for a supervisor that
//! drives a simulated meta-module from another program.
//!
//! One command of 002 App. B per line; every line gets one line back:
//! `ok …` with what the plan and the simulation did, or `error …` with why
//! nothing changed. Blank lines and `#` comments get `ok`. Beyond App. B,
//! `state` answers where the cubes are, what is locked and which end holds
//! the meta-module. A line that is not text, or longer than
//! [`MAX_LINE`] bytes, gets an error and the connection goes on.
//!
//! # Layout
//! - [`serve`]: the listener; accepts clients until the injected shutdown
//!   future completes; any number of clients share one meta-module.
//! - one handler task per client: reads lines, answers each.
//! - the simulation thread: owns the [`Enactment`], so the physics never
//!   blocks the async runtime.

use std::future::Future;
use std::sync::mpsc as std_mpsc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::chain::ConnectionType;
use crate::enactment::Enactment;
use crate::physics::PhysicsError;
use crate::supervisor::{Command, parse_line};

/// The longest line read (bytes); a longer one is refused whole.
pub const MAX_LINE: usize = 4096;

struct Request {
    line: String,
    reply: oneshot::Sender<String>,
}

/// Serves a meta-module of `connection` on `listener` until `shutdown`
/// completes.
pub async fn serve(
    listener: TcpListener,
    connection: ConnectionType,
    shutdown: impl Future<Output = ()>,
) -> Result<(), PhysicsError> {
    let enactment = tokio::task::spawn_blocking(move || Enactment::new(connection))
        .await
        .expect("building the meta-module does not panic")?;
    let (inbox, requests) = std_mpsc::channel::<Request>();
    let simulation = std::thread::spawn(move || run_simulation(enactment, &requests));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tracing::info!(%peer, "supervisor connected");
                    tokio::spawn(handle_client(stream, inbox.clone()));
                }
                Err(e) => tracing::warn!(error = %e, "accept failed"),
            },
        }
    }
    drop(inbox);
    // The thread ends when every client's sender is gone; clients still
    // connected keep theirs, so do not wait for it.
    drop(simulation);
    Ok(())
}

async fn handle_client(stream: TcpStream, inbox: std_mpsc::Sender<Request>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut bytes)
            .await;
        if bytes.ends_with(b"\n") {
            bytes.pop();
        }
        let answer = match read {
            Ok(0) | Err(_) => return,
            Ok(_) if bytes.len() > MAX_LINE => {
                // Skip the rest of the line, a bounded chunk at a time.
                if !skip_line(&mut reader).await {
                    return;
                }
                format!("error line longer than {MAX_LINE} bytes; nothing changed")
            }
            Ok(_) => match std::str::from_utf8(&bytes) {
                Err(_) => "error the line is not UTF-8 text; nothing changed".to_owned(),
                Ok(line) => {
                    let (reply, answer) = oneshot::channel();
                    let request = Request {
                        line: line.trim_end().to_owned(),
                        reply,
                    };
                    if inbox.send(request).is_err() {
                        return;
                    }
                    match answer.await {
                        Ok(answer) => answer,
                        Err(_) => return,
                    }
                }
            },
        };
        if write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Reads and drops bytes up to the next newline without holding more than
/// the reader's buffer; false when the client went away.
async fn skip_line(reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> bool {
    loop {
        let (found, used) = match reader.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(buffer) => match buffer.iter().position(|b| *b == b'\n') {
                Some(at) => (true, at + 1),
                None => (false, buffer.len()),
            },
        };
        reader.consume(used);
        if found {
            return true;
        }
    }
}

fn run_simulation(mut enactment: Enactment, requests: &std_mpsc::Receiver<Request>) {
    while let Ok(request) = requests.recv() {
        let answer = answer(&mut enactment, &request.line);
        // A client gone before its answer loses only the answer.
        let _ = request.reply.send(answer);
    }
}

/// The one-line answer to one line.
fn answer(enactment: &mut Enactment, line: &str) -> String {
    if line.trim() == "state" {
        let stage = enactment.stage();
        let locks: Vec<String> = stage
            .locks()
            .iter()
            .map(|(m, c)| format!("{m}:{c}"))
            .collect();
        return format!(
            "ok cubes at {:?}, locked {}, held by its {} end, {:.2} s simulated",
            enactment.cells(),
            locks.join(" "),
            stage.held_by(),
            enactment.clock()
        );
    }
    let command = match parse_line(line) {
        Ok(None) => return "ok".to_owned(),
        Ok(Some(command)) => command,
        Err(why) => return format!("error {why}; nothing changed"),
    };
    if matches!(command, Command::Terminal | Command::File) {
        return "ok every line of the bridge is a command from the terminal".to_owned();
    }
    match enactment.apply(&command) {
        Err(why) => format!("error {why}; nothing changed"),
        Ok(report) => format!(
            "ok {}; simulated {:.2} s, {}, {} retarget(s), {} overlap(s), locks give <= {:.2} mm",
            report.plan,
            report.seconds,
            if report.reached { "reached" } else { "stuck" },
            report.retargets,
            report.overlaps,
            report.lock_gap * 1e3
        ),
    }
}
