//! `junit.xml`, the one JUnit writer: a suite of test cases as plain data
//! ([`JunitSuite`]), built by `compare`'s expectations and by `check`, and
//! written here. CI test viewers list each case.
//!
//! Written by hand rather than with `quick-junit`: that crate always puts a
//! `<testsuites>` root around the suite, and CI setups and the tests here
//! read `<testsuite>` as the root element.

use crate::results::{JUNIT_XML, OutputFile};

/// One `<testsuite>`: its name and its cases, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct JunitSuite {
    /// The suite's name, e.g. `stallbench add-column`.
    pub name: String,
    pub cases: Vec<JunitCase>,
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq)]
pub struct JunitCase {
    pub classname: String,
    pub name: String,
    pub outcome: JunitOutcome,
}

/// How a test case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum JunitOutcome {
    Passed,
    /// `<failure message="...">body</failure>`.
    Failed {
        message: String,
        body: String,
    },
    /// `<error message="...">body</error>`: no result.
    Error {
        message: String,
        body: String,
    },
    /// `<skipped message="..."/>`.
    Skipped {
        message: String,
    },
}

impl JunitSuite {
    /// `junit.xml` of this suite.
    pub fn file(&self) -> OutputFile {
        OutputFile {
            name: JUNIT_XML.to_string(),
            bytes: self.render().into_bytes(),
        }
    }

    /// The whole text: a prolog, the suite with its counts, a line per
    /// passed case and an element inside the others; every text escaped.
    pub fn render(&self) -> String {
        let count = |matches: fn(&JunitOutcome) -> bool| {
            self.cases
                .iter()
                .filter(|case| matches(&case.outcome))
                .count()
        };
        let mut text = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        text.push_str(&format!(
            "<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
            xml_escape(&self.name),
            self.cases.len(),
            count(|outcome| matches!(outcome, JunitOutcome::Failed { .. })),
            count(|outcome| matches!(outcome, JunitOutcome::Error { .. })),
            count(|outcome| matches!(outcome, JunitOutcome::Skipped { .. })),
        ));
        for case in &self.cases {
            text.push_str(&format!(
                "  <testcase classname=\"{}\" name=\"{}\"",
                xml_escape(&case.classname),
                xml_escape(&case.name),
            ));
            let inside = match &case.outcome {
                JunitOutcome::Passed => {
                    text.push_str("/>\n");
                    continue;
                }
                JunitOutcome::Failed { message, body } => format!(
                    "<failure message=\"{}\">{}</failure>",
                    xml_escape(message),
                    xml_escape(body)
                ),
                JunitOutcome::Error { message, body } => format!(
                    "<error message=\"{}\">{}</error>",
                    xml_escape(message),
                    xml_escape(body)
                ),
                JunitOutcome::Skipped { message } => {
                    format!("<skipped message=\"{}\"/>", xml_escape(message))
                }
            };
            text.push_str(&format!(">\n    {inside}\n  </testcase>\n"));
        }
        text.push_str("</testsuite>\n");
        text
    }
}

/// Text safe inside an XML element or a double- or single-quoted attribute:
/// the five special characters become entities, tab and line breaks become
/// character references (so attributes keep them), and characters XML 1.0 does
/// not allow at all become U+FFFD.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            '\t' => escaped.push_str("&#9;"),
            '\n' => escaped.push_str("&#10;"),
            '\r' => escaped.push_str("&#13;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => escaped.push('\u{fffd}'),
            _ => escaped.push(c),
        }
    }
    escaped
}

/// A tiny checker of the XML this module writes, for the tests of its callers too.
#[cfg(test)]
pub(crate) mod xml_check {
    use std::collections::BTreeMap;

    /// One element of [`check_xml`]'s answer: its name and raw (escaped) attributes.
    #[derive(Debug)]
    pub(crate) struct Element {
        pub(crate) name: String,
        pub(crate) attributes: BTreeMap<String, String>,
    }

    /// Checks that an entity reference starts at `text` and returns its length.
    fn entity_len(text: &str) -> usize {
        for entity in [
            "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#9;", "&#10;", "&#13;",
        ] {
            if text.starts_with(entity) {
                return entity.len();
            }
        }
        panic!("a bare & in {text:?}");
    }

    /// Checks character data: no `<`, and `&` only as an entity.
    fn check_chars(text: &str) {
        assert!(!text.contains('<'), "a bare < in {text:?}");
        let mut rest = text;
        while let Some(at) = rest.find('&') {
            rest = &rest[at + entity_len(&rest[at..])..];
        }
    }

    /// A tiny checker for the XML this module writes: a prolog, tags balanced
    /// and properly nested under one root, `name="value"` attributes, escaped
    /// text. Returns every start or empty element in document order.
    pub(crate) fn check_xml(text: &str) -> Vec<Element> {
        let prolog = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        assert!(text.starts_with(prolog), "no XML prolog");
        let mut rest = &text[prolog.len()..];
        let mut open: Vec<String> = Vec::new();
        let mut elements = Vec::new();
        let mut roots = 0;
        while let Some(start) = rest.find('<') {
            let between = &rest[..start];
            check_chars(between);
            assert!(
                !open.is_empty() || between.trim().is_empty(),
                "text outside the root: {between:?}"
            );
            let end = rest[start..].find('>').expect("an unclosed tag") + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "mismatched </{name}>");
                continue;
            }
            if open.is_empty() {
                roots += 1;
            }
            let (body, empty) = match tag.strip_suffix('/') {
                Some(body) => (body, true),
                None => (tag, false),
            };
            let (name, mut attrs) = body.split_once(' ').unwrap_or((body, ""));
            let mut attributes = BTreeMap::new();
            loop {
                attrs = attrs.trim_start();
                if attrs.is_empty() {
                    break;
                }
                let (key, after) = attrs.split_once("=\"").expect("an attribute without =\"");
                let (value, after) = after.split_once('"').expect("an unclosed attribute");
                check_chars(value);
                assert!(
                    attributes
                        .insert(key.to_string(), value.to_string())
                        .is_none(),
                    "duplicate attribute {key}"
                );
                attrs = after;
            }
            elements.push(Element {
                name: name.to_string(),
                attributes,
            });
            if !empty {
                open.push(name.to_string());
            }
        }
        assert!(rest.trim().is_empty(), "text after the root: {rest:?}");
        assert!(open.is_empty(), "unclosed elements {open:?}");
        assert_eq!(roots, 1, "one root element");
        elements
    }

    pub(crate) fn count(elements: &[Element], name: &str) -> usize {
        elements.iter().filter(|e| e.name == name).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escape_handles_specials_line_breaks_and_forbidden_characters() {
        assert_eq!(xml_escape("<&\"'>"), "&lt;&amp;&quot;&apos;&gt;");
        assert_eq!(xml_escape("a\tb\nc\rd"), "a&#9;b&#10;c&#13;d");
        assert_eq!(
            xml_escape("a\u{0}b\u{1b}c\u{ffff}"),
            "a\u{fffd}b\u{fffd}c\u{fffd}"
        );
        assert_eq!(xml_escape("plain ünïcode"), "plain ünïcode");
    }
}
