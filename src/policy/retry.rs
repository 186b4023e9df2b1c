//! May an in-flight call be sent again after its connection broke? Pure.
//!
//! The rule that matters most: a call that reached the server and may have had an effect is
//! never sent a second time unless the caller said it may be. A call that was never written is
//! not in question here: it simply waits in the queue for the next connection.

/// What a caller allows to be re-sent when the connection breaks while its call is in flight.
///
/// Whatever the policy, a call is re-sent at most once, and only within its own deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RetryPolicy {
    /// Never re-send: the caller hears of every broken connection.
    Never,
    /// Re-send methods that are safe by nature (`ping`, `*/list`, `resources/read`,
    /// `prompts/get`, `completion/complete`, ...), and `tools/call` of tools whose cached
    /// annotations say `readOnlyHint` or `idempotentHint` — believed only from servers the
    /// configuration marks `trusted`. Any other `tools/call` gets `OutcomeUnknown`.
    #[default]
    IfIdempotent,
    /// Re-send anything once, `tools/call` included: the caller knows the tool is safe to run
    /// twice.
    Always,
}

/// What to do with one in-flight call whose connection broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterDisconnect {
    /// Send it again on the next connection.
    Resend,
    /// Tell the caller the outcome is unknown: it may have run.
    OutcomeUnknown,
    /// Tell the caller the server is unavailable (the call had no effect worth worrying about,
    /// but it will not be re-sent).
    Unavailable,
}

/// Hints a server gave about one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolHints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
}

/// Methods whose effect does not change when they are run twice.
pub fn is_safe_by_nature(method: &str) -> bool {
    matches!(
        method,
        "ping"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel"
            | "skills/list"
            | "skills/get"
            // The Tasks extension: reading a task, and asking for its end (cooperative, and
            // the same intent however often it is said).
            | "tasks/get"
            | "tasks/cancel"
    )
}

/// Decides the fate of an in-flight call after its connection broke.
///
/// `sends` is how many times it was already written; `hints` are the cached annotations of the
/// tool a `tools/call` names (if known); `trusted` says whether this server's hints may be
/// believed.
pub fn after_disconnect(
    method: &str,
    policy: RetryPolicy,
    sends: u32,
    hints: Option<ToolHints>,
    trusted: bool,
) -> AfterDisconnect {
    let may_have_effect = !is_safe_by_nature(method);
    let refused = if may_have_effect {
        AfterDisconnect::OutcomeUnknown
    } else {
        AfterDisconnect::Unavailable
    };
    if sends >= 2 || policy == RetryPolicy::Never {
        return refused;
    }
    let allowed = match policy {
        RetryPolicy::Always => true,
        RetryPolicy::Never => false,
        RetryPolicy::IfIdempotent if !may_have_effect => true,
        RetryPolicy::IfIdempotent => {
            method == "tools/call" && trusted && hints.is_some_and(|h| h.read_only || h.idempotent)
        }
    };
    if allowed {
        AfterDisconnect::Resend
    } else {
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::AfterDisconnect::*;
    use super::*;

    const RO: Option<ToolHints> = Some(ToolHints {
        read_only: true,
        idempotent: false,
    });
    const IDEM: Option<ToolHints> = Some(ToolHints {
        read_only: false,
        idempotent: true,
    });
    const PLAIN: Option<ToolHints> = Some(ToolHints {
        read_only: false,
        idempotent: false,
    });

    #[test]
    fn safe_methods_are_resent_once() {
        for m in [
            "ping",
            "tools/list",
            "resources/read",
            "prompts/get",
            "completion/complete",
        ] {
            assert_eq!(
                after_disconnect(m, RetryPolicy::IfIdempotent, 1, None, false),
                Resend
            );
            assert_eq!(
                after_disconnect(m, RetryPolicy::IfIdempotent, 2, None, false),
                Unavailable
            );
            assert_eq!(
                after_disconnect(m, RetryPolicy::Never, 1, None, false),
                Unavailable
            );
        }
    }

    #[test]
    fn tools_are_never_resent_by_default() {
        assert_eq!(
            after_disconnect("tools/call", RetryPolicy::default(), 1, PLAIN, true),
            OutcomeUnknown
        );
        assert_eq!(
            after_disconnect("tools/call", RetryPolicy::default(), 1, None, true),
            OutcomeUnknown
        );
        // Hints from an untrusted server are not believed.
        assert_eq!(
            after_disconnect("tools/call", RetryPolicy::IfIdempotent, 1, RO, false),
            OutcomeUnknown
        );
    }

    #[test]
    fn trusted_hints_and_always_allow_one_resend() {
        for hints in [RO, IDEM] {
            assert_eq!(
                after_disconnect("tools/call", RetryPolicy::IfIdempotent, 1, hints, true),
                Resend
            );
        }
        assert_eq!(
            after_disconnect("tools/call", RetryPolicy::Always, 1, PLAIN, false),
            Resend
        );
        assert_eq!(
            after_disconnect("tools/call", RetryPolicy::Always, 2, PLAIN, false),
            OutcomeUnknown
        );
        assert_eq!(
            after_disconnect("tools/call", RetryPolicy::Never, 1, RO, true),
            OutcomeUnknown
        );
    }

    #[test]
    fn unknown_methods_count_as_having_effects() {
        assert_eq!(
            after_disconnect("x/custom", RetryPolicy::IfIdempotent, 1, None, true),
            OutcomeUnknown
        );
        assert_eq!(
            after_disconnect("x/custom", RetryPolicy::Always, 1, None, true),
            Resend
        );
    }
}
