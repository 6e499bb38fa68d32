#!/usr/bin/env python3
"""benchmarks/chaos/analyze.py on crafted chaos directories: a clean run
passes; a lost record (also the last one, which the highest stored seq
cannot reveal), a record stored twice, a completed attempt without its
declaration each fail it.

  analyze_test.py PATH/TO/analyze.py
"""
import json
import os
import subprocess
import sys
import tempfile

ANALYZE = sys.argv[1]
failures = []


def record(task, attempt, seq, rec):
    return {"task_id": task, "attempt": attempt, "rank": 0, "seq": str(seq), "node": "node-0",
            "suite": "selftest", "record": rec, "late": False}


def declared(n):
    return {"measurement": {"suite": "selftest", "metric": "selftest_declared_records",
                            "value": n, "unit": "count"}}


def seqrec(i):
    return {"measurement": {"suite": "selftest", "metric": "selftest_sequence", "value": i,
                            "unit": "count", "labels": {"index": str(i)}}}


PROGRESS = {"progress": {"suite": "selftest", "phase": "done", "fraction": 1}}


def attempt_records(task, attempt, n, declare=True):
    """What selftest --declare --records=n writes: declaration, n, progress."""
    out = [declared(n + 2)] if declare else []
    out += [seqrec(i) for i in range(n)] + [PROGRESS]
    return [record(task, attempt, s, r) for s, r in enumerate(out)]


def analyze(name, rows, tasks, log="", want_rc=0, want=()):
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "export"))
        with open(os.path.join(d, "meta"), "w") as f:
            f.write("0 42\n")
        with open(os.path.join(d, "runs.txt"), "w") as f:
            f.write("r1\n")
        with open(os.path.join(d, "export", "r1.watch"), "w") as f:
            for t in tasks:
                f.write(json.dumps({"run": {"run_id": "r1", "state": "running"}, "task": t}) + "\n")
            f.write(json.dumps({"run": {"run_id": "r1", "state": "completed"}}) + "\n")
        with open(os.path.join(d, "export", "r1.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(d, "coordinator.log"), "w") as f:
            f.write(log)
        p = subprocess.run([sys.executable, ANALYZE, d], capture_output=True, text=True)
        ok = p.returncode == want_rc and all(w in p.stdout for w in want)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {p.returncode} (want {want_rc})")
        if not ok:
            failures.append(name)
            print(p.stdout + p.stderr)


def task(tid, attempt, state="TASK_COMPLETED"):
    return {"task_id": tid, "attempt": attempt, "state": state, "name": "stream"}


clean = attempt_records("t1", 1, 5)
analyze("a clean run passes", clean, [task("t1", 1)], want_rc=0,
        want=("records expected:   7", "records stored:     7", "records lost:       0",
              "records duplicated: 0"))

analyze("a record missing in the middle fails", clean[:3] + clean[4:], [task("t1", 1)],
        want_rc=1, want=("records lost:       1",))

analyze("the last record missing fails (the declaration, not the highest seq, counts)",
        clean[:-1], [task("t1", 1)], want_rc=1,
        want=("records expected:   7", "records lost:       1"))

analyze("an export row stored twice fails", clean + [clean[2]], [task("t1", 1)], want_rc=1,
        want=("records duplicated: 1",))

twice = clean[:-1] + [record("t1", 1, 6, seqrec(4)), record("t1", 1, 7, PROGRESS)]
analyze("a record stored again under a later seq fails", twice, [task("t1", 1)], want_rc=1,
        want=("records duplicated: 2",))

analyze("a completed attempt that declared nothing fails",
        attempt_records("t1", 1, 5, declare=False), [task("t1", 1)], want_rc=1,
        want=("undeclared:",))

interrupted = attempt_records("t1", 1, 5)[:4]  # killed after its third record
analyze("an interrupted attempt then a completed one passes",
        interrupted + attempt_records("t1", 2, 5), [task("t1", 2)], want_rc=0,
        want=("records expected:   11", "records lost:       0"))

analyze("records resent and dropped by the store are shown, not an error", clean,
        [task("t1", 1)],
        log="[info] agent node-0: records: 10 received, 7 new, 3 duplicates\n", want_rc=0,
        want=("records resent:     3",))

sys.exit(1 if failures else 0)
