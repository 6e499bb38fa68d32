#!/usr/bin/env bash
# The GPU bundle works where it is carried: builds it with
# deploy/gpu-bundle.sh (ccache makes a rebuild short), copies it to a fresh
# temporary folder and runs both binaries there with an empty
# LD_LIBRARY_PATH: --version, --help, `cmax-bench gemm --backend cpu`
# (verified), `cmax-bench-cuda gemm` (exit 2, "not measured: no GPU driver"
# on a machine without a driver), a node without cuBLASLt or NCCL (exit 2,
# saying so, not failing in the dynamic loader), ldd showing nothing outside
# the bundle but glibc, libstdc++, libgcc_s, libm (and the CUDA libraries a
# node provides), the size limit, and validate.sh running from the bundle.
#
#   tests/bundle/bundle_test.sh BUILD_DIR OUT_DIR [cuda|no-cuda]
# Exit 0 passed, 1 a check failed, 77 skipped (no CUDA toolkit here, or
# no-cuda: the calling build has the GPU suites off).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build=${1:?build dir}
out=${2:?output dir}
if [[ ${3:-cuda} == no-cuda ]]; then
  echo "bundle_test: skipped: this build has no GPU suites (CMAX_ENABLE_CUDA=OFF or no CUDA toolkit found)"
  exit 77
fi
if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "bundle_test: skipped: no CUDA toolkit (nvcc) on this machine; a CPU-only build has no bundle"
  exit 77
fi
failures=0
check() {  # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  if "$@"; then
    echo "ok   ${what}"
  else
    echo "FAIL ${what}"
    failures=$((failures + 1))
  fi
}

start=$(date +%s)
"${root}/deploy/gpu-bundle.sh" --build-dir "${build}" --out "${out}" --jobs 2 || {
  echo "FAIL deploy/gpu-bundle.sh exited $?"
  exit 1
}
echo "bundle built in $(($(date +%s) - start)) s"
src=$(ls -d "${out}"/cmax-gpu-*-"$(uname -m)" 2>/dev/null | head -n1)
[[ -d ${src} ]] || { echo "FAIL no ${out}/cmax-gpu-<version>-$(uname -m)"; exit 1; }
tmp=$(mktemp -d /tmp/cmax-bundle-test-XXXXXX)
trap 'rm -rf "${tmp}"' EXIT
cp -a "${src}" "${tmp}/"
b=${tmp}/$(basename "${src}")
export LD_LIBRARY_PATH=
run() { (cd "${tmp}" && "$@" >"${tmp}/out" 2>&1); echo $? >"${tmp}/rc"; }
rc() { cat "${tmp}/rc"; }
has() { grep -qF -- "$1" "${tmp}/out"; }

for f in bin/cmax-bench bin/cmax-bench-cuda validate.sh validate_lib.sh README plans/quick.yaml \
         data/health/thresholds.yaml data/health/xid_catalog.yaml data/audit/advisories.yaml; do
  check "the bundle has ${f}" test -e "${b}/${f}"
done
size=$(du -sb "${b}" | awk '{print $1}')
check "the bundle is under 64 MiB (${size} bytes)" test "${size}" -lt $((64 * 1024 * 1024))

# Only the bundle's lib/ and what every node has (or the NVIDIA libraries a
# GPU node provides) may be loaded.
allowed='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libcublasLt|libnccl)\.so'
ldd_clean() {
  local bin=$1 bad=0
  while read -r name arrow path rest; do
    [[ ${arrow} == "=>" ]] || continue
    if [[ ${path} == "not" ]]; then echo "  ${bin}: ${name} not found"; bad=1; continue; fi
    [[ $(readlink -f "${path}") == "$(readlink -f "${b}")/lib/"* ]] && continue
    [[ ${name} =~ ${allowed} ]] && continue
    echo "  ${bin}: ${name} => ${path} is outside the bundle"
    bad=1
  done < <(ldd "${b}/${bin}")
  return ${bad}
}
for bin in bin/cmax-bench bin/cmax-bench-cuda; do
  check "ldd ${bin}: nothing outside the bundle but glibc, libstdc++, libgcc_s, libm" ldd_clean "${bin}"
done
check "cmax-bench-cuda links no cuBLASLt, NCCL or CUDA runtime (loaded at run time / static)" \
  bash -c "! ldd '${b}/bin/cmax-bench-cuda' | grep -E 'libcublas|libnccl|libcudart'"

for bin in cmax-bench cmax-bench-cuda; do
  run "${b}/bin/${bin}" --version
  check "${bin} --version (exit $(rc))" bash -c "[[ $(rc) -eq 0 ]] && grep -q '^${bin} [0-9]' '${tmp}/out'"
  run "${b}/bin/${bin}" --help
  check "${bin} --help (exit $(rc))" bash -c "[[ $(rc) -eq 0 ]] && grep -q gemm '${tmp}/out'"
done

run "${b}/bin/cmax-bench" gemm --backend cpu --m 256 --n 256 --k 256 --jsonl
check "cmax-bench gemm --backend cpu runs and verifies (exit $(rc))" \
  bash -c "[[ $(rc) -eq 0 ]] && grep -q '\"metric\":\"gemm_tflops\"' '${tmp}/out' && grep -q '\"verified\":\"true\"' '${tmp}/out' && ! grep -q '\"verified\":\"false\"' '${tmp}/out'"

driver=0
[[ -e /proc/driver/nvidia/version ]] && driver=1
if [[ ${driver} -eq 0 ]]; then
  run "${b}/bin/cmax-bench-cuda" gemm
  check "cmax-bench-cuda gemm without a driver: exit 2, 'not measured: no GPU driver' (exit $(rc))" \
    bash -c "[[ $(rc) -eq 2 ]] && grep -qF 'not measured: no GPU driver' '${tmp}/out'"
  # A node without cuBLASLt: the binary starts (no loader error) and says so.
  mkdir -p "${tmp}/empty"
  run env CMAX_CUDA_LIBRARY_PATH="${tmp}/empty" "${b}/bin/cmax-bench-cuda" gemm --jsonl
  check "cmax-bench-cuda gemm without cuBLASLt: exit 2, a not_measured gpu.no_cublaslt finding (exit $(rc))" \
    bash -c "[[ $(rc) -eq 2 ]] && grep -q '\"check_id\":\"gpu.no_cublaslt\"' '${tmp}/out' && grep -qF 'libcublasLt.so.' '${tmp}/out' && ! grep -q 'error while loading shared libraries' '${tmp}/out'"
  run env CMAX_CUDA_LIBRARY_PATH="${tmp}/empty" "${b}/bin/cmax-bench-cuda" collective
  check "cmax-bench-cuda collective without NCCL: exit 2, not measured (exit $(rc))" \
    bash -c "[[ $(rc) -eq 2 ]] && grep -qF 'not measured' '${tmp}/out' && ! grep -q 'error while loading shared libraries' '${tmp}/out'"
  run "${b}/validate.sh" --logs "${tmp}/logs"
  check "validate.sh from the bundle: the probe is NOT MEASURED, exit 2 (exit $(rc))" \
    bash -c "[[ $(rc) -eq 2 ]] && grep -q '^probe: NOT MEASURED (exit 2)' '${tmp}/out'"
else
  echo "note: this machine has an NVIDIA driver: the no-driver checks are replaced by a GEMM run"
  run "${b}/bin/cmax-bench-cuda" gemm --m 1024 --n 1024 --k 1024
  check "cmax-bench-cuda gemm runs from the bundle (exit $(rc))" bash -c "[[ $(rc) -le 2 ]]"
fi

if [[ ${failures} -gt 0 ]]; then
  echo "${failures} checks failed"
  exit 1
fi
echo "the bundle passed every check"
