#!/usr/bin/env bash
# The node tarball as an operator of a non-Debian-12 node meets it:
# deploy/node-bundle.sh builds it (into BUILD_DIR/bundle-build, shared with
# bundle_test), its contents are whole, every binary and carried library is
# within the runtime floor (deploy/symbol-floor.sh) and `ldd` names nothing
# outside glibc, libstdc++, libgcc and the tarball; install.sh stages,
# keeps an edited agent.env and refuses bad input. Then, in a booted Debian
# host that has none of the build's packages (debootstrap minbase with
# systemd only; systemd-nspawn --boot, a network namespace of its own), the
# tarball is unpacked and installed with install.sh, its unit started with
# systemctl, and the agent joins a coordinator this test runs in the
# bridge's namespace; the tarball's own cmaxctl runs the quick plan there.
#
#   tests/deploy/node_tarball_test.sh SOURCE_DIR BUILD_DIR
#
# Root only (namespaces, nspawn). Leaves nothing behind (checked).
set -euo pipefail
src=$(cd "${1:?usage: node_tarball_test.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?build dir}" && pwd)
bin=$build/bin
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
[[ $(id -u) -eq 0 ]] || fail "node_tarball_test needs root (namespaces, nspawn)"
for tool in systemd-nspawn debootstrap nsenter objdump tar; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run deploy/install-deps.sh --with-tests"
done
[[ -x $bin/cmax-coordinator ]] || fail "$bin/cmax-coordinator is not built"

export CL_PREFIX=cmaxn
export CL_WORK
CL_WORK=$(mktemp -d /var/tmp/cmax-node-tarball-XXXXXX)
export CL_HOSTS="node1:1"
# shellcheck source=tests/deploy/cluster/lib.sh
source "$src/tests/deploy/cluster/lib.sh"
coordinator_pid=
finish() {
  local rc=$?
  set +e
  if [[ $rc -ne 0 ]] && cl_host_running node1; then
    echo "--- node1: journal of cmax-agent" >&2
    cl_x node1 journalctl -u cmax-agent --no-pager -n 40 >&2 2>/dev/null
  fi
  [[ $rc -ne 0 && -f $CL_WORK/coordinator.log ]] && { echo "--- coordinator log" >&2; tail -n 30 "$CL_WORK/coordinator.log" >&2; }
  [[ -n $coordinator_pid ]] && { kill "$coordinator_pid" 2>/dev/null; wait "$coordinator_pid" 2>/dev/null; }
  cl_down
  local leaks
  leaks=$(cl_leaks)
  rm -rf "$CL_WORK"
  if [[ -n $leaks ]]; then
    echo "FAIL: left behind:" >&2
    echo "$leaks" >&2
    rc=1
  fi
  exit $rc
}
trap finish EXIT

echo "== build: deploy/node-bundle.sh"
start=$SECONDS
"$src/deploy/node-bundle.sh" --build-dir "$build/bundle-build" --out "$build/node-dist" --jobs 2 \
  || fail "deploy/node-bundle.sh exited $?"
echo "built in $((SECONDS - start)) s"
tarball=$(ls "$build"/node-dist/cmax-node-*-"$(uname -m)".tar.gz 2>/dev/null | head -n1)
[[ -f $tarball ]] || fail "no $build/node-dist/cmax-node-<version>-$(uname -m).tar.gz"
name=$(basename "$tarball" .tar.gz)

echo "== contents"
listing=$(tar -tzvf "$tarball")
for f in bin/cmax-agent bin/cmaxctl bin/cmax-bench install.sh README share/cmax/agent.env \
         share/cmax/cmax-agent.service share/cmax/FLOOR share/cmax/ARCH share/cmax/plans/quick.yaml \
         share/cmax/plans/full.yaml share/cmax/data/health/thresholds.yaml \
         share/cmax/data/audit/advisories.yaml share/cmax/workload/train.py \
         lib/libgrpc++.so.1.51; do
  grep -q " $name/$f\$" <<<"$listing" || fail "the tarball has no $name/$f"
done
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  grep -q " $name/bin/cmax-bench-cuda\$" <<<"$listing" || fail "CUDA is installed here but the tarball has no cmax-bench-cuda"
  grep -q " $name/validate.sh\$" <<<"$listing" || fail "the tarball has cmax-bench-cuda but no validate.sh"
fi
grep -v "^[-d]r" <<<"$listing" | grep -q . && fail "the tarball holds links or special files: $(grep -v '^[-d]r' <<<"$listing" | head -3)"
awk '{print $2}' <<<"$listing" | grep -qv '^0/0$' && fail "the tarball has files not owned by uid 0, gid 0"
grep -q " $name/lib/libcpp-httplib\| $name/lib/libspdlog\| $name/lib/libgloo\| $name/lib/libmpi" <<<"$listing" \
  && fail "the tarball carries a library above the floor or tied to the build machine"
ok "contents: $(grep -c " $name/lib/" <<<"$listing") carried libraries, $(stat -c %s "$tarball") bytes"

unpacked=$CL_WORK/unpacked
mkdir -p "$unpacked"
tar -xzf "$tarball" -C "$unpacked"
t=$unpacked/$name

echo "== floor and ldd"
"$src/deploy/symbol-floor.sh" "$t"/bin/* "$t"/lib/* >"$CL_WORK/floor.txt" 2>&1 \
  || { cat "$CL_WORK/floor.txt" >&2; fail "above the floor $(cat "$t/share/cmax/FLOOR")"; }
ok "every binary and library within $(cat "$t/share/cmax/FLOOR")"
allowed='^(linux-vdso|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so'
for b in "$t"/bin/*; do
  while read -r lib arrow path rest; do
    [[ $arrow == "=>" ]] || continue
    [[ $path == not ]] && fail "ldd ${b#"$t"/}: $lib not found"
    [[ $(readlink -f "$path") == "$(readlink -f "$t/lib")"/* ]] && continue
    [[ $lib =~ $allowed ]] && continue
    fail "ldd ${b#"$t"/}: $lib => $path is outside the tarball"
  done < <(env -u LD_LIBRARY_PATH ldd "$b")
done
ok "ldd: nothing outside glibc, libstdc++, libgcc_s and the tarball"
env -u LD_LIBRARY_PATH "$t/bin/cmax-agent" --version | grep -q "^cmax-agent [0-9]" || fail "cmax-agent --version"
env -u LD_LIBRARY_PATH "$t/bin/cmax-bench" gemm --backend cpu --m 128 --n 128 --k 128 --jsonl >"$CL_WORK/gemm.jsonl" \
  || fail "cmax-bench gemm --backend cpu from the tarball exited $?"
grep -q '"verified":"true"' "$CL_WORK/gemm.jsonl" && ! grep -q '"verified":"false"' "$CL_WORK/gemm.jsonl" \
  || fail "cmax-bench gemm --backend cpu from the tarball did not verify"
ok "the binaries run from the unpacked tarball (gemm --backend cpu verified)"
set +e
out=$("$t/bin/cmax-agent" --coordinator 127.0.0.1:1 --node-name tarball --work-dir "$CL_WORK/w" \
      --metrics-listen 127.0.0.1:0 2>&1)
rc=$?
set -e
[[ $rc -eq 2 && $out == *"node tarball"* && $out == *"GLIBCXX_3.4.30"* ]] \
  || fail "the tarball's agent with --metrics-listen: exit $rc, not 2 with the reason: $out"
ok "--metrics-listen is refused with its reason (exit 2)"

echo "== install.sh, staged"
stage=$CL_WORK/stage
"$t/install.sh" --destdir "$stage" >/dev/null || fail "install.sh --destdir exited $?"
for f in opt/cmax/bin/cmax-agent opt/cmax/lib/libgrpc.so.29 opt/cmax/share/cmax/plans/quick.yaml \
         opt/cmax/README etc/cmax/agent.env etc/systemd/system/cmax-agent.service; do
  [[ -e $stage/$f ]] || fail "install.sh --destdir: no $f"
done
grep -q '^ExecStart=/opt/cmax/bin/cmax-agent ' "$stage/etc/systemd/system/cmax-agent.service" \
  || fail "the installed unit does not start /opt/cmax/bin/cmax-agent"
grep -q '^CMAX_ALLOW_READ=/opt/cmax/share/cmax,/etc/cmax$' "$stage/etc/cmax/agent.env" \
  || fail "agent.env does not let plans read /opt/cmax/share/cmax"
[[ $(stat -c %a "$stage/etc/cmax") == 750 ]] || fail "/etc/cmax is not 0750"
echo "CMAX_AGENT_ARGS=--coordinator 10.0.0.5:8470 # edited" >"$stage/etc/cmax/agent.env"
"$t/install.sh" --destdir "$stage" --prefix /opt/cmax >"$CL_WORK/reinstall.txt" || fail "install.sh again exited $?"
grep -q "edited" "$stage/etc/cmax/agent.env" || fail "a second install.sh overwrote an edited agent.env"
ls "$stage/opt" | grep -q '\.new\.\|\.old' && fail "install.sh left a staging folder in /opt"
set +e
"$t/install.sh" --destdir "$stage" --prefix opt/cmax >/dev/null 2>&1; rc_rel=$?
"$t/install.sh" --destdir "$stage" --bogus >/dev/null 2>&1; rc_bogus=$?
set -e
[[ $rc_rel -eq 2 && $rc_bogus -eq 2 ]] || fail "install.sh: a relative prefix exited $rc_rel, an unknown option $rc_bogus (want 2, 2)"
# A tarball for the other machine is refused before anything is written
# (with qemu-user's binfmt entries it would otherwise run, emulated).
other=$CL_WORK/other
cp -a "$t" "$other"
echo aarch64 >"$other/share/cmax/ARCH"
[[ $(uname -m) == aarch64 ]] && echo x86_64 >"$other/share/cmax/ARCH"
set +e
msg=$("$other/install.sh" --destdir "$CL_WORK/stage-other" 2>&1); rc_other=$?
set -e
[[ $rc_other -eq 1 && $msg == *"this tarball is for "* && ! -e $CL_WORK/stage-other ]] \
  || fail "install.sh of a tarball for another machine: exit $rc_other, not 1 with nothing written: $msg"
rm -rf "$other"
ok "install.sh stages, keeps an edited agent.env, refuses bad input and another machine's tarball"

echo "== a booted Debian host with none of the build's packages"
base=$(cl_rootfs "$build")
[[ -z $(find "$base/usr/lib" -name 'libgrpc*' -o -name 'libabsl_*' -o -name 'libprotobuf*' | head -1) ]] \
  || fail "the base tree $base has gRPC, Abseil or Protobuf: not a bare host"
cl_fabric_up
net=$(cl_net)
ip -n "$CL_PREFIX-fab" addr add "$net.1/24" dev br0
cl_host_add node1 1 "$base"
cp "$tarball" "$CL_WORK/hosts/node1/merged/root/"
cl_host_boot node1

token=$CL_WORK/token
(umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token")
mkdir -p "$CL_WORK/coordinator"
ip netns exec "$CL_PREFIX-fab" "$bin/cmax-coordinator" --listen "$net.1:8470" --allow-insecure \
  --token-file "$token" --data-dir "$CL_WORK/coordinator" >"$CL_WORK/coordinator.log" 2>&1 &
coordinator_pid=$!

cl_x node1 tar -xzf "/root/$name.tar.gz" -C /root
cl_x node1 "/root/$name/install.sh" >"$CL_WORK/install.txt" 2>&1 \
  || { cat "$CL_WORK/install.txt" >&2; fail "install.sh in the booted host exited non-zero"; }
cl_x node1 systemctl is-enabled cmax-agent >/dev/null 2>&1 && fail "install.sh enabled the unit"
cp "$token" "$CL_WORK/hosts/node1/merged/etc/cmax/token"
chmod 0600 "$CL_WORK/hosts/node1/merged/etc/cmax/token"
sed -i "s|^CMAX_AGENT_ARGS=.*|CMAX_AGENT_ARGS=--coordinator $net.1:8470 --token-file /etc/cmax/token --allow-insecure|" \
  "$CL_WORK/hosts/node1/merged/etc/cmax/agent.env"
cl_x node1 systemctl enable --now cmax-agent >/dev/null 2>&1 || fail "systemctl enable --now cmax-agent"
ctl=(/opt/cmax/bin/cmaxctl --coordinator "$net.1:8470" --token-file /etc/cmax/token --allow-insecure)
deadline=$((SECONDS + 60))
until cl_x node1 "${ctl[@]}" agents 2>/dev/null | grep -q "node1.*connected"; do
  ((SECONDS < deadline)) || fail "the tarball's agent on node1 did not connect within 60 s"
  cl_x node1 systemctl is-failed cmax-agent >/dev/null 2>&1 && fail "the cmax-agent unit failed on node1"
  sleep 0.5
done
ok "the unit started the agent and it joined the coordinator"

set +e
cl_x node1 "${ctl[@]}" run --plan /opt/cmax/share/cmax/plans/quick.yaml >"$CL_WORK/run.txt" 2>&1
rc=$?
set -e
cat "$CL_WORK/run.txt"
# Quick on one node: hostcheck measured, connectivity not measured (needs
# two nodes), so the run completes not rated (4).
[[ $rc -eq 4 ]] || fail "cmaxctl run --plan quick.yaml exited $rc (want 4: completed, not rated)"
run_id=$(sed -n 's/^run \(r[0-9a-f-]*\):.*/\1/p' "$CL_WORK/run.txt" | head -1)
[[ -n $run_id ]] || fail "no run id in cmaxctl's output"
cl_x node1 "${ctl[@]}" export "$run_id" >"$CL_WORK/records.jsonl" || fail "cmaxctl export $run_id"
grep -q '"node":"node1"' "$CL_WORK/records.jsonl" && grep -q '"suite":"hostcheck"' "$CL_WORK/records.jsonl" \
  || fail "no hostcheck records from node1 in the run"
grep -q '"simulated":true' "$CL_WORK/records.jsonl" && fail "records say simulated"
ok "the tarball's cmaxctl ran quick.yaml on the tarball's agent: $(wc -l <"$CL_WORK/records.jsonl") records"
echo "node_tarball_test passed in $((SECONDS - start)) s"
