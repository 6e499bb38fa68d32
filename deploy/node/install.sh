#!/usr/bin/env bash
# Installs this cmax node tarball (deploy/node-bundle.sh made it): the agent,
# cmaxctl and the suites into PREFIX, /etc/cmax/agent.env when there is
# none, and the cmax-agent unit, disabled. Needs nothing of the node but
# glibc, libstdc++ and libgcc no older than the floor in README; every
# other library is in PREFIX/lib.
#
#   sudo ./install.sh [--prefix /opt/cmax] [--destdir DIR]
#
#   --prefix DIR    where it runs from (default /opt/cmax); bin/, lib/ and
#                   share/cmax/ are replaced, nothing else there is touched
#   --destdir DIR   stage everything under DIR (packagers, tests): the unit
#                   and agent.env still name PREFIX; no root needed, no
#                   systemctl
#
# What it installs belongs to root (when run as root) and is writable by
# its owner only (directories and programs 0755, other files 0644; no
# set-id bits), whoever unpacked the tarball: the agent runs it as root. A
# symbolic link is kept as a link only when it points inside the tarball; a
# link out of it, a hard link or a special file is refused.
#
# Then: put the coordinator's agent token in /etc/cmax/agent-token (mode 0600), set
# --coordinator in /etc/cmax/agent.env, and `systemctl enable --now cmax-agent`.
# Exit: 0 installed, 1 this node cannot run it (another machine, or older
# glibc or libstdc++: the loader's message is shown), 2 usage or a write that failed.
set -euo pipefail
umask 022
here=$(cd "$(dirname "$0")" && pwd)
prefix=/opt/cmax
destdir=
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $prefix == /* ]] || { echo "install.sh: --prefix must be an absolute path" >&2; exit 2; }
[[ $prefix =~ ^[A-Za-z0-9/._-]+$ ]] || { echo "install.sh: --prefix has characters a unit file cannot hold: $prefix" >&2; exit 2; }
if [[ -z $destdir && $(id -u) -ne 0 ]]; then
  echo "install.sh: run as root (sudo ./install.sh), or stage with --destdir DIR" >&2
  exit 2
fi
for f in bin/cmax-agent bin/cmaxctl bin/cmax-bench share/cmax/agent.env share/cmax/cmax-agent.service; do
  [[ -e $here/$f ]] || { echo "install.sh: $here/$f is missing: not a whole cmax node tarball" >&2; exit 2; }
done

# The machine it was built for (a host with qemu-user's binfmt entries would
# run the other one's binaries, emulated, without a word).
built_for=$(cat "$here/share/cmax/ARCH" 2>/dev/null || true)
[[ -n $built_for ]] || { echo "install.sh: $here/share/cmax/ARCH is missing: not a whole cmax node tarball" >&2; exit 2; }
if [[ $built_for != "$(uname -m)" ]]; then
  echo "install.sh: this tarball is for $built_for and this node is $(uname -m); take cmax-node-*-$(uname -m).tar.gz; nothing was installed" >&2
  exit 1
fi

root=$destdir$prefix
fail() { echo "install.sh: $*; what was installed before is as it was" >&2; exit 2; }
# Into a new folder beside the old one, then swapped in: an interrupted
# install leaves the old one whole.
install -d "$(dirname "$root")" || fail "cannot create $(dirname "$root")"
stage=$(mktemp -d "$root.new.XXXXXX") || fail "cannot write beside $root"
trap 'rm -rf "$stage"' EXIT
chmod 0700 "$stage"  # nobody else reaches the copy while it is checked and owned
# The unpacked tree is its unpacker's: anything in it that is not a plain
# file, a folder or a link inside the tree is refused before a copy.
for d in bin lib share share/cmax README; do
  if [[ -L $here/$d ]]; then fail "$here/$d is a symbolic link: not a cmax node tarball as unpacked"; fi
done
odd=$(find "$here/bin" "$here/lib" "$here/share/cmax" "$here/README" \
        \( \( ! -type f ! -type d ! -type l \) -o \( -type f -links +1 \) \) -print -quit)
[[ -z $odd ]] || fail "$odd is a special file or a hard link: not a cmax node tarball as unpacked"
cp -a --no-preserve=ownership "$here/bin" "$here/lib" "$stage/" \
  || fail "cannot copy into $stage (disk full?)"
install -d "$stage/share" && cp -a --no-preserve=ownership "$here/share/cmax" "$stage/share/" \
  && cp --no-preserve=ownership "$here/README" "$stage/" \
  || fail "cannot copy into $stage (disk full?)"
stage_real=$(realpath "$stage")
# Checked on the copy, which only root can change now: every link resolves
# inside the installed tree (a relative one, followed through the copy).
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  resolved=$(realpath -m -- "$link")
  if [[ $target == /* || $resolved != "$stage_real"/* ]]; then
    fail "${link#"$stage"/} is a link out of the tarball (to $target)"
  fi
done < <(find "$stage" -type l -print0)
# Root's and writable by root alone: the agent runs these as root.
[[ $(id -u) -ne 0 ]] || chown -R --no-dereference 0:0 "$stage" || fail "cannot give $stage to root"
find "$stage" -type d -exec chmod 0755 {} + \
  && find "$stage" -type f -perm /111 -exec chmod 0755 {} + \
  && find "$stage" -type f ! -perm /111 -exec chmod 0644 {} + \
  || fail "cannot set the modes in $stage"

# Whether this node's C and C++ runtime can load the binaries, before
# anything is installed (run from the root-owned copy): the loader names
# what is missing.
floor=$(cat "$stage/share/cmax/FLOOR" 2>/dev/null || echo "see README")
for b in cmax-agent cmaxctl cmax-bench; do
  if ! out=$("$stage/bin/$b" --version 2>&1); then
    echo "install.sh: bin/$b does not run on this node: ${out##*$'\n'}" >&2
    echo "install.sh: the tarball needs glibc and libstdc++ no older than $floor" \
         "(RHEL/Rocky 9, Ubuntu 22.04 or later); nothing was installed" >&2
    exit 1
  fi
done
version=$("$stage/bin/cmax-agent" --version | awk '{print $2; exit}')
install -d "$root"
if [[ $(id -u) -eq 0 ]] && [[ $(stat -c %u "$root") -ne 0 || -n $(find "$root" -maxdepth 0 -perm /022) ]]; then
  fail "$root is not root's or is writable by group or others ($(stat -c '%U %A' "$root")): the agent runs what is installed there as root"
fi
for d in bin lib share README; do
  rm -rf "$root/$d.old"
  [[ -e $root/$d ]] && mv "$root/$d" "$root/$d.old"
  mv "$stage/$d" "$root/$d"
done
rm -rf "$root/bin.old" "$root/lib.old" "$root/share.old" "$root/README.old"

etc=$destdir/etc/cmax
install -d -m 0750 "$etc"
if [[ ! -f $etc/agent.env ]]; then
  (umask 027; sed "s|@SHARE@|$prefix/share/cmax|" "$root/share/cmax/agent.env" >"$etc/agent.env")
  echo "wrote $etc/agent.env: set --coordinator there"
else
  echo "kept $etc/agent.env as it was"
fi
unit_dir=$destdir/etc/systemd/system
install -d "$unit_dir"
sed -e "s|/usr/local/bin/cmax-agent|$prefix/bin/cmax-agent|" \
    -e "s|file:///usr/local/share/doc/cmax/README.md|file://$prefix/README|" \
    "$root/share/cmax/cmax-agent.service" >"$unit_dir/cmax-agent.service.tmp"
chmod 0644 "$unit_dir/cmax-agent.service.tmp"
mv "$unit_dir/cmax-agent.service.tmp" "$unit_dir/cmax-agent.service"
if [[ -z $destdir ]] && command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  systemctl daemon-reload
fi

echo "installed cmax $version to $prefix (unit $unit_dir/cmax-agent.service, not enabled)"
[[ -f $etc/agent-token ]] || echo "next: copy the coordinator's /etc/cmax/agent-token to /etc/cmax/agent-token (chmod 0600)"
echo "then: systemctl enable --now cmax-agent"
