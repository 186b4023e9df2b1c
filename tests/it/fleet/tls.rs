//! The fleet's database over TLS: a target with `sslmode=require` is reached encrypted, the
//! server's certificate verified against `PGSSLROOTCERT`'s roots (else the webpki roots), and
//! a certificate that does not verify fails the store's start, saying so.
//!
//! `.ci/postgres` starts its server with TLS on, a certificate for `127.0.0.1` signed by a CA
//! of its own, and names that CA's file in `MCP_SUPERVISOR_TEST_POSTGRES_CA`. The roots are
//! read once per process, so each case is a child process (this test binary again) with its
//! own `PGSSLROOTCERT`, which says what it saw on one line.

use std::io::Write as _;

use mcp_supervisor::tasks::PostgresTaskStore;

use super::target;
use crate::common::rerun;

/// In a child's environment: the `application_name` its store's connection carries.
const CHILD: &str = "MCP_TEST_POSTGRES_TLS_PROBE";
const MARK: &str = "TLS ";

fn ca() -> String {
    std::env::var("MCP_SUPERVISOR_TEST_POSTGRES_CA").unwrap_or_else(|_| {
        panic!(
            "the TLS test needs the test server's CA: set MCP_SUPERVISOR_TEST_POSTGRES_CA to its \
             file (`.ci/postgres` makes one)"
        )
    })
}

/// The child's side: connects a store with `sslmode=require` under application name `name`,
/// then says `TLS connected ssl=<whether pg_stat_ssl shows its connection encrypted>` or
/// `TLS failed <the error>`.
fn probe(name: &str) {
    let secured = format!("{} sslmode=require application_name={name}", target());
    let said = match PostgresTaskStore::connect_in(&secured, "tls_probe") {
        Ok(store) => {
            let mut admin = postgres::Client::connect(&target(), postgres::NoTls).unwrap();
            let row = admin
                .query_one(
                    "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a \
                     USING (pid) WHERE a.application_name = $1",
                    &[&name],
                )
                .unwrap();
            drop(store);
            format!("connected ssl={:?}", row.get::<_, Option<bool>>(0))
        }
        Err(e) => format!("failed {e}"),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{MARK}{said}");
}

/// What a child with `PGSSLROOTCERT` set to `roots` (unset: `None`) saw.
fn run(test: &str, name: &str, roots: Option<&str>) -> String {
    let mut command = rerun::command(module_path!(), test, CHILD, name);
    command.env_remove("PGSSLROOTCERT");
    if let Some(roots) = roots {
        command.env("PGSSLROOTCERT", roots);
    }
    let output = command.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .find_map(|line| line.split_once(MARK).map(|(_, said)| said.to_owned()))
        .unwrap_or_else(|| panic!("the child said nothing: {stdout}"))
}

#[test]
fn a_database_that_wants_tls_is_reached_encrypted_and_a_certificate_that_does_not_verify_is_refused(
) {
    const TEST: &str =
        "a_database_that_wants_tls_is_reached_encrypted_and_a_certificate_that_does_not_verify_is_refused";
    if let Ok(name) = std::env::var(CHILD) {
        return probe(&name);
    }
    let ours = format!("mcp-tls-{}", std::process::id());
    assert_eq!(run(TEST, &ours, Some(&ca())), "connected ssl=Some(true)");

    // The webpki roots do not hold the test server's CA.
    let unknown = run(TEST, "mcp-tls-unknown", None);
    assert!(unknown.starts_with("failed "), "{unknown}");
    assert!(unknown.contains("certificate"), "says why: {unknown}");

    // A roots file that holds no certificate is said to, not taken for none.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("roots.pem");
    std::fs::write(&empty, "no certificate here\n").unwrap();
    let bad = run(TEST, "mcp-tls-bad", Some(empty.to_str().unwrap()));
    assert!(bad.contains("PGSSLROOTCERT"), "{bad}");
}
