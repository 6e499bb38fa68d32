#!/usr/bin/env bash
# Builds the GPU bundle: a folder that runs on a bare GPU node (only its
# NVIDIA driver, cuBLASLt and NCCL needed; no build, no Debian packages).
#
#   deploy/gpu-bundle.sh [--build-dir DIR] [--out DIR] [--jobs N] [--archs LIST]
#
# Configures DIR (default build-bundle/) with CMAX_BUNDLE=ON (static Protobuf,
# Abseil, yaml-cpp, RE2, libcrypto, zlib, OpenBLAS; static CUDA runtime; see
# CMakeLists.txt), builds only cmax-bench and cmax-bench-cuda (never the
# tests) with ccache, and assembles OUT (default dist/)/cmax-gpu-<version>-<arch>/:
#   bin/cmax-bench, bin/cmax-bench-cuda   debug info stripped
#   lib/        the shared libraries that have no archive (spdlog, fmt, Open
#               MPI, Gloo, ...), found through $ORIGIN/../lib
#   validate.sh, validate_lib.sh          benchmarks/cuda/validate.sh
#   plans/      benchmarks/plans/*.yaml
#   data/       the data files the suites read (compiled in as well):
#               health/thresholds.yaml, health/xid_catalog.yaml, audit/advisories.yaml
#   README
# cuBLASLt and NCCL are not carried: cmax-bench-cuda loads them from the node
# at run time. CUDA architectures: sm_80, sm_89, sm_90 and sm_100 where
# `nvcc --list-gpu-arch` lists them, plus PTX of the highest (--archs
# overrides, in CMAKE_CUDA_ARCHITECTURES syntax). Fails when the folder is
# 64 MiB or more, or when a binary needs a glibc newer than 2.36.
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
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bundle.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
die() { echo "gpu-bundle.sh: $*" >&2; exit 2; }

nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n $nvcc ]] || die "no CUDA toolkit (nvcc not on PATH nor in /usr/local/cuda/bin): the bundle needs one to build"

if [[ -z $archs ]]; then
  listed=$("$nvcc" --list-gpu-arch 2>/dev/null | tr '\n' ' ')
  picked=()
  for a in 80 89 90 100; do
    [[ " $listed " == *" compute_$a "* ]] && picked+=("$a")
  done
  [[ ${#picked[@]} -gt 0 ]] || die "nvcc --list-gpu-arch lists none of sm_80 sm_89 sm_90 sm_100 ($listed)"
  archs=
  for ((i = 0; i < ${#picked[@]}; i++)); do
    # The highest also as PTX (a newer GPU JIT-compiles it).
    if ((i == ${#picked[@]} - 1)); then a=${picked[$i]}; else a=${picked[$i]}-real; fi
    archs=${archs:+$archs;}$a
  done
fi

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/cmax-ccache}
export CCACHE_BASEDIR=$root
export CCACHE_NOHASHDIR=1
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
start=$(date +%s)
mkdir -p "$build"
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAX_BUNDLE=ON -DCMAX_BUILD_TESTS=OFF -DCMAX_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" -DCMAKE_CUDA_COMPILER="$nvcc" >"$build/configure.log" 2>&1 \
    || { tail -n 30 "$build/configure.log" >&2; die "cmake failed (log: $build/configure.log)"; }
else
  cmake -S "$root" -B "$build" -DCMAKE_CUDA_ARCHITECTURES="$archs" >"$build/configure.log" 2>&1 \
    || { tail -n 30 "$build/configure.log" >&2; die "cmake failed (log: $build/configure.log)"; }
fi
cmake --build "$build" --target cmax-bench cmax-bench-cuda -j "$jobs" \
  || die "build failed (cmake --build $build --target cmax-bench cmax-bench-cuda)"
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

# lib/: what the binaries still load from the build machine, except the
# libraries every node has (glibc, libstdc++, libgcc_s, libm) and the ones the
# node must provide (the NVIDIA driver's libcuda, cuBLASLt, NCCL: dlopened).
node_provided='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libutil|libresolv|libstdc\+\+|libgcc_s|libcuda|libcublasLt|libcublas|libnccl)\.so'
for b in "$dest"/bin/*; do
  while read -r name path; do
    [[ $name =~ $node_provided ]] && continue
    [[ -f $path ]] || die "$b needs $name, which is not found on this machine"
    [[ -e $dest/lib/$name ]] || cp -L "$path" "$dest/lib/$name"
  done < <(ldd "$b" | awk '/=>/ && $3 ~ /^\// {print $1, $3}')
done
strip --strip-debug "$dest"/lib/* 2>/dev/null || true

cp "$root/benchmarks/cuda/validate.sh" "$root/benchmarks/cuda/validate_lib.sh" "$dest/"
cp "$root"/benchmarks/plans/*.yaml "$dest/plans/"
cp "$root"/benchmarks/health/data/*.yaml "$dest/data/health/"
cp "$root"/benchmarks/audit/data/*.yaml "$dest/data/audit/"

cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
glibc_needed=$(for b in "$dest"/bin/* "$dest"/lib/*; do objdump -T "$b" 2>/dev/null; done |
  grep -o 'GLIBC_[0-9.]*' | sort -t. -k1,1 -k2,2n -k3,3n -u | tail -n1)
cat >"$dest/README" <<EOF
cmax GPU bundle $version ($arch), built $(date -u +%Y-%m-%d) with CUDA $cuda_version
for CUDA architectures $archs (PTX of the last).

Runs on a GPU node without a build: bin/cmax-bench (host suites) and
bin/cmax-bench-cuda (GPU suites). Needs glibc ${glibc_needed#GLIBC_} or newer, libstdc++ and
the node's NVIDIA driver (libcuda.so.1; a driver older than CUDA $cuda_version
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
if [[ -n $glibc_needed ]] && [[ $(printf '%s\n' "${glibc_needed#GLIBC_}" 2.36 | sort -V | tail -n1) != 2.36 ]]; then
  echo "gpu-bundle.sh: FAIL: the bundle needs $glibc_needed, newer than 2.36" >&2
  status=1
fi
echo "bundle: $dest"
echo "  size $((size / 1024 / 1024)) MiB ($size bytes), needs ${glibc_needed:-no versioned glibc}, CUDA archs $archs"
echo "  lib/: $(cd "$dest/lib" && ls | tr '\n' ' ')"
echo "  build $((built - start)) s (ccache: $CCACHE_DIR)"
exit $status
