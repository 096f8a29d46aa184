// Preloaded (NODE_OPTIONS=--require) into the everything server, for running it in a container:
//
// - The server calls listen(PORT) with no address, and so listens on every interface. A listen()
//   given a port and no address gets $HOST (default 127.0.0.1) instead: next to sluice in a pod,
//   the unguarded server must not be reachable from the rest of the cluster. Listens with an
//   explicit address are left alone.
// - Node as PID 1 has no default action for SIGTERM, so the container would wait out its stop
//   timeout and be killed. The server keeps nothing to flush: exit at once.
'use strict';
const net = require('node:net');
const host = process.env.HOST || '127.0.0.1';
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const portOnly = typeof port === 'number' || (typeof port === 'string' && /^\d+$/.test(port));
  if (portOnly && typeof args[1] !== 'string') args.splice(1, 0, host);
  return listen.apply(this, args);
};
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
