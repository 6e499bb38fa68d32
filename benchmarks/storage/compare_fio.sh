#!/usr/bin/env bash
# Runs the same workload through cmax and through fio by hand on the same
# directory, ROUNDS times each (alternating), and prints the medians and the
# ratio cmax / fio last. The fio command line below is written by hand,
# independent of cmax's job files, with the same workload options.
#
#   benchmarks/storage/compare_fio.sh [DIR] [SIZE] [PATTERN] [ROUNDS]
#   (defaults: /tmp 256M seq-read 3; env: JOBS=2 QD=16 DURATION=5
#    CMAX_BENCH=build/bin/cmax-bench)
set -euo pipefail

DIR=${1:-/tmp}
SIZE=${2:-256M}
PATTERN=${3:-seq-read}
ROUNDS=${4:-3}
JOBS=${JOBS:-2}
QD=${QD:-16}
DURATION=${DURATION:-5}
BENCH=${CMAX_BENCH:-build/bin/cmax-bench}

case "$PATTERN" in
  seq-read) RW=read; BS=1M; FIELD=7 ;;     # terse v3: field 7 = read KiB/s
  seq-write) RW=write; BS=1M; FIELD=48 ;;  # field 48 = write KiB/s (fio 3.x terse v3)
  rand-read) RW=randread; BS=4k; FIELD=7 ;;
  rand-write) RW=randwrite; BS=4k; FIELD=48 ;;
  *) echo "compare_fio.sh: pattern must be seq-read, seq-write, rand-read or rand-write" >&2; exit 2 ;;
esac
command -v fio >/dev/null || { echo "fio not found: install the fio package" >&2; exit 2; }
[ -x "$BENCH" ] || { echo "cmax-bench not found at $BENCH (set CMAX_BENCH)" >&2; exit 2; }
# The same data options as cmax's job files (incompressible, refilled, not
# repeating; writes end with an fsync).
END_FSYNC=""
case "$RW" in *write) END_FSYNC="--end_fsync=1" ;; esac
ENGINE=io_uring
fio --name=probe --ioengine=io_uring --filename="$DIR/.cmax-compare-probe" --size=4k --rw=read \
    --direct=1 --output=/dev/null >/dev/null 2>&1 || ENGINE=psync
rm -f "$DIR/.cmax-compare-probe"

WORK=$(mktemp -d "$DIR/cmax-compare-fio-XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

cmax_round() {
  "$BENCH" storage --path "$DIR" --pattern "$PATTERN" --size "$SIZE" --jobs "$JOBS" \
      --queue-depth "$QD" --duration "$DURATION" --jsonl |
    grep '"metric":"storage_bandwidth_mbps"' | grep '"job":"all"' |
    sed -E 's/.*"value":([0-9.eE+-]+).*/\1/'
}

fio_round() {
  # Layout: write every file once, then the measured run, as by hand.
  fio --name=data --directory="$WORK" --numjobs="$JOBS" --size="$SIZE" --bs=1M --rw=write \
      --ioengine="$ENGINE" --direct=1 --iodepth="$QD" --refill_buffers=1 --randrepeat=0 \
      --fallocate=none --end_fsync=1 --output=/dev/null >/dev/null
  fio --name=data --directory="$WORK" --numjobs="$JOBS" --size="$SIZE" --bs="$BS" --rw="$RW" \
      --ioengine="$ENGINE" --direct=1 --iodepth="$QD" --refill_buffers=1 --randrepeat=0 \
      --buffer_compress_percentage=0 $END_FSYNC \
      --fallocate=none --time_based=1 --runtime="$DURATION" --group_reporting=1 \
      --output-format=terse --terse-version=3 |
    awk -F';' -v f="$FIELD" '{printf "%.1f\n", $f * 1024 / 1e6}'
  rm -f "$WORK"/data.*
}

echo "workload: $PATTERN, $JOBS jobs x $SIZE, bs $BS, QD $QD, ${DURATION}s, $ENGINE, direct, on $DIR"
C=(); F=()
for r in $(seq 1 "$ROUNDS"); do
  c=$(cmax_round); f=$(fio_round)
  C+=("$c"); F+=("$f")
  printf 'round %d: cmax %10.1f MB/s   fio %10.1f MB/s\n' "$r" "$c" "$f"
done
MC=$(printf '%s\n' "${C[@]}" | median)
MF=$(printf '%s\n' "${F[@]}" | median)
printf 'median:  cmax %10.1f MB/s   fio %10.1f MB/s\n' "$MC" "$MF"
awk -v c="$MC" -v f="$MF" 'BEGIN {printf "ratio cmax/fio: %.3f\n", c / f}'
