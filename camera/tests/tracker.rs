//! The CamApp client against the emulated CamApp and against servers that
//! write garbage or hang up, all on 127.0.0.1:0. Nothing sleeps to
//! synchronise: every wait is on a condition with a timeout.

use std::io::Write;
use std::net::TcpListener;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yamor_camera::camapp::{CamApp, CamAppSettings};
use yamor_camera::model::{CameraModel, LED_HEIGHT};
use yamor_camera::tracker::{Fix, Tracker, TrackerStats};

const LONG: Duration = Duration::from_secs(5);

fn camapp(led: Arc<Mutex<Option<[f64; 3]>>>, noise_px: f64) -> CamApp {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    CamApp::serve(
        listener,
        Box::new(move || *led.lock().unwrap()),
        CamAppSettings {
            noise_px,
            rate_hz: 100.0,
            ..CamAppSettings::default()
        },
    )
    .unwrap()
}

fn tracker(address: &str) -> Tracker {
    Tracker::connect(address, CameraModel::default(), LED_HEIGHT)
}

/// A fix that is surely before anything the tracker receives.
fn long_ago() -> Instant {
    Instant::now() - Duration::from_secs(1)
}

#[test]
fn the_client_sees_the_led_where_it_is() {
    let led = Arc::new(Mutex::new(Some([0.8, -0.5, LED_HEIGHT])));
    let server = camapp(led.clone(), 0.5);
    let tracker = tracker(&server.address().to_string());
    let fix = tracker.wait_fresh(Instant::now(), LONG).unwrap();
    // One pixel is about 4.6 mm at 2.65 m; rounding plus noise stays within 2 cm.
    assert!(
        (fix.x - 0.8).abs() < 0.02 && (fix.y + 0.5).abs() < 0.02,
        "{fix:?}"
    );
    // The LED moves: a later fix follows it.
    *led.lock().unwrap() = Some([-1.0, 0.6, LED_HEIGHT]);
    let deadline = Instant::now() + LONG;
    loop {
        let fix = tracker.wait_fresh(Instant::now(), LONG).unwrap();
        if (fix.x + 1.0).abs() < 0.02 && (fix.y - 0.6).abs() < 0.02 {
            break;
        }
        assert!(Instant::now() < deadline, "never followed the LED: {fix:?}");
    }
    assert_eq!(tracker.garbage(), 0);
}

#[test]
fn averaged_fixes_are_within_millimetres_of_the_led() {
    let led = Arc::new(Mutex::new(Some([0.35, 0.9, LED_HEIGHT])));
    let server = camapp(led, 1.0);
    let tracker = tracker(&server.address().to_string());
    let mut after = Instant::now();
    let (mut sx, mut sy) = (0.0, 0.0);
    for _ in 0..100 {
        let fix = tracker.wait_fresh(after, LONG).unwrap();
        after = fix.at;
        sx += fix.x;
        sy += fix.y;
    }
    // 1 px of noise is ~5 mm per fix; the mean of 100 is within ~1 mm.
    let (x, y) = (sx / 100.0, sy / 100.0);
    assert!((x - 0.35).hypot(y - 0.9) < 0.003, "({x}, {y})");
}

#[test]
fn a_dark_or_unseen_led_gives_no_fix_and_a_clear_error() {
    let led = Arc::new(Mutex::new(None));
    let server = camapp(led.clone(), 0.0);
    let address = server.address().to_string();
    let tracker = tracker(&address);
    let error = tracker
        .wait_fresh(Instant::now(), Duration::from_millis(300))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("no LED position from CamApp at {address} for 0.3 s")
    );
    // Outside the camera's view (3 m to the side) is as good as dark.
    *led.lock().unwrap() = Some([3.0, 0.0, LED_HEIGHT]);
    assert!(
        tracker
            .wait_fresh(Instant::now(), Duration::from_millis(300))
            .is_err()
    );
    assert!(tracker.latest().is_none());
    // Back in view: fixes again.
    *led.lock().unwrap() = Some([0.0, 0.0, LED_HEIGHT]);
    let fix = tracker.wait_fresh(Instant::now(), LONG).unwrap();
    assert!(fix.x.hypot(fix.y) < 0.01, "{fix:?}");
}

#[tokio::test]
async fn async_code_waits_without_blocking() {
    let led = Arc::new(Mutex::new(None));
    let server = camapp(led.clone(), 0.0);
    let address = server.address().to_string();
    let tracker = tracker(&address);
    let error = tracker
        .wait_fresh_async(Instant::now(), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("no LED position from CamApp at {address} for 0.2 s")
    );
    *led.lock().unwrap() = Some([-0.5, 0.25, LED_HEIGHT]);
    let fix = tracker
        .wait_fresh_async(Instant::now(), LONG)
        .await
        .unwrap();
    assert!((fix.x + 0.5).hypot(fix.y - 0.25) < 0.01, "{fix:?}");
    let mut fixes = tracker.subscribe();
    fixes.changed().await.unwrap();
    assert!(fixes.borrow().unwrap().at > fix.at);
}

/// What one step of the garbage server writes, piece by piece (each piece
/// its own write and flush, to split lines across reads), and the pixel
/// its one valid line says.
type Step = (Vec<Vec<u8>>, [u16; 2], u64);

fn garbage_steps() -> Vec<Step> {
    // Random bytes without a line feed: one garbage line with the "\n".
    let mut junk = vec![0u8; 300];
    let mut x = 12345u32;
    for b in &mut junk {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *b = (x >> 16) as u8;
        if *b == b'\n' {
            *b = b'#';
        }
    }
    junk.push(b'\n');
    vec![
        (vec![junk, b"320 240\n".to_vec()], [320, 240], 1),
        (
            vec![
                // Overlong (digits only, so only the length betrays it),
                // out of range, negative, three numbers.
                [vec![b'7'; 100], b"\n".to_vec()].concat(),
                b"640 100\n100 480\n-3 4\n1 2 3\n12 34\n".to_vec(),
            ],
            [12, 34],
            5,
        ),
        // One valid line split over three writes.
        (
            vec![b"45".to_vec(), b"6 12".to_vec(), b"3\n".to_vec()],
            [456, 123],
            0,
        ),
        (
            vec![b"\xff\xfe 1 2\n1.5 2\n\r\n639 479\r\n".to_vec()],
            [639, 479],
            3,
        ),
    ]
}

#[test]
fn garbage_on_the_socket_is_skipped_and_only_valid_lines_count() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let steps = garbage_steps();
    let (go_tx, go_rx) = mpsc::channel::<Option<usize>>();
    let server = {
        let steps = steps.clone();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            // Each step is sent only after the client has shown the last
            // one's fix, so every fix can be checked, not just the latest.
            while let Ok(Some(i)) = go_rx.recv() {
                for piece in &steps[i].0 {
                    s.write_all(piece).unwrap();
                    s.flush().unwrap();
                }
            }
            // A line cut short by the connection closing.
            s.write_all(b"12 3").unwrap();
            drop(s);
            let (mut again, _) = listener.accept().unwrap();
            again.write_all(b"100 200\n").unwrap();
            // Hold the connection until the client has read it.
            let _ = go_rx.recv();
        })
    };
    let tracker = tracker(&address);
    let mut after = long_ago();
    let mut garbage = 0;
    let mut seen: Vec<Fix> = Vec::new();
    for (i, (_, pixel, junk_lines)) in steps.iter().enumerate() {
        go_tx.send(Some(i)).unwrap();
        let fix = tracker.wait_fresh(after, LONG).unwrap();
        assert_eq!(fix.pixel, *pixel, "step {i}");
        garbage += junk_lines;
        assert_eq!(tracker.garbage(), garbage, "step {i}");
        after = fix.at;
        seen.push(fix);
    }
    // The centre pixel is the floor right under the camera.
    assert!(
        seen[0].x.abs() < 1e-9 && seen[0].y.abs() < 1e-9,
        "{:?}",
        seen[0]
    );
    go_tx.send(None).unwrap();
    // "12 3" + the next connection's "100 200" must not become "12 3100 200".
    let fix = tracker.wait_fresh(after, LONG).unwrap();
    assert_eq!(fix.pixel, [100, 200]);
    assert_eq!(
        tracker.stats(),
        TrackerStats {
            fixes: 5,
            garbage: garbage + 1,
            connections: 2
        }
    );
    go_tx.send(None).unwrap();
    server.join().unwrap();
}

#[test]
fn a_peer_that_never_ends_its_line_cannot_grow_the_buffer() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let tracker = tracker(&address);
    let (mut s, _) = listener.accept().unwrap();
    // A megabyte of digits, then a line feed and one good line.
    let digits = vec![b'1'; 1 << 20];
    s.write_all(&digits).unwrap();
    s.write_all(b"\n5 6\n").unwrap();
    let fix = tracker.wait_fresh(long_ago(), LONG).unwrap();
    assert_eq!(fix.pixel, [5, 6]);
    assert_eq!(tracker.garbage(), 1);
}

#[test]
fn the_client_reconnects_after_the_server_closes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let tracker = tracker(&address);
    let (mut first, _) = listener.accept().unwrap();
    first.write_all(b"100 100\n").unwrap();
    let a = tracker.wait_fresh(long_ago(), LONG).unwrap();
    assert_eq!(a.pixel, [100, 100]);
    drop(first);
    let (mut second, _) = listener.accept().unwrap();
    second.write_all(b"200 300\n").unwrap();
    let b = tracker.wait_fresh(a.at, LONG).unwrap();
    assert_eq!(b.pixel, [200, 300]);
    assert_eq!(tracker.connections(), 2);
}

#[test]
fn the_client_reconnects_to_a_restarted_camapp() {
    let led = Arc::new(Mutex::new(Some([0.2, 0.1, LED_HEIGHT])));
    let server = camapp(led.clone(), 0.0);
    let address = server.address();
    let tracker = tracker(&address.to_string());
    let first = tracker.wait_fresh(Instant::now(), LONG).unwrap();
    server.shutdown();
    // The same port again; the client has been retrying meanwhile.
    let restarted = CamApp::serve(
        TcpListener::bind(address).unwrap(),
        Box::new(move || *led.lock().unwrap()),
        CamAppSettings {
            noise_px: 0.0,
            ..CamAppSettings::default()
        },
    )
    .unwrap();
    let second = tracker.wait_fresh(first.at, LONG).unwrap();
    assert_eq!(second.pixel, first.pixel);
    assert_eq!(tracker.connections(), 2);
    drop(restarted);
}

#[test]
fn nothing_listening_is_a_timeout_not_a_hang() {
    // A port that was just free: nothing accepts there.
    let address = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let tracker = tracker(&address);
    let error = tracker
        .wait_fresh(Instant::now(), Duration::from_millis(300))
        .unwrap_err();
    assert!(error.to_string().contains(&address), "{error}");
    assert_eq!(tracker.connections(), 0);
}

/// A robot with a second LED along its long axis: the tracker reports the
/// direction from the first LED to the second as its heading, and none
/// while the second is out of sight.
#[test]
fn a_second_led_gives_the_heading() {
    use yamor_camera::camapp::Leds;
    let second = Arc::new(Mutex::new(Some([0.5 - 0.07, 0.2 + 0.07, LED_HEIGHT])));
    let shown = second.clone();
    let server = CamApp::serve_leds(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Leds {
            position: Box::new(|| Some([0.5, 0.2, LED_HEIGHT])),
            heading: Some(Box::new(move || *shown.lock().unwrap())),
        },
        CamAppSettings {
            rate_hz: 100.0,
            ..CamAppSettings::default()
        },
    )
    .unwrap();
    let tracker = tracker(&server.address().to_string());
    let fix = tracker.wait_fresh(Instant::now(), LONG).unwrap();
    let heading = fix.heading.expect("two LEDs seen").to_degrees();
    // 10 cm apart, half a pixel of noise (about 2 mm) on each: a few degrees.
    assert!((heading - 135.0).abs() < 5.0, "{heading}° for 135°");
    assert!(
        (fix.x - 0.5).abs() < 0.02 && (fix.y - 0.2).abs() < 0.02,
        "{fix:?}"
    );
    *second.lock().unwrap() = None;
    let deadline = Instant::now() + LONG;
    while tracker
        .wait_fresh(Instant::now(), LONG)
        .unwrap()
        .heading
        .is_some()
    {
        assert!(Instant::now() < deadline, "the heading outlived its LED");
    }
}
