#!/usr/bin/env python3
"""Summarises a chaos run's directory (benchmarks/chaos/run.sh --keep leaves
one): records expected, stored, lost and duplicated, runs completed, and the
time to recover after each kill or cut. Exit status 1 when anything was lost
or duplicated.

  benchmarks/chaos/analyze.py DIR
"""
import json, os, sys
from collections import defaultdict
d = sys.argv[1]
events, seed = open(os.path.join(d, "meta")).read().split()
known = {"stream": 2001, "pause": 2, "burst": 1001}  # records + progress lines
runs = [l.strip() for l in open(os.path.join(d, "runs.txt")) if l.strip()]
expected = stored = lost = dup = late = 0
completed = 0
task_states = defaultdict(int)
for run in runs:
    tasks, state = {}, ""
    for line in open(os.path.join(d, "export", run + ".watch")):
        if not line.startswith("{"): continue  # watch --json also prints progress lines
        ev = json.loads(line)
        if "task" in ev: tasks[ev["task"]["task_id"]] = ev["task"]
        if "run" in ev: state = ev["run"].get("state", "")
    completed += state == "completed"
    keys = defaultdict(set); rows = defaultdict(int)
    for line in open(os.path.join(d, "export", run + ".jsonl")):
        if not line.strip(): continue
        r = json.loads(line)
        k = (r["task_id"], int(r.get("attempt", 0)), int(r.get("rank", 0)))
        keys[k].add(int(r.get("seq", 0))); rows[k] += 1
        late += bool(r.get("late"))
    for t in tasks.values():
        task_states[t.get("state", "?")] += 1
        final_attempt = int(t.get("attempt", 0))
        for a in range(1, final_attempt + 1):
            k = (t["task_id"], a, 0)
            seqs = keys.get(k, set())
            if a == final_attempt and t.get("state") == "TASK_COMPLETED":
                exp = known[t["name"]]
            else:
                exp = max(seqs) + 1 if seqs else 0
            expected += exp
            stored += len(seqs)
            lost += exp - len(seqs & set(range(exp)))
            dup += rows.get(k, 0) - len(seqs)
# Recovery times.
prog = []
for line in open(os.path.join(d, "progress.log")):
    f = line.split()
    counts = {}  # sqlite3 prints "node|count" 
    for x in f[1:]:
        if "|" in x:
            node, c = x.split("|"); counts[node] = int(c)
    prog.append((float(f[0]), counts))
worst, worst_what, recov = 0.0, "", []
chaos = [l.split() for l in open(os.path.join(d, "chaos.log"))] if os.path.exists(os.path.join(d, "chaos.log")) else []
for j, e in enumerate(chaos):
    t0, who, what = float(e[0]), e[1], e[2]
    if what == "back": continue
    def total(c): return sum(c.values()) if who == "coordinator" else c.get(who, 0)
    before = [total(c) for (t, c) in prog if t <= t0]
    base = before[-1] if before else 0
    back = next((float(x[0]) for x in chaos[j + 1:] if x[1] == who and x[2] == "back"), t0)
    got = next((t for (t, c) in prog if t > back and total(c) > base), None)
    if got is None:
        recov.append((who, what, None)); continue
    recov.append((who, what, got - t0))
    if got - t0 > worst: worst, worst_what = got - t0, f"{who} {what}"
print(f"chaos run: seed {seed}, {events} events "
      f"({sum(1 for e in chaos if e[2] == 'kill' and e[1] == 'coordinator')} coordinator kills, "
      f"{sum(1 for e in chaos if e[2] == 'kill' and e[1] != 'coordinator')} agent kills, "
      f"{sum(1 for e in chaos if e[2] == 'cut')} link cuts)")
print(f"runs completed:     {completed} of {len(runs)}")
print(f"tasks:              " + ", ".join(f"{k.replace('TASK_', '').lower()} {v}" for k, v in sorted(task_states.items())))
print(f"records expected:   {expected}")
print(f"records stored:     {stored} ({late} flagged late)")
print(f"records lost:       {lost}")
print(f"records duplicated: {dup}")
for who, what, s in recov:
    print(f"  recovery after {who} {what}: " + ("no progress seen" if s is None else f"{s:.1f} s"))
print(f"worst recovery:     {worst:.1f} s ({worst_what})" if worst_what else "worst recovery:     n/a")
sys.exit(1 if lost or dup else 0)
