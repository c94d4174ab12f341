//! What the organizer's integration tests share: a fresh directory for a
//! database, and a host agent served on loopback.

use std::future::Future;
use std::sync::Arc;

use yamor_host_agent::{Backend, HostService};
use yamor_proto::transport::ServerSecurity;

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

pub mod fake;
