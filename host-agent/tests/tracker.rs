//! The CamApp client against the emulated CamApp and against a server that
//! writes garbage, on 127.0.0.1:0.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yamor_core::camera::CameraModel;
use yamor_firmware_sim::camapp::{CamApp, CamAppSettings};
use yamor_host_agent::tracker::Tracker;

const LED: f64 = 0.05;

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

#[test]
fn the_client_sees_the_led_where_it_is() {
    let led = Arc::new(Mutex::new(Some([0.8, -0.5, LED])));
    let server = camapp(led.clone(), 0.5);
    let tracker = Tracker::connect(&server.address().to_string(), CameraModel::default(), LED);
    let fix = tracker
        .wait_fresh(Instant::now(), Duration::from_secs(5))
        .unwrap();
    // One pixel is about 4.6 mm at 2.65 m; rounding plus noise stays within 2 cm.
    assert!(
        (fix.x - 0.8).abs() < 0.02 && (fix.y + 0.5).abs() < 0.02,
        "{fix:?}"
    );
    // The LED moves: a later fix follows it.
    *led.lock().unwrap() = Some([-1.0, 0.6, LED]);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let fix = tracker
            .wait_fresh(Instant::now(), Duration::from_secs(5))
            .unwrap();
        if (fix.x + 1.0).abs() < 0.02 && (fix.y - 0.6).abs() < 0.02 {
            break;
        }
        assert!(Instant::now() < deadline, "never followed the LED: {fix:?}");
    }
    assert_eq!(tracker.garbage(), 0);
}

#[test]
fn a_dark_or_unseen_led_gives_no_fix_and_a_clear_error() {
    let led = Arc::new(Mutex::new(None));
    let server = camapp(led.clone(), 0.0);
    let address = server.address().to_string();
    let tracker = Tracker::connect(&address, CameraModel::default(), LED);
    let error = tracker
        .wait_fresh(Instant::now(), Duration::from_millis(300))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("no LED position from CamApp at {address} for 0.3 s")
    );
    // Outside the camera's view (3 m to the side) is as good as dark.
    *led.lock().unwrap() = Some([3.0, 0.0, LED]);
    assert!(
        tracker
            .wait_fresh(Instant::now(), Duration::from_millis(300))
            .is_err()
    );
    assert!(tracker.latest().is_none());
}

#[test]
fn garbage_on_the_socket_is_skipped_and_only_valid_lines_count() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // Random bytes, an overlong line, out-of-range values, a line split
        // over two writes, then one good line last.
        let mut junk = vec![0u8; 300];
        let mut x = 12345u32;
        for b in &mut junk {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *b = (x >> 16) as u8;
            if *b == b'\n' {
                *b = b'#';
            }
        }
        s.write_all(&junk).unwrap();
        s.write_all(b"\n").unwrap();
        s.write_all(&[b'7'; 100]).unwrap();
        s.write_all(b"\n640 100\n100 480\n-3 4\n1 2 3\n").unwrap();
        s.write_all(b"32").unwrap();
        s.flush().unwrap();
        s.write_all(b"0 24").unwrap();
        s.write_all(b"0\n").unwrap();
        let _ = done_rx.recv_timeout(Duration::from_secs(10));
    });
    let tracker = Tracker::connect(&address, CameraModel::default(), LED);
    let fix = tracker
        .wait_fresh(
            Instant::now() - Duration::from_secs(1),
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!(fix.pixel, [320, 240]);
    // The centre pixel is the floor right under the camera.
    assert!(fix.x.abs() < 1e-9 && fix.y.abs() < 1e-9, "{fix:?}");
    assert_eq!(
        tracker.garbage(),
        6,
        "junk, overlong, 640, 480, -3, three numbers"
    );
    done_tx.send(()).unwrap();
    server.join().unwrap();
}

#[test]
fn the_client_reconnects_after_the_server_closes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let tracker = Tracker::connect(&address, CameraModel::default(), LED);
    let (mut first, _) = listener.accept().unwrap();
    first.write_all(b"100 100\n").unwrap();
    let a = tracker
        .wait_fresh(
            Instant::now() - Duration::from_secs(1),
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!(a.pixel, [100, 100]);
    drop(first);
    let (mut second, _) = listener.accept().unwrap();
    second.write_all(b"200 300\n").unwrap();
    let b = tracker.wait_fresh(a.at, Duration::from_secs(5)).unwrap();
    assert_eq!(b.pixel, [200, 300]);
    assert_eq!(tracker.connections(), 2);
}
