#!/usr/bin/env bash
# deploy/prometheus/cmax-alerts.yml: promtool accepts the rules
# (`promtool check rules`) and its unit tests pass (`promtool test rules`
# with tests/deploy/cmax-alerts_test.yml: each alert fires on the series
# that should fire it, and not before). promtool comes with Debian's
# prometheus package (deploy/install-deps.sh --with-tests); without it this
# test FAILS: an unchecked rules file is not a passed test.
#   alerts_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: alerts_test.sh SOURCE_DIR}
if ! command -v promtool >/dev/null; then
  echo "FAIL: promtool not found (install prometheus: deploy/install-deps.sh --with-tests)" >&2
  exit 1
fi
promtool check rules "$src/deploy/prometheus/cmax-alerts.yml"
# test rules resolves rule_files relative to the test file.
promtool test rules "$src/tests/deploy/cmax-alerts_test.yml"
# Every metric an alert reads is one the coordinator documents.
for m in $(grep -o 'cmax_[a-z_]*' "$src/deploy/prometheus/cmax-alerts.yml" | sort -u); do
  if ! grep -q "\`$m[{\`]" "$src/docs/prometheus.md"; then
    echo "FAIL: $m (deploy/prometheus/cmax-alerts.yml) is not in docs/prometheus.md" >&2
    exit 1
  fi
done
echo "alerts_test: OK"
