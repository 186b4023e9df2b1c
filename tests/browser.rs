//! The status page (`mcp_supervisor::web`, `GET /status/page`) in a real browser: this test
//! serves the status scope in front of two demo servers and one that fails after writing HTML
//! to stderr, and runs `tests/browser/status_page.mjs`, which drives Debian's headless
//! Chromium (`/usr/bin/chromium`) with playwright-core, on the full view and on the redacted
//! one. `.ci/browser` installs both and runs this test; run that script once before
//! `cargo test --all-features`.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpServer};
use common::three_servers;
use mcp_supervisor::web::{status_scope, status_scope_with, Visibility};

#[actix::test]
async fn the_status_page_shows_every_server_and_follows_a_kill() {
    let browser = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        browser.join("node_modules/playwright-core").is_dir()
            && Path::new("/usr/bin/chromium").exists(),
        "playwright-core or Chromium is missing: run `bash .ci/browser`, which installs both"
    );
    let (sup, _events, _dir) = three_servers().await;

    // The full view (the test connects from loopback), and the redacted one under /redacted.
    let server = HttpServer::new(move || {
        App::new().service(status_scope(sup.clone())).service(
            web::scope("/redacted").service(status_scope_with(sup.clone(), Visibility::Redacted)),
        )
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .expect("a free port");
    let url = format!("http://{}", server.addrs()[0]);
    actix_rt::spawn(server.run());

    let started = Instant::now();
    let child = tokio::process::Command::new("node")
        .arg("status_page.mjs")
        .arg(&url)
        .current_dir(&browser)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the browser test ends within 2 minutes")
        .expect("its output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!(
        "{stdout}# browser run: {} ms",
        started.elapsed().as_millis()
    );
    assert!(
        output.status.success(),
        "the browser test failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}
