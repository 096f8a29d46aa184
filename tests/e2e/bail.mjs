// A node:test reporter that stops a test file at its first failure, when E2E_BAIL=1.
//
// The mutation check (tests/mutation/run.sh) only needs to know that a file fails, not how much
// of it does: a file that goes on after its first failure spends the rest of its time (often
// its timeouts) for nothing, once per mutant. node 20 has no --test-bail, so this reporter ends
// the run itself. Without E2E_BAIL it reads the events and says nothing: the files keep their
// usual reporter (spec) beside it, whatever the environment.
//
// It kills its whole process group, not only itself: meson starts each test in a session of its
// own, and the test file's process and everything it started (sluice, the fake upstreams, a
// redis-server) are in that group. A plain exit would leave them running into the next mutant.
// When this process does not lead its group (someone ran `node --test` from a script), it exits
// alone rather than kill a group it does not own.
import fs from 'node:fs';

const BAIL = process.env.E2E_BAIL === '1';

function leadsGroup() {
  try {
    // /proc/self/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces, so split after ')'.
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    return pgrp === process.pid;
  } catch {
    return false;
  }
}

export default async function* bail(source) {
  for await (const event of source) {
    if (!BAIL || event.type !== 'test:fail' || event.data.todo || event.data.skip) continue;
    // Written at once: the kill below would lose a yielded line still in the stream.
    fs.writeSync(2, `bail: "${event.data.name}" failed (${event.data.file ?? 'this file'}); E2E_BAIL=1 stops here\n`);
    if (leadsGroup()) process.kill(-process.pid, 'SIGKILL');
    process.exit(1);
  }
}
