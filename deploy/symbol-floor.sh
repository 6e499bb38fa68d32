#!/usr/bin/env bash
# The oldest C and C++ runtime a set of ELF files can run on: reads the
# versioned symbols each file needs (objdump -T, the *UND* entries) and
# prints, per file, the highest GLIBC_, GLIBCXX_ and CXXABI_ version and the
# symbols that need a version above the floor.
#
#   deploy/symbol-floor.sh [--glibc V] [--glibcxx V] [--cxxabi V] FILE...
#   deploy/symbol-floor.sh --print-floor     the floor, one line
#
# Default floor: glibc 2.34, GLIBCXX_3.4.29, CXXABI_1.3.13: the system
# libraries of RHEL/Rocky 9 (glibc 2.34, GCC 11's libstdc++) and Ubuntu
# 22.04 (glibc 2.35). Sources: the libstdc++ manual's ABI policy table
# (gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html: GCC 11.1 added
# GLIBCXX_3.4.29 and CXXABI_1.3.13, GCC 12.1 GLIBCXX_3.4.30); RHEL 9 ships
# glibc 2.34 and gcc 11 (RHEL 9 release notes).
# Exit: 0 every file within the floor, 1 some file above it (each named
# with its symbols), 2 usage or a file that is not a readable ELF file.
set -euo pipefail
glibc=2.34
glibcxx=3.4.29
cxxabi=1.3.13
files=()
print_floor=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --glibc) glibc=$2; shift 2 ;;
    --glibcxx) glibcxx=$2; shift 2 ;;
    --cxxabi) cxxabi=$2; shift 2 ;;
    --print-floor) print_floor=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "symbol-floor.sh: unknown option '$1'" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
if [[ $print_floor -eq 1 ]]; then
  echo "glibc $glibc, GLIBCXX_$glibcxx, CXXABI_$cxxabi"
  exit 0
fi
[[ ${#files[@]} -gt 0 ]] || { echo "usage: symbol-floor.sh [--glibc V] [--glibcxx V] [--cxxabi V] FILE..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "symbol-floor.sh: objdump not found (binutils)" >&2; exit 2; }

# Whether version $1 is above $2 (dotted numbers).
above() { [[ $1 != "$2" && $(printf '%s\n' "$1" "$2" | sort -V | tail -n1) == "$1" ]]; }

status=0
for f in "${files[@]}"; do
  if ! table=$(objdump -T "$f" 2>&1); then
    echo "symbol-floor.sh: $f: not a dynamic ELF file: ${table##*$'\n'}" >&2
    exit 2
  fi
  # "(GLIBCXX_3.4.30) _ZNSt18condition_variable4wait..." for every needed symbol.
  needed=$(awk '$0 ~ /\*UND\*/ && match($0, /\((GLIBC|GLIBCXX|CXXABI)_[0-9.]+\)/) {
                  print substr($0, RSTART + 1, RLENGTH - 2), $NF }' <<<"$table" | sort -u)
  summary=()
  over=()
  for family in GLIBC GLIBCXX CXXABI; do
    case $family in
      GLIBC) floor=$glibc ;;
      GLIBCXX) floor=$glibcxx ;;
      CXXABI) floor=$cxxabi ;;
    esac
    highest=$(awk -v p="${family}_" 'index($1, p) == 1 { print substr($1, length(p) + 1) }' <<<"$needed" |
      sort -V | tail -n1)
    summary+=("${family}_${highest:-none}")
    [[ -n $highest ]] || continue
    while read -r version symbol; do
      v=${version#"${family}_"}
      [[ $version == "${family}_"* ]] || continue
      if above "$v" "$floor"; then over+=("$version $symbol"); fi
    done <<<"$needed"
  done
  if [[ ${#over[@]} -eq 0 ]]; then
    echo "$f: within the floor (needs ${summary[*]})"
  else
    echo "$f: ABOVE the floor glibc $glibc, GLIBCXX_$glibcxx, CXXABI_$cxxabi (needs ${summary[*]}):"
    printf '  %s\n' "${over[@]}"
    status=1
  fi
done
exit $status
