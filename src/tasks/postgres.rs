//! [`PostgresTaskStore`] (feature `postgres`): task records in a PostgreSQL database, which
//! every replica of a service can reach.
//!
//! The rules are the other stores' (the one suite in `tasks::tests` runs against all of them):
//! every [`TaskStore`] method is one transaction, committed before it returns; the
//! read-modify-write ones lock the task's row first (`SELECT … FOR UPDATE`), so that two
//! replicas cannot both read a task as undelivered and both deliver it, nor both answer one
//! input request. Times and durations are signed 64-bit nanoseconds, as in SQLite, so that a
//! record reads back exactly as written.
//!
//! The schema is versioned in a table of its own and migrated at [`connect`](PostgresTaskStore::connect),
//! in one transaction under an advisory lock, so replicas that start together migrate once.
//!
//! The trait is synchronous (the driver records a step before what depends on it), and so is
//! this store: each method waits for its transaction. The connection lives on a thread of the
//! store's own (the `postgres` client runs a runtime of its own, which cannot run inside the
//! actix one), and every wait is bounded: [`CONNECT_TIMEOUT`] to connect, [`STATEMENT_TIMEOUT`]
//! per statement (the server's), the kernel's TCP user timeout and keepalives for a network
//! that stalls, and, last, `CALL_TIMEOUT` (30 s) for the caller whatever the connection does. A
//! database that cannot be reached is a [`Database`](TaskStoreError::Database) error, never a
//! hang; the store reconnects on a later call, no sooner than a backoff (100 ms doubling to
//! 10 s) after the last failed attempt, and fails at once meanwhile. A method that timed out
//! may still commit afterwards: what it did is then as if it had succeeded, which the store's
//! rules allow (a record written twice is idempotent; an outcome marked delivered and not
//! handed out is lost, never delivered twice). The connection, its thread and the migrations
//! are `crate::postgres`'s, shared with the token store.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Row, Transaction};
use tokio::sync::broadcast;

use super::record::{
    duration_from_nanos, duration_nanos, time_from_nanos, time_nanos, MAX_ANSWERED_INPUTS,
};
use super::store::{check_finish, check_input_key, purge_due, too_many_inputs, DEFAULT_MAX_TASKS};
use super::{TaskEnd, TaskKey, TaskRecord, TaskStatus, TaskStore, TaskStoreError, TaskUpdate};
use crate::postgres::{Connection, Schema, Worker};
pub use crate::postgres::{CONNECT_TIMEOUT, STATEMENT_TIMEOUT};

/// How long a lease lasts unless [`lease_time`](PostgresTaskStore::lease_time) says otherwise: a
/// replica renews its leases three times in this, and its tasks are taken over this long
/// after it dies.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// The task tables, one step per version.
static TABLES: Schema = Schema {
    versions: "schema_version",
    steps: MIGRATIONS,
};

/// The schema, one step per version (see [`Schema::steps`]).
const MIGRATIONS: &[&str] = &[
    // Version 1: the records, as in SQLite; `answered_inputs` a JSON array of strings.
    "CREATE TABLE IF NOT EXISTS {schema}.tasks (
        server           TEXT    NOT NULL,
        task_id          TEXT    NOT NULL,
        server_identity  TEXT    NOT NULL,
        tool             TEXT    NOT NULL,
        arguments_digest TEXT    NOT NULL,
        created_at       BIGINT  NOT NULL,
        ttl              BIGINT,
        status           TEXT    NOT NULL,
        status_message   TEXT,
        poll_interval    BIGINT,
        answered_inputs  TEXT    NOT NULL,
        outcome          TEXT,
        delivered        BOOLEAN NOT NULL,
        updated_at       BIGINT  NOT NULL,
        PRIMARY KEY (server, task_id)
    );
    CREATE INDEX IF NOT EXISTS tasks_by_created ON {schema}.tasks (created_at, server, task_id);",
    // Version 2: leases. Who polls a running task (a replica's `owner` id), and until when
    // by the database's clock; both NULL for a task nobody holds.
    "ALTER TABLE {schema}.tasks ADD COLUMN IF NOT EXISTS lease_owner TEXT;
    ALTER TABLE {schema}.tasks ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
    CREATE INDEX IF NOT EXISTS tasks_by_lease ON {schema}.tasks (server, lease_until)
        WHERE status IN ('working', 'input_required');",
];

/// The statuses of a running task, as SQL (a lease is only ever held of one).
const RUNNING: &str = "status IN ('working', 'input_required')";

/// The columns of a record, in the order [`parse`] reads them.
const COLUMNS: &str = "server, task_id, server_identity, tool, arguments_digest, created_at, \
                       ttl, status, status_message, poll_interval, answered_inputs, outcome, \
                       delivered, updated_at";

/// A [`TaskStore`] in a PostgreSQL database, shared by every process that connects to it.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcp_supervisor::{tasks::PostgresTaskStore, ServerConfig, Supervisor};
///
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let store = PostgresTaskStore::connect("postgresql://mcp@db.internal/service")?;
/// let sup = Supervisor::builder()
///     .server(ServerConfig::http("ci", "https://ci.example.com/mcp"))
///     .task_store(Arc::new(store))
///     .start()?;
/// # Ok(()) }
/// ```
pub struct PostgresTaskStore {
    worker: Worker,
    /// Where the database is, without any password: for errors and `Debug`.
    shown: String,
    max_tasks: usize,
    /// Who holds this store's leases: this replica.
    owner: String,
    lease: Duration,
    /// The news of tasks that end, from the listener (started by the first
    /// [`watch_ends`](TaskStore::watch_ends)).
    ends: Arc<broadcast::Sender<TaskEnd>>,
    listening: OnceLock<()>,
    config: postgres::Config,
    /// The schema, unquoted (the news names it).
    schema: String,
}

/// The channel the task stores of `schema` notify when a task ends, with the schema, server
/// and task id as a JSON array: named after a digest of the schema (a channel's name is 63
/// bytes at most), so that other schemas' news does not reach this one's listeners (and a
/// digest that two schemas share only costs their listeners a parse).
fn ends_channel(schema: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(schema.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("mcp_task_ends_{hex}")
}

/// PostgreSQL's bound on a notification's payload (8000 bytes); longer news is not sent, and
/// the task is found by the next look.
const MAX_NOTIFY_PAYLOAD: usize = 8000;

/// News of ends kept for a listener that lags; one that lags more hears `Missed`.
const ENDS_BUFFER: usize = 1024;

impl std::fmt::Debug for PostgresTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTaskStore")
            .field("database", &self.shown)
            .field("max_tasks", &self.max_tasks)
            .field("replica", &self.owner)
            .field("lease", &self.lease)
            .finish()
    }
}

impl PostgresTaskStore {
    /// Connects to the database `target` names (a `postgresql://` URL or `key=value` pairs, as
    /// libpq takes them), in the schema `public`, and brings its tables up to date. Fails,
    /// saying why and where (never with the password), when the target does not parse, the
    /// database cannot be reached within [`CONNECT_TIMEOUT`], refuses us, or was written by a
    /// newer version of this crate.
    pub fn connect(target: &str) -> Result<PostgresTaskStore, TaskStoreError> {
        Self::connect_in(target, "public")
    }

    /// [`connect`](Self::connect), with the tables in `schema` (created if missing): several
    /// services, or tests, on one database. A schema name is 1 to 63 ASCII letters, digits and
    /// underscores, not starting with a digit.
    pub fn connect_in(target: &str, schema: &str) -> Result<PostgresTaskStore, TaskStoreError> {
        let config =
            crate::postgres::config(target).map_err(|message| TaskStoreError::Database {
                path: "postgresql".into(),
                message,
            })?;
        let shown = crate::postgres::shown(&config);
        if !crate::postgres::valid_schema(schema) {
            return Err(TaskStoreError::Invalid {
                what: "schema name",
                why: "it must be 1 to 63 ASCII letters, digits and underscores, not starting \
                      with a digit",
            });
        }
        let worker = Worker::start("mcp-task-store-postgres", config.clone(), schema, &TABLES)
            .map_err(|e| database(&shown, e))?;
        let store = PostgresTaskStore {
            worker,
            shown,
            max_tasks: DEFAULT_MAX_TASKS,
            owner: format!("{}-{:08x}", std::process::id(), rand::random::<u32>()),
            lease: DEFAULT_LEASE,
            ends: Arc::new(broadcast::channel(ENDS_BUFFER).0),
            listening: OnceLock::new(),
            config,
            schema: schema.to_owned(),
        };
        // Connected (on the store's thread: the caller may be in an async runtime, where the
        // client's own cannot start) before it is handed out, so that a wrong target fails
        // the start rather than the first task.
        store.run(|connection| {
            connection
                .client()
                .map(|_| ())
                .map_err(|e| database(&connection.shown, e))
        })?;
        Ok(store)
    }

    /// Keeps at most `max` tasks (at least one); [`DEFAULT_MAX_TASKS`] otherwise. A full
    /// store forgets its oldest delivered task for a new one, and refuses the new one when
    /// none is delivered.
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.max_tasks = max.max(1);
        self
    }

    /// Names this replica in the leases it holds (the table's `lease_owner` column), 1 to 200
    /// bytes; a process id and a random number otherwise. Two replicas must never share a
    /// name (they would poll each other's tasks). A replica that restarts under its name
    /// takes back at once the tasks it is asked to await; the others it held are taken over
    /// (by it or another) once their leases lapse, as for any replica that died.
    pub fn replica(mut self, name: impl Into<String>) -> Result<Self, TaskStoreError> {
        let name = name.into();
        super::record::bounded("replica name", &name, 200)?;
        if name.is_empty() {
            return Err(TaskStoreError::Invalid {
                what: "replica name",
                why: "it is empty",
            });
        }
        self.owner = name;
        Ok(self)
    }

    /// How long a lease lasts ([`DEFAULT_LEASE`] otherwise), at least 100 ms: how long after
    /// a replica dies its tasks are taken over, and a third of the time between renewals.
    pub fn lease_time(mut self, lease: Duration) -> Self {
        self.lease = lease.clamp(Duration::from_millis(100), Duration::from_secs(24 * 3600));
        self
    }

    /// The name of this replica in the leases it holds.
    pub fn replica_name(&self) -> &str {
        &self.owner
    }

    /// Runs `f` on the store's thread and waits for it, `CALL_TIMEOUT` (30 s) at most.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, TaskStoreError> + Send + 'static,
    ) -> Result<T, TaskStoreError> {
        self.worker.run(f, |e| database(&self.shown, e))
    }

    /// Runs `f` in one transaction on the store's connection, committed if `f` succeeds (else
    /// rolled back), and waits for it.
    fn transaction<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>, &Tables) -> Result<T, TaskStoreError> + Send + 'static,
    ) -> Result<T, TaskStoreError> {
        self.run(move |connection| {
            let tables = Tables {
                shown: connection.shown.clone(),
                schema: connection.schema.clone(),
            };
            let shown = tables.shown.clone();
            connection.transaction(|e| database(&shown, e), |tx| f(tx, &tables))
        })
    }
}

/// What a transaction needs to name the tables and report errors.
struct Tables {
    shown: String,
    schema: String,
}

impl Tables {
    fn db(&self, e: &postgres::Error) -> TaskStoreError {
        db_error(&self.shown, e)
    }

    fn tasks(&self) -> String {
        format!("{}.tasks", self.schema)
    }

    /// The schema, unquoted.
    fn schema_name(&self) -> &str {
        self.schema.trim_matches('"')
    }

    /// The record of `key`, its row locked until the transaction ends when `lock`.
    fn load(
        &self,
        tx: &mut Transaction<'_>,
        key: &TaskKey,
        lock: bool,
    ) -> Result<Option<TaskRecord>, TaskStoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM {} WHERE server = $1 AND task_id = $2{}",
            self.tasks(),
            if lock { " FOR UPDATE" } else { "" }
        );
        let row = tx
            .query_opt(&sql, &[&key.server(), &key.task_id()])
            .map_err(|e| self.db(&e))?;
        row.map(|row| parse(&row)).transpose()
    }
}

impl TaskStore for PostgresTaskStore {
    fn insert(&self, record: &TaskRecord) -> Result<bool, TaskStoreError> {
        record.check()?;
        let record = record.clone();
        let answered = answered_json(&record)?;
        let max_tasks = i64::try_from(self.max_tasks).unwrap_or(i64::MAX);
        let (created_at, updated_at) = (
            time_nanos("created_at", record.created_at)?,
            time_nanos("updated_at", record.updated_at)?,
        );
        let ttl = record.ttl.map(|d| duration_nanos("ttl", d)).transpose()?;
        let poll = record
            .poll_interval
            .map(|d| duration_nanos("poll interval", d))
            .transpose()?;
        // Whoever stores a running task polls it: the lease is its own from the start.
        let (owner, lease) = if record.status.is_terminal() {
            (None, None)
        } else {
            (Some(self.owner.clone()), Some(self.lease.as_secs_f64()))
        };
        self.transaction(move |tx, t| {
            // Inserts are serialized per schema, so that the bound holds across replicas (a
            // count and an eviction are not atomic otherwise, under READ COMMITTED).
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&t.tasks()])
                .map_err(|e| t.db(&e))?;
            let key = record.key();
            if let Some(stored) = t.load(tx, &key, true)? {
                return if stored == record {
                    Ok(false)
                } else {
                    Err(TaskStoreError::Exists { key })
                };
            }
            let count: i64 = tx
                .query_one(&format!("SELECT count(*) FROM {}", t.tasks()), &[])
                .map_err(|e| t.db(&e))?
                .get(0);
            if count >= max_tasks {
                let evicted = tx
                    .execute(
                        &format!(
                            "DELETE FROM {0} WHERE (server, task_id) = (SELECT server, task_id \
                             FROM {0} WHERE delivered ORDER BY updated_at, server COLLATE \"C\", \
                             task_id COLLATE \"C\" LIMIT 1 FOR UPDATE)",
                            t.tasks()
                        ),
                        &[],
                    )
                    .map_err(|e| t.db(&e))?;
                if evicted == 0 {
                    return Err(TaskStoreError::TooLarge {
                        what: "tasks",
                        limit: usize::try_from(max_tasks).unwrap_or(usize::MAX),
                    });
                }
            }
            let inserted = tx
                .execute(
                    &format!(
                        "INSERT INTO {} ({COLUMNS}, lease_owner, lease_until) VALUES ($1, $2, \
                         $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
                         clock_timestamp() + make_interval(secs => $16)) ON CONFLICT DO NOTHING",
                        t.tasks()
                    ),
                    &[
                        &record.server,
                        &record.task_id,
                        &record.server_identity,
                        &record.tool,
                        &record.arguments_digest,
                        &created_at,
                        &ttl,
                        &record.status.as_str(),
                        &record.status_message,
                        &poll,
                        &answered,
                        &record.outcome,
                        &record.delivered,
                        &updated_at,
                        &owner,
                        &lease,
                    ],
                )
                .map_err(|e| t.db(&e))?;
            if inserted == 0 {
                // Cannot happen under the lock; should it, the error rolls the eviction back.
                return Err(TaskStoreError::Exists { key });
            }
            Ok(true)
        })
    }

    fn update(&self, key: &TaskKey, change: &TaskUpdate) -> Result<bool, TaskStoreError> {
        change.check()?;
        let (key, change) = (key.clone(), change.clone());
        self.transaction(move |tx, t| {
            let mut record = t.load(tx, &key, true)?.ok_or_else(|| not_found(&key))?;
            if record.status.is_terminal() {
                return Ok(false);
            }
            change.apply(&mut record, SystemTime::now());
            tx.execute(
                &format!(
                    "UPDATE {} SET status = $3, status_message = $4, poll_interval = $5, \
                     ttl = $6, updated_at = $7 WHERE server = $1 AND task_id = $2",
                    t.tasks()
                ),
                &[
                    &key.server(),
                    &key.task_id(),
                    &record.status.as_str(),
                    &record.status_message,
                    &record
                        .poll_interval
                        .map(|d| duration_nanos("poll interval", d))
                        .transpose()?,
                    &record.ttl.map(|d| duration_nanos("ttl", d)).transpose()?,
                    &time_nanos("updated_at", record.updated_at)?,
                ],
            )
            .map_err(|e| t.db(&e))?;
            Ok(true)
        })
    }

    fn mark_input_answered(&self, key: &TaskKey, input_key: &str) -> Result<bool, TaskStoreError> {
        check_input_key(input_key)?;
        let (key, input_key) = (key.clone(), input_key.to_owned());
        self.transaction(move |tx, t| {
            let mut record = t.load(tx, &key, true)?.ok_or_else(|| not_found(&key))?;
            if record.status.is_terminal() || record.answered_inputs.contains(&input_key) {
                return Ok(false);
            }
            if record.answered_inputs.len() >= MAX_ANSWERED_INPUTS {
                return Err(too_many_inputs());
            }
            record.answered_inputs.insert(input_key);
            tx.execute(
                &format!(
                    "UPDATE {} SET answered_inputs = $3, updated_at = $4 \
                     WHERE server = $1 AND task_id = $2",
                    t.tasks()
                ),
                &[
                    &key.server(),
                    &key.task_id(),
                    &answered_json(&record)?,
                    &time_nanos("updated_at", SystemTime::now())?,
                ],
            )
            .map_err(|e| t.db(&e))?;
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
        let (key, outcome) = (key.clone(), outcome.map(str::to_owned));
        self.transaction(move |tx, t| {
            let record = t.load(tx, &key, true)?.ok_or_else(|| not_found(&key))?;
            if record.status.is_terminal() {
                return Ok(false);
            }
            tx.execute(
                &format!(
                    "UPDATE {} SET status = $3, outcome = $4, updated_at = $5, \
                     lease_owner = NULL, lease_until = NULL WHERE server = $1 AND task_id = $2",
                    t.tasks()
                ),
                &[
                    &key.server(),
                    &key.task_id(),
                    &status.as_str(),
                    &outcome,
                    &time_nanos("updated_at", SystemTime::now())?,
                ],
            )
            .map_err(|e| t.db(&e))?;
            // Sent on commit: the replicas that await the task look it up at once. Only news:
            // one that cannot be sent (the server's queue full) leaves the end recorded, and
            // the waiters find it at their next look.
            let news = serde_json::json!([t.schema_name(), key.server(), key.task_id()]).to_string();
            if news.len() < MAX_NOTIFY_PAYLOAD {
                let mut attempt = tx.savepoint("news").map_err(|e| t.db(&e))?;
                let channel = ends_channel(t.schema_name());
                match attempt.execute("SELECT pg_notify($1, $2)", &[&channel, &news]) {
                    Ok(_) => attempt.commit().map_err(|e| t.db(&e))?,
                    Err(e) => {
                        tracing::warn!(database = %t.shown, error = %crate::postgres::message(&e), "the news of a task's end cannot be sent: the replicas that await it find it at their next look");
                        attempt.rollback().map_err(|e| t.db(&e))?;
                    }
                }
            }
            Ok(true)
        })
    }

    fn take_outcome(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        let key = key.clone();
        self.transaction(move |tx, t| {
            // The row lock makes this the compare-and-set exactly-once delivery rests on: a
            // second taker waits, then reads it delivered.
            let Some(mut record) = t.load(tx, &key, true)? else {
                return Ok(None);
            };
            if !record.status.is_terminal() || record.delivered {
                return Ok(None);
            }
            let now = SystemTime::now();
            // The store keeps no copy of a delivered outcome: it is owed to nobody any more.
            tx.execute(
                &format!(
                    "UPDATE {} SET delivered = TRUE, outcome = NULL, updated_at = $3 \
                     WHERE server = $1 AND task_id = $2",
                    t.tasks()
                ),
                &[
                    &key.server(),
                    &key.task_id(),
                    &time_nanos("updated_at", now)?,
                ],
            )
            .map_err(|e| t.db(&e))?;
            record.delivered = true;
            record.updated_at = now;
            Ok(Some(record))
        })
    }

    fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
        let key = key.clone();
        self.transaction(move |tx, t| t.load(tx, &key, false))
    }

    fn get_many(
        &self,
        server: &str,
        task_ids: &[String],
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        if task_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (server, task_ids) = (server.to_owned(), task_ids.to_vec());
        self.transaction(move |tx, t| {
            let rows = tx
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM {} WHERE server = $1 AND task_id = ANY($2)",
                        t.tasks()
                    ),
                    &[&server, &task_ids],
                )
                .map_err(|e| t.db(&e))?;
            rows.iter().map(parse).collect()
        })
    }

    fn list(&self, server: Option<&str>) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let server = server.map(str::to_owned);
        let limit = i64::try_from(self.max_tasks).unwrap_or(i64::MAX);
        self.transaction(move |tx, t| {
            let rows = tx
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM {} WHERE $1::TEXT IS NULL OR server = $1 \
                         ORDER BY created_at, server COLLATE \"C\", task_id COLLATE \"C\" \
                         LIMIT $2",
                        t.tasks()
                    ),
                    &[&server, &limit],
                )
                .map_err(|e| t.db(&e))?;
            rows.iter().map(parse).collect()
        })
    }

    fn remove(&self, key: &TaskKey) -> Result<bool, TaskStoreError> {
        let key = key.clone();
        self.transaction(move |tx, t| {
            let removed = tx
                .execute(
                    &format!(
                        "DELETE FROM {} WHERE server = $1 AND task_id = $2",
                        t.tasks()
                    ),
                    &[&key.server(), &key.task_id()],
                )
                .map_err(|e| t.db(&e))?;
            Ok(removed > 0)
        })
    }

    fn purge(&self, now: SystemTime) -> Result<usize, TaskStoreError> {
        self.transaction(move |tx, t| {
            // Decided in Rust with the other stores' rule, not in SQL: the same checked
            // arithmetic to the nanosecond.
            let rows = tx
                .query(
                    &format!(
                        "SELECT server, task_id, created_at, ttl, delivered, updated_at \
                         FROM {}",
                        t.tasks()
                    ),
                    &[],
                )
                .map_err(|e| t.db(&e))?;
            let mut doomed = Vec::new();
            for row in &rows {
                let key = TaskKey::new(
                    row.try_get::<_, String>(0).unwrap_or_default(),
                    row.try_get::<_, String>(1).unwrap_or_default(),
                );
                let c = Columns { key: &key, row };
                let created_at = c.time(2, "created_at")?;
                let ttl = c.opt_duration(3, "ttl")?;
                let delivered = c.get::<bool>(4, "delivered")?;
                let updated_at = c.time(5, "updated_at")?;
                if purge_due(created_at, ttl, delivered, updated_at, now) {
                    doomed.push((key, time_nanos("updated_at", updated_at)?));
                }
            }
            // Read without locks; a row another process changed since is not purged now (its
            // `updated_at` moved), and no row lock held elsewhere holds purge up.
            let mut purged = 0;
            for (key, seen) in &doomed {
                purged += tx
                    .execute(
                        &format!(
                            "DELETE FROM {} WHERE server = $1 AND task_id = $2 \
                             AND updated_at = $3",
                            t.tasks()
                        ),
                        &[&key.server(), &key.task_id(), seen],
                    )
                    .map_err(|e| t.db(&e))?;
            }
            Ok(usize::try_from(purged).unwrap_or(usize::MAX))
        })
    }

    fn lease(&self) -> Option<Duration> {
        Some(self.lease)
    }

    fn claim(&self, key: &TaskKey) -> Result<bool, TaskStoreError> {
        let (key, owner, lease) = (key.clone(), self.owner.clone(), self.lease.as_secs_f64());
        self.transaction(move |tx, t| {
            let claimed = tx
                .execute(
                    &format!(
                        "UPDATE {} SET lease_owner = $3, \
                         lease_until = clock_timestamp() + make_interval(secs => $4) \
                         WHERE server = $1 AND task_id = $2 AND {RUNNING} \
                         AND (lease_owner IS NULL OR lease_owner = $3 \
                              OR lease_until IS NULL OR lease_until < clock_timestamp())",
                        t.tasks()
                    ),
                    &[&key.server(), &key.task_id(), &owner, &lease],
                )
                .map_err(|e| t.db(&e))?;
            Ok(claimed > 0)
        })
    }

    fn renew(&self, server: &str, task_ids: &[String]) -> Result<Vec<TaskKey>, TaskStoreError> {
        // With no task named, too, a round trip: a renewal that succeeds says the database
        // answers, which the leases of the tasks this replica stores next rest on.
        let (server, owner, lease) = (
            server.to_owned(),
            self.owner.clone(),
            self.lease.as_secs_f64(),
        );
        let task_ids = task_ids.to_vec();
        self.transaction(move |tx, t| {
            // Whether it lapsed meanwhile does not matter: nobody took it over while it is
            // still ours (a take-over makes it another's under the row's lock).
            let rows = tx
                .query(
                    &format!(
                        "UPDATE {} SET lease_until = clock_timestamp() + make_interval(secs => $3) \
                         WHERE server = $1 AND lease_owner = $2 AND task_id = ANY($4) \
                         AND {RUNNING} RETURNING task_id",
                        t.tasks()
                    ),
                    &[&server, &owner, &lease, &task_ids],
                )
                .map_err(|e| t.db(&e))?;
            rows.iter()
                .map(|row| {
                    let task_id: String = row.try_get(0).map_err(|e| t.db(&e))?;
                    Ok(TaskKey::new(server.clone(), task_id))
                })
                .collect()
        })
    }

    fn take_over(
        &self,
        server: &str,
        identity: &str,
        max: usize,
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let (server, identity) = (server.to_owned(), identity.to_owned());
        let (owner, lease) = (self.owner.clone(), self.lease.as_secs_f64());
        let max = i64::try_from(max.min(self.max_tasks)).unwrap_or(i64::MAX);
        self.transaction(move |tx, t| {
            // SKIP LOCKED: a task another replica is taking (or renewing) right now is its;
            // replicas that look at once share the lapsed tasks out instead of queueing.
            let rows = tx
                .query(
                    &format!(
                        "UPDATE {0} SET lease_owner = $3, \
                         lease_until = clock_timestamp() + make_interval(secs => $4) \
                         WHERE (server, task_id) IN (SELECT server, task_id FROM {0} \
                             WHERE server = $1 AND server_identity = $2 AND {RUNNING} \
                             AND (lease_owner IS NULL OR lease_until IS NULL \
                                  OR lease_until < clock_timestamp()) \
                             ORDER BY created_at, task_id COLLATE \"C\" LIMIT $5 \
                             FOR UPDATE SKIP LOCKED) \
                         RETURNING {COLUMNS}",
                        t.tasks()
                    ),
                    &[&server, &identity, &owner, &lease, &max],
                )
                .map_err(|e| t.db(&e))?;
            let mut records = rows.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
            records.sort_by(|a, b| (a.created_at, &a.task_id).cmp(&(b.created_at, &b.task_id)));
            Ok(records)
        })
    }

    fn release(&self, server: &str) -> Result<usize, TaskStoreError> {
        let (server, owner) = (server.to_owned(), self.owner.clone());
        self.transaction(move |tx, t| {
            let released = tx
                .execute(
                    &format!(
                        "UPDATE {} SET lease_owner = NULL, lease_until = NULL \
                         WHERE server = $1 AND lease_owner = $2",
                        t.tasks()
                    ),
                    &[&server, &owner],
                )
                .map_err(|e| t.db(&e))?;
            Ok(usize::try_from(released).unwrap_or(usize::MAX))
        })
    }

    /// Listens, on a connection of its own, for the notifications every store on this
    /// database sends when a task of this schema ends (started by the first call).
    fn watch_ends(&self) -> Option<broadcast::Receiver<TaskEnd>> {
        let receiver = self.ends.subscribe();
        self.listening.get_or_init(|| {
            let listener = Listener {
                config: self.config.clone(),
                shown: self.shown.clone(),
                schema: self.schema.clone(),
                ends: Arc::downgrade(&self.ends),
            };
            let started = std::thread::Builder::new()
                .name("mcp-task-ends-postgres".into())
                .spawn(move || listener.run());
            if let Err(error) = started {
                tracing::warn!(database = %self.shown, error = %error, "the listener for tasks that end cannot be started: awaited tasks are looked up every third of a lease");
            }
        });
        Some(receiver)
    }
}

/// The thread that listens for the notifications of tasks that end, until the store is
/// dropped; reconnected with backoff, and `Missed` told each time it listens anew.
struct Listener {
    config: postgres::Config,
    shown: String,
    schema: String,
    ends: Weak<broadcast::Sender<TaskEnd>>,
}

impl Listener {
    fn run(self) {
        let mut backoff = Duration::from_millis(100);
        let channel = ends_channel(&self.schema);
        while self.ends.strong_count() > 0 {
            let listening = crate::postgres::open_bounded(&self.config, STATEMENT_TIMEOUT)
                .and_then(|mut client| {
                    // Idle for as long as nothing ends: a server that ends idle sessions
                    // (PostgreSQL 14 on) would cut it every time.
                    client
                        .batch_execute(&format!(
                            "SELECT set_config('idle_session_timeout', '0', false) \
                             WHERE current_setting('server_version_num')::int >= 140000; \
                             LISTEN {channel}"
                        ))
                        .map_err(|e| crate::postgres::message(&e))?;
                    Ok(client)
                });
            let mut client = match listening {
                Ok(client) => client,
                Err(error) => {
                    tracing::warn!(database = %self.shown, error = %error, retry_ms = backoff.as_millis() as u64, "cannot listen for tasks that end: awaited tasks are looked up every third of a lease meanwhile");
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                    continue;
                }
            };
            // What ended before it listened (first, since the watch began; then, while it
            // was away) is looked up.
            if !self.tell(TaskEnd::Missed) {
                return;
            }
            let listened = Instant::now();
            // Woken at least every second to see whether the store is still there.
            'listening: loop {
                if client.is_closed() {
                    tracing::warn!(database = %self.shown, "the listener for tasks that end lost its connection: reconnecting");
                    break;
                }
                let mut notifications = client.notifications();
                let mut news = notifications.timeout_iter(Duration::from_secs(1));
                loop {
                    match FallibleIterator::next(&mut news) {
                        Ok(Some(note)) => {
                            let told = match self.parse(note.payload()) {
                                Some(key) => self.tell(TaskEnd::Ended(key)),
                                None => self.ends.strong_count() > 0,
                            };
                            if !told {
                                return;
                            }
                        }
                        Err(error) => {
                            tracing::warn!(database = %self.shown, error = %crate::postgres::message(&error), "the listener for tasks that end lost its connection: reconnecting");
                            break 'listening;
                        }
                        Ok(None) => break,
                    }
                }
                if self.ends.strong_count() == 0 {
                    return;
                }
            }
            // A connection that listened a while was sound: the next attempt is soon. One cut
            // at once (a server that ends it) is tried again no sooner than the backoff.
            if listened.elapsed() >= Duration::from_secs(10) {
                backoff = Duration::from_millis(100);
            } else {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }

    /// The key a notification names, if it is of this store's schema.
    fn parse(&self, payload: &str) -> Option<TaskKey> {
        let [schema, server, task_id]: [String; 3] = serde_json::from_str(payload).ok()?;
        (schema == self.schema).then(|| TaskKey::new(server, task_id))
    }

    /// Tells the store's watchers; `false`: the store is gone, and so is the listener's
    /// reason to be.
    fn tell(&self, end: TaskEnd) -> bool {
        match self.ends.upgrade() {
            Some(ends) => {
                // No receiver (no actor listens now): nobody to tell.
                let _ = ends.send(end);
                true
            }
            None => false,
        }
    }
}

fn not_found(key: &TaskKey) -> TaskStoreError {
    TaskStoreError::NotFound { key: key.clone() }
}

fn database(shown: &str, message: String) -> TaskStoreError {
    TaskStoreError::Database {
        path: shown.to_owned(),
        message,
    }
}

/// A client error as the store's error.
fn db_error(shown: &str, e: &postgres::Error) -> TaskStoreError {
    database(shown, crate::postgres::message(e))
}

/// The answered input keys as the JSON array stored.
fn answered_json(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(&record.answered_inputs).map_err(|_| TaskStoreError::Invalid {
        what: "answered input requests",
        why: "they do not serialize",
    })
}

/// A stored row as a record, or [`Corrupt`](TaskStoreError::Corrupt) naming its key and the
/// column that does not read.
fn parse(row: &Row) -> Result<TaskRecord, TaskStoreError> {
    let key = TaskKey::new(
        row.try_get::<_, String>(0).unwrap_or_default(),
        row.try_get::<_, String>(1).unwrap_or_default(),
    );
    let c = Columns { key: &key, row };
    let answered: String = c.get(10, "answered_inputs")?;
    let answered_inputs = serde_json::from_str(&answered).map_err(|e| {
        c.corrupt(format!(
            "column answered_inputs is not a JSON array of strings: {e}"
        ))
    })?;
    let status: String = c.get(7, "status")?;
    let record = TaskRecord {
        server: key.server().to_owned(),
        task_id: key.task_id().to_owned(),
        server_identity: c.get(2, "server_identity")?,
        tool: c.get(3, "tool")?,
        arguments_digest: c.get(4, "arguments_digest")?,
        created_at: c.time(5, "created_at")?,
        ttl: c.opt_duration(6, "ttl")?,
        status: TaskStatus::parse(&status)
            .ok_or_else(|| c.corrupt(format!("column status is {status:?}")))?,
        status_message: c.get(8, "status_message")?,
        poll_interval: c.opt_duration(9, "poll_interval")?,
        answered_inputs,
        outcome: c.get(11, "outcome")?,
        delivered: c.get(12, "delivered")?,
        updated_at: c.time(13, "updated_at")?,
    };
    // What another writer of the database put there is held to the bounds of what we write.
    record
        .check()
        .map_err(|e| c.corrupt(format!("it breaks a bound of the store: {e}")))?;
    Ok(record)
}

/// Reads the columns of the row of `key`, each a [`Corrupt`](TaskStoreError::Corrupt) error
/// naming both when it is not what was written.
struct Columns<'a> {
    key: &'a TaskKey,
    row: &'a Row,
}

impl Columns<'_> {
    fn corrupt(&self, why: String) -> TaskStoreError {
        TaskStoreError::Corrupt {
            key: self.key.clone(),
            why,
        }
    }

    fn get<'r, T: postgres::types::FromSql<'r>>(
        &'r self,
        at: usize,
        column: &str,
    ) -> Result<T, TaskStoreError> {
        self.row
            .try_get(at)
            .map_err(|e| self.corrupt(format!("column {column} does not read: {e}")))
    }

    fn time(&self, at: usize, column: &str) -> Result<SystemTime, TaskStoreError> {
        let nanos: i64 = self.get(at, column)?;
        time_from_nanos(nanos).ok_or_else(|| self.corrupt(format!("column {column} is {nanos}")))
    }

    fn opt_duration(&self, at: usize, column: &str) -> Result<Option<Duration>, TaskStoreError> {
        let nanos: Option<i64> = self.get(at, column)?;
        nanos
            .map(|n| {
                duration_from_nanos(n)
                    .ok_or_else(|| self.corrupt(format!("column {column} is {n}")))
            })
            .transpose()
    }
}
