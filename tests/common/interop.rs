//! Helpers of the interop suite (`tests/interop/`, session era and 2026-07-28): where
//! `.ci/interop` installed the pinned third-party servers, free loopback ports, and waiting
//! for an HTTP server to listen.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where `.ci/interop` installed the servers (npm packages, and the Python venv in `.venv`).
pub fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("MCP_INTEROP_DIR")
        .map(PathBuf::from)
        .expect("MCP_INTEROP_DIR is not set: run these tests through .ci/interop, which installs the servers");
    assert!(
        dir.join("node_modules").is_dir(),
        "{} has no node_modules: run .ci/interop",
        dir.display()
    );
    dir
}

/// The entry point of an npm package of `@modelcontextprotocol`'s that ships `dist/index.js`.
pub fn npm_server(package: &str) -> PathBuf {
    interop_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
}

/// A free loopback port (the OS picks it; there is a small window before the server binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Waits (bounded) until something accepts connections on the port.
pub async fn listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} after 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Lines in a file (0 when it does not exist).
pub fn lines_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}
