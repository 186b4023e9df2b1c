//! The documentation's links: every relative link of README.md, CHANGELOG.md and `docs/*.md`
//! names a file of the repository and, with `#anchor`, a heading of it (as GitHub makes
//! anchors of headings). Their code blocks are compiled as doc tests (src/lib.rs); links out of
//! the repository are not followed (CI has no internet).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: the README, the changelog and every chapter.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    assert!(!chapters.is_empty(), "docs/ has no chapter");
    pages.extend(chapters);
    pages
}

/// The lines of a page outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut in_code = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                return false;
            }
            !in_code
        })
        .collect()
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`; a repeated one gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut all = BTreeSet::new();
    for line in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        all.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    all
}

/// The targets of a page's inline links, `[text](target)`.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    found
}

/// What is wrong with one link of `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().expect("a page is in a folder").join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no such file"));
    }
    let anchor = anchor?;
    if file.is_dir() || file.extension().is_none_or(|e| e != "md") {
        return Some(format!(
            "{target}: an anchor into a file that is not markdown"
        ));
    }
    let text = std::fs::read_to_string(&file).expect("a readable page");
    (!anchors(&text).contains(anchor)).then(|| format!("{target}: no heading makes #{anchor}"))
}

#[test]
fn every_relative_link_names_a_file_and_a_heading_that_exist() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a readable page");
        for target in links(&text) {
            checked += 1;
            if let Some(problem) = broken(&page, &target) {
                let page = page
                    .strip_prefix(root())
                    .unwrap_or(&page)
                    .display()
                    .to_string();
                problems.push(format!("{page}: {problem}"));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} links found: is the parser broken?"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The check itself: a link to a missing heading, or a missing file, is found.
#[test]
fn a_broken_link_is_found() {
    let page = root().join("README.md");
    assert_eq!(broken(&page, "docs/calls.md#call-semantics"), None);
    assert_eq!(broken(&page, "https://actix.rs"), None);
    assert!(broken(&page, "docs/calls.md#no-such-heading").is_some());
    assert!(broken(&page, "docs/no-such-chapter.md").is_some());
    assert_eq!(
        anchors("# A\n## `x` and y (z)\n## A\n```\n# not a heading\n```"),
        ["a", "a-1", "x-and-y-z"].map(String::from).into()
    );
}

/// The front page stays one a newcomer reads in five minutes; the rest is in `docs/`.
#[test]
fn the_readme_stays_short() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: move detail to docs/"
    );
}

/// The actix-web service example stays one a reader takes in at a glance: a tool route and the
/// status scope (the guarded variant is `service_guarded.rs`).
#[test]
fn the_service_example_stays_short() {
    let example = std::fs::read_to_string(root().join("examples/service.rs")).expect("service.rs");
    let lines = example.lines().count();
    assert!(lines <= 40, "examples/service.rs has {lines} lines");
}
