/* core_pure.h: forced (-include) into every file of the core library, libsluice_core: the
 * modules listed under core_sources in proxy/meson.build, policy/, and tests/fuzz/run.sh's
 * list. Never included by hand.
 *
 * The core (the JSON reader and writer, JSON-RPC framing, the canonical form, sealing, replay,
 * the policy and its argument rules, the gate's decision, the HTTP/1.1 head parser) is pure:
 * no event loop, no sockets. That is what lets the unit and fuzz tests drive it with bytes
 * alone. It used to hold by habit; the build holds it now, twice:
 * - every libevent header declares evutil_socket_t (event2/util.h), so poisoning that name
 *   stops a core file that includes one, directly or through a header of the shell such as
 *   session.h, at compile time ("attempt to use poisoned evutil_socket_t");
 * - the tests of the core link the core library without libevent, so a call into libevent
 *   from a core file does not link. */
#pragma GCC poison evutil_socket_t
