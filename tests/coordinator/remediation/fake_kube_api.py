#!/usr/bin/env python3
"""A stand-in Kubernetes API server for fence_test (KubeFencer).

Serves one Node object on 127.0.0.1 (an ephemeral port) to the real kubectl:
  GET   /api/v1/nodes/NAME   the node's JSON
  PATCH /api/v1/nodes/NAME   merge patch, strategic merge patch or JSON patch
Any other path answers 404 with a Kubernetes Status object. Each request is
appended to --log as one JSON line {"method", "path", "content_type",
"body"}; after each change the node is written to --state. The port is
written to --port-file once listening. The server exits by itself after
--lifetime seconds (bounded even if the test dies) or on SIGTERM.

Formats (kubectl v1.32 client, seen with -v=8 against this server): cordon
and uncordon PATCH {"spec":{"unschedulable":true|null}} as a strategic
merge patch; taint and untaint PATCH the whole new {"spec":{"taints":[...]}}
list as a strategic merge patch (Node.spec.taints has no merge key, so the
list is replaced); annotate PATCHes {"metadata":{"annotations":{K:V|null}}}
as a merge patch. Before those kubectl reads /version, /api, /apis and
/api/v1 (discovery), answered below.
"""
import argparse
import copy
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

NODE = {}
# Discovery documents kubectl reads before its first request (unaggregated:
# kubectl falls back to these when the reply is plain application/json).
DISCOVERY = {
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
         "verbs": ["get", "list", "patch", "update"], "shortNames": ["no"]}]},
}
LOCK = threading.Lock()
ARGS = None


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def strategic_merge(target, patch):
    """What the API server does for a Node: maps merged, null deletes; lists
    (spec.taints has no patch strategy in the Node type) replaced whole."""
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict):
            target[k] = strategic_merge(target.get(k), v)
        else:
            target[k] = copy.deepcopy(v)
    return target


def json_patch(doc, ops):
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            else:
                parent.pop(last, None)
    return doc


def apply_patch(content_type, body):
    global NODE
    patch = json.loads(body or b"{}")
    if content_type.startswith("application/strategic-merge-patch+json"):
        NODE = strategic_merge(NODE, patch)
    elif content_type.startswith("application/merge-patch+json"):
        NODE = merge_patch(NODE, patch)
    elif content_type.startswith("application/json-patch+json"):
        NODE = json_patch(NODE, patch)
    else:
        return False
    rv = int(NODE["metadata"].get("resourceVersion", "1")) + 1
    NODE["metadata"]["resourceVersion"] = str(rv)
    with open(ARGS.state, "w") as f:
        json.dump(NODE, f)
    return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self, body):
        entry = {"method": self.command, "path": self.path,
                 "content_type": self.headers.get("Content-Type", ""),
                 "body": body.decode("utf-8", "replace")}
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def not_found(self):
        self.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "message": "the server could not find the requested resource",
                         "reason": "NotFound", "code": 404})

    def node_path(self):
        path = self.path.split("?")[0]
        return path == "/api/v1/nodes/" + NODE["metadata"]["name"]

    def do_GET(self):
        self.record(b"")
        with LOCK:
            path = self.path.split("?")[0]
            if self.node_path():
                self.reply(200, NODE)
            elif path in DISCOVERY:
                self.reply(200, DISCOVERY[path])
            else:
                self.not_found()

    def do_PATCH(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.record(body)
        with LOCK:
            if not self.node_path():
                return self.not_found()
            if not apply_patch(self.headers.get("Content-Type", ""), body):
                return self.reply(415, {"kind": "Status", "status": "Failure",
                                        "code": 415, "message": "unsupported patch type"})
            self.reply(200, NODE)


def main():
    global ARGS, NODE
    p = argparse.ArgumentParser()
    p.add_argument("--node", required=True, help="file with the node's initial JSON")
    p.add_argument("--state", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--lifetime", type=float, default=120)
    ARGS = p.parse_args()
    with open(ARGS.node) as f:
        NODE = json.load(f)
    with open(ARGS.state, "w") as f:
        json.dump(NODE, f)
    server = HTTPServer(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    threading.Timer(ARGS.lifetime, lambda: server.shutdown()).start()
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    server.serve_forever()
    os._exit(0)


if __name__ == "__main__":
    main()
