#!/usr/bin/env bash
# Installs the Debian bookworm packages cmax builds and runs with.
# Idempotent: installs only what is missing; uses sudo when not root.
# Usage: deploy/install-deps.sh [--with-tests] [--cross aarch64] [--quiet]
#   --cross aarch64: what deploy/node-bundle.sh --arch aarch64 builds with
#   (Debian's cross toolchain, the arm64 libraries through dpkg multiarch)
#   and runs its checks with (qemu-user, binfmt); --with-tests includes it.
set -euo pipefail

want_tests=0
want_cross=0
quiet=0
for a in "$@"; do
  case "$a" in
    --with-tests) want_tests=1 ;;
    --quiet) quiet=1 ;;
    --cross) want_cross=1; cross_next=1; continue ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)
      if [[ ${cross_next:-0} -eq 1 && $a == aarch64 ]]; then cross_next=0; continue; fi
      echo "install-deps.sh: unknown option '$a' (--cross takes aarch64 only)" >&2; exit 2 ;;
  esac
  [[ ${cross_next:-0} -eq 0 ]] || { echo "install-deps.sh: --cross takes aarch64" >&2; exit 2; }
done
[[ ${cross_next:-0} -eq 0 ]] || { echo "install-deps.sh: --cross takes aarch64" >&2; exit 2; }

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
  # prometheus-node-exporter: the monitoring suite's test scrapes the real one
  # (tests/benchmarks/monitoring); it fails, never skips, without it.
  pkgs+=(prometheus-node-exporter)
  # python3-torch (Debian's PyTorch 1.13, CPU): the workload suite's
  # train.py, which tests/integration/workload_test.cc trains across agents.
  pkgs+=(python3-torch)
  # stress-ng: benchmarks/stress/run.sh loads every core while the
  # integration tests run again and again (verdicts must not depend on load).
  pkgs+=(stress-ng)
  # curl: the integration tests that read /metrics and flood the web view
  # (history_test, schedule_test, history_flood_test) fail without it.
  pkgs+=(curl)
  # chromium (headless) and fonts: the scorecard's and the web view's browser
  # tests (tests/reports/html_browser_test.py, tests/integration web view).
  pkgs+=(chromium fonts-dejavu-core)
  # The operator's journey (tests/deploy/cluster/cluster_test.sh): hosts
  # booted with systemd (systemd-nspawn from systemd-container) on bookworm
  # trees made by debootstrap; the container image (tests/deploy/image_test.sh)
  # built and run by podman with runc.
  pkgs+=(debootstrap systemd-container podman runc e2fsprogs util-linux)
  # The aarch64 node tarball's test (tests/deploy/node_tarball_aarch64_test.sh).
  want_cross=1
fi
# The aarch64 cross build (deploy/node-bundle.sh --arch aarch64) on x86-64:
# the cross compilers, gfortran's archive for OpenBLAS's, and the arm64
# -dev packages beside the x86 ones (dpkg multiarch; libyaml-cpp-dev is not
# Multi-Arch: same, so node-bundle.sh unpacks it itself). libc6, libstdc++6
# and libgcc-s1 for arm64 with qemu-user-static are an arm64 node's runtime
# here: its binaries run emulated (binfmt) in the checks and tests.
arm64=()
if [[ $want_cross -eq 1 && $(dpkg --print-architecture) == amd64 ]]; then
  pkgs+=(crossbuild-essential-arm64 libgfortran-12-dev-arm64-cross qemu-user-static binfmt-support)
  for p in libc6 libstdc++6 libgcc-s1 libgrpc++-dev libprotobuf-dev libabsl-dev libspdlog-dev \
           libfmt-dev libsqlite3-dev libre2-dev libssl-dev libopenblas-dev libc-ares-dev zlib1g-dev; do
    arm64+=("$p:arm64")
  done
  pkgs+=("${arm64[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# binfmt_misc where a container has not mounted it (qemu-user's entries
# are registered there); a machine that refuses says so in the tests.
binfmt() {
  [[ ${#arm64[@]} -gt 0 ]] || return 0
  if [[ ! -e /proc/sys/fs/binfmt_misc/register ]]; then
    "${sudo_cmd[@]}" mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null \
      || echo "install-deps: cannot mount binfmt_misc: arm64 programs will not run here" >&2
  fi
  if [[ -e /proc/sys/fs/binfmt_misc/register && ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]]; then
    "${sudo_cmd[@]}" update-binfmts --enable qemu-aarch64 2>/dev/null \
      || echo "install-deps: cannot register qemu-aarch64 with binfmt_misc" >&2
  fi
}
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)

if [[ ${#missing[@]} -eq 0 ]]; then
  binfmt
  [[ $quiet -eq 1 ]] || echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 2
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [[ ${#arm64[@]} -gt 0 ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  "${sudo_cmd[@]}" dpkg --add-architecture arm64
fi
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
binfmt
