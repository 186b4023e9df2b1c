//! Following a list's `nextCursor` to its end, bounded. Pure: the caller passes in how to fetch
//! one page (a request on the handshake's connection, or a call through the actor), so the
//! handshake and the refresh after `notifications/tools/list_changed` share one routine and one
//! set of bounds.
//!
//! A server may hand out cursors forever (a bug, or on purpose): a cursor seen before, more than
//! [`MAX_PAGES`] pages or more than [`MAX_ITEMS`] items end the walk. What was fetched is kept,
//! and why the walk was cut short is reported beside it, for the caller to log and to show
//! (`ServerStatus::tools_truncated`), so a server with a broken pagination is still usable.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::error::Error;
use crate::protocol::as_sent::ListedTool;
use crate::protocol::lifecycle;

/// Pages fetched at most for one list.
pub const MAX_PAGES: usize = 1000;
/// Items kept at most for one list.
pub const MAX_ITEMS: usize = 10_000;

/// A whole list, and why it may be incomplete.
#[derive(Debug)]
pub struct Listed<T> {
    /// The items of every page fetched, in order.
    pub items: Vec<T>,
    /// Set when the walk was cut short (the server kept handing out cursors, or items): why,
    /// and what was kept, e.g. `more than 10000 tools; kept the first 10000`.
    pub cut: Option<String>,
}

/// Fetches every page of `tools/list` with `fetch` (given each page's params), within the
/// bounds above. Each tool is kept whole ([`ListedTool`]): the members rmcp's `Tool` does not
/// know are bounded as the page's text was, by `max_message_bytes`. An error fetching or parsing a page is returned as is.
pub async fn list_all_tools<F>(server: &str, mut fetch: F) -> Result<Listed<ListedTool>, Error>
where
    F: AsyncFnMut(Option<Value>) -> Result<Value, Error>,
{
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let (page, next) = lifecycle::parse_tools_page(server, fetch(params).await?)?;
        let room = MAX_ITEMS.saturating_sub(items.len());
        let over = page.len() > room;
        items.extend(page.into_iter().take(room));
        if over {
            return Ok(cut_short(items, format!("more than {MAX_ITEMS} tools")));
        }
        match next {
            None => return Ok(Listed { items, cut: None }),
            Some(next) if !seen.insert(next.clone()) => {
                let why = format!(
                    "its cursors go round in a circle after {} pages",
                    seen.len() + 1
                );
                return Ok(cut_short(items, why));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Ok(cut_short(items, format!("more than {MAX_PAGES} pages")))
}

fn cut_short<T>(items: Vec<T>, why: String) -> Listed<T> {
    let cut = format!("{why}; kept the first {}", items.len());
    Listed {
        items,
        cut: Some(cut),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::future::Future;

    use super::*;

    fn page(names: &[&str], next: Option<&str>) -> Value {
        let tools: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
            .collect();
        match next {
            Some(c) => json!({"tools": tools, "nextCursor": c}),
            None => json!({"tools": tools}),
        }
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    #[test]
    fn follows_cursors_to_the_end() {
        let listed = block_on(list_all_tools("s", async |params| {
            let cursor = params.and_then(|p| p["cursor"].as_str().map(str::to_owned));
            Ok(match cursor.as_deref() {
                None => page(&["a"], Some("2")),
                Some("2") => page(&["b"], Some("3")),
                _ => page(&["c"], None),
            })
        }))
        .unwrap();
        let names: Vec<_> = listed.items.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(listed.cut.is_none());
    }

    #[test]
    fn cursors_that_go_round_in_a_circle_end_the_walk() {
        // The defect: `a`, `b`, `a`, `b`, ... never repeats the previous cursor.
        let fetched = Cell::new(0);
        let listed = block_on(list_all_tools("s", async |_| {
            fetched.set(fetched.get() + 1);
            let next = if fetched.get() % 2 == 1 { "a" } else { "b" };
            Ok(page(&["t"], Some(next)))
        }))
        .unwrap();
        assert_eq!(fetched.get(), 3, "stops at the first cursor seen twice");
        let cut = listed.cut.expect("reported");
        assert_eq!(
            cut,
            "its cursors go round in a circle after 3 pages; kept the first 3"
        );
    }

    #[test]
    fn endless_fresh_cursors_stop_at_the_page_bound() {
        let fetched = Cell::new(0usize);
        let listed = block_on(list_all_tools("s", async |_| {
            fetched.set(fetched.get() + 1);
            Ok(page(&[], Some(&fetched.get().to_string())))
        }))
        .unwrap();
        assert_eq!(fetched.get(), MAX_PAGES);
        assert_eq!(
            listed.cut.as_deref(),
            Some("more than 1000 pages; kept the first 0")
        );
    }

    #[test]
    fn a_huge_list_is_cut_at_the_item_bound() {
        let names: Vec<String> = (0..MAX_ITEMS + 5).map(|i| format!("t{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let listed = block_on(list_all_tools("s", async |_| {
            Ok(page(&names, Some("more")))
        }))
        .unwrap();
        assert_eq!(listed.items.len(), MAX_ITEMS);
        assert_eq!(
            listed.cut.as_deref(),
            Some("more than 10000 tools; kept the first 10000")
        );
    }

    #[test]
    fn a_page_that_fails_fails_the_list() {
        let err = block_on(list_all_tools("s", async |_| Ok(json!({"tools": 3})))).unwrap_err();
        assert_eq!(err.code(), "invalid_response");
    }
}
