#!/usr/bin/env bash
# The container image, built and run (deploy/k8s/Containerfile): cpack makes
# the Debian packages from BUILD_DIR; a bookworm base that already holds their
# dependencies is debootstrapped (tests/deploy/cluster/lib.sh, cached in
# BUILD_DIR/deploy-rootfs/) and imported with `podman import`; `podman build
# --network none` makes the image from the packages, tagged as
# deploy/k8s/kustomization.yaml names it; the coordinator and the agent run
# from it with what deploy/k8s/coordinator.yaml and agent.yaml give them
# (command, arguments, environment, volumes, user and security context, read
# from the manifests); the agent joins; `cmaxctl run` of the image's quick
# plan, from inside the coordinator's container as docs/kubernetes.md says, ends
# with hostcheck completed, connectivity not measured on one node (it needs
# two), and a verdict for the node.
#   tests/deploy/image_test.sh BUILD_DIR
#
# Needs root, podman, runc, debootstrap, cpack, openssl, python3-yaml
# (deploy/install-deps.sh --with-tests); a missing one fails the test, named.
# Everything is kept in a scratch folder of its own (BUILD_DIR/image-test.*):
# podman's storage, run root and configuration (runtime runc, cgroupfs,
# netns none, explicit ulimits; /etc/containers and /var/lib/containers are
# neither read nor written), the volumes, the secrets. At exit every
# container and image is removed and the test fails if a mount, a conmon or
# a cmax process of its own is left. Logs, the cmaxctl output and the
# scorecard stay in ${CMAX_TEST_OUTPUT_DIR:-BUILD_DIR/test-output}/image/.
#
# Differences from a Kubernetes node, each forced by this machine or by the
# test rules: both containers use the host's network (the coordinator's pod
# has its own in Kubernetes) and talk over 127.0.0.1 only: --listen and
# --coordinator point there and the agent gets --advertise=127.0.0.1; the
# hostPath /var/lib/cmax-agent, the volume claim and the Secrets are folders
# in the scratch folder (the host root stays /, read-only); there is no nvidia
# RuntimeClass (no GPU is asked for) and no memory limit.
set -euo pipefail
build=${1:?usage: image_test.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "needs root (podman with runc and cgroupfs, mounts)"
[[ -d $build ]] || fail "no build folder $build"
build=$(cd "$build" && pwd)
for tool in podman runc debootstrap cpack dpkg-deb openssl python3 tar; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run deploy/install-deps.sh --with-tests"
done
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing: run deploy/install-deps.sh --with-tests"
[[ -f $build/CPackConfig.cmake ]] || fail "$build has no CPackConfig.cmake: configure and build the tree first"
for b in cmax-coordinator cmaxctl cmax-agent cmax-bench; do
  [[ -x $build/bin/$b ]] || fail "$build/bin/$b is not built (cpack packages what the build made)"
done

out=${CMAX_TEST_OUTPUT_DIR:-$build/test-output}/image
rm -rf "$out"
mkdir -p "$out"
t=$(mktemp -d "$build/image-test.XXXXXX")
port=
node=imgnode1

# --- timing -----------------------------------------------------------------
t0=$EPOCHREALTIME
step_name='' step_t=''
timings=()
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'; }
step() {
  [[ -z $step_name ]] || { timings+=("$(printf '%-52s %7s s' "$step_name" "$(elapsed "$step_t")")"); echo "   ($(elapsed "$step_t") s)"; }
  step_name=$1 step_t=$EPOCHREALTIME
  [[ -z $step_name ]] || echo "== $(date +%T) $step_name"
}

# --- podman, confined to the scratch folder -----------------------------------
# runc and cgroupfs (crun and the systemd cgroup manager fail here); no network
# unless a container asks for the host's; rlimits podman may set here: its
# defaults (1048576) are refused, and this machine caps nproc at pid_max.
nofile=$(ulimit -Hn); [[ $nofile == unlimited || $nofile -gt 65536 ]] && nofile=65536
nproc=$(ulimit -Hu); pidmax=$(cat /proc/sys/kernel/pid_max)
[[ $nproc == unlimited || $nproc -gt $pidmax ]] && nproc=$pidmax
driver=overlay
mkdir -p "$t/probe"/{l,u,w,m} "$t/tmp" "$t/libpod" "$t/networks"
if mount -t overlay cmax-image-probe -o "lowerdir=$t/probe/l,upperdir=$t/probe/u,workdir=$t/probe/w" "$t/probe/m" 2>/dev/null; then
  umount "$t/probe/m"
else
  driver=vfs
  echo "note: overlay mounts fail on $t's file system: podman storage driver vfs (slower)"
fi
rm -rf "$t/probe"
cat >"$t/containers.conf" <<EOF
[containers]
netns = "none"
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$t/libpod"
volume_path = "$t/storage/volumes"
[network]
network_config_dir = "$t/networks"
EOF
cat >"$t/storage.conf" <<EOF
[storage]
driver = "$driver"
graphroot = "$t/storage"
runroot = "$t/run"
EOF
# No registry is ever asked: every image name here is fully qualified and local.
printf 'unqualified-search-registries = []\nshort-name-mode = "enforcing"\n' >"$t/registries.conf"
export CONTAINERS_CONF=$t/containers.conf CONTAINERS_STORAGE_CONF=$t/storage.conf
export CONTAINERS_REGISTRIES_CONF=$t/registries.conf TMPDIR=$t/tmp
podman_cmd=(podman --root "$t/storage" --runroot "$t/run" --storage-driver "$driver" --runtime runc
  --cgroup-manager cgroupfs --tmpdir "$t/libpod" --events-backend file
  --network-config-dir "$t/networks")
pm() { "${podman_cmd[@]}" "$@"; }

# --- teardown and the leak check (always, from the EXIT trap) -----------------
leaks() {
  if [[ -d $t/storage ]]; then
    pm ps -a --format 'container: {{.Names}} ({{.Status}})' 2>/dev/null || true
    pm images --format 'image: {{.Repository}}:{{.Tag}}' 2>/dev/null || true
  fi
  awk -v p="$t" 'index($2, p) == 1 {print "mount: " $2}' /proc/mounts
  pgrep -af -- "$t" | sed 's/^/process: /' || true
  if [[ -n $port ]]; then pgrep -af -- "cmax-.*127\.0\.0\.1:$port" | sed 's/^/process: /' || true; fi
}
teardown() {
  [[ -d $t/storage ]] || return 0
  local c
  for c in agent coordinator; do
    pm container exists "cmax-img-$c" 2>/dev/null && pm logs "cmax-img-$c" >"$out/$c.log" 2>&1
  done
  pm rm -a -f -t 0 >/dev/null 2>&1 || true
  pm rmi -a -f >/dev/null 2>&1 || true
}
on_exit() {
  local rc=$? left m p
  set +e
  [[ -z $step_name ]] || step ""
  teardown
  left=$(leaks)
  if [[ -n $left ]]; then
    echo "FAIL: left behind after the teardown:" >&2
    echo "$left" >&2
    rc=1
    # Then removed anyway, so that the machine is as it was.
    awk -v p="$t" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m"; done
    for p in $(pgrep -f -- "$t"; [[ -z $port ]] || pgrep -f -- "cmax-.*127\.0\.0\.1:$port"); do kill -9 "$p"; done
  fi
  if awk -v p="$t" 'index($2, p) == 1 {found = 1} END {exit !found}' /proc/mounts; then
    echo "FAIL: mounts under $t remain; not deleting it" >&2
    rc=1
  else
    rm -rf --one-file-system "$t"
  fi
  echo "-- timings:"
  printf '   %s\n' "${timings[@]}"
  printf '   %-52s %7s s\n' total "$(elapsed "$t0")"
  if [[ $rc -eq 0 ]]; then echo "PASS: image_test"; else echo "image_test failed (logs in $out)" >&2; fi
  exit $rc
}
trap on_exit EXIT

gr=$(pm info --format '{{.Store.GraphRoot}} {{.Store.RunRoot}} {{.Host.OCIRuntime.Name}} {{.Host.CgroupManager}}') ||
  fail "podman info failed with the test's configuration"
[[ $gr == "$t/storage $t/run runc cgroupfs" ]] || fail "podman does not use the test's storage and runtime: $gr"

# --- the image the manifests name ----------------------------------------------
version=$(sed -n 's/^project(cmax VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
ref=$(python3 - "$src/deploy/k8s" <<'EOF'
import sys, yaml, os
k8s = sys.argv[1]
kust = yaml.safe_load(open(os.path.join(k8s, "kustomization.yaml")))
used = set()
for r in kust["resources"]:
    for d in yaml.safe_load_all(open(os.path.join(k8s, r))):
        if d and d.get("kind") in ("StatefulSet", "DaemonSet"):
            for c in d["spec"]["template"]["spec"]["containers"]:
                used.add(c["image"])
imgs = {i["name"]: i for i in kust.get("images", [])}
if len(used) != 1 or next(iter(used)) not in imgs:
    sys.exit(f"the workloads use images {sorted(used)}; kustomization.yaml rewrites {sorted(imgs)}")
i = imgs[next(iter(used))]
print(f"{i.get('newName', i['name'])}:{i['newTag']}")
EOF
) || fail "cannot tell which image the manifests name"
[[ $ref == *:"$version" ]] || fail "the manifests name $ref, the project version is $version"
# podman qualifies a bare name with localhost/.
[[ $ref == */* ]] && qref=$ref || qref=localhost/$ref
echo "image: $ref (project version $version)"

# --- 1. the packages ---------------------------------------------------------------
step "cpack -G DEB"
ctx=$t/context
(cd "$build" && cpack -G DEB -B "$ctx" >"$out/cpack.log" 2>&1) || { tail -20 "$out/cpack.log"; fail "cpack failed (log: $out/cpack.log)"; }
rm -rf "$ctx/_CPack_Packages"
for name in cmax-coordinator cmax-agent cmax-bench; do
  ls "$ctx/${name}_"*.deb >/dev/null 2>&1 || fail "cpack made no $name package"
done
ls -l "$ctx"
pkgver=$(dpkg-deb -f "$ctx"/cmax-agent_*.deb Version)
[[ $pkgver == "$version" || $pkgver == "$version"+* ]] || fail "package version $pkgver is not the project's $version"

# --- 2. the base: bookworm with every dependency of the packages ------------------
step "base image (debootstrap tree, podman import)"
extra=$(sed -n 's/^ARG EXTRA_PACKAGES="\(.*\)"$/\1/p' "$src/deploy/k8s/Containerfile")
[[ -n $extra ]] || fail "deploy/k8s/Containerfile has no ARG EXTRA_PACKAGES=\"...\" line"
CL_WORK=$t/cl CL_PREFIX=cimg
# shellcheck source=tests/deploy/cluster/lib.sh disable=SC2034
source "$src/tests/deploy/cluster/lib.sh"
deps=$(cl_deb_packages Depends "$ctx"/*.deb)
# shellcheck disable=SC2086
rootfs=$(cl_rootfs "$build" $deps $extra fio iproute2 procps) || fail "no base tree"
echo "base tree: $rootfs ($(echo "$deps" "$extra" | wc -w) packages asked for)"
tar -C "$rootfs" --exclude=./.cmax-complete -c . | pm import - localhost/cmax-base:bookworm >"$out/import.log" 2>&1 ||
  { tail "$out/import.log"; fail "podman import of $rootfs failed"; }

# --- 3. the image ---------------------------------------------------------------------
step "podman build --network none"
pm build --network none --pull=never -f "$src/deploy/k8s/Containerfile" \
  --build-arg BASE=localhost/cmax-base:bookworm -t "$ref" "$ctx" >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; fail "podman build failed (log: $out/build.log)"; }
pm image exists "$qref" || fail "the build made no $qref"
pm images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -F "$qref" || true

# --- 4. the containers, as the manifests run them ------------------------------------
step "containers from the manifests"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$src/deploy/k8s/make-secrets.sh" --out "$t/secrets" >/dev/null || fail "make-secrets.sh failed"
# Prints, one a line, the arguments of `podman run` for one workload of the
# manifests: its security context, environment and volumes (made under the
# scratch folder, with the Secrets' keys, modes and fsGroup), the image, the
# command and its arguments with $(VAR) expanded and the addresses pointed at
# 127.0.0.1:PORT.
manifest_run() {  # manifest_run FILE KIND
  python3 - "$src/deploy/k8s" "$1" "$2" "$t" "$t/secrets" "$ref" "$port" "$node" <<'EOF'
import os, re, sys, yaml
k8s, fname, kind, scratch, secrets, ref, port, node = sys.argv[1:]
kust = yaml.safe_load(open(os.path.join(k8s, "kustomization.yaml")))
gen = {g["name"]: dict(f.split("=", 1) if "=" in f else (f, f) for f in g["files"])
       for g in kust.get("secretGenerator", [])}
(w,) = [d for d in yaml.safe_load_all(open(os.path.join(k8s, fname))) if d and d["kind"] == kind]
pod = w["spec"]["template"]["spec"]
(c,) = pod["containers"]
role = w["metadata"]["name"]
psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
out = ["--name", "cmax-img-" + ("agent" if kind == "DaemonSet" else "coordinator"),
       # The coordinator's pod has a network of its own in Kubernetes; here
       # both use the host's, and only its loopback.
       "--network=host"]
if pod.get("hostPID"): out.append("--pid=host")
if pod.get("hostIPC"): out.append("--ipc=host")
if csc.get("privileged"): out.append("--privileged")
uid, gid = psc.get("runAsUser"), psc.get("runAsGroup")
if psc.get("runAsNonRoot") and not uid:
    sys.exit(f"{kind}: runAsNonRoot without a runAsUser other than 0")
if uid is not None: out.append(f"--user={uid}:{gid if gid is not None else uid}")
fsgroup = psc.get("fsGroup")
if fsgroup is not None: out.append(f"--group-add={fsgroup}")
if csc.get("readOnlyRootFilesystem"): out += ["--read-only", "--read-only-tmpfs=false"]
caps = csc.get("capabilities", {})
for cap in caps.get("drop", []): out.append(f"--cap-drop={cap.lower()}")
for cap in caps.get("add", []): out.append(f"--cap-add={cap.lower()}")
if csc.get("allowPrivilegeEscalation") is False: out.append("--security-opt=no-new-privileges")
env = {}
for e in c.get("env", []):
    if "value" in e:
        env[e["name"]] = e["value"]
    elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
        env[e["name"]] = node
    else:
        sys.exit(f"{kind}: env {e['name']}: the test knows only values and spec.nodeName")
for k, v in env.items(): out.append(f"--env={k}={v}")
vols = {v["name"]: v for v in pod.get("volumes", [])}
claims = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
def folder(name, mode, group):
    d = os.path.join(scratch, "vol", f"{role}-{name}")
    os.makedirs(d, exist_ok=True)
    os.chown(d, 0, group if group is not None else 0)
    os.chmod(d, mode)
    return d
for m in c.get("volumeMounts", []):
    name, path, ro = m["name"], m["mountPath"], m.get("readOnly", False)
    opts = ["ro" if ro else "rw"]
    if m.get("mountPropagation") == "HostToContainer": opts.append("rslave")
    elif m.get("mountPropagation") == "Bidirectional": opts.append("rshared")
    v = vols.get(name)
    if name in claims:
        # A fresh volume: fsGroup owns it, group-writable, setgid.
        srcdir = folder(name, 0o2770, fsgroup)
    elif v and "emptyDir" in v:
        out.append(f"--tmpfs={path}:rw,nosuid,nodev")
        continue
    elif v and "hostPath" in v:
        hp = v["hostPath"]["path"]
        if hp == "/":
            if not ro: sys.exit(f"{kind}: the host's root is mounted writable")
            srcdir = "/"
        else:  # a node folder: one in the scratch folder stands in for it
            srcdir = folder("host" + hp.replace("/", "-"), 0o755, None)
    elif v and "secret" in v:
        s = v["secret"]
        keys = gen[s["secretName"]]
        items = s.get("items") or [{"key": k, "path": k} for k in keys]
        mode = s.get("defaultMode", 0o644)
        srcdir = folder(name, 0o755, None)
        for it in items:
            f = os.path.join(srcdir, it["path"])
            with open(os.path.join(secrets, os.path.basename(keys[it["key"]])), "rb") as fin:
                data = fin.read()
            with open(f, "wb") as fo:
                fo.write(data)
            os.chown(f, 0, fsgroup if fsgroup is not None else 0)
            os.chmod(f, it.get("mode", mode))
    else:
        sys.exit(f"{kind}: volume {name}: the test knows claims, emptyDir, hostPath and secrets")
    out.append(f"--volume={srcdir}:{path}:{','.join(opts)}")
if c["image"] not in {i["name"] for i in kust["images"]}:
    sys.exit(f"{kind}: image {c['image']} is not the kustomization's")
out.append(ref)
out += c["command"]
def expand(a):
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda mm: env.get(mm.group(1), mm.group(0)), a)
args = [expand(a) for a in c.get("args", [])]
for i, a in enumerate(args):
    if a.startswith("--listen="): args[i] = f"--listen=127.0.0.1:{port}"
    if a.startswith("--coordinator="): args[i] = f"--coordinator=127.0.0.1:{port}"
if kind == "DaemonSet":
    args.append("--advertise=127.0.0.1")  # the test's network rule: loopback only
out += args
print("\n".join(out))
EOF
}
manifest_run coordinator.yaml StatefulSet >"$t/coordinator.args" || fail "cannot read deploy/k8s/coordinator.yaml"
manifest_run agent.yaml DaemonSet >"$t/agent.args" || fail "cannot read deploy/k8s/agent.yaml"
cp "$t/coordinator.args" "$t/agent.args" "$out/"
mapfile -t coord_args <"$t/coordinator.args"
mapfile -t agent_args <"$t/agent.args"
arg_value() { sed -n "s/^--$2=//p" "$1" | head -1; }  # arg_value ARGS_FILE FLAG
coord_cmd=$(grep -A1 -xF "$ref" "$t/coordinator.args" | tail -1)
agent_cmd=$(grep -A1 -xF "$ref" "$t/agent.args" | tail -1)
bench_dir=$(arg_value "$t/agent.args" bench-dir)
tls_ca=$(arg_value "$t/agent.args" tls-ca)
plan=/usr/share/cmax/plans/quick.yaml

# What the manifests and docs/kubernetes.md count on, inside the image.
pm run --rm --network none "$ref" sh -c "
  set -e
  for f in $coord_cmd $agent_cmd /usr/bin/cmaxctl ${bench_dir:-/usr/bin}/cmax-bench; do
    [ -x \"\$f\" ] || { echo \"not an executable in the image: \$f\"; exit 1; }
  done
  [ -f $plan ] || { echo 'no quick plan at $plan'; exit 1; }
  [ \"\$(id -u cmax):\$(id -g cmax)\" = 10470:10470 ] || { echo 'the cmax user is not 10470:10470'; exit 1; }
  [ ! -e /etc/cmax/token ] || { echo '/etc/cmax/token is baked into the image'; exit 1; }
  [ ! -e /etc/cmax/read-token ] || { echo '/etc/cmax/read-token is baked into the image'; exit 1; }
  [ ! -e /etc/cmax/agent-token ] || { echo '/etc/cmax/agent-token is baked into the image'; exit 1; }
  dpkg-query -W 'cmax-*'
" >"$out/image-contents.log" 2>&1 || { cat "$out/image-contents.log"; fail "the image lacks what the manifests use"; }
cat "$out/image-contents.log"
grep -q "^cmax-agent	$pkgver$" "$out/image-contents.log" || fail "the image's cmax-agent is not the package $pkgver"

pm run -d "${coord_args[@]}" >/dev/null || fail "the coordinator's container did not start"
ctl=("${podman_cmd[@]}" exec cmax-img-coordinator cmaxctl --coordinator "127.0.0.1:$port" ${tls_ca:+--tls-ca "$tls_ca"})
deadline=$((SECONDS + 30))
until "${ctl[@]}" agents >/dev/null 2>&1; do
  ((SECONDS < deadline)) || { pm logs cmax-img-coordinator 2>&1 | tail -20; fail "the coordinator did not answer on 127.0.0.1:$port within 30 s"; }
  pm container inspect -f '{{.State.Running}}' cmax-img-coordinator 2>/dev/null | grep -q true ||
    { pm logs cmax-img-coordinator 2>&1 | tail -20; fail "the coordinator's container exited"; }
  sleep 0.5
done
pm run -d "${agent_args[@]}" >/dev/null || fail "the agent's container did not start"
deadline=$((SECONDS + 60))
until "${ctl[@]}" agents 2>/dev/null | grep -qE "^$node +(connected|busy) "; do
  ((SECONDS < deadline)) || { "${ctl[@]}" agents || true; pm logs cmax-img-agent 2>&1 | tail -20; fail "the agent $node did not join within 60 s"; }
  pm container inspect -f '{{.State.Running}}' cmax-img-agent 2>/dev/null | grep -q true ||
    { pm logs cmax-img-agent 2>&1 | tail -20; fail "the agent's container exited"; }
  sleep 0.5
done
"${ctl[@]}" agents | tee "$out/agents.txt"

# --- 5. the quick plan ----------------------------------------------------------------
step "cmaxctl run --plan $plan"
set +e
timeout 300 "${ctl[@]}" run --plan "$plan" >"$out/run.txt" 2>&1
rc=$?
set -e
cat "$out/run.txt"
# 0 rated and passed, 4 not rated (one node cannot be rated): the run ended
# with nothing failed; anything else is a failure.
[[ $rc -eq 0 || $rc -eq 4 ]] || fail "cmaxctl run exited $rc"
run_id=$(sed -n "s/^run \([^ :]*\): plan 'quick'.*/\1/p" "$out/run.txt" | head -1)
[[ -n $run_id ]] || fail "no run id in cmaxctl's output"
grep -q "^run $run_id completed: " "$out/run.txt" || fail "run $run_id did not end completed"
# One node: connectivity, which measures between nodes, is not measured and
# says why (issue 33, item 7); nothing else may fail to run.
grep -q "^COULD NOT RUN $node connectivity — not measured: needs 2 nodes, the run has 1$" "$out/run.txt" ||
  fail "connectivity on one node did not say it needs 2 nodes"
if grep "COULD NOT RUN" "$out/run.txt" | grep -qv " connectivity — not measured: needs 2 nodes"; then
  fail "a task could not run: $(grep "COULD NOT RUN" "$out/run.txt" | head -3)"
fi
grep -q "^hostcheck on $node: completed " "$out/run.txt" || fail "hostcheck on $node did not complete"

step "scorecard"
"${ctl[@]}" report "$run_id" --format json >"$out/scorecard.json" || fail "cmaxctl report $run_id failed"
python3 - "$out/scorecard.json" "$node" <<'EOF' || fail "the scorecard lacks the node's verdict"
import json, sys
card, node = json.load(open(sys.argv[1])), sys.argv[2]
nodes = {n["node"]: n for n in card.get("nodes", [])}
n = nodes.get(node)
if n is None:
    sys.exit(f"node {node} not in the scorecard (nodes: {sorted(nodes)})")
if n.get("verdict") not in ("pass", "warn", "fail"):
    sys.exit(f"node {node}: verdict {n.get('verdict')!r}")
tasks = {t["suite"]: t for t in n.get("tasks", [])}
states = {s: t.get("state") for s, t in tasks.items()}
if states.get("hostcheck") != "completed":
    sys.exit(f"node {node}: hostcheck is {states.get('hostcheck')!r} in the scorecard")
# One node: connectivity could not run (exit code 2), with the reason.
c = tasks.get("connectivity", {})
if c.get("exit_code") != 2 or "needs 2 nodes, the run has 1" not in c.get("message", ""):
    sys.exit(f"node {node}: connectivity is {c!r} in the scorecard, not 'needs 2 nodes'")
print(f"scorecard: node {node} verdict {n['verdict']}, tasks {states}")
EOF

# --- 6. teardown (the EXIT trap), then nothing may be left ---------------------------
step "teardown"
teardown
step ""
