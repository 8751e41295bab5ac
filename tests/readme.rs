//! README.md's links and images into the repository point at files that are
//! in it: a chart or results folder the README shows must be committed, not
//! only present in the working copy that wrote the README.

use std::path::Path;

/// The targets of the README's relative Markdown links and images,
/// `[text](target)` and `![alt](target)`, without `#anchors`.
fn relative_link_targets(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or_default();
        let is_external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !is_external && !target.contains(' ') {
            targets.push(target.to_string());
        }
        rest = &rest[end..];
    }
    targets
}

#[test]
fn every_file_the_readme_links_to_is_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let targets = relative_link_targets(&readme);
    assert!(
        targets.iter().any(|t| t.ends_with(".png")),
        "README.md shows no chart; found links {targets:?}"
    );
    let tracked = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output()
        .expect("run git ls-files (git must be installed)");
    assert!(
        tracked.status.success(),
        "git ls-files failed in {}",
        root.display()
    );
    let tracked = String::from_utf8_lossy(&tracked.stdout);
    for target in &targets {
        let target = target.trim_end_matches('/');
        let committed = tracked
            .lines()
            .any(|file| file == target || file.starts_with(&format!("{target}/")));
        assert!(
            committed,
            "README.md links to {target}, which git does not track; commit it (check .gitignore) or fix the link"
        );
    }
}

#[test]
fn link_targets_are_found_and_external_ones_skipped() {
    let markdown = "see [a](src/a.rs), ![chart](results/x/t.png) and [web](https://example.com) [sec](#layout) [b](docs/b.md#part)";
    assert_eq!(
        relative_link_targets(markdown),
        ["src/a.rs", "results/x/t.png", "docs/b.md"]
    );
}
