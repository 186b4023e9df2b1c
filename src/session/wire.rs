//! A live connection as requests are written to it: the transport's [`Link`], shaped by the
//! era the connection speaks. This is the era's room on the way out: the call table and the
//! handshake write through a `Wire`, and so stay blind to the era: in the session era a request goes out as it is; in the stateless
//! 2026-07-28 revision it carries the per-request `_meta` and, over HTTP, its headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, the tool's `Mcp-Param-*`), a `ping`
//! (which the revision removed) is asked as `server/discover`, and a timed-out request is
//! cancelled by closing its stream rather than by `notifications/cancelled`.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::protocol::as_sent::ListedTool;
use crate::protocol::era::Era;
use crate::protocol::headers::{self, ParamBinding};
use crate::protocol::jsonrpc;
use crate::protocol::meta::RequestMeta;
use crate::protocol::text::server_text;
use crate::session::request::Params;
use crate::transport::Link;

/// The header of the protocol version, on every modern HTTP request.
const VERSION_HEADER: &str = "MCP-Protocol-Version";

/// A connection's outbound side, shaped by its era.
#[derive(Clone)]
pub(crate) struct Wire {
    link: Rc<dyn Link>,
    modern: Option<Modern>,
}

#[derive(Debug, Clone)]
struct Modern {
    meta: RequestMeta,
    /// HTTP: requests carry headers, and tools their `x-mcp-header` bindings.
    http: bool,
    /// The `Mcp-Param-*` bindings of the cached tools that have any, by tool name.
    bindings: HashMap<String, Vec<ParamBinding>>,
}

impl Wire {
    /// A connection of the session era: requests go out as they are.
    pub fn legacy(link: Rc<dyn Link>) -> Self {
        Wire { link, modern: None }
    }

    /// A connection of the 2026-07-28 revision whose requests carry `meta`; `http`: with the
    /// revision's headers.
    pub fn modern(link: Rc<dyn Link>, meta: RequestMeta, http: bool) -> Self {
        Wire {
            link,
            modern: Some(Modern {
                meta,
                http,
                bindings: HashMap::new(),
            }),
        }
    }

    /// The era this connection speaks.
    pub fn era(&self) -> Era {
        if self.modern.is_some() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// Whether requests go over HTTP with the revision's headers (a modern HTTP connection).
    pub fn is_modern_http(&self) -> bool {
        self.modern.as_ref().is_some_and(|m| m.http)
    }

    /// The transport's link, for what is not a request of ours (answers to the server's
    /// requests, notifications).
    pub fn link(&self) -> &Rc<dyn Link> {
        &self.link
    }

    /// Writes request `id` with `params` as JSON text; false if the connection is already
    /// gone.
    pub fn request(&self, id: u64, method: &str, params: Option<&Params>) -> bool {
        let Some(modern) = &self.modern else {
            // Straight into the transport's buffer, where it has one (stdio).
            return self.link.send_with(&mut |out| match params {
                Some(params) => jsonrpc::write_request(out, id, method, &[params.json()]),
                None => jsonrpc::write_request(out, id, method, &[]),
            });
        };
        // The revision has no `ping`; `server/discover` answers the same question (is it
        // there?) on every modern server, without an effect.
        let method = if method == "ping" {
            "server/discover"
        } else {
            method
        };
        if !modern.http {
            // The metadata goes in front of the params' own members, as they are, unless the
            // params have a `_meta` of their own to merge into.
            let members = match params {
                None => Some(&b""[..]),
                Some(params) => params.members(),
            };
            if let Some(members) = members {
                let separator: &[u8] = if members.is_empty() { b"" } else { b"," };
                let pieces = [
                    b"{\"_meta\":",
                    modern.meta.json().as_bytes(),
                    separator,
                    members,
                    b"}",
                ];
                return self
                    .link
                    .send_with(&mut |out| jsonrpc::write_request(out, id, method, &pieces));
            }
        }
        let params = modern.meta.apply(params.map(Params::to_value));
        let line = jsonrpc::request_line(id, method, Some(&params));
        if !modern.http {
            return self.link.send(line);
        }
        let mut out = Vec::with_capacity(4);
        out.push((VERSION_HEADER.to_owned(), modern.meta.version().to_owned()));
        for (name, value) in headers::standard_headers(method, Some(&params)) {
            out.push((name.to_owned(), value));
        }
        if method == "tools/call" {
            let tool = params.get("name").and_then(Value::as_str);
            if let Some(bindings) = tool.and_then(|t| modern.bindings.get(t)) {
                out.extend(headers::param_headers(bindings, params.get("arguments")));
            }
        }
        self.link.send_modern(line, out)
    }

    /// [`Wire::request`] with params as a `Value` (the handshake's, the listen stream's).
    pub fn request_value(&self, id: u64, method: &str, params: Option<&Value>) -> bool {
        self.request(id, method, params.map(Params::of_value).as_ref())
    }

    /// Gives up on request `id`: the transport lets go of what it holds for it (over HTTP that
    /// closes its response stream, which is how the 2026-07-28 revision cancels), and, except
    /// for a modern HTTP request, the server is told with `notifications/cancelled`.
    pub fn cancel(&self, id: u64, reason: &str) {
        if !self.is_modern_http() {
            let params = json!({ "requestId": id, "reason": reason });
            self.link.send(jsonrpc::notification_line(
                "notifications/cancelled",
                Some(&params),
            ));
        }
        self.link.abandon(id);
    }

    /// The tool list as it is to be cached, and kept for mirroring arguments into headers:
    /// over modern HTTP, a tool whose `x-mcp-header` annotations are invalid cannot be called
    /// correctly and is left out (the revision says so), with a WARN naming it and why.
    pub fn accept_tools(&mut self, server: &str, tools: Vec<ListedTool>) -> Vec<ListedTool> {
        let Some(modern) = self.modern.as_mut().filter(|m| m.http) else {
            return tools;
        };
        let (kept, dropped) = headers::validate_tools(tools);
        for (name, why) in dropped {
            tracing::warn!(server, tool = %server_text(&name), reason = %why, "tool left out of the list: invalid x-mcp-header annotation");
        }
        modern.bindings = kept
            .iter()
            .filter_map(|tool| {
                let bindings = headers::tool_bindings(tool).ok()?;
                (!bindings.is_empty()).then(|| (tool.name.to_string(), bindings))
            })
            .collect();
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::testing::Recorder;
    use crate::transport::Outgoing;

    fn wire_of(make: impl FnOnce(Rc<dyn Link>) -> Wire) -> (Wire, Rc<Recorder>) {
        let recorder = Rc::new(Recorder::default());
        (make(recorder.clone()), recorder)
    }

    fn meta() -> RequestMeta {
        RequestMeta::new("2026-07-28", &json!({}), None)
    }

    fn tool(name: &str, schema: Value) -> ListedTool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_legacy_request_goes_out_as_it_is() {
        let (wire, rx) = wire_of(Wire::legacy);
        assert!(wire.request(3, "tools/list", None));
        let Ok(Outgoing::Line(line)) = rx.try_recv() else {
            panic!("a plain line")
        };
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        );
        wire.cancel(3, "timed out");
        assert!(
            matches!(rx.try_recv(), Ok(Outgoing::Line(_))),
            "notifications/cancelled"
        );
        assert!(matches!(rx.try_recv(), Ok(Outgoing::Abandon(3))));
    }

    #[test]
    fn a_modern_stdio_request_carries_its_meta_and_no_headers() {
        let (wire, rx) = wire_of(|o| Wire::modern(o, meta(), false));
        wire.request(4, "tools/list", None);
        let Ok(Outgoing::Line(line)) = rx.try_recv() else {
            panic!("a plain line over stdio")
        };
        let sent: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        wire.cancel(4, "timed out");
        assert!(
            matches!(rx.try_recv(), Ok(Outgoing::Line(_))),
            "cancelled over stdio"
        );
    }

    fn sent(rx: &mut Rc<Recorder>) -> Value {
        let Ok(Outgoing::Line(line)) = rx.try_recv() else {
            panic!("a plain line")
        };
        assert!(line.ends_with(b"}\n"), "one line");
        serde_json::from_slice(&line).unwrap()
    }

    #[test]
    fn params_go_out_as_they_were_serialized_in_either_era() {
        let params = json!({"name": "echo", "arguments": {"text": "a \"b\"\n"}});
        let (legacy, mut rx) = wire_of(Wire::legacy);
        legacy.request_value(6, "tools/call", Some(&params));
        assert_eq!(
            sent(&mut rx),
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": params})
        );
        // Modern stdio: the metadata is put in front of the members, as they are...
        let (modern, mut rx) = wire_of(|o| Wire::modern(o, meta(), false));
        modern.request_value(7, "tools/call", Some(&params));
        let got = sent(&mut rx);
        assert_eq!(got["params"]["name"], "echo");
        assert_eq!(got["params"]["arguments"], params["arguments"]);
        assert_eq!(got["params"]["_meta"], Value::Object(meta().keys()));
        modern.request_value(8, "tools/list", Some(&json!({})));
        assert_eq!(sent(&mut rx)["params"], json!({"_meta": meta().keys()}));
        // ... and merged with a `_meta` of the params' own, where ours win.
        let own = json!({"uri": "u", "_meta": {"progressToken": 3,
            "io.modelcontextprotocol/protocolVersion": "1999-01-01"}});
        modern.request_value(9, "resources/read", Some(&own));
        let got = sent(&mut rx);
        assert_eq!(got["params"]["uri"], "u");
        assert_eq!(got["params"]["_meta"]["progressToken"], 3);
        assert_eq!(
            got["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        modern.request_value(10, "ping", None);
        let got = sent(&mut rx);
        assert_eq!(got["method"], "server/discover");
        assert_eq!(got["params"], json!({"_meta": meta().keys()}));
    }

    #[test]
    fn a_modern_http_request_carries_headers_and_mirrored_arguments() {
        let (mut wire, rx) = wire_of(|o| Wire::modern(o, meta(), true));
        let region = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}});
        let bad = json!({"type": "object", "properties": {
            "n": {"type": "number", "x-mcp-header": "N"}}});
        let kept = wire.accept_tools("s", vec![tool("geo", region), tool("bad", bad)]);
        assert_eq!(
            kept.len(),
            1,
            "the tool with an invalid annotation is left out"
        );
        wire.request_value(
            5,
            "tools/call",
            Some(&json!({"name": "geo", "arguments": {"region": "us west 1"}})),
        );
        let Ok(Outgoing::Modern { headers, .. }) = rx.try_recv() else {
            panic!("a modern request")
        };
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("MCP-Protocol-Version"), Some("2026-07-28"));
        assert_eq!(get("Mcp-Method"), Some("tools/call"));
        assert_eq!(get("Mcp-Name"), Some("geo"));
        assert_eq!(get("Mcp-Param-Region"), Some("us west 1"));
        wire.cancel(5, "timed out");
        assert!(
            matches!(rx.try_recv(), Ok(Outgoing::Abandon(5))),
            "over HTTP, closing the stream is the cancellation"
        );
    }
}
