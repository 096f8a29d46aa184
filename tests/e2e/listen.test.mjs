// listen.test.mjs: subscriptions/listen for 2026-07-28 clients in front of a legacy server
// (issue 20). The legacy server has no such method; sluice answers the listen itself, makes the
// resource subscriptions upstream, and turns the server's list_changed and resources/updated
// notifications into the stream's events, tagged with its subscriptionId. Asserted on the wire:
// the acknowledgement first, only what the filter asked for, the tag, the upstream's
// resources/subscribe and resources/unsubscribe, and the final result when sluice stops.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  modernRequest, readJsonLines, requireBinary, scaled, sleep, startSluice, suiteOptions,
  tmpDir, toolCall, writePolicy,
} from './lib.mjs';
import { postMcp, rpc, startHttpSluice } from './http_lib.mjs';

requireBinary();

const POLICY = 'version: 1\ndefaults:\n  action: allow\n';
const SUB = 'io.modelcontextprotocol/subscriptionId';
const ACK = 'notifications/subscriptions/acknowledged';

async function waitUpstream(s, pred, what) {
  const end = Date.now() + scaled(5000);
  while (Date.now() < end) {
    const hit = readJsonLines(s.upstreamLog).find(pred);
    if (hit) return hit;
    await sleep(50);
  }
  assert.fail(`the upstream never got ${what}`);
}

function listen(id, notifications) {
  return modernRequest(id, 'subscriptions/listen', { notifications });
}

async function notifyVia(target, id, method, params) {
  const r = await rpc(target, toolCall(id, 'notify', { method, params }, { caps: {} }));
  assert.ok(r.msg && r.msg.result, `notify: ${r.raw}`);
}

test('subscriptions/listen in front of a legacy server', suiteOptions(), async (t) => {
  await t.test('over HTTP: acknowledged, tagged, filtered, and unsubscribed when the client leaves', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY), fake: { FAKE_RESOURCES: '1' } });
    const stream = await postMcp(s.target, listen('L1', { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['file:///watched'] }));
    assert.equal(stream.status, 200);
    assert.ok(stream.sse, `an event stream, got ${stream.contentType}`);
    const ack = await stream.nextEvent(() => true, 5000, 'the acknowledgement');
    assert.equal(ack.method, ACK, 'the acknowledgement comes first');
    assert.equal(ack.params._meta[SUB], 'L1');
    // prompts: the server did not declare prompts.listChanged, so it is not acknowledged.
    assert.deepEqual(ack.params.notifications, { toolsListChanged: true, resourceSubscriptions: ['file:///watched'] });
    const sub = await waitUpstream(s, (m) => m.method === 'resources/subscribe', 'resources/subscribe');
    assert.deepEqual(sub.params, { uri: 'file:///watched' });

    await notifyVia(s.target, 'n1', 'notifications/resources/updated', { uri: 'file:///other' });
    await notifyVia(s.target, 'n2', 'notifications/resources/list_changed');
    await notifyVia(s.target, 'n3', 'notifications/tools/list_changed');
    await notifyVia(s.target, 'n4', 'notifications/resources/updated', { uri: 'file:///watched', title: 't' });
    const tools = await stream.nextEvent(() => true, 5000, 'tools/list_changed');
    assert.equal(tools.method, 'notifications/tools/list_changed', `not asked for: ${JSON.stringify(tools)}`);
    assert.deepEqual(tools.params, { _meta: { [SUB]: 'L1' } });
    const upd = await stream.nextEvent(() => true, 5000, 'resources/updated');
    assert.equal(upd.method, 'notifications/resources/updated');
    assert.deepEqual(upd.params, { _meta: { [SUB]: 'L1' }, uri: 'file:///watched', title: 't' });
    assert.equal(stream.unread.length, 0, 'nothing else: file:///other and resources/list_changed were not asked for');

    stream.abort();
    await waitUpstream(s, (m) => m.method === 'resources/unsubscribe', 'resources/unsubscribe');
  });

  await t.test('over HTTP: a listen stream ends with a complete result when sluice stops', async (t) => {
    const dir = tmpDir(t);
    const s = await startHttpSluice(t, { dir, policy: writePolicy(dir, POLICY) });
    const stream = await postMcp(s.target, listen(7, { toolsListChanged: true }));
    const ack = await stream.nextEvent(() => true, 5000, 'the acknowledgement');
    assert.equal(ack.params._meta[SUB], 7);
    s.proc.kill('SIGTERM');
    const fin = await stream.nextEvent((m) => m.id === 7, 5000, 'the final result');
    assert.deepEqual(fin.result, { resultType: 'complete', _meta: { [SUB]: 7 } });
  });

  await t.test('over stdio: tagged events, and a cancellation ends the stream', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { dir, policy: writePolicy(dir, POLICY) });
    s.send(listen('L', { toolsListChanged: true }));
    const { msg: ack, raw } = await s.next();
    assert.equal(ack.method, ACK, raw);
    assert.equal(ack.params._meta[SUB], 'L');
    // The stream is a request in flight: its id is not free for another request (its events
    // and its end are sent under it).
    const dup = await s.request(modernRequest('L', 'server/discover', {}));
    assert.equal(dup.error && dup.error.code, -32600, `refused while the stream is open: ${dup.raw}`);
    s.send(toolCall('n', 'notify', { method: 'notifications/tools/list_changed' }, { caps: {} }));
    const got = [await s.next(), await s.next()];
    const note = got.map((l) => l.msg).find((m) => m.method === 'notifications/tools/list_changed');
    assert.ok(note, `the change: ${got.map((l) => l.raw).join(' ')}`);
    assert.deepEqual(note.params, { _meta: { [SUB]: 'L' } }, 'tagged, and only once');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'L', _meta: modernRequest(0, 'x').params._meta } });
    s.send(toolCall('n2', 'notify', { method: 'notifications/tools/list_changed' }, { caps: {} }));
    await s.responseTo('n2');
    const again = await s.request(modernRequest('L', 'server/discover', {}));
    assert.ok(again.result, `the cancelled stream's id is free again: ${again.raw}`);
    await sleep(200);
    const tagged = s.lines.filter((l) => l.msg && l.msg.params && l.msg.params._meta && SUB in l.msg.params._meta);
    assert.deepEqual(tagged.map((l) => l.raw), [], 'nothing for a cancelled stream');
  });
});
