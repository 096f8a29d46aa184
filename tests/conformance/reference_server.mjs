// reference_server.mjs: an MCP server (2025-11-25 handshake era) that implements what the
// @modelcontextprotocol/conformance server scenarios ask for: the test_* tools, the test://
// resources, the test_* prompts, completion, logging and resource subscriptions. It is built on
// the official TypeScript SDK (@modelcontextprotocol/sdk, pinned in package.json) and its
// low-level Server class, so that inputSchema reaches the wire exactly as written here (the
// json-schema-2020-12 scenario checks $schema, $defs and additionalProperties survive).
//
// Neither the conformance package nor the SDK publishes such a server, so this file is ours.
// conformance.test.mjs first checks that every scenario passes against it directly.
//
//   node reference_server.mjs http    -> prints "listening PORT"; serves 127.0.0.1:PORT/mcp,
//                                        stateful Streamable HTTP (one Mcp-Session-Id per client,
//                                        an event store so a closed SSE stream can be resumed)
//   node reference_server.mjs stdio   -> the same server on stdin/stdout, for sluice's child
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema, CompleteRequestSchema, CreateMessageResultSchema, ElicitResultSchema,
  GetPromptRequestSchema, ListPromptsRequestSchema, ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema, ListToolsRequestSchema, McpError, ErrorCode, ReadResourceRequestSchema,
  SetLevelRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

// A 1x1 PNG and a tiny WAV (44-byte header, two silent samples), base64.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = Buffer.concat([
  Buffer.from('RIFF'), u32(40), Buffer.from('WAVEfmt '), u32(16), u16(1), u16(1), u32(8000), u32(16000),
  u16(2), u16(16), Buffer.from('data'), u32(4), Buffer.alloc(4),
]).toString('base64');
function u32(n) { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; }
function u16(n) { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b; }

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const noArgs = { type: 'object', properties: {} };

// ===== tools =====

const TOOLS = [
  { name: 'test_simple_text', description: 'Returns one text block.', inputSchema: noArgs,
    run: async () => text('This is a simple text response for testing.') },
  { name: 'test_image_content', description: 'Returns a PNG image.', inputSchema: noArgs,
    run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }) },
  { name: 'test_audio_content', description: 'Returns a WAV clip.', inputSchema: noArgs,
    run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }) },
  { name: 'test_embedded_resource', description: 'Returns an embedded text resource.', inputSchema: noArgs,
    run: async () => ({ content: [{ type: 'resource',
      resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }) },
  { name: 'test_multiple_content_types', description: 'Returns text, an image and a resource.', inputSchema: noArgs,
    run: async () => ({ content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ] }) },
  { name: 'test_tool_with_logging', description: 'Logs three messages while it runs.', inputSchema: noArgs,
    run: async (_args, extra) => {
      for (const [i, msg] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'conformance', data: msg } });
      }
      return text('Tool with logging executed successfully');
    } },
  { name: 'test_error_handling', description: 'Always fails with isError.', inputSchema: noArgs,
    run: async () => ({ isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }) },
  { name: 'test_tool_with_progress', description: 'Reports progress three times.', inputSchema: noArgs,
    run: async (_args, extra) => {
      const token = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100, message: `at ${progress}` } });
        }
        await sleep(50);
      }
      return text('Progress tool completed');
    } },
  { name: 'test_sampling', description: 'Asks the client to sample an LLM.',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    run: async (args, extra) => {
      const r = await extra.sendRequest({ method: 'sampling/createMessage', params: {
        messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt ?? '') } }], maxTokens: 100 } },
      CreateMessageResultSchema);
      return text(`LLM response: ${r.content?.type === 'text' ? r.content.text : JSON.stringify(r.content)}`);
    } },
  { name: 'test_elicitation', description: 'Asks the client for user input.',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    run: async (args, extra) => {
      const r = await extra.sendRequest({ method: 'elicitation/create', params: {
        message: String(args.message ?? ''),
        requestedSchema: { type: 'object', properties: {
          username: { type: 'string', description: 'User name' },
          email: { type: 'string', description: 'Email address' } }, required: ['username', 'email'] } } },
      ElicitResultSchema);
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    } },
  { name: 'test_elicitation_sep1034_defaults', description: 'Elicits with a default for each primitive type.', inputSchema: noArgs,
    run: async (_args, extra) => {
      const r = await extra.sendRequest({ method: 'elicitation/create', params: {
        message: 'Please review and update the form fields with defaults',
        requestedSchema: { type: 'object', properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true } } } } },
      ElicitResultSchema);
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    } },
  { name: 'test_elicitation_sep1330_enums', description: 'Elicits with the five enum shapes.', inputSchema: noArgs,
    run: async (_args, extra) => {
      const titled = (prefix, titles) => titles.map((title, i) => ({ const: `${prefix}${i + 1}`, title }));
      const r = await extra.sendRequest({ method: 'elicitation/create', params: {
        message: 'Please choose from the enum fields',
        requestedSchema: { type: 'object', properties: {
          untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          titledSingle: { type: 'string', oneOf: titled('value', ['First Option', 'Second Option', 'Third Option']) },
          legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: { type: 'array', items: { anyOf: titled('value', ['First Choice', 'Second Choice', 'Third Choice']) } },
        } } } },
      ElicitResultSchema);
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    } },
  { name: 'json_schema_2020_12_tool', description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
    run: async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`) },
  { name: 'test_reconnection', description: 'Closes its SSE stream mid-call; the result follows on resume.', inputSchema: noArgs,
    run: async (_args, extra) => {
      await sleep(100);
      extra.closeSSEStream?.(); // only over HTTP with an event store; elsewhere a plain call
      await sleep(200);
      return text('Reconnection test completed successfully');
    } },
];

// ===== resources and prompts =====

const RESOURCES = [
  { uri: 'test://static-text', name: 'Static text', mimeType: 'text/plain',
    read: () => ({ text: 'This is the content of the static text resource.' }) },
  { uri: 'test://static-binary', name: 'Static binary', mimeType: 'image/png', read: () => ({ blob: PNG }) },
  { uri: 'test://watched-resource', name: 'Watched resource', mimeType: 'text/plain',
    read: () => ({ text: 'Watched resource content' }) },
];
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = [
  { name: 'test_simple_prompt', description: 'A prompt without arguments',
    get: () => [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] },
  { name: 'test_prompt_with_arguments', description: 'A prompt with two arguments',
    arguments: [{ name: 'arg1', description: 'First argument', required: true }, { name: 'arg2', description: 'Second argument', required: true }],
    get: (a) => [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } }] },
  { name: 'test_prompt_with_embedded_resource', description: 'A prompt that embeds a resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    get: (a) => [
      { role: 'user', content: { type: 'resource', resource: { uri: String(a.resourceUri), mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ] },
  { name: 'test_prompt_with_image', description: 'A prompt with an image',
    get: () => [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ] },
];

// ===== the server =====

function newServer() {
  const server = new Server({ name: 'sluice-conformance-reference', version: '1.0.0' }, {
    capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} },
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = TOOLS.find((t) => t.name === req.params.name);
    // What the server executed, for the test to assert on (stderr: sluice passes a child's on).
    process.stderr.write(`reference: call ${req.params.name}\n`);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${req.params.name}`);
    return tool.run(req.params.arguments ?? {}, extra);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: RESOURCES.map(({ uri, name, mimeType }) => ({ uri, name, mimeType })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'Template', mimeType: 'application/json' }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const { uri } = req.params;
    const r = RESOURCES.find((x) => x.uri === uri);
    if (r) return { contents: [{ uri, mimeType: r.mimeType, ...r.read() }] };
    const m = TEMPLATE.exec(uri);
    if (m) return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
    throw new McpError(ErrorCode.InvalidParams, `unknown resource ${uri}`);
  });
  // A subscription gets one notifications/resources/updated soon after, unrelated to any request,
  // so over HTTP it travels on the client's standalone GET stream (the test's resource-updated
  // probe; the conformance scenarios only subscribe and unsubscribe).
  server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    const { uri } = req.params;
    setTimeout(() => server.sendResourceUpdated({ uri }).catch(() => {}), 100);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: PROMPTS.map(({ name, description, arguments: args }) => ({ name, description, ...(args ? { arguments: args } : {}) })),
  }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const p = PROMPTS.find((x) => x.name === req.params.name);
    if (!p) throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${req.params.name}`);
    return { messages: p.get(req.params.arguments ?? {}) };
  });
  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const prefix = String(req.params.argument?.value ?? '');
    const values = ['paris', 'park', 'party', 'test', 'testing'].filter((v) => v.startsWith(prefix));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}));
  return server;
}

// An event store in memory: what the resumability of a closed SSE stream needs.
class MemoryEventStore {
  #events = new Map(); // eventId -> {streamId, message}

  async storeEvent(streamId, message) {
    const id = `${streamId}_${this.#events.size}_${randomUUID().slice(0, 8)}`;
    this.#events.set(id, { streamId, message });
    return id;
  }

  async getStreamIdForEventId(eventId) {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const streamId = this.#events.get(lastEventId)?.streamId;
    if (!streamId) return '';
    let after = false;
    for (const [id, ev] of this.#events) {
      if (id === lastEventId) after = true;
      else if (after && ev.streamId === streamId) await send(id, ev.message);
    }
    return streamId;
  }
}

// DNS-rebinding protection, as the dns-rebinding-protection scenario expects of a local server:
// a Host or Origin naming anything but localhost, 127.0.0.1 or [::1] gets 403.
function localName(hostport) {
  try {
    const h = new URL(`http://${hostport}`).hostname;
    return h === 'localhost' || h === '127.0.0.1' || h === '[::1]';
  } catch {
    return false;
  }
}

function reply(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

function serveHttp() {
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    const origin = req.headers.origin;
    if (!localName(req.headers.host ?? '') || (origin && !localName(origin.replace(/^https?:\/\//, '')))) {
      reply(res, 403, 'Forbidden: Host or Origin is not local');
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      reply(res, 400, 'Parse error');
      return;
    }
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport && req.method === 'POST' && !sid && body && body.method === 'initialize') {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new MemoryEventStore(),
        retryInterval: 500,
        onsessioninitialized: (id) => sessions.set(id, transport),
        onsessionclosed: (id) => sessions.delete(id),
      });
      await newServer().connect(transport);
    }
    if (!transport) {
      reply(res, sid ? 404 : 400, sid ? 'Session not found' : 'Bad Request: no session');
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  httpServer.listen(Number(process.argv[3] || 0), '127.0.0.1', () => {
    process.stdout.write(`listening ${httpServer.address().port}\n`);
  });
}

process.on('SIGTERM', () => process.exit(0));
if (process.argv[2] === 'http') serveHttp();
else if (process.argv[2] === 'stdio') await newServer().connect(new StdioServerTransport());
else {
  process.stderr.write('usage: node reference_server.mjs http [PORT] | stdio\n');
  process.exit(2);
}
