//! The SNP wire format: round trips, pinned bytes and a decoder that survives
//! anything.

use proptest::prelude::*;
use yamor_core::Connector;
use yamor_snp::{
    BROADCAST, BridgeFrame, BridgeMessage, Channel, DecodeError, DefectMode, EncodeError, Frame,
    FrameDecoder, HOST, MAX_ERROR_MESSAGE, SnpFrame, SnpMessage, WireLink, decode_frame, flags,
};

fn is_sync(b: u8) -> bool {
    b == 0xA5 || b == 0xB7
}

fn roundtrip(frame: Frame) {
    let bytes = frame.encode().expect("encodes");
    assert_eq!(bytes.len(), usize::from(bytes[1]) + 4);
    let (decoded, used) = decode_frame(&bytes).expect("decodes");
    assert_eq!(used, bytes.len());
    assert_eq!(decoded, frame);
    // Same through the streaming decoder, one byte at a time.
    let mut decoder = FrameDecoder::new();
    let mut out = Vec::new();
    for b in &bytes {
        decoder.push(std::slice::from_ref(b));
        while let Some(f) = decoder.next_frame() {
            out.push(f);
        }
    }
    assert_eq!(out, vec![Ok(frame)]);
    assert_eq!(decoder.buffered(), 0);
}

fn snp(dst: u8, src: u8, message: SnpMessage) -> Frame {
    Frame::Snp(SnpFrame { dst, src, message })
}

fn bridge(seq: u8, command: BridgeMessage) -> Frame {
    Frame::Bridge(BridgeFrame { seq, command })
}

/// Drains everything the decoder can give now.
fn drain(
    decoder: &mut FrameDecoder,
    out: &mut Vec<Result<Frame, DecodeError>>,
    budget: &mut usize,
) {
    while let Some(item) = decoder.next_frame() {
        out.push(item);
        assert!(*budget > 0, "FrameDecoder returned more items than bytes");
        *budget -= 1;
    }
}

fn decode_stream(chunks: &[&[u8]]) -> Vec<Result<Frame, DecodeError>> {
    let mut decoder = FrameDecoder::new();
    let mut out = Vec::new();
    let mut budget = chunks.iter().map(|c| c.len()).sum::<usize>();
    for chunk in chunks {
        decoder.push(chunk);
        drain(&mut decoder, &mut out, &mut budget);
    }
    out
}

// ---------------------------------------------------------------------------
// Hand examples
// ---------------------------------------------------------------------------

#[test]
fn every_snp_variant_round_trips() {
    let messages = [
        SnpMessage::BluetoothConnect { to: 7 },
        SnpMessage::LimitAngles {
            min: -1.5,
            max: 1.25,
        },
        SnpMessage::Control {
            on: flags::UART | flags::CPG,
            off: flags::MOTOR,
        },
        SnpMessage::Control { on: 0, off: 0 },
        SnpMessage::CpgStructure { links: vec![] },
        SnpMessage::CpgStructure {
            links: vec![
                WireLink {
                    to: 1,
                    phase: 1.5707964,
                    weight: 0.5,
                },
                WireLink {
                    to: 2,
                    phase: -3.0,
                    weight: 1.0,
                },
            ],
        },
        SnpMessage::CpgParams {
            amplitude: 0.5,
            offset: -0.1,
            speed: 6.2831855,
        },
        SnpMessage::QueryState,
        SnpMessage::Ack { of_kind: 0x05 },
        SnpMessage::Nack {
            of_kind: 0x04,
            code: 3,
        },
        SnpMessage::State {
            flags: flags::UART | flags::CPG | flags::MOTOR,
            angle: 0.25,
            setpoint: 0.3,
            phase: 2.0,
        },
    ];
    for (i, message) in messages.into_iter().enumerate() {
        let reply = !message.is_request();
        let (dst, src) = if reply {
            (HOST, i as u8)
        } else {
            (i as u8, HOST)
        };
        roundtrip(snp(dst, src, message.clone()));
        roundtrip(snp(BROADCAST, HOST, message));
    }
}

#[test]
fn every_bridge_variant_round_trips() {
    let messages = [
        BridgeMessage::GetPosition,
        BridgeMessage::SetTimer {
            millis: 0xDEAD_BEEF,
        },
        BridgeMessage::GetTime,
        BridgeMessage::SetMaster { id: 4 },
        BridgeMessage::Connect {
            id_from: 0,
            conn_from: Connector::Rear,
            id_to: 4,
            conn_to: Connector::Left,
            angle_deg: -90,
        },
        BridgeMessage::Disconnect { id: 3 },
        BridgeMessage::Reset,
        BridgeMessage::SetFriction { mu: 0.8 },
        BridgeMessage::Drop {
            height: 0.3,
            upside_down: true,
        },
        BridgeMessage::Drop {
            height: 0.0,
            upside_down: false,
        },
        BridgeMessage::DefectMotor {
            id: 2,
            mode: DefectMode::Healthy,
        },
        BridgeMessage::DefectMotor {
            id: 2,
            mode: DefectMode::Limp,
        },
        BridgeMessage::DefectMotor {
            id: 2,
            mode: DefectMode::Stuck,
        },
        BridgeMessage::SetPacing { real_time: true },
        BridgeMessage::SetPacing { real_time: false },
        BridgeMessage::Ok,
        BridgeMessage::Position {
            x: 1.0,
            y: 0.05,
            z: -2.5,
        },
        BridgeMessage::Time { seconds: 12.345 },
        BridgeMessage::TimerExpired { seconds: 1e9 },
        BridgeMessage::Error {
            code: 1,
            message: String::new(),
        },
        BridgeMessage::Error {
            code: 9,
            message: "module 7 not found — désolé".to_owned(),
        },
    ];
    for (seq, command) in messages.into_iter().enumerate() {
        roundtrip(bridge(seq as u8, command));
    }
    for conn in Connector::ALL {
        roundtrip(bridge(
            255,
            BridgeMessage::Connect {
                id_from: 1,
                conn_from: conn,
                id_to: 2,
                conn_to: conn,
                angle_deg: i16::MIN,
            },
        ));
    }
}

#[test]
fn error_message_is_truncated_at_a_char_boundary() {
    let long = format!("x{}", "é".repeat(150)); // 301 bytes
    let bytes = BridgeFrame::new(
        1,
        BridgeMessage::Error {
            code: 2,
            message: long.clone(),
        },
    )
    .encode()
    .unwrap();
    let (frame, _) = decode_frame(&bytes).unwrap();
    let Frame::Bridge(BridgeFrame {
        command: BridgeMessage::Error { message, .. },
        ..
    }) = frame
    else {
        panic!("not an error: {frame:?}");
    };
    assert_eq!(message.len(), MAX_ERROR_MESSAGE - 1);
    assert!(long.starts_with(&message));
}

#[test]
fn encode_errors() {
    let link = WireLink {
        to: 1,
        phase: 0.0,
        weight: 1.0,
    };
    let ok = SnpFrame::new(
        1,
        HOST,
        SnpMessage::CpgStructure {
            links: vec![link; 27],
        },
    );
    assert_eq!(ok.encode().unwrap().len(), 1 + 9 * 27 + 7);
    let too_many = SnpFrame::new(
        1,
        HOST,
        SnpMessage::CpgStructure {
            links: vec![link; 28],
        },
    );
    assert!(matches!(
        too_many.encode(),
        Err(EncodeError::BodyTooLong { kind: 0x04, .. })
    ));
    let way_too_many = SnpFrame::new(
        1,
        HOST,
        SnpMessage::CpgStructure {
            links: vec![link; 300],
        },
    );
    assert!(matches!(
        way_too_many.encode(),
        Err(EncodeError::BodyTooLong { .. })
    ));
    let nan = SnpFrame::new(
        1,
        HOST,
        SnpMessage::CpgParams {
            amplitude: 0.1,
            offset: f32::NAN,
            speed: 1.0,
        },
    );
    assert_eq!(
        nan.encode(),
        Err(EncodeError::NonFinite { field: "offset" })
    );
    let inf = BridgeFrame::new(
        1,
        BridgeMessage::Time {
            seconds: f64::INFINITY,
        },
    );
    assert_eq!(
        inf.encode(),
        Err(EncodeError::NonFinite { field: "seconds" })
    );
    let link_nan = SnpFrame::new(
        1,
        HOST,
        SnpMessage::CpgStructure {
            links: vec![WireLink {
                to: 1,
                phase: 0.0,
                weight: f32::NEG_INFINITY,
            }],
        },
    );
    assert_eq!(
        link_nan.encode(),
        Err(EncodeError::NonFinite {
            field: "links.weight"
        })
    );
    let overlap = SnpFrame::new(
        1,
        HOST,
        SnpMessage::Control {
            on: flags::MOTOR,
            off: flags::MOTOR | flags::CPG,
        },
    );
    assert!(matches!(
        overlap.encode(),
        Err(EncodeError::Invalid { kind: 0x03, .. })
    ));
}

// ---------------------------------------------------------------------------
// Pinned bytes (the same dumps are in docs/snp.md)
// ---------------------------------------------------------------------------

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const CPG_PARAMS_HEX: &str = "A5 0F 05 03 FE 00 00 00 3F 00 00 00 00 00 00 80 3F 12 4B";
const CONNECT_HEX: &str = "B7 09 14 07 00 00 01 04 03 5A 00 BA 14";
const STATE_HEX: &str = "A5 10 82 FE 03 07 00 00 80 3E 00 00 80 3E 00 00 00 40 16 B6";

#[test]
fn pinned_cpg_params() {
    let frame = snp(
        3,
        HOST,
        SnpMessage::CpgParams {
            amplitude: 0.5,
            offset: 0.0,
            speed: 1.0,
        },
    );
    assert_eq!(frame.encode().unwrap(), hex(CPG_PARAMS_HEX));
    assert_eq!(decode_frame(&hex(CPG_PARAMS_HEX)), Ok((frame, 19)));
}

#[test]
fn pinned_connect() {
    let frame = bridge(
        7,
        BridgeMessage::Connect {
            id_from: 0,
            conn_from: Connector::Rear,
            id_to: 4,
            conn_to: Connector::Right,
            angle_deg: 90,
        },
    );
    assert_eq!(frame.encode().unwrap(), hex(CONNECT_HEX));
    assert_eq!(decode_frame(&hex(CONNECT_HEX)), Ok((frame, 13)));
}

#[test]
fn pinned_state() {
    let frame = snp(
        HOST,
        3,
        SnpMessage::State {
            flags: flags::UART | flags::CPG | flags::MOTOR,
            angle: 0.25,
            setpoint: 0.25,
            phase: 2.0,
        },
    );
    assert_eq!(frame.encode().unwrap(), hex(STATE_HEX));
    assert_eq!(decode_frame(&hex(STATE_HEX)), Ok((frame, 20)));
}

#[test]
fn pinned_short_frames() {
    let cases = [
        (
            "A5 04 80 FE 03 05 97 B8",
            snp(HOST, 3, SnpMessage::Ack { of_kind: 0x05 }),
        ),
        ("B7 03 90 07 00 B2 FE", bridge(7, BridgeMessage::Ok)),
        (
            "A5 05 03 FF FE 03 00 60 45",
            snp(
                BROADCAST,
                HOST,
                SnpMessage::Control {
                    on: flags::UART | flags::CPG,
                    off: 0,
                },
            ),
        ),
    ];
    for (dump, frame) in cases {
        assert_eq!(frame.encode().unwrap(), hex(dump), "{frame:?}");
        assert_eq!(decode_frame(&hex(dump)), Ok((frame, hex(dump).len())));
    }
}

// ---------------------------------------------------------------------------
// Hand-made bad frames
// ---------------------------------------------------------------------------

/// A frame with a correct checksum around arbitrary kind/dst/src/body.
fn raw(sync: u8, kind: u8, dst: u8, src: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![sync, (body.len() + 3) as u8, kind, dst, src];
    out.extend_from_slice(body);
    let crc = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740).checksum(&out[1..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn decode_errors() {
    assert_eq!(
        decode_frame(&[]),
        Err(DecodeError::Incomplete { needed: 7 })
    );
    assert_eq!(
        decode_frame(&[0xA5]),
        Err(DecodeError::Incomplete { needed: 6 })
    );
    assert_eq!(decode_frame(&[0x00, 0xA5]), Err(DecodeError::BadSync(0)));
    assert_eq!(
        DecodeError::BadSync(0).skip(&[0, 1, 2, 0xB7, 4]),
        3,
        "BadSync skips the run"
    );
    assert_eq!(DecodeError::BadSync(0).skip(&[0, 1, 2]), 3);
    assert_eq!(decode_frame(&[0xA5, 2]), Err(DecodeError::BadLength(2)));
    assert_eq!(
        decode_frame(&[0xA5, 10, 1]),
        Err(DecodeError::Incomplete { needed: 11 })
    );

    let mut bad = raw(0xA5, 0x06, 1, HOST, &[]);
    let n = bad.len();
    bad[n - 1] ^= 0x01;
    let err = decode_frame(&bad).unwrap_err();
    assert!(matches!(err, DecodeError::BadChecksum { .. }), "{err:?}");
    assert_eq!(err.skip(&bad), 1);

    let unknown = raw(0xA5, 0x42, 1, HOST, &[1, 2]);
    let err = decode_frame(&unknown).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnknownKind {
            channel: Channel::Snp,
            kind: 0x42
        }
    );
    assert_eq!(err.skip(&unknown), unknown.len());
    // An SNP kind on the bridge channel is unknown there.
    assert!(matches!(
        decode_frame(&raw(0xB7, 0x01, 0, 0, &[1])),
        Err(DecodeError::UnknownKind {
            channel: Channel::Bridge,
            kind: 0x01
        })
    ));

    let bad_body = |sync, kind, src, body: &[u8]| {
        let bytes = raw(sync, kind, 1, src, body);
        let err = decode_frame(&bytes).unwrap_err();
        assert!(
            matches!(err, DecodeError::BadBody { kind: k, .. } if k == kind),
            "kind {kind:#x} body {body:?}: {err:?}"
        );
        assert_eq!(err.skip(&bytes), bytes.len());
    };
    bad_body(0xA5, 0x01, HOST, &[]); // too short
    bad_body(0xA5, 0x01, HOST, &[1, 2]); // too long
    bad_body(0xA5, 0x06, HOST, &[0]); // QueryState has no body
    bad_body(0xA5, 0x03, HOST, &[flags::CPG, flags::CPG]); // on & off overlap
    bad_body(0xA5, 0x02, HOST, &[0, 0, 0xC0, 0x7F, 0, 0, 0, 0]); // NaN
    bad_body(0xA5, 0x04, HOST, &[2, 1, 0, 0, 0, 0, 0, 0, 0, 0]); // count says 2, one link
    bad_body(0xB7, 0x14, 0, &[0, 6, 1, 0, 0, 0]); // connector code 6
    bad_body(0xB7, 0x19, 0, &[1, 4]); // defect mode 4 (3 is weak)
    bad_body(0xB7, 0x18, 0, &[0, 0, 0, 0, 2]); // bool 2
    bad_body(0xB7, 0x1A, 0, &[7]); // bool 7
    bad_body(0xB7, 0x9F, 0, &[1, 0xFF, 0xFE]); // invalid UTF-8
    bad_body(0xB7, 0x92, 0, &[0, 0, 0, 0, 0, 0, 0xF0, 0x7F]); // +inf f64
    bad_body(0xB7, 0x90, 5, &[]); // bridge src must be 0
}

#[test]
fn decoder_reports_one_bad_sync_per_garbage_run_and_recovers() {
    let a = SnpFrame::new(1, HOST, SnpMessage::QueryState)
        .encode()
        .unwrap();
    let b = BridgeFrame::new(9, BridgeMessage::GetTime)
        .encode()
        .unwrap();
    let mut corrupt = a.clone();
    corrupt[3] ^= 0x10;
    let stream: Vec<u8> = [&[1u8, 2, 3][..], &a, &[4, 5], &corrupt, &b, &[6]].concat();
    let out = decode_stream(&[&stream]);
    assert_eq!(out.len(), 6, "{out:?}");
    assert_eq!(out[0], Err(DecodeError::BadSync(1)));
    assert_eq!(
        out[1].as_ref().unwrap(),
        &Frame::Snp(SnpFrame::new(1, HOST, SnpMessage::QueryState))
    );
    assert_eq!(out[2], Err(DecodeError::BadSync(4)));
    assert!(matches!(out[3], Err(DecodeError::BadChecksum { .. })));
    // The rest of the corrupt frame is skipped silently.
    assert_eq!(
        out[4].as_ref().unwrap(),
        &Frame::Bridge(BridgeFrame::new(9, BridgeMessage::GetTime))
    );
    assert_eq!(out[5], Err(DecodeError::BadSync(6)));
    // Byte by byte gives the same.
    let chunks: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode_stream(&chunks), out);
}

#[test]
fn decoder_buffer_is_bounded() {
    let mut decoder = FrameDecoder::new();
    // A false sync claiming a long frame, then a flood pushed without reading.
    decoder.push(&[0xA5, 0xFF]);
    for _ in 0..40 {
        decoder.push(&[0u8; 4096]);
    }
    assert!(decoder.buffered() <= FrameDecoder::CAPACITY);
    assert_eq!(
        decoder.discarded(),
        (40 * 4096 + 2 - FrameDecoder::CAPACITY) as u64
    );
    decoder.push(&vec![0x11; 100_000]);
    assert_eq!(decoder.buffered(), FrameDecoder::CAPACITY);
    let frame = SnpFrame::new(2, HOST, SnpMessage::Ack { of_kind: 1 });
    decoder.push(&frame.encode().unwrap());
    let mut out = Vec::new();
    let mut budget = FrameDecoder::CAPACITY;
    drain(&mut decoder, &mut out, &mut budget);
    assert_eq!(
        out,
        vec![Err(DecodeError::BadSync(0x11)), Ok(Frame::Snp(frame))]
    );
    assert_eq!(decoder.buffered(), 0);
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<f32>().prop_filter("finite", |f| f.is_finite()),
        -10.0f32..10.0,
        Just(0.0f32),
    ]
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        0.0f64..1e6,
    ]
}

fn connector() -> impl Strategy<Value = Connector> {
    proptest::sample::select(Connector::ALL.to_vec())
}

fn defect_mode() -> impl Strategy<Value = DefectMode> {
    prop_oneof![
        Just(DefectMode::Healthy),
        Just(DefectMode::Limp),
        Just(DefectMode::Stuck),
        Just(DefectMode::Weak),
    ]
}

fn wire_link() -> impl Strategy<Value = WireLink> {
    (any::<u8>(), finite_f32(), finite_f32()).prop_map(|(to, phase, weight)| WireLink {
        to,
        phase,
        weight,
    })
}

fn snp_message() -> impl Strategy<Value = SnpMessage> {
    prop_oneof![
        any::<u8>().prop_map(|to| SnpMessage::BluetoothConnect { to }),
        (finite_f32(), finite_f32()).prop_map(|(min, max)| SnpMessage::LimitAngles { min, max }),
        (any::<u8>(), any::<u8>()).prop_map(|(on, off)| SnpMessage::Control { on, off: off & !on }),
        proptest::collection::vec(wire_link(), 0..=27)
            .prop_map(|links| SnpMessage::CpgStructure { links }),
        (finite_f32(), finite_f32(), finite_f32()).prop_map(|(amplitude, offset, speed)| {
            SnpMessage::CpgParams {
                amplitude,
                offset,
                speed,
            }
        }),
        Just(SnpMessage::QueryState),
        any::<u8>().prop_map(|of_kind| SnpMessage::Ack { of_kind }),
        (any::<u8>(), any::<u8>()).prop_map(|(of_kind, code)| SnpMessage::Nack { of_kind, code }),
        (any::<u8>(), finite_f32(), finite_f32(), finite_f32()).prop_map(
            |(flags, angle, setpoint, phase)| SnpMessage::State {
                flags,
                angle,
                setpoint,
                phase,
            }
        ),
    ]
}

fn bridge_message() -> impl Strategy<Value = BridgeMessage> {
    prop_oneof![
        Just(BridgeMessage::GetPosition),
        any::<u32>().prop_map(|millis| BridgeMessage::SetTimer { millis }),
        Just(BridgeMessage::GetTime),
        any::<u8>().prop_map(|id| BridgeMessage::SetMaster { id }),
        (
            any::<u8>(),
            connector(),
            any::<u8>(),
            connector(),
            any::<i16>()
        )
            .prop_map(|(id_from, conn_from, id_to, conn_to, angle_deg)| {
                BridgeMessage::Connect {
                    id_from,
                    conn_from,
                    id_to,
                    conn_to,
                    angle_deg,
                }
            }),
        any::<u8>().prop_map(|id| BridgeMessage::Disconnect { id }),
        Just(BridgeMessage::Reset),
        finite_f32().prop_map(|mu| BridgeMessage::SetFriction { mu }),
        (finite_f32(), any::<bool>()).prop_map(|(height, upside_down)| BridgeMessage::Drop {
            height,
            upside_down,
        }),
        (any::<u8>(), defect_mode()).prop_map(|(id, mode)| BridgeMessage::DefectMotor { id, mode }),
        any::<bool>().prop_map(|real_time| BridgeMessage::SetPacing { real_time }),
        Just(BridgeMessage::Ok),
        (finite_f32(), finite_f32(), finite_f32()).prop_map(|(x, y, z)| BridgeMessage::Position {
            x,
            y,
            z
        }),
        finite_f64().prop_map(|seconds| BridgeMessage::Time { seconds }),
        finite_f64().prop_map(|seconds| BridgeMessage::TimerExpired { seconds }),
        // Up to 60 chars of any width: long ones exercise truncation.
        (any::<u8>(), "\\PC{0,60}")
            .prop_map(|(code, message)| BridgeMessage::Error { code, message }),
    ]
}

fn snp_frame() -> impl Strategy<Value = SnpFrame> {
    (any::<u8>(), any::<u8>(), snp_message()).prop_map(|(dst, src, message)| SnpFrame {
        dst,
        src,
        message,
    })
}

fn bridge_frame() -> impl Strategy<Value = BridgeFrame> {
    (any::<u8>(), bridge_message()).prop_map(|(seq, command)| BridgeFrame { seq, command })
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        snp_frame().prop_map(Frame::Snp),
        bridge_frame().prop_map(Frame::Bridge),
    ]
}

/// What an encoded frame decodes back to: the frame itself, except that an
/// error message longer than the limit is truncated at a char boundary.
fn expected_after_roundtrip(frame: &Frame) -> Frame {
    let mut frame = frame.clone();
    if let Frame::Bridge(BridgeFrame {
        command: BridgeMessage::Error { message, .. },
        ..
    }) = &mut frame
    {
        let mut end = message.len().min(MAX_ERROR_MESSAGE);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    frame
}

/// Splits `bytes` into chunks whose sizes cycle through `sizes` (each >= 1).
fn chunked<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .clamp(1, rest.len());
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
        i += 1;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn snp_frames_round_trip(frame in snp_frame()) {
        let bytes = frame.encode().unwrap();
        prop_assert_eq!(bytes[0], 0xA5);
        prop_assert_eq!(decode_frame(&bytes), Ok((Frame::Snp(frame), bytes.len())));
    }

    #[test]
    fn bridge_frames_round_trip(frame in bridge_frame()) {
        let bytes = frame.encode().unwrap();
        prop_assert_eq!(bytes[0], 0xB7);
        prop_assert_eq!(bytes[4], 0, "src byte of a bridge frame");
        let expected = expected_after_roundtrip(&Frame::Bridge(frame));
        prop_assert_eq!(decode_frame(&bytes), Ok((expected, bytes.len())));
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        sizes in proptest::collection::vec(1usize..64, 1..8),
    ) {
        // decode_frame, walked with skip(), always advances.
        let mut rest = &bytes[..];
        let mut steps = 0;
        while !rest.is_empty() {
            steps += 1;
            prop_assert!(steps <= bytes.len());
            match decode_frame(rest) {
                Ok((_, used)) => {
                    prop_assert!(used >= 7 && used <= rest.len());
                    rest = &rest[used..];
                }
                Err(DecodeError::Incomplete { needed }) => {
                    prop_assert!(needed >= 1);
                    break;
                }
                Err(e) => {
                    let skip = e.skip(rest);
                    prop_assert!(skip >= 1 && skip <= rest.len());
                    rest = &rest[skip..];
                }
            }
        }
        // FrameDecoder: bounded output, independent of how bytes are chunked.
        let whole = decode_stream(&[&bytes]);
        let pieces = decode_stream(&chunked(&bytes, &sizes));
        prop_assert_eq!(&whole, &pieces);
        // Whatever decodes re-encodes to a decodable frame.
        for frame in whole.iter().flatten() {
            let again = frame.encode().unwrap();
            prop_assert_eq!(decode_frame(&again).unwrap().0, expected_after_roundtrip(frame));
        }
    }

    #[test]
    fn damaged_streams_never_panic(
        segments in proptest::collection::vec(
            prop_oneof![
                frame().prop_map(|f| f.encode().unwrap()),
                proptest::collection::vec(any::<u8>(), 0..20),
            ],
            0..12,
        ),
        flips in proptest::collection::vec((any::<usize>(), 0u8..8), 0..4),
        sizes in proptest::collection::vec(1usize..64, 1..8),
    ) {
        let mut bytes = segments.concat();
        for (at, bit) in flips {
            if !bytes.is_empty() {
                let n = bytes.len();
                bytes[at % n] ^= 1 << bit;
            }
        }
        let whole = decode_stream(&[&bytes]);
        let pieces = decode_stream(&chunked(&bytes, &sizes));
        prop_assert_eq!(&whole, &pieces);
        let one_by_one = decode_stream(&chunked(&bytes, &[1]));
        prop_assert_eq!(&whole, &one_by_one);
    }

    #[test]
    fn strict_prefixes_are_incomplete(frame in frame()) {
        let bytes = frame.encode().unwrap();
        for n in 0..bytes.len() {
            let result = decode_frame(&bytes[..n]);
            prop_assert!(
                matches!(result, Err(DecodeError::Incomplete { needed }) if needed >= 1 && needed <= bytes.len() - n),
                "prefix {}: {:?}", n, result
            );
        }
        // An Incomplete on the full length can never be reported.
        let mut decoder = FrameDecoder::new();
        decoder.push(&bytes[..bytes.len() - 1]);
        prop_assert_eq!(decoder.next_frame(), None);
    }

    #[test]
    fn frame_after_sync_free_garbage_is_recovered(
        garbage in proptest::collection::vec(any::<u8>().prop_filter("no sync", |b| !is_sync(*b)), 0..300),
        frame in frame(),
        sizes in proptest::collection::vec(1usize..40, 1..6),
    ) {
        let bytes = frame.encode().unwrap();
        let stream = [&garbage[..], &bytes].concat();
        let out = decode_stream(&chunked(&stream, &sizes));
        let mut expected = Vec::new();
        if let Some(&first) = garbage.first() {
            expected.push(Err(DecodeError::BadSync(first)));
        }
        expected.push(Ok(expected_after_roundtrip(&frame)));
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn frame_after_any_garbage_is_recovered(
        garbage in proptest::collection::vec(
            prop_oneof![4 => any::<u8>(), 1 => Just(0xA5u8), 1 => Just(0xB7u8)], 0..300),
        frame in frame(),
        sizes in proptest::collection::vec(1usize..40, 1..6),
    ) {
        let bytes = frame.encode().unwrap();
        // Filler long enough to complete any false frame started in the garbage.
        let filler = [0u8; 260];
        let stream = [&garbage[..], &bytes, &filler].concat();
        // A false sync in the garbage whose "frame" happens to pass the
        // checksum (odds 2^-16) may legitimately swallow the real frame.
        let fooled = (0..garbage.len()).any(|i| {
            is_sync(stream[i])
                && !matches!(
                    decode_frame(&stream[i..]),
                    Err(DecodeError::BadChecksum { .. } | DecodeError::BadLength(_))
                )
        });
        prop_assume!(!fooled);
        let out = decode_stream(&chunked(&stream, &sizes));
        let expected = expected_after_roundtrip(&frame);
        prop_assert!(out.iter().any(|f| f.as_ref() == Ok(&expected)), "{:?}", out);
        prop_assert_eq!(out.iter().filter(|f| f.is_ok()).count(), 1);
    }

    #[test]
    fn single_bit_flips_never_go_unnoticed(frame in frame()) {
        let bytes = frame.encode().unwrap();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[i] ^= 1 << bit;
                let result = decode_frame(&flipped);
                match i {
                    0 => prop_assert_eq!(result, Err(DecodeError::BadSync(flipped[0]))),
                    // A longer length: waits for bytes that never come.
                    // A shorter one: the checksum is read from the body, which
                    // matches only by a 2^-16 accident, and then the frame is
                    // visibly shorter than the one sent.
                    1 => match result {
                        Err(_) => {}
                        Ok((_, used)) => prop_assert!(used < bytes.len()),
                    },
                    // CRC-16 catches every single-bit error.
                    _ => prop_assert!(
                        matches!(result, Err(DecodeError::BadChecksum { .. })),
                        "byte {} bit {}: {:?}", i, bit, result
                    ),
                }
                // The streaming decoder never yields the frame either.
                let out = decode_stream(&[&flipped]);
                prop_assert!(out.iter().all(|f| f.as_ref() != Ok(&frame)));
            }
        }
    }
}
