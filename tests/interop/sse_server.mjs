// A server on the legacy HTTP+SSE transport of protocol revision 2024-11-05, as the TypeScript
// SDK v1 serves it: its `SSEServerTransport` (@modelcontextprotocol/sdk, pinned in
// package.json) behind plain node:http, the way the SDK's own example wires it. `GET /sse`
// opens a session's stream (its first event, `endpoint`, names `/messages?sessionId=...`);
// `POST /messages?sessionId=...` takes the session's messages. Anything else is a 404 with an
// HTML body, as Express answers, so a Streamable HTTP client's POST to /sse is refused there.
//
//   node sse_server.mjs PORT
//
// Tools: `echo {text}`, `pid {}` (this process's id: a restart shows as another).
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node sse_server.mjs PORT');
  process.exit(2);
}

function mcpServer() {
  const server = new Server(
    { name: 'ts-sdk-v1-sse', version: '1.0.0' },
    { capabilities: { tools: {} } },
  );
  const schema = { type: 'object', properties: { text: { type: 'string' } } };
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: 'echo', description: 'Answers its text', inputSchema: schema },
      { name: 'pid', description: "This server's process id", inputSchema: { type: 'object' } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    switch (request.params.name) {
      case 'echo':
        return { content: [{ type: 'text', text: String(request.params.arguments?.text ?? '') }] };
      case 'pid':
        return { content: [{ type: 'text', text: String(process.pid) }] };
      default:
        return { content: [{ type: 'text', text: `no tool ${request.params.name}` }], isError: true };
    }
  });
  return server;
}

const sessions = new Map();

http
  .createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    try {
      if (req.method === 'GET' && url.pathname === '/sse') {
        const transport = new SSEServerTransport('/messages', res);
        sessions.set(transport.sessionId, transport);
        res.on('close', () => sessions.delete(transport.sessionId));
        await mcpServer().connect(transport);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const transport = sessions.get(url.searchParams.get('sessionId') ?? '');
        if (!transport) {
          res.writeHead(404).end('Session not found');
          return;
        }
        await transport.handlePostMessage(req, res);
        return;
      }
      res
        .writeHead(404, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!DOCTYPE html><html><body><pre>Cannot ${req.method} ${url.pathname}</pre></body></html>`);
    } catch (e) {
      console.error(e);
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  })
  .listen(port, '127.0.0.1', () => console.error(`sse_server.mjs listening on ${port}`));
