//! What the organizer's integration tests share: a fresh directory for a
//! database, an organizer on it, expression hosts and the organizer served
//! on loopback.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use yamor_host_agent::expr::ExprBackend;
use yamor_host_agent::{Backend, HostService};
use yamor_organizer::{Organizer, OrganizerClient, SchedulerConfig};
use yamor_proto::transport::{ClientSecurity, ServerSecurity};

/// An empty directory of this test process named `name`.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("yamor-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Serves `service` on 127.0.0.1:0 until `shutdown`; returns its URL and
/// the serving task.
pub async fn serve_until(
    service: Arc<HostService>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        yamor_host_agent::serve(listener, service, ServerSecurity::default(), shutdown)
            .await
            .unwrap();
    });
    (address, task)
}

/// Serves a host named `name` over `backend` until the test's runtime
/// ends; returns its URL.
#[allow(dead_code)] // not every test binary serves hosts this way
pub async fn serve_host(name: &str, backend: Arc<dyn Backend>) -> String {
    let service = Arc::new(HostService::new(name, backend));
    serve_until(service, std::future::pending()).await.0
}

/// An organizer on a fresh database in [`temp_dir`]`(name)`, with the
/// default scheduler settings and the PSO plugin.
#[allow(dead_code)] // not every test binary opens one this way
pub fn open_organizer(name: &str) -> Organizer {
    Organizer::open(
        &temp_dir(name).join("yamor.db"),
        SchedulerConfig::default(),
        ClientSecurity::default(),
        vec![Arc::new(yamor_pso::Pso)],
    )
    .unwrap()
}

/// Serves `count` expression hosts `h0`, `h1`, … of `expr` (each
/// evaluation taking `delay`) and registers them with `organizer`.
#[allow(dead_code)]
pub async fn add_expression_hosts(
    organizer: &Organizer,
    count: usize,
    expr: &str,
    delay: Duration,
) {
    for i in 0..count {
        let name = format!("h{i}");
        let address = serve_host(&name, Arc::new(ExprBackend::new(expr, delay).unwrap())).await;
        organizer
            .scheduler
            .register_host(&name, &address)
            .await
            .unwrap();
    }
}

/// Serves `organizer` over gRPC on 127.0.0.1:0 until the test's runtime
/// ends; returns a client of it and its URL.
#[allow(dead_code)]
pub async fn serve_organizer(organizer: &Organizer) -> (OrganizerClient, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(yamor_organizer::serve(
        listener,
        organizer.clone(),
        ServerSecurity::default(),
        std::future::pending(),
    ));
    let client = OrganizerClient::new(&url, &ClientSecurity::default()).unwrap();
    (client, url)
}

/// `x` and `y` in `[−1, 1]`, starting at 0.5: the space of the
/// `-(x*x + y*y)` runs.
#[allow(dead_code)]
pub fn sphere_space() -> yamor_organizer::model::Problem {
    let bound = |name: &str| yamor_organizer::model::ParameterBound {
        name: name.into(),
        min: -1.0,
        max: 1.0,
        start: 0.5,
    };
    yamor_organizer::model::Problem::Space(vec![bound("x"), bound("y")])
}

pub mod fake;
