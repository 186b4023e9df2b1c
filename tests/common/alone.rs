//! A test that measures a figure of the whole process (its RSS) runs in a process of its own:
//! the test binary starts itself again with only that test, as the tests beside it in the
//! binary (a panic's backtrace alone costs ~160 MiB) would blur the figure.

use std::process::Command;

/// Names, in the child's environment, the one test it runs.
const ALONE: &str = "MCP_TEST_ALONE";

/// Declares the test `$name` that runs the async fn `$body` on an actix system in a process of
/// its own ([`run`]); attributes such as `#[ignore]` go before the name.
#[macro_export]
macro_rules! test_alone {
    ($(#[$attr:meta])* $name:ident => $body:path) => {
        $(#[$attr])*
        #[test]
        fn $name() {
            $crate::common::alone::run(module_path!(), stringify!($name), || {
                actix::System::new().block_on($body())
            });
        }
    };
}

/// Runs `test` alone: in the child this starts, where [`ALONE`] names this test, it runs
/// `test`; here, it starts this test binary again with only this test (`module` is its
/// `module_path!()`, `name` its function's name) and passes if the child ran it and it passed.
pub fn run(module: &str, name: &str, test: impl FnOnce()) {
    // The test's path in the binary: the module path without the crate's name.
    let path = super::rerun::test_path(module, name);
    match std::env::var(ALONE) {
        Ok(alone) if alone == path => return test(),
        Ok(other) => panic!("{ALONE}={other}: this child runs {other}, not {path}"),
        Err(_) => {}
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let child = Command::new(exe)
        .args([&path, "--exact", "--include-ignored", "--test-threads=1"])
        .arg("--nocapture")
        .env(ALONE, &path)
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&child.stdout);
    let stderr = String::from_utf8_lossy(&child.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        child.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{path}, run alone: {}",
        child.status
    );
}
