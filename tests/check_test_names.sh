#!/usr/bin/env bash
# ctest names come from Catch's test case names (catch_discover_tests): a
# name with ';' is split by CMake into filters that match nothing, and a name
# starting with '-' is taken for an option. Either way the case would not run
# under ctest while counting as passed. This fails on any such name.
#   tests/check_test_names.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: check_test_names.sh SOURCE_DIR}"
bad=$(grep -rnE 'TEST_CASE\("([^"]*;|-)' tests/ --include='*.cc' || true)
if [[ -n $bad ]]; then
  echo "test case names that ctest cannot run (';' or a leading '-'):"
  echo "$bad"
  exit 1
fi
echo "check_test_names: $(grep -rhoE 'TEST_CASE\(' tests/ --include='*.cc' | wc -l) test case names, none with ';' or a leading '-'"
