#!/usr/bin/env bash
# The Debian packages of an earlier commit, for the upgrade test: the commit's
# tree (git archive, so it packages as plain PROJECT_VERSION, older than any
# 0.1.0+gitN of a checkout), built without tests or GPU suites, cpack'd.
# Kept in BUILD_DIR/deploy-old/COMMIT/debs and reused; ccache shares the
# objects that did not change with the main build.
#   tests/deploy/cluster/old_debs.sh SOURCE_DIR BUILD_DIR COMMIT   -> prints the debs folder
set -euo pipefail
src=${1:?usage: old_debs.sh SOURCE_DIR BUILD_DIR COMMIT}
build=${2:?build dir}
commit=${3:?commit}
full=$(git -C "$src" rev-parse --verify "$commit^{commit}" 2>/dev/null) ||
  { echo "old_debs.sh: $commit is not a commit of $src (a shallow clone? fetch its history)" >&2; exit 2; }
dir=$build/deploy-old/${full:0:12}
if [[ -f $dir/debs/.complete ]]; then echo "$dir/debs"; exit 0; fi
rm -rf "$dir"
mkdir -p "$dir/src" "$dir/debs"
git -C "$src" archive "$full" | tar -x -C "$dir/src"
# The build folder inside the tree, as tests/run.sh has it (SOURCE/build):
# the compile lines then read the same relative to CCACHE_BASEDIR, and
# ccache serves every object whose source did not change since COMMIT.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/cmax-ccache}
export CCACHE_BASEDIR=$dir/src
export CCACHE_NOHASHDIR=1
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
{
  cmake -S "$dir/src" -B "$dir/src/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAX_BUILD_TESTS=OFF -DCMAX_ENABLE_CUDA=OFF &&
  cmake --build "$dir/src/build" -j "${CMAX_JOBS:-$(nproc)}" \
    --target cmax-coordinator cmaxctl cmax-agent cmax-bench &&
  (cd "$dir/src/build" && cpack -G DEB -B "$dir/debs")
} >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; echo "old_debs.sh: building $commit failed (log: $dir/build.log)" >&2; exit 1; }
rm -rf "$dir/debs/_CPack_Packages"
ls "$dir"/debs/cmax-agent_*.deb "$dir"/debs/cmax-coordinator_*.deb "$dir"/debs/cmax-bench_*.deb >/dev/null ||
  { echo "old_debs.sh: cpack made no cmax-agent/coordinator/bench package" >&2; exit 1; }
# The build folder is large and not needed again.
rm -rf "$dir/src"
touch "$dir/debs/.complete"
echo "$dir/debs"
