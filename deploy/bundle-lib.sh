# What deploy/gpu-bundle.sh and deploy/node-bundle.sh share: one build
# folder configured with CMAX_BUNDLE=ON (CMakeLists.txt says what is linked
# how), the copy of the libraries a binary still loads, and the checks a
# carried folder must pass: the runtime floor (deploy/symbol-floor.sh) and
# nothing loaded from outside the folder but what every node has.
# Sourced, not run; every function dies (exit 2) on what stops a build and
# returns 1 on a failed check.

bundle_die() { echo "${bundle_tool:-bundle}: $*" >&2; exit 2; }

# The CUDA compiler: PATH, then /usr/local/cuda/bin; prints nothing without one.
bundle_find_nvcc() {
  local nvcc
  nvcc=$(command -v nvcc || true)
  [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  echo "$nvcc"
}

# CMAKE_CUDA_ARCHITECTURES for a carried binary: sm_80, sm_89, sm_90 and
# sm_100 where `nvcc --list-gpu-arch` lists them, the highest also as PTX
# (a newer GPU JIT-compiles it).
bundle_cuda_archs() {
  local nvcc=$1 listed a i archs=
  local picked=()
  listed=$("$nvcc" --list-gpu-arch 2>/dev/null | tr '\n' ' ')
  for a in 80 89 90 100; do
    [[ " $listed " == *" compute_$a "* ]] && picked+=("$a")
  done
  [[ ${#picked[@]} -gt 0 ]] || bundle_die "nvcc --list-gpu-arch lists none of sm_80 sm_89 sm_90 sm_100 ($listed)"
  for ((i = 0; i < ${#picked[@]}; i++)); do
    if ((i == ${#picked[@]} - 1)); then a=${picked[$i]}; else a=${picked[$i]}-real; fi
    archs=${archs:+$archs;}$a
  done
  echo "$archs"
}

# bundle_build ROOT BUILD JOBS NVCC ARCHS TARGET...: configures BUILD once
# (CMAX_BUNDLE=ON, no tests; CUDA where NVCC is given) and builds TARGETs
# with ccache.
bundle_build() {
  local root=$1 build=$2 jobs=$3 nvcc=$4 archs=$5
  shift 5
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/cmax-ccache}
  export CCACHE_BASEDIR=$root
  export CCACHE_NOHASHDIR=1
  local args=() generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  if [[ -n $nvcc ]]; then
    args+=(-DCMAX_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$archs")
  else
    args+=(-DCMAX_ENABLE_CUDA=OFF)
  fi
  mkdir -p "$build"
  if [[ ! -f $build/CMakeCache.txt ]]; then
    args=("${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAX_BUNDLE=ON
          -DCMAX_BUILD_TESTS=OFF "${args[@]}" "${bundle_cmake_args[@]}")
  fi
  cmake -S "$root" -B "$build" "${args[@]}" >"$build/configure.log" 2>&1 \
    || { tail -n 30 "$build/configure.log" >&2; bundle_die "cmake failed (log: $build/configure.log)"; }
  grep -q '^CMAX_BUNDLE:BOOL=ON' "$build/CMakeCache.txt" \
    || bundle_die "$build is not a bundle build (CMAX_BUNDLE is not ON there); use another --build-dir"
  cmake --build "$build" --target "$@" -j "$jobs" \
    || bundle_die "build failed (cmake --build $build --target $*)"
}

# A cross build sets these (deploy/node-bundle.sh --arch): more arguments
# for the first configure (the toolchain file), the target's strip, and its
# loader, whose --list is ldd for binaries this machine runs through
# qemu-user (binfmt).
bundle_cmake_args=()
bundle_strip=strip
bundle_ldso=

# bundle_ldd FILE: the libraries FILE loads, as ldd prints them.
bundle_ldd() {
  if [[ -n $bundle_ldso ]]; then
    "$bundle_ldso" --list "$1"
  else
    ldd "$1"
  fi
}

# What a node provides: glibc's libraries, libstdc++, libgcc_s, and the
# NVIDIA libraries the GPU suites load at run time (the driver's libcuda,
# cuBLASLt, NCCL).
bundle_node_provided='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|librt|libpthread|libutil|libresolv|libstdc\+\+|libgcc_s|libcuda|libcublasLt|libcublas|libnccl)\.so'

# bundle_copy_libs DEST BINARY...: copies into DEST/lib every library the
# binaries load that a node does not provide (their run path finds it
# there), debug info stripped.
bundle_copy_libs() {
  local dest=$1 b name path
  shift
  mkdir -p "$dest/lib"
  for b in "$@"; do
    while read -r name path; do
      [[ $name =~ $bundle_node_provided ]] && continue
      [[ -f $path ]] || bundle_die "$b needs $name, which is not found on this machine"
      [[ -e $dest/lib/$name ]] || cp -L "$path" "$dest/lib/$name"
    done < <(bundle_ldd "$b" | awk '/=>/ && $3 ~ /^\// {print $1, $3}')
  done
  "$bundle_strip" --strip-debug "$dest"/lib/* 2>/dev/null || true
}

# bundle_check_floor ROOT DEST: every binary and carried library within the
# floor (deploy/symbol-floor.sh prints each, and what is above it).
bundle_check_floor() {
  local root=$1 dest=$2 out
  local files=("$dest"/bin/* "$dest"/lib/*)
  [[ -e ${files[-1]} ]] || files=("$dest"/bin/*)
  if out=$("$root/deploy/symbol-floor.sh" "${files[@]}" 2>&1); then
    return 0
  fi
  echo "$out" | grep -v ': within the floor' >&2
  echo "${bundle_tool:-bundle}: FAIL: above the runtime floor (deploy/symbol-floor.sh)" >&2
  return 1
}

# bundle_check_ldd DEST: ldd of every binary names nothing outside DEST/lib
# but what a node provides. ldd of an executable lists the libraries of its
# libraries too, resolved as the loader will (the executable's DT_RPATH
# applies to them, as none of the carried libraries has a run path of its
# own: checked here too).
bundle_check_ldd() {
  local dest=$1 f name arrow path rest bad=0 lib
  lib=$(readlink -f "$dest/lib")
  for f in "$dest"/lib/*; do
    [[ -f $f ]] || continue
    if readelf -d "$f" 2>/dev/null | grep -qE '\((RPATH|RUNPATH)\)'; then
      echo "${bundle_tool:-bundle}: FAIL: lib/${f##*/} has a run path of its own" >&2
      bad=1
    fi
  done
  for f in "$dest"/bin/*; do
    [[ -f $f ]] || continue
    while read -r name arrow path rest; do
      [[ $arrow == "=>" ]] || continue
      if [[ $path == not ]]; then
        echo "${bundle_tool:-bundle}: FAIL: ${f#"$dest"/}: $name not found" >&2
        bad=1
        continue
      fi
      [[ $(readlink -f "$path") == "$lib"/* ]] && continue
      [[ $name =~ $bundle_node_provided ]] && continue
      echo "${bundle_tool:-bundle}: FAIL: ${f#"$dest"/}: $name => $path is outside the folder" >&2
      bad=1
    done < <(bundle_ldd "$f" 2>/dev/null)
  done
  return $bad
}

# The floor a folder keeps, for its README: "glibc 2.34, GLIBCXX_3.4.29, ...".
bundle_floor_text() { "$1/deploy/symbol-floor.sh" --print-floor; }
