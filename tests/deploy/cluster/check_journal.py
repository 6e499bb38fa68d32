#!/usr/bin/env python3
"""The daemons' journals read the way an operator reads them.

  check_journal.py --token T [--token T2 ...] --key KEY.pem [--expect FILE:PRIO:REGEX ...]
                   [--earlier-version INVOCATION_ID ...] JOURNAL.json...

Each JOURNAL.json is `journalctl -u UNIT -o json` (one entry a line). Checks:
  - no entry holds a token or a line of the private key;
  - every line the cmax daemon wrote is one event: "[component] message"
    (its priority came through as a syslog prefix, its time is the
    journal's, no continuation lines);
  - each --expect FILE:PRIO:REGEX: an entry of the journal whose file name
    contains FILE, at exactly priority PRIO (3 error, 4 warning, 6 info),
    whose message matches REGEX (case-insensitive).
Entries of a unit invocation named by --earlier-version (the daemons of the
packages the upgrade replaced, _SYSTEMD_INVOCATION_ID) are checked for the
token and the key only: their format is that version's, not this one's.
Prints what it found; exit 1 with each failure.
"""
import argparse
import json
import re
import sys

DAEMONS = ("cmax-coordinator", "cmax-agent")
EVENT = re.compile(r"^\[[a-z0-9_.-]+\] \S")


def message(entry):
    m = entry.get("MESSAGE", "")
    if isinstance(m, list):  # journald's JSON gives non-UTF-8 as bytes
        m = bytes(m).decode("utf-8", "replace")
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", action="append", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--earlier-version", action="append", default=[])
    ap.add_argument("journals", nargs="+")
    a = ap.parse_args()
    key_lines = [l.strip() for l in open(a.key) if l.strip() and not l.startswith("-----")]
    failures = []
    entries = {}
    for path in a.journals:
        es = []
        with open(path) as f:
            for line in f:
                if line.strip():
                    es.append(json.loads(line))
        entries[path] = es
        daemon_lines = 0
        earlier = 0
        by_prio = {}
        for e in es:
            m = message(e)
            if any(t in m for t in a.token):
                failures.append(f"{path}: an entry holds a token: {m[:80]}...")
            if any(k in m for k in key_lines):
                failures.append(f"{path}: an entry holds a line of the private key")
            if e.get("_SYSTEMD_INVOCATION_ID") in a.earlier_version:
                earlier += 1
                continue
            if e.get("SYSLOG_IDENTIFIER") in DAEMONS or e.get("_COMM") in DAEMONS:
                daemon_lines += 1
                p = int(e.get("PRIORITY", 6))
                by_prio[p] = by_prio.get(p, 0) + 1
                if not EVENT.match(m):
                    failures.append(f"{path}: not one '[component] message' event: {m[:160]!r}")
        print(f"{path}: {len(es)} entries, {daemon_lines} from the daemon, by priority "
              + ", ".join(f"{p}: {n}" for p, n in sorted(by_prio.items()))
              + (f"; {earlier} from the version the upgrade replaced" if earlier else ""))
        if daemon_lines == 0:
            failures.append(f"{path}: the daemon wrote nothing to its journal")
    for x in a.expect:
        name, prio, regex = x.split(":", 2)
        rx = re.compile(regex, re.I)
        files = [p for p in entries if name in p]
        if not files:
            failures.append(f"--expect {x}: no journal named like {name}")
            continue
        hits = [(int(e.get("PRIORITY", 6)), message(e)) for p in files for e in entries[p]
                if rx.search(message(e))]
        right = [m for p, m in hits if p == int(prio)]
        if right:
            print(f"expected at priority {prio}: {right[0][:160]}")
        elif hits:
            failures.append(f"'{regex}' is logged at priority {hits[0][0]}, want {prio}: {hits[0][1][:160]}")
        else:
            failures.append(f"no entry of {name} matches '{regex}'")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
