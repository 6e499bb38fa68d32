#!/usr/bin/env bash
# Installs cmax for systemd: the binaries to /usr/local/bin, the units to
# /etc/systemd/system, example configuration to /etc/cmax (never overwritten),
# and a `cmax` system user for the coordinator.
#
#   deploy/install.sh [--prefix /usr/local] [--build-dir build] [--no-build]
#
# Then, on the head node:   systemctl enable --now cmax-coordinator
#      on every node:       systemctl enable --now cmax-agent
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
prefix=/usr/local
build=${CMAX_BUILD_DIR:-$root/build}
do_build=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "install.sh: run as root (sudo deploy/install.sh)" >&2; exit 2; }

if [[ $do_build -eq 1 ]]; then
  ./deploy/install-deps.sh --quiet
  [[ -f $build/CMakeCache.txt ]] || cmake -S "$root" -B "$build" -DCMAX_BUILD_TESTS=OFF
  cmake --build "$build" -j "$(nproc)"
fi

install -d "$prefix/bin" "$prefix/share/cmax/plans" "$prefix/share/doc/cmax"
for b in cmax-coordinator cmax-agent cmaxctl cmax-bench cmax-watch cmax-bench-cuda; do
  [[ -x $build/bin/$b ]] && install -m 0755 "$build/bin/$b" "$prefix/bin/$b"
done
install -m 0644 benchmarks/plans/*.yaml "$prefix/share/cmax/plans/"
# Slurm: the HealthCheckProgram and the job script (docs/slurm.md).
install -m 0755 deploy/slurm/cmax-healthcheck "$prefix/bin/cmax-healthcheck"
install -d "$prefix/share/cmax/slurm"
install -m 0755 deploy/slurm/cmax-eval.sbatch "$prefix/share/cmax/slurm/"
for d in benchmarks/*/data; do
  [[ -d $d ]] && cp -r "$d/." "$prefix/share/cmax/"
done
# The README and the pages its map links (docs/), side by side as in the tree.
install -m 0644 README.md "$prefix/share/doc/cmax/README.md"
install -d "$prefix/share/doc/cmax/docs"
install -m 0644 docs/*.md "$prefix/share/doc/cmax/docs/"

getent group cmax >/dev/null || groupadd --system cmax
getent passwd cmax >/dev/null || useradd --system --gid cmax --home-dir /var/lib/cmax \
  --shell /usr/sbin/nologin cmax

install -d -m 0750 /etc/cmax
# Two secrets, readable by root and the cmax group only (the coordinator
# runs as cmax), each made once and never overwritten:
#   token        the operators' (cmaxctl): stays on the head node; operators
#                who may submit runs are added to the group
#   agent-token  the agents' credential, accepted on the agent stream alone:
#                copied to every node (docs/security.md)
if [[ ! -f /etc/cmax/token ]]; then
  (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/cmax/token)
  echo "generated /etc/cmax/token (the operators' token: it stays on this host)"
fi
if [[ ! -f /etc/cmax/agent-token ]]; then
  (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/cmax/agent-token)
  echo "generated /etc/cmax/agent-token (copy it to every node's /etc/cmax/agent-token, mode 0600)"
fi
chgrp cmax /etc/cmax/token /etc/cmax/agent-token
chmod 0640 /etc/cmax/token /etc/cmax/agent-token
if [[ ! -f /etc/cmax/coordinator.env ]]; then
  cat >/etc/cmax/coordinator.env <<'ENV'
# Arguments for cmax-coordinator (see cmax-coordinator --help).
# Loopback only by default, and always with the token. For a cluster, listen
# on the head node's address with TLS, e.g.:
#   CMAX_COORDINATOR_ARGS=--listen 10.0.0.5:8470 --tls-cert /etc/cmax/tls/server.pem --tls-key /etc/cmax/tls/server.key --token-file /etc/cmax/token --agent-token-file /etc/cmax/agent-token
CMAX_COORDINATOR_ARGS=--listen 127.0.0.1:8470 --token-file /etc/cmax/token --agent-token-file /etc/cmax/agent-token
ENV
fi
# The agent's (deploy/systemd/agent.env, also the node tarball's): its share
# directory is this prefix's.
if [[ ! -f /etc/cmax/agent.env ]]; then
  sed "s|@SHARE@|$prefix/share/cmax|" deploy/systemd/agent.env >/etc/cmax/agent.env
fi
if ! grep -q -- '--token-file\|--no-token' /etc/cmax/coordinator.env; then
  echo "NOTE: /etc/cmax/coordinator.env (kept as it was) gives no --token-file: the" \
       "coordinator now refuses to start without one; add --token-file /etc/cmax/token" \
       "there and --agent-token-file /etc/cmax/agent-token" >&2
elif ! grep -q -- '--agent-token-file' /etc/cmax/coordinator.env; then
  echo "NOTE: /etc/cmax/coordinator.env (kept as it was) gives no --agent-token-file, so" \
       "agents present the operators' token; docs/security.md, \"Upgrading to separate" \
       "agent credentials\", says how to move them to /etc/cmax/agent-token" >&2
fi
chgrp cmax /etc/cmax /etc/cmax/coordinator.env
chmod 0640 /etc/cmax/coordinator.env /etc/cmax/agent.env

install -m 0644 deploy/systemd/cmax-coordinator.service /etc/systemd/system/
install -m 0644 deploy/systemd/cmax-agent.service /etc/systemd/system/
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  systemctl daemon-reload
fi
echo "installed cmax to $prefix/bin; units in /etc/systemd/system; configuration in /etc/cmax"
echo "head node:  systemctl enable --now cmax-coordinator"
echo "each node:  systemctl enable --now cmax-agent"
