//! One page of a list (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`) with its items kept whole ([`AsSent`](super::as_sent::AsSent)): the answers of
//! [`ListTools`](crate::ListTools), [`ListResources`](crate::ListResources),
//! [`ListResourceTemplates`](crate::ListResourceTemplates) and [`ListPrompts`](crate::ListPrompts).
//! rmcp's page types would drop every member of an item that they do not know.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::as_sent::{ListedPrompt, ListedResource, ListedResourceTemplate, ListedTool};

/// Declares a page type: its items under their key, the next page's cursor, and the page's
/// other members as sent.
macro_rules! page {
    ($(#[$doc:meta])* $name:ident { $items:ident : $item:ty = $key:literal }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[non_exhaustive]
        pub struct $name {
            #[doc = concat!("The page's items (`", $key, "`), each as the server sent it.")]
            #[serde(rename = $key)]
            pub $items: Vec<$item>,
            /// The cursor of the next page (`nextCursor`), if there is one.
            #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            /// The page's other members as sent: `_meta`, the 2026-07-28 revision's `ttlMs` and
            /// `cacheScope`, and any this version does not know.
            #[serde(flatten)]
            pub rest: Map<String, Value>,
        }
    };
}

page! {
    /// One page of `tools/list`.
    ///
    /// ```
    /// use mcp_supervisor::ToolsPage;
    /// use serde_json::json;
    ///
    /// let page: ToolsPage = serde_json::from_value(json!({
    ///     "tools": [{"name": "a", "inputSchema": {"type": "object"}, "x-new": 1}],
    ///     "nextCursor": "2",
    ///     "ttlMs": 60000
    /// }))?;
    /// assert_eq!(page.tools[0].name, "a");
    /// assert_eq!(page.tools[0].object()["x-new"], 1);
    /// assert_eq!(page.next_cursor.as_deref(), Some("2"));
    /// assert_eq!(page.rest["ttlMs"], 60000);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ToolsPage { tools: ListedTool = "tools" }
}

page! {
    /// One page of `resources/list`.
    ResourcesPage { resources: ListedResource = "resources" }
}

page! {
    /// One page of `resources/templates/list`.
    ResourceTemplatesPage { resource_templates: ListedResourceTemplate = "resourceTemplates" }
}

page! {
    /// One page of `prompts/list`.
    PromptsPage { prompts: ListedPrompt = "prompts" }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_page_keeps_its_items_and_its_own_members_whole() {
        let sent = json!({
            "resources": [{"uri": "demo://a", "name": "a", "x-size-class": "large"}],
            "_meta": {"k": "v"},
            "x-page": true
        });
        let page: ResourcesPage = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(page.resources[0].uri, "demo://a");
        assert_eq!(page.resources[0].object()["x-size-class"], "large");
        assert_eq!(page.next_cursor, None);
        assert_eq!(serde_json::to_value(&page).unwrap(), sent);
    }

    #[test]
    fn an_item_that_is_not_of_its_type_fails_the_page() {
        let bad = json!({"prompts": [{"description": "no name"}]});
        assert!(serde_json::from_value::<PromptsPage>(bad).is_err());
        assert!(serde_json::from_value::<ToolsPage>(json!({"tools": 3})).is_err());
    }
}
