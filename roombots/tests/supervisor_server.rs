//! The supervisor's bridge: a real server on 127.0.0.1:0, one line back
//! for every line sent, bad lines refused without losing anything.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Duration, timeout};
use yamor_roombots::chain::ConnectionType;
use yamor_roombots::supervisor_server::{MAX_LINE, serve};

struct Client {
    reader: BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
}

impl Client {
    async fn connect(address: std::net::SocketAddr) -> Self {
        let (read, writer) = TcpStream::connect(address).await.unwrap().into_split();
        Client {
            reader: BufReader::new(read),
            writer,
        }
    }

    async fn send_bytes(&mut self, bytes: &[u8]) -> String {
        self.writer.write_all(bytes).await.unwrap();
        let mut line = String::new();
        timeout(Duration::from_secs(60), self.reader.read_line(&mut line))
            .await
            .expect("an answer within a minute")
            .unwrap();
        line.trim_end().to_owned()
    }

    async fn send(&mut self, line: &str) -> String {
        self.send_bytes(format!("{line}\n").as_bytes()).await
    }
}

#[tokio::test]
async fn the_bridge_answers_every_line_and_refuses_bad_ones_without_losing_anything() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, ConnectionType::Parallel, async {
        let _ = stopped.await;
    }));
    let mut client = Client::connect(address).await;
    let start = client.send("state").await;
    assert!(
        start.starts_with("ok cubes at [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 0, 3]], locked 0:C0X"),
        "{start}"
    );
    assert_eq!(client.send("# a comment").await, "ok");
    // Bad lines: each gets one error line, and the meta-module is as it was.
    for bad in [
        "lock 0 C9Q",
        "movefw 1 2 3",
        "unlock 0 C0X",
        "reachbw 1 0 0",
        "jump",
    ] {
        let answer = client.send(bad).await;
        assert!(
            answer.starts_with("error ") && answer.ends_with("nothing changed"),
            "{bad}: {answer}"
        );
    }
    let garbage = client.send_bytes(b"\xff\xfe\x00lock\n").await;
    assert!(garbage.contains("not UTF-8"), "{garbage}");
    let long = client.send(&"x".repeat(MAX_LINE + 10)).await;
    assert!(long.contains("longer than"), "{long}");
    // A line of exactly the limit is read (a comment here), and one a
    // hundred times longer is skipped without being held whole.
    let at_limit = format!("#{}", "x".repeat(MAX_LINE - 1));
    assert_eq!(client.send(&at_limit).await, "ok");
    let huge = client.send(&"y".repeat(MAX_LINE * 100)).await;
    assert!(huge.contains("longer than"), "{huge}");
    let endless = client.send("step 3600001").await;
    assert!(endless.contains("longer than an hour"), "{endless}");
    assert!(
        client
            .send("state")
            .await
            .contains("[0, 0, 3]], locked 0:C0X")
    );

    // The inchworm, line by line, from a second client.
    let mut second = Client::connect(address).await;
    for line in include_str!("../../examples/roombots/inchworm.txt").lines() {
        let answer = second.send(line).await;
        assert!(
            answer.starts_with("ok") && !answer.contains("stuck"),
            "{line}: {answer}"
        );
    }
    // Both clients see the one meta-module.
    let end = client.send("state").await;
    assert!(
        end.contains("cubes at [[-3, -3, 0], [-2, -3, 0], [-1, -3, 0], [0, -3, 0]], locked 0:C0X"),
        "{end}"
    );
    stop.send(()).unwrap();
    timeout(Duration::from_secs(10), server)
        .await
        .expect("the server stops when told")
        .unwrap()
        .unwrap();
}
