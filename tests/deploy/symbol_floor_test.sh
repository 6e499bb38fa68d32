#!/usr/bin/env bash
# The runtime floor of the binaries cmax installs on nodes and heads (issue
# 27 item 2): deploy/symbol-floor.sh finds cmax-agent, cmax-coordinator,
# cmaxctl, cmax-bench (and cmax-bench-cuda where built) within glibc 2.34,
# GLIBCXX_3.4.29 and CXXABI_1.3.13, the system libraries of RHEL/Rocky 9
# and Ubuntu 22.04. And the check can fail: a program that calls GCC 12's
# condition_variable::wait (GLIBCXX_3.4.30), compiled here, is named above
# the floor with that symbol; a file that is not ELF is a usage error.
#   tests/deploy/symbol_floor_test.sh SOURCE_DIR BIN_DIR
set -uo pipefail
src=${1:?usage: symbol_floor_test.sh SOURCE_DIR BIN_DIR}
bin=${2:?usage: symbol_floor_test.sh SOURCE_DIR BIN_DIR}
floor=$src/deploy/symbol-floor.sh
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

binaries=()
for b in cmax-agent cmax-coordinator cmaxctl cmax-bench cmax-bench-cuda; do
  if [[ -x $bin/$b ]]; then
    binaries+=("$bin/$b")
  elif [[ $b != cmax-bench-cuda ]]; then
    fail "$bin/$b was not built"
  fi
done
if out=$("$floor" "${binaries[@]}" 2>&1); then
  echo "$out"
else
  fail "the installed binaries are above the floor:"
  echo "$out"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cmax-symbol-floor-XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/wait.cc" <<'EOF'
#include <condition_variable>
#include <mutex>
// The wait is behind a run-time condition so that it is not optimised away.
int main(int argc, char**) {
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(m);
  if (argc > 99) cv.wait(lock);
  return 0;
}
EOF
if ! c++ -std=c++20 -O1 "$work/wait.cc" -o "$work/wait" 2>"$work/cc.err"; then
  fail "could not compile the above-the-floor probe: $(tail -n 3 "$work/cc.err")"
else
  out=$("$floor" "$work/wait" 2>&1)
  rc=$?
  # A libstdc++ older than GCC 12 binds wait to GLIBCXX_3.4.11: then the
  # probe is within the floor and proves nothing, which is a failure here
  # (the build machine is Debian 12, GCC 12).
  [[ $rc -eq 1 ]] || fail "the probe calling condition_variable::wait: exit $rc, want 1: $out"
  [[ $out == *"GLIBCXX_3.4.30 _ZNSt18condition_variable4wait"* ]] ||
    fail "the probe's report does not name the symbol above the floor: $out"
fi

echo "not an ELF file" >"$work/text"
"$floor" "$work/text" >/dev/null 2>"$work/err"
rc=$?
[[ $rc -eq 2 ]] || fail "a text file: exit $rc, want 2"
grep -q "not a dynamic ELF file" "$work/err" || fail "a text file: no clear error: $(cat "$work/err")"

if ((failures > 0)); then
  echo "symbol_floor_test: $failures failure(s)"
  exit 1
fi
echo "symbol_floor_test: passed"
