//! Hosts: registration, heartbeats, leases and probes.

use super::jobs::fits;
use super::*;

impl Scheduler {
    /// Adds or updates a host by name and probes it once.
    pub async fn register_host(
        self: &Arc<Self>,
        name: &str,
        address: &str,
    ) -> Result<Host, ScheduleError> {
        let address = address.trim();
        if address.is_empty() {
            return Err(ScheduleError::Invalid("address: missing".into()));
        }
        // On a full disk the host is told so before anything changes; it
        // registers again later.
        self.store.check_writable()?;
        let name = if name.trim().is_empty() {
            address
        } else {
            name.trim()
        };
        let client = self
            .connector
            .connect(address)
            .map_err(|e| ScheduleError::Invalid(format!("address {address:?}: {e}")))?;
        let info = tokio::time::timeout(
            self.config.heartbeat_interval.max(Duration::from_secs(2)),
            client.info(),
        )
        .await
        .map_err(|_| ScheduleError::Unreachable {
            address: address.to_owned(),
            why: "no answer".into(),
        })?
        .map_err(|e| ScheduleError::Unreachable {
            address: address.to_owned(),
            why: e.to_string(),
        })?;
        let (id, host, moved) = {
            let mut core = self.core.lock();
            // One address is one host. Alive under another name: refuse. Down:
            // the address has moved to this host (a container restarted with
            // a new name got an old address), and the old entry would reach
            // this host through it, so it goes.
            let clash = core
                .hosts
                .iter()
                .find(|(_, h)| h.address == address && h.name != name)
                .map(|(id, h)| (*id, h.state, h.name.clone()));
            let moved = match clash {
                Some((other, state, other_name)) if state != HostState::Down => {
                    return Err(ScheduleError::Invalid(format!(
                        "address {address} is already host {other_name:?} (id {other}); \
                         register under that name, or remove it first (yamor hosts remove {other_name})"
                    )));
                }
                Some((other, _, other_name)) => {
                    tracing::info!(host = other_name, address, "address taken over by {name}");
                    core.hosts.remove(&other);
                    Some(other)
                }
                None => None,
            };
            let existing = core
                .hosts
                .iter()
                .find(|(_, h)| h.name == name)
                .map(|(id, _)| *id);
            let id = existing.unwrap_or_else(|| {
                core.next_host += 1;
                core.next_host - 1
            });
            let entry = core.hosts.entry(id).or_insert_with(|| HostEntry {
                name: name.to_owned(),
                address: address.to_owned(),
                client: client.clone(),
                backend: None,
                robot: String::new(),
                objectives: Vec::new(),
                state: HostState::Free,
                current_job: 0,
                last_seen: Instant::now(),
                evaluations: 0,
                failures: 0,
                probing: false,
            });
            if entry.address != address {
                entry.address = address.to_owned();
                entry.client = client;
            }
            entry.backend = info.backend;
            entry.robot = info.robot;
            entry.objectives = info.objectives;
            entry.last_seen = Instant::now();
            if entry.state == HostState::Down {
                entry.state = HostState::Free;
            }
            (id, host_view(id, entry), moved)
        };
        if let Some(old) = moved {
            // Memory has moved the address already: the row must follow.
            self.store.commit(Write::DeleteHost(old)).await?;
        }
        self.store
            .commit_or_refuse(Write::UpsertHost(crate::store::HostRow {
                id,
                name: name.to_owned(),
                address: address.to_owned(),
            }))
            .await?;
        tracing::info!(host = name, address, "host registered");
        self.registrations.send_modify(|n| *n += 1);
        self.dispatch();
        Ok(host)
    }

    /// Resolves once every host named in `names` is registered and not
    /// down (hosts that register themselves, as `HostServer` does).
    pub async fn hosts_admitted(&self, names: &[String]) {
        let mut registrations = self.registrations.subscribe();
        let admitted = |hosts: Vec<Host>| {
            names.iter().all(|name| {
                hosts
                    .iter()
                    .any(|h| &h.name == name && h.state != HostState::Down)
            })
        };
        while !admitted(self.hosts()) {
            if registrations.changed().await.is_err() {
                return;
            }
        }
    }

    /// Renews a host's lease. A heartbeat proves only that the host reaches
    /// the organizer: a host that was down, or whose backend is not known
    /// (restored from the database), is probed, and only an answer from it
    /// admits it, so a host the organizer cannot reach is not given jobs.
    pub fn heartbeat(self: &Arc<Self>, host_id: u64) -> Result<HostState, ScheduleError> {
        let (state, probe) = {
            let mut core = self.core.lock();
            let host = core.hosts.get_mut(&host_id).ok_or_else(|| {
                ScheduleError::NotFound(format!("host {host_id} is not registered"))
            })?;
            host.last_seen = Instant::now();
            let unproven = host.state == HostState::Down || host.backend.is_none();
            let probe = (unproven && !host.probing).then(|| {
                host.probing = true;
                host.client.clone()
            });
            (host.state, probe)
        };
        match probe {
            Some(client) => {
                let me = self.clone();
                tokio::spawn(async move { me.probe(host_id, client).await });
            }
            None => self.dispatch(),
        }
        Ok(state)
    }

    /// A host going away for now (shutting down, restarting): down at once,
    /// its job re-queued without waiting for the lease; it keeps its id.
    pub fn host_leaving(self: &Arc<Self>, host_id: u64, name: &str) -> Result<(), ScheduleError> {
        {
            let mut core = self.core.lock();
            let id = host_by_id_or_name(&core, host_id, name)?;
            let host = core.hosts.get_mut(&id).expect("found above");
            tracing::info!(host = host.name, "host leaving");
            host.state = HostState::Down;
            let job = std::mem::take(&mut host.current_job);
            if job != 0 {
                self.requeue_locked(&mut core, job, "its host shut down");
            }
        }
        self.dispatch();
        Ok(())
    }

    pub async fn deregister_host(
        self: &Arc<Self>,
        host_id: u64,
        name: &str,
    ) -> Result<(), ScheduleError> {
        // Refused before memory changes, so that a retry finds the host.
        self.store.check_writable()?;
        let id = {
            let mut core = self.core.lock();
            let id = host_by_id_or_name(&core, host_id, name)?;
            let host = core.hosts.remove(&id).expect("found above");
            if host.current_job != 0 {
                self.requeue_locked(&mut core, host.current_job, "its host was removed");
            }
            id
        };
        self.store.commit(Write::DeleteHost(id)).await?;
        self.dispatch();
        Ok(())
    }

    #[must_use]
    pub fn hosts(&self) -> Vec<Host> {
        let core = self.core.lock();
        core.hosts.iter().map(|(id, h)| host_view(*id, h)).collect()
    }

    /// Whether any registered host, up or down, could take `request`.
    #[must_use]
    pub fn serves(&self, request: &JobRequest) -> bool {
        let core = self.core.lock();
        core.hosts
            .values()
            .any(|h| fits(request, h.backend, &h.objectives))
    }

    /// Whether any registered host could take `request`, waiting up to a
    /// lease for hosts known from the store that have not told what they
    /// serve yet (right after a restart, until their first heartbeat or
    /// probe answers). `Err` names those that stayed silent.
    pub async fn serves_after_restart(&self, request: &JobRequest) -> Result<bool, Vec<String>> {
        let unproven = || -> Vec<String> {
            let core = self.core.lock();
            core.hosts
                .values()
                .filter(|h| h.backend.is_none())
                .map(|h| h.name.clone())
                .collect()
        };
        let mut learnt = self.registrations.subscribe();
        let deadline = tokio::time::Instant::now() + self.config.lease;
        loop {
            if self.serves(request) {
                return Ok(true);
            }
            let silent = unproven();
            if silent.is_empty() {
                return Ok(false);
            }
            match tokio::time::timeout_at(deadline, learnt.changed()).await {
                Ok(Ok(())) => {}
                _ => return Err(silent),
            }
        }
    }

    // --------------------------------------------------------------- leases

    pub(super) async fn watch_leases(me: std::sync::Weak<Self>) {
        loop {
            let Some(this) = me.upgrade() else {
                return;
            };
            let tick = (this.config.heartbeat_interval / 2).max(Duration::from_millis(20));
            drop(this);
            tokio::time::sleep(tick).await;
            let Some(this) = me.upgrade() else {
                return;
            };
            this.check_leases();
        }
    }

    pub(super) fn check_leases(self: &Arc<Self>) {
        {
            let mut probes = Vec::new();
            {
                let mut core = self.core.lock();
                let mut orphaned = Vec::new();
                for (id, host) in &mut core.hosts {
                    let silent = host.last_seen.elapsed();
                    if host.state != HostState::Down && silent > self.config.lease {
                        tracing::warn!(
                            host = host.name,
                            "lease expired after {silent:?}: host down"
                        );
                        host.state = HostState::Down;
                        if host.current_job != 0 {
                            orphaned.push(host.current_job);
                            host.current_job = 0;
                            host.failures += 1;
                        }
                    }
                    if silent > self.config.heartbeat_interval && !host.probing {
                        host.probing = true;
                        probes.push((*id, host.client.clone()));
                    }
                }
                for job in orphaned {
                    let attempts_left = core
                        .jobs
                        .get(&job)
                        .is_some_and(|j| j.attempts < self.max_attempts(j));
                    if attempts_left {
                        self.requeue_locked(&mut core, job, "its host's lease expired");
                    } else if core.jobs.contains_key(&job) {
                        if let Some(abort) = core.jobs.get_mut(&job).and_then(|j| j.abort.take()) {
                            let _ = abort.send(());
                        }
                        let (completion, sink) = self.finish_locked(
                            &mut core,
                            job,
                            Err("every host it ran on vanished".into()),
                        );
                        let me = self.clone();
                        tokio::spawn(async move { me.deliver(completion, sink).await });
                    }
                }
            }
            for (id, client) in probes {
                let me = self.clone();
                tokio::spawn(async move { me.probe(id, client).await });
            }
            self.dispatch();
        }
    }

    /// Hosts added by hand do not heartbeat: a successful probe counts as one.
    pub(super) async fn probe(self: Arc<Self>, id: u64, client: Arc<dyn HostClient>) {
        let answer = tokio::time::timeout(
            self.config
                .heartbeat_interval
                .max(Duration::from_millis(200)),
            client.info(),
        )
        .await;
        {
            let mut core = self.core.lock();
            let Some(host) = core.hosts.get_mut(&id) else {
                return;
            };
            host.probing = false;
            if let Ok(Ok(info)) = answer {
                host.last_seen = Instant::now();
                host.backend = info.backend.or(host.backend);
                host.robot = info.robot;
                host.objectives = info.objectives;
                // What it serves is known now: a run start waiting on it
                // can decide.
                self.registrations.send_modify(|n| *n += 1);
                // A host still busy with an evaluation it was sent before
                // (and the organizer gave up on) stays down until it is free.
                if host.state == HostState::Down && !info.busy {
                    tracing::info!(host = host.name, "host is back");
                    host.state = HostState::Free;
                }
            }
        }
        self.dispatch();
    }
}

pub(super) fn host_by_id_or_name(
    core: &Core,
    host_id: u64,
    name: &str,
) -> Result<u64, ScheduleError> {
    core.hosts
        .iter()
        .find(|(id, h)| **id == host_id || (!name.is_empty() && h.name == name))
        .map(|(id, _)| *id)
        .ok_or_else(|| {
            ScheduleError::Invalid(format!(
                "unknown host: no host with id {host_id} or name {name:?}"
            ))
        })
}

pub(super) fn host_view(id: u64, h: &HostEntry) -> Host {
    Host {
        id,
        name: h.name.clone(),
        address: h.address.clone(),
        backend: h.backend,
        robot: h.robot.clone(),
        objectives: h.objectives.clone(),
        state: h.state,
        current_job: h.current_job,
        last_seen: h.last_seen.elapsed(),
        evaluations: h.evaluations,
        failures: h.failures,
    }
}
