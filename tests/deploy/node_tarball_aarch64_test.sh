#!/usr/bin/env bash
# The aarch64 node tarball (Grace and other arm64 nodes), cross-built on this
# x86-64 machine and run here under qemu-user (binfmt):
#   - deploy/node-bundle.sh --arch aarch64 --targets "cmax-agent cmax-bench"
#     builds the parts this test needs (the whole tarball is a release step:
#     docs/operating.md), within the floor and ldd-clean (node-bundle.sh's
#     own checks, run through the arm64 loader);
#   - its binaries are AArch64 ELF, and from the unpacked tarball
#     cmax-bench hostcheck, gemm --backend cpu (verified) and
#     burnin --backend cpu run;
#   - its cmax-agent joins an x86 coordinator on loopback beside an x86
#     agent, and the quick plan runs on both: hostcheck records from the
#     arm64 node, connectivity measured between the two.
#
#   tests/deploy/node_tarball_aarch64_test.sh SOURCE_DIR BUILD_DIR
#
# Needs deploy/install-deps.sh --cross aarch64 (in --with-tests); fails,
# saying what is missing, where it is not there.
set -euo pipefail
src=$(cd "${1:?usage: node_tarball_aarch64_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?build dir}" && pwd)
bin=$build/bin
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
[[ $(uname -m) == x86_64 ]] || fail "the aarch64 cross build is made on x86_64, not $(uname -m)"
for b in cmax-coordinator cmax-agent cmaxctl cmax-bench; do
  [[ -x $bin/$b ]] || fail "$bin/$b is not built"
done

work=$(mktemp -d /tmp/cmax-node-aarch64-XXXXXX)
pids=()
finish() {
  local rc=$?
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  if [[ $rc -ne 0 ]]; then
    for f in "$work"/*.log; do
      [[ -f $f ]] && { echo "--- ${f##*/}" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  rm -rf "$work"
  exit $rc
}
trap finish EXIT

echo "== cross build: deploy/node-bundle.sh --arch aarch64 (cmax-agent, cmax-bench)"
start=$SECONDS
"$src/deploy/node-bundle.sh" --arch aarch64 --targets "cmax-agent cmax-bench" \
  --build-dir "$build/bundle-build-aarch64" --out "$build/node-dist" --jobs 2 \
  >"$work/bundle.log" 2>&1 || { tail -n 30 "$work/bundle.log" >&2; fail "node-bundle.sh --arch aarch64 exited non-zero"; }
sed 's/^/  /' "$work/bundle.log" | grep -A5 '^  node tarball:'
ok "cross-built, within the floor, ldd clean, --version from the tarball, in $((SECONDS - start)) s"

tarball=$(ls "$build"/node-dist/cmax-node-*-aarch64-partial.tar.gz)
tar -xzf "$tarball" -C "$work"
t=$(ls -d "$work"/cmax-node-*-aarch64-partial)
[[ $(cat "$t/share/cmax/ARCH") == aarch64 ]] || fail "share/cmax/ARCH is not aarch64"
grep -q "PARTIAL" "$t/README" || fail "a --targets tarball's README does not say it is partial"
grep -q "no GPU suites: cross-built for aarch64" "$t/README" || fail "the README does not say the GPU suites are left out"
for f in "$t"/bin/* "$t"/lib/*; do
  machine=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
  [[ $machine == AArch64 ]] || fail "${f#"$t"/} is built for '$machine', not AArch64"
done
ok "every binary and library is AArch64 ($(ls "$t/lib" | wc -l) libraries carried)"

echo "== the arm64 binaries, emulated"
"$t/bin/cmax-bench" hostcheck --jsonl >"$work/hostcheck.jsonl" 2>"$work/hostcheck.log" || true
grep -q '"suite":"hostcheck"' "$work/hostcheck.jsonl" || fail "aarch64 cmax-bench hostcheck wrote no records"
"$t/bin/cmax-bench" gemm --backend cpu --m 128 --n 128 --k 128 --jsonl >"$work/gemm.jsonl" 2>"$work/gemm.log" \
  || fail "aarch64 cmax-bench gemm --backend cpu exited $?"
grep -q '"verified":"true"' "$work/gemm.jsonl" && ! grep -q '"verified":"false"' "$work/gemm.jsonl" \
  || fail "aarch64 cmax-bench gemm --backend cpu did not verify"
"$t/bin/cmax-bench" burnin --backend cpu --duration 2 --jsonl >"$work/burnin.jsonl" 2>"$work/burnin.log" \
  || fail "aarch64 cmax-bench burnin --backend cpu exited $?"
grep -q '"suite":"burnin"' "$work/burnin.jsonl" || fail "aarch64 burnin wrote no records"
ok "hostcheck ($(wc -l <"$work/hostcheck.jsonl") records), gemm cpu verified, burnin cpu ($(wc -l <"$work/burnin.jsonl") records)"

echo "== an arm64 agent and an x86 agent under an x86 coordinator, on loopback"
port=$((20000 + RANDOM % 20000))
addr=127.0.0.1:$port
(umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token")
export CMAX_TOKEN_FILE=$work/token
"$bin/cmax-coordinator" --listen "$addr" --data-dir "$work/data" --token-file "$work/token" \
  >"$work/coordinator.out" 2>"$work/coordinator.log" &
pids+=($!)
for _ in $(seq 100); do
  grep -q "listening on" "$work/coordinator.out" 2>/dev/null && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "the coordinator did not start"
  sleep 0.1
done
"$t/bin/cmax-agent" --coordinator "$addr" --node-name grace-0 --work-dir "$work/agent-arm64" \
  --advertise 127.0.0.1 >"$work/agent-arm64.log" 2>&1 &
pids+=($!)
"$bin/cmax-agent" --coordinator "$addr" --node-name x86-0 --work-dir "$work/agent-x86" \
  --advertise 127.0.0.1 >"$work/agent-x86.log" 2>&1 &
pids+=($!)
deadline=$((SECONDS + 60))
until [[ $("$bin/cmaxctl" --coordinator "$addr" agents 2>/dev/null | grep -cE '^ *(grace-0|x86-0) .*(connected|busy)') -eq 2 ]]; do
  ((SECONDS < deadline)) || fail "the two agents did not connect within 60 s"
  sleep 0.5
done
ok "grace-0 (aarch64, emulated) and x86-0 connected"

set +e
"$bin/cmaxctl" --coordinator "$addr" run --plan "$src/benchmarks/plans/quick.yaml" >"$work/run.log" 2>&1
rc=$?
set -e
sed 's/^/  /' "$work/run.log" | tail -n 4
# Two CPU-only nodes: hostcheck and connectivity measured, not rated (4).
[[ $rc -eq 4 ]] || fail "cmaxctl run --plan quick.yaml exited $rc (want 4: completed, not rated)"
run_id=$(sed -n 's/^run \(r[0-9a-z-]*\):.*/\1/p' "$work/run.log" | head -1)
"$bin/cmaxctl" --coordinator "$addr" export "$run_id" >"$work/records.jsonl" || fail "cmaxctl export $run_id"
python3 - "$work/records.jsonl" <<'PYEOF' || fail "the quick run's records from grace-0 are not whole"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [r for r in recs if r.get("node") == "grace-0"]
suites = {r.get("suite") for r in mine}
assert "hostcheck" in suites, f"no hostcheck records from grace-0 (suites: {sorted(suites)})"
assert "connectivity" in suites, f"no connectivity records from grace-0 (suites: {sorted(suites)})"
assert not any(r.get("simulated") for r in recs), "records say simulated"
rtt = [r for r in mine if r.get("suite") == "connectivity" and '"rtt_ms"' in json.dumps(r)
       and '"x86-0"' in json.dumps(r)]
assert rtt, "grace-0 measured no rtt_ms to x86-0: " + json.dumps([r for r in mine if r.get("suite") == "connectivity"])[:600]
print(f"  grace-0: {len(mine)} records ({', '.join(sorted(suites))}); {len(recs)} in the run")
PYEOF
ok "the quick plan ran on the arm64 agent beside the x86 one"
echo "node_tarball_aarch64_test passed in $((SECONDS - start)) s"
