#!/usr/bin/env node
// A task server of the 2026-07-28 Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663)
// for the interop tests (tests/interop/tasks/, run by .ci/interop), on the official TypeScript
// SDK v2 server (@modelcontextprotocol/server 2.4.0) and @modelcontextprotocol/ext-tasks 0.2.2
// (both pinned in package.json).
//
// ext-tasks is the requester (client) side of Tasks plus a 2025-11-25 receiver for sampling and
// elicitation: it has no server runtime that runs a tool as a task. What it does give a server
// is the V2 wire: `hasTaskClientCapabilityV2` (did this request declare the extension?), and
// the zod schemas every message below is checked against before it leaves (`CreateTaskResult`,
// `GetTaskResult`, `inputResponses`). So the task table here is ours: the SDK carries the
// protocol (stdio or Streamable HTTP, `server/discover`, headers, `Mcp-Name` checks), ext-tasks
// checks the task messages, and this file decides what a task is.
//
// Usage:
//   node tasks_ts_server.mjs stdio
//   node tasks_ts_server.mjs http --port N     (serves http://127.0.0.1:N/mcp; once listening,
//                                                `tasks_ts_server: listening on ...` on stderr)
// Modern only (`legacy: 'reject'`), declaring the extension in `server/discover`.
//
// Tools (both always run as a task; a request without the extension gets -32021):
//   job(ms=300, poll_ms=50, text="done")  completed with `text` `ms` after its creation.
//   ask(ms=200, poll_ms=50)               working for ms/2, then input_required with one
//                                         elicitation (`{ok: boolean}`) under a key of its own;
//                                         once answered, working for ms/2 more, then completed
//                                         with "confirmed" (ok: true) or "declined".
// tasks/get, tasks/update, tasks/cancel as the extension says (an unknown task is -32602).
//
// A task's state is a function of the clock and of what it was told (an answer, a cancel), so
// nothing runs while it "works": each tasks/get computes where it is. With $TASKS_DIR set, every
// task is a JSON file there (written to a temporary file and renamed over the old one), read
// back at start-up: the tasks outlive a kill -9 of this process. Without it they live in memory
// and die with it. Every task created is logged on stderr as `task-start <id>`, every tasks/get
// as `task-poll <id> <status>`.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

import { createMcpHandler, McpServer, ProtocolError } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
    CreateTaskResultV2Schema,
    GetTaskResultV2Schema,
    InputResponsesV2Schema,
    hasTaskClientCapabilityV2,
    TASKS_EXTENSION_ID_V2
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { z } from 'zod';

const log = (...args) => console.error('tasks_ts_server:', ...args);

const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
const TTL_MS = 3_600_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// ---- the table ----------------------------------------------------------------------------------

const dir = process.env.TASKS_DIR;
const tasks = new Map();

function save(task) {
    if (!dir) return;
    const file = join(dir, `${task.taskId}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(task), { flush: true });
    renameSync(tmp, file);
}

if (dir) {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(dir)) {
        if (!name.endsWith('.json')) continue;
        const task = JSON.parse(readFileSync(join(dir, name), 'utf8'));
        tasks.set(task.taskId, task);
    }
    log(`${tasks.size} task(s) read back from ${dir}`);
}

const iso = ms => new Date(ms).toISOString();

function create(tool, args) {
    const now = Date.now();
    const ms = Math.max(0, Math.trunc(args.ms ?? (tool === 'ask' ? 200 : 300)));
    const task = {
        taskId: randomBytes(24).toString('base64url'),
        tool,
        status: 'working',
        created: now,
        updated: now,
        pollIntervalMs: Math.max(1, Math.trunc(args.poll_ms ?? 50)),
        text: args.text ?? 'done',
        // job: done at `due`. ask: asks at `askAt`, done ms/2 after the answer.
        due: tool === 'job' ? now + ms : undefined,
        askAt: tool === 'ask' ? now + Math.trunc(ms / 2) : undefined,
        rest: tool === 'ask' ? ms - Math.trunc(ms / 2) : undefined,
        key: tool === 'ask' ? `confirm-${randomBytes(6).toString('hex')}` : undefined,
        answer: undefined
    };
    tasks.set(task.taskId, task);
    save(task);
    log(`task-start ${task.taskId} (${tool})`);
    return task;
}

// Moves `task` along the clock; saves it when its status changed.
function advance(task) {
    if (TERMINAL.has(task.status)) return task;
    const now = Date.now();
    let status = task.status;
    if (task.tool === 'job') {
        if (now >= task.due) status = 'completed';
    } else if (task.answer === undefined) {
        if (now >= task.askAt) status = 'input_required';
    } else {
        status = now >= task.due ? 'completed' : 'working';
    }
    if (status !== task.status) {
        task.status = status;
        task.updated = now;
        save(task);
    }
    return task;
}

const confirmation = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };

// The DetailedTask of tasks/get (and the CreateTaskResult's fields), checked by ext-tasks.
function detailed(task) {
    const out = {
        taskId: task.taskId,
        status: task.status,
        createdAt: iso(task.created),
        lastUpdatedAt: iso(task.updated),
        ttlMs: TTL_MS,
        pollIntervalMs: task.pollIntervalMs
    };
    switch (task.status) {
        case 'completed': {
            const text = task.tool === 'job' ? task.text : task.answer ? 'confirmed' : 'declined';
            out.result = { content: [{ type: 'text', text }], isError: false };
            break;
        }
        case 'input_required':
            out.inputRequests = {
                [task.key]: { method: 'elicitation/create', params: { mode: 'form', message: 'Proceed?', requestedSchema: confirmation } }
            };
            break;
        case 'cancelled':
            out.statusMessage = 'cancelled by the client';
            break;
    }
    return out;
}

function checked(schema, value, what) {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new ProtocolError(INTERNAL_ERROR, `this server built an invalid ${what}: ${parsed.error.message}`);
    return value;
}

function known(taskId) {
    const task = tasks.get(taskId);
    if (!task) throw new ProtocolError(INVALID_PARAMS, `Failed to retrieve task: Task not found`);
    return advance(task);
}

// ---- the server ---------------------------------------------------------------------------------

const missing = () =>
    new ProtocolError(MISSING_REQUIRED_CLIENT_CAPABILITY, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID_V2]: {} } }
    });

function build() {
    const server = new McpServer(
        { name: 'tasks-ts-interop-server', version: '1.0.0' },
        { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION_ID_V2]: {} } } }
    );
    const asTask = tool => async (args, c) => {
        if (!hasTaskClientCapabilityV2({ _meta: c.mcpReq.envelope })) throw missing();
        const task = create(tool, args);
        return checked(CreateTaskResultV2Schema, { resultType: 'task', ...detailed(task) }, 'CreateTaskResult');
    };
    server.registerTool(
        'job',
        {
            description: 'Runs as a task for `ms` milliseconds, then completes with `text`.',
            inputSchema: z.object({ ms: z.number().optional(), poll_ms: z.number().optional(), text: z.string().optional() })
        },
        asTask('job')
    );
    server.registerTool(
        'ask',
        {
            description: 'Runs as a task that asks the client to confirm half-way (input_required).',
            inputSchema: z.object({ ms: z.number().optional(), poll_ms: z.number().optional() })
        },
        asTask('ask')
    );

    const byId = { params: z.object({ taskId: z.string() }) };
    server.server.setRequestHandler('tasks/get', byId, async ({ taskId }, c) => {
        if (!hasTaskClientCapabilityV2({ _meta: c.mcpReq.envelope })) throw missing();
        const task = known(taskId);
        log(`task-poll ${taskId} ${task.status}`);
        return checked(GetTaskResultV2Schema, { resultType: 'complete', ...detailed(task) }, 'GetTaskResult');
    });
    // The SDK hands a request's `inputResponses` over as `mcpReq.inputResponses` (the field of
    // multi-round-trip requests), not in the params.
    server.server.setRequestHandler('tasks/update', byId, async ({ taskId }, c) => {
        if (!hasTaskClientCapabilityV2({ _meta: c.mcpReq.envelope })) throw missing();
        const responses = InputResponsesV2Schema.safeParse(c.mcpReq.inputResponses ?? {});
        if (!responses.success) throw new ProtocolError(INVALID_PARAMS, `invalid inputResponses: ${responses.error.message}`);
        const task = known(taskId);
        const answer = responses.data[task.key];
        // Keys not outstanding (never asked, answered already, or a task past asking) are ignored.
        if (task.status === 'input_required' && answer !== undefined) {
            const now = Date.now();
            task.answer = answer.action === 'accept' && answer.content?.ok === true;
            task.status = 'working';
            task.due = now + task.rest;
            task.updated = now;
            save(task);
            log(`task-answered ${taskId} ${task.answer}`);
        }
        return {};
    });
    server.server.setRequestHandler('tasks/cancel', byId, async ({ taskId }, c) => {
        if (!hasTaskClientCapabilityV2({ _meta: c.mcpReq.envelope })) throw missing();
        const task = known(taskId);
        if (!TERMINAL.has(task.status)) {
            task.status = 'cancelled';
            task.updated = Date.now();
            save(task);
            log(`task-cancelled ${taskId}`);
        }
        return {};
    });
    return server;
}

// ---- entry --------------------------------------------------------------------------------------

function usage(message) {
    console.error(`tasks_ts_server: ${message}\nusage: node tasks_ts_server.mjs stdio | http --port N`);
    process.exit(2);
}

const [transport, ...rest] = process.argv.slice(2);
process.on('SIGTERM', () => process.exit(0));
if (transport === 'stdio') {
    serveStdio(build, { legacy: 'reject', onerror: e => log('error', e.message) });
    log('stdio');
} else if (transport === 'http') {
    const at = rest.indexOf('--port');
    const port = at >= 0 ? Number.parseInt(rest[at + 1], 10) : Number.NaN;
    if (!Number.isInteger(port)) usage('http needs --port N');
    const handler = createMcpHandler(build, { legacy: 'reject', onerror: e => log('error', e.message) });
    const http = createServer(toNodeHandler(handler));
    http.listen(port, '127.0.0.1', () => log(`listening on http://127.0.0.1:${http.address().port}/mcp`));
} else {
    usage(`unknown transport ${transport}`);
}
