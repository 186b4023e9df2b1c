//! What is kept of one task: [`TaskRecord`], its [`TaskStatus`] and [`TaskKey`], the
//! [`TaskUpdate`] a poll brings, and the bounds every store applies to them.
//!
//! Pure: no IO. The checks live here, not in each store, so that every [`TaskStore`] refuses
//! the same records with the same errors.
//!
//! [`TaskStore`]: super::TaskStore

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest as _, Sha256};

use super::TaskStoreError;
use crate::protocol::text::server_text;

/// The most bytes of a server name, task id, tool name, arguments digest or input request key
/// a store keeps. A task id is the server's text: one of a megabyte would be copied into every
/// row, log line and error that names the task.
pub const MAX_NAME_BYTES: usize = 1024;
/// The most bytes of a server identity (a URL, or a command line with its arguments).
pub const MAX_IDENTITY_BYTES: usize = 8 * 1024;
/// The most bytes of a status message (the server's `statusMessage`).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// The most input requests of one task recorded as answered. A server that asks more often is
/// asking in a loop; the next answer is refused rather than the oldest key forgotten, which
/// could answer it twice.
pub const MAX_ANSWERED_INPUTS: usize = 1024;
/// The most bytes of a task's outcome (a result or a JSON-RPC error object, as JSON text).
pub const MAX_OUTCOME_BYTES: usize = 16 * 1024 * 1024;

/// A task's status, as the MCP Tasks extension names them on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// The server is working on it.
    Working,
    /// The server waits for an answer to an input request (elicitation, sampling, ...).
    InputRequired,
    /// Ended with a result.
    Completed,
    /// Ended with an error.
    Failed,
    /// Ended because it was cancelled.
    Cancelled,
}

impl TaskStatus {
    /// The wire string: `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// The status a wire string names, exactly as [`as_str`](Self::as_str) writes it.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => return None,
        })
    }

    /// Whether the task has ended: `completed`, `failed` or `cancelled`. A terminal status is
    /// final: no store moves a task out of it.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which task: the server's configured name and the task id it gave.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    server: String,
    task_id: String,
}

impl TaskKey {
    /// The task `task_id` of the server configured as `server`.
    pub fn new(server: impl Into<String>, task_id: impl Into<String>) -> Self {
        TaskKey {
            server: server.into(),
            task_id: task_id.into(),
        }
    }

    /// The server's configured name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The task id the server gave.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }
}

/// `server "fs", task "t-1"`, both escaped and bounded: a task id is the server's text and
/// ends up in logs.
impl fmt::Display for TaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "server \"{}\", task \"{}\"",
            server_text(&self.server),
            server_text(&self.task_id)
        )
    }
}

/// One task as a store keeps it: where it runs, what was called, how far it got, and its
/// outcome until that is delivered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The server's configured name.
    pub server: String,
    /// What the server is, as the caller computes it (its URL, or its command line): a task
    /// is only ever polled on the server it was created on, never on another one that took
    /// the name after a configuration change.
    pub server_identity: String,
    /// The task id the server gave.
    pub task_id: String,
    /// The tool that was called.
    pub tool: String,
    /// The hex SHA-256 of the call's arguments ([`arguments_digest`]): which call this is,
    /// without keeping the arguments (they may hold secrets).
    pub arguments_digest: String,
    /// When the server created it (or, when it did not say, when we were told of it).
    pub created_at: SystemTime,
    /// How long the server keeps it from `created_at`; `None`: no limit was given.
    pub ttl: Option<Duration>,
    /// How far it got.
    pub status: TaskStatus,
    /// The server's `statusMessage`.
    pub status_message: Option<String>,
    /// How often the server asks to be polled.
    pub poll_interval: Option<Duration>,
    /// The keys of the input requests already answered: none is ever answered twice.
    pub answered_inputs: BTreeSet<String>,
    /// The terminal payload's JSON text (the result, or the JSON-RPC error object), kept until
    /// it is delivered and dropped then.
    pub outcome: Option<String>,
    /// Whether the outcome was delivered (taken with
    /// [`take_outcome`](super::TaskStore::take_outcome)).
    pub delivered: bool,
    /// When the store last changed it.
    pub updated_at: SystemTime,
}

impl TaskRecord {
    /// A task the server just created, `working`.
    pub fn new(
        server: impl Into<String>,
        server_identity: impl Into<String>,
        task_id: impl Into<String>,
        tool: impl Into<String>,
        arguments_digest: impl Into<String>,
        created_at: SystemTime,
    ) -> Self {
        TaskRecord {
            server: server.into(),
            server_identity: server_identity.into(),
            task_id: task_id.into(),
            tool: tool.into(),
            arguments_digest: arguments_digest.into(),
            created_at,
            ttl: None,
            status: TaskStatus::Working,
            status_message: None,
            poll_interval: None,
            answered_inputs: BTreeSet::new(),
            outcome: None,
            delivered: false,
            updated_at: created_at,
        }
    }

    /// With the server's `ttl`.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// With the server's `pollInterval`.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }

    /// With a status other than `working` (the server may create a task already waiting for
    /// input). A terminal one goes with its outcome ([`outcome`](Self::outcome)).
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = status;
        self
    }

    /// With the server's `statusMessage`.
    pub fn status_message(mut self, message: impl Into<String>) -> Self {
        self.status_message = Some(message.into());
        self
    }

    /// With a terminal payload (for a record whose status is terminal).
    pub fn outcome(mut self, outcome: impl Into<String>) -> Self {
        self.outcome = Some(outcome.into());
        self
    }

    /// Last changed at `at`.
    pub fn updated_at(mut self, at: SystemTime) -> Self {
        self.updated_at = at;
        self
    }

    /// Its key in a store.
    pub fn key(&self) -> TaskKey {
        TaskKey::new(self.server.clone(), self.task_id.clone())
    }

    /// When the server forgets it: `created_at + ttl`. `None` without a ttl, or when the sum
    /// is past what a `SystemTime` holds (then it never expires).
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.created_at.checked_add(self.ttl?)
    }

    /// Why a store refuses it, if it does: a field over its bound, a time it cannot represent,
    /// or parts that contradict each other (an outcome, or a delivery, before the end).
    pub(crate) fn check(&self) -> Result<(), TaskStoreError> {
        bounded("server name", &self.server, MAX_NAME_BYTES)?;
        bounded("task id", &self.task_id, MAX_NAME_BYTES)?;
        bounded("tool name", &self.tool, MAX_NAME_BYTES)?;
        bounded("arguments digest", &self.arguments_digest, MAX_NAME_BYTES)?;
        bounded("server identity", &self.server_identity, MAX_IDENTITY_BYTES)?;
        if let Some(message) = &self.status_message {
            bounded("status message", message, MAX_MESSAGE_BYTES)?;
        }
        if let Some(outcome) = &self.outcome {
            bounded("outcome", outcome, MAX_OUTCOME_BYTES)?;
        }
        if self.answered_inputs.len() > MAX_ANSWERED_INPUTS {
            return Err(TaskStoreError::TooLarge {
                what: "answered input requests",
                limit: MAX_ANSWERED_INPUTS,
            });
        }
        for key in &self.answered_inputs {
            bounded("input request key", key, MAX_NAME_BYTES)?;
        }
        time_nanos("created_at", self.created_at)?;
        time_nanos("updated_at", self.updated_at)?;
        if let Some(ttl) = self.ttl {
            duration_nanos("ttl", ttl)?;
        }
        if let Some(interval) = self.poll_interval {
            duration_nanos("poll interval", interval)?;
        }
        if !self.status.is_terminal() && (self.outcome.is_some() || self.delivered) {
            return Err(TaskStoreError::Invalid {
                what: "record",
                why: "only an ended task has an outcome or is delivered",
            });
        }
        Ok(())
    }
}

/// What a poll (`tasks/get`, or a status notification) tells of a task that has not ended.
/// Fields left `None` are not changed. A terminal status is not an update: it is stored with
/// its outcome by [`finish`](super::TaskStore::finish).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskUpdate {
    /// The new status: `working` or `input_required`.
    pub status: Option<TaskStatus>,
    /// `Some(None)` clears the message (the server sent none with its new status),
    /// `Some(Some(m))` sets it.
    pub status_message: Option<Option<String>>,
    /// The new poll interval.
    pub poll_interval: Option<Duration>,
    /// The new ttl.
    pub ttl: Option<Duration>,
}

impl TaskUpdate {
    /// An update that changes nothing yet.
    pub fn new() -> Self {
        TaskUpdate::default()
    }

    /// Sets the status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the status message.
    pub fn status_message(mut self, message: impl Into<String>) -> Self {
        self.status_message = Some(Some(message.into()));
        self
    }

    /// Clears the status message.
    pub fn no_status_message(mut self) -> Self {
        self.status_message = Some(None);
        self
    }

    /// Sets the poll interval.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }

    /// Sets the ttl.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Why a store refuses it, if it does.
    pub(crate) fn check(&self) -> Result<(), TaskStoreError> {
        if self.status.is_some_and(TaskStatus::is_terminal) {
            return Err(TaskStoreError::Invalid {
                what: "update",
                why: "a terminal status is stored with its outcome by `finish`",
            });
        }
        if let Some(Some(message)) = &self.status_message {
            bounded("status message", message, MAX_MESSAGE_BYTES)?;
        }
        if let Some(ttl) = self.ttl {
            duration_nanos("ttl", ttl)?;
        }
        if let Some(interval) = self.poll_interval {
            duration_nanos("poll interval", interval)?;
        }
        Ok(())
    }

    /// Applies it to `record`, which has not ended. Stamps `updated_at` with `now`.
    pub(crate) fn apply(&self, record: &mut TaskRecord, now: SystemTime) {
        if let Some(status) = self.status {
            record.status = status;
        }
        if let Some(message) = &self.status_message {
            record.status_message.clone_from(message);
        }
        if let Some(interval) = self.poll_interval {
            record.poll_interval = Some(interval);
        }
        if let Some(ttl) = self.ttl {
            record.ttl = Some(ttl);
        }
        record.updated_at = now;
    }
}

/// `text` if it has at most `limit` bytes.
pub(crate) fn bounded(what: &'static str, text: &str, limit: usize) -> Result<(), TaskStoreError> {
    if text.len() > limit {
        return Err(TaskStoreError::TooLarge { what, limit });
    }
    // PostgreSQL's text cannot hold one, and the stores must not differ: none keeps it.
    if text.contains('\0') {
        return Err(TaskStoreError::Invalid {
            what,
            why: "a NUL character is not stored",
        });
    }
    Ok(())
}

/// `at` as signed nanoseconds since the Unix epoch: how stores keep times, exactly (a record
/// read back equals the one written). Holds the years 1677 to 2262; others are refused.
pub(crate) fn time_nanos(what: &'static str, at: SystemTime) -> Result<i64, TaskStoreError> {
    let nanos = match at.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).ok(),
        Err(before) => i64::try_from(before.duration().as_nanos()).ok().map(|n| -n),
    };
    nanos.ok_or(TaskStoreError::Invalid {
        what,
        why: "a time outside the years 1677 to 2262 is not stored",
    })
}

/// The time [`time_nanos`] gave `nanos` for. (Only a store that encodes times needs it.)
#[cfg(any(feature = "sqlite", feature = "postgres", test))]
pub(crate) fn time_from_nanos(nanos: i64) -> Option<SystemTime> {
    let magnitude = Duration::from_nanos(nanos.unsigned_abs());
    if nanos >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    }
}

/// `duration` as nanoseconds in an `i64` (up to 292 years); a longer one is refused.
pub(crate) fn duration_nanos(
    what: &'static str,
    duration: Duration,
) -> Result<i64, TaskStoreError> {
    i64::try_from(duration.as_nanos()).map_err(|_| TaskStoreError::Invalid {
        what,
        why: "a duration over 292 years is not stored",
    })
}

/// The duration [`duration_nanos`] gave `nanos` for; `None` if negative.
#[cfg(any(feature = "sqlite", feature = "postgres", test))]
pub(crate) fn duration_from_nanos(nanos: i64) -> Option<Duration> {
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

/// The lowercase hex SHA-256 of `arguments` in a canonical form, so that the same arguments
/// give the same digest however their object keys were ordered.
///
/// The canonical form is compact JSON with every object's keys sorted by their UTF-8 bytes,
/// strings escaped and numbers written as `serde_json` writes them (so `1` and `1.0` differ).
/// It is this crate's own, not RFC 8785: digests are only compared with digests made here.
///
/// ```
/// use mcp_supervisor::tasks::arguments_digest;
/// use serde_json::json;
///
/// let a = arguments_digest(&json!({"path": "/srv/a.txt", "mode": "r"}));
/// let b = arguments_digest(&json!({"mode": "r", "path": "/srv/a.txt"}));
/// assert_eq!(a, b);
/// assert_eq!(a.len(), 64);
/// ```
pub fn arguments_digest(arguments: &serde_json::Value) -> String {
    use serde_json::Value;

    /// What is left to write: a value, a fixed piece of syntax, or an object's key.
    enum Step<'a> {
        Value(&'a Value),
        Raw(&'static str),
        Key(&'a str),
    }

    let mut hasher = HashWriter(Sha256::new());
    // A stack instead of recursion: a value built in code can be nested deeper than any stack.
    let mut steps = vec![Step::Value(arguments)];
    while let Some(step) = steps.pop() {
        match step {
            Step::Raw(text) => hasher.0.update(text.as_bytes()),
            Step::Key(key) => {
                hasher.string(key);
                hasher.0.update(b":");
            }
            Step::Value(Value::Null) => hasher.0.update(b"null"),
            Step::Value(Value::Bool(b)) => hasher.0.update(if *b { "true" } else { "false" }),
            Step::Value(Value::Number(n)) => hasher.0.update(n.to_string().as_bytes()),
            Step::Value(Value::String(s)) => hasher.string(s),
            Step::Value(Value::Array(items)) => {
                hasher.0.update(b"[");
                steps.push(Step::Raw("]"));
                for (i, item) in items.iter().enumerate().rev() {
                    steps.push(Step::Value(item));
                    if i > 0 {
                        steps.push(Step::Raw(","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                hasher.0.update(b"{");
                steps.push(Step::Raw("}"));
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (i, (key, value)) in entries.into_iter().enumerate().rev() {
                    steps.push(Step::Value(value));
                    steps.push(Step::Key(key));
                    if i > 0 {
                        steps.push(Step::Raw(","));
                    }
                }
            }
        }
    }
    let digest = hasher.0.finalize();
    let mut text = String::with_capacity(64);
    for byte in digest.iter() {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 15)]));
    }
    text
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The hasher as an `io::Write`, so that serde_json escapes strings straight into it.
struct HashWriter(Sha256);

impl HashWriter {
    /// `text` as a JSON string literal.
    fn string(&mut self, text: &str) {
        // Cannot fail: a `str` always serializes, and this writer never refuses.
        let _ = serde_json::to_writer(&mut *self, text);
    }
}

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_strings_round_trip() {
        for status in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert_eq!(TaskStatus::parse(status.as_str()), Some(status));
            assert_eq!(status.to_string(), status.as_str());
        }
        assert_eq!(TaskStatus::parse("Working"), None);
        assert_eq!(TaskStatus::parse("done"), None);
        assert!(TaskStatus::Cancelled.is_terminal());
        assert!(!TaskStatus::InputRequired.is_terminal());
    }

    #[test]
    fn the_digest_ignores_key_order_only() {
        let a = arguments_digest(&json!({"b": [1, {"y": null, "x": true}], "a": "é\n"}));
        let b = arguments_digest(&json!({"a": "é\n", "b": [1, {"x": true, "y": null}]}));
        assert_eq!(a, b);
        assert_ne!(
            a,
            arguments_digest(&json!({"a": "é\n", "b": [{"x": true, "y": null}, 1]}))
        );
        assert_ne!(arguments_digest(&json!(1)), arguments_digest(&json!(1.0)));
        assert_ne!(arguments_digest(&json!("1")), arguments_digest(&json!(1)));
        // The SHA-256 of the canonical text itself.
        assert_eq!(
            arguments_digest(&json!({"b": 1, "a": [true, "x"]})),
            hex_sha256(br#"{"a":[true,"x"],"b":1}"#)
        );
        assert_eq!(arguments_digest(&json!({})), hex_sha256(b"{}"));
        assert_eq!(arguments_digest(&json!([])), hex_sha256(b"[]"));
    }

    #[test]
    fn a_deep_value_is_digested_without_recursion() {
        let mut value = json!(0);
        for _ in 0..100_000 {
            value = serde_json::Value::Array(vec![value]);
        }
        assert_eq!(arguments_digest(&value).len(), 64);
        // serde_json drops a value recursively: take it apart by hand.
        let mut next = Some(value);
        while let Some(serde_json::Value::Array(mut items)) = next {
            next = items.pop();
        }
    }

    fn hex_sha256(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn expiry_is_checked() {
        let at = UNIX_EPOCH + Duration::from_secs(1000);
        let record = TaskRecord::new("s", "id", "t", "tool", "d", at);
        assert_eq!(record.expires_at(), None);
        let record = record.ttl(Duration::from_secs(5));
        assert_eq!(record.expires_at(), Some(at + Duration::from_secs(5)));
        let record = record.ttl(Duration::MAX);
        assert_eq!(record.expires_at(), None, "past what a SystemTime holds");
    }

    #[test]
    fn times_are_kept_exactly_within_their_range() {
        let at = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let n = time_nanos("t", at).unwrap();
        assert_eq!(time_from_nanos(n), Some(at));
        let before = UNIX_EPOCH - Duration::new(5, 7);
        assert_eq!(
            time_from_nanos(time_nanos("t", before).unwrap()),
            Some(before)
        );
        let far = UNIX_EPOCH + Duration::from_secs(400 * 365 * 86_400);
        assert!(matches!(
            time_nanos("t", far),
            Err(TaskStoreError::Invalid { what: "t", .. })
        ));
        assert!(duration_nanos("ttl", Duration::MAX).is_err());
        assert_eq!(duration_from_nanos(-1), None);
        assert_eq!(
            duration_from_nanos(duration_nanos("d", Duration::new(3, 4)).unwrap()),
            Some(Duration::new(3, 4))
        );
    }

    #[test]
    fn checks_name_what_is_too_large() {
        let at = UNIX_EPOCH;
        let ok = TaskRecord::new("s", "i", "id", "tool", "d", at);
        assert!(ok.check().is_ok());
        let long = "x".repeat(MAX_NAME_BYTES + 1);
        let e = TaskRecord::new("s", "i", long.as_str(), "tool", "d", at)
            .check()
            .unwrap_err();
        assert!(
            matches!(
                e,
                TaskStoreError::TooLarge {
                    what: "task id",
                    limit: MAX_NAME_BYTES
                }
            ),
            "{e}"
        );
        let e = ok
            .clone()
            .status_message("m".repeat(MAX_MESSAGE_BYTES + 1))
            .check()
            .unwrap_err();
        assert!(
            matches!(
                e,
                TaskStoreError::TooLarge {
                    what: "status message",
                    ..
                }
            ),
            "{e}"
        );
        let e = ok.clone().outcome("{}").check().unwrap_err();
        assert!(matches!(e, TaskStoreError::Invalid { .. }), "{e}");
        assert!(ok
            .clone()
            .status(TaskStatus::Failed)
            .outcome("{}")
            .check()
            .is_ok());
        assert!(TaskUpdate::new()
            .status(TaskStatus::Completed)
            .check()
            .is_err());
    }

    #[test]
    fn a_key_shows_escaped() {
        let key = TaskKey::new("fs", "a\nb");
        assert_eq!(key.to_string(), "server \"fs\", task \"a\\nb\"");
    }
}
