#!/usr/bin/env node
// A small MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0,
// pinned in package.json) for the interop tests of the 2026-07-28 revision
// (tests/interop/modern/, run by .ci/interop).
//
// Usage:
//   node ts_server.mjs stdio MODE
//   node ts_server.mjs http MODE --port N
// MODE is one of
//   modern  modern-only: `legacy: 'reject'` (an `initialize` is answered -32022)
//   dual    dual-era: the SDK's default (`legacy: 'serve'` on stdio, `'stateless'` on HTTP)
//   legacy  stdio only: the 2025 session era alone, hand-wired (`connect(new StdioServerTransport())`)
//   file    stdio only: read the mode from the file $TS_SERVER_MODE_FILE at start-up, so that
//           a supervisor respawning the same command gets the server "upgraded" in between
// HTTP serves http://127.0.0.1:N/mcp; once listening, one line
// `ts_server: listening on http://127.0.0.1:N/mcp` goes to stderr.
//
// Tools (the same factory serves both eras):
//   echo(text)                   -> text (readOnlyHint)
//   slow(seconds=1, steps=4)     -> "done", a notifications/progress after each step when the
//                                   request carried a progressToken
//   increment(hold_ms=0)         -> the new count; NOT idempotent. The count lives in
//                                   $TS_SERVER_COUNT_FILE (written to a temporary file and
//                                   renamed over it: never half-written), or in memory when the
//                                   variable is unset. The count is written first, then the tool
//                                   waits hold_ms before answering: a kill in that window leaves
//                                   a call whose effect happened but whose answer never came.
//   touch(uri="test://counter")  -> "notified: URI" after sending notifications/resources/updated
//                                   for URI (modern: to the listen streams that asked for it;
//                                   legacy: to a session that subscribed with resources/subscribe,
//                                   else "not subscribed: URI")
//   confirm(question="Proceed?") -> "confirmed: BOOL (state verbatim)" after asking the client
//                                   (an elicitation with {confirm: boolean}): in the 2026-07-28 era
//                                   through a multi-round-trip `input_required` result carrying a
//                                   requestState, checked byte for byte on the retry; in the 2025
//                                   era the SDK's legacy shim sends a real elicitation/create.
// Resource:
//   test://counter (text/plain)  -> the current count; `resources.subscribe: true`.
// Everything logged goes to stderr; stdout is the protocol channel on stdio.

import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';

import { acceptedContent, createMcpHandler, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

const log = (...args) => console.error('ts_server:', ...args);
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// ---- the counter ------------------------------------------------------------------------------

const countFile = process.env.TS_SERVER_COUNT_FILE;
let memoryCount = 0;

function currentCount() {
    if (!countFile) return memoryCount;
    try {
        return Number.parseInt(readFileSync(countFile, 'utf8').trim(), 10) || 0;
    } catch {
        return 0;
    }
}

// Synchronous read-modify-write: nothing else of this process runs in between.
function increment() {
    const next = currentCount() + 1;
    if (!countFile) {
        memoryCount = next;
        return next;
    }
    const tmp = `${countFile}.${process.pid}.tmp`;
    writeFileSync(tmp, `${next}\n`, { flush: true });
    renameSync(tmp, countFile);
    return next;
}

// ---- the server -------------------------------------------------------------------------------

// requestState values this process minted, so that a retry can be checked byte for byte.
const minted = new Set();
// Legacy sessions' subscriptions (a stdio process has at most one session).
const subscribed = new Set();
// The HTTP handler, whose `notify` reaches the listen streams (set in http mode).
let httpHandler;

function build(ctx) {
    const era = ctx?.era ?? 'legacy';
    const server = new McpServer(
        { name: 'ts-interop-server', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true } } }
    );

    server.registerTool(
        'echo',
        { description: 'Returns the text unchanged.', inputSchema: z.object({ text: z.string() }), annotations: { readOnlyHint: true } },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    server.registerTool(
        'slow',
        {
            description: 'Sleeps `seconds` in `steps` steps, reporting progress after each; returns "done".',
            inputSchema: z.object({ seconds: z.number().optional(), steps: z.number().int().optional() })
        },
        async ({ seconds = 1, steps = 4 }, c) => {
            const n = Math.max(1, steps);
            const token = c.mcpReq._meta?.progressToken;
            for (let i = 1; i <= n; i++) {
                await sleep((Math.max(0, seconds) * 1000) / n);
                if (token !== undefined) {
                    await c.mcpReq.notify({
                        method: 'notifications/progress',
                        params: { progressToken: token, progress: i, total: n, message: `step ${i}/${n}` }
                    });
                }
            }
            return { content: [{ type: 'text', text: 'done' }] };
        }
    );

    server.registerTool(
        'increment',
        {
            description: 'Not idempotent: adds one to the count, waits hold_ms, returns the new count.',
            inputSchema: z.object({ hold_ms: z.number().int().optional() }),
            annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false }
        },
        async ({ hold_ms = 0 }) => {
            const count = increment();
            log(`increment -> ${count} (holding ${hold_ms} ms)`);
            if (hold_ms > 0) await sleep(hold_ms);
            return { content: [{ type: 'text', text: String(count) }] };
        }
    );

    server.registerTool(
        'touch',
        { description: 'Sends notifications/resources/updated for uri.', inputSchema: z.object({ uri: z.string().optional() }) },
        async ({ uri = 'test://counter' }) => {
            if (era === 'modern') {
                if (httpHandler) httpHandler.notify.resourceUpdated(uri);
                else await server.server.sendResourceUpdated({ uri });
            } else {
                if (!subscribed.has(uri)) return { content: [{ type: 'text', text: `not subscribed: ${uri}` }] };
                await server.server.sendResourceUpdated({ uri });
            }
            log(`touched ${uri} (${era})`);
            return { content: [{ type: 'text', text: `notified: ${uri}` }] };
        }
    );

    const confirmation = z.object({ confirm: z.boolean() });
    server.registerTool(
        'confirm',
        { description: 'Asks the client to confirm; returns its answer.', inputSchema: z.object({ question: z.string().optional() }) },
        async ({ question = 'Proceed?' }, c) => {
            const answer = acceptedContent(c.mcpReq.inputResponses, 'confirm', confirmation);
            if (answer === undefined) {
                const state = `confirm-${randomBytes(6).toString('hex')}`;
                minted.add(state);
                return inputRequired({
                    inputRequests: { confirm: inputRequired.elicit({ message: question, requestedSchema: confirmation }) },
                    requestState: state
                });
            }
            const state = c.mcpReq.requestState();
            // The 2025-era shim runs the rounds in-process; its state is ours either way.
            const verbatim = typeof state === 'string' && minted.delete(state);
            return { content: [{ type: 'text', text: `confirmed: ${answer.confirm} (state ${verbatim ? 'verbatim' : 'WRONG'})` }] };
        }
    );

    server.registerResource(
        'counter',
        'test://counter',
        { description: 'The current count.', mimeType: 'text/plain' },
        async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: String(currentCount()) }] })
    );

    // The 2025 era's resources/subscribe (the modern era subscribes with subscriptions/listen).
    if (era === 'legacy') {
        server.server.setRequestHandler('resources/subscribe', async request => {
            subscribed.add(request.params.uri);
            return {};
        });
        server.server.setRequestHandler('resources/unsubscribe', async request => {
            subscribed.delete(request.params.uri);
            return {};
        });
    }
    return server;
}

// ---- entry ------------------------------------------------------------------------------------

function usage(message) {
    console.error(`ts_server: ${message}\nusage: node ts_server.mjs stdio|http MODE [--port N]`);
    process.exit(2);
}

const [transport, requested, ...rest] = process.argv.slice(2);
let mode = requested;
if (mode === 'file') {
    const file = process.env.TS_SERVER_MODE_FILE;
    if (!file) usage('mode `file` needs TS_SERVER_MODE_FILE');
    mode = readFileSync(file, 'utf8').trim();
}
if (!['modern', 'dual', 'legacy'].includes(mode)) usage(`unknown mode ${mode}`);
process.on('SIGTERM', () => process.exit(0));

if (transport === 'stdio') {
    log(`stdio ${mode}`);
    if (mode === 'legacy') {
        await build({ era: 'legacy' }).connect(new StdioServerTransport());
    } else {
        serveStdio(build, { legacy: mode === 'modern' ? 'reject' : 'serve', onerror: e => log('error', e.message) });
    }
} else if (transport === 'http') {
    if (mode === 'legacy') usage('http has no legacy-only mode (use dual)');
    const at = rest.indexOf('--port');
    const port = at >= 0 ? Number.parseInt(rest[at + 1], 10) : Number.NaN;
    if (!Number.isInteger(port)) usage('http needs --port N');
    httpHandler = createMcpHandler(build, {
        legacy: mode === 'modern' ? 'reject' : 'stateless',
        keepAliveMs: 5000,
        onerror: e => log('error', e.message)
    });
    const http = createServer(toNodeHandler(httpHandler));
    http.listen(port, '127.0.0.1', () => log(`listening on http://127.0.0.1:${http.address().port}/mcp (${mode})`));
} else {
    usage(`unknown transport ${transport}`);
}
