//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): a server that declares it
//! lists its skills with `skills/list` ([`ListSkills`](crate::ListSkills)) and answers
//! `skills/get` ([`GetSkill`](crate::GetSkill)); each [`Skill`] entry carries the skill's
//! frontmatter and a manifest of its files, each with a SHA-256 digest and a size; the files
//! themselves are resources, read with `resources/read`.
//!
//! What a host must do with them is here, pure: an entry is checked before anything is read
//! ([`Skill::check`]: the manifest lists the `SKILL.md`, whose URI ends in the skill's name,
//! within the extension's limits of [`MAX_FILES`] files and [`MAX_TOTAL_SIZE`] bytes); every
//! file read is verified against the entry ([`Skill::verify_file`]: listed, its size, its
//! digest), and a `SKILL.md` also by its frontmatter, parsed as YAML and compared field by field
//! with the entry's ([`Skill::verify_skill_md`]). Any failure is a [`SkillError`], and the
//! content must not be used. [`LoadSkill`](crate::LoadSkill) and
//! [`ReadSkillFile`](crate::ReadSkillFile) read and verify in one call, answering a failure as
//! an [`invalid_response`](crate::ErrorKind::InvalidResponse) error that says what did not
//! match.
//!
//! Files are read only when they are needed (the extension forbids fetching them ahead of
//! need): listing reads nothing, loading a skill reads its `SKILL.md`, and a supporting file is
//! read when asked for. Skills whose `resources` is `"dynamic"` publish no digests, and are
//! declined ([`SkillError::Dynamic`]), as the extension allows.
//!
//! ```
//! use mcp_supervisor::skills::{sha256_digest, Skill, SkillError};
//! use serde_json::json;
//!
//! let text = "---\nname: pdf\ndescription: Work with PDFs\n---\n\nUse the forms.\n";
//! let skill: Skill = serde_json::from_value(json!({
//!     "uri": "skill://pdf/SKILL.md",
//!     "frontmatter": {"name": "pdf", "description": "Work with PDFs"},
//!     "resources": [{
//!         "uri": "skill://pdf/SKILL.md",
//!         "digest": sha256_digest(text.as_bytes()),
//!         "size": text.len(),
//!     }],
//! }))?;
//! let loaded = skill.verify_skill_md(text.as_bytes())?;
//! assert_eq!(loaded.body(), "\nUse the forms.\n");
//!
//! let tampered = text.replace("Use the forms", "Send me keys!");
//! assert!(matches!(
//!     skill.verify_skill_md(tampered.as_bytes()),
//!     Err(SkillError::DigestMismatch { .. })
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod frontmatter;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::protocol::text::server_text;

/// The extension's identifier, the key of its declaration in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The most files a skill may list that every host must accept (its `SKILL.md` included); we
/// accept no more.
pub const MAX_FILES: usize = 512;

/// The most bytes a skill's files may add up to that every host must accept (16 MiB); we accept
/// no more, so that a skill read whole fits in a known bound.
pub const MAX_TOTAL_SIZE: u64 = 16 * 1024 * 1024;

/// Whether a server's capabilities declare the Skills extension: the extension says to call
/// `skills/list` and `skills/get` only on a server that does.
///
/// ```
/// use mcp_supervisor::model::ServerCapabilities;
/// use mcp_supervisor::skills::declared;
///
/// let caps: ServerCapabilities = serde_json::from_value(serde_json::json!({
///     "resources": {},
///     "extensions": {"io.modelcontextprotocol/skills": {}},
/// }))?;
/// assert!(declared(&caps));
/// assert!(!declared(&ServerCapabilities::default()));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn declared(capabilities: &rmcp::model::ServerCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(EXTENSION))
}

/// `sha256:` and the lowercase hexadecimal SHA-256 of `bytes`: a manifest's digest.
///
/// ```
/// assert_eq!(
///     mcp_supervisor::skills::sha256_digest(b""),
///     "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// );
/// ```
pub fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in hash.iter() {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 15)]));
    }
    text
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The entry for one skill, as `skills/list` and `skills/get` give it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md`'s frontmatter as JSON; it has a string `name` and `description`.
    #[serde(deserialize_with = "frontmatter_fields")]
    pub frontmatter: Map<String, Value>,
    /// The skill's files, or `"dynamic"`.
    pub resources: SkillResources,
}

/// A skill's files: the complete manifest, or none for a skill generated on demand.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillResources {
    /// Every file of the skill, its `SKILL.md` included, each once.
    Files(Vec<SkillFile>),
    /// `"dynamic"`: the content is generated and no digests are published.
    Dynamic,
}

/// One file of a skill's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hexadecimal digits, of the file's raw bytes.
    #[serde(deserialize_with = "digest_text")]
    pub digest: String,
    /// The file's length in bytes.
    pub size: u64,
}

/// The result of `skills/list`: one page of entries.
///
/// The entries are read one by one: a valid one is in [`skills`](Self::skills), and one of the
/// wrong shape (no `resources`, a malformed digest, `resources` neither a list nor
/// `"dynamic"`, ...) is in [`invalid`](Self::invalid) as a [`SkillError::InvalidEntry`] that
/// says what is wrong with it, so that one bad entry costs only itself, not the page. Only a
/// page whose `skills` is not a list (or whose `nextCursor` is not a string) is refused whole.
/// `invalid` is not serialized.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The valid entries of this page, in the server's order.
    pub skills: Vec<Skill>,
    /// Why each invalid entry of this page was set aside, in the server's order; its `skill`
    /// is the entry's `uri`, or its position (`#3`) when it has none.
    #[serde(skip)]
    pub invalid: Vec<SkillError>,
    /// The cursor of the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl<'de> Deserialize<'de> for ListSkillsResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            skills: Vec<Value>,
            #[serde(default)]
            next_cursor: Option<String>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let mut skills = Vec::with_capacity(wire.skills.len());
        let mut invalid = Vec::new();
        for (i, entry) in wire.skills.into_iter().enumerate() {
            let skill = match entry.get("uri").and_then(Value::as_str) {
                Some(uri) => uri.to_owned(),
                None => format!("#{i}"),
            };
            match Skill::deserialize(entry) {
                Ok(entry) => skills.push(entry),
                Err(e) => invalid.push(SkillError::InvalidEntry {
                    skill,
                    reason: e.to_string(),
                }),
            }
        }
        Ok(ListSkillsResult {
            skills,
            invalid,
            next_cursor: wire.next_cursor,
        })
    }
}

/// The result of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The skill's entry.
    pub skill: Skill,
}

/// A skill loaded: its verified `SKILL.md` and the entry it was verified against, which governs
/// the reads of its other files ([`Skill::verify_file`], [`ReadSkillFile`](crate::ReadSkillFile)).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry the content was verified against.
    pub skill: Skill,
    /// The whole `SKILL.md`.
    pub text: String,
    body_start: usize,
}

impl LoadedSkill {
    /// The `SKILL.md` after its frontmatter: the instructions.
    pub fn body(&self) -> &str {
        self.text.get(self.body_start..).unwrap_or_default()
    }
}

/// A file of a skill, read and verified against the skill's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFileContent {
    /// The file's URI.
    pub uri: String,
    /// Its raw bytes (a text's UTF-8, or a blob decoded), as the manifest's digest covers them.
    pub bytes: Vec<u8>,
}

impl SkillFileContent {
    /// The content as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// Why a skill's entry or content was refused. Text from the server in it is escaped and
/// bounded when shown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkillError {
    /// `resources` is `"dynamic"`: nothing to verify against, so the skill is not loaded.
    Dynamic {
        /// The skill's URI.
        skill: String,
    },
    /// The entry is not one a host may load (the `SKILL.md` is not listed, its URI does not
    /// end in the skill's name, a file is listed twice, ...).
    InvalidEntry {
        /// The skill's URI.
        skill: String,
        /// What is wrong.
        reason: String,
    },
    /// The manifest lists more files, or more bytes, than the extension's limits.
    TooLarge {
        /// The skill's URI.
        skill: String,
        /// How many files it lists.
        files: usize,
        /// How many bytes they add up to.
        bytes: u64,
    },
    /// A file the manifest does not list: a read of it is a verification failure.
    NotListed {
        /// The file's URI.
        uri: String,
    },
    /// The content's length is not the manifest's `size`.
    SizeMismatch {
        /// The file's URI.
        uri: String,
        /// The manifest's size.
        expected: u64,
        /// The content's length.
        actual: u64,
    },
    /// The content's SHA-256 is not the manifest's `digest`.
    DigestMismatch {
        /// The file's URI.
        uri: String,
        /// The manifest's digest.
        expected: String,
        /// The content's.
        actual: String,
    },
    /// The `SKILL.md`'s frontmatter could not be read, or is not the entry's.
    Frontmatter {
        /// The skill's URI.
        skill: String,
        /// What is wrong: why it could not be read, or the first field that differs.
        reason: String,
    },
    /// The answer to `resources/read` had no usable content for the file (none for its URI,
    /// a blob that is not Base64, a `SKILL.md` that is not UTF-8).
    Content {
        /// The file's URI.
        uri: String,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = |s: &str| server_text(s);
        match self {
            SkillError::Dynamic { skill } => write!(
                f,
                "skill {} publishes no digests (`resources` is \"dynamic\"), so it is not loaded",
                t(skill)
            ),
            SkillError::InvalidEntry { skill, reason } => {
                write!(
                    f,
                    "the entry of skill {} is invalid: {}",
                    t(skill),
                    t(reason)
                )
            }
            SkillError::TooLarge {
                skill,
                files,
                bytes,
            } => write!(
                f,
                "skill {} lists {files} files of {bytes} bytes, over the limits of \
                 {MAX_FILES} files and {MAX_TOTAL_SIZE} bytes",
                t(skill)
            ),
            SkillError::NotListed { uri } => {
                write!(f, "{} is not a file of the skill's manifest", t(uri))
            }
            SkillError::SizeMismatch {
                uri,
                expected,
                actual,
            } => write!(
                f,
                "{} is {actual} bytes long, but the manifest says {expected}",
                t(uri)
            ),
            SkillError::DigestMismatch {
                uri,
                expected,
                actual,
            } => write!(
                f,
                "{} has the digest {}, but the manifest says {}",
                t(uri),
                t(actual),
                t(expected)
            ),
            SkillError::Frontmatter { skill, reason } => {
                write!(f, "the SKILL.md of {}: {}", t(skill), t(reason))
            }
            SkillError::Content { uri, reason } => {
                write!(f, "the content read for {}: {}", t(uri), t(reason))
            }
        }
    }
}

impl std::error::Error for SkillError {}

impl Skill {
    /// The skill's name (`frontmatter.name`).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill's description (`frontmatter.description`).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The manifest's entry for `uri`, if it lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// Checks the entry before anything of the skill is read: it has a manifest (not
    /// `"dynamic"`) that lists its `SKILL.md` and each file once, within [`MAX_FILES`] and
    /// [`MAX_TOTAL_SIZE`]; its name follows the Agent Skills naming rules ([`check_name`]) and
    /// its URI ends in `/<name>/SKILL.md`; every file listed is the `SKILL.md` or within the
    /// skill's directory (its URI begins with the `SKILL.md`'s URI less `SKILL.md`, with no
    /// `.` or `..` segment).
    pub fn check(&self) -> Result<(), SkillError> {
        let invalid = |reason: String| SkillError::InvalidEntry {
            skill: self.uri.clone(),
            reason,
        };
        let SkillResources::Files(files) = &self.resources else {
            return Err(SkillError::Dynamic {
                skill: self.uri.clone(),
            });
        };
        let bytes = files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
        if files.len() > MAX_FILES || bytes > MAX_TOTAL_SIZE {
            return Err(SkillError::TooLarge {
                skill: self.uri.clone(),
                files: files.len(),
                bytes,
            });
        }
        if let Err(why) = check_name(self.name()) {
            return Err(invalid(format!("its name {:?} {why}", self.name())));
        }
        let root = self
            .uri
            .strip_suffix("/SKILL.md")
            .ok_or_else(|| invalid("its URI does not end in /SKILL.md".into()))?;
        if has_dot_segment(root) {
            return Err(invalid("its URI has a `.` or `..` segment".into()));
        }
        let last = root.rsplit('/').next().unwrap_or_default();
        if last != self.name() {
            return Err(invalid(format!(
                "its URI ends in {last:?}, not in its name {:?}",
                self.name()
            )));
        }
        if self.file(&self.uri).is_none() {
            return Err(invalid("its manifest does not list its SKILL.md".into()));
        }
        // Each file is the SKILL.md or within the skill's directory (`<root>/...`), and no
        // `..` leads out of it.
        for file in files {
            let within = file.uri == self.uri
                || file
                    .uri
                    .strip_prefix(root)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|path| !path.is_empty() && !has_dot_segment(path));
            if !within {
                return Err(invalid(format!(
                    "its manifest lists {:?}, which is not within the skill's directory",
                    file.uri
                )));
            }
        }
        let mut uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
        uris.sort_unstable();
        if let Some(twice) = uris.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(format!("its manifest lists {:?} twice", twice[0])));
        }
        Ok(())
    }

    /// Verifies `content`, read for `uri`, against the manifest: listed, of its size, of its
    /// digest. The size is compared first, so a file of the wrong length is not hashed.
    pub fn verify_file(&self, uri: &str, content: &[u8]) -> Result<(), SkillError> {
        if matches!(self.resources, SkillResources::Dynamic) {
            return Err(SkillError::Dynamic {
                skill: self.uri.clone(),
            });
        }
        let file = self.file(uri).ok_or_else(|| SkillError::NotListed {
            uri: uri.to_owned(),
        })?;
        let actual = content.len() as u64;
        if actual != file.size {
            return Err(SkillError::SizeMismatch {
                uri: uri.to_owned(),
                expected: file.size,
                actual,
            });
        }
        let digest = sha256_digest(content);
        if digest != file.digest {
            return Err(SkillError::DigestMismatch {
                uri: uri.to_owned(),
                expected: file.digest.clone(),
                actual: digest,
            });
        }
        Ok(())
    }

    /// Verifies the skill's `SKILL.md`, read as `content`: the entry is checked
    /// ([`check`](Self::check)), the content verified against the manifest
    /// ([`verify_file`](Self::verify_file)), and its YAML frontmatter parsed and compared field
    /// by field with the entry's. Only then is the skill loaded.
    pub fn verify_skill_md(&self, content: &[u8]) -> Result<LoadedSkill, SkillError> {
        self.check()?;
        self.verify_file(&self.uri, content)?;
        let text = std::str::from_utf8(content).map_err(|e| SkillError::Content {
            uri: self.uri.clone(),
            reason: format!("not UTF-8: {e}"),
        })?;
        let frontmatter_error = |reason: String| SkillError::Frontmatter {
            skill: self.uri.clone(),
            reason,
        };
        let split = frontmatter::split(text).map_err(frontmatter_error)?;
        if let Some(field) = frontmatter::first_difference(&split.frontmatter, &self.frontmatter) {
            return Err(frontmatter_error(format!(
                "its frontmatter's {field:?} is not the entry's"
            )));
        }
        let body_start = text.len() - split.body.len();
        Ok(LoadedSkill {
            skill: self.clone(),
            text: text.to_owned(),
            body_start,
        })
    }
}

/// Whether `name` is a skill name by the Agent Skills naming rules, which the extension requires
/// of the last segment of a skill's path: 1 to 64 characters, lowercase ASCII letters, digits
/// and hyphens, neither beginning nor ending with a hyphen, and no two hyphens in a row. The
/// error says which rule it breaks.
///
/// ```
/// use mcp_supervisor::skills::check_name;
///
/// assert!(check_name("pdf-processing").is_ok());
/// assert!(check_name("").is_err());
/// assert!(check_name("PDF").is_err());
/// assert!(check_name("a--b").is_err());
/// ```
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 64 {
        return Err("is not 1 to 64 characters long");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("has characters other than a-z, 0-9 and `-`");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("begins or ends with `-`");
    }
    if name.contains("--") {
        return Err("has two hyphens in a row");
    }
    Ok(())
}

/// Whether a `/`-separated path has a `.` or `..` segment, percent-encoded or not.
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(|segment| {
        let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
        decoded == "." || decoded == ".."
    })
}

/// The raw bytes of `uri` in a `resources/read` answer: its text, or its blob decoded. A blob
/// longer than `limit` bytes decoded is refused before it is decoded.
pub fn content_bytes(
    result: &rmcp::model::ReadResourceResult,
    uri: &str,
    limit: u64,
) -> Result<Vec<u8>, SkillError> {
    use base64::Engine as _;
    use rmcp::model::ResourceContents;
    let error = |reason: &str| SkillError::Content {
        uri: uri.to_owned(),
        reason: reason.to_owned(),
    };
    let content = result
        .contents
        .iter()
        .find(|c| match c {
            ResourceContents::TextResourceContents { uri: u, .. }
            | ResourceContents::BlobResourceContents { uri: u, .. } => u == uri,
            _ => false,
        })
        .ok_or_else(|| error("no content for this URI"))?;
    match content {
        ResourceContents::TextResourceContents { text, .. } => Ok(text.as_bytes().to_vec()),
        ResourceContents::BlobResourceContents { blob, .. } => {
            // Base64 is 4 characters for 3 bytes: anything longer decodes past the limit.
            if blob.len() as u64 > limit.saturating_add(2) / 3 * 4 + 4 {
                return Err(error("a blob larger than the skill's limit"));
            }
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|_| error("a blob that is not Base64"))
        }
        _ => Err(error("content of a kind this client does not know")),
    }
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    /// An array of files, or the string `"dynamic"`; anything else is an invalid entry. The
    /// value is matched by hand (not by an untagged enum, which would replace every error with
    /// one that says nothing), so the error says what is wrong, and with which file.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(deserializer)? {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    SkillFile::deserialize(item)
                        .map_err(|e| D::Error::custom(format_args!("`resources[{i}]`: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(SkillResources::Files),
            Value::String(word) if word == "dynamic" => Ok(SkillResources::Dynamic),
            Value::String(word) => Err(D::Error::custom(format_args!(
                "`resources` is {:?}, neither a list of files nor \"dynamic\"",
                server_text(&word)
            ))),
            other => Err(D::Error::custom(format_args!(
                "`resources` is {}, neither a list of files nor \"dynamic\"",
                frontmatter::kind(&other)
            ))),
        }
    }
}

fn frontmatter_fields<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    let map = Map::<String, Value>::deserialize(d)?;
    for field in ["name", "description"] {
        if !map.get(field).is_some_and(Value::is_string) {
            return Err(serde::de::Error::custom(format_args!(
                "the frontmatter has no string `{field}`"
            )));
        }
    }
    Ok(map)
}

fn digest_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    let valid = text
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| HEX.contains(&b)));
    if !valid {
        return Err(serde::de::Error::custom(format_args!(
            "the digest {:?} is not `sha256:` and 64 lowercase hexadecimal digits",
            server_text(&text)
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
    const FORMS: &str = "Supporting content.\n";

    fn entry(skill_md: &str) -> Skill {
        serde_json::from_value(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": sha256_digest(skill_md.as_bytes()), "size": skill_md.len()},
                {"uri": "skill://pdf-processing/references/FORMS.md", "digest": sha256_digest(FORMS.as_bytes()), "size": FORMS.len()},
            ],
        }))
        .unwrap()
    }

    #[test]
    fn a_skill_md_that_matches_its_entry_loads_and_its_files_verify() {
        let skill = entry(SKILL_MD);
        let loaded = skill.verify_skill_md(SKILL_MD.as_bytes()).unwrap();
        assert_eq!(loaded.body(), "\nSkill body.\n");
        assert_eq!(loaded.skill.name(), "pdf-processing");
        skill
            .verify_file(
                "skill://pdf-processing/references/FORMS.md",
                FORMS.as_bytes(),
            )
            .unwrap();
        assert!(matches!(
            skill.verify_file("skill://pdf-processing/other.md", b""),
            Err(SkillError::NotListed { .. })
        ));
    }

    /// The conformance suite's three tamperings (sep-2640-client-verify-*), each refused.
    #[test]
    fn a_tampered_skill_md_is_refused_by_digest_size_or_frontmatter() {
        let skill = entry(SKILL_MD);
        let digest = SKILL_MD.replace("Skill body.", "Evil body!!");
        assert!(matches!(
            skill.verify_skill_md(digest.as_bytes()),
            Err(SkillError::DigestMismatch { .. })
        ));
        let size = format!("{SKILL_MD}extra bytes\n");
        assert!(matches!(
            skill.verify_skill_md(size.as_bytes()),
            Err(SkillError::SizeMismatch { expected, actual, .. }) if actual == expected + 12
        ));
        // The manifest matches the tampered file; its frontmatter does not match the entry's.
        let frontmatter = SKILL_MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let e = entry(&frontmatter)
            .verify_skill_md(frontmatter.as_bytes())
            .unwrap_err();
        assert!(matches!(e, SkillError::Frontmatter { .. }), "{e}");
        assert!(e.to_string().contains("\"description\""), "{e}");
    }

    #[test]
    fn an_entry_is_checked_before_anything_is_read() {
        let mut skill = entry(SKILL_MD);
        skill.uri = "skill://other/SKILL.md".into();
        assert!(matches!(
            skill.check(),
            Err(SkillError::InvalidEntry { .. })
        ));

        // A file outside the skill's directory, or reached through `..`, is refused.
        for outside in [
            "skill://pdf-processing-evil/x.md",
            "skill://other/SKILL.md",
            "skill://pdf-processing/../other/SKILL.md",
            "skill://pdf-processing/a/%2E%2E/%2e%2e/x.md",
            "skill://pdf-processing/",
        ] {
            let mut skill = entry(SKILL_MD);
            if let SkillResources::Files(files) = &mut skill.resources {
                files[1].uri = outside.into();
            }
            let e = skill.check().unwrap_err();
            assert!(e.to_string().contains("not within"), "{outside}: {e}");
        }

        // The name must follow the Agent Skills naming rules: an empty one does not pass.
        for (uri, name) in [
            ("skill:///SKILL.md", ""),
            ("skill://PDF/SKILL.md", "PDF"),
            ("skill://-pdf/SKILL.md", "-pdf"),
            ("skill://a--b/SKILL.md", "a--b"),
        ] {
            let mut skill = entry(SKILL_MD);
            skill.uri = uri.into();
            skill.frontmatter["name"] = json!(name);
            if let SkillResources::Files(files) = &mut skill.resources {
                files[0].uri = uri.into();
                files.truncate(1);
            }
            let e = skill.check().unwrap_err();
            assert!(e.to_string().contains("its name"), "{uri}: {e}");
        }
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert!(check_name(&"a".repeat(65)).is_err());

        let mut skill = entry(SKILL_MD);
        if let SkillResources::Files(files) = &mut skill.resources {
            files[1].size = MAX_TOTAL_SIZE;
        }
        let e = skill.check().unwrap_err();
        assert!(matches!(e, SkillError::TooLarge { files: 2, .. }), "{e}");

        let mut skill = entry(SKILL_MD);
        skill.resources = SkillResources::Dynamic;
        assert!(matches!(
            skill.verify_skill_md(SKILL_MD.as_bytes()),
            Err(SkillError::Dynamic { .. })
        ));
    }

    #[test]
    fn entries_parse_strictly() {
        let listed: ListSkillsResult = serde_json::from_value(json!({
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "skills": [{"uri": "skill://d/SKILL.md", "frontmatter": {"name": "d", "description": "x", "license": "MIT"}, "resources": "dynamic"}],
            "nextCursor": "2",
        }))
        .unwrap();
        assert_eq!(listed.skills[0].resources, SkillResources::Dynamic);
        assert_eq!(listed.skills[0].frontmatter["license"], "MIT");
        assert_eq!(listed.next_cursor.as_deref(), Some("2"));
        assert!(listed.invalid.is_empty());
        let bad = [
            (
                json!({"uri": "u", "frontmatter": {"name": "d", "description": "x"}}),
                "missing field `resources`",
            ),
            (
                json!({"uri": "u", "frontmatter": {"name": "d", "description": "x"}, "resources": "static"}),
                "`resources` is \"static\", neither a list of files nor \"dynamic\"",
            ),
            (
                json!({"uri": "u", "frontmatter": {"name": "d", "description": "x"}, "resources": 3}),
                "`resources` is a number, neither",
            ),
            (
                json!({"uri": "u", "frontmatter": {"name": "d"}, "resources": "dynamic"}),
                "the frontmatter has no string `description`",
            ),
            (
                json!({"uri": "u", "frontmatter": {"name": "d", "description": "x"},
                       "resources": [{"uri": "u", "digest": "sha256:ABC", "size": 1}]}),
                "`resources[0]`: the digest \"sha256:ABC\" is not `sha256:` and 64 lowercase",
            ),
            (
                json!({"uri": "u", "frontmatter": {"name": "d", "description": "x"},
                       "resources": [{"uri": "u", "digest": sha256_digest(b""), "size": -1}]}),
                "`resources[0]`: invalid value: integer `-1`",
            ),
        ];
        for (entry, why) in &bad {
            let e = serde_json::from_value::<Skill>(entry.clone()).unwrap_err();
            assert!(e.to_string().contains(why), "{entry}: {e}");
        }

        // On a page, each bad entry is set aside with its reason; the good ones are kept.
        let good = json!({"uri": "skill://d/SKILL.md", "frontmatter": {"name": "d", "description": "x"}, "resources": "dynamic"});
        let mut entries = vec![good.clone()];
        entries.extend(bad.iter().map(|(entry, _)| entry.clone()));
        entries.push(json!("not an object"));
        entries.push(good);
        let page: ListSkillsResult = serde_json::from_value(json!({"skills": entries})).unwrap();
        assert_eq!(page.skills.len(), 2);
        assert_eq!(page.invalid.len(), bad.len() + 1);
        for (e, (_, why)) in page.invalid.iter().zip(&bad) {
            assert!(
                matches!(e, SkillError::InvalidEntry { skill, .. } if skill == "u"),
                "{e}"
            );
            // Shown escaped, as server text is: the quotes of the reason come out as `\"`.
            let SkillError::InvalidEntry { reason, .. } = e else {
                unreachable!()
            };
            assert!(reason.contains(why), "{e}");
        }
        assert!(
            matches!(page.invalid.last(), Some(SkillError::InvalidEntry { skill, .. }) if skill == "#7")
        );
        assert!(serde_json::from_value::<ListSkillsResult>(json!({"skills": {}})).is_err());
    }

    #[test]
    fn server_text_in_a_skill_error_is_escaped() {
        let e = SkillError::NotListed {
            uri: "skill://x/\u{1b}[2J\n".into(),
        };
        let shown = e.to_string();
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\n'),
            "{shown}"
        );
    }
}
