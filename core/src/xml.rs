//! Shared helpers for reading files in their declared encoding, for reading
//! attributes with errors that point at the offending element, and for
//! writing documents with quick-xml.

use std::path::Path;

use crate::error::{EncodingBasis, Problem, XmlError};
use encoding_rs::{DecoderResult, Encoding, UTF_8, UTF_16BE, UTF_16LE};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, Event};

/// Where a document came from, so every error can name it.
pub(crate) struct Source<'a> {
    pub file: &'a str,
    pub doc: &'a roxmltree::Document<'a>,
}

impl Source<'_> {
    pub fn parse<'input>(
        file: &str,
        text: &'input str,
    ) -> Result<roxmltree::Document<'input>, XmlError> {
        roxmltree::Document::parse(text).map_err(|source| XmlError::Malformed {
            file: file.to_owned(),
            source,
        })
    }

    pub fn invalid(&self, node: roxmltree::Node<'_, '_>, problem: Problem) -> XmlError {
        XmlError::Invalid {
            file: self.file.to_owned(),
            line: self.doc.text_pos_at(node.range().start).row,
            element: node.tag_name().name().to_owned(),
            problem,
        }
    }

    pub fn required<'n>(
        &self,
        node: roxmltree::Node<'n, '_>,
        name: &'static str,
    ) -> Result<&'n str, XmlError> {
        node.attribute(name)
            .ok_or_else(|| self.invalid(node, Problem::MissingAttribute(name)))
    }

    pub fn finite(
        &self,
        node: roxmltree::Node<'_, '_>,
        name: &'static str,
    ) -> Result<f64, XmlError> {
        let text = self.required(node, name)?;
        self.finite_value(node, name, text)
    }

    fn finite_value(
        &self,
        node: roxmltree::Node<'_, '_>,
        name: &'static str,
        text: &str,
    ) -> Result<f64, XmlError> {
        let value: f64 = text.trim().parse().map_err(|_| {
            self.invalid(
                node,
                Problem::BadValue {
                    name,
                    value: text.to_owned(),
                    expected: "number",
                },
            )
        })?;
        if value.is_finite() {
            Ok(value)
        } else {
            Err(self.invalid(
                node,
                Problem::NonFinite {
                    name,
                    value: text.to_owned(),
                },
            ))
        }
    }

    pub fn unsigned(
        &self,
        node: roxmltree::Node<'_, '_>,
        name: &'static str,
    ) -> Result<u32, XmlError> {
        let text = self.required(node, name)?;
        self.unsigned_value(node, name, text)
    }

    pub fn unsigned_value(
        &self,
        node: roxmltree::Node<'_, '_>,
        name: &'static str,
        text: &str,
    ) -> Result<u32, XmlError> {
        text.trim().parse().map_err(|_| {
            self.invalid(
                node,
                Problem::BadValue {
                    name,
                    value: text.to_owned(),
                    expected: "unsigned integer",
                },
            )
        })
    }

    pub fn boolean(
        &self,
        node: roxmltree::Node<'_, '_>,
        name: &'static str,
        default: bool,
    ) -> Result<bool, XmlError> {
        match node.attribute(name).map(str::trim) {
            None => Ok(default),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(other) => Err(self.invalid(
                node,
                Problem::BadValue {
                    name,
                    value: other.to_owned(),
                    expected: "boolean (true or false)",
                },
            )),
        }
    }

    /// Element children, rejecting any element not in `allowed` so typos
    /// such as `<cpglnk>` are reported instead of silently ignored.
    pub fn children<'a, 'n: 'a>(
        &self,
        node: roxmltree::Node<'n, 'a>,
        allowed: &[&str],
    ) -> Result<Vec<roxmltree::Node<'n, 'a>>, XmlError> {
        let mut out = Vec::new();
        for child in node.children().filter(roxmltree::Node::is_element) {
            if !allowed.contains(&child.tag_name().name()) {
                return Err(self.invalid(
                    child,
                    Problem::UnexpectedElement(child.tag_name().name().to_owned()),
                ));
            }
            out.push(child);
        }
        Ok(out)
    }
}

/// Reads a whole XML file as text, decoded from the encoding it is in.
///
/// The encoding is, in order of precedence:
/// 1. the one a byte order mark names (UTF-8, UTF-16 LE or UTF-16 BE);
/// 2. UTF-16 LE or BE when the file starts with `<?` in UTF-16 without one;
/// 3. the one the XML declaration's `encoding` pseudo-attribute names, for
///    example `<?xml version="1.0" encoding="Windows-1252"?>` as the .NET
///    tools of the thesis wrote it (labels as in the WHATWG Encoding
///    Standard, any case; a declared UTF-16 in a file whose bytes are
///    ASCII-compatible is read as UTF-8);
/// 4. otherwise UTF-8, XML's default.
///
/// Nothing is replaced silently: bytes that are not valid in that encoding
/// are an [`XmlError::BadEncoding`] naming the byte offset and line, an
/// unknown label an [`XmlError::UnknownEncoding`]. The returned text has no
/// byte order mark; the declaration is kept as it is (the XML parser
/// ignores its encoding), so line numbers match the file. Line ends are
/// kept too: the parser reads CRLF as one line end.
pub fn read_xml_file(path: impl AsRef<Path>) -> Result<String, XmlError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => decode(&file, &bytes),
        Err(source) => Err(XmlError::Io { file, source }),
    }
}

/// Decodes the bytes of an XML document; `file` names it in errors.
fn decode(file: &str, bytes: &[u8]) -> Result<String, XmlError> {
    let (encoding, basis, start) = choose_encoding(file, bytes)?;
    let body = &bytes[start..];
    decode_strict(encoding, body).map_err(|(offset, line)| XmlError::BadEncoding {
        file: file.to_owned(),
        line,
        offset: start + offset,
        encoding: encoding.name(),
        basis,
    })
}

/// The encoding of `bytes`, why, and where the text starts (after a BOM).
fn choose_encoding(
    file: &str,
    bytes: &[u8],
) -> Result<(&'static Encoding, EncodingBasis, usize), XmlError> {
    if let Some((encoding, bom_length)) = Encoding::for_bom(bytes) {
        return Ok((encoding, EncodingBasis::ByteOrderMark, bom_length));
    }
    // XML 1.0 appendix F: `<?` in UTF-16 without a byte order mark.
    if bytes.starts_with(b"<\0?\0") {
        return Ok((UTF_16LE, EncodingBasis::FirstBytes, 0));
    }
    if bytes.starts_with(b"\0<\0?") {
        return Ok((UTF_16BE, EncodingBasis::FirstBytes, 0));
    }
    let Some(label) = declared_encoding(bytes) else {
        return Ok((UTF_8, EncodingBasis::Default, 0));
    };
    match Encoding::for_label_no_replacement(label) {
        // The declaration was just read byte by byte as ASCII, so the file
        // cannot be UTF-16: .NET writes `encoding="utf-16"` into documents
        // serialised to a string, which then get saved as UTF-8.
        Some(encoding) if encoding == UTF_16LE || encoding == UTF_16BE => {
            Ok((UTF_8, EncodingBasis::FirstBytes, 0))
        }
        Some(encoding) => Ok((encoding, EncodingBasis::Declaration, 0)),
        None => Err(XmlError::UnknownEncoding {
            file: file.to_owned(),
            label: String::from_utf8_lossy(label).into_owned(),
        }),
    }
}

/// The label of the XML declaration's `encoding` pseudo-attribute, read
/// from the ASCII-compatible start of the file, if there is one.
fn declared_encoding(bytes: &[u8]) -> Option<&[u8]> {
    /// The declaration must close within this many bytes; it is short.
    const LIMIT: usize = 1024;
    let bytes = &bytes[..bytes.len().min(LIMIT)];
    let mut rest = bytes.strip_prefix(b"<?xml")?;
    if !rest.first().is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    loop {
        rest = rest.trim_ascii_start();
        if rest.starts_with(b"?>") {
            return None;
        }
        let name_length = rest
            .iter()
            .position(|b| !b.is_ascii_alphabetic())
            .filter(|&length| length > 0)?;
        let (name, after) = rest.split_at(name_length);
        let after = after
            .trim_ascii_start()
            .strip_prefix(b"=")?
            .trim_ascii_start();
        let (&quote, after) = after.split_first()?;
        if quote != b'"' && quote != b'\'' {
            return None;
        }
        let value_length = after.iter().position(|&b| b == quote)?;
        let (value, after) = after.split_at(value_length);
        if name.eq_ignore_ascii_case(b"encoding") {
            return Some(value);
        }
        rest = &after[1..];
    }
}

/// Decodes all of `bytes` without replacement; on a malformed sequence,
/// its byte offset in `bytes` and the line it is on.
fn decode_strict(encoding: &'static Encoding, bytes: &[u8]) -> Result<String, (usize, u32)> {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut text = String::with_capacity(
        decoder
            .max_utf8_buffer_length_without_replacement(bytes.len())
            .unwrap_or(bytes.len()),
    );
    let mut read = 0;
    loop {
        let (result, consumed) =
            decoder.decode_to_string_without_replacement(&bytes[read..], &mut text, true);
        read += consumed;
        match result {
            DecoderResult::InputEmpty => return Ok(text),
            DecoderResult::OutputFull => {
                let left = bytes.len() - read;
                text.reserve(
                    decoder
                        .max_utf8_buffer_length_without_replacement(left)
                        .unwrap_or(left)
                        .max(16),
                );
            }
            DecoderResult::Malformed(bad, after) => {
                let offset = read.saturating_sub(usize::from(bad) + usize::from(after));
                let line = text.bytes().filter(|&b| b == b'\n').count() + 1;
                return Err((offset, u32::try_from(line).unwrap_or(u32::MAX)));
            }
        }
    }
}

/// Minimal element builder over quick-xml so writers stay declarative.
pub(crate) struct XmlOut {
    writer: Writer<Vec<u8>>,
}

impl XmlOut {
    pub fn new() -> Self {
        let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
        writer
            .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
            .expect("writing to a Vec cannot fail");
        Self { writer }
    }

    pub fn open(&mut self, name: &str, attributes: &[(&str, String)]) {
        let start = element(name, attributes);
        self.writer
            .write_event(Event::Start(start))
            .expect("writing to a Vec cannot fail");
    }

    pub fn empty(&mut self, name: &str, attributes: &[(&str, String)]) {
        let start = element(name, attributes);
        self.writer
            .write_event(Event::Empty(start))
            .expect("writing to a Vec cannot fail");
    }

    pub fn close(&mut self, name: &str) {
        self.writer
            .write_event(Event::End(BytesEnd::new(name)))
            .expect("writing to a Vec cannot fail");
    }

    pub fn finish(self) -> String {
        let mut text = String::from_utf8(self.writer.into_inner()).expect("quick-xml writes UTF-8");
        text.push('\n');
        text
    }
}

fn element<'a>(name: &'a str, attributes: &[(&str, String)]) -> BytesStart<'a> {
    let mut start = BytesStart::new(name);
    for (key, value) in attributes {
        start.push_attribute((*key, value.as_str()));
    }
    start
}

/// Shortest text that parses back to exactly the same `f64`.
pub(crate) fn number(value: f64) -> String {
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_encoding_is_read_from_the_declaration_only() {
        let declared = |text: &str| declared_encoding(text.as_bytes()).map(<[u8]>::to_vec);
        assert_eq!(
            declared(r#"<?xml version="1.0" encoding="Windows-1252"?><a/>"#),
            Some(b"Windows-1252".to_vec())
        );
        assert_eq!(
            declared("<?xml\r\n version = '1.0'\r\n encoding = 'latin1' ?>"),
            Some(b"latin1".to_vec())
        );
        assert_eq!(declared(r#"<?xml version="1.0"?><a encoding="x"/>"#), None);
        assert_eq!(declared(r#"<?xml version="1.0" standalone="yes"?>"#), None);
        assert_eq!(declared(r#"<?xml-stylesheet encoding="x"?>"#), None);
        assert_eq!(declared(r#"<a encoding="x"/>"#), None);
        assert_eq!(declared(r#"<?xml version="1.0" encoding="x"#), None);
        assert_eq!(declared(""), None);
    }

    #[test]
    fn the_parser_ignores_the_declared_encoding_of_decoded_text() {
        for label in ["Windows-1252", "UTF-16", "ISO-8859-1", "x-anything"] {
            let text = format!("<?xml version=\"1.0\" encoding=\"{label}\"?>\r\n<a>é</a>");
            let doc = roxmltree::Document::parse(&text).unwrap();
            assert_eq!(doc.root_element().text(), Some("é"));
        }
    }
}
