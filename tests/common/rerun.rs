//! A child process that is this test binary again, started with only one of its tests
//! (`--exact`): that test sees its variable in the environment and plays the child (a writer
//! of the task store killed mid-step, a replica of a fleet). Its stdin and stdout are piped
//! for the parent to talk to it; its stderr is the parent's.

use std::ffi::OsStr;
use std::process::{Child, Command, Stdio};

/// The path of test `name` of module `module` (its `module_path!()`) in this binary, for
/// `--exact`: the module path without the binary's name.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_binary, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    }
}

/// Starts this test binary again with only test `name` of `module`, `key`=`value` in its
/// environment.
pub fn start(module: &str, name: &str, key: &str, value: impl AsRef<OsStr>) -> Child {
    command(module, name, key, value)
        .spawn()
        .expect("the test binary starts again")
}

/// The command [`start`] runs, for a caller that changes more of its environment first.
pub fn command(module: &str, name: &str, key: &str, value: impl AsRef<OsStr>) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(exe);
    command
        .args([
            &test_path(module, name),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(key, value)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command
}
