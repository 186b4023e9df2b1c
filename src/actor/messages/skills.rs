//! Loading a skill (SEP-2640) and reading its files: a `resources/read` whose answer is
//! verified against the skill's entry before the caller sees it (see [`skills`](crate::skills)).
//! Both are answered by the [`Supervisor`](crate::Supervisor), which checks the entry, sends
//! the read to the server's actor, and verifies the content.

use actix::prelude::*;

use super::CallOptions;
use crate::error::Error;
use crate::skills::{LoadedSkill, Skill, SkillError, SkillFileContent};

/// Loads a skill: checks its entry ([`Skill::check`]), reads its `SKILL.md` with
/// `resources/read`, and verifies it: size, SHA-256 digest, and frontmatter (parsed as YAML and
/// compared field by field with the entry's). Nothing is read when the entry is refused. A
/// failure is an [`invalid_response`](crate::ErrorKind::InvalidResponse) error that says what
/// did not match; the content is not handed out.
///
/// ```
/// use mcp_supervisor::LoadSkill;
/// use mcp_supervisor::skills::{sha256_digest, Skill};
/// use std::time::Duration;
///
/// let text = "---\nname: pdf\ndescription: Work with PDFs\n---\nUse the forms.\n";
/// let skill: Skill = serde_json::from_value(serde_json::json!({
///     "uri": "skill://pdf/SKILL.md",
///     "frontmatter": {"name": "pdf", "description": "Work with PDFs"},
///     "resources": [{"uri": "skill://pdf/SKILL.md",
///                    "digest": sha256_digest(text.as_bytes()), "size": text.len()}],
/// }))?;
/// let load = LoadSkill::new("docs", skill).timeout(Duration::from_secs(5));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LoadSkill {
    /// Server name: the server the entry came from.
    pub server: String,
    /// The skill's entry, from `skills/list` or `skills/get` of that server.
    pub skill: Skill,
    /// Timeout, retry policy, progress of the read.
    pub options: CallOptions,
}

impl LoadSkill {
    /// Loads `skill`, an entry of `server`'s.
    pub fn new(server: impl Into<String>, skill: Skill) -> Self {
        LoadSkill {
            server: server.into(),
            skill,
            options: CallOptions::here(),
        }
    }
}

call_options!(LoadSkill);

impl Message for LoadSkill {
    type Result = Result<LoadedSkill, Error>;
}

/// Reads one file of a loaded skill, resolved only against the entry it was loaded with: a URI
/// its manifest does not list is refused without a read, and the content read is verified
/// against the manifest's size and digest. A failure is an
/// [`invalid_response`](crate::ErrorKind::InvalidResponse) error; the content is not handed out.
///
/// A file comes in one `resources/read` answer, which must fit in the settings'
/// `max_message_bytes` (16 MiB by default): a binary file comes as Base64 (4 bytes for every
/// 3) inside JSON, so one over about 12 MiB cannot be read with the default, though the
/// extension lets a skill's files add up to 16 MiB ([`MAX_TOTAL_SIZE`](crate::skills::MAX_TOTAL_SIZE)),
/// and a text file near 16 MiB cannot either once JSON escapes it. Raise `max_message_bytes`
/// for servers with such files.
///
/// ```
/// # fn f(loaded: mcp_supervisor::skills::LoadedSkill) {
/// use mcp_supervisor::ReadSkillFile;
///
/// let uri = "skill://pdf-processing/references/FORMS.md";
/// let read = ReadSkillFile::new("docs", loaded.skill, uri);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ReadSkillFile {
    /// Server name: the server the entry came from.
    pub server: String,
    /// The entry the skill was loaded with ([`LoadedSkill::skill`]).
    pub skill: Skill,
    /// The file's URI, as the manifest lists it.
    pub uri: String,
    /// Timeout, retry policy, progress of the read.
    pub options: CallOptions,
}

impl ReadSkillFile {
    /// Reads `uri` of `skill`, an entry of `server`'s.
    pub fn new(server: impl Into<String>, skill: Skill, uri: impl Into<String>) -> Self {
        ReadSkillFile {
            server: server.into(),
            skill,
            uri: uri.into(),
            options: CallOptions::here(),
        }
    }
}

call_options!(ReadSkillFile);

impl Message for ReadSkillFile {
    type Result = Result<SkillFileContent, Error>;
}

/// The error a caller gets for a skill that failed its checks: `method` is the read that
/// brought the content, or `skill entry` when the entry was refused before any read.
pub(crate) fn refused(server: &str, method: &str, e: &SkillError) -> Error {
    Error::invalid_response(server, method, format!("skill verification failed: {e}"))
}
