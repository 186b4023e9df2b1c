//! The messages an application sends to the [`Supervisor`](crate::Supervisor) or straight to a
//! [`ServerActor`](crate::ServerActor), and the ones it receives back.

use std::borrow::Cow;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use crate::config::ServerConfig;
use crate::error::Error;
use crate::policy::retry::RetryPolicy;
use crate::protocol::jsonrpc::RpcError;
use crate::session::request::{CallRequest, Params, ProgressSink, RequestOptions};
use crate::session::status::ServerStatus;

/// Options every call carries.
#[derive(Clone)]
pub struct CallOptions {
    /// Deadline, counted from when the server's actor takes the call (time in the actix
    /// mailboxes before that is not counted); the server's `call_timeout` when `None`.
    pub timeout: Option<Duration>,
    /// What may be re-sent after a broken connection.
    pub retry: RetryPolicy,
    /// Where `notifications/progress` for this call go, if anywhere.
    pub progress: Option<Recipient<Progress>>,
    /// With progress: each progress notification restarts the timeout, but the call never
    /// lasts longer than this in total.
    pub reset_timeout_on_progress: Option<Duration>,
    /// The span the call's `mcp.call` span is a child of: the caller's current span when the
    /// call was made (its `new`), so that a service's request trace shows its MCP calls.
    /// [`Default`] has none.
    pub parent: tracing::Span,
}

impl Default for CallOptions {
    /// The server's timeout, the default retry policy, no progress, no parent span.
    fn default() -> Self {
        CallOptions {
            timeout: None,
            retry: RetryPolicy::default(),
            progress: None,
            reset_timeout_on_progress: None,
            parent: tracing::Span::none(),
        }
    }
}

impl CallOptions {
    /// The defaults, with the current span as the parent of the call's span.
    pub fn here() -> CallOptions {
        // Without any subscriber there is no current span, and asking costs a lookup per call.
        let parent = if tracing::dispatcher::has_been_set() {
            tracing::Span::current()
        } else {
            tracing::Span::none()
        };
        CallOptions {
            parent,
            ..CallOptions::default()
        }
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("progress", &self.progress.is_some())
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("parent", &self.parent.id())
            .finish()
    }
}

/// Builder methods shared by [`Call`] and every typed call.
macro_rules! call_options {
    ($t:ty) => {
        impl $t {
            /// Sets the call's timeout (its deadline is now + timeout).
            pub fn timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self.options.timeout = Some(timeout);
                self
            }

            /// Sets what may be re-sent if the connection breaks while the call is in flight.
            pub fn retry(mut self, retry: $crate::RetryPolicy) -> Self {
                self.options.retry = retry;
                self
            }

            /// Sends the server's progress notifications for this call to `recipient`.
            pub fn on_progress(
                mut self,
                recipient: ::actix::Recipient<$crate::actor::messages::Progress>,
            ) -> Self {
                self.options.progress = Some(recipient);
                self
            }

            /// Lets each progress notification restart the timeout, up to `max_total` overall.
            pub fn reset_timeout_on_progress(mut self, max_total: ::std::time::Duration) -> Self {
                self.options.reset_timeout_on_progress = Some(max_total);
                self
            }

            /// Makes the call's `mcp.call` span a child of `parent` instead of the span that
            /// was current when the call was made.
            pub fn parent_span(mut self, parent: ::tracing::Span) -> Self {
                self.options.parent = parent;
                self
            }
        }
    };
}

/// Any JSON-RPC request to a server; answers with the raw `result`.
///
/// ```
/// use mcp_supervisor::Call;
/// use serde_json::json;
/// use std::time::Duration;
///
/// let call = Call::new("fs", "resources/read", Some(json!({"uri": "file:///srv/a.txt"})))
///     .timeout(Duration::from_secs(5));
/// assert_eq!(call.method, "resources/read");
/// ```
#[derive(Debug, Clone)]
pub struct Call {
    /// Server name.
    pub server: String,
    /// JSON-RPC method.
    pub method: String,
    /// Params.
    pub params: Option<Value>,
    /// Timeout, retry policy, progress.
    pub options: CallOptions,
}

impl Call {
    /// A call of `method` with `params` on `server`.
    pub fn new(
        server: impl Into<String>,
        method: impl Into<String>,
        params: Option<Value>,
    ) -> Self {
        Call {
            server: server.into(),
            method: method.into(),
            params,
            options: CallOptions::here(),
        }
    }
}

call_options!(Call);

impl Message for Call {
    type Result = Result<Value, Error>;
}

impl From<Call> for CallRequest {
    fn from(call: Call) -> Self {
        CallRequest {
            server: call.server,
            method: Cow::Owned(call.method),
            params: call.params.as_ref().map(Params::of_value),
            tool: None,
            options: call.options.into(),
        }
    }
}

impl From<CallOptions> for RequestOptions {
    fn from(options: CallOptions) -> Self {
        RequestOptions {
            timeout: options.timeout,
            retry: options.retry,
            progress: options
                .progress
                .map(|recipient| Box::new(recipient) as Box<dyn ProgressSink>),
            reset_timeout_on_progress: options.reset_timeout_on_progress,
            parent: options.parent,
            start_task: false,
            task_augmented: false,
        }
    }
}

impl ProgressSink for Recipient<Progress> {
    fn progress(&self, server: &str, progress: f64, total: Option<f64>, message: Option<String>) {
        self.do_send(Progress {
            server: server.to_owned(),
            progress,
            total,
            message,
        });
    }
}

pub(crate) mod skills;
pub(crate) mod tasks;
mod typed;
pub use skills::{LoadSkill, ReadSkillFile};
pub use tasks::{AwaitTask, CancelTask, GetTask, ListTasks, StartTask, TaskInfo, TaskStart};
pub use typed::*;

/// A progress notification for one call.
#[derive(Debug, Clone, PartialEq, Message)]
#[rtype(result = "()")]
pub struct Progress {
    /// Server name.
    pub server: String,
    /// Progress so far.
    pub progress: f64,
    /// Total, if known.
    pub total: Option<f64>,
    /// A message, if any.
    pub message: Option<String>,
}

/// Asks for the status of one server or of all.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Vec<ServerStatus>, Error>")]
pub struct GetStatus {
    /// One server, or all when `None`.
    pub server: Option<String>,
}

impl GetStatus {
    /// Every server's status, sorted by name.
    pub fn all() -> Self {
        GetStatus { server: None }
    }

    /// One server's status.
    pub fn server(name: impl Into<String>) -> Self {
        GetStatus {
            server: Some(name.into()),
        }
    }
}

/// Subscribes to `notifications/resources/updated` for one resource. The subscription is
/// re-sent after every reconnect.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct Subscribe {
    /// Server name.
    pub server: String,
    /// Resource URI.
    pub uri: String,
}

/// Ends a [`Subscribe`].
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct Unsubscribe {
    /// Server name.
    pub server: String,
    /// Resource URI.
    pub uri: String,
}

/// Registers a recipient for [`ServerEvent`]s: state changes and server notifications.
#[derive(Clone, Message)]
#[rtype(result = "()")]
pub struct SubscribeEvents(pub Recipient<ServerEvent>);

/// Registers the handler for requests servers send us (`roots/list`, `sampling/createMessage`,
/// `elicitation/create`), and the client capabilities to announce for it at the next
/// (re)initialize. Without a handler, those requests get a JSON-RPC "method not found" error,
/// and `ping` an empty result.
#[derive(Clone, Message)]
#[rtype(result = "()")]
pub struct SetRequestHandler {
    /// Where requests go.
    pub handler: Recipient<ServerRequest>,
    /// The `capabilities` object sent in `initialize`, e.g. `{"roots": {"listChanged": true}}`.
    pub capabilities: Value,
}

/// A request a server sent us. Answer with a result or a JSON-RPC error.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Value, RpcError>")]
pub struct ServerRequest {
    /// Server name.
    pub server: String,
    /// Method, e.g. `roots/list`.
    pub method: String,
    /// Params.
    pub params: Option<Value>,
}

/// Reconnects a server now: revives a `Failed` one, skips a backoff wait, or drops and
/// re-establishes a Ready connection.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct Reconnect {
    /// Server name.
    pub server: String,
}

/// Adds a server at run time; it starts connecting at once.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct AddServer(pub ServerConfig);

/// Stops a server and removes it; answers once its process is gone.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct RemoveServer(pub String);

/// Stops every server and the supervisor; answers once every process is gone.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// How long the old generation of a replaced server may take to finish its calls, by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Restarts a server without a failed call (make-before-break), e.g. for an upgrade of its
/// binary: a new generation with the same configuration starts beside the one that serves the
/// calls, and only once it is Ready (handshake, tool list, subscriptions) does every new call go
/// to it; the old generation then drains — its calls in flight finish there, for at most
/// `drain_timeout`, after which they are answered as any broken connection's would be
/// (`outcome_unknown` for a call that may have run, never a silent re-run) — and is stopped.
/// If the new generation does not come up within its start-up policy, it is stopped and the
/// old one serves on: the answer is why. Subscribers hear [`ServerEvent::Replacing`], then
/// [`ServerEvent::Replaced`] or [`ServerEvent::ReplaceFailed`]. A stdio server runs as two
/// processes while its generations overlap.
///
/// ```no_run
/// # async fn demo(sup: actix::Addr<mcp_supervisor::Supervisor>) -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_supervisor::Restart;
/// use std::time::Duration;
///
/// sup.send(Restart::new("fs").drain_timeout(Duration::from_secs(60))).await??;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct Restart {
    /// Server name.
    pub server: String,
    /// How long the old generation's calls may take to finish.
    pub drain_timeout: Duration,
}

impl Restart {
    /// A restart of `server`, draining for [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn new(server: impl Into<String>) -> Self {
        Restart {
            server: server.into(),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// How long the old generation's calls may take to finish.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}

/// Replaces a server's configuration (a rotated token in its `headers` or `env`, a new
/// argument) make-before-break, as [`Restart`] does: the server of the same name gets a new
/// generation with `config`. An invalid `config` is refused before anything starts.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), Error>")]
pub struct ReplaceServer {
    /// The new configuration; its name is the server's.
    pub config: ServerConfig,
    /// How long the old generation's calls may take to finish.
    pub drain_timeout: Duration,
}

impl ReplaceServer {
    /// A replacement by `config`, draining for [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn new(config: ServerConfig) -> Self {
        ReplaceServer {
            config,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// How long the old generation's calls may take to finish.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}

pub use crate::session::events::ServerEvent;

impl Message for ServerEvent {
    type Result = ();
}

/// Applies a new set of server configurations (e.g. an edited `mcp.json`): the supervisor
/// diffs it with the servers it runs, by name and settings. New names are added, missing ones
/// removed (their calls answered as a stopped server's), changed ones replaced make-before-break
/// as [`ReplaceServer`] does, unchanged ones left alone. An entry of the new configuration that
/// could not be loaded (a partial load's `invalid`) leaves the server of that name running as it
/// is. Answers once every step is done, with what became of each server.
///
/// ```no_run
/// # async fn demo(sup: actix::Addr<mcp_supervisor::Supervisor>) -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_supervisor::{Reload, ServerConfig};
///
/// let loaded = ServerConfig::load_mcp_servers("mcp.json")?;
/// let report = sup.send(Reload::from_loaded(loaded)).await?;
/// for (server, outcome) in &report.servers {
///     println!("{server}: {outcome}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Message)]
#[rtype(result = "ReloadReport")]
pub struct Reload {
    /// The servers as they should be.
    pub servers: Vec<ServerConfig>,
    /// The entries that could not be loaded, each naming its server (`Error::Config`): those
    /// servers keep running as they are.
    pub invalid: Vec<Error>,
    /// How long the old generation of a replaced server may take to finish its calls.
    pub drain_timeout: Duration,
}

impl Reload {
    /// Reloads to exactly `servers`.
    pub fn new(servers: Vec<ServerConfig>) -> Self {
        Reload {
            servers,
            invalid: Vec::new(),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// Reloads to what a (partial) load of an `mcpServers` file gave: its valid servers, and
    /// its invalid entries, whose servers keep running as they are.
    pub fn from_loaded(loaded: crate::config::Loaded) -> Self {
        Reload {
            servers: loaded.servers,
            invalid: loaded.invalid,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// Reloads to what the `mcpServers` file at `path` holds now, loaded as
    /// [`ServerConfig::load_mcp_servers`](crate::ServerConfig::load_mcp_servers) does (a partial
    /// load: an invalid entry keeps its server as it is). A file that cannot be read or parsed
    /// as a whole is an error ([`ErrorKind::Config`](crate::ErrorKind::Config)): there is
    /// nothing to apply, and the servers run on as they are. For other load options (another
    /// host's keys, variables), use [`Reload::from_loaded`] with
    /// [`LoadOptions`](crate::LoadOptions).
    ///
    /// ```no_run
    /// # async fn demo(sup: actix::Addr<mcp_supervisor::Supervisor>) -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_supervisor::Reload;
    ///
    /// let report = sup.send(Reload::from_file("mcp.json")?).await?;
    /// assert!(report.is_ok(), "{report:?}");
    /// # Ok(()) }
    /// ```
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, Error> {
        Ok(Self::from_loaded(crate::ServerConfig::load_mcp_servers(
            path,
        )?))
    }

    /// How long the old generation of a replaced server may take to finish its calls.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }
}

/// What a [`Reload`] did, server by server.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Each server the reload touched or looked at, by name.
    pub servers: std::collections::BTreeMap<String, ReloadOutcome>,
}

impl ReloadReport {
    /// Whether every step succeeded (nothing `Kept` or `Failed`).
    pub fn is_ok(&self) -> bool {
        self.servers
            .values()
            .all(|o| !matches!(o, ReloadOutcome::Kept(_) | ReloadOutcome::Failed(_)))
    }
}

/// What a [`Reload`] did with one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ReloadOutcome {
    /// A new server, started.
    Added,
    /// No longer configured: stopped and removed.
    Removed,
    /// Its configuration changed: replaced make-before-break.
    Replaced,
    /// Its configuration is the same: untouched.
    Unchanged,
    /// Its new entry could not be loaded: it keeps running as it was.
    Kept(Error),
    /// Adding or replacing it failed (a replaced one keeps running as it was).
    Failed(Error),
}

impl std::fmt::Display for ReloadOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReloadOutcome::Added => f.write_str("added"),
            ReloadOutcome::Removed => f.write_str("removed"),
            ReloadOutcome::Replaced => f.write_str("replaced"),
            ReloadOutcome::Unchanged => f.write_str("unchanged"),
            ReloadOutcome::Kept(e) => write!(f, "kept as it was (its new entry is invalid: {e})"),
            ReloadOutcome::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}
