//! Files in their declared encoding: the thesis' configurations start with
//! `<?xml version="1.0" encoding="Windows-1252"?>` as the .NET tools wrote
//! them, with CRLF line ends. Every document here is built byte by byte (no
//! encoder from the crate under test), written to a temporary file and read
//! through the public file-loading path.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use yamor_core::error::EncodingBasis;
use yamor_core::optimize::{OptimizationConfig, RuleError};
use yamor_core::{Morphology, Problem, RobotConfig, XmlError, read_xml_file};

/// A temporary file, removed again when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "yamor-encoding-{}-{}-{name}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, bytes).unwrap();
        Self(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn name(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The thesis' style of configuration: declared `{encoding}`, a comment and
/// an attribute the reader ignores but keeps in the text, both with `é` and
/// `€`. Lines end in `\n`; [`crlf`] turns them into CRLF.
fn gait(encoding: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="{encoding}"?>
<!-- Café €-free: the wheel of the thésis, 30° per step -->
<yamorconfig name="Roue été €5">
  <modulelist>
    <module id="1" amplitude="0" offset="0" speed="0"
            minangle="-1.57" maxangle="1.57">
      <bluetooth to="6"/>
    </module>
    <module id="6" amplitude="1.04" offset="1.04" speed="0.6"
            minangle="-1.57" maxangle="1.57">
      <cpglink to="1" phase="-2.09" weight="1.0" />
    </module>
  </modulelist>
</yamorconfig>
"#
    )
}

/// The robot [`gait`] describes.
fn expected_gait() -> RobotConfig {
    RobotConfig::from_xml_str("expected.xml", &gait("UTF-8")).unwrap()
}

fn crlf(text: &str) -> String {
    assert!(!text.contains('\r'));
    text.replace('\n', "\r\n")
}

/// Windows-1252 bytes of `text`, by hand for the characters the tests use.
fn windows_1252(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match c {
            '\u{0}'..='\u{7f}' => c as u8,
            '€' => 0x80,
            '°' => 0xB0,
            'à' => 0xE0,
            'è' => 0xE8,
            'é' => 0xE9,
            'û' => 0xFB,
            'ü' => 0xFC,
            other => panic!("{other:?} is not in this test's Windows-1252 table"),
        })
        .collect()
}

/// ISO-8859-1 bytes of `text`: every character below U+0100 is its byte.
fn latin1(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).expect("not in ISO-8859-1"))
        .collect()
}

fn utf16_le_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    bytes
}

fn utf16_be_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFE, 0xFF];
    bytes.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    bytes
}

fn utf8_with_bom(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend_from_slice(text.as_bytes());
    bytes
}

/// Reads `bytes` as a file through [`read_xml_file`] and
/// [`RobotConfig::from_file`], checks both against `text`, and returns the
/// decoded text.
#[track_caller]
fn assert_loads_as(bytes: &[u8], text: &str) -> String {
    let file = TempFile::new("gait.xml", bytes);
    let decoded = read_xml_file(file.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decoded, text, "decoded text differs");
    let config = RobotConfig::from_file(file.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config, expected_gait());
    // What the reader ignores is still in the text, decoded.
    let doc = roxmltree::Document::parse(&decoded).unwrap();
    assert_eq!(doc.root_element().attribute("name"), Some("Roue été €5"));
    let comment = doc
        .root()
        .children()
        .find(roxmltree::Node::is_comment)
        .and_then(|c| c.text())
        .unwrap();
    assert!(comment.contains("Café €-free"), "{comment}");
    assert!(comment.contains("thésis, 30°"), "{comment}");
    decoded
}

#[test]
fn windows_1252_with_crlf_and_accents_loads() {
    let text = crlf(&gait("Windows-1252"));
    let bytes = windows_1252(&text);
    // The file really is what the thesis' tools wrote: not UTF-8, CRLF.
    assert!(std::str::from_utf8(&bytes).is_err());
    assert!(bytes.contains(&0xE9) && bytes.contains(&0x80));
    assert!(bytes.windows(2).any(|w| w == b"\r\n"));
    assert!(bytes.starts_with(br#"<?xml version="1.0" encoding="Windows-1252"?>"#));
    let decoded = assert_loads_as(&bytes, &text);
    // Line ends are kept, so positions in errors match the file.
    assert_eq!(decoded.matches("\r\n").count(), text.matches('\n').count());
}

#[test]
fn windows_1252_label_in_single_quotes_and_any_case_loads() {
    let text = crlf(&gait("wInDoWs-1252")).replacen(
        r#"version="1.0" encoding="wInDoWs-1252""#,
        "version='1.0' encoding = 'wInDoWs-1252' standalone='yes'",
        1,
    );
    assert!(text.starts_with("<?xml version='1.0' encoding = 'wInDoWs-1252'"));
    assert_loads_as(&windows_1252(&text), &text);
}

#[test]
fn utf16_le_with_bom_loads() {
    let text = crlf(&gait("UTF-16"));
    assert_loads_as(&utf16_le_with_bom(&text), &text);
}

#[test]
fn utf16_be_with_bom_loads() {
    let text = crlf(&gait("UTF-16"));
    assert_loads_as(&utf16_be_with_bom(&text), &text);
}

#[test]
fn utf16_without_bom_is_recognised_by_its_first_bytes() {
    let text = crlf(&gait("UTF-16"));
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_loads_as(&le, &text);
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    assert_loads_as(&be, &text);
}

#[test]
fn utf8_with_bom_loads() {
    let text = crlf(&gait("UTF-8"));
    assert_loads_as(&utf8_with_bom(&text), &text);
}

#[test]
fn byte_order_mark_wins_over_the_declaration() {
    // Saved as UTF-8 with a BOM by an editor, the declaration left alone.
    let text = crlf(&gait("Windows-1252"));
    assert_loads_as(&utf8_with_bom(&text), &text);
    assert_loads_as(&utf16_le_with_bom(&text), &text);
}

#[test]
fn utf8_without_bom_or_declaration_loads() {
    let text = crlf(&gait("UTF-8")).replacen(r#" encoding="UTF-8""#, "", 1);
    assert!(text.starts_with(r#"<?xml version="1.0"?>"#));
    assert_loads_as(text.as_bytes(), &text);
    let text = crlf(&gait("UTF-8"));
    assert_loads_as(text.as_bytes(), &text);
}

#[test]
fn iso_8859_1_declared_loads() {
    // ISO-8859-1 has no euro sign; use only its own characters.
    let text = crlf(&gait("ISO-8859-1")).replace('€', "ü");
    let expected_name = "Roue été ü5";
    let bytes = latin1(&text);
    assert!(bytes.contains(&0xE9) && bytes.contains(&0xFC) && bytes.contains(&0xB0));
    let file = TempFile::new("latin1.xml", &bytes);
    let decoded = read_xml_file(file.path()).unwrap();
    assert_eq!(decoded, text);
    assert!(decoded.contains(expected_name));
    assert_eq!(
        RobotConfig::from_file(file.path()).unwrap(),
        expected_gait()
    );
}

#[test]
fn utf16_declared_in_an_ascii_compatible_file_reads_as_utf8() {
    // .NET writes `encoding="utf-16"` into a document serialised to a
    // string; saved, the file is UTF-8 without a BOM.
    let text = crlf(&gait("utf-16"));
    assert_loads_as(text.as_bytes(), &text);
}

#[test]
fn unknown_encoding_label_is_an_error_naming_it() {
    let text = crlf(&gait("x-klingon-8"));
    let file = TempFile::new("klingon.xml", text.as_bytes());
    let err = RobotConfig::from_file(file.path()).unwrap_err();
    match &err {
        XmlError::UnknownEncoding { file: name, label } => {
            assert_eq!(name, &file.name());
            assert_eq!(label, "x-klingon-8");
        }
        other => panic!("expected XmlError::UnknownEncoding, got {other:?}"),
    }
    assert!(err.problem().is_none());
    let shown = err.to_string();
    assert!(shown.contains("`x-klingon-8`"), "{shown}");
    assert!(shown.starts_with(&format!("{}: ", file.name())), "{shown}");
    // The same through the plain text reader.
    assert!(matches!(
        read_xml_file(file.path()),
        Err(XmlError::UnknownEncoding { .. })
    ));
}

#[test]
fn encoding_that_cannot_be_decoded_safely_is_refused() {
    // The Encoding Standard decodes ISO-2022-KR to a single U+FFFD.
    let text = gait("ISO-2022-KR");
    let file = TempFile::new("kr.xml", text.as_bytes());
    match read_xml_file(file.path()) {
        Err(XmlError::UnknownEncoding { label, .. }) => assert_eq!(label, "ISO-2022-KR"),
        other => panic!("expected XmlError::UnknownEncoding, got {other:?}"),
    }
}

#[test]
fn undeclared_invalid_utf8_is_an_error_naming_the_offset() {
    // The thesis' file with its declaration's encoding removed: Windows-1252
    // bytes where UTF-8 is assumed.
    let text = crlf(&gait("Windows-1252")).replacen(r#" encoding="Windows-1252""#, "", 1);
    let bytes = windows_1252(&text);
    let offset = bytes.iter().position(|&b| b >= 0x80).unwrap();
    assert_eq!(bytes[offset], 0xE9, "the é of Café");
    let file = TempFile::new("undeclared.xml", &bytes);
    let err = RobotConfig::from_file(file.path()).unwrap_err();
    match &err {
        XmlError::BadEncoding {
            file: name,
            line,
            offset: got,
            encoding,
            basis,
        } => {
            assert_eq!(name, &file.name());
            assert_eq!(*got, offset);
            assert_eq!(*line, 2);
            assert_eq!(*encoding, "UTF-8");
            assert_eq!(*basis, EncodingBasis::Default);
        }
        other => panic!("expected XmlError::BadEncoding, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{}:2: not valid UTF-8", file.name())),
        "{shown}"
    );
    assert!(shown.contains(&format!("byte offset {offset}")), "{shown}");
    assert!(!shown.contains('\u{fffd}'), "{shown}");
}

#[test]
fn invalid_utf8_after_a_bom_counts_the_bom_in_the_offset() {
    let mut bytes = utf8_with_bom("<?xml version=\"1.0\"?>\r\n<yamorconfig>\r\n");
    let offset = bytes.len();
    bytes.extend_from_slice(b"\xFF</yamorconfig>\r\n");
    let file = TempFile::new("bom.xml", &bytes);
    match read_xml_file(file.path()) {
        Err(XmlError::BadEncoding {
            offset: got,
            line,
            basis,
            ..
        }) => {
            assert_eq!(got, offset);
            assert_eq!(line, 3);
            assert_eq!(basis, EncodingBasis::ByteOrderMark);
        }
        other => panic!("expected XmlError::BadEncoding, got {other:?}"),
    }
}

#[test]
fn unpaired_surrogate_in_utf16_is_an_error_naming_the_offset() {
    let mut bytes = utf16_le_with_bom("<?xml version=\"1.0\"?>\r\n<yamorconfig name=\"");
    let offset = bytes.len();
    bytes.extend_from_slice(&0xD800_u16.to_le_bytes());
    bytes.extend("\"/>\r\n".encode_utf16().flat_map(u16::to_le_bytes));
    let file = TempFile::new("surrogate.xml", &bytes);
    match read_xml_file(file.path()) {
        Err(err @ XmlError::BadEncoding { .. }) => {
            let XmlError::BadEncoding {
                offset: got,
                line,
                encoding,
                ..
            } = &err
            else {
                unreachable!()
            };
            assert_eq!(*got, offset);
            assert_eq!(*line, 2);
            assert_eq!(*encoding, "UTF-16LE");
            assert!(err.to_string().contains("byte order mark"), "{err}");
        }
        other => panic!("expected XmlError::BadEncoding, got {other:?}"),
    }
}

/// The gait with `from` replaced by `to`, as a CRLF Windows-1252 file, and
/// the error of loading it.
fn windows_1252_error(from: &str, to: &str) -> (TempFile, XmlError) {
    let utf8 = gait("Windows-1252");
    assert!(utf8.contains(from), "{from}");
    let text = crlf(&utf8.replacen(from, to, 1));
    let file = TempFile::new("broken.xml", &windows_1252(&text));
    let err = RobotConfig::from_file(file.path()).unwrap_err();
    (file, err)
}

#[test]
fn error_in_a_crlf_windows_1252_file_reports_the_right_line() {
    // Line 9: <module id="6" amplitude="1.04" ...
    let (file, err) = windows_1252_error(r#"amplitude="1.04""#, "amplitude=\"1,04€\"");
    match &err {
        XmlError::Invalid {
            file: name,
            line,
            element,
            problem,
        } => {
            assert_eq!(name, &file.name());
            assert_eq!(*line, 9, "{err}");
            assert_eq!(element, "module");
            assert_eq!(
                problem,
                &Problem::BadValue {
                    name: "amplitude",
                    value: "1,04€".to_owned(),
                    expected: "number",
                }
            );
        }
        other => panic!("expected XmlError::Invalid, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with(&format!("{}:9: <module>: ", file.name())),
        "{err}"
    );

    // Line 11: an element name with a Windows-1252 letter.
    let (_file, err) = windows_1252_error("<cpglink to=\"1\"", "<cpglénk to=\"1\"");
    match &err {
        XmlError::Invalid { line, problem, .. } => {
            assert_eq!(*line, 11, "{err}");
            assert_eq!(problem, &Problem::UnexpectedElement("cpglénk".to_owned()));
        }
        other => panic!("expected XmlError::Invalid, got {other:?}"),
    }
}

#[test]
fn malformed_crlf_windows_1252_file_reports_the_right_line() {
    // Line 7 of the CRLF file: `<bluetooth to="6">` left open.
    let (file, err) = windows_1252_error(r#"<bluetooth to="6"/>"#, r#"<bluetooth to="6">"#);
    match &err {
        XmlError::Malformed { file: name, source } => {
            assert_eq!(name, &file.name());
            // The parser notices at the mismatched `</module>` on line 8,
            // after its four spaces of indentation.
            assert_eq!(source.pos().row, 8, "{err}");
            assert_eq!(source.pos().col, 5, "{err}");
        }
        other => panic!("expected XmlError::Malformed, got {other:?}"),
    }
}

/// An optimization configuration (thesis 5.7.2) as the thesis' tools would
/// write it.
const OPTIMIZE: &str = r#"<?xml version="1.0" encoding="Windows-1252"?>
<!-- Schlüssel: amplitude égale, 0°..90°, coût 0 € -->
<yamorconfig>
  <modulelist>
    <module id="1" amplitude="0.5" offset="0" speed="1" minangle="-1.57" maxangle="1.57">
      <bluetooth to="2"/>
      <cpglink to="2" phase="1" weight="1"/>
    </module>
    <module id="2" amplitude="0.5" offset="0" speed="1" minangle="-1.57" maxangle="1.57">
      <cpglink to="1" phase="-1" weight="1"/>
    </module>
  </modulelist>
  <optimize param="amplitude_1" min="0" max="1.5"/>
  <optimize param="amplitude_2" expr="amplitude_1()"/>
</yamorconfig>
"#;

#[test]
fn optimization_config_in_windows_1252_loads() {
    let text = crlf(OPTIMIZE);
    let file = TempFile::new("optimize.xml", &windows_1252(&text));
    let config = OptimizationConfig::from_file(file.path()).unwrap_or_else(|e| panic!("{e}"));
    let expected = OptimizationConfig::from_xml_str("optimize.xml", &text).unwrap();
    assert_eq!(config, expected);
    assert_eq!(config.rules().len(), 2);
    assert_eq!(config.free_parameters().len(), 1);
    assert!(
        read_xml_file(file.path())
            .unwrap()
            .contains("égale, 0°..90°")
    );
}

#[test]
fn optimization_rule_error_in_a_crlf_windows_1252_file_names_line_and_attribute() {
    // Line 14: the second rule, with an attribute name in Windows-1252.
    let text = crlf(&OPTIMIZE.replace(
        r#"expr="amplitude_1()"/>"#,
        r#"expr="amplitude_1()" règle="1"/>"#,
    ));
    let file = TempFile::new("optimize-bad.xml", &windows_1252(&text));
    match OptimizationConfig::from_file(file.path()).unwrap_err() {
        XmlError::Invalid {
            file: name,
            line,
            element,
            problem: Problem::Optimize(error),
        } => {
            assert_eq!(name, file.name());
            assert_eq!(line, 14);
            assert_eq!(element, "optimize");
            assert_eq!(*error, RuleError::UnknownAttribute("règle".to_owned()));
        }
        other => panic!("expected a rule error, got {other}"),
    }
}

#[test]
fn morphology_in_windows_1252_loads() {
    let text = crlf(
        r#"<?xml version="1.0" encoding="Windows-1252"?>
<!-- Zwei Module, verbunden: déjà vu? Non, 0 €. -->
<morphology central="1">
  <module id="1"/>
  <module id="2"/>
  <connect idfrom="2" connfrom="rear" idto="1" connto="front" angle="0"/>
</morphology>
"#,
    );
    let file = TempFile::new("world.xml", &windows_1252(&text));
    let morphology = Morphology::from_file(file.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        morphology,
        Morphology::from_xml_str("world.xml", &text).unwrap()
    );
    assert_eq!(morphology.modules.len(), 2);
}

#[test]
fn missing_file_is_still_an_io_error() {
    let path = std::env::temp_dir().join(format!(
        "yamor-encoding-{}-missing/gait.xml",
        std::process::id()
    ));
    match read_xml_file(&path) {
        Err(err @ XmlError::Io { .. }) => {
            assert!(err.to_string().starts_with(&path.display().to_string()));
        }
        other => panic!("expected XmlError::Io, got {other:?}"),
    }
}
