#!/usr/bin/env python3
"""Shape tests for deploy/: the container image recipe, the Kubernetes sidecar example, the
compose example and the systemd unit.

Each check reads the files the way their consumer would (YAML documents, Containerfile
instructions, a systemd unit) and asserts a property that a deployment depends on: the probes hit
the port sluice listens on, only sluice is reachable from outside, the policy in the ConfigMap is
one sluice accepts, the state key reaches sluice as a private file, the grace periods outlast the
drain, the image builds from the same packages as CI and carries every library the binary links.

Needs Python 3 and PyYAML (Debian: python3-yaml). $SLUICE_BIN is the sluice binary (meson sets
it). Output is TAP: one "ok"/"not ok" line per check with the reason as a "#" comment.

    SLUICE_BIN=build/proxy/sluice python3 tests/deploy/test_deploy.py [--tap] [NAME_SUBSTRING...]

Without --tap the exit status is 1 when a check fails; with --tap (how meson runs it) it is 0
and the failures are in the TAP lines.
"""

import configparser
import ipaddress
import json
import os
import re
import shlex
import socket
import struct
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

try:
    import yaml
except ImportError:  # a TAP bail-out, so meson reports the cause instead of a traceback
    print("Bail out! PyYAML is missing: apt-get install python3-yaml")
    sys.exit(1)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S_FILE = DEPLOY / "k8s" / "sidecar.yaml"
KUSTOMIZATION_FILE = DEPLOY / "k8s" / "kustomization.yaml"
COMPOSE_FILE = DEPLOY / "compose.yaml"
CONTAINERFILE = DEPLOY / "Containerfile"
UNIT_FILE = DEPLOY / "sluice.service"
CI_DEPS = ROOT / ".ci" / "deps"

SLUICE_CONTAINER = "sluice"   # name of sluice's container in the pod and service in compose
TIMEOUT = 20                  # seconds for one run of the sluice binary

# Shared libraries the binary may link, and the Debian bookworm package that ships each. The
# final image must install the package of every library the binary needs. A library missing here
# is a failure on purpose: add it here and to the Containerfile's run stage together.
BOOKWORM_PACKAGE_OF_LIBRARY = {
    "libevent_core-2.1.so.7": "libevent-core-2.1-7",
    "libevent_extra-2.1.so.7": "libevent-extra-2.1-7",
    "libevent_openssl-2.1.so.7": "libevent-openssl-2.1-7",
    "libevent_pthreads-2.1.so.7": "libevent-pthreads-2.1-7",
    "libevent-2.1.so.7": "libevent-2.1-7",
    "libyajl.so.2": "libyajl2",
    "libyaml-0.so.2": "libyaml-0-2",
    "libssl.so.3": "libssl3",
    "libcrypto.so.3": "libssl3",
    "libhiredis.so.0.14": "libhiredis0.14",
    "libunistring.so.2": "libunistring2",
}
# In every Debian image already (libc6, libgcc-s1), or only in sanitizer builds of the tests.
BASE_LIBRARIES = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|libgcc_s)\.so\.\d+$"
                            r"|^ld-linux.*\.so\.\d+$")
SANITIZER_LIBRARIES = re.compile(r"^lib(asan|ubsan|lsan|tsan|hwasan)\.so(\.\d+)*$")


class Failure(Exception):
    pass


def need(cond, message):
    if not cond:
        raise Failure(message)


CHECKS = []


def check(func):
    CHECKS.append(func)
    return func


# ---- the sluice command line ---------------------------------------------------------------

def parse_sluice_args(args):
    """Splits a sluice argument list into {option: [values]}, the subcommand (or None), its
    positional arguments (probe URL) and the upstream command after "--". Every sluice option
    takes one value; "--opt=value" works too."""
    args = [str(a) for a in args]
    opts, sub, positional, rest = {}, None, [], []
    i = 0
    if args and not args[0].startswith("-"):
        sub, i = args[0], 1
    while i < len(args):
        a = args[i]
        if a == "--":
            rest = args[i + 1:]
            break
        if not a.startswith("--"):
            need(sub is not None, f"unexpected argument {a!r} in {args}")
            positional.append(a)
            i += 1
            continue
        if "=" in a:
            name, value = a.split("=", 1)
        else:
            need(i + 1 < len(args), f"option {a} has no value in {args}")
            name, value = a, args[i + 1]
            i += 1
        opts.setdefault(name, []).append(value)
        i += 1
    return opts, sub, positional, rest


def one(opts, name, where):
    values = opts.get(name, [])
    need(len(values) == 1, f"{where}: expected exactly one {name}, got {values}")
    return values[0]


def split_host_port(value, where):
    m = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\[\]]+):(\d+)", value)
    need(m is not None, f"{where}: {value!r} is not ADDR:PORT")
    host = m.group(1) or m.group(3)
    return host, int(m.group(2) or m.group(4))


def listen_port(opts, where):
    return split_host_port(one(opts, "--listen", where), where)[1]


def drain_grace(opts, where):
    value = one(opts, "--drain-grace", where)
    need(re.fullmatch(r"\d+", value) is not None, f"{where}: --drain-grace {value!r} is not a number")
    return int(value)


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host):
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def upstream_url(opts, where):
    url = urlsplit(one(opts, "--upstream", where))
    need(url.scheme in ("http", "https"), f"{where}: --upstream {url.geturl()} is not http(s)")
    need(url.hostname and url.port, f"{where}: --upstream {url.geturl()} needs a host and a port")
    return url


def sluice_bin():
    path = os.environ.get("SLUICE_BIN")
    need(path, "SLUICE_BIN is not set (meson sets it; run by hand with SLUICE_BIN=build/proxy/sluice)")
    need(os.access(path, os.X_OK), f"SLUICE_BIN={path} is not an executable file")
    return path


def timespan_seconds(value, where):
    """'30', '30s', '1m30s', '1min 30s', '500ms' -> seconds (systemd and compose spellings)."""
    if isinstance(value, (int, float)):
        return float(value)
    units = {"": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
             "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
             "ms": 0.001, "msec": 0.001, "us": 1e-6, "usec": 1e-6}
    text = str(value).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)\s*", text)
    need(parts and "".join(f"{n}{u}" for n, u in parts) == re.sub(r"\s+", "", text),
         f"{where}: cannot read the time span {value!r}")
    total = 0.0
    for number, unit in parts:
        need(unit in units, f"{where}: unknown unit {unit!r} in {value!r}")
        total += float(number) * units[unit]
    return total


# ---- the shared store (Redis) ----------------------------------------------------------------
# With replicas, sluice must keep its spent confirmations in one Redis that all of them reach:
# with the in-memory store a state opens only where it was minted. The password reaches sluice
# only as SLUICE_STORE_PASSWORD in its environment (argv is visible in ps and in the manifests),
# and Redis must require that same password.

STORE_PASSWORD_ENV = "SLUICE_STORE_PASSWORD"
REDIS_DEFAULT_PORT = 6379


def store_url(opts, where):
    """sluice's --store, which must be a redis:// URL without a password in it."""
    value = one(opts, "--store", where)
    url = urlsplit(value)
    need(url.scheme == "redis", f"{where}: --store {value} is not redis://HOST:PORT (the example "
         "runs several replicas, or restarts, that must share spent confirmations)")
    need(url.password is None, f"{where}: --store {value} carries a password; it belongs in "
         f"${STORE_PASSWORD_ENV}, never on the command line")
    need(url.hostname, f"{where}: --store {value} names no host")
    return url


def redis_text(words):
    """The command line and config text of a Redis container, as one string."""
    return "\n".join(str(w) for w in words)


def redis_setting(text, name):
    """Values given to a Redis setting on the command line (--name v) or in config lines."""
    return re.findall(r"(?:^|\s|--)" + re.escape(name) + r"[ \t]+(\S+)", text)


def redis_port(text, where):
    ports = redis_setting(text, "port")
    need(len(ports) <= 1, f"{where}: Redis is given several ports {ports}")
    return int(ports[0]) if ports else REDIS_DEFAULT_PORT


def redis_password_variable(text, where):
    """The environment variable Redis's requirepass reads: $V, ${V} or $(V) (the kubelet's
    expansion). A literal password would sit in the manifest, so it is a failure."""
    values = redis_setting(text, "requirepass")
    need(len(values) == 1, f"{where}: Redis must require a password (requirepass), found {values}")
    m = re.fullmatch(r"[\"']?\$(?:\{(\w+)\}|\((\w+)\)|(\w+))[\"']?", values[0])
    need(m is not None, f"{where}: requirepass {values[0]!r} is not read from an environment variable")
    return next(g for g in m.groups() if g)


def redis_keeps_spent_nonces(text, where):
    need("redis-server" in text, f"{where}: does not run redis-server")
    for policy in redis_setting(text, "maxmemory-policy"):
        need(policy.strip("\"'") == "noeviction", f"{where}: maxmemory-policy {policy}: an evicting "
             "policy forgets spent nonces, and an approval could run again")


# ---- Kubernetes ------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def k8s_docs():
    docs = [d for d in yaml.safe_load_all(K8S_FILE.read_text()) if d is not None]
    for d in docs:
        need(isinstance(d, dict) and "apiVersion" in d and "kind" in d and "metadata" in d,
             f"{K8S_FILE.name}: a document without apiVersion/kind/metadata")
    return docs


def k8s_one(kind):
    found = [d for d in k8s_docs() if d["kind"] == kind]
    need(len(found) == 1, f"{K8S_FILE.name}: expected one {kind}, found {len(found)}")
    return found[0]


def k8s_workloads():
    """Every Deployment and StatefulSet: sluice's, and the store's."""
    return [d for d in k8s_docs() if d["kind"] in ("Deployment", "StatefulSet")]


def pod_labels(workload):
    return workload["spec"]["template"]["metadata"].get("labels") or {}


def selects(selector, labels):
    """A Service's selector, or a matchLabels, picks pods with these labels."""
    return bool(selector) and selector.items() <= labels.items()


def k8s_sluice_deployment():
    found = [d for d in k8s_workloads() if d["kind"] == "Deployment" and
             any(c["name"] == SLUICE_CONTAINER for c in d["spec"]["template"]["spec"]["containers"])]
    need(len(found) == 1, f"{K8S_FILE.name}: expected one Deployment with a container named "
         f"{SLUICE_CONTAINER!r}, found {len(found)}")
    return found[0]


def k8s_pod():
    return k8s_sluice_deployment()["spec"]["template"]["spec"]


def k8s_sluice_service():
    labels = pod_labels(k8s_sluice_deployment())
    found = [d for d in k8s_docs() if d["kind"] == "Service"
             and selects(d["spec"].get("selector") or {}, labels)]
    need(len(found) == 1, f"{K8S_FILE.name}: expected one Service selecting the sluice pods, "
         f"found {len(found)}")
    return found[0]


def k8s_containers():
    return {c["name"]: c for c in k8s_pod()["containers"]}


def k8s_sluice():
    c = k8s_containers().get(SLUICE_CONTAINER)
    need(c is not None, f"{K8S_FILE.name}: no container named {SLUICE_CONTAINER!r}")
    need("command" not in c, "the sluice container must keep the image's ENTRYPOINT (give args only)")
    return c


def k8s_sluice_opts():
    opts, sub, _, rest = parse_sluice_args(k8s_sluice().get("args", []))
    need(sub is None and not rest, "the sluice container must run the proxy, with --upstream")
    return opts


def k8s_listen_port():
    return listen_port(k8s_sluice_opts(), "k8s sluice args")


def k8s_others():
    return [c for n, c in k8s_containers().items() if n != SLUICE_CONTAINER]


def resolve_port(container, port):
    """A probe's or Service's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    raise Failure(f"port {port!r} names no port of container {container['name']!r}")


def mount_holding(container, path):
    """The volumeMount of container under which path lies (the longest such mountPath)."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"].rstrip("/")):
                best = m
    need(best is not None, f"{path} is on no volume of container {container['name']!r}")
    return best


def pod_volume(name):
    for v in k8s_pod().get("volumes", []):
        if v["name"] == name:
            return v
    raise Failure(f"no pod volume named {name!r}")


def effective_security(container, pod=None):
    pod = ((pod or k8s_pod()).get("securityContext", {})) or {}
    own = container.get("securityContext", {}) or {}
    return pod, own


@check
def k8s_manifests_parse():
    kinds = [d["kind"] for d in k8s_docs()]
    for kind in ("ConfigMap", "Deployment", "Service"):
        need(kind in kinds, f"{K8S_FILE.name}: no {kind} (found {kinds})")
    workloads = k8s_workloads()
    for dep in workloads:
        name = dep["metadata"]["name"]
        need(selects(dep["spec"]["selector"]["matchLabels"], pod_labels(dep)),
             f"{dep['kind']} {name}: its selector does not match its pod labels")
        others = [w["metadata"]["name"] for w in workloads if w is not dep
                  and selects(dep["spec"]["selector"]["matchLabels"], pod_labels(w))]
        need(not others, f"{dep['kind']} {name}: its selector also matches the pods of {others}")
    for svc in (d for d in k8s_docs() if d["kind"] == "Service"):
        picked = [w for w in workloads if selects(svc["spec"].get("selector") or {}, pod_labels(w))]
        need(len(picked) == 1, f"Service {svc['metadata']['name']} selects the pods of "
             f"{len(picked)} workloads, want exactly one")
    k8s_sluice_deployment()
    kust = yaml.safe_load(KUSTOMIZATION_FILE.read_text())
    for res in kust.get("resources", []):
        need((KUSTOMIZATION_FILE.parent / res).is_file(), f"kustomization resource {res} is missing")
    need("sidecar.yaml" in kust.get("resources", []), "kustomization does not include sidecar.yaml")


@check
def k8s_probes_hit_the_port_sluice_listens_on():
    c = k8s_sluice()
    port = k8s_listen_port()
    declared = [p["containerPort"] for p in c.get("ports", [])]
    need(declared == [port], f"sluice listens on {port} but declares containerPorts {declared}")
    tls = "--tls-cert" in k8s_sluice_opts()
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = (c.get(probe) or {}).get("httpGet")
        need(get is not None, f"sluice has no {probe} with httpGet")
        need(get.get("path") == path, f"{probe} path is {get.get('path')!r}, want {path}")
        need(resolve_port(c, get.get("port")) == port,
             f"{probe} port {get.get('port')!r} is not sluice's --listen port {port}")
        need(get.get("scheme", "HTTP") == ("HTTPS" if tls else "HTTP"),
             f"{probe} scheme {get.get('scheme', 'HTTP')} does not match sluice's TLS setting")


@check
def k8s_only_sluice_has_ports():
    pod = k8s_pod()
    need(not pod.get("hostNetwork"), "the pod must not use hostNetwork")
    for c in k8s_others() + list(pod.get("initContainers", [])):
        need(not c.get("ports"), f"container {c['name']!r} declares ports {c.get('ports')}")
    for p in k8s_sluice().get("ports", []):
        need("hostPort" not in p, "sluice must not take a hostPort")


@check
def k8s_mcp_server_listens_on_loopback_only():
    url = upstream_url(k8s_sluice_opts(), "k8s sluice args")
    need(is_loopback(url.hostname), f"--upstream {url.geturl()} is not the pod's loopback")
    others = k8s_others()
    need(others, "no MCP server container next to sluice")
    serving = []
    for c in others:
        words = []
        for a in list(c.get("command", [])) + list(c.get("args", [])):
            words += re.split(r"[=\s]", str(a))
        words += [str(e.get("value", "")) for e in c.get("env", [])]
        for w in list(words):  # HOST:PORT and URLs count as their host and port
            hp = re.fullmatch(r"(?:[a-z]+://)?\[?([^\]/]+?)\]?:(\d+)(?:/.*)?", w)
            if hp:
                words += [hp.group(1), hp.group(2)]
        hosts = [w for w in words if is_loopback(w) or is_wildcard(w)]
        need(not any(is_wildcard(w) for w in hosts),
             f"container {c['name']!r} is told to listen on a wildcard address: {hosts}")
        if str(url.port) in words:
            need(any(is_loopback(w) for w in hosts),
                 f"container {c['name']!r} serves port {url.port} but names no loopback address")
            serving.append(c["name"])
    need(serving, f"no container is told to listen on the upstream port {url.port}")


@check
def k8s_policy_configmap_passes_sluice_check():
    c = k8s_sluice()
    path = one(k8s_sluice_opts(), "--policy", "k8s sluice args")
    m = mount_holding(c, path)
    need(m.get("readOnly") is True, f"the policy mount {m['mountPath']} is not readOnly")
    need("subPath" not in m, "the policy is mounted with subPath, so edits never reach the pod")
    vol = pod_volume(m["name"])
    need("configMap" in vol, f"the policy volume {vol['name']!r} is not a ConfigMap")
    rel = path[len(m["mountPath"].rstrip("/")) + 1:]
    key = rel
    for item in vol["configMap"].get("items", []) or []:
        if item["path"] == rel:
            key = item["key"]
    cms = [d for d in k8s_docs() if d["kind"] == "ConfigMap"
           and d["metadata"]["name"] == vol["configMap"]["name"]]
    need(len(cms) == 1, f"no ConfigMap named {vol['configMap']['name']!r} in {K8S_FILE.name}")
    body = (cms[0].get("data") or {}).get(key)
    need(isinstance(body, str) and body.strip(), f"the ConfigMap has no key {key!r}")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "policy.yaml"
        f.write_text(body)
        r = subprocess.run([sluice_bin(), "check", "--policy", str(f)], capture_output=True,
                           text=True, timeout=TIMEOUT)
    need(r.returncode == 0, f"sluice check --policy exited {r.returncode}: {r.stdout}{r.stderr}")


def modes_without_group_or_other(mode):
    return mode is not None and (int(mode) & 0o077) == 0


@check
def k8s_state_key_is_a_private_copy_of_the_secret():
    # A Secret's files are owned by root: 0400 is unreadable for a non-root sluice, and with
    # fsGroup the kubelet makes them 0440, which sluice refuses. So the key must reach sluice as
    # a copy made by an init container: owned by sluice's user, no group or other bits, in memory.
    c = k8s_sluice()
    path = one(k8s_sluice_opts(), "--state-key-file", "k8s sluice args")
    m = mount_holding(c, path)
    need(m.get("readOnly") is True, f"the key mount {m['mountPath']} is not readOnly in sluice")
    vol = pod_volume(m["name"])
    need("secret" not in vol, "sluice reads the key straight from a Secret volume: its files are "
         "root-owned (0400: unreadable by a non-root user) or, with fsGroup, 0440 (sluice refuses)")
    need((vol.get("emptyDir") or {}).get("medium") == "Memory",
         f"the key volume {vol['name']!r} is not an in-memory emptyDir")
    pod = k8s_pod()
    copiers = [i for i in pod.get("initContainers", [])
               if any(v["name"] == m["name"] and not v.get("readOnly")
                      for v in i.get("volumeMounts", []))]
    need(len(copiers) == 1, "exactly one init container must write the key volume")
    init = copiers[0]
    argv = [str(a) for a in list(init.get("command", [])) + list(init.get("args", []))]
    need(argv and argv[0].endswith("/install") and "-m" in argv,
         f"the init container must copy with install -m MODE, runs {argv}")
    mode = argv[argv.index("-m") + 1]
    need(modes_without_group_or_other(int(mode, 8)), f"the key copy gets mode {mode}")
    src, dst = argv[-2], argv[-1]
    need(dst == path, f"the init container writes {dst}, sluice reads {path}")
    sm = mount_holding(init, src)
    need(sm.get("readOnly") is True, f"the Secret mount {sm['mountPath']} is not readOnly")
    svol = pod_volume(sm["name"])
    need("secret" in svol, f"the init container copies from {svol['name']!r}, not a Secret")
    need(modes_without_group_or_other(svol["secret"].get("defaultMode")),
         f"the Secret's defaultMode {svol['secret'].get('defaultMode')} grants group/other")
    for mnt_c in [c] + k8s_others():
        need(all(v["name"] != sm["name"] for v in mnt_c.get("volumeMounts", [])),
             f"container {mnt_c['name']!r} mounts the Secret itself")
    psc = pod.get("securityContext", {}) or {}
    need(psc.get("fsGroup") is not None, "no fsGroup: the init container cannot read the Secret")
    uid = lambda x: (x.get("securityContext") or {}).get("runAsUser", psc.get("runAsUser"))
    need(uid(init) is not None and uid(init) == uid(c),
         f"the key copy is owned by UID {uid(init)}, sluice runs as {uid(c)}")


@check
def k8s_every_container_is_locked_down():
    for workload in k8s_workloads():
        k8s_pod_is_locked_down(workload["spec"]["template"]["spec"])


def k8s_pod_is_locked_down(pod):
    for c in pod["containers"] + list(pod.get("initContainers", [])):
        psc, sc = effective_security(c, pod)
        name = c["name"]
        need(sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, f"{name}: runAsNonRoot is not true")
        need(sc.get("runAsUser", psc.get("runAsUser")) != 0, f"{name}: runAsUser is 0")
        need(sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem is not true")
        need(sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation is not false")
        need(not sc.get("privileged"), f"{name}: privileged")
        caps = sc.get("capabilities") or {}
        need("ALL" in (caps.get("drop") or []), f"{name}: capabilities do not drop ALL")
        need(not caps.get("add"), f"{name}: adds capabilities {caps.get('add')}")
        res = c.get("resources") or {}
        for kind in ("requests", "limits"):
            for r in ("cpu", "memory"):
                need(r in (res.get(kind) or {}), f"{name}: no resources.{kind}.{r}")


@check
def k8s_termination_grace_exceeds_drain_grace():
    grace = k8s_pod().get("terminationGracePeriodSeconds", 30)
    drain = drain_grace(k8s_sluice_opts(), "k8s sluice args")
    need(grace > drain, f"terminationGracePeriodSeconds {grace} <= --drain-grace {drain}")


@check
def k8s_service_targets_only_sluice_port():
    svc = k8s_sluice_service()
    ports = svc["spec"].get("ports") or []
    need(ports, "the Service has no ports")
    port = k8s_listen_port()
    for p in ports:
        target = p.get("targetPort", p.get("port"))
        need(resolve_port(k8s_sluice(), target) == port,
             f"Service port {p.get('name', p.get('port'))} targets {target!r}, not sluice's {port}")


def k8s_container_words(c):
    return list(c.get("command", [])) + list(c.get("args", []))


def env_secret(c, name):
    """(secret, key) that env variable name of container c is read from, or None; a literal
    value is a failure."""
    for e in c.get("env", []) or []:
        if e.get("name") == name:
            need("value" not in e, f"container {c['name']!r}: {name} is a literal in the manifest")
            ref = (e.get("valueFrom") or {}).get("secretKeyRef") or {}
            need(ref.get("name") and ref.get("key"),
                 f"container {c['name']!r}: {name} is not read from a Secret (secretKeyRef)")
            return ref["name"], ref["key"]
    return None


def k8s_store_service():
    """The Service that sluice's --store names, and the workload and container behind it."""
    url = store_url(k8s_sluice_opts(), "k8s sluice args")
    host = url.hostname
    m = re.fullmatch(r"([a-z0-9-]+)(?:\.[a-z0-9-]+(?:\.svc(?:\.[a-z0-9.-]+)?)?)?", host)
    need(m is not None, f"--store host {host} is not a Service name")
    svcs = [d for d in k8s_docs() if d["kind"] == "Service" and d["metadata"]["name"] == m.group(1)]
    need(len(svcs) == 1, f"--store names {host}, but {K8S_FILE.name} defines no Service {m.group(1)!r}")
    svc = svcs[0]
    need(svc is not k8s_sluice_service(), f"--store names sluice's own Service {m.group(1)}")
    port = url.port or REDIS_DEFAULT_PORT
    ports = [p for p in svc["spec"].get("ports") or [] if p.get("port") == port]
    need(ports, f"Service {m.group(1)} has no port {port} (--store {url.geturl()})")
    selector = svc["spec"].get("selector") or {}
    workloads = [w for w in k8s_workloads() if selects(selector, pod_labels(w))]
    need(len(workloads) == 1, f"Service {m.group(1)} selects {len(workloads)} workloads, want one Redis")
    pod = workloads[0]["spec"]["template"]["spec"]
    target = ports[0].get("targetPort", port)
    servers = [c for c in pod["containers"] if any(
        cp.get("containerPort") == target or cp.get("name") == target for cp in c.get("ports") or [])]
    need(len(servers) == 1, f"Service {m.group(1)} targets {target!r}: {len(servers)} containers "
         "declare it, want the one Redis")
    return svc, workloads[0], servers[0]


@check
def k8s_sluice_stores_in_the_redis_service():
    svc, workload, redis = k8s_store_service()
    where = f"{workload['kind']} {workload['metadata']['name']}"
    text = redis_text(k8s_container_words(redis))
    redis_keeps_spent_nonces(text, where)
    port = store_url(k8s_sluice_opts(), "k8s sluice args").port or REDIS_DEFAULT_PORT
    target = next(p.get("targetPort", port) for p in svc["spec"]["ports"] if p.get("port") == port)
    need(resolve_port(redis, target) == redis_port(text, where),
         f"{where}: Redis listens on {redis_port(text, where)}, the Service targets {target!r}")
    need(workload["spec"].get("replicas", 1) == 1,
         f"{where}: {workload['spec'].get('replicas')} Redis replicas behind one Service are "
         "several stores, each with its own spent nonces")


@check
def k8s_store_password_comes_from_a_secret():
    sluice = k8s_sluice()
    ref = env_secret(sluice, STORE_PASSWORD_ENV)
    need(ref is not None, f"sluice has no {STORE_PASSWORD_ENV} (Redis requires a password)")
    for a in sluice.get("args", []):
        need(STORE_PASSWORD_ENV not in str(a), f"sluice's args name {STORE_PASSWORD_ENV}: {a!r}")
    _, workload, redis = k8s_store_service()
    where = f"{workload['kind']} {workload['metadata']['name']}"
    var = redis_password_variable(redis_text(k8s_container_words(redis)), where)
    need(env_secret(redis, var) == ref, f"{where}: requirepass reads ${var}, which is not the "
         f"Secret {ref[0]}/{ref[1]} that sluice's {STORE_PASSWORD_ENV} comes from")
    for c in k8s_others() + list(k8s_pod().get("initContainers", [])):
        refs = [(e.get("valueFrom") or {}).get("secretKeyRef", {}).get("name")
                for e in c.get("env", []) or []]
        refs += [(f.get("secretRef") or {}).get("name") for f in c.get("envFrom", []) or []]
        need(ref[0] not in refs, f"container {c['name']!r} next to sluice gets the store's Secret")


@check
def k8s_only_sluice_reaches_redis():
    _, workload, redis = k8s_store_service()
    labels = pod_labels(workload)
    sluice_labels = pod_labels(k8s_sluice_deployment())
    policies = [d for d in k8s_docs() if d["kind"] == "NetworkPolicy"
                and selects((d["spec"].get("podSelector") or {}).get("matchLabels") or {}, labels)]
    need(policies, f"no NetworkPolicy selects the Redis pods ({labels}): plain TCP to Redis must "
         "be reachable from the sluice pods only")
    for pol in policies:
        name = pol["metadata"]["name"]
        need("Ingress" in (pol["spec"].get("policyTypes") or ["Ingress"]), f"NetworkPolicy {name}: no Ingress")
        for rule in pol["spec"].get("ingress") or []:
            froms = rule.get("from")
            need(froms, f"NetworkPolicy {name}: a rule admits every source")
            for f in froms:
                need(set(f) == {"podSelector"}, f"NetworkPolicy {name}: a source other than a "
                     f"podSelector of this namespace: {f}")
                ml = (f["podSelector"] or {}).get("matchLabels") or {}
                need(selects(ml, sluice_labels), f"NetworkPolicy {name}: admits pods {ml}, not sluice's")
                wider = [w["metadata"]["name"] for w in k8s_workloads()
                         if w is not k8s_sluice_deployment() and selects(ml, pod_labels(w))]
                need(not wider, f"NetworkPolicy {name}: admits {ml}, which also selects {wider}")
                need(not (f["podSelector"] or {}).get("matchExpressions"),
                     f"NetworkPolicy {name}: matchExpressions are not checked here")
            ports = rule.get("ports")
            need(ports, f"NetworkPolicy {name}: a rule admits every port")
            for p in ports:
                need(resolve_port(redis, p.get("port")) == redis_port(
                    redis_text(k8s_container_words(redis)), name),
                     f"NetworkPolicy {name}: admits port {p.get('port')!r}, not Redis's")


# ---- compose ---------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def compose():
    doc = yaml.safe_load(COMPOSE_FILE.read_text())
    need(isinstance(doc, dict) and isinstance(doc.get("services"), dict), "compose: no services")
    need(SLUICE_CONTAINER in doc["services"], f"compose: no service {SLUICE_CONTAINER!r}")
    return doc


def compose_sluice_opts():
    cmd = compose()["services"][SLUICE_CONTAINER].get("command")
    need(isinstance(cmd, list), "compose: sluice's command must be a list (exec form)")
    opts, sub, _, rest = parse_sluice_args(cmd)
    need(sub is None and not rest, "compose: sluice must run the proxy with --upstream")
    return opts


def compose_service_networks(svc):
    nets = svc.get("networks")
    if nets is None:
        return {"default": {}}
    if isinstance(nets, list):
        return {n: {} for n in nets}
    return {n: (v or {}) for n, v in nets.items()}


def published_container_ports(svc):
    out = []
    for p in svc.get("ports", []) or []:
        if isinstance(p, dict):
            out.append(int(p["target"]))
        else:
            spec = str(p).split("/")[0]
            out.append(int(spec.rsplit(":", 1)[-1]))
    return out


@check
def compose_only_sluice_publishes_ports():
    services = compose()["services"]
    port = listen_port(compose_sluice_opts(), "compose sluice command")
    published = published_container_ports(services[SLUICE_CONTAINER])
    need(published and set(published) == {port},
         f"compose: sluice publishes {published}, listens on {port}")
    for name, svc in services.items():
        need(svc.get("network_mode") not in ("host",), f"compose: {name} uses the host network")
        if name != SLUICE_CONTAINER:
            need(not svc.get("ports"), f"compose: {name} publishes ports {svc.get('ports')}")


@check
def compose_mcp_server_is_on_a_private_network():
    doc = compose()
    services = doc["services"]
    networks = doc.get("networks") or {}
    url = upstream_url(compose_sluice_opts(), "compose sluice command")
    need(url.hostname in services and url.hostname != SLUICE_CONTAINER,
         f"compose: --upstream host {url.hostname!r} is not another service")
    for name, svc in services.items():
        if name == SLUICE_CONTAINER:
            continue
        for net in compose_service_networks(svc):
            need((networks.get(net) or {}).get("internal") is True,
                 f"compose: {name} is on network {net!r}, which is not internal")
    shared = set(compose_service_networks(services[SLUICE_CONTAINER])) & \
        set(compose_service_networks(services[url.hostname]))
    need(shared, f"compose: sluice and {url.hostname} share no network")


@check
def compose_healthcheck_is_sluice_probe():
    svc = compose()["services"][SLUICE_CONTAINER]
    test = (svc.get("healthcheck") or {}).get("test")
    need(isinstance(test, list) and test[:1] == ["CMD"], f"compose: healthcheck test {test!r} is not exec form")
    need(len(test) == 4 and test[1] == IMAGE_SLUICE and test[2] == "probe",
         f"compose: healthcheck is not '{IMAGE_SLUICE} probe URL': {test}")
    url = urlsplit(test[3])
    port = listen_port(compose_sluice_opts(), "compose sluice command")
    need(url.path == "/healthz" and url.port == port and is_loopback(url.hostname),
         f"compose: healthcheck URL {test[3]} is not loopback:{port}/healthz")


@check
def compose_key_policy_and_stop_grace():
    doc = compose()
    svc = doc["services"][SLUICE_CONTAINER]
    opts = compose_sluice_opts()
    key = one(opts, "--state-key-file", "compose sluice command")
    targets = {}
    for s in svc.get("secrets", []) or []:
        src = s if isinstance(s, str) else s["source"]
        tgt = src if isinstance(s, str) else s.get("target", src)
        targets[tgt if tgt.startswith("/") else "/run/secrets/" + tgt] = src
    need(key in targets, f"compose: --state-key-file {key} is no secret of sluice ({list(targets)})")
    need(targets[key] in (doc.get("secrets") or {}), f"compose: secret {targets[key]} is not defined")
    policy = one(opts, "--policy", "compose sluice command")
    mounted = False
    source = None
    for v in svc.get("volumes", []) or []:
        if isinstance(v, dict):
            if v.get("target") == policy:
                need(v.get("read_only") is True, "compose: the policy is mounted writable")
                mounted, source = True, v.get("source")
        else:
            parts = str(v).split(":")
            if len(parts) >= 2 and parts[1] == policy:
                need(len(parts) == 3 and "ro" in parts[2].split(","), "compose: the policy is mounted writable")
                mounted, source = True, parts[0]
    need(mounted, f"compose: nothing is mounted at --policy {policy}")
    if source and source.startswith((".", "/")):  # a bind mount of a file: sluice must accept it
        f = (COMPOSE_FILE.parent / source).resolve()
        need(f.is_file(), f"compose: the policy file {source} does not exist")
        r = subprocess.run([sluice_bin(), "check", "--policy", str(f)], capture_output=True,
                           text=True, timeout=TIMEOUT)
        need(r.returncode == 0, f"compose: sluice check --policy {source} exited {r.returncode}: "
             f"{r.stdout}{r.stderr}")
    grace = timespan_seconds(svc.get("stop_grace_period", "10s"), "compose stop_grace_period")
    drain = drain_grace(opts, "compose sluice command")
    need(grace > drain, f"compose: stop_grace_period {grace}s <= --drain-grace {drain}")
    need(str(svc.get("user", "")).split(":")[0] not in ("", "0", "root"), "compose: sluice runs as root")
    need(svc.get("read_only") is True, "compose: sluice's root filesystem is writable")
    need("ALL" in (svc.get("cap_drop") or []), "compose: sluice does not drop ALL capabilities")


def compose_env_files(svc):
    files = svc.get("env_file") or []
    files = [files] if isinstance(files, (str, dict)) else files
    return [f if isinstance(f, str) else f["path"] for f in files]


def compose_environment(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
    return env


def compose_unescape(text):
    """What the container gets: compose reads $$ as a literal $."""
    return str(text).replace("$$", "$")


def compose_words(svc):
    words = []
    for key in ("entrypoint", "command"):
        v = svc.get(key) or []
        words += [v] if isinstance(v, str) else list(v)
    return [compose_unescape(w) for w in words]


def compose_password_source(svc, where):
    """Where a service's SLUICE_STORE_PASSWORD comes from: ('file', path) for an env_file,
    ('var', NAME) for ${NAME} interpolated from the host. A literal is a failure."""
    env = compose_environment(svc)
    if STORE_PASSWORD_ENV in env and env[STORE_PASSWORD_ENV] is not None:
        m = re.fullmatch(r"\$\{(\w+)(?::?[?-][^}]*)?\}|\$(\w+)", str(env[STORE_PASSWORD_ENV]))
        need(m is not None, f"{where}: {STORE_PASSWORD_ENV} is a literal in compose.yaml")
        return ("var", m.group(1) or m.group(2))
    files = compose_env_files(svc)
    need(files, f"{where}: no {STORE_PASSWORD_ENV} (neither environment nor env_file)")
    return ("file", tuple(sorted(files)))


def compose_store_service():
    services = compose()["services"]
    url = store_url(compose_sluice_opts(), "compose sluice command")
    need(url.hostname in services and url.hostname != SLUICE_CONTAINER,
         f"compose: --store host {url.hostname!r} is not another service")
    return url, url.hostname, services[url.hostname]


@check
def compose_sluice_stores_in_the_redis_service():
    doc = compose()
    url, name, redis = compose_store_service()
    text = redis_text(compose_words(redis))
    redis_keeps_spent_nonces(text, f"compose {name}")
    need(redis_port(text, f"compose {name}") == (url.port or REDIS_DEFAULT_PORT),
         f"compose: {name} listens on {redis_port(text, name)}, --store says {url.port}")
    nets = set(compose_service_networks(redis))
    shared = nets & set(compose_service_networks(doc["services"][SLUICE_CONTAINER]))
    need(shared, f"compose: sluice and {name} share no network")
    for other, svc in doc["services"].items():
        if other not in (name, SLUICE_CONTAINER):
            need(not nets & set(compose_service_networks(svc)),
                 f"compose: {other} shares a network with {name}; only sluice may reach the store")


@check
def compose_store_password_comes_from_the_environment():
    services = compose()["services"]
    sluice = services[SLUICE_CONTAINER]
    for a in sluice.get("command") or []:
        need(STORE_PASSWORD_ENV not in str(a), f"compose: sluice's command names {STORE_PASSWORD_ENV}")
    source = compose_password_source(sluice, "compose sluice")
    _, name, redis = compose_store_service()
    var = redis_password_variable(redis_text(compose_words(redis)), f"compose {name}")
    if source[0] == "file":
        need(var == STORE_PASSWORD_ENV and set(source[1]) <= set(compose_env_files(redis)),
             f"compose: {name}'s requirepass reads ${var}, not {STORE_PASSWORD_ENV} from sluice's "
             f"env_file {list(source[1])}")
    else:
        env = compose_environment(redis)
        need(var in env and compose_password_source({"environment": {STORE_PASSWORD_ENV: env[var]}},
                                                    f"compose {name}") == source,
             f"compose: {name}'s requirepass reads ${var}, not the ${{{source[1]}}} sluice gets")
    for other, svc in services.items():
        if other in (name, SLUICE_CONTAINER):
            continue
        need(STORE_PASSWORD_ENV not in compose_environment(svc) and
             not (source[0] == "file" and set(source[1]) & set(compose_env_files(svc))),
             f"compose: {other} gets the store password")


# ---- Containerfile ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def containerfile():
    """[(INSTRUCTION, argument text)], continuation lines joined, comments dropped."""
    out, buf = [], ""
    for raw in CONTAINERFILE.read_text().splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and (not line or line.startswith("#")):
            continue  # a comment or blank line inside a continued instruction
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    need(not buf, "Containerfile ends inside a continued line")
    return out


def containerfile_stages():
    """[{"from": FROM's argument with ${ARG}s of the global ARGs replaced by their defaults,
    "ins": [(INSTRUCTION, argument)]}]. Only ARG may come before the first FROM."""
    stages, global_args = [], {}
    for ins, arg in containerfile():
        if ins == "FROM":
            resolved = re.sub(r"\$\{(\w+)\}|\$(\w+)",
                              lambda m: global_args.get(m.group(1) or m.group(2), m.group(0)), arg)
            need("$" not in resolved, f"Containerfile: FROM {arg} uses an ARG without a default")
            stages.append({"from": resolved, "ins": []})
        elif not stages:
            need(ins == "ARG", f"Containerfile: {ins} before the first FROM")
            name, _, default = arg.partition("=")
            global_args[name.strip()] = default.strip()
        else:
            stages[-1]["ins"].append((ins, arg))
    return stages


def exec_form(arg, what):
    try:
        value = json.loads(arg)
    except ValueError:
        raise Failure(f"Containerfile: {what} is not in exec (JSON array) form: {arg}")
    need(isinstance(value, list) and value and all(isinstance(v, str) for v in value),
         f"Containerfile: {what} is not a JSON array of strings: {arg}")
    return value


def final_instruction(name):
    found = [a for i, a in containerfile_stages()[-1]["ins"] if i == name]
    need(found, f"Containerfile: the final stage has no {name}")
    return found[-1]


def containerfile_entrypoint():
    return exec_form(final_instruction("ENTRYPOINT"), "ENTRYPOINT")


IMAGE_SLUICE = "/usr/local/bin/sluice"            # where the image installs the binary
ENTRYPOINT_SCRIPT = DEPLOY / "entrypoint.sh"
HEALTHCHECK_SCRIPT = DEPLOY / "healthcheck.sh"


def containerfile_copied_to(dst):
    """The repository path the final stage COPYs to dst (plain COPY, not --from)."""
    for ins, arg in containerfile_stages()[-1]["ins"]:
        words = arg.split()
        if ins == "COPY" and not any(w.startswith("--from") for w in words) and words[-1] == dst:
            return ROOT / words[-2]
    raise Failure(f"Containerfile: nothing is copied to {dst}")


def script_default(script, var):
    """The default of ${VAR:-default} in a deploy script: the path it runs in the image."""
    m = re.search(r"\$\{" + var + r":-([^}]+)\}", script.read_text())
    need(m is not None, f"{script.name}: no ${{{var}:-...}}")
    return m.group(1)


def apt_packages(stage):
    pkgs = []
    for ins, arg in stage["ins"]:
        if ins != "RUN":
            continue
        for cmd in re.split(r"&&|;|\|\|", arg):
            words = shlex.split(cmd)
            if len(words) >= 2 and words[0] in ("apt-get", "apt") and words[1] == "install":
                pkgs += [w for w in words[2:] if not w.startswith("-")]
    return pkgs


def ci_deps_packages():
    text = CI_DEPS.read_text()
    m = re.search(r"^pkgs=\(([^)]*)\)", text, re.M)
    need(m is not None, f"{CI_DEPS}: no pkgs=(...) array")
    words = [w for w in m.group(1).split() if not w.startswith("#")]
    need(words, f"{CI_DEPS}: empty pkgs array")
    return words


@check
def containerfile_is_multi_stage_on_bookworm():
    stages = containerfile_stages()
    need(len(stages) >= 2, f"Containerfile: {len(stages)} FROM, want a build and a run stage")
    need(stages[0]["from"].split()[0] == "debian:bookworm",
         f"Containerfile: the build stage is FROM {stages[0]['from']}, want debian:bookworm")
    need(stages[-1]["from"].split()[0] == "debian:bookworm-slim",
         f"Containerfile: the final stage is FROM {stages[-1]['from']}, want debian:bookworm-slim")


@check
def containerfile_build_stage_installs_ci_deps_and_runs_ci_build():
    stages = containerfile_stages()
    build = stages[0]
    want = ci_deps_packages()
    have = apt_packages(build)
    missing = [p for p in want if p not in have]
    need(not missing, f"Containerfile build stage misses .ci/deps packages {missing}")
    runs = " ".join(a for i, a in build["ins"] if i == "RUN")
    need(re.search(r"(^|[\s;&])(bash\s+)?\.ci/build\b", runs)
         or (re.search(r"\bmeson\s+setup\s+build\b", runs)
             and re.search(r"\bmeson\s+compile\s+-C\s+build\b", runs)),
         "Containerfile: the build stage runs neither .ci/build nor meson setup/compile in build/")
    m = re.match(r"\S+\s+AS\s+(\S+)", build["from"], re.I)
    need(m is not None, "Containerfile: the build stage has no name (FROM ... AS build)")
    copies = [a for i, a in stages[-1]["ins"] if i == "COPY" and f"--from={m.group(1)}" in a]
    need(copies, "Containerfile: the final stage copies nothing from the build stage")
    src, dst = copies[0].split()[-2:]
    need(src.endswith("/build/proxy/sluice"), f"Containerfile: copies {src}, not build/proxy/sluice")
    need(dst == IMAGE_SLUICE, f"Containerfile: installs {dst}, not {IMAGE_SLUICE}")
    execs = script_default(ENTRYPOINT_SCRIPT, "SLUICE_ENTRYPOINT_EXEC")
    need(execs == dst, f"entrypoint.sh starts {execs}; the binary is installed at {dst}")


def elf_needed(path):
    """DT_NEEDED entries of an ELF file, read with the stdlib (no binutils needed)."""
    data = Path(path).read_bytes()
    need(data[:4] == b"\x7fELF", f"{path} is not an ELF file")
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        sec = lambda i: struct.unpack_from(end + "IIQQQQIIQQ", data, shoff + i * shentsize)
        dyn_fmt = end + "qQ"
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sec = lambda i: struct.unpack_from(end + "IIIIIIIIII", data, shoff + i * shentsize)
        dyn_fmt = end + "iI"
    needed = []
    for i in range(shnum):
        s = sec(i)
        if s[1] != 6:  # SHT_DYNAMIC
            continue
        strtab_off = sec(s[6])[4]
        step = struct.calcsize(dyn_fmt)
        for off in range(s[4], s[4] + s[5], step):
            tag, val = struct.unpack_from(dyn_fmt, data, off)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                name_end = data.index(b"\0", strtab_off + val)
                needed.append(data[strtab_off + val:name_end].decode())
    return needed


@check
def containerfile_run_stage_has_every_library_sluice_links():
    final = containerfile_stages()[-1]
    have = apt_packages(final)
    need(have, "Containerfile: the final stage installs no packages")
    dev = [p for p in have if p.endswith("-dev") or p in ("gcc", "meson", "ninja-build", "pkg-config")]
    need(not dev, f"Containerfile: the final stage installs build tools {dev}")
    need("ca-certificates" in have, "Containerfile: no ca-certificates for an https upstream")
    libs = elf_needed(sluice_bin())
    missing, unknown = [], []
    for lib in libs:
        if BASE_LIBRARIES.match(lib) or SANITIZER_LIBRARIES.match(lib):
            continue
        pkg = BOOKWORM_PACKAGE_OF_LIBRARY.get(lib)
        if pkg is None:
            unknown.append(lib)
        elif pkg not in have:
            missing.append(f"{pkg} (for {lib})")
    need(not unknown, f"sluice links {unknown}: add their bookworm packages to "
         "BOOKWORM_PACKAGE_OF_LIBRARY and to the Containerfile's run stage")
    need(not missing, f"Containerfile: the final stage lacks {missing}")


@check
def containerfile_runs_as_numeric_non_root_user():
    user = final_instruction("USER").split(":")[0]
    need(user not in ("root", "0"), f"Containerfile: USER {user} is root")
    need(user.isdigit(), f"Containerfile: USER {user} is not numeric (runAsNonRoot cannot verify a name)")
    pod_uid = (k8s_pod().get("securityContext") or {}).get("runAsUser")
    need(pod_uid is None or str(pod_uid) == user, f"image USER {user} but the pod runs as {pod_uid}")


@check
def containerfile_exec_form_entrypoint_cmd_healthcheck():
    entry = containerfile_entrypoint()
    need(len(entry) == 1, f"Containerfile: ENTRYPOINT is {entry}, want the entry point script alone")
    need(containerfile_copied_to(entry[0]) == ENTRYPOINT_SCRIPT,
         f"Containerfile: ENTRYPOINT {entry[0]} is not deploy/entrypoint.sh")
    cmd = exec_form(final_instruction("CMD"), "CMD")
    opts, sub, _, rest = parse_sluice_args(cmd)
    need(sub is None and not rest, f"Containerfile: CMD is not proxy options: {cmd}")
    need(one(opts, "--policy", "CMD") == "/etc/sluice/policy.yaml", "Containerfile: CMD --policy path")
    key = one(opts, "--state-key-file", "CMD")
    need(key == "/run/secrets/sluice-state-key", "Containerfile: CMD --state-key-file path")
    need(f"default_key={key}\n" in ENTRYPOINT_SCRIPT.read_text(),
         f"entrypoint.sh does not treat {key} (the CMD's key) as the default key path")
    listen_port(opts, "CMD")
    hc = final_instruction("HEALTHCHECK")
    m = re.search(r"(?:^|\s)CMD\s+(\[.*\])\s*$", hc)
    need(m is not None, f"Containerfile: HEALTHCHECK has no exec-form CMD: {hc}")
    probe = exec_form(m.group(1), "HEALTHCHECK CMD")
    need(len(probe) == 1 and containerfile_copied_to(probe[0]) == HEALTHCHECK_SCRIPT,
         f"Containerfile: HEALTHCHECK is not deploy/healthcheck.sh (it finds the --listen port): {probe}")
    need(script_default(HEALTHCHECK_SCRIPT, "SLUICE_HEALTHCHECK_EXEC") == IMAGE_SLUICE,
         f"healthcheck.sh does not probe with {IMAGE_SLUICE}")
    for script in (ENTRYPOINT_SCRIPT, HEALTHCHECK_SCRIPT):
        need(os.access(script, os.X_OK), f"{script.name} is not executable (COPY keeps the mode)")
        need(script.read_text().startswith("#!/bin/sh\n"), f"{script.name}: not #!/bin/sh (the slim image has dash)")


def run_entrypoint(args, env=None):
    """deploy/entrypoint.sh with a recorder in place of sluice: (argv it passed on, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "rec"
        rec.write_text('#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done\n')
        rec.chmod(0o755)
        e = {k: v for k, v in os.environ.items() if k != "SLUICE_STATE_KEY"}
        e.update(env or {}, SLUICE_ENTRYPOINT_EXEC=str(rec))
        r = subprocess.run(["sh", str(ENTRYPOINT_SCRIPT)] + args, capture_output=True, text=True,
                           env=e, timeout=TIMEOUT)
    need(r.returncode == 0, f"entrypoint.sh {args} exited {r.returncode}: {r.stderr}")
    return r.stdout.splitlines(), r.stderr


@check
def entrypoint_starts_without_the_default_key_and_warns():
    cmd = exec_form(final_instruction("CMD"), "CMD")
    key = one(parse_sluice_args(cmd)[0], "--state-key-file", "CMD")
    if os.path.exists(key):
        return  # this machine has a key there: the case cannot be made without touching it
    without = [a for i, a in enumerate(cmd) if a != "--state-key-file" and (i == 0 or cmd[i - 1] != "--state-key-file")]
    argv, err = run_entrypoint(cmd)
    need(argv == without, f"entrypoint.sh passed {argv}, want {without}")
    line = json.loads(err.strip())   # the CMD says --log-format json: so is the warning
    need(line.get("level") == "warning" and "generated" in line.get("msg", ""),
         f"entrypoint.sh's warning: {err!r}")
    argv, err = run_entrypoint(cmd, {"SLUICE_STATE_KEY": "00" * 32})
    need(argv == without and "SLUICE_STATE_KEY" in err, f"with SLUICE_STATE_KEY: {argv} {err!r}")
    # Another key path, and the default path given to the upstream command, are left alone.
    for args in (["--state-key-file", "/nonexistent/key", "--listen", "127.0.0.1:0"],
                 ["--policy", "p.yaml", "node", "srv.js", "--state-key-file", key],
                 ["--policy", "p.yaml", "--", "srv", "--state-key-file", key]):
        argv, err = run_entrypoint(args)
        need(argv == args and err == "", f"entrypoint.sh changed {args} into {argv} ({err!r})")
    argv, err = run_entrypoint(["--state-key-file", key])
    need(argv == [] and err.startswith("sluice: warning: "), f"text log format: {argv} {err!r}")


@check
def healthcheck_probes_the_port_sluice_listens_on():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sluice_bin(), "--listen", f"127.0.0.1:{port}", "--log-level", "error"],
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        env = dict(os.environ, SLUICE_HEALTHCHECK_PID=str(proc.pid), SLUICE_HEALTHCHECK_EXEC=sluice_bin())
        for _ in range(100):  # up to 10 s for the listener
            r = subprocess.run(["sh", str(HEALTHCHECK_SCRIPT)], capture_output=True, text=True,
                               env=env, timeout=TIMEOUT)
            if r.returncode == 0 or proc.poll() is not None:
                break
            time.sleep(0.1)
        need(r.returncode == 0 and f"127.0.0.1:{port}/healthz" in r.stdout,
             f"healthcheck.sh on a sluice at 127.0.0.1:{port}: exit {r.returncode}: {r.stdout}{r.stderr}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    env["SLUICE_HEALTHCHECK_PID"] = str(os.getpid())   # python3: no --listen, nothing to probe
    r = subprocess.run(["sh", str(HEALTHCHECK_SCRIPT)], capture_output=True, text=True, env=env,
                       timeout=TIMEOUT)
    need(r.returncode == 0 and "no --listen" in r.stdout, f"healthcheck.sh without --listen: {r.stdout}{r.stderr}")


@check
def containerfile_expose_matches_k8s_port():
    ports = [p.split("/")[0] for a in (a for i, a in containerfile_stages()[-1]["ins"] if i == "EXPOSE")
             for p in a.split()]
    k8s = k8s_listen_port()
    need(ports == [str(k8s)], f"Containerfile: EXPOSE {ports}, the k8s example listens on {k8s}")


# ---- systemd ---------------------------------------------------------------------------------

class _MultiDict(dict):
    """configparser dict_type that keeps every value of a repeated key (ExecReload= twice)."""
    def __setitem__(self, key, value):
        if isinstance(value, list) and key in self:
            self[key].extend(value)
        else:
            super().__setitem__(key, value)


@lru_cache(maxsize=None)
def unit():
    text = re.sub(r"\\\n[ \t]*", " ", UNIT_FILE.read_text())  # systemd line continuations
    cp = configparser.ConfigParser(strict=False, interpolation=None, dict_type=_MultiDict,
                                   empty_lines_in_values=False, comment_prefixes=("#", ";"))
    cp.optionxform = str
    cp.read_string(text)
    for s in ("Unit", "Service", "Install"):
        need(cp.has_section(s), f"sluice.service: no [{s}] section")
    return cp


def unit_raw(key, section="Service"):
    """Every value given to key, in order ('' included), or [] when the key is absent."""
    if not unit().has_option(section, key):
        return []
    return [v.strip() for v in unit().get(section, key).split("\n")]


def unit_values(key, section="Service"):
    """The values in effect: an empty assignment (Key=) resets the list, as in systemd."""
    out = []
    for v in unit_raw(key, section):
        out = [] if v == "" else out + [v]
    return out


def unit_value(key, section="Service"):
    values = unit_values(key, section)
    need(values, f"sluice.service: no {key}=")
    return values[-1].strip()


def unit_sluice_argv(line):
    argv = shlex.split(line.lstrip("-@:+!"))
    need(argv and argv[0].startswith("/") and argv[0].endswith("/sluice"),
         f"sluice.service: {line!r} does not start sluice by absolute path")
    return argv


def unit_sluice_opts():
    argv = unit_sluice_argv(unit_value("ExecStart"))
    opts, sub, _, rest = parse_sluice_args(argv[1:])
    need(sub is None, "sluice.service: ExecStart runs a subcommand")
    return opts


@check
def systemd_execstart_listens_and_reads_key_credential():
    need(unit_value("Type") in ("simple", "exec"), f"sluice.service: Type={unit_value('Type')}")
    need(len(unit_values("ExecStart")) == 1, "sluice.service: more than one ExecStart=")
    opts = unit_sluice_opts()
    listen_port(opts, "ExecStart")
    key = one(opts, "--state-key-file", "ExecStart")
    m = re.fullmatch(r"(?:\$\{CREDENTIALS_DIRECTORY\}|\$CREDENTIALS_DIRECTORY|%d)/([^/]+)", key)
    need(m is not None, f"sluice.service: --state-key-file {key} is not in $CREDENTIALS_DIRECTORY")
    creds = [v.split(":", 1)[0] for v in unit_values("LoadCredential")]
    need(m.group(1) in creds, f"sluice.service: no LoadCredential={m.group(1)}:... (have {creds})")
    dyn = unit_values("DynamicUser")
    user = unit_values("User")
    need((dyn and dyn[-1] == "yes") or (user and user[-1] not in ("root", "0")),
         "sluice.service: neither DynamicUser=yes nor a non-root User=")


@check
def systemd_reload_sends_hup_after_checking_the_same_policy():
    reloads = unit_values("ExecReload")
    hup = False
    for line in reloads:
        argv = shlex.split(line.lstrip("-@:+!"))
        if argv and argv[0].endswith("/kill"):
            sig = {"-HUP", "-SIGHUP", "-1", "--signal=HUP", "-sHUP"}
            pairs = {" ".join(argv[i:i + 2]) for i in range(len(argv))}
            need(any(a in sig for a in argv) or pairs & {"-s HUP", "-s SIGHUP", "--signal HUP"},
                 f"sluice.service: ExecReload {line!r} does not send HUP")
            need(argv[-1] in ("$MAINPID", "${MAINPID}"), f"sluice.service: {line!r} not to $MAINPID")
            hup = True
        elif argv and argv[0].endswith("/sluice"):
            opts, sub, _, _ = parse_sluice_args(argv[1:])
            need(sub == "check", f"sluice.service: ExecReload runs sluice {sub}")
            need(one(opts, "--policy", "ExecReload") == one(unit_sluice_opts(), "--policy", "ExecStart"),
                 "sluice.service: ExecReload checks another policy than ExecStart loads")
    need(hup, "sluice.service: no ExecReload=/bin/kill -HUP $MAINPID")


@check
def systemd_stop_timeout_exceeds_drain_grace():
    sig = unit_values("KillSignal")
    need(not sig or sig[-1] in ("SIGTERM", "TERM", "15"), f"sluice.service: KillSignal={sig[-1] if sig else ''}")
    stop = timespan_seconds(unit_value("TimeoutStopSec"), "TimeoutStopSec")
    drain = drain_grace(unit_sluice_opts(), "ExecStart")
    need(stop > drain, f"sluice.service: TimeoutStopSec {stop}s <= --drain-grace {drain}")


@check
def systemd_hardening():
    want = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
            "PrivateTmp": "yes", "PrivateDevices": "yes", "RestrictNamespaces": "yes",
            "RestrictSUIDSGID": "yes", "LockPersonality": "yes", "CapabilityBoundingSet": ""}
    for key, value in want.items():
        raw = unit_raw(key)
        got = raw[-1] if raw else None
        need(got == value, f"sluice.service: {key}={got} (want {value!r})")
    fams = unit_value("RestrictAddressFamilies").split()
    need(fams and not fams[0].startswith("~") and set(fams) <= {"AF_INET", "AF_INET6", "AF_UNIX"},
         f"sluice.service: RestrictAddressFamilies={' '.join(fams)}")


# ---- the command line the manifests use ------------------------------------------------------

def all_sluice_invocations():
    """(where, [args after the binary]) for every sluice command line in deploy/."""
    out = []
    out.append(("Containerfile CMD", exec_form(final_instruction("CMD"), "CMD")))
    out.append(("k8s sluice args", [str(a) for a in k8s_sluice().get("args", [])]))
    svc = compose()["services"][SLUICE_CONTAINER]
    out.append(("compose command", [str(a) for a in svc.get("command", [])]))
    test = (svc.get("healthcheck") or {}).get("test") or []
    if len(test) > 1 and test[1] == IMAGE_SLUICE:
        out.append(("compose healthcheck", test[2:]))
    for key in ("ExecStartPre", "ExecStart", "ExecReload"):
        for line in unit_values(key):
            argv = shlex.split(line.lstrip("-@:+!"))
            if argv and argv[0].endswith("/sluice"):
                out.append((f"sluice.service {key}", argv[1:]))
    return out


@check
def sluice_help_lists_every_option_used_in_deploy():
    r = subprocess.run([sluice_bin(), "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    need(r.returncode == 0, f"sluice --help exited {r.returncode}")
    text = r.stdout + r.stderr
    missing = {}
    for where, args in all_sluice_invocations():
        opts, sub, _, _ = parse_sluice_args(args)
        words = list(opts) + ([f"sluice {sub}"] if sub else [])
        for w in words:
            pattern = r"(?<![\w-])" + re.escape(w).replace(r"\ ", r"\s+") + r"(?![\w-])"
            if not re.search(pattern, text):
                missing.setdefault(w, []).append(where)
    # The environment variables the examples hand to sluice must be ones it reads.
    envs = [("k8s sluice env", e["name"]) for e in k8s_sluice().get("env", []) or []]
    svc = compose()["services"][SLUICE_CONTAINER]
    envs += [("compose environment", n) for n in compose_environment(svc)]
    if compose_env_files(svc):
        envs.append(("compose env_file", STORE_PASSWORD_ENV))
    for where, name in envs:
        if name.startswith("SLUICE_") and not re.search(r"\$" + re.escape(name) + r"(?!\w)", text):
            missing.setdefault("$" + name, []).append(where)
    need(not missing, "not in `sluice --help`: " +
         "; ".join(f"{w} (used in {', '.join(sorted(set(ws)))})" for w, ws in sorted(missing.items())))


# ---- the example MCP server ----------------------------------------------------------------

EVERYTHING_FILE = DEPLOY / "mcp-everything" / "Containerfile"
EVERYTHING_POLICY = DEPLOY / "policy.everything.yaml"


@check
def examples_run_the_pinned_everything_server():
    text = EVERYTHING_FILE.read_text()
    m = re.search(r"^ARG EVERYTHING_VERSION=(\d+\.\d+\.\d+)$", text, re.M)
    need(m is not None, "mcp-everything/Containerfile: no exact EVERYTHING_VERSION")
    version = m.group(1)
    need(f'"@modelcontextprotocol/server-everything@${{EVERYTHING_VERSION}}"' in text,
         "mcp-everything/Containerfile does not install server-everything@$EVERYTHING_VERSION")
    want = f"mcp-server-everything:{version}"
    svc = compose()["services"]["mcp-server"]
    need(svc.get("image") == want, f"compose: mcp-server image {svc.get('image')}, want {want}")
    need((svc.get("build") or {}).get("dockerfile") == "deploy/mcp-everything/Containerfile",
         f"compose: mcp-server is not built from deploy/mcp-everything/Containerfile")
    others = [c for c in k8s_others() if c["name"] == "mcp-server"]
    need(others and others[0].get("image") == want, f"k8s: mcp-server image is not {want}")
    kust = yaml.safe_load(KUSTOMIZATION_FILE.read_text())
    tags = {i["name"]: str(i.get("newTag")) for i in kust.get("images", [])}
    need(tags.get("mcp-server-everything") == version,
         f"kustomization: mcp-server-everything newTag {tags.get('mcp-server-everything')}, want {version}")
    # The server is started over Streamable HTTP on the port sluice's --upstream names.
    for where, env, args, url in (
            ("compose", svc.get("environment") or {}, svc.get("command") or [],
             upstream_url(compose_sluice_opts(), "compose sluice command")),
            ("k8s", {e["name"]: e.get("value") for e in others[0].get("env", [])},
             others[0].get("args") or [], upstream_url(k8s_sluice_opts(), "k8s sluice args"))):
        need(str(env.get("PORT")) == str(url.port), f"{where}: the server's PORT {env.get('PORT')}, --upstream port {url.port}")
        need(url.path == "/mcp", f"{where}: --upstream path {url.path}, the server serves /mcp")
        need(args in ([], ["streamableHttp"]) and "CMD [\"streamableHttp\"]" in text,
             f"{where}: the server's arguments {args} are not the streamableHttp transport")


@check
def example_policies_are_the_everything_policy():
    want = yaml.safe_load(EVERYTHING_POLICY.read_text())
    k8s = yaml.safe_load(k8s_one("ConfigMap")["data"]["policy.yaml"])
    need(k8s == want, "k8s: the ConfigMap's policy differs from deploy/policy.everything.yaml")
    mounts = [v for v in compose()["services"][SLUICE_CONTAINER].get("volumes", [])
              if isinstance(v, dict) and v.get("target") == "/etc/sluice/policy.yaml"]
    need(mounts and (COMPOSE_FILE.parent / mounts[0]["source"]).resolve() == EVERYTHING_POLICY,
         "compose: /etc/sluice/policy.yaml is not deploy/policy.everything.yaml")
    r = subprocess.run([sluice_bin(), "check", "--policy", str(EVERYTHING_POLICY)],
                       capture_output=True, text=True, timeout=TIMEOUT)
    need(r.returncode == 0, f"sluice check {EVERYTHING_POLICY.name}: {r.stdout}{r.stderr}")


# ---- document references ---------------------------------------------------------------------

# Paths a reader is told to create (secrets), and build outputs: named, not shipped.
CREATED_BY_THE_READER = re.compile(r"(\.key|\.env|/out|\.deb)$|^build/|^proxy/sluice$|[*<>$]")
REPO_PATH = re.compile(r"(?<![\w./:@-])((?:deploy|tests|proxy|policy|docs|\.ci)/[\w.+/-]*[\w+])")
RELATIVE_PATH = re.compile(r"(?<![\w./-])(\.\.?/[\w.+/-]*[\w+])")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def documents():
    """The files whose references are checked: the READMEs and every text file under deploy/."""
    docs = [ROOT / "README.md"]
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and ".git" not in path.parts:
            try:
                path.read_text()
            except UnicodeDecodeError:
                continue
            docs.append(path)
    return docs


def md_anchors(path):
    """GitHub's heading slugs of a markdown file."""
    out = set()
    for line in path.read_text().splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


@check
def document_references_exist():
    broken = []
    for doc in documents():
        text = doc.read_text()
        rel = doc.relative_to(ROOT)
        for m in REPO_PATH.finditer(text):
            ref = m.group(1).rstrip(".")
            if re.match(r"\s*apiVersion:", text[text.rfind("\n", 0, m.start()) + 1:m.start()]):
                continue  # policy/v1 is an API group
            if not CREATED_BY_THE_READER.search(ref) and not (ROOT / ref).exists():
                broken.append(f"{rel}: {ref}")
        if doc.suffix == ".yaml" or doc.name == "Containerfile":  # paths their tools resolve
            for m in RELATIVE_PATH.finditer(text):
                ref = m.group(1).rstrip(".")
                if not CREATED_BY_THE_READER.search(ref) and not (doc.parent / ref).exists():
                    broken.append(f"{rel}: {ref}")
        if doc.suffix == ".md":
            for m in MD_LINK.finditer(text):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue  # a URL
                file, _, frag = target.partition("#")
                path = (doc.parent / file) if file else doc
                if not path.exists():
                    broken.append(f"{rel}: link to {target}")
                elif frag and path.suffix == ".md" and frag not in md_anchors(path):
                    broken.append(f"{rel}: link to {target} (no such heading)")
    # The deploy README's table of files names files of deploy/.
    in_table = False
    for line in (DEPLOY / "README.md").read_text().splitlines():
        in_table = line.startswith("| file |") or (in_table and line.startswith("|"))
        if in_table and line.startswith("| `"):
            for name in re.findall(r"`([^`\s]+)`", line.split("|")[1]):
                if not (DEPLOY / name).exists():
                    broken.append(f"deploy/README.md: table names {name}")
    need(not broken, "references to nothing:\n" + "\n".join(broken))


# ---- runner ----------------------------------------------------------------------------------

def main(argv):
    tap = "--tap" in argv
    names = [a for a in argv if a != "--tap"]
    selected = [c for c in CHECKS if not names or any(n in c.__name__ for n in names)]
    print(f"1..{len(selected)}")
    failed = 0
    for n, func in enumerate(selected, 1):
        try:
            func()
        except Failure as e:
            failed += 1
            print(f"not ok {n} - {func.__name__}")
            for line in str(e).splitlines():
                print(f"# {line}")
        except Exception as e:  # a file that does not parse, a missing key: a failure too
            failed += 1
            print(f"not ok {n} - {func.__name__}")
            print(f"# {type(e).__name__}: {e}")
        else:
            print(f"ok {n} - {func.__name__}")
    sys.stdout.flush()
    return 0 if tap or not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
