//! What outlives the process: the event log (`DEMO_EVENT_LOG`), the count files
//! (`DEMO_COUNTER_FILE`, `DEMO_START_COUNT_FILE`), and the atomic writer the task files of
//! `DEMO_TASKS_DIR` are written with (their reading and naming are the task table's, in
//! `tools/tasks`).
//!
//! Tests kill and restart the server and then read these files to learn what it executed, so
//! their durability rules (whole lines, fsynced counts) are kept together here.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use super::{lock, stderr_line};

/// Serialises event-log writes inside this process; O_APPEND keeps whole lines intact across
/// processes (tests may restart the server while reading the same log).
static EVENT_LOG_LOCK: Mutex<()> = Mutex::new(());

pub(crate) fn append_event(path: Option<&Path>, line: &str) {
    let Some(path) = path else { return };
    let _guard = lock(&EVENT_LOG_LOCK);
    let written = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| {
            file.write_all(format!("{line}\n").as_bytes())?;
            file.flush()
        });
    if let Err(e) = written {
        stderr_line(&format!("demo: cannot append to event log: {e}"));
    }
}

/// Reads a count written by `write_count`; a missing or empty file means 0.
fn read_count(path: &Path) -> io::Result<u64> {
    match fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(0),
        Ok(text) => text.trim().parse().map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, format!("not a count: {text:?}"))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// Replaces the count atomically (see `write_atomically`): a reader, or a SIGKILL at any
/// instant, sees the old count or the new one, never an empty or half-written file. (Truncating
/// and rewriting in place could leave an empty file, which reads as 0, and a test that counts
/// executions across crashes would be fooled.)
fn write_count(path: &Path, count: u64) -> io::Result<()> {
    write_atomically(path, count.to_string().as_bytes())
}

/// Replaces the file `path` with `bytes` atomically: a new file is written and fsynced beside
/// the old one, then renamed over it, and the directory is synced so that the rename is durable
/// too. fsynced, because tests kill the server with SIGKILL right after an answer and then read
/// what it wrote (the counts, the task files of `DEMO_TASKS_DIR`).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = std::path::PathBuf::from(temp);
    let mut file = File::create(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&temp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

pub(crate) fn bump_count_file(path: &Path) -> io::Result<u64> {
    let count = read_count(path)?
        .checked_add(1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "count overflow"))?;
    write_count(path, count)?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9, defect 15: the count was truncated, then written; a reader between the two
    /// (or a SIGKILL there) saw an empty file, which reads as 0.
    #[test]
    fn a_reader_never_sees_a_missing_count() {
        let dir = std::env::temp_dir().join(format!("demo-count-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("count");
        write_count(&path, 1).unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                for _ in 0..300 {
                    bump_count_file(&path).unwrap();
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() {
            let count = read_count(&path).unwrap();
            assert!(
                count >= 1,
                "read a count of {count} while it was being rewritten"
            );
            reads += 1;
        }
        writer.join().unwrap();
        assert_eq!(read_count(&path).unwrap(), 301);
        assert!(reads > 0);
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        fs::remove_dir_all(&dir).unwrap();
    }
}
