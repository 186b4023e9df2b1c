// The status page's script (mcp_supervisor::web, GET /status/page.js).
//
// It follows GET /status/events: the first `status` event (and every re-read of GET /status)
// replaces the table; `state_changed` updates a row at once and schedules a re-read of the
// counters. Everything a server wrote is put in the page as text (textContent), never as HTML.
"use strict";

const base = location.pathname.replace(/\/page\/?$/, "");
const rows = new Map(); // server name -> { status, at: ms when in_state_for_ms was measured }
const MAX_LOG = 100;
const COUNTERS = [
  ["calls_ok", "ok"], ["calls_failed", "failed"], ["calls_timed_out", "timed out"],
  ["calls_resent", "re-sent"], ["reconnects", "reconnects"],
  ["skipped_non_json", "skipped lines"], ["skipped_oversized", "oversized lines"],
  ["events_dropped", "events dropped"],
];

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function duration(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

function stateText(state) {
  switch (state.name) {
    case "connecting": return "connecting (attempt " + (state.attempt + 1) + "/" + (state.max + 1) + ")";
    case "reconnecting": return "reconnecting (attempt " + state.attempt + ")";
    default: return state.name;
  }
}

function render() {
  const body = document.getElementById("servers");
  const names = [...rows.keys()].sort();
  body.replaceChildren(...names.map((name) => row(rows.get(name))));
}

function row({ status: s, at }) {
  const tr = el("tr", null, { "data-server": s.name, "data-state": s.state.name });
  tr.append(el("td", s.name, { "data-field": "name" }));
  tr.append(el("td", stateText(s.state), { "data-field": "state", class: "state state-" + s.state.name }));
  tr.append(el("td", duration(s.in_state_for_ms + (Date.now() - at)), { "data-field": "for", "data-since": String(at - s.in_state_for_ms) }));
  tr.append(el("td", s.transport + (s.pid ? " pid " + s.pid : ""), { "data-field": "process" }));
  const version = [s.era, s.protocol_version].filter(Boolean).join(" ");
  tr.append(el("td", version || "–", { "data-field": "protocol" }));
  // A list cut short (its pages walked to a bound) shows as "10000+", why in its title.
  const tools = el("td", s.tool_count + (s.tools_truncated ? "+" : ""), { "data-field": "tools", class: "num" });
  if (s.tools_truncated) tools.setAttribute("title", "cut short: " + s.tools_truncated);
  tr.append(tools);
  const dl = el("dl", null, { class: "counters" });
  for (const [key, label] of COUNTERS) {
    dl.append(el("dt", label), el("dd", s.counters[key], { "data-field": key }));
  }
  const counters = el("td");
  counters.append(dl);
  tr.append(counters);
  const error = el("td", null, { "data-field": "last_error", class: "error" });
  if (s.last_error) {
    // The redacted view has the code only.
    const message = s.last_error.message ? ": " + s.last_error.message : "";
    error.append(el("div", s.last_error.code + message));
    if (s.last_error.stderr_tail && s.last_error.stderr_tail.length) {
      error.append(el("pre", s.last_error.stderr_tail.join("\n"), { "data-field": "stderr_tail" }));
    }
  }
  tr.append(error);
  return tr;
}

function replaceAll(statuses) {
  const now = Date.now();
  rows.clear();
  for (const s of statuses) rows.set(s.name, { status: s, at: now });
  document.getElementById("redacted").hidden = !statuses.some((s) => s.redacted);
  render();
}

function log(text) {
  const list = document.getElementById("log");
  list.prepend(el("li", new Date().toLocaleTimeString() + " " + text));
  while (list.children.length > MAX_LOG) list.lastChild.remove();
}

let refresh = null;
function scheduleRefresh() {
  if (refresh) return;
  refresh = setTimeout(async () => {
    refresh = null;
    try {
      const answer = await fetch(base, { cache: "no-store" });
      if (answer.ok) replaceAll(await answer.json());
    } catch (_) {
      // The event stream reports the outage; its reconnect brings a fresh snapshot.
    }
  }, 250);
}

function connection(text, down) {
  const c = document.getElementById("connection");
  c.textContent = text;
  c.className = down ? "down" : "";
}

const events = new EventSource(base + "/events");
events.addEventListener("open", () => connection("live", false));
events.addEventListener("error", () => connection("event stream lost, reconnecting…", true));
events.addEventListener("status", (e) => replaceAll(JSON.parse(e.data)));
events.addEventListener("state_changed", (e) => {
  const ev = JSON.parse(e.data);
  const known = rows.get(ev.server);
  if (known) {
    known.status.state = ev.state;
    known.status.in_state_for_ms = 0;
    known.at = Date.now();
    render();
  }
  log(ev.server + ": " + ev.message);
  scheduleRefresh();
});
for (const type of ["tools_changed", "resource_updated", "log", "notification",
                    "replacing", "replaced", "replace_failed", "task_changed"]) {
  events.addEventListener(type, (e) => {
    const ev = JSON.parse(e.data);
    log(ev.server + ": " + type.replace("_", " "));
    // A replaced server is another process, with its own tools.
    if (type === "tools_changed" || type === "replaced") scheduleRefresh();
  });
}
setInterval(() => {
  for (const td of document.querySelectorAll("td[data-field=for]")) {
    td.textContent = duration(Date.now() - Number(td.getAttribute("data-since")));
  }
}, 1000);
