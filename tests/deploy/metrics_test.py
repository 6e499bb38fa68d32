#!/usr/bin/env python3
"""--metrics-listen as Prometheus meets it, against the real programs.

A coordinator and an agent on loopback, each with --metrics-listen; a small
plan run through cmaxctl so there is a scorecard. Then:
  - both outputs pass `promtool check metrics`, and carry the series the
    docs/prometheus.md names (agents by state, tasks, records, the ingest histogram,
    store size, the last scorecard's tier, grades and verdicts; the agent's
    children, unacknowledged records, spool bytes, last task end per suite);
  - no token or a wrong token is 401, a path other than /metrics is 404;
  - a real Prometheus (Debian's package) started here scrapes both with the
    token from a credentials_file and answers queries for their series;
  - every expression of deploy/grafana/cmax.json is accepted by that
    Prometheus and names only metrics the endpoints serve;
  - over TLS (the coordinator's own certificate) /metrics is HTTPS;
  - bad --metrics-listen values and a non-loopback address without TLS are
    refused at start with a clear message.
Traffic stays on 127.0.0.1.

  metrics_test.py --source-dir DIR --bin-dir DIR
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, token=None, ctx=None, timeout=10):
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, OSError) as e:
        return 0, str(e)  # not listening (yet), refused, timed out


def wait_line(path, pattern, proc, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path):
            m = re.search(pattern, open(path).read())
            if m:
                return m
        if proc.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def families(text):
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, argv, out, err, env=None):
        p = subprocess.Popen(argv, stdout=open(out, "w"), stderr=open(err, "w"), env=env)
        self.procs.append(p)
        return p

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--bin-dir", required=True)
    a = ap.parse_args()
    for prog in ("promtool", "prometheus"):
        if not shutil.which(prog):
            print(f"metrics_test: {prog} is missing: run deploy/install-deps.sh --with-tests")
            return 1
    b = lambda n: os.path.join(a.bin_dir, n)
    tmp = tempfile.mkdtemp(prefix="cmax-metrics-")
    procs = Procs()
    try:
        return run(a, b, tmp, procs)
    finally:
        procs.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, b, tmp, procs):
    token = "metrics-test-" + os.urandom(8).hex()
    tok = os.path.join(tmp, "token")
    with open(tok, "w") as f:
        f.write(token + "\n")
    os.chmod(tok, 0o600)
    env = dict(os.environ, CMAX_TOKEN_FILE=tok)

    # Refused at start: a bad address, and beyond loopback without TLS.
    for listen, want in (("nonsense", "expected HOST:PORT or PORT"),
                         ("0.0.0.0:0", "is not loopback")):
        r = subprocess.run([b("cmax-coordinator"), "--data-dir", os.path.join(tmp, "bad"),
                            "--token-file", tok, "--listen", "127.0.0.1:0",
                            "--metrics-listen", listen], capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and want in r.stderr,
              f"coordinator --metrics-listen {listen}: exit {r.returncode}, {r.stderr.strip()[-300:]}")
    r = subprocess.run([b("cmax-agent"), "--coordinator", "127.0.0.1:1", "--node-name", "x",
                        "--work-dir", os.path.join(tmp, "badagent"), "--metrics-listen", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=30, env=env)
    check(r.returncode == 2 and "is not loopback" in r.stderr,
          f"agent --metrics-listen 0.0.0.0:0: exit {r.returncode}, {r.stderr.strip()[-300:]}")

    # Allowed with --allow-insecure, and said in the log as the gRPC
    # listener says it (started, read, stopped: no traffic is sent to it).
    ins = procs.start([b("cmax-coordinator"), "--data-dir", os.path.join(tmp, "insecure"),
                       "--token-file", tok, "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0",
                       "--allow-insecure"],
                      os.path.join(tmp, "ins.out"), os.path.join(tmp, "ins.log"))
    m = wait_line(os.path.join(tmp, "ins.log"),
                  r"INSECURE: --allow-insecure: --metrics-listen 0\.0\.0\.0:\d+ serves plain HTTP", ins)
    check(m, "--allow-insecure metrics: no INSECURE line: " +
          (open(os.path.join(tmp, "ins.log")).read()[-500:] if os.path.exists(os.path.join(tmp, "ins.log")) else ""))
    ins.terminate()
    ins.wait(timeout=30)

    c = procs.start([b("cmax-coordinator"), "--data-dir", os.path.join(tmp, "data"), "--token-file", tok,
                     "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"],
                    os.path.join(tmp, "c.out"), os.path.join(tmp, "c.log"))
    m = wait_line(os.path.join(tmp, "c.out"), r"listening on (127\.0\.0\.1:\d+)", c)
    if not check(m, "coordinator did not start: " + open(os.path.join(tmp, "c.log")).read()[-800:]):
        return report()
    addr = m.group(1)
    cport = int(re.search(r"metrics on 127\.0\.0\.1:(\d+)", open(os.path.join(tmp, "c.out")).read()).group(1))
    ag = procs.start([b("cmax-agent"), "--coordinator", addr, "--node-name", "node-m",
                      "--work-dir", os.path.join(tmp, "agent"), "--advertise", "127.0.0.1",
                      "--metrics-listen", "127.0.0.1:0"],
                     os.path.join(tmp, "a.out"), os.path.join(tmp, "a.log"), env=env)
    m = wait_line(os.path.join(tmp, "a.out"), r"metrics on 127\.0\.0\.1:(\d+)", ag)
    if not check(m, "agent did not start: " + open(os.path.join(tmp, "a.log")).read()[-800:]):
        return report()
    aport = int(m.group(1))
    curl = f"http://127.0.0.1:{cport}/metrics"
    aurl = f"http://127.0.0.1:{aport}/metrics"

    # Authentication and routing.
    for url in (curl, aurl):
        check(get(url)[0] == 401, f"{url} without a token is not 401")
        check(get(url, "wrong")[0] == 401, f"{url} with a wrong token is not 401")
        check(get(url.replace("/metrics", "/"), token)[0] == 404, f"{url}: / is not 404")

    # A run, so tasks end, records are stored and a scorecard exists.
    plan = os.path.join(tmp, "plan.yaml")
    with open(plan, "w") as f:
        f.write("name: metrics\nsuites:\n  - suite: hostcheck\n  - suite: selftest\n"
                "    params: {mode: records, records: 50}\n")
    r = subprocess.run([b("cmaxctl"), "--coordinator", addr, "run", "--plan", plan],
                       capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode in (0, 1, 4), f"cmaxctl run: exit {r.returncode}: {r.stdout[-500:]}{r.stderr[-500:]}")
    time.sleep(1.2)  # the agent's stats refresh twice a second

    st, ctext = get(curl, token)
    check(st == 200, f"coordinator /metrics: {st}")
    st, atext = get(aurl, token)
    check(st == 200, f"agent /metrics: {st}")
    for name, text in (("coordinator", ctext), ("agent", atext)):
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        check(p.returncode == 0, f"promtool check metrics ({name}): {p.stdout}{p.stderr}")
    want_c = {"cmax_agents", "cmax_tasks", "cmax_runs_active", "cmax_runs_ended_total",
              "cmax_records_stored_total", "cmax_record_batch_ingest_seconds", "cmax_store_bytes",
              "cmax_scorecard_tier", "cmax_scorecard_category_grade",
              "cmax_scorecard_category_points", "cmax_scorecard_node_verdict"}
    check(want_c <= families(ctext), f"coordinator lacks {sorted(want_c - families(ctext))}")
    want_a = {"cmax_agent_connected", "cmax_agent_children_running", "cmax_agent_records_unacked",
              "cmax_agent_spool_bytes", "cmax_agent_last_task_end_timestamp_seconds"}
    check(want_a <= families(atext), f"agent lacks {sorted(want_a - families(atext))}")
    stored = re.search(r"^cmax_records_stored_total (\d+)", ctext, re.M)
    check(stored and int(stored.group(1)) >= 50, f"records stored: {stored and stored.group(1)}")
    check(re.search(r'^cmax_scorecard_node_verdict\{run="r[^"]+",node="node-m",verdict="\w+"\} 1$',
                    ctext, re.M), "no verdict for node-m in the coordinator's metrics")
    check(re.search(r'^cmax_agent_last_task_end_timestamp_seconds\{suite="selftest"\} \d', atext, re.M),
          "the agent does not say when selftest last ended")
    check(re.search(r"^cmax_agent_connected 1$", atext, re.M), "the agent does not say it is connected")
    check(re.search(r'^cmax_agents\{state="connected"\} 1$', ctext, re.M), "coordinator: not 1 agent connected")

    # A real Prometheus scrapes both with the token.
    pport = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: cmax-coordinator
    authorization: {{credentials_file: {tok}}}
    static_configs: [{{targets: ["127.0.0.1:{cport}"]}}]
  - job_name: cmax-agent
    authorization: {{credentials_file: {tok}}}
    static_configs: [{{targets: ["127.0.0.1:{aport}"]}}]
""")
    p = subprocess.run(["promtool", "check", "config", cfg], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, f"promtool check config: {p.stdout}{p.stderr}")
    prom = procs.start(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/tsdb",
                        f"--web.listen-address=127.0.0.1:{pport}"],
                       os.path.join(tmp, "p.out"), os.path.join(tmp, "p.log"))
    api = f"http://127.0.0.1:{pport}/api/v1/query?query="

    def query(q):
        st, body = get(api + urllib.parse.quote(q))
        try:
            return st, json.loads(body)
        except ValueError:
            return st, {"status": "error", "error": body[:200]}

    got = {}
    deadline = time.time() + 60
    while time.time() < deadline and prom.poll() is None:
        for q in ('up{job="cmax-coordinator"} == 1', 'up{job="cmax-agent"} == 1',
                  'cmax_agents{state="connected"}', "cmax_agent_connected"):
            st, body = query(q)
            if st == 200 and body.get("status") == "success" and body["data"]["result"]:
                got[q] = body["data"]["result"]
        if len(got) == 4:
            break
        time.sleep(1)
    check(prom.poll() is None, "prometheus exited: " + open(os.path.join(tmp, "p.log")).read()[-800:])
    check(len(got) == 4, f"prometheus answered only {sorted(got)} within 60 s")
    connected = got.get('cmax_agents{state="connected"}')
    if connected:
        check(connected[0]["value"][1] == "1", f"prometheus: connected agents {connected}")

    # The Grafana dashboard: every expression parses in Prometheus and names
    # only metrics the endpoints serve.
    dash = json.load(open(os.path.join(a.source_dir, "deploy", "grafana", "cmax.json")))
    served = families(ctext) | families(atext)
    exprs = [t["expr"] for pnl in dash["panels"] for t in pnl.get("targets", [])]
    check(len(exprs) >= 10, f"dashboard has {len(exprs)} expressions")
    for e in exprs:
        for name in re.findall(r"\b(cmax_[a-z_]+)", e):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            check(name in served or base in served, f"dashboard uses {name}, which nothing serves ({e})")
        st, body = query(e)
        check(st == 200 and body.get("status") == "success",
              f"prometheus refused the dashboard expression {e}: {body.get('error')}")

    # TLS: the coordinator's own certificate serves /metrics over HTTPS.
    certs = os.path.join(tmp, "tls")
    subprocess.run([os.path.join(a.source_dir, "deploy", "gen-certs.sh"), certs, "localhost,127.0.0.1"],
                   check=True, capture_output=True, timeout=120)
    t = procs.start([b("cmax-coordinator"), "--data-dir", os.path.join(tmp, "data-tls"), "--token-file", tok,
                     "--listen", "127.0.0.1:0", "--tls-cert", os.path.join(certs, "server.pem"),
                     "--tls-key", os.path.join(certs, "server.key"), "--metrics-listen", "127.0.0.1:0"],
                    os.path.join(tmp, "t.out"), os.path.join(tmp, "t.log"))
    m = wait_line(os.path.join(tmp, "t.out"), r"metrics on 127\.0\.0\.1:(\d+)", t)
    if check(m, "TLS coordinator did not start: " + open(os.path.join(tmp, "t.log")).read()[-500:]):
        ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
        st, body = get(f"https://127.0.0.1:{m.group(1)}/metrics", token, ctx=ctx)
        check(st == 200 and "cmax_agents" in body, f"HTTPS /metrics: {st}")
        st, _ = get(f"http://127.0.0.1:{m.group(1)}/metrics", token, timeout=5)
        check(st != 200, "plain HTTP was served by the TLS endpoint")
    return report()


def report():
    if FAILURES:
        print(f"metrics_test: {len(FAILURES)} failures")
        return 1
    print("metrics_test: every check holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
