//! The task table: every task this server knows, in creation order and bounded, with what this
//! process did about each (announced, asked, who waits for it); and, with `DEMO_TASKS_DIR`, one
//! small JSON file per task, so that a server killed with SIGKILL and started again on the same
//! directory still knows its tasks.
//!
//! A task's file holds its `Record` only, written atomically (`persist::write_atomically`)
//! before anything is answered about the change: the Tasks extension wants a task durable before
//! its `CreateTaskResult` is returned, and an answer or a cancellation acknowledged must not be
//! lost either. Files are named by our own task ids, never by anything a client sent.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use serde_json::Value;

use super::super::super::jsonrpc::{RpcError, INTERNAL_ERROR};
use super::super::super::persist::write_atomically;
use super::super::super::stderr_line;
use super::job::{Record, Status, TaskEra};
use super::now_ms;

/// Tasks kept at once. Past it the oldest expired, then the oldest terminal task is forgotten
/// (its file removed); when every task is still running a new one is refused.
pub(super) const MAX_TASKS: usize = 10_000;
/// Our ids are 32 hex digits; a longer `taskId` is no task of ours and is never stored.
pub(super) const MAX_ID_LEN: usize = 64;
/// A task file is a few hundred bytes; a bigger one in the directory is not ours.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// `tasks/result` requests waiting at once, over all tasks.
const MAX_WAITERS: usize = 1024;

/// One task and what this process did about it (none of which is persisted: a new process
/// announces, asks and answers afresh).
pub(super) struct Entry {
    pub(super) record: Record,
    /// The status last announced (`notifications/tasks` to listens, `notifications/tasks/status`
    /// to a session), so the clock tells each change once.
    pub(super) announced: Option<Status>,
    /// Session era: the id of our `elicitation/create` request for this task, once sent.
    pub(super) elicitation: Option<String>,
    /// Session era: the ids of the `tasks/result` requests waiting for the task to end.
    pub(super) waiters: Vec<Value>,
}

/// Why a task could not be found (both eras answer `-32602` with these messages).
pub(super) fn not_found() -> RpcError {
    RpcError::invalid_params("Failed to retrieve task: Task not found")
}

pub(super) fn expired() -> RpcError {
    RpcError::invalid_params("Failed to retrieve task: Task has expired")
}

#[derive(Default)]
pub(crate) struct Tasks {
    entries: HashMap<String, Entry>,
    /// Task ids, oldest first.
    order: VecDeque<String>,
    /// `DEMO_TASKS_DIR`; without it tasks live in memory only.
    dir: Option<PathBuf>,
    /// `tasks/result` requests waiting, over all entries.
    waiting: usize,
    /// Wakes the clock thread (see `clock`), once it runs.
    pub(super) clock: Option<Sender<()>>,
}

impl Tasks {
    /// The tasks of `DEMO_TASKS_DIR` (created if missing), or none without it. A file that is
    /// not a task of ours is reported and left alone.
    pub(crate) fn load(dir: Option<&Path>, now: u64) -> Tasks {
        let mut tasks = Tasks {
            dir: dir.map(Path::to_path_buf),
            ..Tasks::default()
        };
        let Some(dir) = dir else { return tasks };
        if let Err(e) = fs::create_dir_all(dir) {
            stderr_line(&format!("demo: cannot create DEMO_TASKS_DIR: {e}"));
            return tasks;
        }
        let listing = match fs::read_dir(dir) {
            Ok(listing) => listing,
            Err(e) => {
                stderr_line(&format!("demo: cannot read DEMO_TASKS_DIR: {e}"));
                return tasks;
            }
        };
        let mut records = Vec::new();
        for file in listing.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|id| is_our_id(id)) else {
                continue; // temporary files of an interrupted write, and strangers
            };
            if records.len() >= MAX_TASKS {
                stderr_line(&format!(
                    "demo: more than {MAX_TASKS} task files; the rest ignored"
                ));
                break;
            }
            match read_record(&file.path(), id) {
                Ok(record) => records.push(record),
                Err(why) => stderr_line(&format!("demo: ignoring task file {name}: {why}")),
            }
        }
        records.sort_by_key(|r: &Record| r.created_ms);
        for record in records {
            // What it was when we stopped is not announced again; changes from now on are.
            let announced = Some(record.at(now).status(record.era));
            let id = record.task_id.clone();
            tasks.order.push_back(id.clone());
            let entry = Entry {
                record,
                announced,
                elicitation: None,
                waiters: Vec::new(),
            };
            tasks.entries.insert(id, entry);
        }
        tasks
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The task `id` of `era`, unless unknown (`-32602`, "not found") or past its ttl
    /// (`-32602`, "expired").
    pub(super) fn find(
        &mut self,
        id: &str,
        era: TaskEra,
        now: u64,
    ) -> Result<&mut Entry, RpcError> {
        match self.entries.get_mut(id) {
            Some(entry) if entry.record.era == era => {
                if entry.record.is_expired(now) {
                    Err(expired())
                } else {
                    Ok(entry)
                }
            }
            _ => Err(not_found()),
        }
    }

    /// Whether `id` is a live task of the modern era (what a listen may ask to hear about).
    pub(crate) fn knows_modern(&self, id: &str) -> bool {
        let now = now_ms();
        self.entries
            .get(id)
            .is_some_and(|e| e.record.era == TaskEra::Modern && !e.record.is_expired(now))
    }

    /// The entries, oldest first.
    pub(super) fn in_order(&self) -> impl Iterator<Item = &Entry> {
        self.order.iter().filter_map(|id| self.entries.get(id))
    }

    /// Visits every entry, oldest first, with the count of waiting requests (for
    /// `take_waiters`).
    pub(super) fn visit(&mut self, mut visit: impl FnMut(&mut Entry, &mut usize)) {
        for id in &self.order {
            if let Some(entry) = self.entries.get_mut(id) {
                visit(entry, &mut self.waiting);
            }
        }
    }

    /// Adds a new task, durable first: its file is written before it is known, and a task whose
    /// file cannot be written is refused (`-32603`) rather than returned and then lost.
    pub(super) fn insert(&mut self, record: Record, now: u64) -> Result<(), RpcError> {
        if self.entries.len() >= MAX_TASKS && !self.forget_one(now) {
            return Err(RpcError::new(
                INTERNAL_ERROR,
                format!("too many tasks: {MAX_TASKS} are still running"),
            ));
        }
        self.save(&record)?;
        let id = record.task_id.clone();
        let status = record.at(now).status(record.era);
        self.order.push_back(id.clone());
        let entry = Entry {
            record,
            announced: Some(status),
            elicitation: None,
            waiters: Vec::new(),
        };
        self.entries.insert(id, entry);
        Ok(())
    }

    /// Changes a task's record, durable first (as `insert`).
    pub(super) fn update(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Record),
    ) -> Result<(), RpcError> {
        let Some(entry) = self.entries.get_mut(id) else {
            return Err(not_found());
        };
        let mut record = entry.record.clone();
        change(&mut record);
        if let Some(dir) = &self.dir {
            save_in(dir, &record)?;
        }
        entry.record = record;
        Ok(())
    }

    /// Registers a `tasks/result` request waiting for task `id` to end.
    pub(super) fn wait(&mut self, id: &str, request: Value) -> Result<(), RpcError> {
        if self.waiting >= MAX_WAITERS {
            return Err(RpcError::new(
                INTERNAL_ERROR,
                format!("too many tasks/result requests waiting (at most {MAX_WAITERS})"),
            ));
        }
        let entry = self.entries.get_mut(id).ok_or_else(not_found)?;
        entry.waiters.push(request);
        self.waiting += 1;
        Ok(())
    }

    /// Takes the waiters of `entry`'s task, now answered.
    pub(super) fn take_waiters(waiting: &mut usize, entry: &mut Entry) -> Vec<Value> {
        *waiting = waiting.saturating_sub(entry.waiters.len());
        std::mem::take(&mut entry.waiters)
    }

    /// A `tasks/result` request cancelled by the client: it will not be answered.
    pub(super) fn forget_waiter(&mut self, request: &Value) {
        for entry in self.entries.values_mut() {
            let before = entry.waiters.len();
            entry.waiters.retain(|w| w != request);
            self.waiting = self.waiting.saturating_sub(before - entry.waiters.len());
        }
    }

    /// The task whose elicitation request is `request_id`, if one is.
    pub(super) fn asked_by(&self, request_id: &str) -> Option<String> {
        self.entries
            .values()
            .find(|e| e.elicitation.as_deref() == Some(request_id))
            .map(|e| e.record.task_id.clone())
    }

    /// Forgets the oldest expired task, else the oldest terminal one nobody waits for.
    fn forget_one(&mut self, now: u64) -> bool {
        let expired = |e: &Entry| e.record.is_expired(now) && e.waiters.is_empty();
        let terminal =
            |e: &Entry| e.record.at(now).status(e.record.era).is_terminal() && e.waiters.is_empty();
        let victim = [&expired as &dyn Fn(&Entry) -> bool, &terminal]
            .into_iter()
            .find_map(|doomed| {
                self.order
                    .iter()
                    .position(|id| self.entries.get(id).is_some_and(doomed))
            });
        let Some(at) = victim else { return false };
        let Some(id) = self.order.remove(at) else {
            return false;
        };
        self.entries.remove(&id);
        if let Some(dir) = &self.dir {
            let _ = fs::remove_file(dir.join(format!("{id}.json")));
        }
        true
    }

    fn save(&self, record: &Record) -> Result<(), RpcError> {
        match &self.dir {
            Some(dir) => save_in(dir, record),
            None => Ok(()),
        }
    }
}

fn save_in(dir: &Path, record: &Record) -> Result<(), RpcError> {
    let bytes = serde_json::to_vec(record).unwrap_or_default();
    write_atomically(&dir.join(format!("{}.json", record.task_id)), &bytes)
        .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("cannot persist the task: {e}")))
}

/// Our task ids: 32 lowercase hex digits.
fn is_our_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn read_record(path: &Path, id: &str) -> Result<Record, String> {
    let size = fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!("{size} bytes, more than a task file holds"));
    }
    let text = fs::read(path).map_err(|e: io::Error| e.to_string())?;
    let record: Record = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
    if record.task_id != id {
        return Err("its task id is not its name".into());
    }
    Ok(record)
}

/// A new task id: 128 random bits as hex, from `rand`'s thread generator (a CSPRNG seeded by
/// the OS), so an id is a bearer token nobody can guess or enumerate.
pub(super) fn new_task_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}
