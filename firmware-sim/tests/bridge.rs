//! The bridge as a client sees it: a real server on 127.0.0.1:0.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use yamor_core::Connector;
use yamor_sim::SimSettings;
use yamor_sim::bridge::{error_code, serve};
use yamor_sim::robots::ExampleRobot;
use yamor_snp::{
    BridgeFrame, BridgeMessage, Frame, FrameDecoder, HOST, SnpFrame, SnpMessage, flags,
};

struct Client {
    stream: TcpStream,
    decoder: FrameDecoder,
}

impl Client {
    async fn connect(addr: std::net::SocketAddr) -> Self {
        Self {
            stream: TcpStream::connect(addr).await.unwrap(),
            decoder: FrameDecoder::default(),
        }
    }

    async fn send(&mut self, frame: Frame) {
        self.stream
            .write_all(&frame.encode().unwrap())
            .await
            .unwrap();
    }

    /// Next frame from the bridge; a generous timeout turns a hang into a failure.
    async fn receive(&mut self) -> Frame {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Some(frame) = self.decoder.next_frame() {
                    return frame.expect("the bridge sends valid frames");
                }
                let mut buf = [0u8; 1024];
                let n = self.stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "bridge closed the connection");
                self.decoder.push(&buf[..n]);
            }
        })
        .await
        .expect("reply within 30 s")
    }

    async fn request(&mut self, seq: u8, command: BridgeMessage) -> BridgeMessage {
        self.send(Frame::Bridge(BridgeFrame { seq, command })).await;
        match self.receive().await {
            Frame::Bridge(reply) => {
                assert_eq!(reply.seq, seq);
                reply.command
            }
            other => panic!("expected a bridge reply, got {other:?}"),
        }
    }

    async fn snp(&mut self, dst: u8, message: SnpMessage) -> SnpMessage {
        self.send(Frame::Snp(SnpFrame {
            dst,
            src: HOST,
            message,
        }))
        .await;
        match self.receive().await {
            Frame::Snp(reply) => reply.message,
            other => panic!("expected an SNP reply, got {other:?}"),
        }
    }
}

async fn start() -> (
    std::net::SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let morphology = ExampleRobot::named("quadruped")
        .unwrap()
        .morphology()
        .unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve(listener, morphology, SimSettings::default(), async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (addr, stop, server)
}

#[tokio::test]
async fn timers_advance_virtual_time_and_modules_walk() {
    let (addr, stop, server) = start().await;
    let mut client = Client::connect(addr).await;
    assert_eq!(
        client.request(1, BridgeMessage::GetTime).await,
        BridgeMessage::Time { seconds: 0.0 }
    );
    let gait = ExampleRobot::named("quadruped").unwrap().gait().unwrap();
    for module in &gait.modules {
        for message in yamor_snp::configuration_messages(module) {
            let reply = client.snp(module.id as u8, message.clone()).await;
            assert_eq!(
                reply,
                SnpMessage::Ack {
                    of_kind: message.kind()
                }
            );
        }
    }
    let on = SnpMessage::Control {
        on: flags::UART | flags::CPG | flags::MOTOR,
        off: 0,
    };
    assert!(matches!(client.snp(0xFF, on).await, SnpMessage::Ack { .. }));
    let before = client.request(2, BridgeMessage::GetPosition).await;
    let expired = client
        .request(3, BridgeMessage::SetTimer { millis: 6000 })
        .await;
    let BridgeMessage::TimerExpired { seconds } = expired else {
        panic!("{expired:?}")
    };
    assert!((seconds - 6.0).abs() < 0.02, "{seconds}");
    let after = client.request(4, BridgeMessage::GetPosition).await;
    let (
        BridgeMessage::Position { x: x0, y: y0, .. },
        BridgeMessage::Position { x: x1, y: y1, .. },
    ) = (before, after)
    else {
        panic!()
    };
    assert!((x1 - x0).hypot(y1 - y0) > 0.05, "the robot walked");
    let state = client.snp(5, SnpMessage::QueryState).await;
    assert!(matches!(state, SnpMessage::State { flags: f, .. } if f & flags::MOTOR != 0));
    stop.send(()).unwrap();
    drop(client);
    server.await.unwrap();
}

#[tokio::test]
async fn garbage_gets_an_error_and_the_bridge_keeps_serving() {
    let (addr, stop, server) = start().await;
    let mut bad = Client::connect(addr).await;
    let mut good = Client::connect(addr).await;
    bad.stream
        .write_all(b"hello, this is not SNP\x00\xff\x13")
        .await
        .unwrap();
    match bad.receive().await {
        Frame::Bridge(BridgeFrame {
            command: BridgeMessage::Error { code, .. },
            ..
        }) => {
            assert_eq!(code, error_code::MALFORMED)
        }
        other => panic!("{other:?}"),
    }
    // A corrupted frame (bad checksum) is refused too, then a valid one works.
    let mut bytes = Frame::Bridge(BridgeFrame {
        seq: 9,
        command: BridgeMessage::GetTime,
    })
    .encode()
    .unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    bad.stream.write_all(&bytes).await.unwrap();
    assert!(matches!(
        bad.receive().await,
        Frame::Bridge(BridgeFrame {
            command: BridgeMessage::Error { .. },
            ..
        })
    ));
    assert!(matches!(
        bad.request(10, BridgeMessage::GetTime).await,
        BridgeMessage::Time { .. }
    ));
    // Semantic errors name the problem; nothing changes.
    let refused = bad.request(11, BridgeMessage::Disconnect { id: 99 }).await;
    assert!(
        matches!(&refused, BridgeMessage::Error { code, message } if *code == error_code::REFUSED && message.contains("99")),
        "{refused:?}"
    );
    let refused = bad
        .request(
            12,
            BridgeMessage::Connect {
                id_from: 5,
                conn_from: Connector::Top,
                id_to: 4,
                conn_to: Connector::Top,
                angle_deg: 0,
            },
        )
        .await;
    assert!(matches!(refused, BridgeMessage::Error { .. }));
    assert!(
        matches!(bad.request(13, BridgeMessage::Ok).await, BridgeMessage::Error { code, .. } if code == error_code::NOT_A_REQUEST)
    );
    assert!(matches!(
        bad.request(14, BridgeMessage::SetFriction { mu: -3.0 })
            .await,
        BridgeMessage::Error { .. }
    ));
    // The other client never noticed.
    assert_eq!(
        good.request(1, BridgeMessage::GetTime).await,
        BridgeMessage::Time { seconds: 0.0 }
    );
    drop(bad);
    assert!(matches!(
        good.request(2, BridgeMessage::GetPosition).await,
        BridgeMessage::Position { .. }
    ));
    stop.send(()).unwrap();
    drop(good);
    server.await.unwrap();
}

#[tokio::test]
async fn a_client_can_disconnect_and_reconnect_without_restart() {
    let (addr, stop, server) = start().await;
    for round in 0..3u8 {
        let mut client = Client::connect(addr).await;
        let expired = client
            .request(round, BridgeMessage::SetTimer { millis: 100 })
            .await;
        assert!(
            matches!(expired, BridgeMessage::TimerExpired { .. }),
            "round {round}"
        );
        // Time carries on across connections until a reset.
        let BridgeMessage::Time { seconds } = client.request(7, BridgeMessage::GetTime).await
        else {
            panic!()
        };
        assert!(
            (seconds - 0.1 * f64::from(round + 1)).abs() < 0.02,
            "round {round}: {seconds}"
        );
    }
    let mut client = Client::connect(addr).await;
    assert_eq!(
        client.request(1, BridgeMessage::Reset).await,
        BridgeMessage::Ok
    );
    assert_eq!(
        client.request(2, BridgeMessage::GetTime).await,
        BridgeMessage::Time { seconds: 0.0 }
    );
    for command in [
        BridgeMessage::SetMaster { id: 4 },
        BridgeMessage::SetFriction { mu: 0.3 },
        BridgeMessage::DefectMotor {
            id: 5,
            mode: yamor_snp::DefectMode::Limp,
        },
        BridgeMessage::Disconnect { id: 8 },
        BridgeMessage::Connect {
            id_from: 8,
            conn_from: Connector::Rear,
            id_to: 4,
            conn_to: Connector::Top,
            angle_deg: 0,
        },
        BridgeMessage::Drop {
            height: 0.2,
            upside_down: true,
        },
    ] {
        assert_eq!(
            client.request(3, command.clone()).await,
            BridgeMessage::Ok,
            "{command:?}"
        );
    }
    let BridgeMessage::Position { z, .. } = client.request(4, BridgeMessage::GetPosition).await
    else {
        panic!()
    };
    assert!(z > 0.2);
    stop.send(()).unwrap();
    drop(client);
    server.await.unwrap();
}
