#!/usr/bin/env bash
# Installs the Debian bookworm packages cmax builds and runs with.
# Idempotent: installs only what is missing; uses sudo when not root.
# Usage: deploy/install-deps.sh [--with-tests] [--quiet]
set -euo pipefail

want_tests=0
quiet=0
for a in "$@"; do
  case "$a" in
    --with-tests) want_tests=1 ;;
    --quiet) quiet=1 ;;
    -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

# Build and runtime packages (versions as in bookworm; see shared REFERENCES).
pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libsqlite3-dev libyaml-cpp-dev
  libre2-dev libssl-dev libopenblas-dev fio openssl iproute2 procps
  # cpp-httplib: the --metrics-listen endpoints and the web view (--http-listen).
  libcpp-httplib-dev
  # gloo and Open MPI: host collectives; Open MPI also for the mpirun launcher
  # (docs/mpirun.md).
  libgloo-dev libopenmpi-dev openmpi-bin
)
if [[ $want_tests -eq 1 ]]; then
  # clang and its libFuzzer/sanitizer runtime (a Recommends of clang-14,
  # which --no-install-recommends would skip) for tests/fuzz/smoke.sh.
  # python3-yaml: tests/deploy/k8s_test.py; prometheus (with promtool):
  # tests/deploy/metrics_test.py; lintian, systemd (systemd-analyze):
  # tests/deploy/deb_test.sh; slurm-wlm and munge: tests/deploy/slurm_test.sh.
  pkgs+=(catch2 python3 python3-yaml prometheus lintian systemd slurm-wlm munge clang libclang-rt-14-dev)
  # perftest (ib_write_bw, ib_read_bw, ib_write_lat): what the rdma suite
  # runs on every node with RDMA devices (benchmarks/rdma); its tests use a
  # fake on PATH, but the real one is there to run by hand.
  pkgs+=(perftest)
  # stress-ng: benchmarks/stress/run.sh loads every core while the
  # integration tests run again and again (verdicts must not depend on load).
  pkgs+=(stress-ng)
  # chromium (headless) and fonts: the scorecard's and the web view's browser
  # tests (tests/reports/html_browser_test.py, tests/integration web view).
  pkgs+=(chromium fonts-dejavu-core)
  # The operator's journey (tests/deploy/cluster/cluster_test.sh): hosts
  # booted with systemd (systemd-nspawn from systemd-container) on bookworm
  # trees made by debootstrap; the container image (tests/deploy/image_test.sh)
  # built and run by podman with runc.
  pkgs+=(debootstrap systemd-container podman runc e2fsprogs util-linux)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  [[ $quiet -eq 1 ]] || echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 2
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
