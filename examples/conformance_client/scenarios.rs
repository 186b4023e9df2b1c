//! What the client does in each scenario of the conformance suite, once its server is Ready.
//! The suite judges the wire; these functions only make the requests a scenario watches for,
//! and fail when a call that should succeed does not.
//!
//! The supervisor lists the tools itself while connecting (and drops those whose
//! `x-mcp-header` annotations are invalid), so "list, then call" works from that cached list.

use actix::Addr;
use mcp_supervisor::protocol::text::server_text;
use mcp_supervisor::skills::{self, SkillResources};
use mcp_supervisor::{
    CallTool, ErrorKind, GetPrompt, GetStatus, ListPrompts, ListResources, ListSkills, ListTools,
    ListedTool, LoadSkill, ReadResource, ReadSkillFile, Supervisor,
};
use serde_json::{json, Value};

/// The server's name in the supervisor.
pub const SERVER: &str = "conformance";

type Outcome = Result<(), Box<dyn std::error::Error>>;

/// What a scenario works with.
pub struct Session {
    /// The running supervisor, with the one server Ready.
    pub sup: Addr<Supervisor>,
    /// The server's tools as the supervisor cached them.
    pub tools: Vec<ListedTool>,
    /// `MCP_CONFORMANCE_CONTEXT`, parsed (`null` when unset).
    pub context: Value,
}

/// Runs `scenario`; an unknown one makes the calls its context lists, if any.
pub async fn run(scenario: &str, s: &Session) -> Outcome {
    match scenario {
        "tools_call" => call(s, "add_numbers", json!({"a": 5, "b": 3})).await,
        "sse-retry" => call(s, "test_reconnection", json!({})).await,
        "elicitation-sep1034-client-defaults" => {
            call(s, "test_client_elicitation_defaults", json!({})).await
        }
        "sep-2322-client-request-state" => request_state(s).await,
        "http-standard-headers" => standard_headers(s).await,
        "http-invalid-tool-headers" => call_every_tool(s, json!({"region": "us-west1"})).await,
        "json-schema-2020-12-preservation" => echo_schema(s).await,
        // SEP-2640: list the skills and fetch nothing (no skill is asked for)...
        "sep-2640-client-no-prefetch" => list_skills(s).await.map(|_| ()),
        // ... or list them and load each, which verifies its SKILL.md (size, digest,
        // frontmatter) and reads its other files only once it verified.
        _ if scenario.starts_with("sep-2640-client-") => load_skills(s).await,
        // Connecting is the whole scenario: the handshake (`initialize`, or `server/discover`
        // and its retry after a version error), and listing the tools without following a
        // `$ref` or calling one.
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Ok(()),
        // Authorization scenarios: connecting authorized is most of it; then the calls that
        // carry the token (and, for step-up, need more scopes).
        _ if scenario.starts_with("auth/") => authorized_calls(s).await,
        _ => context_calls(s).await,
    }
}

/// Calls `tool` and fails if it answers with an error.
async fn call(s: &Session, tool: &str, arguments: Value) -> Outcome {
    let result = s.sup.send(CallTool::new(SERVER, tool, arguments)).await??;
    println!("{tool}: {}", serde_json::to_string(&result.content)?);
    if result.is_error == Some(true) {
        return Err(format!("{tool} answered with an error").into());
    }
    Ok(())
}

/// SEP-2322: the multi-round-trip tools in order (with state, without state, an unrelated call
/// that must carry neither, a result without `resultType` that must not be retried). The
/// request handler accepts the elicitations they ask for.
async fn request_state(s: &Session) -> Outcome {
    for tool in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_unrelated",
        "test_mrtr_no_result_type",
    ] {
        call(s, tool, json!({})).await?;
    }
    Ok(())
}

/// SEP-2243 `Mcp-Method`/`Mcp-Name`: every list method, then a call, a read and a get of
/// everything listed.
async fn standard_headers(s: &Session) -> Outcome {
    let tools = s.sup.send(ListTools::new(SERVER)).await??;
    for tool in &tools.tools {
        call(s, &tool.name, json!({})).await?;
    }
    let resources = s.sup.send(ListResources::new(SERVER)).await??;
    for resource in &resources.resources {
        s.sup
            .send(ReadResource::new(SERVER, resource.uri.clone()))
            .await??;
    }
    let prompts = s.sup.send(ListPrompts::new(SERVER)).await??;
    for prompt in &prompts.prompts {
        s.sup
            .send(GetPrompt::new(SERVER, prompt.name.clone()))
            .await??;
    }
    Ok(())
}

/// Calls every tool that survived the supervisor's filtering, each with `arguments`.
async fn call_every_tool(s: &Session, arguments: Value) -> Outcome {
    if s.tools.is_empty() {
        return Err("the server listed no usable tool".into());
    }
    for tool in &s.tools {
        call(s, &tool.name, arguments.clone()).await?;
    }
    Ok(())
}

/// SEP-1613/SEP-2106: hands the focal tool's `inputSchema`, exactly as cached, to the echo
/// tool, so that the suite can see which keywords survived.
async fn echo_schema(s: &Session) -> Outcome {
    let focal = s
        .tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .ok_or("json_schema_2020_12_tool was not listed")?;
    let schema = Value::Object(focal.input_schema.as_ref().clone());
    println!("echoing the inputSchema of {}: {schema}", focal.name);
    call(s, "json_schema_echo", json!({ "schema": schema })).await
}

/// The calls the scenario's context lists (`toolCalls: [{name, arguments}]`), with exactly
/// those arguments.
async fn context_calls(s: &Session) -> Outcome {
    let calls = s.context.get("toolCalls").and_then(Value::as_array);
    for tool_call in calls.into_iter().flatten() {
        let name = tool_call
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a toolCalls entry without a name")?;
        let arguments = tool_call.get("arguments").cloned().unwrap_or(json!({}));
        call(s, name, arguments).await?;
    }
    Ok(())
}

/// What the `auth/*` scenarios watch for after connecting: `tools/list`, then `tools/call`
/// of `test-tool` (when listed) with `{}`.
async fn authorized_calls(s: &Session) -> Outcome {
    s.sup.send(ListTools::new(SERVER)).await??;
    if s.tools.iter().any(|t| t.name == "test-tool") {
        call(s, "test-tool", json!({})).await?;
    }
    Ok(())
}

/// SEP-2640: every page of the server's skills (at most 100 pages, and no further once a
/// cursor comes back that was already followed), after checking that the server declares the
/// extension.
async fn list_skills(s: &Session) -> Result<Vec<skills::Skill>, Box<dyn std::error::Error>> {
    let status = s.sup.send(GetStatus::server(SERVER)).await??;
    let declared = status
        .iter()
        .filter_map(|st| st.capabilities.as_ref())
        .any(|caps| skills::declared(caps));
    if !declared {
        return Err("the server does not declare the Skills extension".into());
    }
    let mut all = Vec::new();
    let mut cursor = None;
    let mut followed = std::collections::HashSet::new();
    for _ in 0..100 {
        let mut list = ListSkills::new(SERVER);
        list.cursor = cursor.take();
        let page = s.sup.send(list).await??;
        for refused in &page.invalid {
            println!("set aside: {refused}");
        }
        all.extend(page.skills);
        match page.next_cursor {
            Some(next) if followed.insert(next.clone()) => cursor = Some(next),
            Some(next) => {
                println!("the cursor {} came back: paging stops", server_text(&next));
                break;
            }
            None => break,
        }
    }
    for skill in &all {
        println!(
            "skill {}: {}",
            server_text(&skill.uri),
            server_text(skill.description())
        );
    }
    Ok(all)
}

/// SEP-2640: loads every listed skill; a skill whose SKILL.md fails verification is refused
/// (and none of its other files read), one that loads has its other files read and verified.
async fn load_skills(s: &Session) -> Outcome {
    for skill in list_skills(s).await? {
        let loaded = match s.sup.send(LoadSkill::new(SERVER, skill)).await? {
            Ok(loaded) => loaded,
            Err(e) if e.kind() == ErrorKind::InvalidResponse => {
                println!("refused: {e}");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        println!(
            "loaded {}: {} bytes of instructions",
            server_text(&loaded.skill.uri),
            loaded.body().len()
        );
        let SkillResources::Files(files) = &loaded.skill.resources else {
            continue;
        };
        for file in files.iter().filter(|f| f.uri != loaded.skill.uri) {
            let read = ReadSkillFile::new(SERVER, loaded.skill.clone(), file.uri.clone());
            let content = s.sup.send(read).await??;
            println!(
                "read {}: {} bytes",
                server_text(&content.uri),
                content.bytes.len()
            );
        }
    }
    Ok(())
}
