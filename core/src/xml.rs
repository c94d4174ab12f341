//! Shared helpers for reading attributes with errors that point at the
//! offending element, and for writing documents with quick-xml.

use crate::error::{Problem, XmlError};
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

/// Reads a whole file, mapping I/O failures to an error that names it.
pub(crate) fn read_file(path: &std::path::Path) -> Result<String, XmlError> {
    std::fs::read_to_string(path).map_err(|source| XmlError::Io {
        file: path.display().to_string(),
        source,
    })
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
