//! The pages without charts of their own: a sweep's root page (its table,
//! its sentences, `sweep.png` inline and a link to each value's page) and
//! the pieces `check`'s root page is built from (Markdown turned into safe
//! HTML, links to the migrations' pages). They hold no script: a
//! Content-Security-Policy allows their one style and inline images only.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use pulldown_cmark::{Alignment, Event, Options, Parser, Tag, TagEnd};

use super::sections::{escape, render_table};
use super::{PAGE_CSS, csp_hash, head_start};
use crate::config::Sweep;
use crate::export::sweep::{self, SweepRecord};
use crate::results::{self, OutputFile, REPORT_HTML, SWEEP_PNG};

/// A page of `body` (HTML, escaped already) titled `title`, with the
/// report's styles and no script.
pub fn static_page(title: &str, body: &str) -> String {
    let policy = format!(
        "default-src 'none'; style-src {}; img-src data:; base-uri 'none'; form-action 'none'",
        csp_hash(PAGE_CSS)
    );
    let mut page = String::with_capacity(body.len() + PAGE_CSS.len() + 1_000);
    page.push_str(&head_start(title, &policy));
    let _ = writeln!(page, "\n<style>{PAGE_CSS}</style>\n</head>\n<body>");
    page.push_str(body);
    page.push_str("</body>\n</html>\n");
    page
}

/// `markdown` as HTML, safe whatever it holds: raw HTML in it is shown as
/// text, and links and images keep their text only (the Markdown stallbench
/// writes has none; a name or a statement that looks like one stays text);
/// table cells are not aligned.
pub fn markdown_html(markdown: &str) -> String {
    let events = Parser::new_ext(markdown, Options::ENABLE_TABLES)
        .filter(|event| {
            !matches!(
                event,
                Event::Start(Tag::Link { .. } | Tag::Image { .. })
                    | Event::End(TagEnd::Link | TagEnd::Image)
            )
        })
        .map(|event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            // Aligned cells would carry a style attribute, which the page's
            // Content-Security-Policy refuses.
            Event::Start(Tag::Table(alignments)) => {
                Event::Start(Tag::Table(vec![Alignment::None; alignments.len()]))
            }
            other => other,
        });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// What a path segment in an `href` keeps as it is: letters, digits and
/// `-._~=`; every other byte is percent-encoded.
const HREF_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'=');

/// `path` (relative) as the value of an `href`: its parts joined by `/`,
/// each percent-encoded.
pub fn href(path: &Path) -> String {
    path.iter()
        .map(|part| utf8_percent_encode(&part.to_string_lossy(), HREF_SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// Writes the `report.html` of the sweep's folder `dir`, with its
/// `sweep.png` (drawn already) inline.
pub fn write_sweep_page(
    dir: &Path,
    sweep: &Sweep,
    workload: &str,
    records: &[SweepRecord],
) -> anyhow::Result<()> {
    let png_path = dir.join(SWEEP_PNG);
    let png =
        std::fs::read(&png_path).with_context(|| format!("reading {}", png_path.display()))?;
    results::write_files(dir, &[sweep_page_file(sweep, workload, records, &png)])
}

/// The `report.html` of a sweep's folder: the sweep's table and sentences
/// (those of its `summary.md`), `sweep_png` inline, and a link to each
/// value's own page.
pub fn sweep_page_file(
    sweep: &Sweep,
    workload: &str,
    records: &[SweepRecord],
    sweep_png: &[u8],
) -> OutputFile {
    let title = format!("{workload}: sweep of {}", sweep.name());
    let mut body = format!("<header>\n<h1>{}</h1>\n", escape(&title));
    for sentence in sweep::sentences(sweep, records) {
        let _ = writeln!(body, "<p class=\"verdict\">{}</p>", escape(&sentence));
    }
    body.push_str("</header>\n<main>\n<section id=\"sweep\">\n<h2>Values</h2>\n");
    body.push_str(&render_table(&sweep::table(records)));
    let _ = writeln!(
        body,
        "<img class=\"sweep\" src=\"data:image/png;base64,{}\" alt=\"{}\">",
        base64::engine::general_purpose::STANDARD.encode(sweep_png),
        escape(&format!(
            "sweep.png: the longest stall and when the migration was done, per strategy, \
             against {}",
            sweep.name()
        ))
    );
    body.push_str("</section>\n<section id=\"values\">\n<h2>Each value's page</h2>\n<ul>\n");
    for folder in sweep::value_folders(sweep, records) {
        let _ = writeln!(
            body,
            "<li><a href=\"{}\">{}</a></li>",
            href(&Path::new(&folder).join(REPORT_HTML)),
            escape(&folder)
        );
    }
    body.push_str("</ul>\n</section>\n</main>\n");
    OutputFile {
        name: REPORT_HTML.to_string(),
        bytes: static_page(&title, &body).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_with_html_and_links_renders_them_as_text() {
        let html = markdown_html(
            "## </script><script>alert(1)</script>\n\n\
             a [link](javascript:alert(1)) and ![x](http://example.com/x.png) \
             <img src=x onerror=alert(1)>\n\n| a | b |\n| - | - |\n| `<b>` | 2 |\n",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<a "), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(html.contains("<table>"), "{html}");
        assert!(!html.contains("style="), "{html}");
        assert!(html.contains("<code>&lt;b&gt;</code>"), "{html}");
    }

    #[test]
    fn an_href_keeps_a_plain_path_and_encodes_the_rest() {
        assert_eq!(
            href(Path::new("lock_timeout=100ms/report.html")),
            "lock_timeout=100ms/report.html"
        );
        assert_eq!(
            href(Path::new("0002 add \"x\"/report.html")),
            "0002%20add%20%22x%22/report.html"
        );
    }

    #[test]
    fn a_static_page_allows_no_script_and_its_style_by_hash() {
        let page = static_page("t <x>", "<main>hi</main>\n");
        assert!(page.contains("<title>t &lt;x&gt;</title>"), "{page}");
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("script-src") && page.contains("default-src 'none'"));
        assert!(page.contains(&csp_hash(PAGE_CSS)), "{page}");
    }

    #[test]
    fn the_example_sweep_s_page_has_its_sentences_table_chart_and_links() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example-sweep");
        let records = sweep::read_records(&dir).unwrap().unwrap();
        let sweep = sweep::sweep_of(&records).unwrap();
        let png = std::fs::read(dir.join(SWEEP_PNG)).unwrap();
        let file = sweep_page_file(&sweep, "add-column", &records, &png);
        let page = String::from_utf8(file.bytes).unwrap();
        assert!(
            page.contains("<h1>add-column: sweep of retry.lock_timeout</h1>"),
            "{page}"
        );
        assert!(
            page.contains("retry: lock_timeout 100ms kept every second above"),
            "{page}"
        );
        assert!(page.contains("<td>6s</td>"), "{page}");
        let chart = base64::engine::general_purpose::STANDARD.encode(&png);
        assert!(page.contains(&format!("src=\"data:image/png;base64,{chart}\"")));
        for value in ["100ms", "500ms", "1s", "6s"] {
            assert!(
                page.contains(&format!("<a href=\"lock_timeout={value}/report.html\">")),
                "{page}"
            );
        }
        assert!(!page.contains("<script"), "{page}");
        // The page on disk is this one (plot DIR redraws it).
        let on_disk = std::fs::read_to_string(dir.join(REPORT_HTML)).unwrap();
        assert_eq!(on_disk, page);
    }
}
