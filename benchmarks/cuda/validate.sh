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
# Acceptance, each GPU against its own card (the suites write the figure
# beside each measurement: spec_tflops and spec_gbps from the datasheet
# entry reports/gpu_specs.cc matches for the model, most specific first, so
# an H200 NVL or a GH200 is never held to an H200 SXM; pcie_gbps from the
# GPU's PCIe link as sysfs describes it, benchmarks/gpu_common/pcie_link.h):
#   BF16 GEMM at 8192^3 >= 0.70 x the dense BF16 peak: healthy Hopper GPUs
#     reach 0.78-0.83 of it (H100 SXM 792 and GH200 821 of 989.5 TFLOP/s,
#     stas00/ml-engineering's maximum achievable matmul FLOPS; PyTorch on a
#     lent H200 769-798); 0.70 stays below that spread and fails a GPU that
#     lost a tenth or more to clocks, power or a wrong algorithm;
#   device-to-device copy (bytes read + written) >= 0.75 x the datasheet
#     HBM bandwidth: a lent H200 copied at about 4.3 of its 4.8 TB/s (0.90);
#   pinned H2D and D2H per GPU >= 0.70 x the link's rate per direction after
#     encoding (gen 5 x16: 63.0 GB/s, so 44.1): DMA over PCIe delivers about
#     0.80-0.90 of it after packet overhead; a GPU without a PCIe link
#     (NVLink-C2C) says "no figure" instead;
#   cmax's figure as a ratio of PyTorch's in the same run on GPU 0: >= 0.97
#     for the BF16 GEMM, >= 0.95 for the device copy (below, cmax measured
#     less than the GPU can do);
# every fault-injection mode must exit 1.
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
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# The floors, as fractions of each record's own reference (see the top).
gemm_floor='gemm_tflops|shape=square_8192|x0.70|spec_tflops'
memory_floor='memory_bandwidth_gbps|test=d2d|x0.75|spec_gbps;memory_bandwidth_gbps|test=h2d|x0.70|pcie_gbps;memory_bandwidth_gbps|test=d2h|x0.70|pcie_gbps'
for dtype in bf16 fp16 fp8 tf32 fp32 fp64; do
  check=
  [[ ${dtype} == bf16 ]] && check=${gemm_floor}
  run_step "gemm_${dtype}" pass "${check}" -- gemm --dtype "${dtype}"
done
run_step memory pass "${memory_floor}" -- memory
ngpu=$(timeout 60 nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
if [[ ${ngpu} -le 1 ]]; then
  echo "note: ${ngpu} GPU: the collective step only shows that NCCL runs and verifies (bus bandwidth of the (n-1)/n ops with one rank is not measured)"
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
  for ratio in "gemm_vs_torch ${cmax_gemm:-} ${torch_gemm:-} 0.97" "d2d_vs_torch ${cmax_d2d:-} ${torch_d2d:-} 0.95"; do
    # shellcheck disable=SC2086 # the four words of one comparison
    set -- ${ratio}
    if [[ $# -eq 4 ]]; then
      vl_ratio_check "$1" "$2" "$3" "$4"
    else
      vl_ratio_check "$1" "" "" ""   # a figure is missing: not measured
    fi
    case $? in
      0) passed=$((passed + 1)) ;;
      2) not_measured=$((not_measured + 1)) ;;
      *) fails=$((fails + 1)) ;;
    esac
  done
else
  echo "torch: not measured (python3 -c 'import torch' with CUDA does not work here)"
  not_measured=$((not_measured + 1))
fi

echo "== summary: ${passed} passed, ${fails} failed, ${not_measured} not measured (logs: ${log_dir})"
if [[ ${fails} -gt 0 ]]; then exit 1; fi
if [[ ${not_measured} -gt 0 ]]; then exit 2; fi
exit 0
