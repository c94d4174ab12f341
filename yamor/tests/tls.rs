//! TLS end to end: an organizer serving rustls with a self-signed
//! certificate, a client that trusts it, and clients that must fail.

use std::time::Duration;

use yamor_organizer::{Organizer, SchedulerConfig};
use yamor_proto::transport::{ClientSecurity, ServerSecurity, TlsServerFiles, channel};
use yamor_proto::v1 as pb;
use yamor_proto::v1::organizer_client::OrganizerClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_server_talks_to_a_client_that_trusts_its_certificate_only() {
    let dir = std::env::temp_dir().join(format!("yamor-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();

    let organizer = Organizer::open(
        &dir.join("yamor.db"),
        SchedulerConfig::default(),
        ClientSecurity::default(),
        vec![],
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let security = ServerSecurity {
        token: None,
        tls: Some(TlsServerFiles {
            cert: cert.clone(),
            key,
        }),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(yamor_organizer::serve(
        listener,
        organizer,
        security,
        async {
            let _ = stopped.await;
        },
    ));

    let trusted = ClientSecurity {
        tls_ca: Some(cert),
        ..Default::default()
    };
    let mut client =
        OrganizerClient::new(channel(&format!("https://localhost:{port}"), &trusted).unwrap());
    let runs = client.list_runs(pb::ListRunsRequest {}).await.unwrap();
    assert!(runs.into_inner().runs.is_empty());

    // Plain text against a TLS port fails.
    let mut plain = OrganizerClient::new(
        channel(
            &format!("http://127.0.0.1:{port}"),
            &ClientSecurity::default(),
        )
        .unwrap(),
    );
    assert!(plain.list_runs(pb::ListRunsRequest {}).await.is_err());
    // A client that does not trust the self-signed certificate fails.
    let mut untrusting = OrganizerClient::new(
        channel(
            &format!("https://localhost:{port}"),
            &ClientSecurity::default(),
        )
        .unwrap(),
    );
    assert!(untrusting.list_runs(pb::ListRunsRequest {}).await.is_err());

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("server shuts down")
        .unwrap()
        .unwrap();
}
