//! `junit.xml`: the expectation results as a JUnit report, so CI test viewers
//! list each expectation as a test case.
//!
//! Written by hand rather than with `quick-junit`: that crate always puts a
//! `<testsuites>` root around the suite, and CI setups and the tests here
//! read `<testsuite>` as the root element.

use super::{ExpectationResult, Verdict};
use crate::results::{JUNIT_XML, OutputFile};

/// `junit.xml`: one `<testsuite name="stallbench <workload>">` with one
/// `<testcase classname="<workload>.<strategy>" name="<key> <limit>">` per
/// result; a failure carries `<failure message="measured X, expected <limit>">`,
/// a skipped one `<skipped/>`.
pub fn junit_xml(workload: &str, results: &[ExpectationResult]) -> OutputFile {
    OutputFile {
        name: JUNIT_XML.to_string(),
        bytes: junit_text(workload, results).into_bytes(),
    }
}

/// The whole text of `junit.xml`.
fn junit_text(workload: &str, results: &[ExpectationResult]) -> String {
    let count = |verdict: Verdict| {
        results
            .iter()
            .filter(|result| result.verdict == verdict)
            .count()
    };
    let mut text = String::new();
    text.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    text.push_str(&format!(
        "<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        xml_escape(&format!("stallbench {workload}")),
        results.len(),
        count(Verdict::Fail),
        count(Verdict::Skipped),
    ));
    for result in results {
        let expectation = &result.expectation;
        let limit = expectation.bound.limit_text();
        let open = format!(
            "  <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&format!("{workload}.{}", expectation.strategy)),
            xml_escape(&format!("{} {limit}", expectation.bound.key())),
        );
        match result.verdict {
            Verdict::Pass => {
                text.push_str(&open);
                text.push_str("/>\n");
            }
            Verdict::Fail => {
                text.push_str(&open);
                text.push_str(">\n");
                text.push_str(&format!(
                    "    <failure message=\"{}\">{}</failure>\n",
                    xml_escape(&format!("measured {}, expected {limit}", result.measured)),
                    xml_escape(&format!(
                        "{}: measured {} (from {})",
                        expectation.label(),
                        result.measured,
                        expectation.source
                    )),
                ));
                text.push_str("  </testcase>\n");
            }
            Verdict::Skipped => {
                text.push_str(&open);
                text.push_str(">\n");
                text.push_str(&format!(
                    "    <skipped message=\"{}\"/>\n",
                    xml_escape(&format!("strategy {} did not run", expectation.strategy)),
                ));
                text.push_str("  </testcase>\n");
            }
        }
    }
    text.push_str("</testsuite>\n");
    text
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::expect::fixtures::mixed_results;

    /// One element of [`check_xml`]'s answer: its name and raw (escaped) attributes.
    #[derive(Debug)]
    struct Element {
        name: String,
        attributes: BTreeMap<String, String>,
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
    fn check_xml(text: &str) -> Vec<Element> {
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

    fn count(elements: &[Element], name: &str) -> usize {
        elements.iter().filter(|e| e.name == name).count()
    }

    #[test]
    fn junit_xml_is_well_formed_and_its_counts_match() {
        let results = mixed_results();
        let file = junit_xml("add-column", &results);
        assert_eq!(file.name, JUNIT_XML);
        let text = String::from_utf8(file.bytes).unwrap();
        let elements = check_xml(&text);

        let suite = &elements[0];
        assert_eq!(suite.name, "testsuite");
        assert_eq!(suite.attributes["name"], "stallbench add-column");
        assert_eq!(suite.attributes["tests"], "4");
        assert_eq!(suite.attributes["failures"], "2");
        assert_eq!(suite.attributes["skipped"], "1");
        assert_eq!(suite.attributes["errors"], "0");
        assert_eq!(count(&elements, "testcase"), 4);
        assert_eq!(count(&elements, "failure"), 2);
        assert_eq!(count(&elements, "skipped"), 1);

        let case = &elements[1];
        assert_eq!(case.attributes["classname"], "add-column.retry");
        assert_eq!(case.attributes["name"], "max_p99_ms &lt;= 600 ms");
        let failure = elements.iter().find(|e| e.name == "failure").unwrap();
        assert_eq!(
            failure.attributes["message"],
            "measured 2, expected &lt;= 0"
        );
        // The strategy and the measured outcome carry every special character.
        let odd_case = &elements[elements.len() - 2];
        assert_eq!(
            odd_case.attributes["classname"],
            "add-column.a&lt;&amp;&quot;&apos;&gt;b"
        );
        let odd_failure = &elements[elements.len() - 1];
        assert_eq!(
            odd_failure.attributes["message"],
            "measured x&lt;&amp;&quot;&apos;&gt;y, expected = ok"
        );
        assert!(text.contains(
            "a&lt;&amp;&quot;&apos;&gt;b.ddl_outcome = ok: measured x&lt;&amp;&quot;&apos;&gt;y \
             (from --expect)</failure>"
        ));
    }

    #[test]
    fn junit_xml_without_expectations_is_an_empty_suite() {
        let text = junit_text("w&w", &[]);
        let elements = check_xml(&text);
        assert_eq!(elements.len(), 1);
        assert_eq!(elements[0].attributes["name"], "stallbench w&amp;w");
        assert_eq!(elements[0].attributes["tests"], "0");
    }

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
