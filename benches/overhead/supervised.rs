//! Our runtime, set up for a measurement: a `Supervisor` of one server, and a wait until that
//! server's actor is Ready. Shared by the stdio clients, HTTP and recovery, which all measure
//! calls and not starts.

use std::time::{Duration, Instant};

use actix::prelude::*;
use mcp_supervisor::{GetServer, GetStatus, ServerActor, ServerConfig, Supervisor};

/// A supervisor of one server, and that server's actor once it is Ready.
pub(crate) async fn supervise_one(config: ServerConfig) -> (Addr<Supervisor>, Addr<ServerActor>) {
    let name = config.name().to_owned();
    let sup = Supervisor::builder()
        .server(config)
        .start()
        .expect("start the supervisor");
    let addr = sup
        .send(GetServer(name))
        .await
        .expect("supervisor alive")
        .expect("server configured");
    wait_ready(&addr, Duration::from_secs(10)).await;
    (sup, addr)
}

/// Polls the actor's status every millisecond until it is Ready; panics after `limit`.
pub(crate) async fn wait_ready(addr: &Addr<ServerActor>, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let status = addr
            .send(GetStatus::all())
            .await
            .expect("actor alive")
            .expect("status");
        if status.first().is_some_and(|s| s.state.is_ready()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "server not Ready within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
