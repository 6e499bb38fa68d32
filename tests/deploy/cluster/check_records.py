#!/usr/bin/env python3
"""Every record of a run, counted per task: none lost, none twice.

  check_records.py EXPORT.jsonl SCORECARD.json [--expect-attempts NODE:SUITE>=N ...]

EXPORT.jsonl is `cmaxctl export RUN` (one ExportedRecord a line: taskId,
attempt, seq, node, suite, record); SCORECARD.json is `cmaxctl report RUN
--format json`. For each task's judged attempt (the scorecard's
nodes[].tasks[]: taskId, attempt, records), the exported records of that
(task, attempt) must number exactly `records`, with no (task, attempt, seq)
twice and seqs 1..n or 0..n-1 without a gap. Prints one line a task; exit 1
on any mismatch, with what is wrong.
"""
import collections
import json
import sys


def field(obj, camel, snake, default=""):
    return obj.get(camel, obj.get(snake, default))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    # (task, attempt, node, rank) -> seqs: each rank of each node numbers
    # its own records (its spool), so that is where a gap or a twin shows.
    seqs = collections.defaultdict(list)
    with open(sys.argv[1]) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"{sys.argv[1]}:{n}: not JSON: {e}")
                return 1
            key = (field(r, "taskId", "task_id"), int(r.get("attempt", 0) or 1),
                   r.get("node", ""), int(r.get("rank", 0) or 0))
            seqs[key].append(int(r.get("seq", 0)))
    with open(sys.argv[2]) as f:
        card = json.load(f)
    problems = []
    for (tid, attempt, node, rank), got in sorted(seqs.items()):
        dup = len(got) - len(set(got))
        where = f"{node} {tid} attempt {attempt} rank {rank}"
        if dup:
            problems.append(f"{where}: {dup} record(s) stored twice")
        s = sorted(set(got))
        if s and (s[0] not in (0, 1) or s != list(range(s[0], s[0] + len(s)))):
            missing = sorted(set(range(s[0], s[-1] + 1)) - set(s))[:10]
            problems.append(f"{where}: sequence has gaps (missing {missing})")
    tasks = 0
    for node in card.get("nodes", []):
        for t in node.get("tasks", []):
            tid, attempt = field(t, "taskId", "task_id"), int(t.get("attempt", 0) or 1)
            tasks += 1
            want = int(t.get("records", 0))
            on_node = sum(len(set(v)) for k, v in seqs.items()
                          if k[:3] == (tid, attempt, node.get("node")))
            in_task = sum(len(set(v)) for k, v in seqs.items() if k[:2] == (tid, attempt))
            line = (f"{node.get('node')} {t.get('suite')} {tid} attempt {attempt} "
                    f"{t.get('state')}: {on_node} exported from the node, {in_task} in the task, "
                    f"{want} counted")
            ok = want in (on_node, in_task)
            if not ok:
                problems.append(f"{line}: exported and counted differ")
            print(("ok   " if ok else "BAD  ") + line)
    if tasks == 0:
        problems.append("the scorecard lists no task at all")
    for p in problems:
        print("FAIL:", p)
    total = sum(len(v) for v in seqs.values())
    print(f"check_records: {tasks} tasks, {total} records exported, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
