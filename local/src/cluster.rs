//! [`LocalCluster`]: an organizer and its hosts in this process, on loopback
//! gRPC, so `yamor run`, the experiments, the benchmarks and the tests all
//! drive the same code paths as a real cluster.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use yamor_host_agent::{Backend, HostOptions, HostServer, HostService};
use yamor_organizer::model::{Run, RunSpec, RunState};
use yamor_organizer::{Organizer, SchedulerConfig};
use yamor_proto::transport::{ClientSecurity, ServerSecurity};

use crate::LocalError;

/// Serves `service` on 127.0.0.1:0 until `shutdown` resolves; returns its
/// URL and the serving task.
pub async fn serve_host(
    service: Arc<HostService>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(String, HostTask), LocalError> {
    let listener = bind_loopback().await?;
    let address = format!(
        "http://{}",
        listener.local_addr().map_err(LocalError::Listen)?
    );
    let task = tokio::spawn(yamor_host_agent::serve(
        listener,
        service,
        ServerSecurity::default(),
        shutdown,
    ));
    Ok((address, task))
}

/// How long local hosts may take to register: loopback answers in
/// milliseconds, so a host still missing after this is broken.
const ADMISSION: Duration = Duration::from_secs(30);

/// A host served by [`serve_host`]; it ends when its shutdown future does.
pub type HostTask = tokio::task::JoinHandle<Result<(), yamor_proto::transport::TransportError>>;

/// An organizer with its SQLite file and `hosts` simulation hosts of
/// `robot`, all on loopback gRPC in this process: the same code paths as a
/// real cluster.
pub struct LocalCluster {
    pub organizer: Organizer,
    /// The organizer's gRPC address.
    pub url: String,
    /// The dashboard and `/metrics` (HTTP, loopback).
    pub dashboard: String,
    stop: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<Result<(), yamor_proto::transport::TransportError>>,
    /// The hosts' serving tasks: each halts its robot on the way out.
    hosts: Vec<HostTask>,
}

impl LocalCluster {
    /// `hosts` simulation hosts of the embedded `robot`.
    pub async fn start(robot: &str, hosts: usize, db: &Path) -> Result<LocalCluster, LocalError> {
        Self::start_with(hosts, db, |_| {
            yamor_families::example_backend(robot, Default::default())
        })
        .await
    }

    /// `hosts` hosts with the backends `backend(index)` makes. Every host is
    /// admitted before this returns, then keeps itself registered.
    pub async fn start_with(
        hosts: usize,
        db: &Path,
        backend: impl Fn(usize) -> Result<Arc<dyn Backend>, yamor_host_agent::HostError>,
    ) -> Result<LocalCluster, LocalError> {
        let organizer = Organizer::start(
            db,
            SchedulerConfig::default(),
            ClientSecurity::default(),
            crate::optimizers(),
        )
        .await?;
        let listener = bind_loopback().await?;
        let organizer_url = format!(
            "http://{}",
            listener.local_addr().map_err(LocalError::Listen)?
        );
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let server = tokio::spawn(yamor_organizer::serve(
            listener,
            organizer.clone(),
            ServerSecurity::default(),
            stopped(stop_rx.clone()),
        ));
        let http = bind_loopback().await?;
        let dashboard = format!("http://{}", http.local_addr().map_err(LocalError::Listen)?);
        tokio::spawn(yamor_organizer::http::serve(
            http,
            organizer.clone(),
            crate::dashboard_options(None),
            stopped(stop_rx.clone()),
        ));
        let mut host_tasks = Vec::with_capacity(hosts);
        let mut names = Vec::with_capacity(hosts);
        for index in 0..hosts {
            // The same host as `yamor host`: it registers itself, and again
            // after the organizer is lost.
            let options = HostOptions {
                name: Some(format!("local-{}", index + 1)),
                organizer: Some(organizer_url.clone()),
                ..HostOptions::default()
            };
            let host = HostServer::new(bind_loopback().await?, backend(index)?, options)?;
            names.push(host.name.clone());
            host_tasks.push(tokio::spawn(host.run(stopped(stop_rx.clone()))));
        }
        let admitted = organizer.scheduler.hosts_admitted(&names);
        if tokio::time::timeout(ADMISSION, admitted).await.is_err() {
            return Err(LocalError::HostsNotAdmitted(ADMISSION));
        }
        Ok(LocalCluster {
            organizer,
            url: organizer_url,
            dashboard,
            stop,
            server,
            hosts: host_tasks,
        })
    }

    /// Starts a run and waits for its end, showing progress.
    pub async fn run_to_end(&self, spec: RunSpec) -> Result<Run, LocalError> {
        let run = self.organizer.runs.start(spec).await?;
        self.follow(run.id).await
    }

    /// Shows a run's progress until it ends; returns it once its results
    /// are on disk.
    pub async fn follow(&self, run_id: u64) -> Result<Run, LocalError> {
        let events = self.organizer.runs.watch(run_id)?;
        let done = crate::progress::follow_run(
            tokio_stream::StreamExt::map(events, Ok),
            std::future::pending(),
        )
        .await?;
        self.organizer.scheduler.store().sync().await?;
        Ok(done)
    }

    /// Waits for a run's end without showing progress.
    pub async fn follow_quietly(&self, run_id: u64) -> Result<Run, LocalError> {
        use tokio_stream::StreamExt as _;
        let mut events = self.organizer.runs.watch(run_id)?;
        while let Some(event) = events.next().await {
            if event.run.state != RunState::Running {
                self.organizer.scheduler.store().sync().await?;
                return Ok(event.run);
            }
        }
        Err(LocalError::EventsEnded(run_id))
    }

    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        // The hosts too: each halts its robot before its task ends, and a
        // runtime dropped meanwhile would cancel that halt half-way.
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            let _ = self.server.await;
            for host in self.hosts {
                let _ = host.await;
            }
        })
        .await;
        // Checkpointed and closed: a normal end leaves the database file
        // alone, without -wal and -shm beside it.
        if let Err(e) = self.organizer.scheduler.store().close().await {
            tracing::warn!("closing the database: {e}");
        }
    }
}

async fn bind_loopback() -> Result<tokio::net::TcpListener, LocalError> {
    tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(LocalError::Listen)
}
