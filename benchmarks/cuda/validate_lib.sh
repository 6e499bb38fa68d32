# shellcheck shell=bash
# The verdict of one validate.sh step, from what the suite wrote: its exit
# code and its --jsonl records (one cmax.v1.Record per line, field names as
# in record.proto). Sourced by validate.sh; tested on recorded outputs by
# tests/bundle/validate_parse_test.sh. Needs bash and awk only.
#
#   vl_verdict STEP RC JSONL [EXPECT] [CHECK]
#     EXPECT   pass (default) or fault: a fault-injection run, which must exit
#              1 with a failure finding (the planted error found).
#     CHECK    an acceptance check on the figures, in one of two forms:
#              "metric|label=value|min|model": every measurement of `metric`
#              whose labels include label=value and whose model label
#              contains `model` must be >= min;
#              "metric|label=value|xFRACTION|ref": every such measurement
#              must be >= FRACTION times the number in its own label `ref`
#              (the GPU's spec or link figure the suite wrote beside it:
#              spec_tflops, spec_gbps, pcie_gbps), so each GPU is held to
#              its own card; a measurement without `ref` is said ("no
#              figure for ...") and does not fail.
#              Several checks separated by ";".
#   prints one line: "STEP: VERDICT (exit RC) details", VERDICT one of
#   PASS, FAIL, NOT MEASURED; returns 0, 1 or 2 accordingly.
#
# Rules, in order:
#   exit 124/137 (timeout)            FAIL "timed out"
#   exit 2                            NOT MEASURED, with the first not_measured
#                                     finding's title and detail (never FAIL)
#   exit other than 0, 1, 2           FAIL "crashed"
#   a measurement whose value is not a number (NaN, Infinity, "ERROR"),
#   a measurement labelled verified=false, a finding of severity FAIL or
#   CRITICAL, a line of text reading ERROR                      FAIL
#   EXPECT fault: exit 1 with a failure = PASS; exit 0 = FAIL (not detected)
#   exit 1                            FAIL
#   exit 0 without any measurement    FAIL (nothing to show for it)
#   a CHECK with a figure below min   FAIL; a CHECK with no matching figure
#                                     is said ("no figure for ...") but does
#                                     not fail: another GPU model is not held
#                                     to an H200's figures
#   otherwise                         PASS, with the figures (min..max per
#                                     metric, and "N not measured" when some
#                                     shapes or tests were skipped)

# Prints the verdict line; see above.
vl_verdict() {
  local step=$1 rc=$2 file=$3 expect=${4:-pass} check=${5:-}
  [[ -f $file ]] || file=/dev/null
  local line
  line=$(awk -v step="$step" -v rc="$rc" -v expect="$expect" -v check="$check" '
    function str(name,   m, v) {
      # "name":"value" (escaped quotes kept as \")
      if (match($0, "\"" name "\":\"([^\"\\\\]|\\\\.)*\"")) {
        v = substr($0, RSTART + length(name) + 4, RLENGTH - length(name) - 5)
        return v
      }
      return ""
    }
    function raw(name,   m) {
      # "name":<number or string or bool>
      if (match($0, "\"" name "\":(\"[^\"]*\"|[^,}]*)")) {
        return substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
      }
      return "<absent>"
    }
    function isnum(v) { return v ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
    BEGIN { nmeas = 0; nfail = 0; nnm = 0; bad = ""; fails = ""; nm = ""; text_error = "" }
    /^\{"measurement":/ {
      metric = str("metric"); v = raw("value")
      # proto3 JSON leaves a value of 0 out.
      if (v == "<absent>") v = 0
      if (!isnum(v)) { bad = bad (bad ? "; " : "") metric "=" v; next }
      v = v + 0
      if (str("verified") == "false") { fails = fails (fails ? "; " : "") metric " not verified" }
      nmeas++
      n = ++count[metric]
      if (n == 1 || v < lo[metric]) lo[metric] = v
      if (n == 1 || v > hi[metric]) hi[metric] = v
      unit[metric] = str("unit")
      order[metric] = order[metric] ? order[metric] : ++norder
      names[order[metric]] = metric
      # Acceptance checks.
      nc = split(check, checks, ";")
      for (i = 1; i <= nc; i++) {
        split(checks[i], c, "|")
        if (c[1] != metric) continue
        split(c[2], kv, "=")
        if (kv[1] != "" && str(kv[1]) != kv[2]) continue
        who = str("gpu"); who = who == "" ? "" : " gpu " who
        if (substr(c[3], 1, 1) == "x") {
          # A fraction of the reference figure in the record itself.
          ref = str(c[4])
          if (!isnum(ref) || ref + 0 <= 0) continue
          seen_check[i]++
          frac = substr(c[3], 2) + 0
          floor_v = frac * ref
          spec = str("spec"); spec = spec == "" ? str("model") : spec
          if (v < floor_v) {
            fails = fails (fails ? "; " : "") sprintf("%s %s%s %.1f < %.1f (%s x %s %s)", spec, c[2], who, v, floor_v, substr(c[3], 2), c[4], ref)
          } else {
            oks = oks (oks ? ", " : "") sprintf("%s%s %.1f >= %.1f (%s x %s %s)", c[2], who, v, floor_v, substr(c[3], 2), c[4], ref)
          }
          continue
        }
        if (c[4] != "" && index(str("model"), c[4]) == 0) continue
        seen_check[i]++
        if (v < c[3] + 0) {
          fails = fails (fails ? "; " : "") sprintf("%s %s%s %.1f < %s", c[4], c[2], who, v, c[3])
        } else {
          oks = oks (oks ? ", " : "") sprintf("%s%s %.1f >= %s", c[2], who, v, c[3])
        }
      }
      next
    }
    /^\{"finding":/ {
      if (raw("not_measured") == "true") {
        nnm++
        if (nm == "") nm = str("title") (str("detail") != "" ? ": " str("detail") : "")
        next
      }
      sev = str("severity")
      if (sev == "SEVERITY_FAIL" || sev == "SEVERITY_CRITICAL") {
        nfail++
        d = str("detail")
        fails = fails (fails ? "; " : "") str("check_id") ": " str("title") (d != "" ? " -- " d : "")
      }
      next
    }
    /^\{/ { next }
    /(^|[ \t])ERROR([ \t:]|$)/ { if (text_error == "") text_error = $0 }
    END {
      figures = ""
      for (i = 1; i <= norder; i++) {
        m = names[i]
        f = (lo[m] == hi[m]) ? sprintf("%.1f", lo[m]) : sprintf("%.1f..%.1f", lo[m], hi[m])
        figures = figures (figures ? ", " : "") m " " f (unit[m] != "" ? " " unit[m] : "") " (" count[m] ")"
      }
      nc = split(check, checks, ";")
      missing = ""
      for (i = 1; i <= nc; i++) {
        if (checks[i] == "" || seen_check[i]) continue
        split(checks[i], c, "|")
        if (substr(c[3], 1, 1) == "x") {
          missing = missing (missing ? ", " : "") c[2] " (no " c[4] " label: no spec entry or link figure for this GPU)"
        } else {
          missing = missing (missing ? ", " : "") c[2] (c[4] != "" ? " on " c[4] : "")
        }
      }
      note = (nnm > 0) ? sprintf("; %d not measured (%s)", nnm, nm) : ""
      if (missing != "") note = note "; no figure for " missing
      if (oks != "") note = note "; ok: " oks
      verdict = ""
      if (rc == 124 || rc == 137) { verdict = "FAIL"; why = "timed out" }
      else if (rc == 2) { verdict = "NOT MEASURED"; why = (nm != "" ? nm : "the suite could not run") }
      else if (rc != 0 && rc != 1) { verdict = "FAIL"; why = "crashed (exit " rc ")" }
      else if (bad != "") { verdict = "FAIL"; why = "not a number: " bad }
      else if (text_error != "") { verdict = "FAIL"; why = "an ERROR row: " text_error }
      else if (expect == "fault") {
        if (rc == 1 && nfail > 0) { verdict = "PASS"; why = "the injected fault was found (" fails ")" }
        else if (rc == 1) { verdict = "FAIL"; why = "exit 1 but no failure finding names the fault" }
        else { verdict = "FAIL"; why = "the injected fault was NOT detected (exit 0)" }
      }
      else if (fails != "") { verdict = "FAIL"; why = fails }
      else if (rc == 1) { verdict = "FAIL"; why = "exit 1" }
      else if (nmeas == 0) { verdict = "FAIL"; why = "exit 0 without any figure" }
      else { verdict = "PASS"; why = "verified" }
      if (verdict == "NOT MEASURED" || expect == "fault") note = ""
      printf "%s: %s (exit %s) %s%s%s\n", step, verdict, rc, why, (figures != "" && verdict != "NOT MEASURED" ? "; " figures : ""), note
    }' "$file")
  echo "$line"
  case $line in
    "$step: PASS"*) return 0 ;;
    "$step: NOT MEASURED"*) return 2 ;;
    *) return 1 ;;
  esac
}

# The first value of `metric` with label=value in JSONL (for the PyTorch
# ratios); empty when there is none or it is not a number.
vl_figure() {
  local file=$1 metric=$2 label=$3
  [[ -f $file ]] || return 0
  grep "^{\"measurement\":" "$file" | grep "\"metric\":\"$metric\"" | grep -F "\"${label%%=*}\":\"${label#*=}\"" |
    head -n1 | sed -n 's/.*"value":\(-\{0,1\}[0-9.eE+-]*\)[,}].*/\1/p'
}

# vl_ratio_check NAME CMAX TORCH MIN: cmax's figure as a ratio of PyTorch's,
# measured in the same run on the same GPU; prints "NAME: PASS|FAIL|NOT
# MEASURED ..." and returns 0, 1 or 2. Below MIN cmax measured less than the
# GPU can do (a wrong algorithm choice, a copy that is not the fast path):
# a FAIL of cmax, not of the GPU. A missing figure is not measured.
vl_ratio_check() {
  local name=$1 ours=$2 theirs=$3 min=$4 verdict
  if [[ $(vl_ratio "${ours}" "${theirs}") == - ]]; then
    echo "${name}: NOT MEASURED (cmax ${ours:-?}, torch ${theirs:-?})"
    return 2
  fi
  # Compared unrounded: 0.966 is below 0.97 though it prints as 0.97.
  verdict=$(awk -v a="${ours}" -v b="${theirs}" -v m="${min}" 'BEGIN {
    r = a / b
    if (r >= m + 0) printf "PASS ratio %.3f >= %s", r, m; else printf "FAIL ratio %.3f < %s", r, m }')
  echo "${name}: ${verdict} (cmax ${ours}, torch ${theirs})"
  [[ ${verdict} == PASS* ]] && return 0
  return 1
}

# "cmax/torch 0.97" for two numbers, "-" when either is missing.
vl_ratio() {
  local a=$1 b=$2
  if [[ -z $a || -z $b ]]; then echo "-"; return; fi
  awk -v a="$a" -v b="$b" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'
}
