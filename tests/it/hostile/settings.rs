//! Misuse of the settings: values that would leave a server unusable are refused before
//! anything runs, naming the field, whether they are global or the server's own, and however
//! the server is added.

use std::time::Duration;

use actix::Actor;
use mcp_supervisor::{
    AddServer, Error, ErrorKind, GetStatus, ServerActor, ServerState, Shutdown, Supervisor,
};

use crate::common::*;

fn field_of(e: &Error) -> &str {
    match e {
        Error::Config { field, .. } => field,
        other => panic!("not a config error: {other}"),
    }
}

/// Defect 12: a global `max_in_flight = 0` or `max_message_bytes = 0` used to be accepted, and
/// left every server unusable with misleading errors.
#[actix::test]
async fn unusable_global_settings_are_refused_at_start_and_on_add_server() {
    let dir = tempdir();
    for (field, settings) in [
        ("max_in_flight", {
            let mut s = quick_settings();
            s.max_in_flight = 0;
            s
        }),
        ("max_message_bytes", {
            let mut s = quick_settings();
            s.max_message_bytes = 0;
            s
        }),
        ("call_timeout", {
            let mut s = quick_settings();
            s.call_timeout = Duration::ZERO;
            s
        }),
    ] {
        let e = Supervisor::builder()
            .settings(settings.clone())
            .server(demo("a", dir.path()))
            .start()
            .unwrap_err();
        assert_eq!(field_of(&e), field, "{e}");
        assert!(e.to_string().contains("server `a`"), "{e}");

        // A supervisor with no servers yet refuses the server it is asked to add.
        let sup = Supervisor::builder().settings(settings).start().unwrap();
        let e = sup
            .send(AddServer(demo("b", dir.path())))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(field_of(&e), field, "{e}");
        sup.send(Shutdown).await.unwrap();
    }
}

/// A `ServerActor` started on its own, without the supervisor's checks, fails at once with the
/// configuration error instead of running with unusable settings.
#[actix::test]
async fn a_server_actor_started_alone_with_unusable_settings_fails_at_once() {
    let dir = tempdir();
    let mut settings = quick_settings();
    settings.max_in_flight = 0;
    let actor = ServerActor::new(demo("alone", dir.path()), &settings).start();
    until_async(|| {
        let actor = actor.clone();
        async move {
            let st = actor.send(GetStatus::all()).await.unwrap().unwrap();
            matches!(st[0].state, ServerState::Failed { .. })
        }
    })
    .await;
    let st = actor
        .send(GetStatus::all())
        .await
        .unwrap()
        .unwrap()
        .remove(0);
    let error = st.last_error.expect("the configuration error");
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert_eq!(field_of(&error), "max_in_flight");
    assert_eq!(st.pid, None, "no process was started");
    assert!(matches!(
        st.state,
        ServerState::Failed {
            revive_at: None,
            ..
        }
    ));
    actor.send(Shutdown).await.unwrap();
}

/// Overrides are checked as what they are: the settings in force for that server.
#[actix::test]
async fn a_servers_own_override_is_named_as_such() {
    let dir = tempdir();
    let e = Supervisor::builder()
        .settings(quick_settings())
        .server(demo("a", dir.path()).ping_timeout(Duration::ZERO))
        .start()
        .unwrap_err();
    assert_eq!(field_of(&e), "ping_timeout");
    assert!(
        e.to_string().ends_with("(this server's own setting)"),
        "{e}"
    );
}
