#!/usr/bin/env bash
# validate.sh's verdicts (benchmarks/cuda/validate_lib.sh) on recorded
# suite outputs (tests/bundle/recorded/, see its README): ERROR rows, NaN,
# wrong results, skipped and not-measured runs, a missing NCCL, timeouts,
# fault injection found and missed, the H200 acceptance figures.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../benchmarks/cuda/validate_lib.sh
source "${here}/../../benchmarks/cuda/validate_lib.sh"
rec=${here}/recorded
failures=0
h200_gemm='gemm_tflops|shape=square_8192|750|H200'
h200_mem='memory_bandwidth_gbps|test=d2d|3600|H200;memory_bandwidth_gbps|test=h2d|45|H200;memory_bandwidth_gbps|test=d2h|45|H200'

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

expect gemm_bf16_h200_ok pass "${h200_gemm}" 0 "gemm_bf16_h200_ok: PASS (exit 0)" \
  "gemm_tflops 612.3..792.4 TFLOP/s (3)" "ok: shape=square_8192 gpu 0 792.4 >= 750"
expect gemm_bf16_h200_slow pass "${h200_gemm}" 1 "FAIL (exit 0)" \
  "H200 shape=square_8192 gpu 1 702.0 < 750"
# Another model is not held to the H200's figure, and says so.
expect gemm_bf16_h100 pass "${h200_gemm}" 0 "PASS (exit 0)" "no figure for shape=square_8192 on H200"
expect gemm_cuda_error pass "${h200_gemm}" 1 "FAIL (exit 1)" "gemm.cuda_error" \
  "CUBLAS_STATUS_EXECUTION_FAILED"
expect gemm_error_row pass "${h200_gemm}" 1 "FAIL (exit 0) an ERROR row" "cudaErrorMemoryAllocation"
expect gemm_nan pass "${h200_gemm}" 1 "FAIL (exit 0) not a number: gemm_tflops=\"NaN\""
expect gemm_wrong pass "" 1 "FAIL (exit 1)" "gemm_tflops not verified" "gemm.wrong_result"
expect gemm_fp8_skipped pass "" 2 "gemm_fp8_skipped: NOT MEASURED (exit 2)" \
  "not measured: fp8 GEMM skipped: FP8 GEMM needs compute capability 8.9"
expect gemm_some_skipped pass "${h200_gemm}" 0 "PASS (exit 0)" \
  "1 not measured (not measured: bf16 GEMM skipped: needs 1.50 GiB"
expect memory_h200_ok pass "${h200_mem}" 0 "PASS (exit 0)" "d2d gpu 0 4012.5 >= 3600" \
  "h2d gpu 0 55.1 >= 45" "d2h gpu 0 55.3 >= 45"
expect memory_h200_slow_h2d pass "${h200_mem}" 1 "FAIL (exit 0)" "H200 test=h2d gpu 0 24.8 < 45"
expect collective_no_nccl pass "" 2 "NOT MEASURED (exit 2)" "NCCL not found" "libnccl.so.2"
expect no_driver pass "" 2 "NOT MEASURED (exit 2) not measured: no GPU driver"
expect gemm_fault_found fault "" 0 "PASS (exit 1) the injected fault was found (" \
  "gemm.wrong_result: bf16 GEMM on GPU 0"
expect gemm_fault_missed fault "" 1 "FAIL (exit 0) the injected fault was NOT detected"
# exit 2 of a fault-injection run is not measured, never a pass or a fail.
expect no_driver fault "" 2 "NOT MEASURED (exit 2)"
expect burnin_timeout pass "" 1 "FAIL (exit 124) timed out"
expect collective_one_rank pass "" 0 "PASS (exit 0)" "busbw_gbps 0.0 GB/s (1)"

# The ratio helpers of the PyTorch comparison.
fig=$(vl_figure "${rec}/gemm_bf16_h200_ok.jsonl" gemm_tflops shape=square_8192)
if [[ ${fig} == 792.4 && $(vl_ratio 792.4 800) == 0.99 && $(vl_ratio "" 800) == - ]]; then
  echo "ok   vl_figure ${fig}, vl_ratio"
else
  echo "FAIL vl_figure gave '${fig}', vl_ratio 792.4/800 gave '$(vl_ratio 792.4 800)'"
  failures=$((failures + 1))
fi

if [[ ${failures} -gt 0 ]]; then
  echo "${failures} verdicts wrong"
  exit 1
fi
echo "all verdicts as expected"
