#!/usr/bin/env bash
# Tests leave nothing behind (issue 33, item 5): lists the /tmp/cmax* files
# and folders made or changed since tests/run.sh started its ctest (the mark
# in CMAX_TEST_RUN_STARTED) and fails when there is any. tests/run.sh runs it
# after every other test (label "last"); run by hand without the mark it
# cannot tell old from new and says it skipped (77).
#   CMAX_TEST_RUN_STARTED=FILE tests/tmp_leftovers_test.sh
set -uo pipefail
mark=${CMAX_TEST_RUN_STARTED:-}
if [[ -z $mark || ! -e $mark ]]; then
  echo "skipped: no CMAX_TEST_RUN_STARTED mark; run it through tests/run.sh, which marks when its tests start"
  exit 77
fi
left=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -mindepth 1 -name 'cmax*' -newer "$mark" -user "$(id -u)" 2>/dev/null | sort)
if [[ -n $left ]]; then
  echo "FAIL: the tests left these behind in ${TMPDIR:-/tmp} (made or changed since $(date -r "$mark" +%T)):"
  while IFS= read -r p; do
    n=$(find "$p" -mindepth 1 2>/dev/null | wc -l)
    first=$(ls -A "$p" 2>/dev/null | head -3 | tr '\n' ' ')
    echo "  $p: $n entries${first:+ (first: $first)}"
  done <<<"$left"
  echo "Each test removes what it makes (tests/scratch_dir.h for C++ tests, a trap for scripts)."
  exit 1
fi
echo "tmp_leftovers_test: nothing left in ${TMPDIR:-/tmp} since $(date -r "$mark" +%T)"
