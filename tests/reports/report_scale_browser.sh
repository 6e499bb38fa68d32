#!/usr/bin/env bash
# The 1,000-node x 8-GPU scorecard (simulated data, benchmarks/report_scale):
# built, scorecard.html under 10 MB, loaded in headless Chromium in under
# 3 s as the page itself measures it (performance.now() at its load event,
# written into #cmax-timing by the inline script and read back through
# --dump-dom), labelled simulated, no console errors. Fails (not skips) when
# chromium is missing. Output: $OUT_DIR (default build/test-output/report_scale).
#   tests/reports/report_scale_browser.sh BIN_DIR [OUT_DIR]
set -euo pipefail
bin=${1:?usage: report_scale_browser.sh BIN_DIR [OUT_DIR]}
out=${2:-$(dirname "$bin")/test-output/report_scale}
nodes=${CMAX_SCALE_NODES:-1000}
gpus=${CMAX_SCALE_GPUS:-8}
max_bytes=$((10 * 1000 * 1000))
max_load_ms=3000

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v chromium >/dev/null 2>&1 ||
  fail "chromium is not installed (deploy/install-deps.sh --with-tests installs it); nothing was loaded, which is not a pass"

rm -rf "$out" && mkdir -p "$out"
"$bin/cmax-report-scale" --nodes "$nodes" --gpus "$gpus" --out "$out" | tee "$out/generator.txt"
html=$out/scorecard.html
[[ -s $html ]] || fail "no $html written"
size=$(stat -c %s "$html")
echo "scorecard.html: $size bytes (limit $max_bytes)"
((size < max_bytes)) || fail "scorecard.html is $size bytes for $nodes nodes x $gpus GPUs, over $max_bytes"
grep -q 'SIMULATED DATA' "$html" || fail "the generated scorecard does not say SIMULATED DATA"

# JUnit at scale: parsed by a real XML parser; the totals match the cases.
python3 - "$out/scorecard.xml" <<'PY' || fail "scorecard.xml is not valid JUnit XML (above)"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
cases = root.findall("./testsuite/testcase")
assert int(root.get("tests")) == len(cases), (root.get("tests"), len(cases))
assert int(root.get("failures")) == len(root.findall("./testsuite/testcase/failure"))
assert int(root.get("skipped")) == len(root.findall("./testsuite/testcase/skipped"))
assert "SIMULATED" in root.get("name"), root.get("name")
print(f"scorecard.xml: {len(root)} testsuites, {len(cases)} testcases, "
      f"{root.get('failures')} failures, {root.get('errors')} errors, {root.get('skipped')} skipped")
PY

chrome=(chromium --headless --no-sandbox --disable-gpu --no-first-run
        --proxy-server=http://127.0.0.1:9 "--host-resolver-rules=MAP * ~NOTFOUND"
        --disable-background-networking --disable-component-update --disable-sync --no-pings
        --user-data-dir="$out/profile" --enable-logging=stderr --v=0)
start=$(date +%s%N)
timeout 120 "${chrome[@]}" --dump-dom "file://$html" >"$out/dom.html" 2>"$out/chromium.log" ||
  fail "chromium --dump-dom failed ($?); see $out/chromium.log"
wall_ms=$((($(date +%s%N) - start) / 1000000))
echo "chromium --dump-dom wall time: $wall_ms ms (process start to exit, not the page's own figure)"
if grep -E 'INFO:CONSOLE.*(Uncaught|Error|error)' "$out/chromium.log"; then
  fail "console errors on the page (above; $out/chromium.log)"
fi
timing=$(grep -o '<p id="cmax-timing"[^>]*>' "$out/dom.html" || true)
[[ -n $timing ]] || fail "no #cmax-timing in the DOM: the inline script did not run"
load_ms=$(sed -n 's/.*data-load-ms="\([0-9.]*\)".*/\1/p' <<<"$timing")
[[ -n $load_ms ]] || fail "the page did not record its load time: $timing"
echo "page load (performance.now() at the load event): $load_ms ms (limit $max_load_ms)"
awk -v a="$load_ms" -v b="$max_load_ms" 'BEGIN{exit !(a < b)}' ||
  fail "the page took $load_ms ms to load, over $max_load_ms ms"
svgs=$(grep -o '<svg ' "$out/dom.html" | wc -l)
echo "svg elements: $svgs"
((svgs >= 8)) || fail "expected at least 8 charts in the DOM, found $svgs"
grep -q 'SIMULATED DATA' "$out/dom.html" || fail "the banner is missing from the loaded page"
timeout 120 "${chrome[@]}" --screenshot="$out/scorecard.png" --window-size=1280,2400 \
  "file://$html" 2>>"$out/chromium.log" >/dev/null || fail "screenshot failed; see $out/chromium.log"
[[ -s $out/scorecard.png ]] || fail "no screenshot written"
rm -rf "$out/profile"
echo "PASS: $nodes nodes x $gpus GPUs: $size bytes, page load $load_ms ms, wall $wall_ms ms; screenshot $out/scorecard.png"
