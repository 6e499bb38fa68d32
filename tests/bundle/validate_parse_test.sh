#!/usr/bin/env bash
# validate.sh's verdicts (benchmarks/cuda/validate_lib.sh) on recorded
# suite outputs (tests/bundle/recorded/, see its README): ERROR rows, NaN,
# wrong results, skipped and not-measured runs, a missing NCCL, timeouts,
# fault injection found and missed, the acceptance floors as fractions of
# each GPU's own spec and link figures, the PyTorch ratios.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../benchmarks/cuda/validate_lib.sh
source "${here}/../../benchmarks/cuda/validate_lib.sh"
rec=${here}/recorded
failures=0
# The floors validate.sh applies: fractions of each record's own figure.
gemm_floor='gemm_tflops|shape=square_8192|x0.70|spec_tflops'
memory_floor='memory_bandwidth_gbps|test=d2d|x0.75|spec_gbps;memory_bandwidth_gbps|test=h2d|x0.70|pcie_gbps;memory_bandwidth_gbps|test=d2h|x0.70|pcie_gbps'

# expect CASE EXPECT CHECK WANT_RC WANT_TEXT...: the verdict line of CASE must
# end in return code WANT_RC and contain every WANT_TEXT.
expect() {
  local case=$1 mode=$2 check=$3 want_rc=$4
  shift 4
  local line rc
  line=$(vl_verdict "${case}" "$(cat "${rec}/${case}.rc")" "${rec}/${case}.jsonl" "${mode}" "${check}")
  rc=$?
  local ok=1
  [[ ${rc} -eq ${want_rc} ]] || ok=0
  for w in "$@"; do
    [[ ${line} == *"${w}"* ]] || ok=0
  done
  if [[ ${ok} -eq 1 ]]; then
    echo "ok   ${line}"
  else
    echo "FAIL wanted rc ${want_rc} and [$*]; got rc ${rc}: ${line}"
    failures=$((failures + 1))
  fi
}

expect gemm_bf16_h200_ok pass "${gemm_floor}" 0 "gemm_bf16_h200_ok: PASS (exit 0)" \
  "gemm_tflops 612.3..792.4 TFLOP/s (3)" \
  "ok: shape=square_8192 gpu 0 792.4 >= 692.6 (0.70 x spec_tflops 989.5)"
expect gemm_bf16_h200_slow pass "${gemm_floor}" 1 "FAIL (exit 0)" \
  "H200 SXM shape=square_8192 gpu 1 640.0 < 692.6 (0.70 x spec_tflops 989.5)"
# Each model against its own card: an H100 SXM at 650 is below 0.70 of its
# peak; an H200 NVL (600 W, peak 835.5) at 640 passes, where a floor for
# anything named "H200" (750) would have failed it.
expect gemm_bf16_h100 pass "${gemm_floor}" 1 "FAIL (exit 0)" \
  "H100 SXM shape=square_8192 gpu 0 650.0 < 692.6"
expect gemm_bf16_h200_nvl pass "${gemm_floor}" 0 "PASS (exit 0)" \
  "ok: shape=square_8192 gpu 0 640.0 >= 584.8 (0.70 x spec_tflops 835.5)"
# A model the spec table does not know is not graded, and says so.
expect gemm_bf16_unknown pass "${gemm_floor}" 0 "PASS (exit 0)" \
  "no figure for shape=square_8192 (no spec_tflops label"
expect gemm_cuda_error pass "${gemm_floor}" 1 "FAIL (exit 1)" "gemm.cuda_error" \
  "CUBLAS_STATUS_EXECUTION_FAILED"
expect gemm_error_row pass "${gemm_floor}" 1 "FAIL (exit 0) an ERROR row" "cudaErrorMemoryAllocation"
expect gemm_nan pass "${gemm_floor}" 1 "FAIL (exit 0) not a number: gemm_tflops=\"NaN\""
expect gemm_wrong pass "" 1 "FAIL (exit 1)" "gemm_tflops not verified" "gemm.wrong_result"
expect gemm_fp8_skipped pass "" 2 "gemm_fp8_skipped: NOT MEASURED (exit 2)" \
  "not measured: fp8 GEMM skipped: FP8 GEMM needs compute capability 8.9"
expect gemm_some_skipped pass "${gemm_floor}" 0 "PASS (exit 0)" \
  "1 not measured (not measured: bf16 GEMM skipped: needs 1.50 GiB"
expect memory_h200_ok pass "${memory_floor}" 0 "PASS (exit 0)" \
  "d2d gpu 0 4012.5 >= 3600.0 (0.75 x spec_gbps 4800)" \
  "h2d gpu 0 55.1 >= 44.1 (0.70 x pcie_gbps 63.02)" "d2h gpu 0 55.3 >= 44.1"
expect memory_h200_slow_h2d pass "${memory_floor}" 1 "FAIL (exit 0)" \
  "NVIDIA H200 test=h2d gpu 0 24.8 < 44.1 (0.70 x pcie_gbps 63.02)"
# A GH200: HBM against its own 4 TB/s; its host link is NVLink-C2C, so the
# PCIe floors have no figure to hold it to, and say so.
expect memory_gh200 pass "${memory_floor}" 0 "PASS (exit 0)" \
  "d2d gpu 0 3480.0 >= 3000.0 (0.75 x spec_gbps 4000)" \
  "no figure for test=h2d (no pcie_gbps label"
expect collective_no_nccl pass "" 2 "NOT MEASURED (exit 2)" "NCCL not found" "libnccl.so.2"
expect no_driver pass "" 2 "NOT MEASURED (exit 2) not measured: no GPU driver"
expect gemm_fault_found fault "" 0 "PASS (exit 1) the injected fault was found (" \
  "gemm.wrong_result: bf16 GEMM on GPU 0"
expect gemm_fault_missed fault "" 1 "FAIL (exit 0) the injected fault was NOT detected"
# exit 2 of a fault-injection run is not measured, never a pass or a fail.
expect no_driver fault "" 2 "NOT MEASURED (exit 2)"
expect burnin_timeout pass "" 1 "FAIL (exit 124) timed out"
# One rank: busbw only where it is a figure; the rest not measured, not 0.
expect collective_one_rank pass "" 0 "PASS (exit 0)" "busbw_gbps 176.0 GB/s (1)" \
  "1 not measured (not measured: all_reduce bus bandwidth with one rank"

# The ratio helpers of the PyTorch comparison.
fig=$(vl_figure "${rec}/gemm_bf16_h200_ok.jsonl" gemm_tflops shape=square_8192)
if [[ ${fig} == 792.4 && $(vl_ratio 792.4 800) == 0.99 && $(vl_ratio "" 800) == - ]]; then
  echo "ok   vl_figure ${fig}, vl_ratio"
else
  echo "FAIL vl_figure gave '${fig}', vl_ratio 792.4/800 gave '$(vl_ratio 792.4 800)'"
  failures=$((failures + 1))
fi

# The PyTorch comparison: compared unrounded, a missing figure not measured.
ratio_case() {
  local want_rc=$1 want=$2 line rc
  shift 2
  line=$(vl_ratio_check "$@")
  rc=$?
  if [[ ${rc} -eq ${want_rc} && ${line} == *"${want}"* ]]; then
    echo "ok   ${line}"
  else
    echo "FAIL wanted rc ${want_rc} and [${want}]; got rc ${rc}: ${line}"
    failures=$((failures + 1))
  fi
}
ratio_case 0 "gemm_vs_torch: PASS ratio 0.990 >= 0.97" gemm_vs_torch 792.4 800 0.97
ratio_case 1 "gemm_vs_torch: FAIL ratio 0.966 < 0.97" gemm_vs_torch 772.8 800 0.97
ratio_case 1 "d2d_vs_torch: FAIL ratio 0.900 < 0.95" d2d_vs_torch 3870 4300 0.95
ratio_case 2 "d2d_vs_torch: NOT MEASURED" d2d_vs_torch 4012.5 "" 0.95

if [[ ${failures} -gt 0 ]]; then
  echo "${failures} verdicts wrong"
  exit 1
fi
echo "all verdicts as expected"
