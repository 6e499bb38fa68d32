#!/usr/bin/env bash
# Builds the GPU bundle: a folder that runs on a bare GPU node (only its
# NVIDIA driver, cuBLASLt and NCCL needed; no build, no Debian packages).
#
#   deploy/gpu-bundle.sh [--build-dir DIR] [--out DIR] [--jobs N] [--archs LIST]
#
# Configures DIR (default build-bundle/, shared with deploy/node-bundle.sh)
# with CMAX_BUNDLE=ON (static Protobuf, yaml-cpp, zlib, OpenBLAS; static
# CUDA runtime; see CMakeLists.txt), builds only cmax-bench and
# cmax-bench-cuda (never the tests) with ccache, and assembles OUT (default
# dist/)/cmax-gpu-<version>-<arch>/:
#   bin/cmax-bench, bin/cmax-bench-cuda   debug info stripped
#   lib/        the shared libraries carried (Abseil, RE2, OpenSSL's
#               libcrypto, fmt), found through $ORIGIN/../lib
#   validate.sh, validate_lib.sh          benchmarks/cuda/validate.sh
#   plans/      benchmarks/plans/*.yaml
#   data/       the data files the suites read (compiled in as well):
#               health/thresholds.yaml, health/xid_catalog.yaml, audit/advisories.yaml
#   README
# cuBLASLt and NCCL are not carried: cmax-bench-cuda loads them from the node
# at run time. CUDA architectures: sm_80, sm_89, sm_90 and sm_100 where
# `nvcc --list-gpu-arch` lists them, plus PTX of the highest (--archs
# overrides, in CMAKE_CUDA_ARCHITECTURES syntax). Fails when the folder is
# 64 MiB or more, when a binary or library is above the runtime floor
# (deploy/symbol-floor.sh), or when one loads a library from outside the
# folder that a node does not provide (deploy/bundle-lib.sh).
# Exit: 0 built, 1 built but a check failed, 2 could not build (no CUDA
# toolkit, configure or build error).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$root/build-bundle
out=$root/dist
jobs=2
archs=
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --archs) archs=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bundle.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bundle_tool=gpu-bundle.sh
# shellcheck source=deploy/bundle-lib.sh
source "$root/deploy/bundle-lib.sh"
die() { bundle_die "$@"; }

nvcc=$(bundle_find_nvcc)
[[ -n $nvcc ]] || die "no CUDA toolkit (nvcc not on PATH nor in /usr/local/cuda/bin): the bundle needs one to build"
[[ -n $archs ]] || archs=$(bundle_cuda_archs "$nvcc")

start=$(date +%s)
bundle_build "$root" "$build" "$jobs" "$nvcc" "$archs" cmax-bench cmax-bench-cuda
built=$(date +%s)

version=$("$build/bin/cmax-bench-cuda" --version | awk '{print $2; exit}')
[[ -n $version ]] || die "cmax-bench-cuda --version printed no version"
arch=$(uname -m)
dest=$out/cmax-gpu-$version-$arch
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/plans" "$dest/data/health" "$dest/data/audit"
for b in cmax-bench cmax-bench-cuda; do
  cp "$build/bin/$b" "$dest/bin/$b"
  strip --strip-debug "$dest/bin/$b"
done

bundle_copy_libs "$dest" "$dest"/bin/*

cp "$root/benchmarks/cuda/validate.sh" "$root/benchmarks/cuda/validate_lib.sh" "$dest/"
cp "$root"/benchmarks/plans/*.yaml "$dest/plans/"
cp "$root"/benchmarks/health/data/*.yaml "$dest/data/health/"
cp "$root"/benchmarks/audit/data/*.yaml "$dest/data/audit/"

cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
floor=$(bundle_floor_text "$root")
cat >"$dest/README" <<EOF
cmax GPU bundle $version ($arch), built $(date -u +%Y-%m-%d) with CUDA $cuda_version
for CUDA architectures $archs (PTX of the last).

Runs on a GPU node without a build: bin/cmax-bench (host suites) and
bin/cmax-bench-cuda (GPU suites). Needs glibc and libstdc++ no older than
$floor (RHEL/Rocky 9, Ubuntu 22.04 and later, Debian 12)
and the node's NVIDIA driver (libcuda.so.1; a driver older than CUDA $cuda_version
is reported as such). cuBLASLt (libcublasLt.so.${cuda_version%%.*}) and NCCL (libnccl.so.2)
come from the node, found at start-up in LD_LIBRARY_PATH, the loader's
cache, /usr/local/cuda/lib64, /usr/local/cuda/lib, /usr/lib/<triple>, or a
pip wheel's site-packages/nvidia/*/lib of the python3 on PATH
(CMAX_CUDA_LIBRARY_PATH=DIR[:DIR] searches only there). Missing, the suite
says "not measured", names where it looked and exits 2.

  bin/cmax-bench-cuda --help              the GPU suites
  bin/cmax-bench-cuda gemm --dtype bf16   one suite (exit 0 pass, 1 fail, 2 not measured)
  ./validate.sh                           every GPU suite, one verdict line per step

lib/ holds the shared libraries without a static archive (run path
\$ORIGIN/../lib). plans/ and data/ are copies of what the binaries carry
compiled in (health thresholds, Xid catalogue, advisories).
EOF

status=0
size=$(du -sb "$dest" | awk '{print $1}')
limit=$((64 * 1024 * 1024))
if ((size >= limit)); then
  echo "gpu-bundle.sh: FAIL: $dest is $size bytes, the limit is $limit (64 MiB)" >&2
  status=1
fi
bundle_check_floor "$root" "$dest" || status=1
bundle_check_ldd "$dest" || status=1
echo "bundle: $dest"
echo "  size $((size / 1024 / 1024)) MiB ($size bytes), floor $floor, CUDA archs $archs"
echo "  lib/: $(cd "$dest/lib" && ls | tr '\n' ' ')"
echo "  build $((built - start)) s (ccache: $CCACHE_DIR)"
exit $status
