//! The typed calls: each a struct that turns into a request of one method and whose answer
//! is parsed into an rmcp schema type. One macro makes them all, so that they differ only in
//! their method, fields and params.

use serde_json::{Map, Value};

use std::borrow::Cow;

use super::{Call, CallOptions};
use crate::error::Error;
use crate::session::request::{CallRequest, NameAndArguments, Params};
use actix::prelude::*;

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

        impl sealed::Sealed for $name {}

        impl TypedCall for $name {
            type Output = $output;

            fn server(&self) -> &str {
                &self.server
            }
        }

        impl $name {
            /// The JSON-RPC method it calls.
            pub(crate) const METHOD: &'static str = $method;
        }
    };
}

/// Sealed: the typed calls are this crate's (a call of another method is a [`Call`]), so that
/// methods can be added to [`TypedCall`] without breaking anyone.
mod sealed {
    pub trait Sealed {}
}

/// A typed call: converts into a [`Call`], and its answer is parsed into `Output`. Implemented
/// by this crate's typed calls only.
pub trait TypedCall:
    sealed::Sealed + Into<Call> + Message<Result = Result<Self::Output, Error>>
{
    /// The rmcp schema type of the answer.
    type Output: serde::de::DeserializeOwned + Send + 'static;

    /// The server it is for.
    fn server(&self) -> &str;
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
    /// `tools/list`: one page of the server's tools, each whole as the server listed it (the
    /// supervisor's cached list, with all pages, is in [`ServerStatus`](crate::ServerStatus)).
    ///
    /// ```no_run
    /// # async fn f(sup: actix::Addr<mcp_supervisor::Supervisor>) -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_supervisor::ListTools;
    ///
    /// let page = sup.send(ListTools::new("fs")).await??;
    /// for tool in &page.tools {
    ///     println!("{} ({}): {}", tool.name, tool.task_support().name(), tool.object().len());
    /// }
    /// # Ok(()) }
    /// ```
    ListTools => crate::protocol::pages::ToolsPage, "tools/list",
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
    /// `resources/list`: one page of the server's resources, each whole as the server listed
    /// it.
    ListResources => crate::protocol::pages::ResourcesPage, "resources/list",
    fields {
        /// Cursor of the page to fetch.
        cursor: Option<String> = None,
    },
    new(),
    params(c) { cursor_params(c.cursor) }
}

typed_call! {
    /// `resources/templates/list`: one page of the server's resource templates (RFC 6570 URI
    /// templates of the resources it can read, such as `file:///{path}`).
    ///
    /// ```
    /// use mcp_supervisor::ListResourceTemplates;
    /// use std::time::Duration;
    ///
    /// let first = ListResourceTemplates::new("fs").timeout(Duration::from_secs(5));
    /// let next = ListResourceTemplates::new("fs").cursor("page-2");
    /// # let _ = (first, next);
    /// ```
    ListResourceTemplates => crate::protocol::pages::ResourceTemplatesPage, "resources/templates/list",
    fields {
        /// Cursor of the page to fetch.
        cursor: Option<String> = None,
    },
    new(),
    params(c) { cursor_params(c.cursor) }
}

impl ListResourceTemplates {
    /// Asks for the page after `cursor`.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
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
    /// `prompts/list`: one page of the server's prompts, each whole as the server listed it.
    ListPrompts => crate::protocol::pages::PromptsPage, "prompts/list",
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
    /// `skills/list`: one page of the server's skills (SEP-2640), each entry with its
    /// frontmatter and the manifest of its files. Nothing of a skill is read: load one with
    /// [`LoadSkill`](crate::LoadSkill). Call it only on a server that declares the extension
    /// ([`skills::declared`](crate::skills::declared)). An entry of the wrong shape does not
    /// cost the page: it is set aside in [`invalid`](crate::skills::ListSkillsResult::invalid)
    /// with what is wrong with it, and the valid entries are in `skills`; only a page that is
    /// not a list of entries is an [`invalid_response`](crate::ErrorKind::InvalidResponse).
    ///
    /// ```no_run
    /// # async fn f(sup: actix::Addr<mcp_supervisor::Supervisor>) -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_supervisor::{ListSkills, LoadSkill};
    ///
    /// let page = sup.send(ListSkills::new("docs")).await??;
    /// for skill in &page.skills {
    ///     println!("{}: {}", skill.name(), skill.description());
    /// }
    /// for refused in &page.invalid {
    ///     println!("set aside: {refused}");
    /// }
    /// if let Some(skill) = page.skills.into_iter().next() {
    ///     let loaded = sup.send(LoadSkill::new("docs", skill)).await??;
    ///     println!("{}", loaded.body());
    /// }
    /// # Ok(()) }
    /// ```
    ListSkills => crate::skills::ListSkillsResult, "skills/list",
    fields {
        /// Cursor of the page to fetch.
        cursor: Option<String> = None,
    },
    new(),
    params(c) { cursor_params(c.cursor) }
}

impl ListSkills {
    /// Asks for the page after `cursor`.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

typed_call! {
    /// `skills/get`: the entry of one skill, named by the URI of its `SKILL.md` (SEP-2640), as
    /// fresh as the server has it. An answer whose skill's `uri` is not the one asked for is an
    /// [`invalid_response`](crate::ErrorKind::InvalidResponse).
    ///
    /// ```
    /// let get = mcp_supervisor::GetSkill::new("docs", "skill://pdf-processing/SKILL.md");
    /// assert_eq!(get.uri, "skill://pdf-processing/SKILL.md");
    /// ```
    GetSkill => crate::skills::GetSkillResult, "skills/get",
    fields {
        /// The URI of the skill's `SKILL.md`.
        uri: String = uri.into(),
    },
    new(uri: impl Into<String>),
    params(c) { Some(serde_json::json!({ "uri": c.uri })) }
}

typed_call! {
    /// `ping`: checks that the server answers.
    Ping => rmcp::model::EmptyObject, "ping",
    fields {},
    new(),
    params(_c) { None }
}

/// The typed calls that are not on a hot path become their request through their `Call`.
macro_rules! request_via_call {
    ($($t:ident),*) => {$(
        impl From<$t> for CallRequest {
            fn from(call: $t) -> Self {
                let mut request = CallRequest::from(Call::from(call));
                request.method = Cow::Borrowed($t::METHOD);
                request
            }
        }
    )*};
}

request_via_call!(
    ListTools,
    ListResources,
    ListResourceTemplates,
    ReadResource,
    ListPrompts,
    ListSkills,
    GetSkill,
    Ping
);

impl From<CallTool> for CallRequest {
    /// The params serialized from the call's own name and arguments; the name goes with the
    /// request (the retry rules look its tool up after a lost connection).
    fn from(call: CallTool) -> Self {
        let fields = NameAndArguments {
            name: &call.name,
            arguments: &call.arguments,
        };
        let params = Params::of(&fields, true);
        CallRequest {
            server: call.server,
            method: Cow::Borrowed(CallTool::METHOD),
            params: Some(params),
            tool: Some(call.name),
            options: call.options.into(),
        }
    }
}

impl From<GetPrompt> for CallRequest {
    fn from(call: GetPrompt) -> Self {
        let fields = NameAndArguments {
            name: &call.name,
            arguments: &call.arguments,
        };
        CallRequest {
            server: call.server,
            method: Cow::Borrowed(GetPrompt::METHOD),
            params: Some(Params::of(&fields, true)),
            tool: None,
            options: call.options.into(),
        }
    }
}
