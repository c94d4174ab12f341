//! The one writer thread: group commit, isolation of a bad write, and the
//! full-disk loop (see the module above).

use super::*;

/// The writer thread's state: the only write connection and what it tells
/// the rest of the organizer about its health.
pub(super) struct Writer {
    pub(super) conn: Connection,
    pub(super) commit_seconds: prometheus_client::metrics::histogram::Histogram,
    pub(super) unwritable: Unwritable,
    /// When commits began to fail and when that was last logged, while they do.
    pub(super) failing_since: Option<(std::time::Instant, std::time::Instant)>,
}

/// Writes grouped into one transaction at most.
pub(super) const MAX_BATCH: usize = 4096;
/// The wait before a failed commit is tried again, doubling to the maximum.
pub(super) const RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(100);
pub(super) const RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(1);

impl Writer {
    /// Blocks for one write, takes whatever else is queued (bounded),
    /// applies all in one transaction, then acks. A batch that fails for a
    /// reason that may pass is kept and tried again; nothing behind it is
    /// applied first, so the database always holds a prefix of the writes.
    pub(super) fn run(mut self, rx: &mpsc::Receiver<Envelope>) {
        let mut pending: Vec<Envelope> = Vec::new();
        let mut retry = RETRY_FIRST;
        let mut open = true;
        loop {
            if pending.is_empty() {
                match self.next_write(rx, retry) {
                    Some(envelope) => pending.push(envelope),
                    None => return,
                }
            }
            open &= take_queued(rx, &mut pending);
            #[cfg(feature = "test-hooks")]
            self.take_disk_caps(&mut pending);
            if pending.is_empty() {
                continue;
            }
            let began = std::time::Instant::now();
            match apply(&mut self.conn, &pending) {
                Ok(()) if pending.iter().any(|e| matches!(e.write, Write::Close)) => {
                    self.close(pending);
                    return;
                }
                Ok(()) => {
                    self.commit_seconds.observe(began.elapsed().as_secs_f64());
                    // Barriers alone commit an empty transaction, which
                    // says nothing about the disk.
                    if pending.iter().any(|e| !matches!(e.write, Write::Barrier)) {
                        self.recovered(pending.len());
                    }
                    for mut envelope in pending.drain(..) {
                        envelope.answer(Ok(()));
                    }
                    retry = RETRY_FIRST;
                }
                Err(e) if may_pass(&e) => {
                    let reason = e.to_string();
                    self.failing(&reason, pending.len());
                    refuse_waiting(&mut pending, &reason);
                    if !open {
                        tracing::error!(
                            "the organizer stops with {} writes the database could not take ({reason}); \
                             their jobs run again when it starts",
                            pending.len()
                        );
                        return;
                    }
                    open = wait_to_retry(rx, &mut pending, retry, &reason);
                    retry = (retry * 2).min(RETRY_MAX);
                }
                Err(e) => {
                    tracing::error!("database write failed ({e}); writing one by one");
                    self.write_one_by_one(&mut pending);
                }
            }
            if !open && pending.is_empty() {
                return;
            }
        }
    }

    /// After a committed batch holding [`Write::Close`]: checkpoints the
    /// WAL into the file, closes the connection, then acks the batch.
    fn close(self, mut batch: Vec<Envelope>) {
        let checkpointed = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| e.to_string());
        let closed = self.conn.close().map_err(|(_, e)| e.to_string());
        let outcome = checkpointed.and(closed);
        for mut envelope in batch.drain(..) {
            let answer = match (&envelope.write, &outcome) {
                (Write::Close, Err(why)) => Err(StoreError::Write(why.clone())),
                _ => Ok(()),
            };
            envelope.answer(answer);
        }
    }

    /// The next write, blocking; while the disk is full and nothing waits,
    /// a probe after `retry`. `None` once every sender is gone.
    fn next_write(
        &self,
        rx: &mpsc::Receiver<Envelope>,
        retry: std::time::Duration,
    ) -> Option<Envelope> {
        if self.failing_since.is_none() {
            return rx.recv().ok();
        }
        match rx.recv_timeout(retry) {
            Ok(envelope) => Some(envelope),
            Err(mpsc::RecvTimeoutError::Timeout) => Some(Envelope {
                write: Write::Probe,
                wait: Wait::No,
                ack: None,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Not the disk: one bad write must not hold back the rest. Should the
    /// disk fill meanwhile, that write and all behind it stay in `pending`
    /// and wait as any failed batch does.
    fn write_one_by_one(&mut self, pending: &mut Vec<Envelope>) {
        let mut rest = std::mem::take(pending).into_iter();
        while let Some(mut envelope) = rest.next() {
            match apply(&mut self.conn, std::slice::from_ref(&envelope)) {
                Ok(()) => envelope.answer(Ok(())),
                Err(e) if may_pass(&e) => {
                    pending.push(envelope);
                    pending.extend(rest);
                    return;
                }
                Err(e) => {
                    tracing::error!("a database write was dropped: {e}");
                    envelope.answer(Err(StoreError::Write(e.to_string())));
                }
            }
        }
    }

    #[cfg(feature = "test-hooks")]
    /// Applies [`Write::DiskFull`] at once: a full disk must be able to
    /// clear while writes queued before it wait for space.
    fn take_disk_caps(&mut self, pending: &mut Vec<Envelope>) {
        pending.retain_mut(|envelope| {
            let Write::DiskFull(full) = envelope.write else {
                return true;
            };
            // SQLite raises a cap below the file's size to that size.
            let pages: i64 = if full { 1 } else { 1 << 30 };
            let set = self
                .conn
                .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
                .map_err(StoreError::from);
            envelope.answer(set);
            false
        });
    }

    fn failing(&mut self, reason: &str, pending: usize) {
        let now = std::time::Instant::now();
        match &mut self.failing_since {
            None => {
                tracing::error!(
                    "the database cannot be written: {reason}; {pending} writes are kept and tried \
                     again every second, new runs are refused until it can be written"
                );
                self.failing_since = Some((now, now));
                *self.unwritable.lock() = Some(reason.to_owned());
            }
            Some((since, logged)) if now.duration_since(*logged).as_secs() >= 30 => {
                tracing::error!(
                    "the database still cannot be written after {} s: {reason}; {pending} writes wait",
                    now.duration_since(*since).as_secs()
                );
                *logged = now;
            }
            Some(_) => {}
        }
    }

    fn recovered(&mut self, written: usize) {
        if let Some((since, _)) = self.failing_since.take() {
            tracing::warn!(
                "the database can be written again after {:.1} s; {written} waiting writes saved",
                since.elapsed().as_secs_f64()
            );
            *self.unwritable.lock() = None;
        }
    }
}

/// Whether a failed commit may succeed later unchanged: the disk was full
/// or failed, or the file was busy, rather than the write being wrong.
pub(super) fn may_pass(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{
        CannotOpen, DatabaseBusy, DatabaseLocked, DiskFull, ReadOnly, SystemIoFailure,
    };
    matches!(
        e.sqlite_error_code(),
        Some(DiskFull | SystemIoFailure | CannotOpen | DatabaseBusy | DatabaseLocked | ReadOnly)
    )
}

/// Adds what is queued to `pending` (bounded by [`MAX_BATCH`]); `false`
/// once every sender is gone.
pub(super) fn take_queued(rx: &mpsc::Receiver<Envelope>, pending: &mut Vec<Envelope>) -> bool {
    while pending.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(envelope) => pending.push(envelope),
            Err(mpsc::TryRecvError::Empty) => break,
            Err(mpsc::TryRecvError::Disconnected) => return false,
        }
    }
    true
}

/// Waits `retry` before a failed batch is tried again, adding what comes
/// meanwhile to `pending` and refusing at once what would rather be
/// refused; `false` once every sender is gone.
pub(super) fn wait_to_retry(
    rx: &mpsc::Receiver<Envelope>,
    pending: &mut Vec<Envelope>,
    retry: std::time::Duration,
    reason: &str,
) -> bool {
    let until = std::time::Instant::now() + retry;
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(mut envelope) if envelope.wait == Wait::OrRefuse => {
                envelope.answer(Err(StoreError::Unwritable {
                    reason: reason.to_owned(),
                }));
            }
            Ok(envelope) => pending.push(envelope),
            Err(mpsc::RecvTimeoutError::Timeout) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
    true
}

/// Withdraws the writes whose callers would rather be refused than wait.
pub(super) fn refuse_waiting(pending: &mut Vec<Envelope>, reason: &str) {
    pending.retain_mut(|envelope| {
        if envelope.wait != Wait::OrRefuse {
            return true;
        }
        envelope.answer(Err(StoreError::Unwritable {
            reason: reason.to_owned(),
        }));
        false
    });
}

pub(super) fn apply(conn: &mut Connection, batch: &[Envelope]) -> rusqlite::Result<()> {
    // A failed COMMIT whose rollback failed too would leave a transaction
    // open, and every later BEGIN would fail as if the writes were wrong.
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK")?;
    }
    let tx = conn.transaction()?;
    for envelope in batch {
        match &envelope.write {
            Write::InsertJobs(rows) => {
                for j in rows {
                    insert_job(&tx, j)?;
                }
            }
            Write::JobStarted {
                id,
                attempts,
                host,
                started_ms,
            } => {
                tx.prepare_cached(
                    "UPDATE jobs SET state = 'running', attempts = ?2, host = ?3, started_ms = ?4 WHERE id = ?1 AND state IN ('queued', 'running')",
                )?
                .execute(params![*id as i64, attempts, host, started_ms])?;
            }
            Write::JobRequeued { id, attempts } => {
                tx.prepare_cached(
                    "UPDATE jobs SET state = 'queued', attempts = ?2 WHERE id = ?1 AND state IN ('queued', 'running')",
                )?
                .execute(params![*id as i64, attempts])?;
            }
            Write::JobFinished {
                id,
                state,
                tell_seq,
                outcome,
                error,
                finished_ms,
            } => {
                // Only an unfinished job can finish: a result is never recorded twice.
                tx.prepare_cached(
                    "UPDATE jobs SET state = ?2, tell_seq = ?3, outcome = ?4, fitness = ?5, error = ?6, finished_ms = ?7 WHERE id = ?1 AND state IN ('queued', 'running')",
                )?
                .execute(params![
                    *id as i64,
                    state.as_str(),
                    tell_seq.map(|v| v as i64),
                    outcome.as_ref().map(to_json),
                    outcome.as_ref().map(|o| o.fitness()),
                    error,
                    finished_ms
                ])?;
            }
            Write::UpsertHost(h) => {
                tx.prepare_cached(
                    "INSERT INTO hosts (id, name, address) VALUES (?1, ?2, ?3)
                     ON CONFLICT(id) DO UPDATE SET name = excluded.name, address = excluded.address",
                )?
                .execute(params![h.id as i64, h.name, h.address])?;
            }
            Write::Barrier | Write::Close => {}
            Write::Probe => {
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            }
            // Applied by the writer as it arrives, ahead of the queue.
            #[cfg(feature = "test-hooks")]
            Write::DiskFull(_) => {}
            Write::InsertGait(g) => {
                tx.prepare_cached(
                    "INSERT INTO gaits (id, body, gait_xml, orientation, expected_velocity, last_used_ms, windows, velocity_m2) VALUES (?1,?2,?3,?4,?5,?6,1,0)",
                )?
                .execute(params![
                    g.id as i64,
                    g.body,
                    g.gait_xml,
                    g.orientation,
                    g.expected_velocity,
                    g.last_used_ms
                ])?;
                for (from, symptom) in &g.predecessors {
                    insert_predecessor(&tx, g.id, *from, symptom)?;
                }
            }
            Write::GaitUsed {
                id,
                last_used_ms,
                velocity,
                predecessor,
            } => {
                // Welford's update; every right-hand side reads the row as
                // it was before this statement.
                tx.prepare_cached(
                    "UPDATE gaits SET last_used_ms = ?2, windows = windows + 1, \
                     expected_velocity = expected_velocity + (?3 - expected_velocity) / (windows + 1), \
                     velocity_m2 = velocity_m2 + (?3 - expected_velocity) * (?3 - expected_velocity - (?3 - expected_velocity) / (windows + 1)) \
                     WHERE id = ?1",
                )?
                .execute(params![*id as i64, last_used_ms, velocity])?;
                if let Some((from, symptom)) = predecessor {
                    insert_predecessor(&tx, *id, *from, symptom)?;
                }
            }
            Write::EndOrphans { error, finished_ms } => {
                let (running, stopped) = (RunState::Running.as_str(), RunState::Stopped.as_str());
                tx.execute(
                    "UPDATE jobs SET state = ?1, error = ?2, finished_ms = ?3 \
                     WHERE state IN (?4, ?5) AND run_id IN (SELECT id FROM runs WHERE state = ?6)",
                    params![
                        JobState::Cancelled.as_str(),
                        error,
                        finished_ms,
                        JobState::Queued.as_str(),
                        JobState::Running.as_str(),
                        running
                    ],
                )?;
                tx.execute(
                    "UPDATE runs SET state = ?1, error = ?2, finished_ms = ?3 WHERE state = ?4",
                    params![stopped, error, finished_ms, running],
                )?;
                tx.execute("DELETE FROM hosts", [])?;
            }
            Write::DeleteHost(id) => {
                tx.prepare_cached("DELETE FROM hosts WHERE id = ?1")?
                    .execute([*id as i64])?;
            }
            Write::InsertRun(r) => insert_run(&tx, r)?,
            Write::UpdateRun {
                id,
                state,
                evaluations,
                best_velocity,
                best_parameters,
                recommendation,
                error,
                finished_ms,
                elapsed_s,
            } => {
                tx.prepare_cached(
                    "UPDATE runs SET state = ?2, evaluations = ?3, best_velocity = ?4, best_parameters = ?5, error = ?6, finished_ms = ?7, elapsed_s = ?8, recommendation = ?9 WHERE id = ?1",
                )?
                .execute(params![
                    *id as i64,
                    state.as_str(),
                    *evaluations as i64,
                    best_velocity,
                    to_json(best_parameters),
                    error,
                    finished_ms,
                    elapsed_s,
                    to_json(recommendation)
                ])?;
            }
        }
    }
    tx.commit()
}
