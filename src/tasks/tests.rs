//! One suite of store tests, run against every [`TaskStore`]: the stores must not differ in
//! anything a driver could notice.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::record::{MAX_ANSWERED_INPUTS, MAX_MESSAGE_BYTES, MAX_NAME_BYTES, MAX_OUTCOME_BYTES};
use super::*;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::new(1_700_000_000 + secs, 123_456_789)
}

fn record(server: &str, id: &str, created: u64) -> TaskRecord {
    TaskRecord::new(
        server,
        format!("https://{server}.example/mcp"),
        id,
        "search",
        arguments_digest(&json!({"q": id})),
        at(created),
    )
}

fn key(server: &str, id: &str) -> TaskKey {
    TaskKey::new(server, id)
}

/// Declares the suite's tests for one store; `$make` builds a store that keeps at most the
/// given number of tasks.
macro_rules! store_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            use super::*;

            fn store() -> impl TaskStore {
                ($make)(DEFAULT_MAX_TASKS)
            }

            #[test]
            fn insert_get_and_idempotent_reinsert() {
                insert_get_and_idempotent_reinsert_(&store());
            }
            #[test]
            fn update_changes_a_running_task_only() {
                update_changes_a_running_task_only_(&store());
            }
            #[test]
            fn an_input_is_answered_once() {
                an_input_is_answered_once_(&store());
            }
            #[test]
            fn the_first_end_wins() {
                the_first_end_wins_(&store());
            }
            #[test]
            fn an_outcome_is_taken_once() {
                an_outcome_is_taken_once_(&store());
            }
            #[test]
            fn list_remove_and_purge() {
                list_remove_and_purge_(&store());
            }
            #[test]
            fn fields_are_bounded() {
                fields_are_bounded_(&store());
            }
            #[test]
            fn a_full_store_forgets_a_delivered_task_only() {
                a_full_store_forgets_a_delivered_task_only_(&($make)(3));
            }
            #[test]
            fn missing_tasks() {
                missing_tasks_(&store());
            }
            #[test]
            fn many_are_got_at_once() {
                many_are_got_at_once_(&store());
            }
        }
    };
}

fn many_are_got_at_once_(store: &impl TaskStore) {
    let (a, b) = (record("fs", "t-1", 1), record("fs", "t-2", 2));
    store.insert(&a).unwrap();
    store.insert(&b).unwrap();
    store.insert(&record("other", "t-1", 3)).unwrap();
    let ids = ["t-2".to_owned(), "t-1".to_owned(), "t-9".to_owned()];
    let mut got = store.get_many("fs", &ids).unwrap();
    got.sort_by(|x, y| x.task_id.cmp(&y.task_id));
    assert_eq!(got, vec![a, b], "the stored ones, of that server only");
    assert!(store.get_many("fs", &[]).unwrap().is_empty());
}

store_suite!(memory, |max| MemoryTaskStore::new().max_tasks(max));
#[cfg(feature = "sqlite")]
store_suite!(sqlite, |max| SqliteTaskStore::in_memory()
    .unwrap()
    .max_tasks(max));
// The same suite on a file: WAL and synchronous=FULL on a real disk.
#[cfg(feature = "sqlite")]
store_suite!(sqlite_file, |max| {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteTaskStore::open(dir.path().join("tasks.sqlite3"))
        .unwrap()
        .max_tasks(max);
    on_disk::OnDisk { store, _dir: dir }
});

#[cfg(feature = "sqlite")]
mod on_disk {
    use super::*;

    /// A store in a temporary directory that goes with it (fields drop in order).
    pub(super) struct OnDisk {
        pub(super) store: SqliteTaskStore,
        pub(super) _dir: tempfile::TempDir,
    }

    impl TaskStore for OnDisk {
        fn insert(&self, r: &TaskRecord) -> Result<bool, TaskStoreError> {
            self.store.insert(r)
        }
        fn update(&self, k: &TaskKey, c: &TaskUpdate) -> Result<bool, TaskStoreError> {
            self.store.update(k, c)
        }
        fn mark_input_answered(&self, k: &TaskKey, i: &str) -> Result<bool, TaskStoreError> {
            self.store.mark_input_answered(k, i)
        }
        fn finish(
            &self,
            k: &TaskKey,
            s: TaskStatus,
            o: Option<&str>,
        ) -> Result<bool, TaskStoreError> {
            self.store.finish(k, s, o)
        }
        fn take_outcome(&self, k: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
            self.store.take_outcome(k)
        }
        fn get(&self, k: &TaskKey) -> Result<Option<TaskRecord>, TaskStoreError> {
            self.store.get(k)
        }
        fn list(&self, s: Option<&str>) -> Result<Vec<TaskRecord>, TaskStoreError> {
            self.store.list(s)
        }
        fn remove(&self, k: &TaskKey) -> Result<bool, TaskStoreError> {
            self.store.remove(k)
        }
        fn purge(&self, now: SystemTime) -> Result<usize, TaskStoreError> {
            self.store.purge(now)
        }
    }
}

fn insert_get_and_idempotent_reinsert_(store: &impl TaskStore) {
    let r = record("fs", "t-1", 0)
        .ttl(Duration::from_millis(60_000))
        .poll_interval(Duration::from_millis(1500))
        .status_message("queued");
    assert!(store.insert(&r).unwrap());
    assert_eq!(store.get(&r.key()).unwrap(), Some(r.clone()));
    assert!(!store.insert(&r).unwrap(), "an identical re-insert is fine");
    let other = r.clone().status_message("something else");
    let e = store.insert(&other).unwrap_err();
    assert!(
        matches!(&e, TaskStoreError::Exists { key } if *key == r.key()),
        "{e}"
    );
    assert!(e.to_string().contains("\"t-1\""), "{e}");
    assert_eq!(
        store.get(&r.key()).unwrap(),
        Some(r.clone()),
        "left as it was"
    );
    // Another server's task of the same id is another task.
    let r2 = record("web", "t-1", 1);
    assert!(store.insert(&r2).unwrap());
    assert_eq!(store.get(&r2.key()).unwrap(), Some(r2));
}

fn update_changes_a_running_task_only_(store: &impl TaskStore) {
    let r = record("fs", "t-1", 0).status_message("starting");
    store.insert(&r).unwrap();
    let k = r.key();
    let change = TaskUpdate::new()
        .status(TaskStatus::InputRequired)
        .status_message("needs a confirmation")
        .poll_interval(Duration::from_millis(250))
        .ttl(Duration::from_secs(600));
    assert!(store.update(&k, &change).unwrap());
    let got = store.get(&k).unwrap().unwrap();
    assert_eq!(got.status, TaskStatus::InputRequired);
    assert_eq!(got.status_message.as_deref(), Some("needs a confirmation"));
    assert_eq!(got.poll_interval, Some(Duration::from_millis(250)));
    assert_eq!(got.ttl, Some(Duration::from_secs(600)));
    assert!(got.updated_at > r.updated_at, "stamped");
    // Fields left out stay; a cleared message is cleared.
    let change = TaskUpdate::new()
        .status(TaskStatus::Working)
        .no_status_message();
    assert!(store.update(&k, &change).unwrap());
    let got = store.get(&k).unwrap().unwrap();
    assert_eq!(got.status, TaskStatus::Working);
    assert_eq!(got.status_message, None);
    assert_eq!(got.poll_interval, Some(Duration::from_millis(250)));
    // A terminal status is not an update.
    let e = store
        .update(&k, &TaskUpdate::new().status(TaskStatus::Completed))
        .unwrap_err();
    assert!(matches!(e, TaskStoreError::Invalid { .. }), "{e}");
    // Once ended, nothing moves it.
    assert!(store.finish(&k, TaskStatus::Failed, None).unwrap());
    let ended = store.get(&k).unwrap().unwrap();
    let back = TaskUpdate::new()
        .status(TaskStatus::Working)
        .status_message("again");
    assert!(!store.update(&k, &back).unwrap());
    assert_eq!(store.get(&k).unwrap().unwrap(), ended);
}

fn an_input_is_answered_once_(store: &impl TaskStore) {
    let r = record("fs", "t-1", 0).status(TaskStatus::InputRequired);
    store.insert(&r).unwrap();
    let k = r.key();
    assert!(store.mark_input_answered(&k, "elicit-1").unwrap());
    assert!(!store.mark_input_answered(&k, "elicit-1").unwrap(), "twice");
    assert!(store.mark_input_answered(&k, "elicit-2").unwrap());
    let got = store.get(&k).unwrap().unwrap();
    assert_eq!(
        got.answered_inputs
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["elicit-1", "elicit-2"]
    );
    store.finish(&k, TaskStatus::Cancelled, None).unwrap();
    assert!(
        !store.mark_input_answered(&k, "elicit-3").unwrap(),
        "an ended task is answered nothing"
    );
    // Bounded: the answer after the last is refused, none forgotten.
    let r = record("fs", "t-2", 0);
    store.insert(&r).unwrap();
    for i in 0..MAX_ANSWERED_INPUTS {
        assert!(store
            .mark_input_answered(&r.key(), &format!("k{i}"))
            .unwrap());
    }
    let e = store.mark_input_answered(&r.key(), "one-more").unwrap_err();
    assert!(
        matches!(
            e,
            TaskStoreError::TooLarge {
                limit: MAX_ANSWERED_INPUTS,
                ..
            }
        ),
        "{e}"
    );
    assert!(!store.mark_input_answered(&r.key(), "k0").unwrap());
    let long = "k".repeat(MAX_NAME_BYTES + 1);
    let e = store.mark_input_answered(&r.key(), &long).unwrap_err();
    assert!(
        matches!(
            e,
            TaskStoreError::TooLarge {
                what: "input request key",
                ..
            }
        ),
        "{e}"
    );
}

fn the_first_end_wins_(store: &impl TaskStore) {
    let r = record("fs", "t-1", 0);
    store.insert(&r).unwrap();
    let k = r.key();
    let e = store.finish(&k, TaskStatus::Working, None).unwrap_err();
    assert!(matches!(e, TaskStoreError::Invalid { .. }), "{e}");
    assert!(store
        .finish(&k, TaskStatus::Completed, Some(r#"{"content":[]}"#))
        .unwrap());
    assert!(!store
        .finish(&k, TaskStatus::Failed, Some(r#"{"code":-1}"#))
        .unwrap());
    let got = store.get(&k).unwrap().unwrap();
    assert_eq!(got.status, TaskStatus::Completed);
    assert_eq!(got.outcome.as_deref(), Some(r#"{"content":[]}"#));
    assert!(!got.delivered);
}

fn an_outcome_is_taken_once_(store: &impl TaskStore) {
    let r = record("fs", "t-1", 0);
    store.insert(&r).unwrap();
    let k = r.key();
    assert_eq!(store.take_outcome(&k).unwrap(), None, "not ended yet");
    store
        .finish(
            &k,
            TaskStatus::Failed,
            Some(r#"{"code":-32000,"message":"x"}"#),
        )
        .unwrap();
    let taken = store.take_outcome(&k).unwrap().unwrap();
    assert_eq!(taken.status, TaskStatus::Failed);
    assert_eq!(
        taken.outcome.as_deref(),
        Some(r#"{"code":-32000,"message":"x"}"#)
    );
    assert!(taken.delivered);
    assert_eq!(store.take_outcome(&k).unwrap(), None, "taken once");
    let kept = store.get(&k).unwrap().unwrap();
    assert!(kept.delivered);
    assert_eq!(kept.outcome, None, "a delivered outcome is not kept");
    assert_eq!(store.take_outcome(&key("fs", "nope")).unwrap(), None);
    // A task cancelled without a payload is delivered too (its end is the news).
    let r = record("fs", "t-2", 0);
    store.insert(&r).unwrap();
    store.finish(&r.key(), TaskStatus::Cancelled, None).unwrap();
    let taken = store.take_outcome(&r.key()).unwrap().unwrap();
    assert_eq!((taken.status, taken.outcome), (TaskStatus::Cancelled, None));
    assert_eq!(store.take_outcome(&r.key()).unwrap(), None);
}

fn list_remove_and_purge_(store: &impl TaskStore) {
    let ttl = Duration::from_secs(100);
    store.insert(&record("b", "late", 30)).unwrap();
    store.insert(&record("a", "early", 10).ttl(ttl)).unwrap();
    store.insert(&record("b", "middle", 20)).unwrap();
    store.insert(&record("a", "same-time", 20)).unwrap();
    let ids = |records: Vec<TaskRecord>| -> Vec<String> {
        records.into_iter().map(|r| r.task_id).collect()
    };
    assert_eq!(
        ids(store.list(None).unwrap()),
        ["early", "same-time", "middle", "late"],
        "oldest first, then by server and id"
    );
    assert_eq!(ids(store.list(Some("b")).unwrap()), ["middle", "late"]);
    assert!(store.list(Some("c")).unwrap().is_empty());

    assert!(store.remove(&key("b", "middle")).unwrap());
    assert!(!store.remove(&key("b", "middle")).unwrap());

    // Not yet: the ttl runs to at(10) + 100 s.
    assert_eq!(store.purge(at(109)).unwrap(), 0);
    assert_eq!(
        store.purge(at(110)).unwrap(),
        1,
        "expired, whatever its state"
    );
    assert_eq!(ids(store.list(None).unwrap()), ["same-time", "late"]);

    // A delivered task is kept for the retention after its delivery, then forgotten; an
    // ended one not delivered is owed and kept.
    let k = key("a", "same-time");
    store.finish(&k, TaskStatus::Completed, Some("{}")).unwrap();
    store
        .finish(&key("b", "late"), TaskStatus::Completed, Some("{}"))
        .unwrap();
    let delivered_at = store.take_outcome(&k).unwrap().unwrap().updated_at;
    assert_eq!(store.purge(delivered_at).unwrap(), 0);
    let later = delivered_at + DELIVERED_RETENTION;
    assert_eq!(store.purge(later - Duration::from_nanos(1)).unwrap(), 0);
    assert_eq!(store.purge(later).unwrap(), 1);
    assert_eq!(ids(store.list(None).unwrap()), ["late"]);
    // A long ttl keeps a task that long.
    let years = Duration::from_secs(200 * 366 * 86_400);
    store.insert(&record("a", "long", 0).ttl(years)).unwrap();
    assert_eq!(store.purge(later).unwrap(), 0);
}

fn fields_are_bounded_(store: &impl TaskStore) {
    let long = |n: usize| "x".repeat(n);
    let too_large = |r: TaskRecord, what: &str| {
        let e = store.insert(&r).unwrap_err();
        assert!(
            matches!(&e, TaskStoreError::TooLarge { what: w, .. } if *w == what),
            "{what}: {e}"
        );
    };
    too_large(record("fs", &long(MAX_NAME_BYTES + 1), 0), "task id");
    // A NUL character is kept by no store (PostgreSQL's text cannot hold one).
    for nul in [
        record("fs", "t\0", 0),
        record("fs", "t", 0).status_message("a\0b".to_owned()),
    ] {
        let e = store.insert(&nul).unwrap_err();
        assert!(matches!(e, TaskStoreError::Invalid { .. }), "{e}");
    }
    let stored = record("fs", "nul", 0);
    store.insert(&stored).unwrap();
    let e = store
        .finish(&stored.key(), TaskStatus::Completed, Some("{\"a\":\"\0\"}"))
        .unwrap_err();
    assert!(matches!(e, TaskStoreError::Invalid { .. }), "{e}");
    assert!(store.remove(&stored.key()).unwrap());
    too_large(record(&long(MAX_NAME_BYTES + 1), "t", 0), "server name");
    too_large(
        record("fs", "t", 0).status_message(long(MAX_MESSAGE_BYTES + 1)),
        "status message",
    );
    // The limits themselves are fine.
    let r = record("fs", &long(MAX_NAME_BYTES), 0).status_message(long(MAX_MESSAGE_BYTES));
    assert!(store.insert(&r).unwrap());
    assert_eq!(store.get(&r.key()).unwrap(), Some(r));

    let r = record("fs", "t-1", 0);
    store.insert(&r).unwrap();
    let e = store
        .update(
            &r.key(),
            &TaskUpdate::new().status_message(long(MAX_MESSAGE_BYTES + 1)),
        )
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
    let e = store
        .finish(
            &r.key(),
            TaskStatus::Completed,
            Some(&long(MAX_OUTCOME_BYTES + 1)),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            TaskStoreError::TooLarge {
                what: "outcome",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        store.get(&r.key()).unwrap(),
        Some(r.clone()),
        "nothing changed"
    );
    // The largest outcome is kept whole.
    let big = long(MAX_OUTCOME_BYTES);
    assert!(store
        .finish(&r.key(), TaskStatus::Completed, Some(&big))
        .unwrap());
    assert_eq!(
        store.take_outcome(&r.key()).unwrap().unwrap().outcome,
        Some(big)
    );

    // Times a store cannot keep exactly are refused, not rounded.
    let far = UNIX_EPOCH + Duration::from_secs(300 * 366 * 86_400);
    let e = store
        .insert(&record("fs", "far", 0).updated_at(far))
        .unwrap_err();
    assert!(
        matches!(
            e,
            TaskStoreError::Invalid {
                what: "updated_at",
                ..
            }
        ),
        "{e}"
    );
    // An outcome before the end is a contradiction.
    let e = store
        .insert(&record("fs", "early", 0).outcome("{}"))
        .unwrap_err();
    assert!(matches!(e, TaskStoreError::Invalid { .. }), "{e}");
}

fn a_full_store_forgets_a_delivered_task_only_(store: &impl TaskStore) {
    for i in 0..3 {
        store.insert(&record("fs", &format!("t-{i}"), i)).unwrap();
    }
    let e = store.insert(&record("fs", "t-3", 3)).unwrap_err();
    assert!(
        matches!(
            e,
            TaskStoreError::TooLarge {
                what: "tasks",
                limit: 3
            }
        ),
        "{e}"
    );
    // An identical re-insert is no new task.
    assert!(!store.insert(&record("fs", "t-0", 0)).unwrap());
    store
        .finish(&key("fs", "t-1"), TaskStatus::Completed, None)
        .unwrap();
    assert!(
        store.insert(&record("fs", "t-3", 3)).is_err(),
        "ended, but still owed"
    );
    store.take_outcome(&key("fs", "t-1")).unwrap().unwrap();
    assert!(store.insert(&record("fs", "t-3", 3)).unwrap());
    let ids: Vec<_> = store
        .list(None)
        .unwrap()
        .into_iter()
        .map(|r| r.task_id)
        .collect();
    assert_eq!(ids, ["t-0", "t-2", "t-3"]);
}

fn missing_tasks_(store: &impl TaskStore) {
    let k = key("fs", "nope");
    assert_eq!(store.get(&k).unwrap(), None);
    let not_found = |e: TaskStoreError| matches!(e, TaskStoreError::NotFound { key } if key == k);
    assert!(not_found(store.update(&k, &TaskUpdate::new()).unwrap_err()));
    assert!(not_found(store.mark_input_answered(&k, "i").unwrap_err()));
    assert!(not_found(
        store.finish(&k, TaskStatus::Completed, None).unwrap_err()
    ));
    assert!(!store.remove(&k).unwrap());
    assert_eq!(store.purge(at(0)).unwrap(), 0);
}

#[cfg(feature = "postgres")]
store_suite!(postgres, |max| postgres_store::fresh().max_tasks(max));

/// The PostgreSQL store against a real server: `MCP_SUPERVISOR_TEST_POSTGRES` names it (a
/// connection string; `.ci/run` starts a throwaway cluster of Debian's PostgreSQL on loopback
/// and sets it, see `.ci/postgres`). Each store gets a schema of its own, so tests run side by
/// side.
/// The test database's connection string (see [`postgres_store`]).
#[cfg(feature = "postgres")]
pub(crate) fn postgres_target() -> String {
    postgres_store::target()
}

#[cfg(feature = "postgres")]
mod postgres_store {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    pub(super) fn target() -> String {
        std::env::var("MCP_SUPERVISOR_TEST_POSTGRES").unwrap_or_else(|_| {
            panic!(
                "the postgres feature's tests need a PostgreSQL server: set \
                 MCP_SUPERVISOR_TEST_POSTGRES to its connection string (`.ci/postgres` starts one)"
            )
        })
    }

    fn schema() -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        format!(
            "test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    pub(super) fn fresh() -> PostgresTaskStore {
        PostgresTaskStore::connect_in(&target(), &schema()).expect("the test database")
    }

    #[test]
    fn an_unreachable_database_is_an_error_at_once_not_a_hang() {
        let started = std::time::Instant::now();
        let error = PostgresTaskStore::connect(
            "host=127.0.0.1 port=1 user=nobody password=hunter2 connect_timeout=2",
        )
        .expect_err("nothing listens on port 1");
        assert!(matches!(error, TaskStoreError::Database { .. }), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let bad = PostgresTaskStore::connect("host=a port=notaport").expect_err("no port");
        assert!(bad.to_string().contains("does not parse"), "{bad}");
        let schema = PostgresTaskStore::connect_in(&target(), "x; DROP TABLE y").expect_err("");
        assert!(matches!(schema, TaskStoreError::Invalid { .. }), "{schema}");
        // A password in the target is never shown (the test server trusts loopback).
        let store = PostgresTaskStore::connect(&format!("{} password=hunter2", target())).unwrap();
        let shown = format!("{store:?}");
        assert!(
            shown.contains("postgresql://postgres@127.0.0.1:"),
            "{shown}"
        );
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    /// The news of tasks that end (`LISTEN`/`NOTIFY`): every store of the schema hears it,
    /// a store of another schema does not, and a listener that lost its connection says
    /// news may have been missed once it listens again.
    #[actix::test]
    async fn a_task_that_ends_is_news_to_the_stores_of_its_schema_and_a_lost_listener_says_so() {
        async fn next(news: &mut tokio::sync::broadcast::Receiver<TaskEnd>) -> TaskEnd {
            tokio::time::timeout(Duration::from_secs(20), news.recv())
                .await
                .expect("news within 20 s")
                .expect("the store is there")
        }
        let schema = schema();
        let writer = PostgresTaskStore::connect_in(&target(), &schema).unwrap();
        // Named, so that only its listener is cut below (not other tests' on the server).
        let name = format!("news_{}", std::process::id());
        let reader = PostgresTaskStore::connect_in(
            &format!("{} application_name={name}", target()),
            &schema,
        )
        .unwrap();
        let apart = fresh();
        let mut news = reader.watch_ends().unwrap();
        let mut apart_news = apart.watch_ends().unwrap();
        // Listening: each says so first.
        assert_eq!(next(&mut news).await, TaskEnd::Missed);
        assert_eq!(next(&mut apart_news).await, TaskEnd::Missed);

        assert!(writer.insert(&record("fs", "t-1", 1)).unwrap());
        assert!(writer
            .finish(&key("fs", "t-1"), TaskStatus::Failed, None)
            .unwrap());
        assert_eq!(next(&mut news).await, TaskEnd::Ended(key("fs", "t-1")));
        // In commit order on one channel: had the first reached the other schema's store, it
        // would come before this one's own.
        assert!(apart.insert(&record("fs", "t-2", 1)).unwrap());
        assert!(apart
            .finish(&key("fs", "t-2"), TaskStatus::Failed, None)
            .unwrap());
        assert_eq!(
            next(&mut apart_news).await,
            TaskEnd::Ended(key("fs", "t-2"))
        );

        // The listener's connection is cut (the database restarted, say).
        let (target, cutting) = (target(), name.clone());
        let cut = tokio::task::spawn_blocking(move || {
            let mut admin = ::postgres::Client::connect(&target, ::postgres::NoTls).unwrap();
            admin
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = $1 AND query LIKE '%LISTEN mcp_task_ends_%'",
                    &[&cutting],
                )
                .unwrap()
                .get::<_, i64>(0)
        })
        .await
        .unwrap();
        assert_eq!(cut, 1, "its one listener");
        assert_eq!(next(&mut news).await, TaskEnd::Missed, "listening again");

        // A store dropped takes its listener with it (the thread looks every second).
        drop(reader);
        let target = self::target();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (target, name) = (target.clone(), name.clone());
            let left = tokio::task::spawn_blocking(move || {
                let mut admin = ::postgres::Client::connect(&target, ::postgres::NoTls).unwrap();
                admin
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                        &[&name],
                    )
                    .unwrap()
                    .get::<_, i64>(0)
            })
            .await
            .unwrap();
            if left == 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{left} connections left"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Where a service makes its store: inside its async runtime (`#[actix::main]`), where the
    /// client's own runtime cannot start; the store's thread connects.
    #[actix::test]
    async fn a_store_is_made_and_used_inside_an_async_runtime() {
        let store = fresh();
        assert!(store.insert(&record("fs", "t-1", 1)).unwrap());
        assert_eq!(store.list(None).unwrap().len(), 1);
    }

    #[test]
    fn replicas_share_the_records_and_an_outcome_is_taken_once_among_them() {
        let schema = schema();
        let stores: Vec<Arc<PostgresTaskStore>> = (0..3)
            .map(|_| Arc::new(PostgresTaskStore::connect_in(&target(), &schema).unwrap()))
            .collect();
        let r = record("fs", "t-1", 1);
        assert!(stores[0].insert(&r).unwrap());
        assert_eq!(stores[1].get(&r.key()).unwrap(), Some(r.clone()));
        assert!(
            !stores[2].insert(&r).unwrap(),
            "the same record: already stored"
        );
        stores[1]
            .finish(&r.key(), TaskStatus::Completed, Some("{}"))
            .unwrap();
        let takers: Vec<_> = stores
            .iter()
            .map(|store| {
                let (store, key) = (store.clone(), r.key());
                std::thread::spawn(move || store.take_outcome(&key).unwrap())
            })
            .collect();
        let taken: Vec<_> = takers
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(taken.len(), 1, "delivered once among three replicas");
        assert_eq!(taken[0].outcome.as_deref(), Some("{}"));
    }

    #[test]
    fn the_bound_holds_across_replicas_inserting_at_once() {
        let schema = schema();
        let inserters: Vec<_> = (0..4)
            .map(|replica| {
                let store = PostgresTaskStore::connect_in(&target(), &schema)
                    .unwrap()
                    .max_tasks(5);
                std::thread::spawn(move || {
                    (0..5)
                        .filter(|i| {
                            let r = record("fs", &format!("r{replica}-{i}"), 1);
                            match store.insert(&r) {
                                Ok(stored) => stored,
                                Err(TaskStoreError::TooLarge { .. }) => false,
                                Err(e) => panic!("{e}"),
                            }
                        })
                        .count()
                })
            })
            .collect();
        let stored: usize = inserters.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(stored, 5, "exactly the bound, among four replicas");
        let store = PostgresTaskStore::connect_in(&target(), &schema).unwrap();
        assert_eq!(store.list(None).unwrap().len(), 5);
    }

    #[test]
    fn the_schema_is_migrated_once_and_a_newer_one_is_left_alone() {
        let schema = schema();
        let first = PostgresTaskStore::connect_in(&target(), &schema).unwrap();
        first.insert(&record("fs", "t-1", 1)).unwrap();
        // A second start migrates nothing and loses nothing.
        let second = PostgresTaskStore::connect_in(&target(), &schema).unwrap();
        assert_eq!(second.list(None).unwrap().len(), 1);
        let mut admin = ::postgres::Client::connect(&target(), ::postgres::NoTls).unwrap();
        admin
            .execute(
                &format!("UPDATE \"{schema}\".schema_version SET version = 99"),
                &[],
            )
            .unwrap();
        let newer = PostgresTaskStore::connect_in(&target(), &schema).expect_err("newer");
        assert!(newer.to_string().contains("newer version"), "{newer}");
    }

    /// A store of replica `name` on `schema`, with a short lease.
    fn replica(schema: &str, name: &str, lease_ms: u64) -> PostgresTaskStore {
        PostgresTaskStore::connect_in(&target(), schema)
            .unwrap()
            .replica(name)
            .unwrap()
            .lease_time(Duration::from_millis(lease_ms))
    }

    /// Calls `f` until it gives `Some`, for `within` at most (a lease lapses by the clock).
    fn until<T>(within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(value) = f() {
                return value;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_task_is_leased_to_its_storer_and_taken_over_once_the_lease_lapses() {
        let schema = schema();
        let (a, b) = (replica(&schema, "a", 300), replica(&schema, "b", 300));
        assert_eq!(a.lease(), Some(Duration::from_millis(300)));
        let r = record("fs", "t-1", 1);
        let identity = r.server_identity.clone();
        let ids = [r.task_id.clone()];
        assert!(a.insert(&r).unwrap());
        assert!(a.claim(&r.key()).unwrap(), "its own");
        assert!(!b.claim(&r.key()).unwrap(), "a holds it");
        assert!(b.take_over("fs", &identity, 10).unwrap().is_empty());
        assert_eq!(a.renew("fs", &ids).unwrap(), vec![r.key()]);
        assert!(b.renew("fs", &ids).unwrap().is_empty());
        // `a` stops renewing (it died): `b` takes the task over once the lease lapses, and
        // only then.
        let taken = until(Duration::from_secs(5), || {
            let taken = b.take_over("fs", &identity, 10).unwrap();
            (!taken.is_empty()).then_some(taken)
        });
        assert_eq!(taken, vec![r.clone()], "the record, as stored");
        assert!(a.renew("fs", &ids).unwrap().is_empty(), "a's lease is lost");
        assert!(!a.claim(&r.key()).unwrap());
        assert_eq!(b.renew("fs", &ids).unwrap(), vec![r.key()]);
        // Another server's tasks, or another identity's, are not taken.
        assert!(b.take_over("other", &identity, 10).unwrap().is_empty());
        // An ended task has no lease: nobody polls it.
        b.finish(&r.key(), TaskStatus::Completed, Some("{}"))
            .unwrap();
        assert!(b.renew("fs", &ids).unwrap().is_empty());
        assert!(!a.claim(&r.key()).unwrap());
        assert!(!b.claim(&r.key()).unwrap());
    }

    #[test]
    fn only_the_leases_named_are_renewed_and_the_others_lapse() {
        // A replica restarted under its name does not follow the tasks it held before: their
        // leases lapse, to be taken over, rather than being renewed for nobody.
        let schema = schema();
        let (a, b) = (replica(&schema, "a", 300), replica(&schema, "b", 300));
        let (polled, orphan) = (record("fs", "t-1", 1), record("fs", "t-2", 2));
        a.insert(&polled).unwrap();
        a.insert(&orphan).unwrap();
        let ids = [polled.task_id.clone()];
        let taken = until(Duration::from_secs(5), || {
            assert_eq!(a.renew("fs", &ids).unwrap(), vec![polled.key()]);
            let taken = b.take_over("fs", &polled.server_identity, 10).unwrap();
            (!taken.is_empty()).then_some(taken)
        });
        assert_eq!(taken, vec![orphan], "the one a did not renew");
        assert!(a.renew("fs", &[]).unwrap().is_empty());
    }

    #[test]
    fn a_released_lease_is_taken_over_at_once() {
        let schema = schema();
        let (a, b) = (replica(&schema, "a", 60_000), replica(&schema, "b", 60_000));
        let r = record("fs", "t-1", 1);
        a.insert(&r).unwrap();
        assert!(b
            .take_over("fs", &r.server_identity, 10)
            .unwrap()
            .is_empty());
        assert_eq!(a.release("fs").unwrap(), 1);
        assert_eq!(b.take_over("fs", &r.server_identity, 10).unwrap().len(), 1);
        assert_eq!(a.release("fs").unwrap(), 0, "not a's any more");
    }

    #[test]
    fn replicas_taking_over_at_once_share_the_tasks_out() {
        let schema = schema();
        let dead = replica(&schema, "dead", 100);
        let identity = record("fs", "x", 1).server_identity;
        for i in 0..60 {
            dead.insert(&record("fs", &format!("t-{i:02}"), i)).unwrap();
        }
        drop(dead);
        std::thread::sleep(Duration::from_millis(150));
        let takers: Vec<_> = (0..3)
            .map(|n| {
                let (store, identity) =
                    (replica(&schema, &format!("r{n}"), 60_000), identity.clone());
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    // In rounds of ten, as the driver does, until none are left.
                    loop {
                        let taken = store.take_over("fs", &identity, 10).unwrap();
                        if taken.is_empty() {
                            break;
                        }
                        mine.extend(taken.into_iter().map(|r| r.task_id));
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<String> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let taken = all.len();
        all.sort();
        all.dedup();
        assert_eq!(
            (taken, all.len()),
            (60, 60),
            "each task taken by exactly one replica"
        );
    }

    #[test]
    fn a_replica_name_is_bounded_and_not_empty() {
        let store = fresh();
        assert!(matches!(
            store.replica(""),
            Err(TaskStoreError::Invalid { .. })
        ));
        let long = "r".repeat(201);
        assert!(matches!(
            fresh().replica(long),
            Err(TaskStoreError::TooLarge { .. })
        ));
        assert_eq!(fresh().replica("pod-7").unwrap().replica_name(), "pod-7");
    }

    #[test]
    fn a_connection_that_breaks_is_made_again() {
        let schema = schema();
        // Named after its schema in `pg_stat_activity`, to be found there.
        let named = format!("{} application_name={schema}", target());
        let store = PostgresTaskStore::connect_in(&named, &schema).unwrap();
        store.insert(&record("fs", "t-1", 1)).unwrap();
        let mut admin = ::postgres::Client::connect(&target(), ::postgres::NoTls).unwrap();
        let killed = admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&schema],
            )
            .unwrap();
        assert_eq!(killed, 1, "the store's connection was found");
        // The first call may find the connection gone (an error, not a hang); a later one
        // reconnects, after the backoff at most.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            match store.list(None) {
                Ok(records) => {
                    assert_eq!(records.len(), 1);
                    break;
                }
                Err(e) => {
                    assert!(matches!(e, TaskStoreError::Database { .. }), "{e}");
                    assert!(
                        std::time::Instant::now() < deadline,
                        "never reconnected: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}

/// A store of one process has no leases: every task is its own.
#[test]
fn a_store_without_leases_owns_every_task() {
    let store = MemoryTaskStore::new();
    let r = record("fs", "t-1", 1);
    store.insert(&r).unwrap();
    assert_eq!(store.lease(), None);
    assert!(store.claim(&r.key()).unwrap());
    assert!(store
        .take_over("fs", &r.server_identity, 10)
        .unwrap()
        .is_empty());
    assert_eq!(store.release("fs").unwrap(), 0);
}
