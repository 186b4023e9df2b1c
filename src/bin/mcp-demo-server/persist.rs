//! What outlives the process: the event log (`DEMO_EVENT_LOG`) and the count files
//! (`DEMO_COUNTER_FILE`, `DEMO_START_COUNT_FILE`).
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

/// fsynced, because tests kill the server right after and then check the count survived.
fn write_count(path: &Path, count: u64) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(count.to_string().as_bytes())?;
    file.sync_all()
}

pub(crate) fn bump_count_file(path: &Path) -> io::Result<u64> {
    let count = read_count(path)?
        .checked_add(1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "count overflow"))?;
    write_count(path, count)?;
    Ok(count)
}
