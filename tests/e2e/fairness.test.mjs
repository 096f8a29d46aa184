// fairness.test.mjs: the open-question table over stdio (one principal). An answered question
// leaves the table at once: a client asked and answered thousands of times within a minute (a
// policy that allows that rate) is never refused for a table full of questions already answered.
// The flood of principals over HTTP is in http_fairness.test.mjs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCEPT, assertAsked, assertRefusal, confirmRetry, startSluice, suiteOptions, tmpDir, toolCall,
  writePolicy,
} from './lib.mjs';

const POLICY = 'version: 1\ndefaults:\n  max_open_confirmations: 1\n  max_questions_per_minute: 10000\ntools:\n  write_file:\n    action: confirm\n  echo:\n    action: allow\n';

describe('the open questions over stdio', suiteOptions(), () => {
  test('4,200 questions asked and answered within the minute: each is asked; the last accept runs exactly its call', async (t) => {
    const dir = tmpDir(t);
    const s = startSluice(t, { policy: writePolicy(dir, POLICY), dir });
    const N = 4200; // more than the table's 4,096 places
    for (let i = 0; i < N; i++) {
      const args = { path: `/churn/${i}`, content: 'x' };
      const q = assertAsked(await s.request(toolCall(`a${i}`, 'write_file', args)));
      if (i < N - 1) {
        assertRefusal(await s.request(confirmRetry(`d${i}`, 'write_file', args, q.state, { action: 'decline' })), /declined/);
      } else {
        const r = await s.request(confirmRetry(`d${i}`, 'write_file', args, q.state, ACCEPT));
        assert.ok(r.result && !r.result.isError, r.raw);
      }
    }
    await s.sync();
    const calls = s.upstreamCalls('write_file');
    assert.equal(calls.length, 1, 'only the accepted call ran');
    assert.deepEqual(calls[0].params.arguments, { path: `/churn/${N - 1}`, content: 'x' });
  });
});
