//! [`SqliteTaskStore`] (feature `sqlite`): task records in an SQLite database file, so that
//! they outlive this process.
//!
//! Crash safety is SQLite's: every [`TaskStore`] method is one transaction, committed before
//! it returns, in WAL mode with `synchronous=FULL` (the commit is on disk, not only in the
//! page cache: a power cut keeps it too). A process killed at any instant leaves the
//! database as it was before a method or after it. The read-modify-write methods start with
//! `BEGIN IMMEDIATE`, which takes the write lock before reading, so that two processes (or
//! two stores on one file) cannot both read a task as undelivered and both deliver it.
//!
//! Times and durations are stored as signed 64-bit nanoseconds (exactly what was written
//! reads back); answered input keys as a JSON array of strings. The schema is versioned with
//! `PRAGMA user_version` and migrated, in one transaction, when the store is opened.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use rusqlite::types::Value;
use rusqlite::{
    params, Connection, ErrorCode, OpenFlags, OptionalExtension as _, TransactionBehavior,
};

use super::record::{
    duration_from_nanos, duration_nanos, time_from_nanos, time_nanos, MAX_ANSWERED_INPUTS,
};
use super::store::{check_finish, check_input_key, purge_due, too_many_inputs, DEFAULT_MAX_TASKS};
use super::{TaskKey, TaskRecord, TaskStatus, TaskStore, TaskStoreError, TaskUpdate};

/// How long a method waits for another connection's write lock before it fails with a
/// [`Database`](TaskStoreError::Database) error that says the file is locked.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema, one step per version: step `i` takes a database from version `i` to `i + 1`.
/// Steps are only ever appended. Each is idempotent too (`IF NOT EXISTS`), so a database
/// whose version was not recorded is brought up without harm.
const MIGRATIONS: &[&str] = &[
    // Version 1. Times and durations in nanoseconds; `answered_inputs` a JSON array of
    // strings; `delivered` 0 or 1. A rowid table (not WITHOUT ROWID): outcomes can be large.
    "CREATE TABLE IF NOT EXISTS tasks (
        server           TEXT    NOT NULL,
        task_id          TEXT    NOT NULL,
        server_identity  TEXT    NOT NULL,
        tool             TEXT    NOT NULL,
        arguments_digest TEXT    NOT NULL,
        created_at       INTEGER NOT NULL,
        ttl              INTEGER,
        status           TEXT    NOT NULL,
        status_message   TEXT,
        poll_interval    INTEGER,
        answered_inputs  TEXT    NOT NULL,
        outcome          TEXT,
        delivered        INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL,
        PRIMARY KEY (server, task_id)
    );
    CREATE INDEX IF NOT EXISTS tasks_by_created ON tasks (created_at, server, task_id);",
];

/// The columns of a record, in the order [`parse`] reads them.
const COLUMNS: &str = "server, task_id, server_identity, tool, arguments_digest, created_at, \
                       ttl, status, status_message, poll_interval, answered_inputs, outcome, \
                       delivered, updated_at";
const COLUMN_COUNT: usize = 14;

/// A [`TaskStore`] in an SQLite database file.
///
/// ```
/// use mcp_supervisor::tasks::{arguments_digest, SqliteTaskStore, TaskRecord, TaskStore};
/// use serde_json::json;
/// use std::time::SystemTime;
///
/// let dir = std::env::temp_dir().join(format!("mcp-tasks-doc-{}", std::process::id()));
/// let path = dir.join("tasks.sqlite3");
/// let store = SqliteTaskStore::open(&path)?;
/// let record = TaskRecord::new(
///     "fs",
///     "npx -y @modelcontextprotocol/server-filesystem /srv",
///     "task-1",
///     "read_text_file",
///     arguments_digest(&json!({"path": "/srv/a.txt"})),
///     SystemTime::now(),
/// );
/// store.insert(&record)?;
/// drop(store);
///
/// // After a restart: the task is there to be polled again.
/// let store = SqliteTaskStore::open(&path)?;
/// assert_eq!(store.list(Some("fs"))?, vec![record]);
/// # drop(store);
/// # std::fs::remove_dir_all(dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteTaskStore {
    /// Behind a mutex: a connection is `Send` but not `Sync`, and one transaction at a time
    /// is what SQLite does on one connection anyway.
    conn: Mutex<Connection>,
    /// Where the file is; `None` in memory.
    path: Option<PathBuf>,
    max_tasks: usize,
}

impl std::fmt::Debug for SqliteTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTaskStore")
            .field("path", &self.shown_path())
            .field("max_tasks", &self.max_tasks)
            .finish()
    }
}

impl SqliteTaskStore {
    /// Opens the store at `path`, creating it (readable by its owner only, `0600`) and its
    /// directory (`0700`) if missing, and bringing its schema up to date. Fails, saying why
    /// and where, when the file cannot be created or opened, is not an SQLite database, is
    /// locked past [`BUSY_TIMEOUT`], or was written by a newer version of this crate.
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteTaskStore, TaskStoreError> {
        let path = path.into();
        let io = |what: &str, e: std::io::Error| TaskStoreError::Io {
            path: path.display().to_string(),
            message: format!("{what}: {e}"),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|e| io("its directory cannot be created", e))?;
        }
        // Created here rather than by SQLite so that it is the owner's alone from the start:
        // results can be private. SQLite gives its -wal and -shm files the same mode.
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options
            .open(&path)
            .map_err(|e| io("the file cannot be opened for writing", e))?;
        // No URI flag: a path is a path, even one that starts with `file:`. No SQLite mutex:
        // ours serializes the use of the connection.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let shown = path.display().to_string();
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| db_error(&shown, e))?;
        let store = SqliteTaskStore {
            conn: Mutex::new(conn),
            path: Some(path),
            max_tasks: DEFAULT_MAX_TASKS,
        };
        store.prepare()?;
        Ok(store)
    }

    /// A store in memory, gone when it is dropped: for tests.
    pub fn in_memory() -> Result<SqliteTaskStore, TaskStoreError> {
        let conn = Connection::open_in_memory().map_err(|e| db_error(":memory:", e))?;
        let store = SqliteTaskStore {
            conn: Mutex::new(conn),
            path: None,
            max_tasks: DEFAULT_MAX_TASKS,
        };
        store.prepare()?;
        Ok(store)
    }

    /// Keeps at most `max` tasks (at least one); [`DEFAULT_MAX_TASKS`] otherwise. A full
    /// store forgets its oldest delivered task for a new one, and refuses the new one when
    /// none is delivered.
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max.max(1);
        self
    }

    /// Where the file is; `None` for a store in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn shown_path(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => ":memory:".to_owned(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held cannot have left a transaction open: dropping a
        // rusqlite `Transaction` rolls it back.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn db(&self, e: rusqlite::Error) -> TaskStoreError {
        db_error(&self.shown_path(), e)
    }

    /// The connection's settings, then the schema.
    fn prepare(&self) -> Result<(), TaskStoreError> {
        let mut conn = self.lock();
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| self.db(e))?;
        // WAL: a commit appends to the log, and a crash at any point leaves the last commit
        // whole. A database in memory answers `memory`, which is all it can be.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| self.db(e))?;
        if !mode.eq_ignore_ascii_case("wal") && self.path.is_some() {
            return Err(TaskStoreError::Database {
                path: self.shown_path(),
                message: format!(
                    "the database cannot use a write-ahead log (journal mode stays {mode:?}): \
                     is the file on a network file system?"
                ),
            });
        }
        // FULL: the log is synced at every commit, so what a method returned `Ok` for
        // survives a power cut, not only a crash of this process.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| self.db(e))?;
        self.migrate(&mut conn)
    }

    /// Brings the schema to the newest version, in one transaction.
    fn migrate(&self, conn: &mut Connection) -> Result<(), TaskStoreError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(e))?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.db(e))?;
        let known = MIGRATIONS.len();
        let from = usize::try_from(version).map_err(|_| TaskStoreError::Database {
            path: self.shown_path(),
            message: format!("its schema version {version} is not one this crate writes"),
        })?;
        if from > known {
            return Err(TaskStoreError::Database {
                path: self.shown_path(),
                message: format!(
                    "it was written by a newer version of mcp-supervisor (schema version \
                     {from}; this one knows up to {known}): it is left untouched"
                ),
            });
        }
        for step in &MIGRATIONS[from..] {
            tx.execute_batch(step).map_err(|e| self.db(e))?;
        }
        if from < known {
            let version = i64::try_from(known).unwrap_or(i64::MAX);
            tx.pragma_update(None, "user_version", version)
                .map_err(|e| self.db(e))?;
        }
        tx.commit().map_err(|e| self.db(e))
    }

    /// Runs `f` in one transaction that takes the write lock first, and commits it.
    fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, TaskStoreError>,
    ) -> Result<T, TaskStoreError> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(e))?;
        // An error drops `tx` uncommitted, which rolls it back.
        let value = f(&tx)?;
        tx.commit().map_err(|e| self.db(e))?;
        Ok(value)
    }

    /// The record of `key`, read on `conn`.
    fn load(&self, conn: &Connection, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        let values = conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM tasks WHERE server = ?1 AND task_id = ?2"),
                params![key.server(), key.task_id()],
                row_values,
            )
            .optional()
            .map_err(|e| self.db(e))?;
        values.map(parse).transpose()
    }

    /// The status of `key` and whether it was delivered, without reading its outcome.
    fn state(
        &self,
        conn: &Connection,
        key: &TaskKey,
    ) -> Result<Option<(TaskStatus, bool)>, TaskStoreError> {
        let row = conn
            .query_row(
                "SELECT status, delivered FROM tasks WHERE server = ?1 AND task_id = ?2",
                params![key.server(), key.task_id()],
                |row| Ok((row.get::<_, Value>(0)?, row.get::<_, Value>(1)?)),
            )
            .optional()
            .map_err(|e| self.db(e))?;
        let Some((status, delivered)) = row else {
            return Ok(None);
        };
        let c = Columns { key };
        let status = c.status(status)?;
        let delivered = c.flag("delivered", delivered)?;
        Ok(Some((status, delivered)))
    }
}

impl TaskStore for SqliteTaskStore {
    fn insert(&self, record: &TaskRecord) -> Result<bool, TaskStoreError> {
        record.check()?;
        let key = record.key();
        let answered = answered_json(record)?;
        self.write(|tx| {
            if let Some(stored) = self.load(tx, &key)? {
                return if &stored == record {
                    Ok(false)
                } else {
                    Err(TaskStoreError::Exists { key })
                };
            }
            let count: i64 = tx
                .query_row("SELECT COUNT(*) FROM tasks", [], |row| row.get(0))
                .map_err(|e| self.db(e))?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= self.max_tasks {
                let evicted = tx
                    .execute(
                        "DELETE FROM tasks WHERE rowid = (SELECT rowid FROM tasks \
                         WHERE delivered = 1 ORDER BY updated_at, server, task_id LIMIT 1)",
                        [],
                    )
                    .map_err(|e| self.db(e))?;
                if evicted == 0 {
                    return Err(TaskStoreError::TooLarge {
                        what: "tasks",
                        limit: self.max_tasks,
                    });
                }
            }
            tx.execute(
                &format!(
                    "INSERT INTO tasks ({COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
                ),
                params![
                    record.server,
                    record.task_id,
                    record.server_identity,
                    record.tool,
                    record.arguments_digest,
                    time_nanos("created_at", record.created_at)?,
                    record.ttl.map(|d| duration_nanos("ttl", d)).transpose()?,
                    record.status.as_str(),
                    record.status_message,
                    record
                        .poll_interval
                        .map(|d| duration_nanos("poll interval", d))
                        .transpose()?,
                    answered,
                    record.outcome,
                    record.delivered,
                    time_nanos("updated_at", record.updated_at)?,
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(true)
        })
    }

    fn update(&self, key: &TaskKey, change: &TaskUpdate) -> Result<bool, TaskStoreError> {
        change.check()?;
        self.write(|tx| {
            let (status, _) = self.state(tx, key)?.ok_or_else(|| not_found(key))?;
            if status.is_terminal() {
                return Ok(false);
            }
            let mut record = self.load(tx, key)?.ok_or_else(|| not_found(key))?;
            change.apply(&mut record, SystemTime::now());
            tx.execute(
                "UPDATE tasks SET status = ?3, status_message = ?4, poll_interval = ?5, \
                 ttl = ?6, updated_at = ?7 WHERE server = ?1 AND task_id = ?2",
                params![
                    key.server(),
                    key.task_id(),
                    record.status.as_str(),
                    record.status_message,
                    record
                        .poll_interval
                        .map(|d| duration_nanos("poll interval", d))
                        .transpose()?,
                    record.ttl.map(|d| duration_nanos("ttl", d)).transpose()?,
                    time_nanos("updated_at", record.updated_at)?,
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(true)
        })
    }

    fn mark_input_answered(&self, key: &TaskKey, input_key: &str) -> Result<bool, TaskStoreError> {
        check_input_key(input_key)?;
        self.write(|tx| {
            let (status, _) = self.state(tx, key)?.ok_or_else(|| not_found(key))?;
            if status.is_terminal() {
                return Ok(false);
            }
            let mut record = self.load(tx, key)?.ok_or_else(|| not_found(key))?;
            if record.answered_inputs.contains(input_key) {
                return Ok(false);
            }
            if record.answered_inputs.len() >= MAX_ANSWERED_INPUTS {
                return Err(too_many_inputs());
            }
            record.answered_inputs.insert(input_key.to_owned());
            tx.execute(
                "UPDATE tasks SET answered_inputs = ?3, updated_at = ?4 \
                 WHERE server = ?1 AND task_id = ?2",
                params![
                    key.server(),
                    key.task_id(),
                    answered_json(&record)?,
                    time_nanos("updated_at", SystemTime::now())?,
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(true)
        })
    }

    fn finish(
        &self,
        key: &TaskKey,
        status: TaskStatus,
        outcome: Option<&str>,
    ) -> Result<bool, TaskStoreError> {
        check_finish(status, outcome)?;
        self.write(|tx| {
            let (stored, _) = self.state(tx, key)?.ok_or_else(|| not_found(key))?;
            if stored.is_terminal() {
                return Ok(false);
            }
            tx.execute(
                "UPDATE tasks SET status = ?3, outcome = ?4, updated_at = ?5 \
                 WHERE server = ?1 AND task_id = ?2",
                params![
                    key.server(),
                    key.task_id(),
                    status.as_str(),
                    outcome,
                    time_nanos("updated_at", SystemTime::now())?,
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(true)
        })
    }

    fn take_outcome(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        self.write(|tx| {
            match self.state(tx, key)? {
                Some((status, false)) if status.is_terminal() => {}
                _ => return Ok(None),
            }
            let Some(mut record) = self.load(tx, key)? else {
                return Ok(None);
            };
            let now = SystemTime::now();
            // The store keeps no copy of a delivered outcome: it is owed to nobody any more.
            tx.execute(
                "UPDATE tasks SET delivered = 1, outcome = NULL, updated_at = ?3 \
                 WHERE server = ?1 AND task_id = ?2",
                params![key.server(), key.task_id(), time_nanos("updated_at", now)?],
            )
            .map_err(|e| self.db(e))?;
            record.delivered = true;
            record.updated_at = now;
            Ok(Some(record))
        })
    }

    fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        let conn = self.lock();
        self.load(&conn, key)
    }

    fn list(&self, server: Option<&str>) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let conn = self.lock();
        let limit = i64::try_from(self.max_tasks).unwrap_or(i64::MAX);
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE ?1 IS NULL OR server = ?1 \
                 ORDER BY created_at, server, task_id LIMIT ?2"
            ))
            .map_err(|e| self.db(e))?;
        let rows = stmt
            .query_map(params![server, limit], row_values)
            .map_err(|e| self.db(e))?;
        let mut records = Vec::new();
        for values in rows {
            records.push(parse(values.map_err(|e| self.db(e))?)?);
        }
        Ok(records)
    }

    fn remove(&self, key: &TaskKey) -> Result<bool, TaskStoreError> {
        let conn = self.lock();
        let removed = conn
            .execute(
                "DELETE FROM tasks WHERE server = ?1 AND task_id = ?2",
                params![key.server(), key.task_id()],
            )
            .map_err(|e| self.db(e))?;
        Ok(removed > 0)
    }

    fn purge(&self, now: SystemTime) -> Result<usize, TaskStoreError> {
        self.write(|tx| {
            // Decided in Rust with the memory store's rule, not in SQL: the same checked
            // arithmetic, no integer overflow turning into floating point.
            let mut stmt = tx
                .prepare(
                    "SELECT rowid, server, task_id, created_at, ttl, delivered, updated_at \
                     FROM tasks",
                )
                .map_err(|e| self.db(e))?;
            let rows = stmt
                .query_map([], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        (0..6)
                            .map(|i| row.get::<_, Value>(i + 1))
                            .collect::<rusqlite::Result<Vec<Value>>>()?,
                    ))
                })
                .map_err(|e| self.db(e))?;
            let mut doomed = Vec::new();
            for row in rows {
                let (rowid, values) = row.map_err(|e| self.db(e))?;
                let mut values = values.into_iter();
                let mut next = || values.next().unwrap_or(Value::Null);
                let key = key_of(next(), next());
                let columns = Columns { key: &key };
                let created_at = columns.time("created_at", next())?;
                let ttl = columns.opt_duration("ttl", next())?;
                let delivered = columns.flag("delivered", next())?;
                let updated_at = columns.time("updated_at", next())?;
                if purge_due(created_at, ttl, delivered, updated_at, now) {
                    doomed.push(rowid);
                }
            }
            drop(stmt);
            for rowid in &doomed {
                tx.execute("DELETE FROM tasks WHERE rowid = ?1", [rowid])
                    .map_err(|e| self.db(e))?;
            }
            Ok(doomed.len())
        })
    }
}

fn not_found(key: &TaskKey) -> TaskStoreError {
    TaskStoreError::NotFound { key: key.clone() }
}

/// The answered input keys as the JSON array stored.
fn answered_json(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(&record.answered_inputs).map_err(|_| TaskStoreError::Invalid {
        what: "answered input requests",
        why: "they do not serialize",
    })
}

/// A row's columns as values of whatever type the file holds, for [`parse`] to check.
fn row_values(row: &rusqlite::Row<'_>) -> rusqlite::Result<Vec<Value>> {
    (0..COLUMN_COUNT).map(|i| row.get::<_, Value>(i)).collect()
}

/// A stored row as a record, or [`Corrupt`](TaskStoreError::Corrupt) naming its key and the
/// column that does not read.
fn parse(values: Vec<Value>) -> Result<TaskRecord, TaskStoreError> {
    let mut values = values.into_iter();
    let mut next = || values.next().unwrap_or(Value::Null);
    let (server, task_id) = (next(), next());
    let key = key_of(server, task_id);
    let c = Columns { key: &key };
    let server_identity = c.text("server_identity", next())?;
    let tool = c.text("tool", next())?;
    let arguments_digest = c.text("arguments_digest", next())?;
    let created_at = c.time("created_at", next())?;
    let ttl = c.opt_duration("ttl", next())?;
    let status = c.status(next())?;
    let status_message = c.opt_text("status_message", next())?;
    let poll_interval = c.opt_duration("poll_interval", next())?;
    let answered = c.text("answered_inputs", next())?;
    let answered_inputs = serde_json::from_str(&answered).map_err(|e| {
        c.corrupt(format!(
            "column answered_inputs is not a JSON array of strings: {e}"
        ))
    })?;
    let outcome = c.opt_text("outcome", next())?;
    let delivered = c.flag("delivered", next())?;
    let updated_at = c.time("updated_at", next())?;
    let record = TaskRecord {
        server: key.server().to_owned(),
        server_identity,
        task_id: key.task_id().to_owned(),
        tool,
        arguments_digest,
        created_at,
        ttl,
        status,
        status_message,
        poll_interval,
        answered_inputs,
        outcome,
        delivered,
        updated_at,
    };
    // What another writer of the file put there is held to the bounds of what we write.
    record
        .check()
        .map_err(|e| c.corrupt(format!("it breaks a bound of the store: {e}")))?;
    Ok(record)
}

/// The key of a row, from its key columns as they are (text, or shown as a value).
fn key_of(server: Value, task_id: Value) -> TaskKey {
    let text = |value: Value| match value {
        Value::Text(text) => text,
        other => shown(&other),
    };
    TaskKey::new(text(server), text(task_id))
}

/// Reads the columns of the row of `key`, each a [`Corrupt`](TaskStoreError::Corrupt) error
/// naming both when it is not what was written.
struct Columns<'a> {
    key: &'a TaskKey,
}

impl Columns<'_> {
    fn corrupt(&self, why: String) -> TaskStoreError {
        TaskStoreError::Corrupt {
            key: self.key.clone(),
            why,
        }
    }

    fn wrong(&self, column: &str, value: &Value) -> TaskStoreError {
        self.corrupt(format!("column {column} is {}", shown(value)))
    }

    fn text(&self, column: &str, value: Value) -> Result<String, TaskStoreError> {
        match value {
            Value::Text(text) => Ok(text),
            other => Err(self.wrong(column, &other)),
        }
    }

    fn opt_text(&self, column: &str, value: Value) -> Result<Option<String>, TaskStoreError> {
        match value {
            Value::Null => Ok(None),
            other => self.text(column, other).map(Some),
        }
    }

    fn time(&self, column: &str, value: Value) -> Result<SystemTime, TaskStoreError> {
        match value {
            Value::Integer(nanos) => {
                time_from_nanos(nanos).ok_or_else(|| self.wrong(column, &Value::Integer(nanos)))
            }
            other => Err(self.wrong(column, &other)),
        }
    }

    fn opt_duration(&self, column: &str, value: Value) -> Result<Option<Duration>, TaskStoreError> {
        match value {
            Value::Null => Ok(None),
            Value::Integer(nanos) => duration_from_nanos(nanos)
                .map(Some)
                .ok_or_else(|| self.wrong(column, &Value::Integer(nanos))),
            other => Err(self.wrong(column, &other)),
        }
    }

    fn status(&self, value: Value) -> Result<TaskStatus, TaskStoreError> {
        match &value {
            Value::Text(text) => TaskStatus::parse(text),
            _ => None,
        }
        .ok_or_else(|| self.wrong("status", &value))
    }

    fn flag(&self, column: &str, value: Value) -> Result<bool, TaskStoreError> {
        match value {
            Value::Integer(0) => Ok(false),
            Value::Integer(1) => Ok(true),
            other => Err(self.wrong(column, &other)),
        }
    }
}

/// A stored value as an error shows it: its type, and a bounded view of it.
fn shown(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_owned(),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Real(r) => format!("the real {r}"),
        Value::Text(text) => format!("the text {:?}", truncated(text)),
        Value::Blob(bytes) => format!("a blob of {} bytes", bytes.len()),
    }
}

/// The start of `text`, for an error message.
fn truncated(text: &str) -> &str {
    const SHOWN: usize = 64;
    let mut end = text.len().min(SHOWN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// An SQLite error as a [`Database`](TaskStoreError::Database) error of the store at `path`,
/// saying in words what the usual ones mean.
fn db_error(path: &str, e: rusqlite::Error) -> TaskStoreError {
    let hint = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Some(format!(
            "the database is locked by another connection (waited {} s)",
            BUSY_TIMEOUT.as_secs()
        )),
        Some(ErrorCode::ReadOnly) => {
            Some("the database cannot be written (a read-only file or directory)".to_owned())
        }
        Some(ErrorCode::NotADatabase) => Some("the file is not an SQLite database".to_owned()),
        Some(ErrorCode::DatabaseCorrupt) => Some("the database file is corrupt".to_owned()),
        Some(ErrorCode::DiskFull) => Some("the disk is full".to_owned()),
        Some(ErrorCode::CannotOpen) => Some("the database file cannot be opened".to_owned()),
        Some(ErrorCode::PermissionDenied) => Some("permission denied".to_owned()),
        Some(ErrorCode::SystemIoFailure) => Some("an I/O error".to_owned()),
        _ => None,
    };
    let message = match hint {
        Some(hint) => format!("{hint} ({e})"),
        None => e.to_string(),
    };
    TaskStoreError::Database {
        path: path.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::os::unix::fs::PermissionsExt as _;
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::tasks::arguments_digest;

    fn record(id: &str) -> TaskRecord {
        TaskRecord::new(
            "fs",
            "npx -y server-filesystem /srv",
            id,
            "read_text_file",
            arguments_digest(&serde_json::json!({"path": id})),
            UNIX_EPOCH + Duration::new(1_700_000_000, 987_654_321),
        )
        .ttl(Duration::from_millis(3_600_123))
        .poll_interval(Duration::from_nanos(1_500_000_001))
    }

    #[test]
    fn records_survive_a_reopen_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/tasks.sqlite3");
        let store = SqliteTaskStore::open(&path).unwrap();
        assert_eq!(store.path(), Some(path.as_path()));
        let a = record("a");
        let b = record("b").status_message("é \u{1b}[31m");
        store.insert(&a).unwrap();
        store.insert(&b).unwrap();
        store
            .update(
                &a.key(),
                &TaskUpdate::new().status(TaskStatus::InputRequired),
            )
            .unwrap();
        store.mark_input_answered(&a.key(), "elicit-1").unwrap();
        store
            .finish(&b.key(), TaskStatus::Completed, Some(r#"{"content":[]}"#))
            .unwrap();
        let before = store.list(None).unwrap();
        drop(store);

        let store = SqliteTaskStore::open(&path).unwrap();
        assert_eq!(store.list(None).unwrap(), before);
        let a = store.get(&a.key()).unwrap().unwrap();
        assert_eq!(a.status, TaskStatus::InputRequired);
        assert_eq!(a.answered_inputs, BTreeSet::from(["elicit-1".to_owned()]));
        assert_eq!(
            store
                .take_outcome(&b.key())
                .unwrap()
                .unwrap()
                .outcome
                .as_deref(),
            Some(r#"{"content":[]}"#)
        );
        drop(store);
        let store = SqliteTaskStore::open(&path).unwrap();
        assert_eq!(
            store.take_outcome(&b.key()).unwrap(),
            None,
            "delivered before the reopen"
        );

        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600, "results can be private");
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }

    #[test]
    fn the_schema_is_versioned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        drop(SqliteTaskStore::open(&path).unwrap());
        drop(SqliteTaskStore::open(&path).unwrap());
        let raw = Connection::open(&path).unwrap();
        let version: i64 = raw
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let mode: String = raw
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        raw.pragma_update(None, "user_version", 99).unwrap();
        drop(raw);
        let e = SqliteTaskStore::open(&path).unwrap_err();
        assert!(matches!(e, TaskStoreError::Database { .. }), "{e}");
        assert!(e.to_string().contains("newer version"), "{e}");
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let text = "this is not a database, it is a text file of some length....";
        std::fs::write(&path, text).unwrap();
        let e = SqliteTaskStore::open(&path).unwrap_err();
        assert!(matches!(e, TaskStoreError::Database { .. }), "{e}");
        let shown = e.to_string();
        assert!(shown.contains(&path.display().to_string()), "{shown}");
        assert!(shown.contains("not an SQLite database"), "{shown}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "left untouched"
        );
    }

    #[test]
    fn a_path_that_cannot_be_created_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let path = file.join("tasks.sqlite3");
        let e = SqliteTaskStore::open(&path).unwrap_err();
        assert!(matches!(e, TaskStoreError::Io { .. }), "{e}");
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn a_row_that_does_not_parse_is_corrupt_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = SqliteTaskStore::open(&path).unwrap();
        store.insert(&record("bad")).unwrap();
        store.insert(&record("good")).unwrap();
        let raw = Connection::open(&path).unwrap();
        let corrupt = |sql: &str, column: &str| {
            raw.execute(sql, []).unwrap();
            let e = store.get(&TaskKey::new("fs", "bad")).unwrap_err();
            assert!(
                matches!(&e, TaskStoreError::Corrupt { key, .. } if key.task_id() == "bad"),
                "{e}"
            );
            assert!(e.to_string().contains("\"bad\""), "{e}");
            assert!(e.to_string().contains(column), "{e}");
            assert!(
                store.list(None).is_err(),
                "{column}: a list does not skip it silently"
            );
            // Removed by its key, whatever is in the row, and stored anew.
            assert!(store.remove(&TaskKey::new("fs", "bad")).unwrap());
            store.insert(&record("bad")).unwrap();
        };
        corrupt(
            "UPDATE tasks SET status = 'done' WHERE task_id = 'bad'",
            "status",
        );
        corrupt(
            "UPDATE tasks SET created_at = 'yesterday' WHERE task_id = 'bad'",
            "created_at",
        );
        corrupt(
            "UPDATE tasks SET answered_inputs = '{' WHERE task_id = 'bad'",
            "answered_inputs",
        );
        corrupt(
            "UPDATE tasks SET delivered = 7 WHERE task_id = 'bad'",
            "delivered",
        );
        corrupt(
            "UPDATE tasks SET task_id = 'bad', ttl = -5 WHERE task_id = 'bad'",
            "ttl",
        );
        raw.execute("UPDATE tasks SET status = 'done' WHERE task_id = 'bad'", [])
            .unwrap();
        let e = store
            .update(&TaskKey::new("fs", "bad"), &TaskUpdate::new())
            .unwrap_err();
        assert!(matches!(e, TaskStoreError::Corrupt { .. }), "{e}");
        // The others read, and the bad one can be removed by its key.
        assert!(store.get(&TaskKey::new("fs", "good")).unwrap().is_some());
        assert!(store.remove(&TaskKey::new("fs", "bad")).unwrap());
        assert_eq!(store.list(None).unwrap().len(), 1);
    }

    #[test]
    fn a_locked_database_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let store = SqliteTaskStore::open(&path).unwrap();
        // Not the 5 s a store waits in use.
        store
            .lock()
            .busy_timeout(Duration::from_millis(20))
            .unwrap();
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let e = store.insert(&record("a")).unwrap_err();
        assert!(matches!(e, TaskStoreError::Database { .. }), "{e}");
        assert!(e.to_string().contains("locked"), "{e}");
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        other.execute_batch("ROLLBACK").unwrap();
        assert!(
            store.insert(&record("a")).unwrap(),
            "usable once the lock is gone"
        );
    }

    /// Two stores on one file (two processes, as far as SQLite can tell): each outcome is
    /// taken by exactly one of them.
    #[test]
    fn two_stores_on_one_file_deliver_each_outcome_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.sqlite3");
        let one = SqliteTaskStore::open(&path).unwrap();
        let two = SqliteTaskStore::open(&path).unwrap();
        const TASKS: usize = 40;
        for i in 0..TASKS {
            let r = record(&format!("t-{i}"));
            one.insert(&r).unwrap();
            one.finish(&r.key(), TaskStatus::Completed, Some("{}"))
                .unwrap();
        }
        let take_all = |store: &SqliteTaskStore| {
            (0..TASKS)
                .filter(|i| {
                    store
                        .take_outcome(&TaskKey::new("fs", format!("t-{i}")))
                        .unwrap()
                        .is_some()
                })
                .count()
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| take_all(&one));
            let b = s.spawn(|| take_all(&two));
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!(a + b, TASKS, "{a} + {b}");
    }
}
