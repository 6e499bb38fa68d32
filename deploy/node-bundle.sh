#!/usr/bin/env bash
# Builds the node tarball: cmax for a node that is not Debian 12 (RHEL/Rocky
# 9, Ubuntu 22.04 and later), which needs nothing of the node but glibc,
# libstdc++ and libgcc no older than the floor of deploy/symbol-floor.sh.
#
#   deploy/node-bundle.sh [--arch x86_64|aarch64] [--build-dir DIR] [--out DIR]
#                         [--jobs N] [--targets "T..."]
#
# Builds cmax-agent, cmaxctl, cmax-bench and, where a CUDA toolkit is found,
# cmax-bench-cuda in DIR (default build-bundle/, shared with
# deploy/gpu-bundle.sh; build-bundle-aarch64/ for a cross build;
# CMAX_BUNDLE=ON, see CMakeLists.txt) and writes
# OUT (default dist/)/cmax-node-<version>-<arch>.tar.gz holding
# cmax-node-<version>-<arch>/:
#   bin/          the binaries, debug info stripped, run path $ORIGIN/../lib
#   lib/          the libraries carried (gRPC and what it links: Abseil, RE2,
#                 OpenSSL, c-ares, upb; fmt); the rest is linked in
#   share/cmax/   plans/, data/ (compiled in as well), agent.env, the
#                 cmax-agent unit, FLOOR
#   install.sh    installs into /opt/cmax (--prefix), writes
#                 /etc/cmax/agent.env only when missing, the unit disabled
#   validate.sh   the GPU bundle's check of every GPU suite (with CUDA)
#   README
# The GPU libraries (libcuda, cuBLASLt, NCCL) come from the node at run time,
# as in the GPU bundle. Left out, and said in README: the agent's
# --metrics-listen (Debian's cpp-httplib is above the floor), the host
# collectives' gloo and mpi backends, and the coordinator.
# --arch aarch64 on an x86-64 machine cross-builds for Grace and other arm64
# nodes: Debian's cross toolchain, the arm64 libraries through dpkg
# multiarch, libyaml-cpp-dev (which multiarch cannot install beside the x86
# one) unpacked into DIR/cross-root (apt-get download), the toolchain file
# deploy/cross/aarch64-linux-gnu.cmake; no GPU suites (no aarch64 CUDA
# toolkit here; README says so). Its checks run the arm64 binaries through
# qemu-user (binfmt). `deploy/install-deps.sh --cross aarch64` installs
# all of it. --targets: build and pack only those binaries (the tests'
# cross build); the tarball is then named ...-partial and says so.
# Exit: 0 built and every check passed (floor, ldd, --version of each
# binary from a copy), 1 built but a check failed, 2 could not build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$root/build-bundle
out=$root/dist
jobs=2
arch=$(uname -m)
only_targets=
build_given=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --arch) arch=$2; shift 2 ;;
    --build-dir) build=$2; build_given=1; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --targets) only_targets=$2; shift 2 ;;
    -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "node-bundle.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bundle_tool=node-bundle.sh
# shellcheck source=deploy/bundle-lib.sh
source "$root/deploy/bundle-lib.sh"
case $arch in
  x86_64|aarch64) ;;
  *) bundle_die "--arch: x86_64 or aarch64, not '$arch'" ;;
esac
cross=0
if [[ $arch != "$(uname -m)" ]]; then
  [[ $arch == aarch64 && $(uname -m) == x86_64 ]] \
    || bundle_die "--arch $arch on a $(uname -m) machine: only aarch64 is cross-built, on x86_64"
  cross=1
  [[ $build_given -eq 1 ]] || build=$root/build-bundle-aarch64
  need="run deploy/install-deps.sh --cross aarch64"
  command -v aarch64-linux-gnu-g++ >/dev/null || bundle_die "no aarch64-linux-gnu-g++: $need"
  [[ -f /usr/lib/aarch64-linux-gnu/libgrpc++.so ]] || bundle_die "no arm64 gRPC (libgrpc++-dev:arm64): $need"
  [[ -x /lib/ld-linux-aarch64.so.1 && -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] \
    || bundle_die "arm64 programs do not run here (libc6:arm64, qemu-user-static and its binfmt entry): $need"
  # libyaml-cpp-dev is not Multi-Arch: same: its arm64 package (and the
  # library its CMake files name) unpacked beside the build.
  extra=$build/cross-root
  if [[ ! -f $extra/.complete ]]; then
    rm -rf "$extra"
    mkdir -p "$extra/debs"
    (cd "$extra/debs" && apt-get download libyaml-cpp-dev:arm64 libyaml-cpp0.7:arm64 >/dev/null 2>"$extra/download.log") \
      || bundle_die "apt-get download of arm64 yaml-cpp failed: $(tail -n1 "$extra/download.log")"
    for d in "$extra"/debs/*.deb; do dpkg-deb -x "$d" "$extra"; done
    touch "$extra/.complete"
  fi
  bundle_cmake_args=(-DCMAKE_TOOLCHAIN_FILE="$root/deploy/cross/aarch64-linux-gnu.cmake"
                     -DCMAX_CROSS_EXTRA_ROOT="$extra")
  bundle_strip=aarch64-linux-gnu-strip
  bundle_ldso=/lib/ld-linux-aarch64.so.1
fi

nvcc=
[[ $cross -eq 1 ]] || nvcc=$(bundle_find_nvcc)
archs=
[[ -n $nvcc ]] && archs=$(bundle_cuda_archs "$nvcc")
targets=(cmax-agent cmaxctl cmax-bench cmax-watch)
[[ -n $nvcc ]] && targets+=(cmax-bench-cuda)
partial=
if [[ -n $only_targets ]]; then
  for t in $only_targets; do
    [[ " ${targets[*]} " == *" $t "* ]] || bundle_die "--targets: '$t' is not one of: ${targets[*]}"
  done
  read -r -a targets <<<"$only_targets"
  partial=-partial
fi

start=$(date +%s)
bundle_build "$root" "$build" "$jobs" "$nvcc" "$archs" "${targets[@]}"
built=$(date +%s)

version=$(sed -n 's/^project(cmax VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[[ -n $version ]] || bundle_die "no version in CMakeLists.txt's project()"
name=cmax-node-$version-$arch$partial
work=$(mktemp -d "${TMPDIR:-/tmp}/cmax-node-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/$name
mkdir -p "$dest/bin" "$dest/share/cmax/plans" "$dest/share/cmax/data/health" "$dest/share/cmax/data/audit"
for b in "${targets[@]}"; do
  cp "$build/bin/$b" "$dest/bin/$b"
  "$bundle_strip" --strip-debug "$dest/bin/$b"
done
bundle_copy_libs "$dest" "$dest"/bin/*

share=$dest/share/cmax
cp "$root"/benchmarks/plans/*.yaml "$share/plans/"
cp "$root"/benchmarks/health/data/*.yaml "$share/data/health/"
cp "$root"/benchmarks/audit/data/*.yaml "$share/data/audit/"
# The workload suite's training script (cmax-bench finds it at
# ../share/cmax/workload/train.py from its own directory).
mkdir -p "$share/workload"
install -m 0644 "$root/benchmarks/workload/train.py" "$share/workload/train.py"
cp "$root/deploy/systemd/agent.env" "$share/agent.env"
cp "$root/deploy/systemd/cmax-agent.service" "$share/cmax-agent.service"
floor=$(bundle_floor_text "$root")
echo "$floor" >"$share/FLOOR"
echo "$arch" >"$share/ARCH"
install -m 0755 "$root/deploy/node/install.sh" "$dest/install.sh"
gpu_line="no GPU suites: built without a CUDA toolkit (cmax-bench-cuda is not in it;
the GPU suites say \"not measured\" on this node)"
[[ $cross -eq 1 ]] && gpu_line="no GPU suites: cross-built for $arch without an $arch CUDA toolkit
(cmax-bench-cuda is not in it; the GPU suites say \"not measured\" on this node)"
[[ -n $partial ]] && gpu_line="$gpu_line.
PARTIAL: only ${targets[*]} were built (--targets), for a test; not for nodes"
if [[ -n $nvcc ]]; then
  cp "$root/benchmarks/cuda/validate.sh" "$root/benchmarks/cuda/validate_lib.sh" "$dest/"
  cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  gpu_line="GPU suites built with CUDA $cuda_version for CUDA architectures $archs (PTX of
the last); libcuda, cuBLASLt and NCCL come from the node (./validate.sh checks them)"
fi

cat >"$dest/README" <<EOF
cmax node tarball $version ($arch), built $(date -u +%Y-%m-%d).

A cmax agent for a node that is not Debian 12. It needs nothing of the node
but glibc and libstdc++ no older than $floor:
RHEL/Rocky/Alma 9, Ubuntu 22.04 and 24.04, Debian 12 (and newer). Not RHEL 8
(glibc 2.28, GCC 8's libstdc++) nor Ubuntu 20.04 (glibc 2.31, GCC 10's).
Every other library is in lib/ (run path \$ORIGIN/../lib) or linked in.
$gpu_line.

  sudo ./install.sh                 into /opt/cmax (--prefix DIR), the unit disabled
  /etc/cmax/agent.env               written when missing: set --coordinator there
  /etc/cmax/agent-token             the coordinator's agent token (copy it, mode 0600)
  sudo systemctl enable --now cmax-agent

  bin/cmax-agent --help             the agent
  bin/cmaxctl --help                runs, watches and reads evaluations
  bin/cmax-bench hostcheck          one host suite by hand

Not in this tarball: the coordinator (run it on a Debian 12 head node or in
its container), the agent's --metrics-listen (Debian's cpp-httplib needs a
newer libstdc++; the coordinator's /metrics says whether each agent is
connected and busy), and the host collectives' gloo and mpi backends (those
suites say "not built with ..." and are not measured).
EOF

status=0
bundle_check_floor "$root" "$dest" || status=1
bundle_check_ldd "$dest" || status=1
for b in "${targets[@]}"; do
  if ! said=$(env -u LD_LIBRARY_PATH "$dest/bin/$b" --version 2>"$work/err"); then
    echo "node-bundle.sh: FAIL: bin/$b --version from the tarball: $(tail -n1 "$work/err")" >&2
    status=1
  elif [[ $said != *" $version"* ]]; then
    echo "node-bundle.sh: FAIL: bin/$b --version says '$said', not $version" >&2
    status=1
  fi
done

mkdir -p "$out"
tarball=$out/$name.tar.gz
tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$tarball.tmp" "$name"
mv "$tarball.tmp" "$tarball"
size=$(stat -c %s "$tarball")
echo "node tarball: $tarball"
echo "  $((size / 1024 / 1024)) MiB ($size bytes), floor $floor"
echo "  bin/: $(cd "$dest/bin" && ls | tr '\n' ' ')"
echo "  lib/: $(cd "$dest/lib" && ls | wc -l) libraries"
echo "  build $((built - start)) s (ccache: $CCACHE_DIR)"
exit $status
