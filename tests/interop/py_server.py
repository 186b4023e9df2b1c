#!/usr/bin/env python3
"""A small MCP server on the official Python SDK (mcp==2.3.0, `MCPServer`) for interop tests.

Usage:
    python py_server.py stdio
    python py_server.py http --port N [--retry-ms 500] [--log-level INFO]

HTTP serves Streamable HTTP on http://127.0.0.1:N/mcp: stateful sessions (`mcp-session-id`),
SSE answers (not JSON), and resumable streams (GET + `Last-Event-ID`) through the in-memory
`InMemoryEventStore` below. `--port 0` picks a free port. Once listening, one line
`py_server: listening on http://127.0.0.1:PORT/mcp` goes to stderr.

Dual-era, as mcp 2.3 always is (it has no switch for one era alone): on stdio the first request
pins the era (a `server/discover` probe pins the 2026-07-28 revision); over HTTP each request is
routed by its `MCP-Protocol-Version` header, the session era to the stateful sessions above and
2026-07-28 to the SDK's stateless handler. `tests/interop/scenarios.rs` pins the session era where
it tests sessions; `tests/interop/modern/` speaks both.

Tools:
    echo(text)                      -> text (readOnlyHint)
    slow(seconds=1.0, steps=5)      -> "done", progress notification after every step
    increment(hold_seconds=0)       -> new count, as a string; NOT idempotent: appends "inc\\n" to
                                       $PY_SERVER_COUNT_FILE (fsynced before answering), or counts
                                       in memory when that variable is unset; then waits
                                       hold_seconds before answering (a kill in that window leaves
                                       a call whose effect happened but whose answer never came)
    touch_resource(uri, on_request_stream=False)
                                    -> "notified: URI" after sending notifications/resources/updated
                                       for URI, if this session subscribed to it, else
                                       "not subscribed: URI". The notification goes on the
                                       session's standalone channel (the GET stream on HTTP; it is
                                       dropped, though stored for replay, if no GET stream is
                                       open), or with on_request_stream=true on this call's own
                                       response stream. In the 2026-07-28 era there are no
                                       sessions: the update goes to the `subscriptions/listen`
                                       streams that asked for URI (the SDK's subscription bus),
                                       and the answer is "notified: URI".
    confirm(question="Proceed?")    -> "confirmed: BOOL" after asking the client to confirm (an
                                       elicitation with {confirm: boolean}) through the SDK's
                                       resolver (`Resolve`/`Elicit`): in the 2026-07-28 era a
                                       multi-round-trip `input_required` result, in the session
                                       era a real elicitation/create request.
Resource:
    test://counter (text/plain)     -> the current count; resources/subscribe and
                                       resources/unsubscribe are served (any URI is accepted), and
                                       `resources.subscribe: true` is advertised.

Everything this process logs goes to stderr; stdout is the protocol channel in stdio mode.
"""

from __future__ import annotations

import argparse
import contextvars
import logging
import os
import secrets
import socket
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import (
    EmptyResult,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    SubscribeRequestParams,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel

log = logging.getLogger("py_server")

try:  # Cross-process locking for the count file; absent on Windows.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


def _configure_logging(level: str) -> None:
    # Before the SDK's `configure_logging` (called in `MCPServer.__init__`), whose
    # `logging.basicConfig` then does nothing: plain lines to stderr, no rich console.
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


# ---------------------------------------------------------------------------------------------
# Counter (the `increment` tool and the `test://counter` resource)
# ---------------------------------------------------------------------------------------------

COUNT_FILE_ENV = "PY_SERVER_COUNT_FILE"
_memory_count = 0


def _count_file_lines(path: str) -> int:
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def _increment() -> int:
    """Append one line and return the new number of lines. Called without any await in
    between, so calls within this process never interleave; `flock` covers other processes."""
    global _memory_count
    path = os.environ.get(COUNT_FILE_ENV)
    if not path:
        _memory_count += 1
        return _memory_count
    with open(path, "a", encoding="utf-8") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            f.write("inc\n")
            f.flush()
            os.fsync(f.fileno())
            return _count_file_lines(path)
        finally:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _current_count() -> int:
    path = os.environ.get(COUNT_FILE_ENV)
    return _count_file_lines(path) if path else _memory_count


# ---------------------------------------------------------------------------------------------
# Per-session bookkeeping
# ---------------------------------------------------------------------------------------------

STDIO_CONNECTION = "stdio"
SESSION_HEADER = "mcp-session-id"

# uri subscriptions per connection: the HTTP session id, or STDIO_CONNECTION.
_subscriptions: dict[str, set[str]] = {}


def _connection_key(headers: Any) -> str:
    """The connection a request belongs to: its `mcp-session-id` on HTTP, else stdio."""
    if headers is not None:
        session_id = headers.get(SESSION_HEADER)
        if session_id:
            return session_id
    return STDIO_CONNECTION


class _SessionTag:
    """Identity of one HTTP session for the event store (compared by identity).

    The SDK shares one `EventStore` between all sessions and uses the JSON-RPC request id as
    the stream id, so two sessions that both send request id 3 store into the same stream id
    "3". `SessionTagMiddleware` puts a tag into a context variable for every HTTP request; the
    session's server task (which runs the SDK's `message_router` calling `store_event`) is
    spawned while the opening `initialize` POST is served, so it inherits that request's tag.
    """

    __slots__ = ("session_id",)

    def __init__(self) -> None:
        self.session_id: str | None = None

    def __repr__(self) -> str:
        return f"session {self.session_id or '(opening)'}"


_session_tag: contextvars.ContextVar[_SessionTag | None] = contextvars.ContextVar("py_server_session_tag", default=None)


class SessionTagMiddleware:
    """ASGI middleware that sets `_session_tag` for each HTTP request (see `_SessionTag`)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._tags: dict[str, _SessionTag] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session_id = None
        for name, value in scope.get("headers", ()):
            if name == b"mcp-session-id":
                session_id = value.decode("latin-1")
                break
        if session_id is not None:
            # An unknown id gets a fresh tag, which matches no stored event (the SDK answers 404).
            tag = self._tags.get(session_id) or _SessionTag()
            token = _session_tag.set(tag)
            try:
                await self.app(scope, receive, send)
            finally:
                _session_tag.reset(token)
            return

        tag = _SessionTag()

        async def send_and_learn_session(message: Any) -> None:
            if message["type"] == "http.response.start" and tag.session_id is None:
                for name, value in message.get("headers", ()):
                    if name.lower() == b"mcp-session-id":
                        tag.session_id = value.decode("latin-1")
                        self._tags[tag.session_id] = tag
                        break
            await send(message)

        token = _session_tag.set(tag)
        try:
            await self.app(scope, receive, send_and_learn_session)
        finally:
            _session_tag.reset(token)


# ---------------------------------------------------------------------------------------------
# Event store
# ---------------------------------------------------------------------------------------------


@dataclass
class _Stream:
    tag: _SessionTag | None
    stream_id: str
    events: deque[_Event] = field(default_factory=deque)  # oldest first
    completed: bool = False  # the response for `stream_id` has been stored


@dataclass
class _Event:
    event_id: str
    seq: int
    stream: _Stream
    message: JSONRPCMessage | None  # None: a priming event


class InMemoryEventStore(EventStore):
    """Keeps the last `max_events` events in memory.

    Event ids are `<boot>-<seq>`: `boot` is random per process (an id from an earlier
    server process is never mistaken for one of ours), `seq` counts up from 1 over all
    streams. Each id maps to its stream, which is (session, SDK stream id, instance): the
    SDK stream id is the request id (or `_GET_stream`), the session is told apart by
    `_SessionTag`, and a request id reused after its response starts a new instance.
    Replay sends the events of that stream after the given id, priming events excluded.
    """

    def __init__(self, max_events: int = 10_000) -> None:
        self._boot = secrets.token_hex(4)
        self._seq = 0
        self._max_events = max_events
        self._events: dict[str, _Event] = {}  # insertion order == seq order
        self._current: dict[tuple[_SessionTag | None, str], _Stream] = {}

    def stream_of(self, event_id: str) -> str | None:
        """The SDK stream id the event belongs to, or None for an unknown id."""
        event = self._events.get(event_id)
        return event.stream.stream_id if event is not None else None

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        tag = _session_tag.get()
        key = (tag, stream_id)
        stream = self._current.get(key)
        if stream is None or (message is None and stream.completed):
            stream = _Stream(tag, stream_id)
            self._current[key] = stream
        self._seq += 1
        event = _Event(f"{self._boot}-{self._seq}", self._seq, stream, message)
        self._events[event.event_id] = event
        stream.events.append(event)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and str(message.id) == stream_id:
            stream.completed = True
        self._evict()
        return event.event_id

    def _evict(self) -> None:
        while len(self._events) > self._max_events:
            oldest = self._events.pop(next(iter(self._events)))
            stream = oldest.stream
            stream.events.popleft()
            if not stream.events and self._current.get((stream.tag, stream.stream_id)) is stream:
                del self._current[(stream.tag, stream.stream_id)]

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        event = self._events.get(last_event_id)
        if event is None:
            log.warning("replay: unknown Last-Event-ID %r", last_event_id)
            return None
        stream = event.stream
        tag = _session_tag.get()
        if stream.tag is not tag:
            log.warning("replay: Last-Event-ID %r belongs to %r, not to %r", last_event_id, stream.tag, tag)
            return None
        # Look again after each pass: events stored while we awaited the callback are sent too.
        sent = 0
        after = event.seq
        while True:
            pending = [e for e in stream.events if e.seq > after]
            if not pending:
                break
            for e in pending:
                after = e.seq
                if e.message is not None:
                    await send_callback(EventMessage(e.message, e.event_id))
                    sent += 1
        log.info("replay: sent %d event(s) of stream %r after %s", sent, stream.stream_id, last_event_id)
        return stream.stream_id


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------

MODERN_VERSION = "2026-07-28"


def _is_modern(ctx: Context) -> bool:
    """Whether this request came in the stateless 2026-07-28 era (versions are dates)."""
    version = ctx.protocol_version
    return version is not None and version >= MODERN_VERSION


class Confirmation(BaseModel):
    confirm: bool


def ask_to_confirm(question: str = "Proceed?") -> Elicit[Confirmation]:
    """The `confirm` tool's resolver: the SDK asks the client in whichever era it speaks."""
    return Elicit(question, Confirmation)


def build_server() -> Any:
    mcp = MCPServer("py-interop-server", version="1.0.0")

    @mcp.tool(description="Returns the text unchanged.", annotations=ToolAnnotations(read_only_hint=True))
    async def echo(text: str) -> str:
        return text

    @mcp.tool(description="Sleeps `seconds` in `steps` steps, reporting progress after each; returns 'done'.")
    async def slow(ctx: Context, seconds: float = 1.0, steps: int = 5) -> str:
        steps = max(1, steps)
        for i in range(1, steps + 1):
            await anyio.sleep(max(0.0, seconds) / steps)
            await ctx.report_progress(i, steps, f"step {i}/{steps}")
        return "done"

    @mcp.tool(
        description="Not idempotent: appends a line to the count file and returns the new count.",
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False, destructive_hint=False),
    )
    async def increment(hold_seconds: float = 0.0) -> str:
        count = _increment()
        if hold_seconds > 0:
            await anyio.sleep(hold_seconds)
        return str(count)

    @mcp.tool(
        description=(
            "Sends notifications/resources/updated for `uri` if this session subscribed to it. "
            "on_request_stream: send it on this call's response stream instead of the session's "
            "standalone channel (the GET stream on HTTP)."
        )
    )
    async def touch_resource(ctx: Context, uri: str, on_request_stream: bool = False) -> str:
        if _is_modern(ctx):
            await ctx.notify_resource_updated(uri)
            log.info("published resources/updated for %s to the listen streams", uri)
            return f"notified: {uri}"
        connection = _connection_key(ctx.headers)
        if uri not in _subscriptions.get(connection, ()):
            return f"not subscribed: {uri}"
        if on_request_stream:
            await ctx.session.send_notification(
                ResourceUpdatedNotification(params=ResourceUpdatedNotificationParams(uri=uri)),
                related_request_id=ctx.request_context.request_id,
            )
        else:
            await ctx.session.send_resource_updated(uri)
        log.info("sent notifications/resources/updated for %s to %s", uri, connection)
        return f"notified: {uri}"

    @mcp.tool(description="Asks the client to confirm (an elicitation); returns its answer.")
    async def confirm(answer: Annotated[Confirmation, Resolve(ask_to_confirm)], question: str = "Proceed?") -> str:
        return f"confirmed: {str(answer.confirm).lower()}"

    @mcp.resource("test://counter", name="counter", description="The current count.", mime_type="text/plain")
    def counter() -> str:
        return str(_current_count())

    # MCPServer 2.3.0 serves no resources/subscribe (its change feed is the 2026-07-28
    # `subscriptions/listen`). Register the two handlers on the low-level server; the
    # handshake-era capabilities then advertise `resources.subscribe: true` because the
    # method has a handler (lowlevel/server.py get_capabilities).
    def request_headers(ctx: ServerRequestContext) -> Any:
        return getattr(ctx.request, "headers", None)

    async def on_subscribe(ctx: ServerRequestContext, params: SubscribeRequestParams) -> EmptyResult:
        connection = _connection_key(request_headers(ctx))
        _subscriptions.setdefault(connection, set()).add(str(params.uri))
        log.info("%s subscribed to %s", connection, params.uri)
        return EmptyResult()

    async def on_unsubscribe(ctx: ServerRequestContext, params: UnsubscribeRequestParams) -> EmptyResult:
        connection = _connection_key(request_headers(ctx))
        _subscriptions.get(connection, set()).discard(str(params.uri))
        log.info("%s unsubscribed from %s", connection, params.uri)
        return EmptyResult()

    lowlevel = mcp._lowlevel_server  # noqa: SLF001 - MCPServer 2.3.0 has no public accessor for it
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)
    return mcp


async def serve_http(mcp: Any, port: int, retry_ms: int | None, log_level: str) -> None:
    import uvicorn

    event_store = InMemoryEventStore()
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=False,
        stateless_http=False,
        event_store=event_store,
        retry_interval=retry_ms,
        host="127.0.0.1",
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    actual_port = sock.getsockname()[1]
    config = uvicorn.Config(
        SessionTagMiddleware(app),
        log_config=None,  # uvicorn's default config logs access lines to stdout; use our stderr root
        log_level=log_level.lower(),
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    served = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        # Announce once uvicorn has run the app's startup (the SDK's session manager is up).
        while not server.started and not served.is_set():
            await anyio.sleep(0.01)
        if server.started:
            print(f"py_server: listening on http://127.0.0.1:{actual_port}/mcp", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, help="HTTP port on 127.0.0.1 (0: any free port)")
    parser.add_argument(
        "--retry-ms", type=int, default=500, help="SSE retry: field in ms (default 500; negative: none)"
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    args = parser.parse_args(argv)
    if args.transport == "http" and args.port is None:
        parser.error("http needs --port")

    _configure_logging(args.log_level)
    mcp = build_server()

    if args.transport == "stdio":
        anyio.run(mcp.run_stdio_async)
    else:
        retry_ms = args.retry_ms if args.retry_ms >= 0 else None
        anyio.run(serve_http, mcp, args.port, retry_ms, args.log_level)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
