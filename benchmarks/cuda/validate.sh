#!/usr/bin/env bash
# Validates the GPU suites on this node, from the GPU bundle (no build):
# every GEMM dtype, the fault-injection modes, memory bandwidth, the NCCL
# collectives, a burn-in and the consistency check over all local GPUs, then
# the acceptance figures, and (where PyTorch works) cmax's figures as a ratio
# of torch.matmul's and a torch device copy's measured in the same run.
#
#   ./validate.sh [--bin DIR] [--logs DIR]      (in the bundle: bin/ beside it)
#   VALIDATE_BURNIN_SECONDS=60 VALIDATE_STEP_TIMEOUT=900 ./validate.sh
#
# Every step runs under `timeout` with --jsonl into the log folder and prints
# one line: "<step>: PASS|FAIL|NOT MEASURED (exit N) <why>; <figures>"
# (validate_lib.sh decides: exit 2 of a suite is NOT MEASURED, never FAIL;
# numbers are parsed as numbers, a NaN or an ERROR row is a failure).
# Acceptance on an H200 (issue 4): BF16 dense GEMM at 8192^3 >= 750 TFLOP/s
# (about 790 measured with cuBLASLt on random data), device-to-device copy
# >= 3600 GB/s counting bytes read and written, pinned H2D and D2H >= 45 GB/s
# per GPU; every fault-injection mode must exit 1.
# Exit: 0 every step passed; 1 a step failed; 2 nothing failed but a step was
# not measured (no GPU, no driver, no cuBLASLt or NCCL on the node, ...).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=validate_lib.sh
source "${here}/validate_lib.sh"
bin_dir=
log_dir=${VALIDATE_LOG_DIR:-}
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin_dir=$2; shift 2 ;;
    --logs) log_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "validate.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z $bin_dir ]]; then
  if [[ -x ${here}/bin/cmax-bench-cuda ]]; then
    bin_dir=${here}/bin                       # the bundle
  else
    bin_dir=$(cd "${here}/../.." && pwd)/build/bin  # a source tree's build/
  fi
fi
bin=${bin_dir}/cmax-bench-cuda
if [[ ! -x $bin ]]; then
  echo "validate.sh: no ${bin}: build the bundle (deploy/gpu-bundle.sh) and run its validate.sh" >&2
  exit 2
fi
log_dir=${log_dir:-${PWD}/cmax-validate-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "${log_dir}" || { echo "validate.sh: cannot create ${log_dir}" >&2; exit 2; }
step_timeout=${VALIDATE_STEP_TIMEOUT:-900}
burnin_s=${VALIDATE_BURNIN_SECONDS:-60}

echo "== versions"
echo "cmax:    $("${bin}" --version 2>&1)"
if [[ -r /proc/driver/nvidia/version ]]; then
  echo "driver:  $(head -n1 /proc/driver/nvidia/version)"
else
  echo "driver:  no /proc/driver/nvidia/version"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout 60 nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total --format=csv || true
fi
echo "logs:    ${log_dir}"

fails=0 not_measured=0 passed=0
# run_step NAME EXPECT CHECK -- suite args...: the suite under timeout,
# records to NAME.jsonl, stderr to NAME.err; then its verdict line.
run_step() {
  local name=$1 expect=$2 check=$3
  shift 4
  local out=${log_dir}/${name}.jsonl err=${log_dir}/${name}.err rc
  timeout --kill-after=30 "${step_timeout}" "${bin}" "$@" --jsonl >"${out}" 2>"${err}"
  rc=$?
  # A message the suite printed on stderr counts for the ERROR-row rule too.
  cat "${err}" >>"${out}"
  vl_verdict "${name}" "${rc}" "${out}" "${expect}" "${check}"
  case $? in
    0) passed=$((passed + 1)) ;;
    2) not_measured=$((not_measured + 1)) ;;
    *) fails=$((fails + 1)) ;;
  esac
}

echo "== steps"
# One probe first: no GPU, no driver or a driver too old stop here.
run_step probe pass "" -- memory --tests d2d --size 1M --iters 1 --warmup 0
if [[ ${not_measured} -gt 0 ]]; then
  echo "validate.sh: NOT MEASURED: no usable GPU (see the probe line; ${log_dir}/probe.err)"
  exit 2
fi
h200_gemm='gemm_tflops|shape=square_8192|750|H200'
for dtype in bf16 fp16 fp8 tf32 fp32 fp64; do
  check=
  [[ ${dtype} == bf16 ]] && check=${h200_gemm}
  run_step "gemm_${dtype}" pass "${check}" -- gemm --dtype "${dtype}"
done
run_step memory pass \
  'memory_bandwidth_gbps|test=d2d|3600|H200;memory_bandwidth_gbps|test=h2d|45|H200;memory_bandwidth_gbps|test=d2h|45|H200' \
  -- memory
ngpu=$(timeout 60 nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
if [[ ${ngpu} -le 1 ]]; then
  echo "note: ${ngpu} GPU: the collective step only shows that NCCL runs and verifies (bus bandwidth with one rank is 0 by definition)"
fi
CMAX_TASK_DIR=${log_dir} run_step collective pass "" -- collective --backend nccl --op all -b 8 -e 1G -f 4 -n 20 -w 5
# The burn-in's own duration plus 10 minutes, when that is longer than a step's timeout.
saved_timeout=${step_timeout}
step_timeout=$((burnin_s + 600 > step_timeout ? burnin_s + 600 : step_timeout))
run_step burnin pass "" -- burnin --duration "${burnin_s}"
step_timeout=${saved_timeout}
run_step consistency pass "" -- consistency

echo "== fault injection (each must exit 1)"
run_step gemm_fault_inject fault "" -- gemm --dtype bf16 --m 2048 --n 2048 --k 2048 --fault-inject
run_step burnin_fault_inject fault "" -- burnin --duration 10 --size 4096 --fault-inject 5
CMAX_TASK_DIR=${log_dir} run_step collective_fault_inject fault "" -- collective --backend nccl --op all_reduce -b 1M -e 1M -n 5 -w 1 --fault-inject

echo "== PyTorch, same run (where it is installed)"
if command -v python3 >/dev/null 2>&1 && timeout 120 python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  torch_out=$(timeout 600 python3 - <<'EOF' 2>"${log_dir}/torch.err"
import torch
dev = torch.device("cuda:0")
def timed(fn, iters=20, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]  # median, ms
n = 8192
x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
y = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
ms = timed(lambda: torch.matmul(x, y))
print("torch_gemm_bf16_tflops %.1f" % (2 * n ** 3 / (ms * 1e-3) / 1e12))
size = 1 << 30
src = torch.empty(size, dtype=torch.uint8, device=dev).random_(0, 255)
dst = torch.empty_like(src)
ms = timed(lambda: dst.copy_(src))
# bytes read + written, as cmax's d2d counts them
print("torch_d2d_gbps %.1f" % (2 * size / (ms * 1e-3) / 1e9))
EOF
)
  torch_gemm=$(awk '/^torch_gemm_bf16_tflops/{print $2}' <<<"${torch_out}")
  torch_d2d=$(awk '/^torch_d2d_gbps/{print $2}' <<<"${torch_out}")
  cmax_gemm=$(vl_figure "${log_dir}/gemm_bf16.jsonl" gemm_tflops shape=square_8192)
  cmax_d2d=$(vl_figure "${log_dir}/memory.jsonl" memory_bandwidth_gbps test=d2d)
  echo "torch (GPU 0): bf16 8192^3 ${torch_gemm:-?} TFLOP/s, d2d copy ${torch_d2d:-?} GB/s"
  echo "cmax  (GPU 0): bf16 8192^3 ${cmax_gemm:-?} TFLOP/s, d2d copy ${cmax_d2d:-?} GB/s"
  echo "ratio cmax/torch: gemm $(vl_ratio "${cmax_gemm}" "${torch_gemm}"), d2d $(vl_ratio "${cmax_d2d}" "${torch_d2d}")"
else
  echo "torch: not measured (python3 -c 'import torch' with CUDA does not work here)"
fi

echo "== summary: ${passed} passed, ${fails} failed, ${not_measured} not measured (logs: ${log_dir})"
if [[ ${fails} -gt 0 ]]; then exit 1; fi
if [[ ${not_measured} -gt 0 ]]; then exit 2; fi
exit 0
