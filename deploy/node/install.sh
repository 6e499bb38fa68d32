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
# Then: put the coordinator's token in /etc/cmax/token (mode 0600), set
# --coordinator in /etc/cmax/agent.env, and `systemctl enable --now cmax-agent`.
# Exit: 0 installed, 1 this node cannot run it (another machine, or older
# glibc or libstdc++: the loader's message is shown), 2 usage or a write that failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=/opt/cmax
destdir=
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# Whether this node's C and C++ runtime can load the binaries, before
# anything is written: the loader names what is missing.
floor=$(cat "$here/share/cmax/FLOOR" 2>/dev/null || echo "see README")
for b in cmax-agent cmaxctl cmax-bench; do
  if ! out=$("$here/bin/$b" --version 2>&1); then
    echo "install.sh: bin/$b does not run on this node: ${out##*$'\n'}" >&2
    echo "install.sh: the tarball needs glibc and libstdc++ no older than $floor" \
         "(RHEL/Rocky 9, Ubuntu 22.04 or later); nothing was installed" >&2
    exit 1
  fi
done
version=$("$here/bin/cmax-agent" --version | awk '{print $2; exit}')

root=$destdir$prefix
fail() { echo "install.sh: $*; what was installed before is as it was" >&2; exit 2; }
# Into a new folder beside the old one, then swapped in: an interrupted
# install leaves the old one whole.
install -d "$(dirname "$root")" || fail "cannot create $(dirname "$root")"
stage=$(mktemp -d "$root.new.XXXXXX") || fail "cannot write beside $root"
trap 'rm -rf "$stage"' EXIT
cp -a "$here/bin" "$here/lib" "$stage/" || fail "cannot copy into $stage (disk full?)"
install -d "$stage/share" && cp -a "$here/share/cmax" "$stage/share/" && cp "$here/README" "$stage/" \
  || fail "cannot copy into $stage (disk full?)"
chmod 0755 "$stage"
install -d "$root"
for d in bin lib share README; do
  rm -rf "$root/$d.old"
  [[ -e $root/$d ]] && mv "$root/$d" "$root/$d.old"
  mv "$stage/$d" "$root/$d"
done
rm -rf "$root/bin.old" "$root/lib.old" "$root/share.old" "$root/README.old"

etc=$destdir/etc/cmax
install -d -m 0750 "$etc"
if [[ ! -f $etc/agent.env ]]; then
  (umask 027; sed "s|@SHARE@|$prefix/share/cmax|" "$here/share/cmax/agent.env" >"$etc/agent.env")
  echo "wrote $etc/agent.env: set --coordinator there"
else
  echo "kept $etc/agent.env as it was"
fi
unit_dir=$destdir/etc/systemd/system
install -d "$unit_dir"
sed -e "s|/usr/local/bin/cmax-agent|$prefix/bin/cmax-agent|" \
    -e "s|file:///usr/local/share/doc/cmax/README.md|file://$prefix/README|" \
    "$here/share/cmax/cmax-agent.service" >"$unit_dir/cmax-agent.service.tmp"
chmod 0644 "$unit_dir/cmax-agent.service.tmp"
mv "$unit_dir/cmax-agent.service.tmp" "$unit_dir/cmax-agent.service"
if [[ -z $destdir ]] && command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
  systemctl daemon-reload
fi

echo "installed cmax $version to $prefix (unit $unit_dir/cmax-agent.service, not enabled)"
[[ -f $etc/token ]] || echo "next: copy the coordinator's token to /etc/cmax/token (chmod 0600)"
echo "then: systemctl enable --now cmax-agent"
