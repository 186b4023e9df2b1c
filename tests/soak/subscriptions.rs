//! The application's resource subscriptions: one per server, made once at the start (and again
//! by the injector after it adds a removed server back), kept by the supervisor through every
//! reconnect, respawn, session loss, era change and actor panic; a 2026-07-28 server serves
//! it on a `subscriptions/listen` stream, a session-era one with `resources/subscribe` and the
//! GET stream.
//!
//! The promise checked once the faults are over and every server is Ready: each subscription
//! still delivers. The probe asks the server to announce a change (`notify`) and awaits the
//! `resources/updated` event; a change announced while the stream that carries it is being
//! re-established is lost (neither era replays it), so the probe tries a few times, within a
//! bound, before it reports the subscription lost.

use std::time::{Duration, Instant};

use actix::Addr;
use mcp_supervisor::{Subscribe, Supervisor};

use super::callers::{notify_call, Target};
use super::timeline::Timeline;

/// How long the probe of one subscription may take, and how long each try waits for the event.
const PROBE_BOUND: Duration = Duration::from_secs(8);
const TRY_WAIT: Duration = Duration::from_secs(1);

/// Subscribes to every target's resource; what did not answer `Ok`.
pub async fn subscribe_all(sup: &Addr<Supervisor>, targets: &[Target]) -> Vec<String> {
    let mut errors = Vec::new();
    for target in targets {
        let answer = sup
            .send(Subscribe {
                server: target.name.clone(),
                uri: target.resource.clone(),
            })
            .await;
        if !matches!(answer, Ok(Ok(()))) {
            errors.push(format!(
                "subscribing to {} on {}: {answer:?}",
                target.resource, target.name
            ));
        }
    }
    errors
}

/// Probes every target's subscription (see the module doc); a line for each that did not
/// deliver, saying what the tries got.
pub async fn probe_all(
    sup: &Addr<Supervisor>,
    targets: &[Target],
    timeline: &Timeline,
) -> Vec<String> {
    let mut failures = Vec::new();
    for target in targets {
        if let Err(tries) = probe(sup, target, timeline).await {
            failures.push(format!("{}: {}", target.name, tries.join("; ")));
        }
    }
    failures
}

async fn probe(
    sup: &Addr<Supervisor>,
    target: &Target,
    timeline: &Timeline,
) -> Result<(), Vec<String>> {
    let deadline = Instant::now() + PROBE_BOUND;
    let mut tries = Vec::new();
    while Instant::now() < deadline {
        let since = Instant::now();
        let call = notify_call(target).timeout(Duration::from_secs(2));
        match sup.send(call).await {
            Ok(Ok(_)) => {
                let delivered = timeline
                    .await_update(&target.name, &target.resource, since, TRY_WAIT)
                    .await;
                if delivered {
                    return Ok(());
                }
                tries.push("announced, no update within 1 s".to_owned());
            }
            Ok(Err(e)) => tries.push(format!("the announcing call failed: {e}")),
            Err(e) => tries.push(format!("the supervisor did not answer: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(tries)
}
