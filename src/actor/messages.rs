//! The messages an application sends to the [`Supervisor`](crate::Supervisor) or straight to a
//! [`ServerActor`](crate::ServerActor), and the ones it receives back.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{Map, Value};

use crate::actor::status::ServerStatus;
use crate::config::ServerConfig;
use crate::error::Error;
use crate::policy::retry::RetryPolicy;
use crate::policy::state::ServerState;
use crate::protocol::jsonrpc::RpcError;

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
        CallOptions {
            parent: tracing::Span::current(),
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
            pub fn timeout(mut self, timeout: Duration) -> Self {
                self.options.timeout = Some(timeout);
                self
            }

            /// Sets what may be re-sent if the connection breaks while the call is in flight.
            pub fn retry(mut self, retry: RetryPolicy) -> Self {
                self.options.retry = retry;
                self
            }

            /// Sends the server's progress notifications for this call to `recipient`.
            pub fn on_progress(mut self, recipient: Recipient<Progress>) -> Self {
                self.options.progress = Some(recipient);
                self
            }

            /// Lets each progress notification restart the timeout, up to `max_total` overall.
            pub fn reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
                self.options.reset_timeout_on_progress = Some(max_total);
                self
            }

            /// Makes the call's `mcp.call` span a child of `parent` instead of the span that
            /// was current when the call was made.
            pub fn parent_span(mut self, parent: tracing::Span) -> Self {
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

/// Declares a typed call: a struct that turns into a [`Call`] and whose answer is parsed into an
/// rmcp schema type.
macro_rules! typed_call {
    (
        $(#[$doc:meta])*
        $name:ident => $output:ty, $method:literal,
        fields { $($(#[$fdoc:meta])* $field:ident : $fty:ty = $init:expr),* $(,)? },
        new($($arg:ident : $aty:ty),*),
        params($self_:ident) $params:block
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            /// Server name.
            pub server: String,
            $( $(#[$fdoc])* pub $field: $fty, )*
            /// Timeout, retry policy, progress.
            pub options: CallOptions,
        }

        impl $name {
            #[doc = concat!("A `", $method, "` call to `server`.")]
            pub fn new(server: impl Into<String> $(, $arg: $aty)*) -> Self {
                $name { server: server.into(), $( $field: $init, )* options: CallOptions::here() }
            }
        }

        call_options!($name);

        impl From<$name> for Call {
            fn from($self_: $name) -> Call {
                let params: Option<Value> = $params;
                Call { server: $self_.server, method: $method.into(), params, options: $self_.options }
            }
        }

        impl Message for $name {
            type Result = Result<$output, Error>;
        }

        impl TypedCall for $name {
            type Output = $output;
        }
    };
}

/// A typed call: converts into a [`Call`], and its answer is parsed into `Output`.
pub trait TypedCall: Into<Call> + Message<Result = Result<Self::Output, Error>> {
    /// The rmcp schema type of the answer.
    type Output: serde::de::DeserializeOwned + Send + 'static;
}

/// `{"name": .., "arguments": ..}`, moving the arguments rather than copying them (this is on
/// every tool call's path).
fn name_and_arguments(name: String, arguments: Map<String, Value>) -> Value {
    let mut params = Map::with_capacity(2);
    params.insert("name".into(), Value::String(name));
    params.insert("arguments".into(), Value::Object(arguments));
    Value::Object(params)
}

fn cursor_params(cursor: Option<String>) -> Option<Value> {
    cursor.map(|c| serde_json::json!({ "cursor": c }))
}

typed_call! {
    /// `tools/call`: runs a tool.
    ///
    /// ```
    /// use mcp_supervisor::{CallTool, RetryPolicy};
    /// use serde_json::json;
    /// use std::time::Duration;
    ///
    /// let call = CallTool::new("fs", "read_text_file", json!({"path": "/srv/a.txt"}))
    ///     .timeout(Duration::from_secs(10))
    ///     .retry(RetryPolicy::Never);
    /// ```
    CallTool => rmcp::model::CallToolResult, "tools/call",
    fields {
        /// Tool name.
        name: String = name.into(),
        /// Arguments (a JSON object; anything else is sent as `{}`).
        arguments: Map<String, Value> = match arguments {
            Value::Object(map) => map,
            _ => Map::new(),
        },
    },
    new(name: impl Into<String>, arguments: Value),
    params(c) { Some(name_and_arguments(c.name, c.arguments)) }
}

typed_call! {
    /// `tools/list`: one page of the server's tools (the supervisor's cached list, with all
    /// pages, is in [`ServerStatus`]).
    ListTools => rmcp::model::ListToolsResult, "tools/list",
    fields {
        /// Cursor of the page to fetch.
        cursor: Option<String> = None,
    },
    new(),
    params(c) { cursor_params(c.cursor) }
}

impl ListTools {
    /// Asks for the page after `cursor`.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

typed_call! {
    /// `resources/list`: one page of the server's resources.
    ListResources => rmcp::model::ListResourcesResult, "resources/list",
    fields {
        /// Cursor of the page to fetch.
        cursor: Option<String> = None,
    },
    new(),
    params(c) { cursor_params(c.cursor) }
}

typed_call! {
    /// `resources/read`: reads one resource.
    ReadResource => rmcp::model::ReadResourceResult, "resources/read",
    fields {
        /// The resource's URI.
        uri: String = uri.into(),
    },
    new(uri: impl Into<String>),
    params(c) { Some(serde_json::json!({ "uri": c.uri })) }
}

typed_call! {
    /// `prompts/list`: one page of the server's prompts.
    ListPrompts => rmcp::model::ListPromptsResult, "prompts/list",
    fields {
        /// Cursor of the page to fetch.
        cursor: Option<String> = None,
    },
    new(),
    params(c) { cursor_params(c.cursor) }
}

typed_call! {
    /// `prompts/get`: renders a prompt.
    GetPrompt => rmcp::model::GetPromptResult, "prompts/get",
    fields {
        /// Prompt name.
        name: String = name.into(),
        /// Its arguments.
        arguments: Map<String, Value> = Map::new(),
    },
    new(name: impl Into<String>),
    params(c) { Some(name_and_arguments(c.name, c.arguments)) }
}

impl GetPrompt {
    /// Sets one argument of the prompt.
    pub fn arg(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments
            .insert(key.into(), Value::String(value.into()));
        self
    }
}

typed_call! {
    /// `ping`: checks that the server answers.
    Ping => rmcp::model::EmptyObject, "ping",
    fields {},
    new(),
    params(_c) { None }
}

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

/// Something that happened on a server, for [`SubscribeEvents`] recipients.
#[derive(Debug, Clone, PartialEq, Message)]
#[rtype(result = "()")]
#[non_exhaustive]
pub enum ServerEvent {
    /// The connection state changed.
    StateChanged {
        /// Server name.
        server: String,
        /// The new state.
        state: ServerState,
        /// What happened, for people: `Reconnecting to MCP server (attempt 1/3)…`.
        message: String,
    },
    /// The tool list changed (after `tools/list_changed` or a reconnect).
    ToolsChanged {
        /// Server name.
        server: String,
        /// Tools that appeared.
        added: Vec<String>,
        /// Tools that disappeared.
        removed: Vec<String>,
    },
    /// A subscribed resource changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// Server name.
        server: String,
        /// Its URI.
        uri: String,
    },
    /// A log message from the server (`notifications/message`).
    Log {
        /// Server name.
        server: String,
        /// Its params: `level`, `logger`, `data`.
        params: Value,
    },
    /// Any other notification.
    Notification {
        /// Server name.
        server: String,
        /// Method.
        method: String,
        /// Params.
        params: Option<Value>,
    },
}

impl ServerEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            ServerEvent::StateChanged { server, .. }
            | ServerEvent::ToolsChanged { server, .. }
            | ServerEvent::ResourceUpdated { server, .. }
            | ServerEvent::Log { server, .. }
            | ServerEvent::Notification { server, .. } => server,
        }
    }
}
