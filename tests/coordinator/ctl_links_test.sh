#!/usr/bin/env bash
# cmaxctl is a client: it must not carry the coordinator daemon's code (the
# core, store, scheduler, registry, rendezvous: cmax_coordinator) nor SQLite.
# Issue 16 item 4. Reads the linked binary's symbols, so a link to the
# daemon library that pulls any of its objects in fails here.
#   ctl_links_test.sh BINARY
set -euo pipefail
bin=$1
[[ -x $bin ]] || { echo "FAIL: $bin is not an executable" >&2; exit 1; }
syms=$(nm -C "$bin")
# Nothing of namespace cmax::coordinator: the task-state names cmaxctl
# shares with the daemon are common/task_state.h's (namespace cmax).
daemon=$(grep -E ' [TtWwBbDdRrVv] .*cmax::coordinator::' <<<"$syms" || true)
sqlite=$(grep -E '\bsqlite3_' <<<"$syms" || true)
rc=0
if [[ -n $daemon ]]; then
  echo "FAIL: $bin defines $(wc -l <<<"$daemon") symbols of the coordinator daemon" \
    "(cmax::coordinator), e.g.:" >&2
  head -5 <<<"$daemon" >&2
  echo "fix: link cmaxctl to the libraries it needs (coordinator/ctl/CMakeLists.txt), not" \
    "cmax_coordinator" >&2
  rc=1
fi
if [[ -n $sqlite ]]; then
  echo "FAIL: $bin uses SQLite (the coordinator's store), e.g.:" >&2
  head -3 <<<"$sqlite" >&2
  rc=1
fi
[[ $rc == 0 ]] && echo "ok: $bin carries no coordinator daemon code and no SQLite"
exit $rc
