#!/usr/bin/env python3
"""Reads `cmaxctl remediation status --all --json` (stdin) for fault_loop_test.sh.

  incidents.py newest NODE FIELD          FIELD of NODE's newest incident ("" if none;
                                          NODE "" means any node)
  incidents.py count NODE                 how many incidents NODE has had
  incidents.py states                     "node state reason", one incident a line
  incidents.py timings NODE ROUND CLASS FAULT_NS
                                          a timings.tsv row for NODE's newest incident:
                                          seconds from the fault (made at FAULT_NS, Unix
                                          ns) to the signal's stamp on the node (signal),
                                          to the coordinator having it (detect), to the
                                          fence (quarantine), to the last fix step
                                          (repair) and to the return
  incidents.py header                     timings.tsv's first line
  incidents.py table                      timings.tsv (stdin) as median and worst per class
"""
import json
import statistics
import sys


def incidents(node=""):
    data = json.load(sys.stdin)
    return [i for i in data.get("incidents", []) if not node or i.get("node") == node]


def ns(inc, field):
    return int(inc.get(field, 0) or 0)


def newest(node):
    found = incidents(node)
    return max(found, key=lambda i: (ns(i, "detected_unix_ns"), i.get("incident_id", ""))) if found else None


PHASES = ["signal_unix_ns", "detected_unix_ns", "quarantined_unix_ns", "repaired_unix_ns",
          "closed_unix_ns"]
HEADER = ["round", "class", "node", "check", "signal_s", "detect_s", "quarantine_s", "repair_s",
          "return_s"]


def timings(node, round_, class_, fault_ns):
    inc = newest(node)
    if inc is None:
        sys.exit(f"no incident for {node}")
    row = [round_, class_, node, inc.get("check_id", "")]
    for field in PHASES:
        t = ns(inc, field)
        row.append(f"{(t - fault_ns) / 1e9:.2f}" if t else "-")
    print("\t".join(row))


def table():
    rows = [line.rstrip("\n").split("\t") for line in sys.stdin]
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(HEADER) and r[0].isdigit()]
    phases = header[4:]
    by_class = {}
    for r in body:
        by_class.setdefault((r[1], r[2], r[3]), []).append(r[4:])
    print("seconds after the fault was made on the node")
    print(f"{'class':<9} {'node':<6} {'check':<24} {'n':>2}  " +
          "  ".join(f"{p.replace('_s', ''):>17}" for p in phases))
    print(f"{'':<9} {'':<6} {'':<24} {'':>2}  " + "  ".join(f"{'median / worst':>17}" for _ in phases))
    for (class_, node, check), values in by_class.items():
        cells = []
        for k in range(len(phases)):
            xs = [float(v[k]) for v in values if v[k] != "-"]
            cells.append(f"{statistics.median(xs):7.2f} / {max(xs):7.2f}" if xs else f"{'-':>17}")
        print(f"{class_:<9} {node:<6} {check:<24} {len(values):>2}  " + "  ".join(f"{c:>17}" for c in cells))
    for r in rows[1:]:
        if r and r[0] == "quiet":
            print("quiet cluster: " + " ".join(r[1:]))


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "newest" and len(argv) == 4:
        inc = newest(argv[2])
        print("" if inc is None else inc.get(argv[3], ""))
    elif cmd == "count" and len(argv) == 3:
        print(len(incidents(argv[2])))
    elif cmd == "states" and len(argv) == 2:
        for i in incidents():
            print(i.get("node", ""), i.get("state", ""), i.get("reason", ""))
    elif cmd == "header" and len(argv) == 2:
        print("\t".join(HEADER))
    elif cmd == "timings" and len(argv) == 6:
        timings(argv[2], argv[3], argv[4], int(argv[5]))
    elif cmd == "table" and len(argv) == 2:
        table()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
