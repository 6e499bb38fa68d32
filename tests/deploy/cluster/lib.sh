# Booted test hosts for the deploy tests: Debian bookworm trees with systemd
# as PID 1 (systemd-nspawn --boot), each in a network namespace of its own,
# joined by veth pairs to a bridge in one more namespace. Nothing is given an
# address outside those namespaces; nothing in them reaches beyond them.
#
# Sourced, not run. The caller sets CL_WORK (a scratch folder this test owns)
# and CL_PREFIX (1-6 of [a-z0-9]: names of namespaces, machines, cgroups),
# then calls, in order:
#   cl_deb_packages FIELD DEB...     what the packages' Depends (Recommends) name
#   cl_rootfs BUILD_DIR PACKAGE...   the base tree (debootstrap, once per
#                                    package set, kept in BUILD_DIR/deploy-rootfs)
#   cl_fabric_up                     the bridge namespace
#   cl_host_add NAME INDEX           overlay tree, namespace, veth, /etc/hosts
#   cl_host_boot NAME [NSPAWN_ARG...] boot it; returns once systemd is running
#   cl_x NAME CMD...                 run a command inside (all its namespaces)
#   cl_copy_in NAME SRC DEST [MODE]  a file into the host's tree (cl_copy_out back)
#   cl_install_debs NAME DIR LOG PACKAGE...  apt-get install of DIR's .debs there
#   cl_host_poweroff NAME            `systemctl poweroff` inside, wait for exit
#   cl_down                          stop and remove everything
#   cl_leaks                         print what cl_down left behind (none: "")
#   cl_finish RC OUT NAME...         an EXIT trap's work: journals to OUT, cl_down,
#                                    the leak check, CL_WORK removed; sets CL_RC
# Host addresses: 10.251.K.(10+INDEX), K derived from CL_PREFIX (tests/hosts.sh's
# scheme, so parallel tests never collide).
#
# Commands inside a host go through nsenter -t LEADER -a (machinectl and
# systemd-run -M need a systemd on the outside, which a CI machine lacks).
# Each nspawn runs in a cgroup of its own (CL_PREFIX-NAME) under the root of
# every hierarchy it uses, so two hosts never share nspawn's payload/ folder.

cl_fail() { echo "FAIL: $*" >&2; exit 1; }
cl_log() { printf '== %s %s\n' "$(date +%T)" "$*"; }

cl_net() {
  local k=$(( $(printf '%s' "$CL_PREFIX" | cksum | cut -d' ' -f1) % 200 + 20 ))
  echo "10.251.$k"
}
cl_addr() { echo "$(cl_net).$((10 + $2))"; }  # cl_addr NAME INDEX

# The cgroup hierarchies nspawn writes to here: the named systemd one and the
# unified one on a hybrid host, the root on a pure cgroup2 host.
cl_cgroup_roots() {
  if [[ -d /sys/fs/cgroup/systemd && -d /sys/fs/cgroup/unified ]]; then
    echo /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
  elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    echo /sys/fs/cgroup
  else
    echo /sys/fs/cgroup/systemd
  fi
}

# cl_rootfs BUILD_DIR PACKAGE...: prints the path of a bookworm minbase tree
# with systemd, dbus and the packages named, made by debootstrap from the
# mirror apt already uses on this machine, once per set of packages.
# cl_deb_packages FIELD DEB...: the package names a field of the .debs
# (Depends, Recommends) asks for: the first of alternatives, no versions or
# :any, none of cmax's own; one a line, sorted.
cl_deb_packages() {
  local field=$1 d; shift
  for d in "$@"; do dpkg-deb -f "$d" "$field"; echo; done | tr ',' '\n' |
    sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g' |
    { grep -v -e '^$' -e '^cmax-' || true; } | sort -u
}

# debootstrap takes real packages only: a virtual one a Depends names
# (libspdlog1.10-fmt9) becomes the package that provides it.
cl_real_package() {
  if apt-cache show --no-all-versions "$1" >/dev/null 2>&1 &&
     [[ -n $(apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Package: //p') ]]; then
    echo "$1"
    return
  fi
  local p
  p=$(apt-cache showpkg "$1" 2>/dev/null | sed -n '/^Reverse Provides:/,$p' | sed -n '2{s/ .*//;p}')
  [[ -n $p ]] || p=$(dpkg-query -W -f '${Package}\t${Provides}\n' 2>/dev/null |
                     awk -F'\t' -v n="$1" '{split($2, a, /, */); for (i in a) {sub(/ .*/, "", a[i]); if (a[i] == n) {print $1; exit}}}')
  [[ -n $p ]] || cl_fail "no package provides $1 (apt-get update?)"
  echo "$p"
}

cl_rootfs() {
  local build=$1; shift
  local pkgs key dir p real=()
  for p in "$@"; do real+=("$(cl_real_package "$p")"); done
  pkgs=$(printf '%s\n' systemd systemd-sysv dbus "${real[@]}" | sort -u | paste -sd, -)
  key=$(printf '%s' "$pkgs" | sha256sum | cut -c1-12)
  dir=$build/deploy-rootfs/bookworm-$key
  mkdir -p "$build/deploy-rootfs"
  # Two deploy tests that ask for the same tree (ctest -j) make it once: the
  # second waits for the first.
  (
    flock 9
    cl_rootfs_make "$dir" "$pkgs"
  ) 9>"$build/deploy-rootfs/.lock" || exit 1
  echo "$dir"
}

# cl_rootfs_make DIR PACKAGES: debootstrap into DIR unless it is complete.
cl_rootfs_make() {
  local dir=$1 pkgs=$2 mirror
  [[ -f $dir/.cmax-complete ]] && return 0
  command -v debootstrap >/dev/null || cl_fail "debootstrap is missing: run deploy/install-deps.sh --with-tests"
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [[ -n $mirror ]] || mirror=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [[ -n $mirror ]] || mirror=http://deb.debian.org/debian
  rm -rf "$dir"
  mkdir -p "$dir"
  cl_log "debootstrap bookworm ($pkgs) from $mirror into $dir" >&2
  if ! debootstrap --variant=minbase --include="$pkgs" bookworm "$dir" "$mirror" \
      >"$dir.log" 2>&1; then
    tail -20 "$dir.log" >&2
    rm -rf "$dir"
    cl_fail "debootstrap failed (log: $dir.log)"
  fi
  # A host of its own: no machine id (systemd makes one at first boot), no
  # host name of the builder's, a root without a password nobody logs in with.
  : >"$dir/etc/machine-id"
  rm -f "$dir/etc/hostname"
  # Smaller journals: the test reads them, nothing keeps them.
  mkdir -p "$dir/etc/systemd/journald.conf.d"
  printf '[Journal]\nStorage=persistent\nSystemMaxUse=32M\n' \
    >"$dir/etc/systemd/journald.conf.d/cmax-test.conf"
  apt-get -o Dir="$dir" clean >/dev/null 2>&1 || rm -f "$dir"/var/cache/apt/archives/*.deb
  touch "$dir/.cmax-complete"
}

# cl_cmax_rootfs BUILD_DIR DEBS_DIR: the base tree of the deploy tests that
# boot hosts (cluster_test, faults/fault_loop_test): what cmax's packages
# depend on and recommend, the Slurm daemons and munge, and a few tools; one
# tree for both, so a CI run bootstraps it once.
cl_cmax_rootfs() {
  local build=$1 debs=$2 deps
  deps=$({ cl_deb_packages Depends "$debs"/*.deb
           cl_deb_packages Recommends "$debs"/cmax-bench_*.deb; } | sort -u)
  # perftest and openmpi-bin are large and need RDMA/MPI hardware to do
  # anything; the suites that use them say "could not run" without them.
  deps=$(echo "$deps" | grep -vx -e perftest -e openmpi-bin)
  # shellcheck disable=SC2086
  cl_rootfs "$build" $deps iproute2 procps slurmctld slurmd slurm-client munge
}

cl_fabric_up() {
  local ns=$CL_PREFIX-fab
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add br0 type bridge
  ip -n "$ns" link set br0 up
}

# cl_host_add NAME INDEX BASE_ROOTFS: a copy-on-write tree over the base, a
# namespace with eth0 on the bridge, the host name, and /etc/hosts naming
# every host given in CL_HOSTS ("name:index ...").
cl_host_add() {
  local name=$1 idx=$2 base=$3
  local ns=$CL_PREFIX-$name root=$CL_WORK/hosts/$name
  mkdir -p "$root"/{upper,work,merged}
  mount -t overlay "cl-$CL_PREFIX-$name" \
    -o "lowerdir=$base,upperdir=$root/upper,workdir=$root/work" "$root/merged"
  echo "$name" >"$root/merged/etc/hostname"
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    local h
    for h in $CL_HOSTS; do echo "$(cl_addr "${h%%:*}" "${h##*:}") ${h%%:*}"; done
  } >"$root/merged/etc/hosts"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "v$CL_PREFIX$idx" type veth peer name eth0 netns "$ns"
  ip link set "v$CL_PREFIX$idx" netns "$CL_PREFIX-fab"
  ip -n "$CL_PREFIX-fab" link set "v$CL_PREFIX$idx" master br0 up
  ip -n "$ns" addr add "$(cl_addr "$name" "$idx")/24" dev eth0
  ip -n "$ns" link set eth0 up
}

# cl_host_boot NAME [NSPAWN_ARG...]: boots the host in the background (its
# console to CL_WORK/hosts/NAME/console.log) and waits up to 60 s for
# `systemctl is-system-running` to answer running or degraded. A reboot
# inside the host (nspawn exits 133) powers it on again, as a machine's
# firmware would, after running CL_WORK/hosts/NAME/on-reboot if that is an
# executable (a test resets what a real reboot resets); every boot appends
# a line to CL_WORK/hosts/NAME/boots.
cl_host_boot() {
  local name=$1; shift
  local root=$CL_WORK/hosts/$name r
  for r in $(cl_cgroup_roots); do mkdir -p "$r/$CL_PREFIX-$name"; done
  (
    for r in $(cl_cgroup_roots); do echo $BASHPID >"$r/$CL_PREFIX-$name/cgroup.procs"; done
    while :; do
      date +%s.%N >>"$root/boots"
      systemd-nspawn --boot --register=no --keep-unit --quiet --console=read-only \
        -D "$root/merged" -M "$CL_PREFIX-$name" --hostname="$name" \
        --network-namespace-path="/run/netns/$CL_PREFIX-$name" "$@" \
        </dev/null >>"$root/console.log" 2>&1 &
      echo $! >"$root/nspawn.pid"
      rc=0
      wait $! || rc=$?
      [[ $rc -eq 133 ]] || exit "$rc"
      if [[ -x $root/on-reboot ]]; then "$root/on-reboot" >>"$root/console.log" 2>&1 || true; fi
    done
  ) &
  echo $! >"$root/supervisor.pid"
  cl_host_wait_running "$name" 60
}

# cl_host_wait_running NAME SECONDS: until `systemctl is-system-running`
# answers running or degraded inside the host.
cl_host_wait_running() {
  local name=$1 limit=$2 root=$CL_WORK/hosts/$1
  local state="" deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    if cl_leader "$name" >/dev/null 2>&1; then
      state=$(cl_x "$name" systemctl is-system-running 2>/dev/null || true)
      [[ $state == running || $state == degraded ]] && break
    fi
    kill -0 "$(cat "$root/supervisor.pid")" 2>/dev/null || { tail -20 "$root/console.log" >&2; cl_fail "$name: systemd-nspawn exited while booting"; }
    sleep 0.3
  done
  [[ $state == running || $state == degraded ]] ||
    { tail -20 "$root/console.log" >&2; cl_fail "$name: not running $limit s after boot (state '$state')"; }
  if [[ $state == degraded ]]; then
    echo "note: $name booted degraded:" >&2
    cl_x "$name" systemctl --failed --no-legend --no-pager >&2 || true
  fi
}

# The host's PID 1 as seen from here: the child of its systemd-nspawn.
cl_leader() {
  local pidfile=$CL_WORK/hosts/$1/nspawn.pid pid
  [[ -f $pidfile ]] || return 1
  pid=$(cat "$pidfile")
  pgrep -P "$pid" 2>/dev/null | head -1 | grep .
}

cl_x() {
  local name=$1; shift
  local leader
  leader=$(cl_leader "$name") || cl_fail "$name is not running"
  nsenter -t "$leader" -a -- "$@"
}

# cl_host_running NAME: whether its nspawn is alive.
cl_host_running() {
  local pidfile=$CL_WORK/hosts/$1/supervisor.pid
  [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# cl_host_poweroff NAME [--now]: an orderly power-off (or, with --now, the
# plug pulled: SIGKILL to the container's init and nspawn); waits for nspawn.
cl_host_poweroff() {
  local name=$1 how=${2:-} pid
  pid=$(cat "$CL_WORK/hosts/$name/supervisor.pid")
  if [[ $how == --now ]]; then
    kill -9 "$(cl_leader "$name")" 2>/dev/null || true
  else
    cl_x "$name" systemctl poweroff >/dev/null 2>&1 || true
  fi
  local deadline=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; cl_fail "$name did not power off within 60 s"; }
  wait "$pid" 2>/dev/null || true
  cl_cgroup_clean "$name"
}

# Removes a stopped host's cgroups (nspawn leaves payload/ and supervisor/).
cl_cgroup_clean() {
  local r d
  for r in $(cl_cgroup_roots); do
    [[ -d $r/$CL_PREFIX-$1 ]] || continue
    find "$r/$CL_PREFIX-$1" -depth -type d 2>/dev/null | while read -r d; do
      # Anything still in it (a process nspawn left) is killed first.
      xargs -r kill -9 <"$d/cgroup.procs" 2>/dev/null || true
      rmdir "$d" 2>/dev/null || { sleep 0.5; rmdir "$d" 2>/dev/null || true; }
    done
  done
}

cl_down() {
  local root name
  for root in "$CL_WORK"/hosts/*/; do
    [[ -d $root ]] || continue
    name=$(basename "$root")
    if cl_host_running "$name"; then cl_host_poweroff "$name" --now 2>/dev/null || true; fi
    cl_cgroup_clean "$name"
    # Mounts inside the tree first (loop devices, binds), then the overlay.
    awk -v p="$root" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
  done
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$CL_PREFIX-" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  local loopdev
  for loopdev in $(losetup -nO NAME,BACK-FILE 2>/dev/null | awk -v p="$CL_WORK" 'index($2, p) == 1 {print $1}'); do
    losetup -d "$loopdev" 2>/dev/null || true
  done
}

# Prints one line for each thing cl_down left behind; nothing when clean.
cl_leaks() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$CL_PREFIX-" | sed 's/^/network namespace: /'
  ip -o link 2>/dev/null | awk -F': ' '{print $2}' | grep -E "^v$CL_PREFIX" | sed 's/^/link: /'
  awk -v p="$CL_WORK" 'index($2, p) == 1 {print "mount: " $2}' /proc/mounts
  losetup -nO NAME,BACK-FILE 2>/dev/null | awk -v p="$CL_WORK" 'index($2, p) == 1 {print "loop device: " $1}'
  pgrep -af "systemd-nspawn.* -M $CL_PREFIX-" | sed 's/^/process: /'
  local r
  for r in $(cl_cgroup_roots); do
    find "$r" -maxdepth 1 -type d -name "$CL_PREFIX-*" | sed 's/^/cgroup: /'
  done
}

# cl_copy_in NAME SRC DEST [MODE]: copies a file into the host's tree.
cl_copy_in() {
  local dest=$CL_WORK/hosts/$1/merged$3
  mkdir -p "$(dirname "$dest")"
  cp "$2" "$dest"
  [[ -z ${4:-} ]] || chmod "$4" "$dest"
}
cl_copy_out() { cp "$CL_WORK/hosts/$1/merged$2" "$3"; }

# cl_install_debs NAME DIR LOG PACKAGE...: `apt-get install ./PACKAGE_*.deb`
# of DIR's packages inside the host (which has no network: what they depend
# on comes from the base tree), its output to LOG.
cl_install_debs() {
  local host=$1 dir=$2 log=$3; shift 3
  local p f files=()
  cl_x "$host" rm -rf /root/debs
  for p in "$@"; do
    f=$(ls "$dir/${p}_"*.deb)
    cl_copy_in "$host" "$f" "/root/debs/$(basename "$f")"
    files+=("./debs/$(basename "$f")")
  done
  cl_x "$host" env -C /root DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${files[@]}" \
    >"$log" 2>&1 || { tail -30 "$log"; cl_fail "$host: apt-get install ${files[*]}"; }
}

# cl_finish RC OUT NAME...: what a test's EXIT trap does: each running
# host's journal to OUT/journal-NAME.txt, everything stopped and removed,
# then the check that nothing was left behind (a leak makes RC 1). Sets
# CL_RC to the resulting exit code.
cl_finish() {
  local rc=$1 out=$2 h leaks; shift 2
  for h in "$@"; do
    if cl_host_running "$h"; then
      cl_x "$h" journalctl --no-pager -o short-precise >"$out/journal-$h.txt" 2>/dev/null
    fi
  done
  cl_down
  leaks=$(cl_leaks)
  if [[ -n $leaks ]]; then
    echo "FAIL: left behind after the test:" >&2
    echo "$leaks" >&2
    rc=1
  else
    echo "cleanup: no namespace, link, mount, loop device, nspawn or cgroup left behind" >&2
  fi
  rm -rf "$CL_WORK"
  CL_RC=$rc
}
