//! One connection to PostgreSQL on a thread of its own (feature `postgres`): what the stores a
//! fleet shares ([`PostgresTaskStore`](crate::tasks::PostgresTaskStore),
//! [`PostgresTokenStore`](crate::auth::PostgresTokenStore)) have in common.
//!
//! - The target: a `postgresql://` URL or libpq's `key=value` pairs, given bounds where it
//!   sets none ([`CONNECT_TIMEOUT`], the kernel's TCP user timeout and keepalives), and shown
//!   to people without its password ([`shown`]).
//! - The thread: the synchronous `postgres` client runs a runtime of its own, which cannot run
//!   inside the actix one, so each store sends its work to its connection's thread and waits
//!   for the answer, [`CALL_TIMEOUT`] at most ([`Worker::run`]).
//! - The connection: made when first needed, made again after it broke, no sooner than a
//!   backoff (100 ms doubling to 10 s) after the last failed attempt, and failing at once
//!   meanwhile; every statement bounded by [`STATEMENT_TIMEOUT`] (the server's).
//! - The schema: each store's tables are versioned in a table of its own and migrated when it
//!   connects, in one transaction under an advisory lock, so replicas that start together
//!   migrate once ([`Schema`]).
//! - TLS: with `sslmode=require` in the target, the connection is encrypted with rustls and
//!   the server's certificate verified against the roots in the file `PGSSLROOTCERT` names
//!   (libpq's variable), else the webpki roots; a certificate that does not verify fails the
//!   connection, saying why. rust-postgres has no `verify-ca`/`verify-full`: `require` here
//!   verifies as libpq's `verify-full` does. Without it (`disable`, or libpq's default
//!   `prefer`) the connection is not encrypted, so a server with a self-signed certificate
//!   (Debian's default) is still reached as before.

use std::str::FromStr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use postgres::config::SslMode;
use postgres::{Client, NoTls, Transaction};

/// How long connecting to the database may take (unless the connection string sets
/// `connect_timeout`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one statement may take (a row lock another replica holds included).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a method waits for its transaction at most, whatever the connection does (a
/// network that stalls mid-answer, a server that accepted and says nothing).
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long sent data may stay unacknowledged before the kernel drops the connection.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest wait between two attempts to reach a database that did not answer.
const MAX_RECONNECT_BACKOFF: Duration = Duration::from_secs(10);
const FIRST_RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// The configuration `target` names, with our bounds where it sets none. `Err`: why it does
/// not parse (never with the password: the parser's errors name no value).
pub(crate) fn config(target: &str) -> Result<postgres::Config, String> {
    let mut config = postgres::Config::from_str(target)
        .map_err(|e| format!("the connection string does not parse: {e}"))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    // A network that stalls: the kernel drops the connection instead of our waiting.
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(2))
        .keepalives_retries(3);
    if config.get_application_name().is_none() {
        // What `pg_stat_activity` shows for our connections, unless the target names one.
        config.application_name("mcp-supervisor");
    }
    Ok(config)
}

/// Where a configuration points, for people: `postgresql://user@host:port/dbname`, no password.
pub(crate) fn shown(config: &postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgresql://{user}{host}:{port}/{db}")
}

/// Whether `schema` is a name we quote into SQL as it is: 1 to 63 ASCII letters, digits and
/// underscores, not starting with a digit.
pub(crate) fn valid_schema(schema: &str) -> bool {
    (1..=63).contains(&schema.len())
        && schema
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit()
}

/// A client error as text: the server's message (with its SQLSTATE) when it sent one, else
/// what failed on our side (it never holds the password).
pub(crate) fn message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None if e.is_closed() => "the connection to the database is closed".to_owned(),
        None => {
            // "error connecting to server" alone does not say refused, timed out or unknown
            // host: the causes do (none holds a password).
            let mut message = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(inner) = cause {
                message.push_str(": ");
                message.push_str(&inner.to_string());
                cause = inner.source();
            }
            message
        }
    }
}

/// Serializes the migrations of every store on one database, of tasks and of tokens alike:
/// two that create one schema at once would collide in the catalog. (The task store's key
/// since its first version, so that older binaries starting beside newer ones wait too.)
const MIGRATION_LOCK: i64 = 0x6d63_705f_7461_736b; // "mcp_task"

/// A store's tables: how to bring them to the newest version.
pub(crate) struct Schema {
    /// The table (in the store's schema) that holds the version its tables are at.
    pub versions: &'static str,
    /// One step per version: step `i` takes the tables from version `i` to `i + 1`. Steps
    /// are only ever appended, and each is idempotent too (`IF NOT EXISTS`). `{schema}` is
    /// the store's schema, quoted.
    pub steps: &'static [&'static str],
}

/// The rustls configuration of connections with `sslmode=require`: the roots of
/// `PGSSLROOTCERT`, else the webpki roots; built once (the file is read once).
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    static TLS: std::sync::OnceLock<Result<tokio_postgres_rustls::MakeRustlsConnect, String>> =
        std::sync::OnceLock::new();
    TLS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        match std::env::var_os("PGSSLROOTCERT") {
            Some(path) => {
                let shown = std::path::Path::new(&path).display().to_string();
                let pem = std::fs::read(&path)
                    .map_err(|e| format!("PGSSLROOTCERT ({shown}) cannot be read: {e}"))?;
                use rustls::pki_types::pem::PemObject as _;
                let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("PGSSLROOTCERT ({shown}) is not PEM: {e}"))?;
                let (added, _ignored) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(format!(
                        "PGSSLROOTCERT ({shown}) holds no usable certificate"
                    ));
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    })
    .clone()
}

/// Connects to `config`: over TLS when it says `sslmode=require`, else in the clear.
fn connect(config: &postgres::Config) -> Result<Client, String> {
    match config.get_ssl_mode() {
        SslMode::Require => config.connect(tls()?),
        _ => config.connect(NoTls),
    }
    .map_err(|e| message(&e))
}

/// Connects to `config` (no schema migrated), with every statement bounded by
/// `statement_timeout` and every lock wait by as much. The server watches the connection too
/// (keepalives, a TCP user timeout): a client whose host died, rather than its process, has
/// its locks released in seconds, not when the kernel's defaults give up, hours later.
pub(crate) fn open_bounded(
    config: &postgres::Config,
    statement_timeout: Duration,
) -> Result<Client, String> {
    let mut client = connect(config)?;
    let ms = statement_timeout.as_millis();
    client
        .batch_execute(&format!(
            "SET statement_timeout = {ms}; SET lock_timeout = {ms}; \
             SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 2; \
             SET tcp_keepalives_count = 3; SET tcp_user_timeout = {}",
            TCP_USER_TIMEOUT.as_millis()
        ))
        .map_err(|e| message(&e))?;
    Ok(client)
}

/// The connection, on its thread: made when first needed, made again after it broke.
pub(crate) struct Connection {
    config: postgres::Config,
    client: Option<Client>,
    /// Where the database is, for errors.
    pub shown: String,
    /// The quoted schema the tables are in.
    pub schema: String,
    tables: &'static Schema,
    /// No attempt to connect before this instant (the last one failed).
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl Connection {
    /// The client, connected (and the schema migrated) if it was not. `Err`: why not.
    pub fn client(&mut self) -> Result<&mut Client, String> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.client.is_none() {
            let now = Instant::now();
            if let Some(at) = self.retry_at.filter(|at| now < *at) {
                return Err(format!(
                    "the database is unreachable; the next attempt to connect is in {} ms",
                    at.saturating_duration_since(now).as_millis()
                ));
            }
            match self.open() {
                Ok(client) => {
                    self.client = Some(client);
                    self.retry_at = None;
                    self.backoff = FIRST_RECONNECT_BACKOFF;
                }
                Err(e) => {
                    // From the failure, not the attempt's start: an attempt that timed out
                    // took its whole timeout.
                    self.retry_at = Instant::now().checked_add(self.backoff);
                    self.backoff = (self.backoff * 2).min(MAX_RECONNECT_BACKOFF);
                    return Err(e);
                }
            }
        }
        self.client.as_mut().ok_or_else(|| "no connection".into())
    }

    /// Connects, bounds every statement, and brings the schema to the newest version.
    fn open(&self) -> Result<Client, String> {
        let mut client = open_bounded(&self.config, STATEMENT_TIMEOUT)?;
        migrate(&mut client, &self.schema, self.tables)?;
        Ok(client)
    }

    /// Runs `f` in one transaction, committed if `f` succeeds (else rolled back). `db` makes
    /// a client error the caller's.
    pub fn transaction<T, E>(
        &mut self,
        db: impl Fn(String) -> E,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let client = self.client().map_err(&db)?;
        let mut tx = client.transaction().map_err(|e| db(message(&e)))?;
        let value = f(&mut tx)?;
        tx.commit().map_err(|e| db(message(&e)))?;
        Ok(value)
    }
}

/// Brings `schema` to the newest version of `tables`, in one transaction under its lock.
fn migrate(client: &mut Client, schema: &str, tables: &Schema) -> Result<(), String> {
    let db = |e: postgres::Error| message(&e);
    let mut tx = client.transaction().map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(db)?;
    // Only what is missing is created: `CREATE SCHEMA IF NOT EXISTS` needs the CREATE
    // privilege on the database even when the schema is there, which a role that owns only
    // its schema lacks.
    let present = |tx: &mut Transaction<'_>, sql: &str, name: String| -> Result<bool, String> {
        let row = tx.query_one(sql, &[&name]).map_err(db)?;
        row.try_get::<_, bool>(0).map_err(db)
    };
    if !present(
        &mut tx,
        "SELECT to_regnamespace($1) IS NOT NULL",
        schema.to_owned(),
    )? {
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .map_err(db)?;
    }
    let versions = format!("{schema}.{}", tables.versions);
    if !present(
        &mut tx,
        "SELECT to_regclass($1) IS NOT NULL",
        versions.clone(),
    )? {
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {versions} (version BIGINT NOT NULL)"
        ))
        .map_err(db)?;
    }
    let version: Option<i64> = tx
        .query_one(&format!("SELECT max(version)::BIGINT FROM {versions}"), &[])
        .map_err(db)?
        .try_get(0)
        .map_err(db)?;
    let known = tables.steps.len();
    let from = usize::try_from(version.unwrap_or(0))
        .map_err(|_| format!("its schema version {version:?} is not one this crate writes"))?;
    if from > known {
        return Err(format!(
            "it was written by a newer version of mcp-supervisor (schema version {from} in \
             {versions}; this one knows up to {known}): it is left untouched"
        ));
    }
    for step in &tables.steps[from..] {
        tx.batch_execute(&step.replace("{schema}", schema))
            .map_err(db)?;
    }
    if from < known {
        let version = i64::try_from(known).unwrap_or(i64::MAX);
        tx.execute(&format!("DELETE FROM {versions}"), &[])
            .map_err(db)?;
        tx.execute(
            &format!("INSERT INTO {versions} (version) VALUES ($1)"),
            &[&version],
        )
        .map_err(db)?;
    }
    tx.commit().map_err(db)
}

/// Something for the connection's thread to do.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The sending end of a connection's thread.
pub(crate) struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    /// Starts the thread `name` of a connection to `config`, its tables those of `tables` in
    /// `schema` (a [`valid_schema`]). Connects nothing yet.
    pub fn start(
        name: &str,
        config: postgres::Config,
        schema: &str,
        tables: &'static Schema,
    ) -> Result<Worker, String> {
        let mut connection = Connection {
            shown: shown(&config),
            config,
            client: None,
            schema: format!("\"{schema}\""),
            tables,
            retry_at: None,
            backoff: FIRST_RECONNECT_BACKOFF,
        };
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    // A job that panics (it should not) loses its connection, not the store.
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        job(&mut connection)
                    }));
                    if ran.is_err() {
                        connection.client = None;
                    }
                }
            })
            .map_err(|e| format!("its thread cannot be started: {e}"))?;
        Ok(Worker { jobs })
    }

    /// Runs `f` on the connection's thread and waits for it, [`CALL_TIMEOUT`] at most; `fail`
    /// makes what went wrong around it the caller's error. A connection that broke is
    /// dropped, for a later call to make anew.
    pub fn run<T: Send + 'static, E: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        fail: impl Fn(String) -> E,
    ) -> Result<T, E> {
        let (answer, answered) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |connection: &mut Connection| {
            let outcome = f(connection);
            if connection.client.as_ref().is_some_and(Client::is_closed) {
                connection.client = None;
            }
            let _ = answer.send(outcome);
        });
        if self.jobs.send(job).is_err() {
            return Err(fail("its connection's thread is gone".into()));
        }
        match answered.recv_timeout(CALL_TIMEOUT) {
            Ok(outcome) => outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(fail(format!(
                "no answer from the database within {} s",
                CALL_TIMEOUT.as_secs()
            ))),
            // The job panicked (its sender went with it).
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(fail(
                "the operation failed inside the store (see the log)".into(),
            )),
        }
    }
}
