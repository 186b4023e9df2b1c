//! A server's object kept whole: [`AsSent`] holds the JSON object a server sent (every member,
//! including those no schema type of ours knows) beside its typed form from rmcp.
//!
//! rmcp's schema types name the members of the revision they were written for and drop the
//! rest when they parse: rmcp 3.11's `Tool` has no `execution`, its `ServerCapabilities` no
//! 2025-11-25 `tasks`. A server's objects have to survive that, for the tasks code and for an
//! application that reads or passes on a member we do not know yet. So each object the
//! supervisor keeps or hands out is parsed once into its typed form, and the object itself is
//! kept with it: the typed fields are as easy to use as before (through `Deref`), and
//! [`AsSent::object`] is what the server sent. Serializing an `AsSent` writes the object.
//!
//! Both live behind one `Arc`, so a status snapshot or a clone of a tool list copies pointers,
//! not trees. The typed form and the object are two parses of the same text: a cached list
//! costs about twice its parsed size (bounded, as the list is, by `max_message_bytes` and
//! [`pagination`](super::pagination)'s bounds); rmcp's types cannot borrow from the object.
//!
//! ```
//! use mcp_supervisor::{ListedTool, TaskSupport};
//! use serde_json::json;
//!
//! let tool: ListedTool = serde_json::from_value(json!({
//!     "name": "report",
//!     "inputSchema": {"type": "object"},
//!     "execution": {"taskSupport": "optional"},
//!     "x-future": {"anything": true}
//! }))?;
//! assert_eq!(tool.name, "report"); // the typed fields, through `Deref`
//! assert_eq!(tool.task_support(), TaskSupport::Optional);
//! assert_eq!(tool.object()["x-future"], json!({"anything": true}));
//! assert_eq!(serde_json::to_value(&tool)?["execution"]["taskSupport"], "optional");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use rmcp::model::{Implementation, Prompt, Resource, ResourceTemplate, ServerCapabilities, Tool};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// An object a server sent, kept whole: its typed form `T` (reached through `Deref`, so
/// `tool.name` reads as on a [`Tool`]) and the JSON object itself, every member included
/// ([`object`](Self::object)). Cheap to clone (one `Arc`). Two are equal when their objects
/// are: a change of any member, known to `T` or not, makes them differ.
///
/// The supervisor hands out [`ListedTool`]s (its cached tool list, [`ListTools`](crate::ListTools)),
/// [`ListedResource`]s, [`ListedResourceTemplate`]s and [`ListedPrompt`]s, and keeps a server's
/// capabilities and `serverInfo` this way in its status.
pub struct AsSent<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    typed: T,
    object: Map<String, Value>,
}

/// A tool as the server listed it: [`Tool`]'s fields, plus every member rmcp does not know
/// (`execution` among them: see [`task_support`](AsSent::task_support)).
pub type ListedTool = AsSent<Tool>;
/// A resource as the server listed it.
pub type ListedResource = AsSent<Resource>;
/// A resource template as the server listed it.
pub type ListedResourceTemplate = AsSent<ResourceTemplate>;
/// A prompt as the server listed it.
pub type ListedPrompt = AsSent<Prompt>;
/// A server's capabilities as it announced them (2025-11-25's `tasks` included, which rmcp's
/// [`ServerCapabilities`] has no field for).
pub type SentCapabilities = AsSent<ServerCapabilities>;
/// A server's identity (`serverInfo`) as it announced it.
pub type SentImplementation = AsSent<Implementation>;

impl<T: DeserializeOwned> AsSent<T> {
    /// Parses `object` into `T` and keeps both.
    ///
    /// # Errors
    ///
    /// The object is not a valid `T` (a tool without a `name`, ...).
    pub fn from_object(object: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let object = Value::Object(object);
        let typed = T::deserialize(&object)?;
        let Value::Object(object) = object else {
            unreachable!("wrapped as an object two lines above")
        };
        Ok(AsSent {
            inner: Arc::new(Inner { typed, object }),
        })
    }
}

impl<T: Serialize> AsSent<T> {
    /// An object made here rather than sent by a server (tests, an application's own stand-in):
    /// its object is `typed` serialized, so it holds only what `T` knows.
    ///
    /// # Errors
    ///
    /// `T` does not serialize to a JSON object.
    pub fn from_typed(typed: T) -> Result<Self, serde_json::Error> {
        match serde_json::to_value(&typed)? {
            Value::Object(object) => Ok(AsSent {
                inner: Arc::new(Inner { typed, object }),
            }),
            other => Err(serde::ser::Error::custom(format_args!(
                "not a JSON object: {other}"
            ))),
        }
    }
}

impl<T> AsSent<T> {
    /// The typed form (also reached through `Deref`).
    pub fn typed(&self) -> &T {
        &self.inner.typed
    }

    /// The object as the server sent it: every member, those `T` has no field for included.
    /// (Its keys are sorted: serde_json keeps no order.)
    pub fn object(&self) -> &Map<String, Value> {
        &self.inner.object
    }

    /// One member of the object, known to `T` or not: `tool.member("execution")`.
    pub fn member(&self, key: &str) -> Option<&Value> {
        self.inner.object.get(key)
    }
}

impl<T: Clone> AsSent<T> {
    /// The typed form, owned (moved out when this is the only handle, cloned otherwise).
    pub fn into_typed(self) -> T {
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner.typed,
            Err(shared) => shared.typed.clone(),
        }
    }
}

/// No capabilities: `{}`, as a server that announced none.
impl Default for AsSent<ServerCapabilities> {
    fn default() -> Self {
        AsSent {
            inner: Arc::new(Inner {
                typed: ServerCapabilities::default(),
                object: Map::new(),
            }),
        }
    }
}

impl<T> Deref for AsSent<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner.typed
    }
}

impl<T> AsRef<T> for AsSent<T> {
    fn as_ref(&self) -> &T {
        &self.inner.typed
    }
}

impl<T> Clone for AsSent<T> {
    fn clone(&self) -> Self {
        AsSent {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// By the object: it holds everything the typed form does, and more.
impl<T> PartialEq for AsSent<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.object == other.inner.object
    }
}

impl<T> Eq for AsSent<T> {}

/// The object, which says everything (the typed form is a view of it).
impl<T> fmt::Debug for AsSent<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsSent").field(&self.inner.object).finish()
    }
}

/// Writes the object as the server sent it.
impl<T> Serialize for AsSent<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.inner.object.serialize(serializer)
    }
}

/// Reads a JSON object, and `T` from it.
impl<'de, T: DeserializeOwned> Deserialize<'de> for AsSent<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Map::<String, Value>::deserialize(deserializer)?;
        AsSent::from_object(object).map_err(serde::de::Error::custom)
    }
}

/// Whether a tool may be called as a task (a task-augmented `tools/call`, protocol revision
/// 2025-11-25): the tool's `execution.taskSupport`. Absent, or a value this version does not
/// know, is [`Forbidden`](Self::Forbidden), the revision's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never as a task (`"forbidden"`, the default).
    #[default]
    Forbidden,
    /// As a task or as an ordinary call (`"optional"`).
    Optional,
    /// Only as a task (`"required"`).
    Required,
}

impl TaskSupport {
    /// The value as the revision spells it: `forbidden`, `optional`, `required`.
    pub fn name(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// A task-augmented call may be sent for the tool (`optional` or `required`).
    pub fn allows_tasks(self) -> bool {
        !matches!(self, TaskSupport::Forbidden)
    }
}

impl AsSent<Tool> {
    /// The tool's `execution.taskSupport`, [`Forbidden`](TaskSupport::Forbidden) when absent
    /// or unknown. Reads the object; allocates nothing.
    ///
    /// ```
    /// use mcp_supervisor::{ListedTool, TaskSupport};
    /// use serde_json::json;
    ///
    /// let tool: ListedTool = serde_json::from_value(json!({
    ///     "name": "render", "inputSchema": {"type": "object"},
    ///     "execution": {"taskSupport": "required"}
    /// }))?;
    /// assert_eq!(tool.task_support(), TaskSupport::Required);
    /// assert!(tool.task_support().allows_tasks());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn task_support(&self) -> TaskSupport {
        let support = self
            .member("execution")
            .and_then(|execution| execution.get("taskSupport"))
            .and_then(Value::as_str);
        match support {
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(extra: Value) -> Result<ListedTool, serde_json::Error> {
        let mut object = json!({"name": "t", "inputSchema": {"type": "object"}});
        if let (Value::Object(object), Value::Object(extra)) = (&mut object, extra) {
            object.extend(extra);
        }
        serde_json::from_value(object)
    }

    #[test]
    fn every_member_survives_beside_the_typed_fields() {
        let tool = tool(json!({
            "description": "d",
            "execution": {"taskSupport": "optional"},
            "_meta": {"io.example/k": 1},
            "icons": [{"src": "https://example.com/i.png", "x-theme": "dark"}],
            "x-future": {"nested": [1, 2]}
        }))
        .unwrap();
        assert_eq!(tool.name, "t");
        assert_eq!(tool.description.as_deref(), Some("d"));
        assert_eq!(
            tool.object()["execution"],
            json!({"taskSupport": "optional"})
        );
        assert_eq!(tool.member("x-future"), Some(&json!({"nested": [1, 2]})));
        // An icon's member rmcp's `Icon` does not know survives in the object.
        assert_eq!(tool.object()["icons"][0]["x-theme"], "dark");
        let written = serde_json::to_value(&tool).unwrap();
        assert_eq!(&written, &Value::Object(tool.object().clone()));
        let again: ListedTool = serde_json::from_value(written).unwrap();
        assert_eq!(again, tool);
    }

    #[test]
    fn task_support_of_each_value_absent_and_unknown() {
        let support = |execution: Value| {
            tool(json!({"execution": execution}))
                .unwrap()
                .task_support()
        };
        assert_eq!(
            support(json!({"taskSupport": "forbidden"})),
            TaskSupport::Forbidden
        );
        assert_eq!(
            support(json!({"taskSupport": "optional"})),
            TaskSupport::Optional
        );
        assert_eq!(
            support(json!({"taskSupport": "required"})),
            TaskSupport::Required
        );
        assert_eq!(
            support(json!({"taskSupport": "sometimes"})),
            TaskSupport::Forbidden
        );
        assert_eq!(support(json!({"taskSupport": 1})), TaskSupport::Forbidden);
        assert_eq!(support(json!({})), TaskSupport::Forbidden);
        assert_eq!(support(json!("optional")), TaskSupport::Forbidden);
        assert_eq!(
            tool(json!({})).unwrap().task_support(),
            TaskSupport::Forbidden
        );
        assert!(!TaskSupport::Forbidden.allows_tasks());
        assert!(TaskSupport::Optional.allows_tasks() && TaskSupport::Required.allows_tasks());
        assert_eq!(TaskSupport::Required.name(), "required");
    }

    #[test]
    fn equal_by_every_member_known_or_not() {
        let a = tool(json!({"x-future": 1})).unwrap();
        let b = tool(json!({"x-future": 2})).unwrap();
        assert_eq!(a.typed(), b.typed(), "rmcp sees the same tool");
        assert_ne!(a, b);
        assert_eq!(a, a.clone());
    }

    #[test]
    fn an_object_that_is_not_its_type_is_refused() {
        assert!(serde_json::from_value::<ListedTool>(json!({"inputSchema": {}})).is_err());
        assert!(serde_json::from_value::<ListedTool>(json!(["t"])).is_err());
    }

    #[test]
    fn made_from_a_typed_value() {
        let caps = SentCapabilities::from_typed(ServerCapabilities::default()).unwrap();
        assert!(caps.object().is_empty());
        assert!(AsSent::from_typed(3).is_err());
        let tool = tool(json!({})).unwrap();
        assert_eq!(tool.clone().into_typed().name, "t");
    }
}
