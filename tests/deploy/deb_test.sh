#!/usr/bin/env bash
# The Debian packages as an operator meets them: cpack builds them from the
# build tree, lintian reports no errors, they install on this machine (the
# test machine) with the `cmax` user, the state directories and /etc/cmax
# made and the units installed but not enabled, `systemd-analyze verify`
# passes on the installed units, and purge removes what the packages made
# while keeping the coordinator's results unless CMAX_PURGE_RESULTS=yes, and
# the `cmax` system user always (Debian practice; the test removes the user
# it made at the end).
#   tests/deploy/deb_test.sh BUILD_DIR
# Needs root and a machine without cmax installed (it refuses otherwise,
# rather than purge an operator's installation).
set -euo pipefail
build=${1:?usage: deb_test.sh BUILD_DIR}
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root (it installs and purges the packages)"
for p in cmax-coordinator cmax-agent cmax-bench cmax-bench-cuda; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed; then
    fail "$p is already installed here: run on a machine without cmax"
  fi
done
getent passwd cmax >/dev/null && fail "a cmax user exists already: run on a machine without cmax"
[[ -e /etc/cmax || -e /var/lib/cmax || -e /var/lib/cmax-agent ]] &&
  fail "/etc/cmax, /var/lib/cmax or /var/lib/cmax-agent exists already: run on a machine without cmax"
for tool in cpack lintian dpkg systemd-analyze; do
  command -v $tool >/dev/null || fail "$tool is missing: run deploy/install-deps.sh --with-tests"
done

out=$(mktemp -d /tmp/cmax-deb-XXXXXX)
cleanup() {
  dpkg --purge cmax-coordinator cmax-agent cmax-bench-cuda cmax-bench >/dev/null 2>&1 || true
  rm -rf /var/lib/cmax /var/lib/cmax-agent /etc/cmax "$out"
  # The user the packages made (none existed at the start): the packages
  # keep it on purge, the test does not.
  if getent passwd cmax >/dev/null; then deluser --system --quiet cmax >/dev/null 2>&1 || true; fi
  if getent group cmax >/dev/null; then delgroup --system --quiet cmax >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

echo "== cpack"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { tail -20 "$out/cpack.log"; fail "cpack"; }
debs=("$out"/*.deb)
[[ ${#debs[@]} -ge 3 ]] || fail "expected at least 3 packages, got: ${debs[*]}"
for name in cmax-coordinator cmax-agent cmax-bench; do
  ls "$out/${name}_"*.deb >/dev/null 2>&1 || fail "no $name package"
done

echo "== lintian"
for d in "${debs[@]}"; do
  errors=$(lintian "$d" 2>&1 | grep -E '^E:' || true)
  [[ -z $errors ]] || { echo "$errors"; fail "lintian errors in $(basename "$d")"; }
  dpkg-deb -f "$d" Package Depends | sed 's/^/  /'
done
dpkg-deb -f "$out"/cmax-coordinator_*.deb Depends | grep -q libgrpc || fail "cmax-coordinator does not depend on gRPC"
dpkg-deb -f "$out"/cmax-agent_*.deb Depends | grep -q "cmax-bench (=" || fail "cmax-agent does not depend on cmax-bench"

echo "== install"
dpkg -i "${debs[@]}" >"$out/install.log" 2>&1 || { cat "$out/install.log"; fail "dpkg -i"; }
getent passwd cmax >/dev/null || fail "no cmax user after install"
[[ $(stat -c '%U:%G %a' /var/lib/cmax) == "cmax:cmax 750" ]] || fail "/var/lib/cmax is $(stat -c '%U:%G %a' /var/lib/cmax)"
[[ $(stat -c '%G %a' /etc/cmax/token) == "cmax 640" ]] || fail "/etc/cmax/token is $(stat -c '%G %a' /etc/cmax/token)"
[[ $(stat -c '%G %a' /etc/cmax/read-token) == "cmax 640" ]] || fail "/etc/cmax/read-token is $(stat -c '%G %a' /etc/cmax/read-token 2>&1)"
cmp -s /etc/cmax/token /etc/cmax/read-token && fail "the read-only token is the token"
[[ $(stat -c '%G %a' /etc/cmax/agent-token) == "cmax 640" ]] || fail "/etc/cmax/agent-token is $(stat -c '%G %a' /etc/cmax/agent-token 2>&1)"
cmp -s /etc/cmax/token /etc/cmax/agent-token && fail "the agents' token is the operators' token"
grep -q -- '--token-file /etc/cmax/agent-token' /etc/cmax/agent.env || fail "agent.env does not present the agent token"
# The watch between runs is on by default and configured there (issue 47):
# the units and file systems it follows.
grep -q -- '^CMAX_WATCH_ARGS=--watch-services nvidia-fabricmanager.service' /etc/cmax/agent.env ||
  fail "agent.env does not configure the watch (CMAX_WATCH_ARGS)"
grep -q '^CMAX_ALLOW_READ=/usr/share/cmax,/etc/cmax$' /etc/cmax/agent.env || fail "agent.env's CMAX_ALLOW_READ: $(grep ALLOW_READ /etc/cmax/agent.env)"
grep -q -- '--agent-token-file /etc/cmax/agent-token' /etc/cmax/coordinator.env || fail "coordinator.env names no --agent-token-file"
[[ $(stat -c '%a' /var/lib/cmax-agent) == 700 ]] || fail "/var/lib/cmax-agent mode $(stat -c '%a' /var/lib/cmax-agent)"
for f in /etc/cmax/coordinator.env /etc/cmax/agent.env /usr/share/cmax/plans/quick.yaml \
         /usr/share/cmax/workload/train.py \
         /lib/systemd/system/cmax-coordinator.service /lib/systemd/system/cmax-agent.service; do
  [[ -s $f ]] || fail "$f missing after install"
done
if ls /etc/systemd/system/*.wants/cmax-* >/dev/null 2>&1; then fail "a cmax unit was enabled by the install"; fi
/usr/bin/cmax-coordinator --version | grep -q "cmax-coordinator" || fail "/usr/bin/cmax-coordinator --version"
/usr/bin/cmax-bench hostcheck --help >/dev/null || fail "/usr/bin/cmax-bench hostcheck --help"
[[ -x /usr/bin/cmax-healthcheck && -x /usr/share/cmax/slurm/cmax-eval.sbatch ]] || fail "the Slurm scripts are not installed"
/usr/bin/cmaxctl --help >/dev/null 2>&1 || true
grep -q '^ExecStart=/usr/bin/cmax-coordinator ' /lib/systemd/system/cmax-coordinator.service ||
  fail "the packaged coordinator unit does not start /usr/bin/cmax-coordinator"
grep -q '^MemoryMax=[0-9]' /lib/systemd/system/cmax-coordinator.service ||
  fail "the packaged coordinator unit has no MemoryMax= ceiling"
# A second configure keeps what an operator changed.
echo "# operator's line" >>/etc/cmax/agent.env
token_before=$(cat /etc/cmax/token)
dpkg-reconfigure cmax-agent cmax-coordinator >/dev/null 2>&1 || dpkg --configure -a
grep -q "operator's line" /etc/cmax/agent.env || fail "reconfigure overwrote /etc/cmax/agent.env"
[[ $(cat /etc/cmax/token) == "$token_before" ]] || fail "reconfigure changed the token"

echo "== systemd-analyze"
for u in cmax-coordinator cmax-agent; do
  systemd-analyze verify "/lib/systemd/system/$u.service" >"$out/verify-$u.log" 2>&1 ||
    { cat "$out/verify-$u.log"; fail "systemd-analyze verify $u.service"; }
  # Lines about other units (the host's own) are not ours.
  if grep -i "cmax" "$out/verify-$u.log" | grep -qiv "^$"; then
    cat "$out/verify-$u.log"; fail "systemd-analyze verify complains about $u.service"
  fi
  score=$(systemd-analyze security --offline=true "/lib/systemd/system/$u.service" 2>/dev/null |
          sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) \(.*\)/\1 \2/p' | tail -1)
  echo "  $u.service: exposure ${score:-unknown}"
done

echo "== purge keeps results"
mkdir -p /var/lib/cmax/reports/r1 && echo '{}' >/var/lib/cmax/reports/r1/scorecard.json
dpkg --purge cmax-coordinator cmax-agent cmax-bench-cuda cmax-bench >"$out/purge.log" 2>&1 ||
  { cat "$out/purge.log"; fail "dpkg --purge"; }
getent passwd cmax >/dev/null || fail "purge removed the cmax user (it must stay, owning the kept results)"
[[ $(stat -c %U /var/lib/cmax) == cmax ]] || fail "the kept /var/lib/cmax is owned by $(stat -c %U /var/lib/cmax)"
[[ -e /etc/cmax ]] && fail "/etc/cmax is left after purge: $(ls -A /etc/cmax)"
[[ -e /var/lib/cmax-agent ]] && fail "/var/lib/cmax-agent is left after purge"
[[ -e /usr/bin/cmax-coordinator ]] && fail "/usr/bin/cmax-coordinator is left after purge"
[[ -s /var/lib/cmax/reports/r1/scorecard.json ]] || fail "purge removed the results in /var/lib/cmax"
grep -q "kept the results" "$out/purge.log" || fail "purge did not say it kept the results"

echo "== purge with CMAX_PURGE_RESULTS=yes"
dpkg -i "$out"/cmax-bench_*.deb "$out"/cmax-coordinator_*.deb >"$out/install2.log" 2>&1 ||
  { cat "$out/install2.log"; fail "second dpkg -i"; }
CMAX_PURGE_RESULTS=yes dpkg --purge cmax-coordinator cmax-bench >"$out/purge2.log" 2>&1 ||
  { cat "$out/purge2.log"; fail "second purge"; }
[[ -e /var/lib/cmax ]] && fail "CMAX_PURGE_RESULTS=yes left /var/lib/cmax"
echo "deb_test: every check holds"
