//! [`ConfigWatcher`] (feature `watch`): an `mcpServers` file watched, and each change applied
//! with [`Reload`] once the file has been quiet for a moment. A file that cannot be read as a
//! whole (invalid JSON, not an object of servers) is never applied: the servers run on as they
//! were, and the watcher says why. An entry that cannot be loaded keeps its server as it was
//! (the partial load's rule, as `Reload::from_loaded` applies it).
//!
//! The directory is watched rather than the file: editors save by writing a new file and
//! renaming it over the old one, which a watch on the old file's inode would not see again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::prelude::*;
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::actor::messages::{Reload, ReloadReport};
use crate::actor::supervisor::{actix_runs_here, Supervisor};
use crate::config::LoadOptions;
use crate::error::Error;

/// How long a file must be quiet before it is read: an editor's save is several events.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(250);

/// Outcomes kept for a reader that does not take them; older ones are dropped beyond this.
const OUTCOMES_BUFFER: usize = 16;

/// What the watcher did about one change of the file.
#[derive(Debug)]
#[non_exhaustive]
pub enum WatchOutcome {
    /// The file was read and applied: what became of each server.
    Reloaded(ReloadReport),
    /// The file could not be read as a whole: nothing was applied, the servers run on as they
    /// were.
    Refused(Error),
}

/// Watches an `mcpServers` file and reloads the supervisor when it changes. Dropping it stops
/// the watching.
///
/// ```no_run
/// # async fn demo(sup: actix::Addr<mcp_supervisor::Supervisor>) -> Result<(), mcp_supervisor::Error> {
/// use mcp_supervisor::watch::{ConfigWatcher, WatchOutcome};
/// use mcp_supervisor::LoadOptions;
///
/// let mut watcher = ConfigWatcher::start(sup, "mcp.json", LoadOptions::new())?;
/// while let Some(outcome) = watcher.next().await {
///     match outcome {
///         WatchOutcome::Reloaded(report) => println!("reloaded: {:?}", report.servers),
///         WatchOutcome::Refused(e) => eprintln!("mcp.json not applied: {e}"),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
pub struct ConfigWatcher {
    outcomes: mpsc::Receiver<WatchOutcome>,
    // Dropped with the handle: the OS watch ends, then the task that reads its events.
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for ConfigWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatcher").finish_non_exhaustive()
    }
}

impl ConfigWatcher {
    /// Watches `path`, applying each change to `supervisor` with the loader's `options`
    /// (inputs, environment, project), after [`DEFAULT_DEBOUNCE`] of quiet.
    ///
    /// # Errors
    ///
    /// [`Error::Runtime`] off an actix thread; `config` naming the file when its directory
    /// cannot be watched.
    pub fn start(
        supervisor: Addr<Supervisor>,
        path: impl AsRef<Path>,
        options: LoadOptions,
    ) -> Result<ConfigWatcher, Error> {
        Self::start_with(supervisor, path, options, DEFAULT_DEBOUNCE)
    }

    /// As [`start`](ConfigWatcher::start), with a debounce of one's own.
    ///
    /// # Errors
    ///
    /// As [`start`](ConfigWatcher::start).
    pub fn start_with(
        supervisor: Addr<Supervisor>,
        path: impl AsRef<Path>,
        options: LoadOptions,
        debounce: Duration,
    ) -> Result<ConfigWatcher, Error> {
        if !actix_runs_here() {
            return Err(Error::Runtime {
                message: "a ConfigWatcher starts on an actix thread (it runs a task there)".into(),
            });
        }
        let path = std::path::absolute(path.as_ref()).map_err(|e| unwatchable(path.as_ref(), e))?;
        let (dir, file) = match (path.parent(), path.file_name()) {
            (Some(dir), Some(file)) => (dir.to_path_buf(), file.to_owned()),
            _ => return Err(unwatchable(&path, "it names no file")),
        };
        // The OS watch's events arrive on notify's thread; a change is a change, so one queued
        // wake-up is enough however many events come.
        let (changed_tx, mut changed) = mpsc::channel::<()>(1);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let ours = match &event {
                    Ok(event) => event.paths.iter().any(|p| p.file_name() == Some(&file)),
                    // An error of the watch itself (e.g. its queue overflowed): read the file
                    // again rather than miss a change.
                    Err(_) => true,
                };
                if ours {
                    let _ = changed_tx.try_send(());
                }
            })
            .map_err(|e| unwatchable(&path, e))?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| unwatchable(&dir, e))?;
        let (outcomes_tx, outcomes) = mpsc::channel(OUTCOMES_BUFFER);
        actix_rt::spawn(async move {
            while changed.recv().await.is_some() {
                // Quiet for `debounce`: the editor's save is over.
                while let Ok(Some(())) = actix_rt::time::timeout(debounce, changed.recv()).await {}
                let outcome = apply(&supervisor, &path, &options).await;
                if supervisor.connected() {
                    // A reader that does not keep up loses outcomes, never the watching.
                    let _ = outcomes_tx.try_send(outcome);
                } else {
                    break;
                }
            }
        });
        Ok(ConfigWatcher {
            outcomes,
            _watcher: watcher,
        })
    }

    /// What the next change of the file came to; `None` once the watching has ended.
    pub async fn next(&mut self) -> Option<WatchOutcome> {
        self.outcomes.recv().await
    }
}

/// Reads the file and, if it can be read as a whole, reloads the supervisor with it.
async fn apply(
    supervisor: &Addr<Supervisor>,
    path: &PathBuf,
    options: &LoadOptions,
) -> WatchOutcome {
    let loaded = match options.load_file(path) {
        Ok(loaded) => loaded,
        Err(error) => {
            tracing::warn!(file = %path.display(), error = %error, "the changed mcpServers file was not applied; the servers run on as they were");
            return WatchOutcome::Refused(error);
        }
    };
    match supervisor.send(Reload::from_loaded(loaded)).await {
        Ok(report) => {
            tracing::info!(file = %path.display(), ok = report.is_ok(), "the changed mcpServers file was applied");
            WatchOutcome::Reloaded(report)
        }
        Err(_) => WatchOutcome::Refused(Error::SupervisorStopped),
    }
}

fn unwatchable(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::config(
        None,
        "watch",
        format!("{} cannot be watched: {why}", path.display()),
    )
}
