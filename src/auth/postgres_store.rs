//! [`PostgresTokenStore`] (feature `postgres`): tokens, client registrations and issuer
//! bindings in a PostgreSQL database that every replica of a service shares, and renewals
//! serialized across them by a row lock.
//!
//! Why shared: replicas that each authorize on their own multiply sign-ins, and two that
//! refresh one rotated refresh token at once void the grant for all (the authorization server
//! takes the first and refuses the second, then revokes the family). So the provider takes
//! [`lock_renewal`](TokenStore::lock_renewal) before it refreshes or authorizes after a
//! `401`: here that is `SELECT … FOR UPDATE` of the server's row in `oauth_renewals`, in a
//! transaction held open, on a connection of its own, until the renewal is saved and the
//! guard dropped. Another replica's lock waits for it, then reads the store again and takes
//! the tokens saved meanwhile. A replica that dies holding the lock loses its connection, and
//! the database releases the lock with it.
//!
//! Reads and writes are one statement each on the store's connection, on a thread of its own
//! (`crate::postgres`, shared with the task store): bounded, reconnected with backoff. The
//! [`TokenStore`] trait cannot fail, so a database that fails is logged (never a value) and
//! counted: a read finds nothing (the replica authorizes, under the lock, as if it had no
//! tokens), and a write is lost (the tokens still serve this connection). The renewal lock
//! fails instead, and the call that needed it is answered `unavailable`.
//!
//! The tokens are as confidential as the database: they are stored as they were issued, so
//! grant these tables to the service's role alone, and give each application a schema of its
//! own (tokens are kept by MCP server URL: two applications in one schema would share their
//! users' tokens). Reach it over TLS (`sslmode=require` in the target, see `crate::postgres`)
//! unless it is on a private network.

use std::time::Duration;

use postgres::Row;

use super::store::LocalRenewal;
use super::{
    IssuerBinding, Registration, RenewalFuture, RenewalGuard, Secret, TokenStore, TokenStoreError,
    Tokens,
};
use crate::postgres::{Schema, Worker};
use crate::tasks::record::{time_from_nanos, time_nanos};

/// The token tables, one step per version (see the task store's for the rules).
static TABLES: Schema = Schema {
    versions: "token_schema_version",
    steps: &[
        // Version 1. Times are signed 64-bit nanoseconds since the epoch, as in the task
        // tables, so that tokens read back exactly as written (the provider compares them).
        "CREATE TABLE IF NOT EXISTS {schema}.oauth_tokens (
            server_url    TEXT PRIMARY KEY,
            issuer        TEXT NOT NULL,
            access_token  TEXT NOT NULL,
            refresh_token TEXT,
            expires_at    BIGINT,
            scope         TEXT,
            dpop          BOOLEAN NOT NULL,
            updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS {schema}.oauth_registrations (
            issuer        TEXT PRIMARY KEY,
            client_id     TEXT NOT NULL,
            client_secret TEXT,
            auth_method   TEXT,
            updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS {schema}.oauth_issuer_bindings (
            server_url TEXT PRIMARY KEY,
            client_id  TEXT NOT NULL,
            issuer     TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS {schema}.oauth_renewals (
            server_url TEXT PRIMARY KEY
        );",
    ],
};

/// How long a renewal lock is waited for in the database (the provider gives up after its
/// own `RENEWAL_WAIT`, as long).
const LOCK_WAIT: Duration = super::provider::RENEWAL_WAIT;

/// A [`TokenStore`] in a PostgreSQL database, shared by every process that connects to it:
/// one refresh and one sign-in for the fleet.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcp_supervisor::auth::PostgresTokenStore;
/// use mcp_supervisor::config::OAuthConfig;
/// use mcp_supervisor::ServerConfig;
///
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let tokens = Arc::new(PostgresTokenStore::connect("postgresql://mcp@db.internal/service")?);
/// let server = ServerConfig::http("crm", "https://crm.example.com/mcp")
///     .oauth(OAuthConfig::client_credentials("svc", "s3cret").store(tokens));
/// # Ok(()) }
/// ```
pub struct PostgresTokenStore {
    worker: Worker,
    /// For the renewal locks' own connections.
    config: postgres::Config,
    /// Where the database is, without any password: for errors, logs and `Debug`.
    shown: String,
    /// The quoted schema.
    schema: String,
    /// Reads and writes that failed, and so found nothing or were lost.
    failures: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for PostgresTokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTokenStore")
            .field("database", &self.shown)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresTokenStore {
    /// Connects to the database `target` names (a `postgresql://` URL or `key=value` pairs, as
    /// libpq takes them), in the schema `public`, and brings its tables up to date. Fails,
    /// saying why and where (never with the password), when the target does not parse, the
    /// database cannot be reached within [`CONNECT_TIMEOUT`](crate::tasks::CONNECT_TIMEOUT),
    /// refuses us, or was written by a newer version of this crate.
    pub fn connect(target: &str) -> Result<PostgresTokenStore, TokenStoreError> {
        Self::connect_in(target, "public")
    }

    /// [`connect`](Self::connect), with the tables in `schema` (created if missing); the same
    /// rules as [`PostgresTaskStore::connect_in`](crate::tasks::PostgresTaskStore::connect_in)'s,
    /// and the two stores may share one schema.
    pub fn connect_in(target: &str, schema: &str) -> Result<PostgresTokenStore, TokenStoreError> {
        let config =
            crate::postgres::config(target).map_err(|message| TokenStoreError::Database {
                database: "postgresql".into(),
                message,
            })?;
        if !crate::postgres::valid_schema(schema) {
            return Err(TokenStoreError::Invalid {
                what: "schema name",
                why: "it must be 1 to 63 ASCII letters, digits and underscores, not starting \
                      with a digit",
            });
        }
        let shown = crate::postgres::shown(&config);
        let db = |message| TokenStoreError::Database {
            database: shown.clone(),
            message,
        };
        let worker = Worker::start("mcp-token-store-postgres", config.clone(), schema, &TABLES)
            .map_err(db)?;
        let store = PostgresTokenStore {
            worker,
            config,
            shown: shown.clone(),
            schema: format!("\"{schema}\""),
            failures: Default::default(),
        };
        // Connected before it is handed out, so that a wrong target fails the start.
        store
            .worker
            .run(|c| c.client().map(|_| ()), |e| e)
            .map_err(db)?;
        Ok(store)
    }

    /// Reads and writes that failed since the store was made (each also logged): reads that
    /// found nothing and writes that were lost because the database failed.
    pub fn failures(&self) -> u64 {
        self.failures.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `f` in a transaction on the store's connection. `Err`: what failed (never a
    /// value), counted.
    fn try_run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut postgres::Transaction<'_>, &str) -> Result<T, postgres::Error>
            + Send
            + 'static,
    ) -> Result<T, TokenStoreError> {
        let outcome = self.worker.run(
            move |c| {
                let schema = c.schema.clone();
                c.transaction(
                    |e| e,
                    |tx| f(tx, &schema).map_err(|e| crate::postgres::message(&e)),
                )
            },
            |e| e,
        );
        outcome.map_err(|message| {
            self.failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            TokenStoreError::Database {
                database: self.shown.clone(),
                message,
            }
        })
    }

    /// [`try_run`](Self::try_run), a failure logged (what was being done, and why) and
    /// `None`: for the trait's methods, which cannot fail.
    fn run<T: Send + 'static>(
        &self,
        doing: &'static str,
        f: impl FnOnce(&mut postgres::Transaction<'_>, &str) -> Result<T, postgres::Error>
            + Send
            + 'static,
    ) -> Option<T> {
        match self.try_run(f) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::warn!(doing, error = %error, "the token store failed");
                None
            }
        }
    }

    /// A value read back that cannot be used: logged (which column, never its value) and
    /// counted.
    fn unreadable(&self, what: &'static str, why: &str) {
        self.failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(database = %self.shown, what, why, "a stored value cannot be read: not using it");
    }

    /// The tokens of `server_url`; `Err` when the database cannot say. Tokens stored that
    /// cannot be read are none (logged, counted).
    fn read_tokens(&self, server_url: &str) -> Result<Option<Tokens>, TokenStoreError> {
        let url = server_url.to_owned();
        let row = self.try_run(move |tx, schema| {
            tx.query_opt(
                &format!(
                    "SELECT issuer, access_token, refresh_token, expires_at, scope, dpop \
                     FROM {schema}.oauth_tokens WHERE server_url = $1"
                ),
                &[&url],
            )
        })?;
        Ok(row.and_then(|row| match parse_tokens(&row) {
            Ok(tokens) => Some(tokens),
            Err(column) => {
                self.unreadable("tokens", column);
                None
            }
        }))
    }

    fn write_tokens(&self, server_url: &str, tokens: Tokens) -> Result<(), TokenStoreError> {
        // An expiry beyond 2262 (past 64-bit nanoseconds) is as good as none.
        let expires_at = tokens
            .expires_at
            .and_then(|at| time_nanos("expiry", at).ok());
        let url = server_url.to_owned();
        self.try_run(move |tx, schema| {
            tx.execute(
                &format!(
                    "INSERT INTO {schema}.oauth_tokens
                        (server_url, issuer, access_token, refresh_token, expires_at, scope, dpop)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)
                     ON CONFLICT (server_url) DO UPDATE SET
                        issuer = EXCLUDED.issuer, access_token = EXCLUDED.access_token,
                        refresh_token = EXCLUDED.refresh_token, expires_at = EXCLUDED.expires_at,
                        scope = EXCLUDED.scope, dpop = EXCLUDED.dpop, updated_at = now()"
                ),
                &[
                    &url,
                    &tokens.issuer,
                    &tokens.access_token.expose(),
                    &tokens.refresh_token.as_ref().map(Secret::expose),
                    &expires_at,
                    &tokens.scope,
                    &tokens.dpop,
                ],
            )
        })
        .map(|_| ())
    }
}

impl TokenStore for PostgresTokenStore {
    fn tokens(&self, server_url: &str) -> Option<Tokens> {
        self.read_tokens(server_url)
            .map_err(
                |error| tracing::warn!(error = %error, "the token store could not read tokens"),
            )
            .ok()
            .flatten()
    }

    fn save_tokens(&self, server_url: &str, tokens: Tokens) {
        if let Err(error) = self.write_tokens(server_url, tokens) {
            tracing::warn!(error = %error, "the token store could not save tokens");
        }
    }

    fn tokens_for_renewal(&self, server_url: &str) -> Result<Option<Tokens>, TokenStoreError> {
        self.read_tokens(server_url)
    }

    fn save_renewed_tokens(&self, server_url: &str, tokens: Tokens) -> Result<(), TokenStoreError> {
        self.write_tokens(server_url, tokens)
    }

    fn clear_tokens(&self, server_url: &str) {
        let url = server_url.to_owned();
        self.run("forgetting tokens", move |tx, schema| {
            tx.execute(
                &format!("DELETE FROM {schema}.oauth_tokens WHERE server_url = $1"),
                &[&url],
            )
        });
    }

    fn registration(&self, issuer: &str) -> Option<Registration> {
        let key = issuer.to_owned();
        let row = self.run("reading a registration", move |tx, schema| {
            tx.query_opt(
                &format!(
                    "SELECT issuer, client_id, client_secret, auth_method \
                     FROM {schema}.oauth_registrations WHERE issuer = $1"
                ),
                &[&key],
            )
        })??;
        let read = || -> Result<Registration, postgres::Error> {
            Ok(Registration {
                issuer: row.try_get(0)?,
                client_id: row.try_get(1)?,
                client_secret: row.try_get::<_, Option<String>>(2)?.map(Secret::new),
                auth_method: row.try_get(3)?,
            })
        };
        read()
            .map_err(|_| self.unreadable("registration", "a column of the wrong type"))
            .ok()
    }

    fn save_registration(&self, issuer: &str, registration: Registration) {
        let key = issuer.to_owned();
        self.run("saving a registration", move |tx, schema| {
            tx.execute(
                &format!(
                    "INSERT INTO {schema}.oauth_registrations
                        (issuer, client_id, client_secret, auth_method) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (issuer) DO UPDATE SET
                        client_id = EXCLUDED.client_id, client_secret = EXCLUDED.client_secret,
                        auth_method = EXCLUDED.auth_method, updated_at = now()"
                ),
                &[
                    &key,
                    &registration.client_id,
                    &registration.client_secret.as_ref().map(Secret::expose),
                    &registration.auth_method,
                ],
            )
        });
    }

    fn issuer_binding(&self, server_url: &str) -> Option<IssuerBinding> {
        let url = server_url.to_owned();
        let row = self.run("reading an issuer binding", move |tx, schema| {
            tx.query_opt(
                &format!(
                    "SELECT client_id, issuer FROM {schema}.oauth_issuer_bindings \
                     WHERE server_url = $1"
                ),
                &[&url],
            )
        })??;
        match (row.try_get::<_, String>(0), row.try_get::<_, String>(1)) {
            (Ok(client_id), Ok(issuer)) => Some(IssuerBinding::new(client_id, issuer)),
            _ => {
                self.unreadable("issuer binding", "a column of the wrong type");
                None
            }
        }
    }

    fn save_issuer_binding(&self, server_url: &str, binding: IssuerBinding) {
        let url = server_url.to_owned();
        self.run("saving an issuer binding", move |tx, schema| {
            tx.execute(
                &format!(
                    "INSERT INTO {schema}.oauth_issuer_bindings (server_url, client_id, issuer)
                     VALUES ($1, $2, $3)
                     ON CONFLICT (server_url) DO UPDATE SET
                        client_id = EXCLUDED.client_id, issuer = EXCLUDED.issuer"
                ),
                &[&url, &binding.client_id, &binding.issuer],
            )
        });
    }

    /// The renewals of this server in this process first (one connection waits per process,
    /// not one per waiter), then the server's row in `oauth_renewals`, locked (`FOR UPDATE`)
    /// in a transaction on a connection of its own, held open on a thread of its own until
    /// the guard is dropped.
    fn lock_renewal(&self, server_url: &str) -> RenewalFuture {
        let config = self.config.clone();
        let schema = self.schema.clone();
        let shown = self.shown.clone();
        let url = server_url.to_owned();
        let store = super::store::store_id(self);
        Box::pin(async move {
            let db = |message: String| TokenStoreError::Database {
                database: shown.clone(),
                message,
            };
            let local = LocalRenewal::lock(store, url.clone()).await;
            let (granted, grant) = tokio::sync::oneshot::channel();
            std::thread::Builder::new()
                .name("mcp-token-renewal".into())
                .spawn(move || hold_renewal(&config, &schema, &url, granted))
                .map_err(|e| db(format!("the renewal lock's thread cannot be started: {e}")))?;
            match grant.await {
                Ok(Ok(release)) => Ok(RenewalGuard::holding((local, release))),
                Ok(Err(message)) => Err(db(message)),
                Err(_) => Err(db("the renewal lock's thread ended".into())),
            }
        })
    }
}

/// On a thread of its own: locks `url`'s row in `oauth_renewals` on a connection of its own,
/// tells `granted`, and holds the lock until the sender it gave is dropped (at once, if
/// nobody took it: the waiter gave up).
fn hold_renewal(
    config: &postgres::Config,
    schema: &str,
    url: &str,
    granted: tokio::sync::oneshot::Sender<Result<std::sync::mpsc::Sender<()>, String>>,
) {
    let locked = (|| -> Result<postgres::Client, String> {
        let mut client = crate::postgres::open_bounded(config, LOCK_WAIT)?;
        let sql = |e: postgres::Error| crate::postgres::message(&e);
        // The transaction stays open, idle, for as long as the renewal takes: a server or
        // role that ends idle transactions would end the lock under the renewer. The wait
        // for the lock ends when the provider's does: a waiter that outlived its renewal
        // would hold a connection and a thread until the holder let go.
        client
            .batch_execute(&format!(
                "SET idle_in_transaction_session_timeout = 0; SET lock_timeout = {}",
                LOCK_WAIT.as_millis()
            ))
            .map_err(sql)?;
        client
            .execute(
                &format!(
                    "INSERT INTO {schema}.oauth_renewals (server_url) VALUES ($1) \
                     ON CONFLICT DO NOTHING"
                ),
                &[&url],
            )
            .map_err(sql)?;
        client.batch_execute("BEGIN").map_err(sql)?;
        client
            .execute(
                &format!("SELECT 1 FROM {schema}.oauth_renewals WHERE server_url = $1 FOR UPDATE"),
                &[&url],
            )
            .map_err(sql)?;
        Ok(client)
    })();
    match locked {
        Ok(mut client) => {
            let (release, released) = std::sync::mpsc::channel::<()>();
            if granted.send(Ok(release)).is_ok() {
                // Until the guard, and the sender in it, is dropped.
                let _ = released.recv();
            }
            let _ = client.batch_execute("COMMIT");
        }
        Err(e) => {
            let _ = granted.send(Err(e));
        }
    }
}

/// A row of `oauth_tokens` as [`Tokens`]; `Err`: which column is wrong (never its value).
fn parse_tokens(row: &Row) -> Result<Tokens, &'static str> {
    let issuer: String = row.try_get(0).map_err(|_| "issuer")?;
    let access: String = row.try_get(1).map_err(|_| "access_token")?;
    let mut tokens = Tokens::new(issuer, access);
    tokens.refresh_token = row
        .try_get::<_, Option<String>>(2)
        .map_err(|_| "refresh_token")?
        .map(Secret::new);
    tokens.expires_at = match row.try_get::<_, Option<i64>>(3).map_err(|_| "expires_at")? {
        Some(nanos) => Some(time_from_nanos(nanos).ok_or("expires_at")?),
        None => None,
    };
    tokens.scope = row.try_get(4).map_err(|_| "scope")?;
    tokens.dpop = row.try_get(5).map_err(|_| "dpop")?;
    Ok(tokens)
}

/// Against a real server: `MCP_SUPERVISOR_TEST_POSTGRES` names it (`.ci/postgres` starts one);
/// each store in a schema of its own.
#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};

    fn fresh() -> (PostgresTokenStore, String) {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let schema = format!(
            "tokens_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let target = crate::tasks::tests::postgres_target();
        let store = PostgresTokenStore::connect_in(&target, &schema).expect("the test database");
        (store, schema)
    }

    #[test]
    fn the_postgres_store_keeps_what_a_store_keeps_exactly() {
        let (store, schema) = fresh();
        crate::auth::store::tests::suite(&store);
        // To the nanosecond: the provider compares what it holds with what is stored.
        let at = UNIX_EPOCH + Duration::new(1_900_000_000, 123_456_789);
        let tokens = Tokens::new("https://as", "a").expires_at(at);
        store.save_tokens("u", tokens.clone());
        assert_eq!(store.tokens("u"), Some(tokens.clone()));
        // Another replica's store on the same schema sees it; migrating again changes nothing.
        let target = crate::tasks::tests::postgres_target();
        let other = PostgresTokenStore::connect_in(&target, &schema).unwrap();
        assert_eq!(other.tokens("u"), Some(tokens));
        assert_eq!(store.failures(), 0);
        // A password in the target is never shown (the test server trusts loopback).
        let with_password =
            PostgresTokenStore::connect_in(&format!("{target} password=hunter2"), &schema).unwrap();
        let shown = format!("{with_password:?}");
        assert!(
            shown.contains("postgresql://postgres@127.0.0.1:"),
            "{shown}"
        );
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    /// Found by review: the task and token stores creating one new schema at once collided
    /// in the catalog (each under its own migration lock). One lock serializes them now.
    #[test]
    fn task_and_token_stores_starting_at_once_on_a_new_schema_both_start() {
        for round in 0..5 {
            let schema = format!("together_{}_{round}", std::process::id());
            let target = crate::tasks::tests::postgres_target();
            let (t1, s1) = (target.clone(), schema.clone());
            let tasks = std::thread::spawn(move || {
                crate::tasks::PostgresTaskStore::connect_in(&t1, &s1).map(|_| ())
            });
            let tokens = PostgresTokenStore::connect_in(&target, &schema).map(|_| ());
            assert_eq!(tokens, Ok(()), "round {round}");
            assert!(tasks.join().unwrap().is_ok(), "round {round}");
        }
    }

    /// Another replica's side of the row lock: what `lock_renewal` does in another process,
    /// without this process's own lock in front (it would wait here, not in the database).
    fn other_replica(
        store: &PostgresTokenStore,
        url: &str,
    ) -> tokio::sync::oneshot::Receiver<Result<std::sync::mpsc::Sender<()>, String>> {
        let (granted, grant) = tokio::sync::oneshot::channel();
        let (config, schema, url) = (store.config.clone(), store.schema.clone(), url.to_owned());
        std::thread::spawn(move || hold_renewal(&config, &schema, &url, granted));
        grant
    }

    /// Whether a renewal lock of `schema` waits in the database (as `pg_stat_activity` shows).
    async fn waiting_in_database(schema: &str) -> bool {
        let (target, schema) = (crate::tasks::tests::postgres_target(), schema.to_owned());
        tokio::task::spawn_blocking(move || {
            let mut client = crate::postgres::open_bounded(
                &crate::postgres::config(&target).unwrap(),
                Duration::from_secs(5),
            )
            .unwrap();
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                     AND query LIKE '%' || $1 || '%oauth_renewals%FOR UPDATE%'",
                    &[&schema],
                )
                .unwrap();
            row.get::<_, i64>(0) >= 1
        })
        .await
        .unwrap()
    }

    /// Waits until another replica's lock waits in the database, 20 s at most; it must not be
    /// granted meanwhile.
    async fn until_waiting<T: std::fmt::Debug>(
        schema: &str,
        waiting: &mut tokio::sync::oneshot::Receiver<T>,
    ) {
        let deadline = SystemTime::now() + Duration::from_secs(20);
        loop {
            tokio::select! {
                biased;
                granted = &mut *waiting => panic!("granted while another holds it: {granted:?}"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if waiting_in_database(schema).await {
                return;
            }
            assert!(SystemTime::now() < deadline, "the waiter never blocked");
        }
    }

    #[actix::test]
    async fn a_renewal_lock_waits_for_another_replicas_until_it_is_dropped() {
        let (first, schema) = fresh();
        let target = crate::tasks::tests::postgres_target();
        let second = PostgresTokenStore::connect_in(&target, &schema).unwrap();
        let held = first.lock_renewal("https://mcp/one").await.expect("a lock");
        // Another server's lock is not this one.
        let elsewhere = second
            .lock_renewal("https://mcp/two")
            .await
            .expect("another lock");
        drop(elsewhere);
        let mut waiting = other_replica(&second, "https://mcp/one");
        until_waiting(&schema, &mut waiting).await;
        drop(held);
        let granted = tokio::time::timeout(Duration::from_secs(20), waiting)
            .await
            .expect("granted once the holder lets go");
        assert!(matches!(granted, Ok(Ok(_))), "{granted:?}");
        drop(granted);
        // A waiter that gave up before it was granted leaves the lock free.
        let held = first.lock_renewal("https://mcp/one").await.expect("a lock");
        let mut abandoned = other_replica(&second, "https://mcp/one");
        until_waiting(&schema, &mut abandoned).await;
        drop(abandoned);
        drop(held);
        let again = tokio::time::timeout(
            Duration::from_secs(20),
            first.lock_renewal("https://mcp/one"),
        )
        .await
        .expect("free again");
        assert!(again.is_ok(), "{again:?}");
    }

    #[actix::test]
    async fn an_unreachable_database_fails_the_renewal_lock_and_reads_find_nothing() {
        let error = PostgresTokenStore::connect(
            "host=127.0.0.1 port=1 user=nobody password=hunter2 connect_timeout=2",
        )
        .expect_err("nothing listens on port 1");
        assert!(matches!(error, TokenStoreError::Database { .. }), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        let invalid = PostgresTokenStore::connect_in("host=x", "x; DROP").expect_err("a schema");
        assert!(
            matches!(invalid, TokenStoreError::Invalid { .. }),
            "{invalid}"
        );
        // A schema dropped under a live store: reads find nothing and are counted, and the
        // renewal lock fails (the row cannot be made).
        let (store, schema) = fresh();
        let target = crate::tasks::tests::postgres_target();
        // On a thread of its own: the client's runtime cannot run inside this one.
        tokio::task::spawn_blocking(move || {
            let mut admin = crate::postgres::open_bounded(
                &crate::postgres::config(&target).unwrap(),
                Duration::from_secs(5),
            )
            .unwrap();
            admin
                .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
                .unwrap();
        })
        .await
        .unwrap();
        assert_eq!(store.tokens("u"), None);
        store.save_tokens("u", Tokens::new("https://as", "a"));
        assert_eq!(store.failures(), 2);
        // A renewal asks the fallible way: it learns the store cannot say.
        let read = store.tokens_for_renewal("u");
        assert!(
            matches!(read, Err(TokenStoreError::Database { .. })),
            "{read:?}"
        );
        let saved = store.save_renewed_tokens("u", Tokens::new("https://as", "b"));
        assert!(
            matches!(saved, Err(TokenStoreError::Database { .. })),
            "{saved:?}"
        );
        let lock = store.lock_renewal("u").await;
        assert!(
            matches!(lock, Err(TokenStoreError::Database { .. })),
            "{lock:?}"
        );
    }

    /// Found by review: a database (or role) that ends transactions left idle took the lock
    /// from under its holder. The lock's connection turns that off for itself.
    #[actix::test]
    async fn a_held_renewal_lock_outlasts_an_idle_transaction_timeout() {
        let (_, schema) = fresh();
        let target = format!(
            "{} options='-c idle_in_transaction_session_timeout=200'",
            crate::tasks::tests::postgres_target()
        );
        let first = PostgresTokenStore::connect_in(&target, &schema).unwrap();
        let held = first
            .lock_renewal("https://mcp/idle")
            .await
            .expect("a lock");
        let mut waiting = other_replica(&first, "https://mcp/idle");
        until_waiting(&schema, &mut waiting).await;
        // Idle in its transaction for five times the timeout: the scenario's time passing.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert!(
            futures_util::poll!(&mut waiting).is_pending(),
            "granted to another while the holder keeps it"
        );
        drop(held);
        let granted = tokio::time::timeout(Duration::from_secs(20), waiting)
            .await
            .expect("granted once the holder lets go");
        assert!(matches!(granted, Ok(Ok(_))), "{granted:?}");
    }
}
