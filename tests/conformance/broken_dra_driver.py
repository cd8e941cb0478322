#!/usr/bin/python3
"""broken_dra_driver: a small Kubernetes DRA driver for kdp-conformance's own tests.

Written directly against the kubelet's gRPC protos (no kdp SDK, no generated gRPC stubs: only
protoc's Python message classes, grpcio's generic handlers and python3-kubernetes), it also shows
that `kdp-conformance dra-driver` judges a driver written in another language. With no --defect
it does what the kubelet expects; `--defect NAME` gives it exactly one deliberate bug.
Runs on Debian 12's /usr/bin/python3 (python3-grpcio, python3-protobuf, python3-kubernetes).

Usage:
  /usr/bin/python3 broken_dra_driver.py --protos DIR --kubelet-root ROOT --cdi-root DIR
      --node-name NAME --kubeconfig FILE [--driver-name NAME] [--health-file FILE]
      [--devices N] [--shared-spec] [--defect NAME]

  --protos DIR        protoc --python_out of dra/v1, drahealth/v1 and pluginregistration/v1
  --kubelet-root ROOT serves ROOT/plugins/<driver>/dra.sock (DRA v1 + health), then registers
                      through ROOT/plugins_registry/<driver>-reg.sock; prepared claims are kept
                      in ROOT/plugins/<driver>/state.json
  --cdi-root DIR      one CDI spec per prepared claim: DIR/<driver>-<claim uid>.json, of kind
                      <driver>/dev
  --node-name NAME    the node: ResourceSlice <node>-<driver>, pool <node>, owned by the Node
  --kubeconfig FILE   the API server holding the Node, the slice and the ResourceClaims
  --driver-name NAME  default broken-dra.kdp.test
  --health-file FILE  device names one a line are unhealthy (re-read every 100 ms; missing: none)
  --devices N         devices dev0 .. dev{N-1} (default 4), attributes index (int), model (string)
  --shared-spec       also write DIR/<driver>-common.json at start, defining <driver>/dev=common,
                      which every prepared device names besides its own (as the dra-example-driver
                      does); it stays after unprepare
  --defect NAME       one deliberate bug (default none):
    no-owner           the ResourceSlice has no ownerReferences (the Node does not own it).
    bad-pool           the slice says resourceSliceCount 2, but the pool has only that one slice.
    bad-cdi            Prepare answers CDI IDs of kind <driver>/missing, which no spec defines.
    not-idempotent     Prepare of a claim already prepared answers
                       "claim <uid> is already prepared".
    leftover-cdi       Unprepare forgets the claim but leaves its CDI spec file.
    unknown-unprepare  Unprepare of a claim never prepared answers "unknown claim <uid>".
    forget-on-restart  no state file: after a restart, Unprepare of a claim prepared by the
                       previous instance answers OK but leaves its CDI spec.
    health-diff        after the first full list, health messages carry only the changed devices
                       (so no periodic refresh either: nothing changed).
    socket-left        on SIGTERM/SIGINT, exits 0 but leaves both socket files.
    crash-on-unknown   Unprepare of a claim never prepared kills the process (exit status 3).
    no-republish       publishes its slice once and never looks again: a slice the kubelet
                       deletes when it starts stays gone.
    stale-after-reboot Prepare of a claim it already prepared answers from its state without
                       writing the claim's CDI spec again (gone after a reboot).

Correct behaviour in short: the DRA socket serves before the registration socket appears; the
slice is kept published (created, or corrected, within about 1 s, e.g. after a kubelet restart
wiped it); Prepare is idempotent and remembered across restarts; Unprepare of an unknown claim
succeeds; each health message is the complete device list, sent at once, on every change and
every 10 s (the kubelet reads a device not reported for 30 s as Unknown); SIGTERM/SIGINT stop
registration first, remove both sockets and exit 0.
Exit status: 0 after SIGTERM/SIGINT, 1 when a socket cannot be served, 2 on bad usage.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from concurrent import futures

DEFECTS = ("none", "no-owner", "bad-pool", "bad-cdi", "not-idempotent", "leftover-cdi",
           "unknown-unprepare", "forget-on-restart", "health-diff", "socket-left",
           "crash-on-unknown", "no-republish", "stale-after-reboot")
HEALTH_POLL_S = 0.1
HEALTH_REFRESH_S = 10.0
SLICE_RETRY_S = 0.5
SLICE_RESYNC_S = 1.0
API_TIMEOUT_S = 5
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
LOG_LOCK = threading.Lock()


def log(msg):
    now = time.time()
    line = "%s.%03d broken-dra-driver: %s\n" % (time.strftime("%H:%M:%S", time.localtime(now)),
                                                int(now * 1000) % 1000, msg)
    with LOG_LOCK:  # it goes to a log file: one whole line at a time, flushed
        sys.stderr.write(line)
        sys.stderr.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description="A DRA driver with optional deliberate bugs.")
    for flag in ("--protos", "--kubelet-root", "--cdi-root", "--node-name", "--kubeconfig"):
        p.add_argument(flag, required=True)
    p.add_argument("--driver-name", default="broken-dra.kdp.test")
    p.add_argument("--health-file", default="")
    p.add_argument("--devices", type=int, default=4)
    p.add_argument("--shared-spec", action="store_true")
    p.add_argument("--defect", choices=DEFECTS, default="none")
    args = p.parse_args(argv)  # exits 2 on a missing flag or an unknown defect
    if args.devices < 1:
        p.error("--devices must be at least 1")
    return args


def write_atomic(path, data):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def remove_if_exists(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Api:
    """Raw calls (python3-kubernetes 22.6 has no resource.k8s.io/v1 models)."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config
        self.rest = client.rest
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.client = client.ApiClient(cfg)

    def call(self, method, path, body=None):
        """(status, object or error message); raises only when the server did not answer."""
        try:
            return 200, self.client.call_api(
                path, method, body=body, auth_settings=["BearerToken"], response_type="object",
                header_params={"Content-Type": "application/json", "Accept": "application/json"},
                _return_http_data_only=True, _request_timeout=API_TIMEOUT_S)
        except self.rest.ApiException as e:
            try:  # a Status object: its message says it best
                return e.status, json.loads(e.body)["message"]
            except (TypeError, ValueError, KeyError):
                return e.status, (e.body or e.reason)


class Driver:
    def __init__(self, args, dra_pb2, health_pb2, reg_pb2):
        self.args, self.defect = args, args.defect
        self.driver, self.node = args.driver_name, args.node_name
        self.dra_pb2, self.health_pb2, self.reg_pb2 = dra_pb2, health_pb2, reg_pb2
        self.devices = ["dev%d" % i for i in range(args.devices)]
        # --shared-spec: every device also names the spec written at start (as the
        # dra-example-driver's "common" device).
        self.shared_ids = [self.driver + "/dev=common"] if args.shared_spec else []
        self.plugin_dir = os.path.join(args.kubelet_root, "plugins", self.driver)
        self.dra_socket = os.path.join(self.plugin_dir, "dra.sock")
        self.state_path = os.path.join(self.plugin_dir, "state.json")
        name = re.sub(r"[^a-z0-9.-]", "-", ("%s-%s" % (self.node, self.driver)).lower())
        self.slice_name = name[:253].strip("-.") or "slice"  # a DNS subdomain
        self.stopping = threading.Event()
        self.lock = threading.Lock()  # guards claims, the state file and the CDI specs
        self.api, self.api_lock = None, threading.Lock()
        self.node_uid = None
        self.claims = {}  # claim uid -> {"namespace", "name", "devices": [Device fields]}
        if self.defect != "forget-on-restart":
            self.load_state()

    # ---- state and CDI ----

    def load_state(self):
        try:
            with open(self.state_path) as f:
                self.claims = json.load(f)["claims"]
            log("read %d prepared claim(s) from %s" % (len(self.claims), self.state_path))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as e:
            log("ignoring unreadable state file %s: %s" % (self.state_path, e))

    def save_state(self):
        if self.defect != "forget-on-restart":  # that one keeps claims in memory only
            write_atomic(self.state_path, json.dumps({"claims": self.claims}, indent=1))

    def spec_path(self, uid):
        return os.path.join(self.args.cdi_root, "%s-%s.json" % (self.driver, uid))

    def write_spec(self, uid, device_names):
        spec = {"cdiVersion": "0.6.0", "kind": self.driver + "/dev",
                "devices": [{"name": "%s-%s" % (uid, d),
                             "containerEdits": {"env": ["BROKEN_DRA_DEVICE=" + d]}}
                            for d in device_names]}
        write_atomic(self.spec_path(uid), json.dumps(spec, indent=1))

    # ---- Kubernetes API: the ResourceSlice ----

    def api_call(self, method, path, body=None):
        with self.api_lock:
            if self.api is None:
                self.api = Api(self.args.kubeconfig)
            api = self.api
        status = None
        try:
            status, obj = api.call(method, path, body)
            return status, obj
        finally:  # unanswered or 401: a restarted API may have a new port or token; reload
            if status in (None, 401):
                with self.api_lock:
                    if self.api is api:
                        self.api = None

    def desired_slice(self):
        meta = {"name": self.slice_name}
        if self.defect != "no-owner":
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self.node,
                                        "uid": self.node_uid, "controller": True}]
        count = 2 if self.defect == "bad-pool" else 1
        devices = [{"name": d, "attributes": {"index": {"int": i}, "model": {"string": "broken"}}}
                   for i, d in enumerate(self.devices)]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta,
                "spec": {"driver": self.driver, "nodeName": self.node,
                         "pool": {"name": self.node, "generation": 1, "resourceSliceCount": count},
                         "devices": devices}}

    @staticmethod
    def slice_key(s):
        """What this driver sets in a slice, to compare the stored one with the desired one."""
        owners = [(o.get("kind"), o.get("name"), o.get("uid"))
                  for o in (s.get("metadata", {}).get("ownerReferences") or [])]
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        devices = [(d.get("name"), json.dumps(d.get("attributes"), sort_keys=True))
                   for d in (spec.get("devices") or [])]
        return (owners, spec.get("driver"), spec.get("nodeName"), pool.get("name"),
                pool.get("resourceSliceCount"), devices)

    def read_node_uid(self):
        status, node = self.api_call("GET", "/api/v1/nodes/" + self.node)
        if status != 200:
            raise RuntimeError("GET node %s: %s %s" % (self.node, status, node))
        self.node_uid = node["metadata"]["uid"]

    def sync_slice(self):
        """One pass: create the slice when missing, correct it (PUT) when it differs."""
        path = SLICES + "/" + self.slice_name
        if self.node_uid is None:
            self.read_node_uid()
        status, current = self.api_call("GET", path)
        if status == 200 and self.slice_key(current) == self.slice_key(self.desired_slice()):
            return
        if status not in (200, 404):
            raise RuntimeError("GET %s: %s %s" % (path, status, current))
        self.read_node_uid()  # the Node may have been re-created (new uid) meanwhile
        want = self.desired_slice()
        if status == 404:  # a 409 (created meanwhile) fails this pass; the next one PUTs
            verb, status, obj = "POST", *self.api_call("POST", SLICES, want)
        else:  # e.g. left by an earlier instance: keep its resourceVersion
            want["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
            verb, status, obj = "PUT", *self.api_call("PUT", path, want)
        if status != 200:
            raise RuntimeError("%s %s: %s %s" % (verb, path, status, obj))
        log("%s ResourceSlice %s (pool %s, %d devices)" % (
            "created" if verb == "POST" else "updated", self.slice_name, self.node,
            len(self.devices)))

    def publish_loop(self):
        last_error = None
        while not self.stopping.is_set():
            try:
                self.sync_slice()
                last_error = None
                if self.defect == "no-republish":
                    return
                self.stopping.wait(SLICE_RESYNC_S)
            except Exception as e:  # the API may come up slowly: retry
                if str(e) != last_error:
                    log("publishing the ResourceSlice failed, retrying: %s" % e)
                    last_error = str(e)
                self.stopping.wait(SLICE_RETRY_S)

    # ---- DRAPlugin ----

    def prepare_claim(self, claim):
        uid, where = claim.uid, "resourceclaim %s/%s" % (claim.namespace, claim.name)
        known = self.claims.get(uid)
        if known is not None:
            if self.defect == "not-idempotent":
                raise RuntimeError("claim %s is already prepared" % uid)
            # The same answer again, and its spec should it be gone (a reboot empties the tmpfs).
            if known["devices"] and self.defect != "stale-after-reboot":
                self.write_spec(uid, [d["device_name"] for d in known["devices"]])
            return known["devices"]
        status, obj = self.api_call("GET", "/apis/resource.k8s.io/v1/namespaces/%s/"
                                    "resourceclaims/%s" % (claim.namespace, claim.name))
        if status != 200:
            raise RuntimeError("GET %s: %s %s" % (where, status, obj))
        if obj.get("metadata", {}).get("uid") != uid:
            raise RuntimeError("%s has uid %s, not %s" % (where, obj["metadata"].get("uid"), uid))
        allocation = (obj.get("status") or {}).get("allocation")
        if not allocation:
            raise RuntimeError("%s is not allocated" % where)
        results = [r for r in ((allocation.get("devices") or {}).get("results") or [])
                   if r.get("driver") == self.driver]
        kind = self.driver + ("/missing" if self.defect == "bad-cdi" else "/dev")
        devices = [{"request_names": [r["request"]], "pool_name": r["pool"],
                    "device_name": r["device"],
                    "cdi_device_ids": ["%s=%s-%s" % (kind, uid, r["device"])] + self.shared_ids}
                   for r in results]
        if devices:
            self.write_spec(uid, [d["device_name"] for d in devices])
        self.claims[uid] = {"namespace": claim.namespace, "name": claim.name, "devices": devices}
        self.save_state()
        return devices

    def NodePrepareResources(self, request, context):
        response = self.dra_pb2.NodePrepareResourcesResponse()
        for claim in request.claims:
            answer = response.claims[claim.uid]
            try:
                with self.lock:
                    devices = self.prepare_claim(claim)
                for d in devices:
                    answer.devices.add(**d)
                log("prepared claim %s/%s (%s): %s" % (claim.namespace, claim.name, claim.uid,
                                                       [d["device_name"] for d in devices]))
            except Exception as e:  # per-claim failures are answered, never fatal
                answer.error = str(e)
                log("prepare of claim %s failed: %s" % (claim.uid, e))
        return response

    def unprepare_claim(self, claim):
        uid = claim.uid
        known = uid in self.claims
        if not known and self.defect == "unknown-unprepare":
            raise RuntimeError("unknown claim %s" % uid)
        if not known and self.defect == "crash-on-unknown":
            log("unprepare of unknown claim %s: crashing (defect crash-on-unknown)" % uid)
            os._exit(3)
        # The spec's path is the claim's: it goes even when the claim is not known, except
        # under leftover-cdi (never) and forget-on-restart (only known ones).
        if self.defect != "leftover-cdi" and (known or self.defect != "forget-on-restart"):
            remove_if_exists(self.spec_path(uid))
        if known:
            del self.claims[uid]
            self.save_state()

    def NodeUnprepareResources(self, request, context):
        response = self.dra_pb2.NodeUnprepareResourcesResponse()
        for claim in request.claims:
            answer = response.claims[claim.uid]  # every requested uid is in the answer
            try:
                with self.lock:
                    self.unprepare_claim(claim)
                log("unprepared claim %s/%s (%s)" % (claim.namespace, claim.name, claim.uid))
            except Exception as e:
                answer.error = str(e)
                log("unprepare of claim %s failed: %s" % (claim.uid, e))
        return response

    # ---- DRAResourceHealth ----

    def unhealthy_now(self):
        try:
            with open(self.args.health_file) as f:
                names = {line.strip() for line in f}
        except OSError:  # no file (or no --health-file): all healthy
            return frozenset()
        return frozenset(d for d in self.devices if d in names)

    def health_message(self, unhealthy, only=None):
        pb = self.health_pb2
        msg = pb.NodeWatchResourcesResponse()
        now = int(time.time())
        for d in self.devices:
            if only is None or d in only:
                msg.devices.add(device=pb.DeviceIdentifier(pool_name=self.node, device_name=d),
                                health=pb.UNHEALTHY if d in unhealthy else pb.HEALTHY,
                                last_updated_time=now)
        return msg

    def NodeWatchResources(self, request, context):
        log("health stream opened")
        unhealthy = self.unhealthy_now()
        yield self.health_message(unhealthy)
        sent_at = time.monotonic()
        while not self.stopping.is_set() and context.is_active():
            self.stopping.wait(HEALTH_POLL_S)
            now_unhealthy = self.unhealthy_now()
            if now_unhealthy != unhealthy:
                only = (now_unhealthy ^ unhealthy) if self.defect == "health-diff" else None
                unhealthy = now_unhealthy
                log("health changed, unhealthy: %s" % sorted(unhealthy))
            elif self.defect == "health-diff" or time.monotonic() - sent_at < HEALTH_REFRESH_S:
                continue
            else:
                only = None  # the periodic refresh: the complete list again
            yield self.health_message(unhealthy, only)
            sent_at = time.monotonic()
        log("health stream closed")

    # ---- Registration ----

    def GetInfo(self, request, context):
        return self.reg_pb2.PluginInfo(type="DRAPlugin", name=self.driver, endpoint=self.dra_socket,
                                       supported_versions=["v1.DRAPlugin", "v1.DRAResourceHealth"])

    def NotifyRegistrationStatus(self, request, context):
        if request.plugin_registered:
            log("registered with the kubelet")
        else:
            log("registration failed: %s" % request.error)
        return self.reg_pb2.RegistrationStatusResponse()


def service_handler(grpc, module, service_name, impl):
    """A generic handler for `service_name` of the generated `module`: each RPC is impl.<name>."""
    service = module.DESCRIPTOR.services_by_name[service_name]
    handlers = {}
    for m in service.methods:
        make = (grpc.unary_stream_rpc_method_handler if m.server_streaming
                else grpc.unary_unary_rpc_method_handler)
        handlers[m.name] = make(getattr(impl, m.name),
                                request_deserializer=getattr(module, m.input_type.name).FromString,
                                response_serializer=lambda msg: msg.SerializeToString())
    return grpc.method_handlers_generic_handler(service.full_name, handlers)


def serve(grpc, path, handlers):
    remove_if_exists(path)  # a stale socket of an earlier instance
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers(handlers)
    if server.add_insecure_port("unix://" + path) == 0:
        raise RuntimeError("cannot listen on " + path)
    server.start()
    return server


def main(argv):
    args = parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    sys.path.insert(0, os.path.abspath(args.protos))
    import grpc
    from dra.v1 import api_pb2 as dra_pb2
    from drahealth.v1 import api_pb2 as health_pb2
    from pluginregistration.v1 import api_pb2 as reg_pb2

    args.kubelet_root = os.path.abspath(args.kubelet_root)
    args.cdi_root = os.path.abspath(args.cdi_root)
    driver = Driver(args, dra_pb2, health_pb2, reg_pb2)
    registry_dir = os.path.join(args.kubelet_root, "plugins_registry")
    for d in (driver.plugin_dir, registry_dir, args.cdi_root):
        os.makedirs(d, exist_ok=True)
    if args.shared_spec:  # one spec every claim's devices name, written at start
        write_atomic(os.path.join(args.cdi_root, args.driver_name + "-common.json"), json.dumps(
            {"cdiVersion": "0.6.0", "kind": args.driver_name + "/dev",
             "devices": [{"name": "common",
                          "containerEdits": {"env": ["BROKEN_DRA_COMMON=1"]}}]}, indent=1))
    reg_socket = os.path.join(registry_dir, args.driver_name + "-reg.sock")
    servers = []
    try:  # the DRA socket serves before the registration socket appears
        servers.append(serve(grpc, driver.dra_socket, [
            service_handler(grpc, dra_pb2, "DRAPlugin", driver),
            service_handler(grpc, health_pb2, "DRAResourceHealth", driver)]))
        log("serving DRA and health services on %s" % driver.dra_socket)
        publisher = threading.Thread(target=driver.publish_loop, daemon=True)
        publisher.start()
        servers.insert(0, serve(grpc, reg_socket,
                                [service_handler(grpc, reg_pb2, "Registration", driver)]))
        log("serving registration on %s (driver %s, node %s, %d devices, defect %s)" % (
            reg_socket, args.driver_name, args.node_name, args.devices, args.defect))
    except RuntimeError as e:
        log(str(e))
        for server in servers:
            server.stop(None)
        remove_if_exists(driver.dra_socket)
        return 1

    while not stop.wait(0.5):
        pass
    log("signal received, stopping")
    if args.defect == "socket-left":
        log("leaving %s and %s behind (defect socket-left)" % (reg_socket, driver.dra_socket))
        os._exit(0)  # skips gRPC's shutdown, which would unlink the sockets itself
    driver.stopping.set()  # ends the health streams and the publisher
    for server, path in zip(servers, (reg_socket, driver.dra_socket)):  # registration first
        server.stop(0.5).wait(2)
        remove_if_exists(path)
    publisher.join(1)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
