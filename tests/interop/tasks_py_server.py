"""A task server on fastmcp-tasks 4.1.4 (FastMCP 4.1.4's implementation of the 2026-07-28
Tasks extension, `io.modelcontextprotocol/tasks`, SEP-2663; pinned in requirements.txt) for the
interop tests (tests/interop/tasks/, run by .ci/interop).

Usage:
    python tasks_py_server.py stdio
    python tasks_py_server.py http --port N     (http://127.0.0.1:N/mcp)

Tools (both run as a task, `TaskConfig(mode="required")`: a request without the extension gets
-32021 from fastmcp-tasks; tasks/get, tasks/update and tasks/cancel are the package's):
    job(ms=300, text="done")   sleeps `ms` milliseconds in a Docket worker, returns `text`.
    ask(ms=200)                the package's guard pattern: the first leg returns an
                               `InputRequiredResult` (one elicitation, `{ok: boolean}`), which
                               parks the task in input_required; the client's tasks/update
                               re-enters it with `ctx.input_responses`, and that leg sleeps `ms`
                               and returns "confirmed" (ok: true) or "declined".
Both are polled every 50 ms (`poll_interval`).

Where tasks live is the package's Docket backend, from $FASTMCP_DOCKET_URL: `memory://` (the
default) is in this process and dies with it; `redis://HOST:PORT/DB` is a Redis server that
outlives it. A job that a killed process was running is redelivered by Docket to the next
worker once its lease lapses (`redelivery_timeout`, 1 s here rather than the default 5 min), and
runs again from the start. Each start of a job's body appends a line to $TASKS_RUNS_FILE when set,
so that a test can count them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("tasks-py-interop-server")
mcp.add_extension(TasksExtension(redelivery_timeout=timedelta(seconds=1)))

TASK = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=50))
CONFIRMATION = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


def ran(what: str) -> None:
    runs = os.environ.get("TASKS_RUNS_FILE")
    if runs:
        with open(runs, "a", encoding="utf-8") as f:
            f.write(f"{what}\n")
    print(f"tasks_py_server: run {what}", file=sys.stderr, flush=True)


@mcp.tool(task=TASK)
async def job(ms: int = 300, text: str = "done") -> str:
    """Sleeps `ms` milliseconds as a background task, then returns `text`."""
    ran("job")
    await asyncio.sleep(ms / 1000)
    return text


@mcp.tool(task=TASK)
async def ask(ctx: Context, ms: int = 200) -> str | mcp_types.InputRequiredResult:
    """Asks the client to confirm (input_required), then works `ms` milliseconds more."""
    answers = ctx.input_responses
    if not answers or "confirm" not in answers:
        ran("ask (asking)")
        request = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message="Proceed?", requested_schema=CONFIRMATION
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"confirm": request})
    ran("ask (answered)")
    await asyncio.sleep(ms / 1000)
    answer = answers["confirm"]
    content = getattr(answer, "content", None) or {}
    ok = getattr(answer, "action", None) == "accept" and content.get("ok") is True
    return "confirmed" if ok else "declined"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    if args.transport == "stdio":
        mcp.run("stdio", show_banner=False)
    else:
        if args.port is None:
            parser.error("http needs --port N")
        mcp.run(
            "http",
            show_banner=False,
            host="127.0.0.1",
            port=args.port,
            path="/mcp",
            log_level="warning",
        )


if __name__ == "__main__":
    main()
