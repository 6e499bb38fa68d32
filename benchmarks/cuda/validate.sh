#!/usr/bin/env bash
# Builds cmax-bench-cuda with CUDA and runs every GEMM dtype, the memory
# suite, the NCCL collective suite, a 60-second burn-in and the consistency
# check over all local GPUs: prints the driver, CUDA and cuBLAS versions
# first, then the tables. Exit 0 when everything ran and verified, 1 when a
# result was wrong, slow against the acceptance figures below, or a suite
# failed, 2 when it could not run (no GPU, no driver, driver too old, build).
#
#   benchmarks/cuda/validate.sh            # build into build-cuda/ and run
#   CMAX_CUDA_ARCHS=90 benchmarks/cuda/validate.sh   # build for one arch only
#   VALIDATE_SKIP_BUILD=1 ...              # reuse build-cuda/
#
# Acceptance on one H200 (issue 4): BF16 dense GEMM >= 750 TFLOP/s at 8192^3
# (about 790 measured with cuBLASLt on random data) and device-to-device
# copies of about 4 TB/s counting bytes read and written (checked >= 3600).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
build="${root}/build-cuda"
log_dir="${VALIDATE_LOG_DIR:-${build}/validate}"
bin="${build}/bin/cmax-bench-cuda"

die() { echo "validate.sh: $*" >&2; exit 2; }

echo "== versions"
if [[ -r /proc/driver/nvidia/version ]]; then
  echo "driver:  $(head -n1 /proc/driver/nvidia/version)"
elif command -v nvidia-smi >/dev/null 2>&1; then
  echo "driver:  $(timeout 60 nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)"
else
  echo "driver:  none found (no /proc/driver/nvidia/version, no nvidia-smi)"
fi
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
[[ -x "${nvcc}" ]] || die "no CUDA toolkit: nvcc not on PATH nor in /usr/local/cuda/bin"
echo "CUDA:    $("${nvcc}" --version | tail -n2 | head -n1)"
cuda_inc="$(dirname "$(dirname "$(readlink -f "${nvcc}")")")/include"
if [[ -r "${cuda_inc}/cublas_api.h" ]]; then
  echo "cuBLAS:  $(awk '/#define CUBLAS_VER_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' "${cuda_inc}/cublas_api.h") (headers)"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout 60 nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total --format=csv || true
fi

if [[ "${VALIDATE_SKIP_BUILD:-0}" != 1 ]]; then
  echo "== build (${build})"
  archs=()
  [[ -n "${CMAX_CUDA_ARCHS:-}" ]] && archs=(-DCMAKE_CUDA_ARCHITECTURES="${CMAX_CUDA_ARCHS}")
  cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAX_ENABLE_CUDA=ON \
    -DCMAX_BUILD_TESTS=OFF "${archs[@]}" >"${build}.cmake.log" 2>&1 \
    || { tail -n 30 "${build}.cmake.log"; die "cmake failed (log: ${build}.cmake.log)"; }
  ninja -C "${build}" cmax-bench-cuda || die "build failed"
fi
[[ -x "${bin}" ]] || die "${bin} was not built"
"${bin}" --version
mkdir -p "${log_dir}"

# One probe first: no GPU, no driver or a driver too old stop here, loudly.
probe_out="$("${bin}" memory --tests=d2d --size=1M --iters=1 --warmup=0 2>&1)"
probe_rc=$?
if [[ ${probe_rc} -eq 2 ]]; then
  echo "${probe_out}"
  die "no usable GPU (see above): nothing measured"
fi

status=0
for dtype in bf16 fp16 fp8 tf32 fp32 fp64; do
  echo "== gemm ${dtype}"
  "${bin}" gemm --dtype "${dtype}" 2>&1 | tee "${log_dir}/gemm_${dtype}.txt"
  rc=${PIPESTATUS[0]}
  if [[ ${rc} -eq 1 ]]; then status=1; echo "FAIL: gemm ${dtype} found failures"; fi
  if [[ ${rc} -eq 2 ]]; then echo "gemm ${dtype}: not measured here (see above)"; fi
done

echo "== memory"
"${bin}" memory 2>&1 | tee "${log_dir}/memory.txt"
rc=${PIPESTATUS[0]}
[[ ${rc} -ne 0 ]] && { status=1; echo "FAIL: memory exited ${rc}"; }

echo "== collective (NCCL, every local GPU one rank)"
ngpu=0
command -v nvidia-smi >/dev/null 2>&1 && \
  ngpu="$(timeout 60 nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)"
if [[ "${ngpu}" -le 1 ]]; then
  echo "note: ${ngpu} GPU: this only shows that the NCCL suite runs and verifies. NCCL refuses"
  echo "      two ranks on one device, and bus bandwidth with one rank is 0 by definition"
  echo "      (factor (n-1)/n); run it on a node with several GPUs for figures."
fi
CMAX_TASK_DIR="${log_dir}" "${bin}" collective --backend nccl --op all -b 8 -e 1G -f 4 -n 20 -w 5 \
  2>&1 | tee "${log_dir}/collective.txt"
rc=${PIPESTATUS[0]}
[[ ${rc} -ne 0 ]] && { status=1; echo "FAIL: collective exited ${rc}"; }
grep -h "Using network\|NVLS multicast\|nvls channels" "${log_dir}"/nccl-debug.*.log 2>/dev/null | \
  sort -u | head -n 5

echo "== burnin (60 s, bf16, every GPU)"
"${bin}" burnin --duration "${VALIDATE_BURNIN_SECONDS:-60}" 2>&1 | tee "${log_dir}/burnin.txt"
rc=${PIPESTATUS[0]}
[[ ${rc} -ne 0 ]] && { status=1; echo "FAIL: burnin exited ${rc}"; }

echo "== consistency"
"${bin}" consistency 2>&1 | tee "${log_dir}/consistency.txt"
rc=${PIPESTATUS[0]}
[[ ${rc} -ne 0 ]] && { status=1; echo "FAIL: consistency exited ${rc}"; }

# Acceptance figures for H200s: the number after the m x n x k column.
echo "== acceptance"
while read -r tflops; do
  if awk -v t="${tflops}" 'BEGIN{exit !(t < 750)}'; then
    echo "FAIL: H200 bf16 8192^3 GEMM at ${tflops} TFLOP/s, expected >= 750"; status=1
  else
    echo "ok:   H200 bf16 8192^3 GEMM at ${tflops} TFLOP/s (>= 750)"
  fi
done < <(awk '/H200/ && / square_8192 /{for(i=1;i<NF;i++) if($i ~ /^[0-9]+x[0-9]+x[0-9]+$/){print $(i+1); break}}' \
           "${log_dir}/gemm_bf16.txt")
while read -r gbps; do
  if awk -v g="${gbps}" 'BEGIN{exit !(g < 3600)}'; then
    echo "FAIL: H200 device-to-device copy at ${gbps} GB/s, expected about 4000+"; status=1
  else
    echo "ok:   H200 device-to-device copy at ${gbps} GB/s"
  fi
done < <(awk '/H200/ && $1 ~ /^[0-9]+$/ {print $(NF-1)}' "${log_dir}/memory.txt")
echo "logs: ${log_dir}"
exit ${status}
