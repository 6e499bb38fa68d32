#!/usr/bin/env bash
# The node tarball's install.sh (deploy/node/install.sh) run the documented
# way, unpacked by an unprivileged user and installed with sudo (issue 45,
# item 4): what it installs is root's and writable by root alone, however
# the unpacker left it. A small tree with the real tarball's layout (stub
# binaries that answer --version; deploy/node-bundle.sh is not run) is made
# by `nobody`, every file and folder group- and other-writable, one binary
# set-uid; install.sh runs as root into a --destdir. Then a tree with a link
# out of it (lib/ -> /etc/shadow) is refused and installs nothing.
#
#   tests/deploy/node_install_test.sh SOURCE_DIR
#
# Root only (it installs as root and makes files as nobody); exit 77 (ctest:
# skipped) otherwise. Leaves nothing behind.
set -euo pipefail
src=$(cd "${1:?usage: node_install_test.sh SOURCE_DIR}" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: node_install_test installs as root (run it as root)"
  exit 77
fi
id nobody >/dev/null 2>&1 || fail "no user 'nobody' to unpack as"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
nobody_gid=$(id -g nobody)

work=$(mktemp -d /tmp/cmax-node-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
# as_nobody CMD...: CMD as the unprivileged unpacker, with a permissive umask.
as_nobody() { setpriv --reuid=nobody --regid="$nobody_gid" --clear-groups -- bash -c 'umask 000; "$@"' _ "$@"; }

# make_tree DIR: the tarball's layout (deploy/node-bundle.sh), made by nobody.
make_tree() {
  local t=$1
  install -d -o nobody -g "$nobody_gid" -m 0777 "$t"
  cp "$src/deploy/node/install.sh" "$t/install.sh"
  chown nobody:"$nobody_gid" "$t/install.sh"
  as_nobody bash -c '
    set -e
    t=$1
    mkdir -p "$t/bin" "$t/lib" "$t/share/cmax/plans" "$t/share/cmax/data/health" \
             "$t/share/cmax/workload"
    for b in cmax-agent cmaxctl cmax-bench; do
      printf "#!/bin/sh\necho \"%s 0.1.0\"\n" "$b" >"$t/bin/$b"
    done
    echo "not a library" >"$t/lib/libgrpc++.so.1.51"
    ln -s libgrpc++.so.1.51 "$t/lib/libgrpc++.so.1"
    echo "ExecStart=/usr/local/bin/cmax-agent" >"$t/share/cmax/cmax-agent.service"
    echo "CMAX_AGENT_ARGS=--plans @SHARE@/plans" >"$t/share/cmax/agent.env"
    echo "glibc 2.34" >"$t/share/cmax/FLOOR"
    uname -m >"$t/share/cmax/ARCH"
    echo "name: quick" >"$t/share/cmax/plans/quick.yaml"
    echo "{}" >"$t/share/cmax/data/health/thresholds.yaml"
    echo "print(1)" >"$t/share/cmax/workload/train.py"
    echo "cmax node tarball" >"$t/README"
    chmod -R a+rwX "$t"
    chmod a+x "$t"/bin/*
    chmod u+s "$t/bin/cmax-bench"
  ' _ "$t"
}

echo "== a tree nobody unpacked, installed by root"
tree=$work/cmax-node-0.1.0
make_tree "$tree"
[[ $(stat -c %U "$tree/share/cmax/workload/train.py") == nobody ]] || fail "the fixture's files are not nobody's"
[[ -n $(find "$tree/bin" -perm -002 -type f) ]] || fail "the fixture's binaries are not other-writable"
dest=$work/dest
"$tree/install.sh" --prefix /opt/cmax --destdir "$dest" >"$work/out" 2>&1 \
  || { cat "$work/out" >&2; fail "install.sh exited $?"; }
root=$dest/opt/cmax
for f in bin/cmax-agent bin/cmaxctl bin/cmax-bench lib/libgrpc++.so.1.51 share/cmax/workload/train.py \
         share/cmax/plans/quick.yaml README; do
  [[ -f $root/$f ]] || fail "$root/$f was not installed"
done
ok "installed: $(cd "$root" && find . -type f | wc -l) files"

# Every installed file and folder (the prefix's and /etc's): root's, no
# group or other write, no set-id bit.
bad=$(find "$dest" ! -type l \( ! -user 0 -o ! -group 0 -o -perm /022 -o -perm /6000 \) \
        -printf '%M %u:%g %p\n')
[[ -z $bad ]] || fail "installed paths not root's alone:"$'\n'"$bad"
bad_links=$(find "$dest" -type l \( ! -user 0 -o ! -group 0 \) -printf '%u:%g %p\n')
[[ -z $bad_links ]] || fail "installed links not root's: $bad_links"
ok "every installed file and folder is root:root, none writable by group or others, no set-id"
[[ $(stat -c %a "$root/bin/cmax-agent") == 755 ]] || fail "bin/cmax-agent is $(stat -c %a "$root/bin/cmax-agent"), not 755"
[[ $(stat -c %a "$root/bin/cmax-bench") == 755 ]] || fail "the set-uid bin/cmax-bench is $(stat -c %a "$root/bin/cmax-bench"), not 755"
[[ $(stat -c %a "$root/share/cmax/workload/train.py") == 644 ]] || fail "train.py is $(stat -c %a "$root/share/cmax/workload/train.py"), not 644"
[[ $(stat -c %a "$root/lib") == 755 ]] || fail "lib/ is $(stat -c %a "$root/lib"), not 755"
ok "programs 755, train.py 644, folders 755"
[[ -L $root/lib/libgrpc++.so.1 && $(readlink "$root/lib/libgrpc++.so.1") == libgrpc++.so.1.51 ]] \
  || fail "lib/libgrpc++.so.1 is not the link to libgrpc++.so.1.51 it was"
ok "a link inside the tree stays a link"
[[ $(stat -c '%U %a' "$dest/etc/cmax/agent.env") == "root 640" ]] \
  || fail "agent.env is $(stat -c '%U %a' "$dest/etc/cmax/agent.env"), not root 640"
grep -q -- "--plans /opt/cmax/share/cmax/plans" "$dest/etc/cmax/agent.env" || fail "agent.env does not name the prefix"
ok "agent.env root's, 640"
# The unpacker can no longer change what root runs.
if as_nobody sh -c "echo evil >>'$root/bin/cmax-agent'" 2>/dev/null; then
  fail "nobody could write the installed bin/cmax-agent"
fi
if as_nobody sh -c "echo evil >'$root/lib/evil.so'" 2>/dev/null; then
  fail "nobody could add a file to the installed lib/"
fi
ok "nobody can neither change bin/cmax-agent nor add to lib/"

echo "== a link out of the tree is refused"
tree2=$work/cmax-node-0.1.0-b
make_tree "$tree2"
as_nobody ln -s /etc/shadow "$tree2/lib/libevil.so"
dest2=$work/dest2
if "$tree2/install.sh" --prefix /opt/cmax --destdir "$dest2" >"$work/out2" 2>&1; then
  fail "install.sh installed a tree with a link to /etc/shadow"
fi
grep -q "lib/libevil.so is a link out of the tarball" "$work/out2" \
  || fail "the refusal does not name the link: $(cat "$work/out2")"
[[ ! -e $dest2/opt/cmax/lib ]] || fail "something was installed: $(ls "$dest2/opt/cmax")"
ok "refused: $(tail -n1 "$work/out2")"

as_nobody ln -s ../../etc/passwd "$tree/lib/libup.so"
if "$tree/install.sh" --prefix /opt/cmax --destdir "$work/dest3" >"$work/out3" 2>&1; then
  fail "install.sh installed a tree with a relative link out of it"
fi
grep -q "lib/libup.so is a link out of the tarball" "$work/out3" || fail "no refusal of lib/libup.so: $(cat "$work/out3")"
ok "a relative link climbing out is refused too"
echo "PASS"
