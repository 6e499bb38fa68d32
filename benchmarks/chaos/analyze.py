#!/usr/bin/env python3
"""Summarises a chaos run's directory (benchmarks/chaos/run.sh --keep leaves
one): records expected, stored, lost and duplicated, runs completed, and the
time to recover after each kill or cut. Exit status 1 when anything was lost
or duplicated, or when a completed attempt did not declare what it wrote.

  benchmarks/chaos/analyze.py DIR

What it counts, per (task, attempt, rank):
  expected    a completed attempt: what the suite declared before writing
              (selftest --declare: a first record selftest_declared_records
              = every record it writes, itself included; expected = its seq +
              that count, so a record the agent wrote before it, such as a
              barrier task's cmax_task_start, counts too). An interrupted
              attempt (its agent killed, its task lost or retried) was cut
              short, so nothing says how much it wrote: expected = highest
              stored seq + 1, capped at what it declared; a gap is still lost.
  lost        expected seqs not stored.
  duplicated  a record stored more than once: rows of the export beyond
              distinct (task, attempt, rank, seq); seqs stored beyond what the
              attempt declared; and one selftest_sequence index stored under
              two seqs (the same line numbered twice after a rewind).
  resent      records the coordinator received again and its store dropped
              (its "records: N received, M new, K duplicates" log lines):
              expected after reconnects, shown, not an error.
"""
import json
import os
import re
import sys
from collections import defaultdict

DECLARED = "selftest_declared_records"
SEQUENCE = "selftest_sequence"
RESENT = re.compile(r"records: (\d+) received, (\d+) new, (\d+) duplicates")


def lines_of(path):
    return open(path) if os.path.exists(path) else []


def measurement(rec):
    return (rec.get("record") or {}).get("measurement") or {}


def main(d):
    events, seed = open(os.path.join(d, "meta")).read().split()
    runs = [l.strip() for l in lines_of(os.path.join(d, "runs.txt")) if l.strip()]
    expected = stored = lost = dup = late = 0
    undeclared = []  # completed attempts without a declaration
    completed = 0
    task_states = defaultdict(int)
    for run in runs:
        tasks, state = {}, ""
        for line in lines_of(os.path.join(d, "export", run + ".watch")):
            if not line.startswith("{"):
                continue  # watch --json prints JSON lines only, but be safe
            ev = json.loads(line)
            if "task" in ev and ev["task"].get("task_id"):
                tasks[ev["task"]["task_id"]] = ev["task"]
            if "run" in ev:
                state = ev["run"].get("state", "")
        completed += state == "completed"
        seqs = defaultdict(set)       # (task, attempt, rank) -> seqs stored
        rows = defaultdict(int)       # (task, attempt, rank) -> export rows
        declared = {}                 # (task, attempt, rank) -> (seq, count)
        index_seqs = defaultdict(lambda: defaultdict(set))  # key -> index -> seqs
        for line in lines_of(os.path.join(d, "export", run + ".jsonl")):
            if not line.strip():
                continue
            r = json.loads(line)
            k = (r["task_id"], int(r.get("attempt", 0)), int(r.get("rank", 0)))
            seq = int(r.get("seq", 0))
            seqs[k].add(seq)
            rows[k] += 1
            late += bool(r.get("late"))
            m = measurement(r)
            if m.get("metric") == DECLARED:
                declared[k] = (seq, int(float(m.get("value", 0))))
            elif m.get("metric") == SEQUENCE and "index" in (m.get("labels") or {}):
                index_seqs[k][m["labels"]["index"]].add(seq)
        for t in tasks.values():
            task_states[t.get("state", "?")] += 1
            final_attempt = int(t.get("attempt", 0))
            ranks = {k[2] for k in seqs if k[0] == t["task_id"]} | {0}
            for a in range(1, final_attempt + 1):
                for rank in sorted(ranks):
                    k = (t["task_id"], a, rank)
                    got = seqs.get(k, set())
                    decl = declared.get(k)
                    limit = decl[0] + decl[1] if decl else None
                    if a == final_attempt and t.get("state") == "TASK_COMPLETED":
                        if decl is None:
                            undeclared.append(f"{t['task_id']} attempt {a} rank {rank}")
                            exp = max(got) + 1 if got else 0
                        else:
                            exp = limit
                    else:
                        exp = max(got) + 1 if got else 0
                        if limit is not None:
                            exp = min(exp, limit)
                    expected += exp
                    stored += len(got)
                    lost += exp - len(got & set(range(exp)))
                    dup += rows.get(k, 0) - len(got)
                    if limit is not None:
                        dup += sum(1 for s in got if s >= limit)
                    dup += sum(len(s) - 1 for s in index_seqs.get(k, {}).values())
    resent = 0
    for line in lines_of(os.path.join(d, "coordinator.log")):
        m = RESENT.search(line)
        if m:
            resent += int(m.group(3))
    # Recovery times.
    prog = []
    for line in lines_of(os.path.join(d, "progress.log")):
        f = line.split()
        if not f:
            continue
        counts = {}  # sqlite3 prints "node|count"
        for x in f[1:]:
            if "|" in x:
                node, c = x.split("|")
                counts[node] = int(c)
        prog.append((float(f[0]), counts))
    worst, worst_what, recov = 0.0, "", []
    chaos = [l.split() for l in lines_of(os.path.join(d, "chaos.log")) if l.strip()]
    for j, e in enumerate(chaos):
        t0, who, what = float(e[0]), e[1], e[2]
        if what == "back":
            continue

        def total(c):
            return sum(c.values()) if who == "coordinator" else c.get(who, 0)

        before = [total(c) for (t, c) in prog if t <= t0]
        base = before[-1] if before else 0
        back = next((float(x[0]) for x in chaos[j + 1:] if x[1] == who and x[2] == "back"), t0)
        got = next((t for (t, c) in prog if t > back and total(c) > base), None)
        if got is None:
            recov.append((who, what, None))
            continue
        recov.append((who, what, got - t0))
        if got - t0 > worst:
            worst, worst_what = got - t0, f"{who} {what}"
    print(f"chaos run: seed {seed}, {events} events "
          f"({sum(1 for e in chaos if e[2] == 'kill' and e[1] == 'coordinator')} coordinator kills, "
          f"{sum(1 for e in chaos if e[2] == 'kill' and e[1] != 'coordinator')} agent kills, "
          f"{sum(1 for e in chaos if e[2] == 'cut')} link cuts)")
    print(f"runs completed:     {completed} of {len(runs)}")
    print("tasks:              " + ", ".join(
        f"{k.replace('TASK_', '').lower()} {v}" for k, v in sorted(task_states.items())))
    print(f"records expected:   {expected}")
    print(f"records stored:     {stored} ({late} flagged late)")
    print(f"records lost:       {lost}")
    print(f"records duplicated: {dup}")
    print(f"records resent:     {resent} (received again, stored once)")
    if undeclared:
        print(f"undeclared:         {len(undeclared)} completed attempts wrote no "
              f"{DECLARED} (first: {undeclared[0]}); their expected count is unknown")
    for who, what, s in recov:
        print(f"  recovery after {who} {what}: " + ("no progress seen" if s is None else f"{s:.1f} s"))
    print(f"worst recovery:     {worst:.1f} s ({worst_what})" if worst_what else "worst recovery:     n/a")
    return 1 if lost or dup or undeclared else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
