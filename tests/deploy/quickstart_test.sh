#!/usr/bin/env bash
# deploy/quickstart.sh as a new user runs it (issue 46, items 3, 7 and 8),
# against this build (CMAX_BUILD_DIR: its targets are built, so the
# quickstart's own build step has nothing to do) on a free loopback port:
#   - `--plan` without a file, or with one that does not exist: exit 2 with a
#     sentence, before anything is built or started;
#   - the quick plan on two agents: exit 0, the scorecard summary with its
#     "Why" row, no tier of a "measured part", and the closing line;
#   - a plan the nodes fail (8 GPUs expected of CPU-only agents): exit 1 and
#     a closing line that says so and where to look;
#   - --keep-running: the command it prints works as printed, and the pids
#     it prints are the ones to stop.
#   quickstart_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=${1:?usage: quickstart_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: quickstart_test.sh SOURCE_DIR BUILD_DIR}
work=$(mktemp -d /tmp/cmax-quickstart-test.XXXXXX)
keep_pids=""
cleanup() {
  [[ -n $keep_pids ]] && kill $keep_pids 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# quick ARGS...: the quickstart in a fresh folder of its own; sets out, rc.
n=0
quick() {
  n=$((n + 1))
  mkdir -m 0700 "$work/q$n"
  set +e
  CMAX_BUILD_DIR=$build CMAX_QUICKSTART_DIR=$work/q$n CMAX_PORT=$(free_port) \
    "$src/deploy/quickstart.sh" "$@" >"$work/out$n" 2>&1
  rc=$?
  set -e
  out=$(cat "$work/out$n")
}
last_line() { grep '^==> ' <<<"$out" | tail -1; }

# --plan without a file: a sentence and exit 2, nothing installed or built.
quick --plan
[[ $rc -eq 2 ]] || { echo "$out"; fail "--plan without a file exited $rc, not 2"; }
grep -q -- "--plan needs a value" <<<"$out" || { echo "$out"; fail "--plan without a file: no sentence"; }
grep -q "installing\|building" <<<"$out" && { echo "$out"; fail "--plan without a file installed or built"; }
grep -q "line [0-9]" <<<"$out" && { echo "$out"; fail "--plan without a file: a shell line number"; }
echo "  --plan (no file): exit 2: $(last_line)"
quick --plan "$work/no-such-plan.yaml"
[[ $rc -eq 2 ]] || { echo "$out"; fail "a missing plan exited $rc, not 2"; }
grep -q "does not exist" <<<"$out" || { echo "$out"; fail "a missing plan: no sentence"; }
echo "  --plan MISSING: exit 2: $(last_line)"

# The quick plan: not rated, said with the scorecard's Why row; exit 0.
quick --agents 2
[[ $rc -eq 0 ]] || { echo "$out"; fail "the quick plan exited $rc, not 0"; }
grep -q '^| Why | not rated: ' <<<"$out" || { echo "$out"; fail "no 'Why' row in the summary"; }
grep -qi 'measured part' <<<"$out" && { echo "$out"; fail "a tier of the measured part is shown"; }
last_line | grep -q '^==> not rated: the quick plan checks node sanity and reachability only' ||
  { echo "$out"; fail "the quick plan's closing line: $(last_line)"; }
echo "  quick plan: exit 0: $(last_line)"

# A plan the nodes fail: exit 1 and a closing line that says where to look.
cat >"$work/expect8.yaml" <<'EOF'
name: expect8
expect:
  gpus_per_node: 8
suites:
  - suite: hostcheck
EOF
quick --agents 2 --plan "$work/expect8.yaml"
[[ $rc -eq 1 ]] || { echo "$out"; fail "a plan the nodes fail exited $rc, not 1"; }
last_line | grep -q "^==> FAILED: a node was rejected.*'rejected nodes' above and the scorecard's Nodes section" ||
  { echo "$out"; fail "exit 1 without its closing line: $(last_line)"; }
grep -q '^| Why | ' <<<"$out" || { echo "$out"; fail "exit 1: no 'Why' row"; }
# Each rejected node with its worst reason, in one line.
grep -q '^rejected nodes (2; ' <<<"$out" || { echo "$out"; fail "exit 1: no 'rejected nodes' list"; }
for node in local-0 local-1; do  # not n: quick() counts its folders in n
  grep -q "^  $node: Reliability fail: expected 8 GPUs, found 0 (hostcheck.gpu_count)\$" <<<"$out" ||
    { echo "$out"; fail "exit 1: $node is not listed with its reason"; }
done
echo "  failing plan: exit 1: $(last_line)"

# --keep-running: the printed command works as printed.
quick --agents 1 --keep-running
[[ $rc -eq 0 ]] || { echo "$out"; fail "--keep-running exited $rc"; }
keep_pids=$(sed -n 's/^  stop them: kill //p' <<<"$out")
[[ -n $keep_pids ]] || { echo "$out"; fail "--keep-running printed no pids to stop"; }
hint=$(grep -A1 'keep running' <<<"$out" | tail -1 | sed 's/^ *//')
[[ $hint == CMAX_COORDINATOR=* ]] || { echo "$out"; fail "--keep-running printed no command: '$hint'"; }
set +e
hint_out=$(env -i PATH=/usr/bin:/bin bash -c "$hint" 2>&1)
hint_rc=$?
set -e
[[ $hint_rc -eq 0 ]] || { echo "$hint_out"; fail "the printed command '$hint' exited $hint_rc"; }
grep -q "local-0 .*connected" <<<"$hint_out" || { echo "$hint_out"; fail "the printed command did not list local-0"; }
echo "  --keep-running: '$hint' lists local-0; stopping $keep_pids"
kill $keep_pids
keep_pids=""
echo "quickstart_test: OK"
