// http_server.mjs: the official TypeScript SDK's server (@modelcontextprotocol/sdk 1.32.2) over
// Streamable HTTP, stateful (one Mcp-Session-Id per client, the 2025-11-25 handshake), with two
// tools over a real folder. sluice reaches it with --upstream. Usage:
//   node http_server.mjs ROOT [PORT]   -> prints "listening PORT", serves 127.0.0.1:PORT/mcp
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const base = path.join(HERE, 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm');
const { McpServer } = await import(pathToFileURL(path.join(base, 'server', 'mcp.js')).href);
const { StreamableHTTPServerTransport } = await import(pathToFileURL(path.join(base, 'server', 'streamableHttp.js')).href);
const { z } = await import(pathToFileURL(path.join(HERE, 'node_modules', 'zod', 'index.js')).href).catch(
  () => import('zod'));

const root = fs.realpathSync(process.argv[2]);
const inside = (p) => {
  const full = path.resolve(root, '.' + path.resolve('/', p));
  if (!full.startsWith(root + path.sep)) throw new Error('outside the root');
  return full;
};

function newServer() {
  const server = new McpServer({ name: 'sdk1-http-files', version: '1.0.0' });
  server.registerTool('write_file', {
    description: 'Write a file under the root.',
    inputSchema: { path: z.string(), content: z.string() },
  }, async ({ path: p, content }) => {
    fs.writeFileSync(inside(p), content);
    return { content: [{ type: 'text', text: `wrote ${p}` }] };
  });
  server.registerTool('read_text_file', {
    description: 'Read a file under the root.',
    inputSchema: { path: z.string() },
  }, async ({ path: p }) => ({ content: [{ type: 'text', text: fs.readFileSync(inside(p), 'utf8') }] }));
  return server;
}

const sessions = new Map();
const httpServer = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  const body = text ? JSON.parse(text) : undefined;
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport && req.method === 'POST' && body && body.method === 'initialize' && !sid) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    await newServer().connect(transport);
  }
  if (!transport) {
    res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: sid ? 'Session not found' : 'Bad Request' } }));
    return;
  }
  await transport.handleRequest(req, res, body);
});
httpServer.listen(Number(process.argv[3] || 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${httpServer.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
