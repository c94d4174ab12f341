//! Jobs: submission, cancellation, the fair dispatch to free hosts, and
//! how an attempt ends.

use super::*;

impl Scheduler {
    /// Validates and queues jobs; returns their ids once they are durable.
    pub async fn submit(
        self: &Arc<Self>,
        owner: &str,
        run_id: u64,
        jobs: Vec<(u64, JobRequest)>,
    ) -> Result<Vec<u64>, ScheduleError> {
        for (index, (_, job)) in jobs.iter().enumerate() {
            job.check()
                .map_err(|e| ScheduleError::Invalid(format!("jobs[{index}]: {e}")))?;
        }
        // A client's new jobs are refused on a full disk; a run's go on
        // queueing (its jobs are owed to a run already accepted).
        if run_id == 0 {
            self.store.check_writable()?;
        }
        let owner = if owner.is_empty() { "client" } else { owner };
        let now = now_ms();
        let ids = {
            let mut core = self.core.lock();
            let mut rows = Vec::with_capacity(jobs.len());
            let mut ids = Vec::with_capacity(jobs.len());
            for (seq, request) in jobs {
                let id = core.next_job;
                core.next_job += 1;
                rows.push(Job {
                    id,
                    run_id,
                    owner: owner.to_owned(),
                    seq,
                    tell_seq: None,
                    state: JobState::Queued,
                    request: request.clone(),
                    attempts: 0,
                    host: String::new(),
                    outcome: None,
                    error: String::new(),
                    submitted_ms: now,
                    started_ms: 0,
                    finished_ms: 0,
                });
                core.jobs.insert(
                    id,
                    LiveJob {
                        run_id,
                        owner: owner.to_owned(),
                        seq,
                        request: Arc::new(request),
                        state: JobState::Queued,
                        attempts: 0,
                        host: String::new(),
                        host_id: 0,
                        submitted_ms: now,
                        started_ms: 0,
                        abort: None,
                    },
                );
                enqueue(&mut core, owner.to_owned(), id, false);
                ids.push(id);
            }
            // Queued in order before any later write about these jobs.
            self.store.write(Write::InsertJobs(rows));
            ids
        };
        self.dispatch();
        self.store.sync().await?;
        Ok(ids)
    }

    /// Cancels queued or running jobs; returns how many were cancelled.
    pub async fn cancel(self: &Arc<Self>, ids: &[u64]) -> Result<u32, ScheduleError> {
        // Refused before anything is cancelled: a retry then cancels them.
        self.store.check_writable()?;
        let mut cancelled = 0;
        {
            let mut core = self.core.lock();
            for id in ids {
                let Some(job) = core.jobs.get_mut(id) else {
                    continue;
                };
                if !matches!(job.state, JobState::Queued | JobState::Running) {
                    continue;
                }
                job.state = JobState::Cancelled;
                if let Some(abort) = job.abort.take() {
                    let _ = abort.send(());
                }
                let (owner, host_id) = (job.owner.clone(), job.host_id);
                if let Some(q) = core.queues.get_mut(&owner) {
                    q.retain(|j| j != id);
                }
                if let Some(host) = core.hosts.get_mut(&host_id)
                    && host.current_job == *id
                {
                    host.current_job = 0;
                    host.state = HostState::Free;
                }
                let job = core.jobs.remove(id).expect("present");
                self.store.write(Write::JobFinished {
                    id: *id,
                    state: JobState::Cancelled,
                    tell_seq: None,
                    outcome: None,
                    error: "cancelled".into(),
                    finished_ms: now_ms(),
                });
                self.publish(*id, &job, JobState::Cancelled, None, "cancelled", now_ms());
                cancelled += 1;
            }
        }
        self.dispatch();
        self.store.sync().await?;
        Ok(cancelled)
    }

    /// A job by id: live state first, then the database.
    pub async fn job(&self, id: u64, brief: bool) -> Result<Job, ScheduleError> {
        if let Some(job) = self.core.lock().jobs.get(&id) {
            return Ok(live_view(id, job, brief));
        }
        // A job that just left the live set may not be committed yet: a
        // watcher reading its stale state would wait for an event already sent.
        self.store.settle().await?;
        match self.store.read_async(move |s| s.job(id)).await? {
            Some(job) if brief => Ok(job.brief()),
            Some(job) => Ok(job),
            None => Err(ScheduleError::NotFound(format!("job {id} does not exist"))),
        }
    }

    pub async fn list_jobs(
        &self,
        filter: JobFilter,
        brief: bool,
    ) -> Result<Vec<Job>, ScheduleError> {
        // The database has every job (inserts are ordered before updates);
        // live jobs overlay their newer state.
        let states = filter.states.clone();
        self.store.settle().await?;
        let rows = self.store.read_async(move |s| s.jobs(&filter)).await?;
        let core = self.core.lock();
        Ok(rows
            .into_iter()
            .map(|row| match core.jobs.get(&row.id) {
                Some(job) => live_view(row.id, job, brief),
                None if brief => row.brief(),
                None => row,
            })
            .filter(|j| states.is_empty() || states.contains(&j.state))
            .collect())
    }

    /// Every job of `run_id` its optimizer learnt, in the order it learnt
    /// them: parameters, outcome and gait of each.
    pub async fn told_jobs(&self, run_id: u64) -> Result<Vec<Job>, ScheduleError> {
        Ok(self.store.read_async(move |s| s.told_jobs(run_id)).await?)
    }

    // ------------------------------------------------------------- dispatch

    /// Pairs free hosts with queued jobs (the semaphore of free hosts).
    pub fn dispatch(self: &Arc<Self>) {
        self.dispatch_inner();
    }

    /// Sends no further job to any host, for good: an organizer on its way
    /// out lets running jobs finish (or leaves them to be re-queued at the
    /// next start) but starts nothing it would abandon.
    pub fn stop_dispatching(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn dispatch_inner(self: &Arc<Self>) {
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let mut core = self.core.lock();
        if core.turn.is_empty() {
            return;
        }
        let free: Vec<u64> = core
            .hosts
            .iter()
            .filter(|(_, h)| h.state == HostState::Free)
            .map(|(id, _)| *id)
            .collect();
        for host_id in free {
            let Some(job_id) = next_job_for(&mut core, host_id) else {
                continue;
            };
            let started = now_ms();
            let (abort_tx, abort_rx) = oneshot::channel();
            let host = core.hosts.get_mut(&host_id).expect("listed above");
            host.state = HostState::Busy;
            host.current_job = job_id;
            let client = host.client.clone();
            let host_name = host.name.clone();
            let job = core.jobs.get_mut(&job_id).expect("queued jobs are live");
            job.state = JobState::Running;
            job.attempts += 1;
            job.host = host_name.clone();
            job.host_id = host_id;
            job.started_ms = started;
            job.abort = Some(abort_tx);
            let attempt = job.attempts;
            let timeout = job.request.timeout.unwrap_or(self.config.default_timeout);
            let call = client.evaluate(job_id, attempt, &job.request.job);
            self.metrics.jobs_started.inc();
            self.store.write(Write::JobStarted {
                id: job_id,
                attempts: attempt,
                host: host_name,
                started_ms: started,
            });
            if self.job_events.receiver_count() > 0 {
                let view = live_view(job_id, job, true);
                let _ = self.job_events.send(view);
            }
            let me = self.clone();
            tokio::spawn(async move {
                me.manage(job_id, attempt, host_id, call, timeout, abort_rx)
                    .await;
            });
        }
    }

    /// The simulation manager: runs one attempt of one job on one host.
    pub(super) async fn manage(
        self: Arc<Self>,
        job_id: u64,
        attempt: u32,
        host_id: u64,
        call: BoxFuture<'static, Result<Outcome, HostCallError>>,
        timeout: Duration,
        abort: oneshot::Receiver<()>,
    ) {
        let end = tokio::select! {
            answer = tokio::time::timeout(timeout, call) => match answer {
                Ok(Ok(outcome)) => AttemptEnd::Done(Box::new(outcome)),
                Ok(Err(e)) => AttemptEnd::Failed(e),
                Err(_) => AttemptEnd::TimedOut,
            },
            // Aborted by whoever took the job away (lease expiry, cancel);
            // dropping the call cancels the host's evaluation.
            _ = abort => return,
        };
        self.finish_attempt(job_id, attempt, host_id, end).await;
    }

    pub(super) async fn finish_attempt(
        self: &Arc<Self>,
        job_id: u64,
        attempt: u32,
        host_id: u64,
        end: AttemptEnd,
    ) {
        let finished = {
            let mut core = self.core.lock();
            let current = core.jobs.get(&job_id).is_some_and(|j| {
                j.state == JobState::Running && j.attempts == attempt && j.host_id == host_id
            });
            if !current {
                // A stale attempt: the job was re-queued, cancelled or finished.
                return;
            }
            let max_attempts = self.max_attempts(&core.jobs[&job_id]);
            let host = core.hosts.get_mut(&host_id);
            match end {
                AttemptEnd::Done(result) => {
                    if let Some(host) = host {
                        host.state = HostState::Free;
                        host.current_job = 0;
                        host.evaluations += 1;
                        host.last_seen = Instant::now();
                    }
                    Some(self.finish_locked(&mut core, job_id, Ok(*result)))
                }
                AttemptEnd::Failed(HostCallError::Busy(message)) => {
                    if let Some(host) = host {
                        tracing::info!(
                            host = host.name,
                            "host refused a job as busy: no job for it until a probe finds it free"
                        );
                        host.current_job = 0;
                        host.state = HostState::Down;
                    }
                    if let Some(job) = core.jobs.get_mut(&job_id) {
                        // Nothing ran: the refused attempt is not one of its attempts.
                        job.attempts -= 1;
                    }
                    self.requeue_locked(&mut core, job_id, &message);
                    None
                }
                AttemptEnd::Failed(error) => {
                    let job_fault = !error.retryable();
                    let host_gone = matches!(error, HostCallError::Unavailable(_));
                    if let Some(host) = host {
                        host.current_job = 0;
                        host.failures += u64::from(!job_fault);
                        if host_gone {
                            tracing::warn!(host = host.name, "host failed: {error}");
                            host.state = HostState::Down;
                        } else {
                            host.state = HostState::Free;
                        }
                    }
                    let message = error.to_string();
                    if job_fault || attempt >= max_attempts {
                        Some(self.finish_locked(&mut core, job_id, Err(message)))
                    } else {
                        self.requeue_locked(&mut core, job_id, &message);
                        None
                    }
                }
                AttemptEnd::TimedOut => {
                    if let Some(host) = host {
                        host.current_job = 0;
                        host.failures += 1;
                        host.state = HostState::Down;
                    }
                    if attempt >= max_attempts {
                        Some(self.finish_locked(&mut core, job_id, Err("timed out".into())))
                    } else {
                        self.requeue_locked(&mut core, job_id, "timed out");
                        None
                    }
                }
            }
        };
        self.dispatch();
        if let Some((completion, sink)) = finished {
            self.deliver(completion, sink).await;
        }
    }

    /// Attempts a job gets before it fails for good.
    pub(super) fn max_attempts(&self, job: &LiveJob) -> u32 {
        if job.request.max_attempts > 0 {
            job.request.max_attempts
        } else {
            self.config.default_attempts
        }
    }

    /// Tells the job's run once the result is on disk: the optimizer never
    /// learns something a restart would forget. On a full disk that waits
    /// until space returns.
    pub(super) async fn deliver(
        &self,
        completion: Completion,
        sink: Option<mpsc::UnboundedSender<Completion>>,
    ) {
        if let Err(e) = self.store.sync().await {
            tracing::error!("result of job {} not persisted: {e}", completion.job_id);
            return;
        }
        if let Some(sink) = sink {
            let _ = sink.send(completion);
        }
    }

    /// Ends a job for good (under the lock); returns what its run must learn.
    pub(super) fn finish_locked(
        &self,
        core: &mut Core,
        job_id: u64,
        outcome: Result<Outcome, String>,
    ) -> (Completion, Option<mpsc::UnboundedSender<Completion>>) {
        let job = core.jobs.remove(&job_id).expect("caller checked");
        let tell_seq = if job.run_id > 0 {
            let next = core.tell_seqs.entry(job.run_id).or_insert(0);
            *next += 1;
            Some(*next - 1)
        } else {
            None
        };
        let finished = now_ms();
        let (state, error) = match &outcome {
            Ok(_) => (JobState::Done, String::new()),
            Err(e) => (JobState::Failed, e.clone()),
        };
        match state {
            JobState::Done => {
                self.metrics.jobs_finished.inc();
                if job.started_ms > 0 {
                    let seconds = (finished - job.started_ms).max(0) as f64 / 1000.0;
                    self.metrics.evaluation_seconds.observe(seconds);
                }
            }
            _ => {
                self.metrics.jobs_failed.inc();
            }
        }
        self.store.write(Write::JobFinished {
            id: job_id,
            state,
            tell_seq,
            outcome: outcome.as_ref().ok().cloned().map(Box::new),
            error: error.clone(),
            finished_ms: finished,
        });
        self.publish(job_id, &job, state, outcome.as_ref().ok(), &error, finished);
        let completion = Completion {
            job_id,
            seq: job.seq,
            tell_seq: tell_seq.unwrap_or(0),
            outcome,
        };
        (completion, core.run_sinks.get(&job.run_id).cloned())
    }

    pub(super) fn requeue_locked(&self, core: &mut Core, job_id: u64, why: &str) {
        let Some(job) = core.jobs.get_mut(&job_id) else {
            return;
        };
        if let Some(abort) = job.abort.take() {
            let _ = abort.send(());
        }
        tracing::info!(job = job_id, attempt = job.attempts, "re-queued: {why}");
        self.metrics.jobs_retried.inc();
        job.state = JobState::Queued;
        job.host.clear();
        job.host_id = 0;
        let owner = job.owner.clone();
        self.store.write(Write::JobRequeued {
            id: job_id,
            attempts: job.attempts,
        });
        enqueue(core, owner, job_id, true);
    }

    pub(super) fn publish(
        &self,
        id: u64,
        job: &LiveJob,
        state: JobState,
        outcome: Option<&Outcome>,
        error: &str,
        finished_ms: i64,
    ) {
        if self.job_events.receiver_count() == 0 {
            return;
        }
        let mut view = live_view(id, job, true);
        view.state = state;
        view.outcome = outcome.cloned();
        view.error = error.to_owned();
        view.finished_ms = finished_ms;
        let _ = self.job_events.send(view);
    }
}

pub(super) fn enqueue(core: &mut Core, owner: String, job_id: u64, front: bool) {
    let queue = core.queues.entry(owner.clone()).or_default();
    if front {
        queue.push_front(job_id);
    } else {
        queue.push_back(job_id);
    }
    if !core.turn.contains(&owner) {
        core.turn.push_back(owner);
    }
}

/// Round robin over owners: the first owner (in turn order) whose head job
/// fits the host gives it up and goes to the back of the line.
pub(super) fn next_job_for(core: &mut Core, host_id: u64) -> Option<u64> {
    let host = &core.hosts[&host_id];
    let (backend, objectives) = (host.backend, host.objectives.clone());
    for position in 0..core.turn.len() {
        let owner = core.turn[position].clone();
        let Some(queue) = core.queues.get_mut(&owner) else {
            continue;
        };
        let Some(&head) = queue.front() else {
            continue;
        };
        let fits = core
            .jobs
            .get(&head)
            .is_some_and(|j| fits(&j.request, backend, &objectives));
        if !fits {
            continue;
        }
        queue.pop_front();
        let empty = queue.is_empty();
        core.turn.remove(position);
        if empty {
            core.queues.remove(&owner);
        } else {
            core.turn.push_back(owner);
        }
        return Some(head);
    }
    None
}

/// Whether a host of kind `backend` serving `objectives` may take `request`.
pub(super) fn fits(
    request: &JobRequest,
    backend: Option<BackendKind>,
    objectives: &[String],
) -> bool {
    let kind_fits = request.backend.is_none() || request.backend == backend;
    kind_fits && request.job.objective.served_by(backend, objectives)
}

pub(super) fn request_view(request: &JobRequest, brief: bool) -> JobRequest {
    if !brief {
        return request.clone();
    }
    JobRequest {
        job: EvaluationJob {
            objective: request.job.objective.clone(),
            robot: RobotSource::Default,
            gait: None,
            parameters: request.job.parameters.clone(),
            spec: request.job.spec.clone(),
        },
        ..*request
    }
}

pub(super) fn live_view(id: u64, job: &LiveJob, brief: bool) -> Job {
    Job {
        id,
        run_id: job.run_id,
        owner: job.owner.clone(),
        seq: job.seq,
        tell_seq: None,
        state: job.state,
        request: request_view(&job.request, brief),
        attempts: job.attempts,
        host: job.host.clone(),
        outcome: None,
        error: String::new(),
        submitted_ms: job.submitted_ms,
        started_ms: job.started_ms,
        finished_ms: 0,
    }
}
