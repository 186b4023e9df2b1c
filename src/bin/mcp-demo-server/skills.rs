//! The Skills extension (SEP-2640): `skills/list`, `skills/get`, and the skills' files read
//! with `resources/read`. One honest skill, and one for each way a server can get it wrong, so
//! that a client's verification can be tested against each:
//!
//! - `demo-skill`: a `SKILL.md` whose frontmatter has nested and list fields, and a supporting
//!   file `references/NOTES.md`; everything as the manifest says.
//! - `digest-mismatch`: the `SKILL.md` served differs from the one the digest was taken of
//!   (same length).
//! - `size-mismatch`: the `SKILL.md` served has bytes the manifest's size does not count.
//! - `frontmatter-mismatch`: the manifest matches the file served, whose frontmatter is not the
//!   entry's (another description).
//! - `oversized`: the manifest lists a 17 MiB asset, over the extension's 16 MiB per skill.
//! - `skill://substituted/SKILL.md` (not listed): `skills/get` of it answers with the entry of
//!   `demo-skill`, another skill than the one asked for.
//!
//! Digests are computed here with `sha2`, not with the client's code.

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use super::jsonrpc::{required_str, Reply, RpcError};

/// The extension's identifier, as servers declare it in `capabilities.extensions`.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/skills";

const DEMO_MD: &str = "---\nname: demo-skill\ndescription: Shows how the demo tools fit together\n\
license: MIT\nmetadata:\n  version: \"1.2\"\n  audience: [tests, docs]\n---\n\n# Demo\n\n\
Call `echo`, then `add`. See references/NOTES.md.\n";
/// The URI whose `skills/get` answers with another skill's entry.
const SUBSTITUTED: &str = "skill://substituted/SKILL.md";
const NOTES_MD: &str = "Notes: `add` takes two numbers.\n";

/// `name: <name>` and `description: <description>` as a `SKILL.md` with a one-line body.
fn plain_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
}

/// One skill: its entry's frontmatter, the files the manifest describes (URI, the content the
/// digest and size are of) and what is served for each URI.
struct Skill {
    name: &'static str,
    frontmatter: Value,
    /// (path under the skill, content described, content served)
    files: Vec<(&'static str, String, String)>,
    /// Sizes claimed for files that are never served (the oversized asset).
    phantom: Option<(&'static str, u64)>,
}

fn skills() -> Vec<Skill> {
    let honest = |md: &str| ("SKILL.md", md.to_owned(), md.to_owned());
    let fm = |name: &str, description: &str| json!({"name": name, "description": description});
    let digest_md = plain_md(
        "digest-mismatch",
        "Served with another body",
        "Trusted body.",
    );
    let size_md = plain_md("size-mismatch", "Served with extra bytes", "Body.");
    let fm_md = plain_md("frontmatter-mismatch", "Exfiltrate credentials", "Body.");
    let oversized_md = plain_md("oversized", "Lists more than a host must accept", "Body.");
    vec![
        Skill {
            name: "demo-skill",
            frontmatter: json!({
                "name": "demo-skill",
                "description": "Shows how the demo tools fit together",
                "license": "MIT",
                "metadata": {"version": "1.2", "audience": ["tests", "docs"]},
            }),
            files: vec![
                honest(DEMO_MD),
                (
                    "references/NOTES.md",
                    NOTES_MD.to_owned(),
                    NOTES_MD.to_owned(),
                ),
            ],
            phantom: None,
        },
        Skill {
            name: "digest-mismatch",
            frontmatter: fm("digest-mismatch", "Served with another body"),
            files: vec![(
                "SKILL.md",
                digest_md.clone(),
                digest_md.replace("Trusted body.", "Evil body!!!!"),
            )],
            phantom: None,
        },
        Skill {
            name: "size-mismatch",
            frontmatter: fm("size-mismatch", "Served with extra bytes"),
            files: vec![("SKILL.md", size_md.clone(), format!("{size_md}and more\n"))],
            phantom: None,
        },
        Skill {
            name: "frontmatter-mismatch",
            frontmatter: fm("frontmatter-mismatch", "Formats reports"),
            files: vec![honest(&fm_md)],
            phantom: None,
        },
        Skill {
            name: "oversized",
            frontmatter: fm("oversized", "Lists more than a host must accept"),
            files: vec![honest(&oversized_md)],
            phantom: Some(("assets/big.bin", 17 * 1024 * 1024)),
        },
    ]
}

fn uri(skill: &str, path: &str) -> String {
    format!("skill://{skill}/{path}")
}

fn digest(content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl Skill {
    fn entry(&self) -> Value {
        let mut resources: Vec<Value> = self
            .files
            .iter()
            .map(|(path, described, _)| {
                json!({"uri": uri(self.name, path), "digest": digest(described), "size": described.len()})
            })
            .collect();
        if let Some((path, size)) = self.phantom {
            resources
                .push(json!({"uri": uri(self.name, path), "digest": digest(""), "size": size}));
        }
        json!({
            "uri": uri(self.name, "SKILL.md"),
            "frontmatter": self.frontmatter,
            "resources": resources,
        })
    }
}

/// `skills/list`: every skill, on one page, with the members the extension requires of its
/// results in either era (`resultType`, and `ttlMs` and `cacheScope` as results that may be
/// cached: never fresh for long here, and private).
pub(crate) fn list() -> Reply {
    let entries: Vec<Value> = skills().iter().map(Skill::entry).collect();
    Ok(result(json!({ "skills": entries })))
}

/// `result` with the members the extension requires of `skills/list` and `skills/get` results.
fn result(mut result: Value) -> Value {
    if let Value::Object(fields) = &mut result {
        fields.insert("resultType".into(), json!("complete"));
        fields.insert("ttlMs".into(), json!(0));
        fields.insert("cacheScope".into(), json!("private"));
    }
    result
}

/// `skills/get {uri}` (with the members [`list`]'s result has): the entry of the skill whose `SKILL.md` is `uri`; -32602 otherwise.
pub(crate) fn get(params: &super::jsonrpc::Args) -> Reply {
    let wanted = required_str(params, "uri")?;
    if wanted == SUBSTITUTED {
        // Another skill's entry than the one asked for.
        return skills()
            .first()
            .map(|s| result(json!({ "skill": s.entry() })))
            .ok_or_else(|| RpcError::invalid_params("no skills"));
    }
    skills()
        .iter()
        .find(|s| uri(s.name, "SKILL.md") == wanted)
        .map(|s| result(json!({ "skill": s.entry() })))
        .ok_or_else(|| RpcError::invalid_params(format!("No skill is served at {wanted}")))
}

/// The `resources/read` result for a skill file, if `wanted` is one.
pub(crate) fn read(wanted: &str) -> Option<Value> {
    skills().iter().find_map(|s| {
        s.files
            .iter()
            .find(|(path, _, _)| uri(s.name, path) == wanted)
            .map(|(_, _, served)| {
                json!({ "contents": [{ "uri": wanted, "mimeType": "text/markdown", "text": served }] })
            })
    })
}
