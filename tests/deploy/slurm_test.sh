#!/usr/bin/env bash
# cmax and Slurm, against the real programs (Debian's slurm-wlm and munge),
# on a one-node Slurm cluster this test configures and starts itself
# (munged, slurmctld and slurmd on 127.0.0.1, everything under a temp dir):
#  1. deploy/slurm/cmax-healthcheck as slurmd's HealthCheckProgram: a fixture
#     root with an Xid 79 drains the node (seen in scontrol show node), a
#     clean root resumes it; a node an operator drained is left alone.
#  2. bad input: a node that is not a Slurm node, a node name with shell
#     characters, a finding whose subject holds quotes and is far too long.
#  3. cmax-coordinator --slurm-drain drains a node whose verdict is fail,
#     with the run id in the reason, and leaves a drained node alone;
#     3b. the fault loop's SlurmFencer (remediation_fence_probe) drains with
#     "cmax: ...", lifts its own drain, and leaves an operator's alone.
#  4. deploy/slurm/cmax-eval.sbatch runs the quick plan on the allocation
#     and ends, printing the scorecard's path.
#  5. a schedule with --only-idle (cmaxctl schedule add): while a sleep job
#     holds the node its slots are skipped with Slurm's state as the reason;
#     once the job is cancelled a later slot runs on it.
#  6. cmax-bench orchestration on the real root reads the running Slurm
#     through scontrol show config / show node (this test's slurm.conf has
#     TaskPlugin=task/none: a fail named from scontrol's output line); with
#     --step a one-step srun job sees no GPU and every online CPU.
#   tests/deploy/slurm_test.sh SOURCE_DIR BIN_DIR
set -uo pipefail
src=${1:?usage: slurm_test.sh SOURCE_DIR BIN_DIR}
bin=${2:?usage: slurm_test.sh SOURCE_DIR BIN_DIR}
fail() { echo "FAIL: $*" >&2; dump; exit 1; }
dump() { [[ -n ${t:-} ]] && tail -n 15 "$t"/log/*.log 2>/dev/null | sed 's/^/  | /' >&2; }
[[ $(id -u) -eq 0 ]] || { echo "FAIL: needs root (slurmd runs jobs as their users)"; exit 1; }
for p in munged slurmctld slurmd scontrol sinfo sbatch srun python3; do
  command -v $p >/dev/null || { echo "FAIL: $p missing: run deploy/install-deps.sh --with-tests"; exit 1; }
done

t=$(mktemp -d /tmp/cmax-slurm-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [[ -f $t/munge/munged.pid ]] && kill "$(cat "$t/munge/munged.pid")" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$t"
}
trap cleanup EXIT
node=$(hostname -s)
read -r p1 p2 < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
mkdir -p "$t"/{munge,state,spool,log,roots} && chmod 700 "$t/munge"
dd if=/dev/urandom of="$t/munge.key" bs=1024 count=1 status=none && chmod 400 "$t/munge.key"
munged --force --key-file="$t/munge.key" --socket="$t/munge/socket" --pid-file="$t/munge/munged.pid" \
  --log-file="$t/log/munged.log" --seed-file="$t/munge/seed" || fail "munged did not start"

# Fixture roots: clean (hostcheck's cpu-only) and the same with an Xid 79.
cp -r "$src/tests/fixtures/hostcheck/cpu-only" "$t/roots/clean"
cp -r "$t/roots/clean" "$t/roots/xid79"
mkdir -p "$t/roots/xid79/dev" && cp "$src/tests/fixtures/health/xid79/dev/kmsg" "$t/roots/xid79/dev/kmsg"
echo "$t/roots/clean" >"$t/hc-root"
cat >"$t/healthcheck" <<HC
#!/bin/sh
# What slurmd runs: cmax-healthcheck on the root the test chose.
export CMAX_BENCH=$bin/cmax-bench CMAX_HEALTHCHECK_ROOT=\$(cat $t/hc-root) SLURM_CONF=$t/slurm.conf
exec $src/deploy/slurm/cmax-healthcheck >>$t/log/healthcheck.log 2>&1
HC
chmod +x "$t/healthcheck"
cat >"$t/slurm.conf" <<CONF
ClusterName=cmaxtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$t/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$t/state
SlurmdSpoolDir=$t/spool
SlurmctldPidFile=$t/slurmctld.pid
SlurmdPidFile=$t/slurmd.pid
SlurmctldLogFile=$t/log/slurmctld.log
SlurmdLogFile=$t/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
HealthCheckProgram=$t/healthcheck
HealthCheckInterval=2
HealthCheckNodeState=ANY
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$t/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$t/log/slurmctld.out.log" 2>&1 & pids+=($!)
sleep 1
slurmd -D -f "$SLURM_CONF" -N "$node" >"$t/log/slurmd.out.log" 2>&1 & pids+=($!)

state() { scontrol show node "$node" -o 2>/dev/null | sed -n 's/.* State=\([^ ]*\).*/\1/p'; }
reason() { scontrol show node "$node" -o 2>/dev/null | sed -n 's/.* Reason=\(.*\)$/\1/p'; }
# wait_for SECONDS COMMAND...: true once COMMAND succeeds (polled each 0.5 s).
wait_for() { local n=$(( $1 * 2 )); shift; for _ in $(seq "$n"); do "$@" && return 0; sleep 0.5; done; return 1; }
is_idle() { [[ $(state) == IDLE ]]; }
is_drained_by_cmax() { [[ $(state) == *DRAIN* && $(reason) == "cmax: xid 79"* ]]; }
wait_for 30 is_idle || fail "the node did not come up idle: $(scontrol show node "$node" -o 2>&1)"
echo "== Slurm is up: node $node idle"

echo "== 1. HealthCheckProgram: Xid 79 drains, clean resumes, an operator's drain stays"
echo "$t/roots/xid79" >"$t/hc-root"
wait_for 30 is_drained_by_cmax || fail "Xid 79 root: not drained by cmax (state $(state), reason $(reason))"
echo "  drained: $(reason)"
echo "$t/roots/clean" >"$t/hc-root"
wait_for 30 is_idle || fail "clean root: not resumed (state $(state), reason $(reason))"
echo "  resumed: $(state)"
scontrol update NodeName="$node" State=DRAIN Reason="maintenance window" || fail "operator drain"
echo "$t/roots/xid79" >"$t/hc-root"; sleep 6
[[ $(reason) == "maintenance window"* ]] || fail "cmax changed an operator's drain: $(reason)"
echo "$t/roots/clean" >"$t/hc-root"; sleep 6
[[ $(state) == *DRAIN* && $(reason) == "maintenance window"* ]] || fail "cmax resumed an operator's drain"
echo "  operator's drain left alone: $(reason)"
scontrol update NodeName="$node" State=RESUME
wait_for 30 is_idle || fail "resume after the operator's drain"
grep -q "draining: cmax: xid 79" "$t/log/healthcheck.log" || fail "the healthcheck log does not say it drained"

echo "== 2. bad input"
hc=$src/deploy/slurm/cmax-healthcheck
out=$(SLURMD_NODENAME=nosuchnode CMAX_BENCH=$bin/cmax-bench CMAX_HEALTHCHECK_ROOT=$t/roots/xid79 "$hc" 2>&1); rc=$?
[[ $rc -eq 2 && $out == *"not a node of this Slurm cluster"* ]] || fail "a node Slurm does not know: exit $rc: $out"
out=$(SLURMD_NODENAME='vm;rm -rf /' "$hc" 2>&1); rc=$?
[[ $rc -eq 2 && $out == *"is not a Slurm node name"* ]] || fail "a node name with shell characters: exit $rc: $out"
long=$(printf 'x%.0s' $(seq 300))
printf '%s\n' "{\"finding\":{\"check_id\":\"health.ecc\",\"severity\":\"SEVERITY_FAIL\",\"subject\":\"gpu:3\\\" Reason=evil ' \$(reboot) $long\"}}" >"$t/findings.jsonl"
out=$(SLURMD_NODENAME=$node CMAX_HEALTHCHECK_FINDINGS=$t/findings.jsonl CMAX_HEALTHCHECK_DRY_RUN=1 "$hc" 2>/dev/null); rc=$?
[[ $rc -eq 0 ]] || fail "dry run with a hostile finding: exit $rc"
r=$(sed -n 's/.*Reason=\(.*\)$/\1/p' <<<"$out")
[[ $r == 'cmax:\ ecc\ gpu:3'* ]] || fail "reason from a hostile finding: $out"
plain=$(printf '%b' "${r//\\/}")
[[ ${#plain} -le 64 && $plain != *[\"\'\$\(\)=\;]* ]] || fail "reason not cleaned: '$plain' (${#plain} chars)"
is_idle || fail "the dry run changed the node"
echo "  refused: unknown node, bad name; cleaned: '$plain'"

echo "== 3. cmax-coordinator --slurm-drain"
tok=$t/token; (umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tok")
"$bin/cmax-coordinator" --data-dir "$t/coord" --token-file "$tok" --listen 127.0.0.1:0 --slurm-drain \
  >"$t/log/coord.out.log" 2>"$t/log/coordinator.log" & pids+=($!)
wait_for 20 grep -q "listening on" "$t/log/coord.out.log" || fail "coordinator did not start"
addr=$(sed -n 's/^listening on //p' "$t/log/coord.out.log")
for n in "$node" nosuchnode; do
  CMAX_TOKEN_FILE=$tok "$bin/cmax-agent" --coordinator "$addr" --node-name "$n" --work-dir "$t/agent-$n" \
    --advertise 127.0.0.1 >"$t/log/agent-$n.log" 2>&1 & pids+=($!)
done
agents_up() { [[ $(CMAX_TOKEN_FILE=$tok "$bin/cmaxctl" --coordinator "$addr" agents 2>/dev/null | grep -cE ' (connected|busy) ') -ge 2 ]]; }
wait_for 30 agents_up || fail "agents did not connect"
printf 'name: crash\nsuites:\n  - suite: selftest\n    params: {mode: crash}\n' >"$t/crash.yaml"
CMAX_TOKEN_FILE=$tok "$bin/cmaxctl" --coordinator "$addr" run --plan "$t/crash.yaml" >"$t/run.out" 2>&1
run_id=$(sed -n 's/^run \(r[0-9a-z-]*\) .*/\1/p' "$t/run.out" | tail -1)
[[ -n $run_id ]] || fail "no run id: $(cat "$t/run.out")"
drained_by_run() { [[ $(state) == *DRAIN* && $(reason) == "cmax $run_id:"* ]]; }
wait_for 20 drained_by_run || fail "--slurm-drain did not drain $node (state $(state), reason $(reason))"
echo "  drained: $(reason)"
grep -q "not draining nosuchnode: Slurm does not know it" "$t/log/coordinator.log" ||
  fail "the coordinator did not say it skipped nosuchnode"
CMAX_TOKEN_FILE=$tok "$bin/cmaxctl" --coordinator "$addr" run --plan "$t/crash.yaml" >"$t/run2.out" 2>&1
sleep 2
[[ $(reason) == "cmax $run_id:"* ]] || fail "a second run overwrote the drain: $(reason)"
grep -q "is drained already: left as it is" "$t/log/coordinator.log" || fail "no note that the drained node was left alone"
scontrol update NodeName="$node" State=RESUME
wait_for 30 is_idle || fail "resume after --slurm-drain"
for p in "${pids[@]:2}"; do kill "$p" 2>/dev/null; done

echo "== 3b. the fault loop's fencer (coordinator/remediation/fence.h) on real Slurm"
probe=$bin/remediation_fence_probe
# The HealthCheckProgram resumes any drain whose reason starts "cmax:" once
# its checks pass, the fencer's too: a root it cannot check keeps it out of
# the way here (it neither drains nor resumes).
echo "$t/roots/absent" >"$t/hc-root"; sleep 3
out=$("$probe" fence "$node" 'Xid 79 on GPU 3 "bus"') || fail "fence: $out"
[[ $(state) == *DRAIN* && $(reason) == "cmax fence: Xid 79 on GPU 3 bus ["* ]] ||
  fail "fence: not drained with cmax's reason (state $(state), reason $(reason))"
out=$("$probe" inspect "$node"); [[ $out == "fenced by cmax: cmax fence: Xid 79 on GPU 3 bus" ]] || fail "inspect: $out"
out=$("$probe" lift "$node") || fail "lift: $out"
wait_for 30 is_idle || fail "lift: not resumed (state $(state), reason $(reason))"
scontrol update NodeName="$node" State=DRAIN Reason="maintenance window" || fail "operator drain"
out=$("$probe" fence "$node" x); [[ $out == "ALREADY_EXISTS: held by operator: maintenance window" ]] ||
  fail "fence over an operator's drain: $out"
out=$("$probe" lift "$node"); [[ $out == "FAILED_PRECONDITION: drained by someone else: maintenance window" ]] ||
  fail "lift of an operator's drain: $out"
[[ $(reason) == "maintenance window"* ]] || fail "the fencer changed an operator's drain: $(reason)"
scontrol update NodeName="$node" State=RESUME
wait_for 30 is_idle || fail "resume after the operator's drain (3b)"
echo "$t/roots/clean" >"$t/hc-root"
echo "  drained, inspected and lifted its own; left the operator's drain alone"

echo "== 4. cmax-eval.sbatch"
mkdir -p "$t/job" && cd "$t/job"
CMAX_BIN_DIR=$bin CMAX_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])') \
  timeout 300 sbatch --wait -N1 --output="$t/job/eval.out" "$src/deploy/slurm/cmax-eval.sbatch" \
  "$src/benchmarks/plans/quick.yaml" >"$t/job/sbatch.out" 2>&1
rc=$?
cat "$t/job/eval.out" | sed 's/^/  | /' | tail -n 8
[[ $rc -eq 0 || $rc -eq 1 || $rc -eq 4 ]] || fail "sbatch --wait: exit $rc: $(cat "$t/job/sbatch.out")"
grep -q "agents connected; running" "$t/job/eval.out" || fail "the job's agent never connected"
grep -qE "^run r[0-9a-z-]+ completed" "$t/job/eval.out" || fail "the job's run did not complete"
grep -q "cmax-eval: scorecard: .*/scorecard.html" "$t/job/eval.out" || fail "no scorecard path printed"
html=$(sed -n 's/^cmax-eval: scorecard: \(.*\) (also.*/\1/p' "$t/job/eval.out")
[[ -s $html ]] || fail "the printed scorecard $html does not exist"
[[ -z $(squeue -h 2>/dev/null) ]] || fail "jobs left in the queue: $(squeue -h)"
pgrep -f "cmax-agent.*cmax-agent-" >/dev/null && fail "the job left an agent running"
# Nor the agent's work folder (mktemp -d on the node, made after $t).
job_id=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$t/job/sbatch.out")
[[ -n $job_id ]] || fail "no job id in sbatch's output: $(cat "$t/job/sbatch.out")"
left=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name "cmax-agent-$job_id.*" -newer "$t" 2>/dev/null)
[[ -z $left ]] || fail "the job left its agent's work folder: $left"
echo "== 5. schedules with --only-idle: a busy node waits, a later slot runs it"
cd "$t"
"$bin/cmax-coordinator" --data-dir "$t/coord5" --token-file "$tok" --listen 127.0.0.1:0 \
  --min-schedule-period 1s >"$t/log/coord5.out.log" 2>"$t/log/coordinator5.log" & pids+=($!)
wait_for 20 grep -q "listening on" "$t/log/coord5.out.log" || fail "coordinator (5) did not start"
addr=$(sed -n 's/^listening on //p' "$t/log/coord5.out.log")
CMAX_TOKEN_FILE=$tok "$bin/cmax-agent" --coordinator "$addr" --node-name "$node" --work-dir "$t/agent5" \
  --advertise 127.0.0.1 >"$t/log/agent5.log" 2>&1 & pids+=($!)
ctl5() { CMAX_TOKEN_FILE=$tok "$bin/cmaxctl" --coordinator "$addr" "$@"; }
agent_up() { [[ $(ctl5 agents 2>/dev/null | grep -cE ' (connected|busy) ') -ge 1 ]]; }
wait_for 30 agent_up || fail "the agent did not connect (5)"
job=$(sbatch --parsable -N1 --output=/dev/null --wrap "sleep 300") || fail "sbatch of the sleep job"
busy() { [[ $(sinfo -h -N -n "$node" -o "%T" | head -1) == @(allocated|mixed) ]]; }
wait_for 30 busy || fail "the sleep job did not make $node busy: $(sinfo -h -N -o '%N %T')"
printf 'name: idle-only\nsuites:\n  - suite: selftest\n    params: {records: 2}\n' >"$t/idle.yaml"
sid=$(ctl5 schedule add --plan "$t/idle.yaml" --every 3s --only-idle --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["schedule_id"])') || fail "schedule add"
# schedule_field EXPR: a Python expression over the schedule `s` (a dict of its JSON).
schedule_field() {
  ctl5 schedule list --json | python3 -c "import json,sys
s=[x for x in json.load(sys.stdin).get('schedules',[]) if x['schedule_id']=='$sid'][0]
print($1)"
}
skipped_busy() { [[ $(schedule_field "any('no selected node is idle in Slurm: $node (' in k['reason'] for k in s.get('skipped',[]))") == True ]]; }
wait_for 20 skipped_busy || fail "no slot skipped for the busy node: $(ctl5 schedule list)"
[[ $(schedule_field "s.get('runs_started','0')") == 0 ]] || fail "a run started on a busy node: $(ctl5 schedule list)"
echo "  skipped: $(schedule_field "s['skipped'][-1]['reason']")"
scancel "$job"
wait_for 30 is_idle || fail "the node did not come back idle after scancel"
ran() { [[ $(schedule_field "s.get('last_outcome','')") == completed* ]]; }
wait_for 30 ran || fail "no run once the node was idle: $(ctl5 schedule list)"
echo "  then ran: $(schedule_field "s['last_run_id'] + ': ' + s['last_outcome']")"
ctl5 schedule remove "$sid" >/dev/null || fail "schedule remove"
[[ -z $(squeue -h 2>/dev/null) ]] || fail "jobs left in the queue: $(squeue -h)"

echo "== 6. the orchestration suite reads the running Slurm through scontrol"
out=$("$bin/cmax-bench" orchestration --root / --hostname "$node" --scheduler slurm --jsonl 2>"$t/log/orch.err"); rc=$?
echo "$out" >"$t/log/orchestration.jsonl"
# finding CHECK_ID EXPR: EXPR (Python, over the Finding `f`) holds for that check's finding.
finding() {
  python3 -c "import json,sys
fs=[json.loads(l)['finding'] for l in open('$t/log/orchestration.jsonl') if '\"finding\"' in l]
f=[x for x in fs if x.get('check_id')=='$1']
sys.exit(0 if f and ($2) else 1)"
}
[[ $rc -eq 1 ]] || fail "orchestration: exit $rc (want 1: task/none fails): $out $(cat "$t/log/orch.err")"
finding orchestration.slurm.task_plugin "f[0]['severity']=='SEVERITY_FAIL' and any(e.startswith('scontrol show config: TaskPlugin (output line ') and e.endswith('TaskPlugin=task/none') for e in f[0]['evidence'])" ||
  fail "orchestration: task/none not failed from scontrol's output: $out"
finding orchestration.slurm.select "f[0]['severity']=='SEVERITY_INFO' and not f[0].get('not_measured')" ||
  fail "orchestration: select/cons_tres not passed: $out"
finding orchestration.slurm.health_check "'runs every 2 s' in f[0]['title']" ||
  fail "orchestration: HealthCheckProgram/Interval not read from scontrol: $out"
finding orchestration.slurm.node_state "any(('State=' in e) for e in f[0]['evidence']) and not f[0].get('not_measured')" ||
  fail "orchestration: the node's state not read from scontrol show node: $out"
echo "  $(grep -c '"finding"' "$t/log/orchestration.jsonl") findings, exit $rc"
# --step: a one-step job through srun (no GPU here: --exclusive, every online CPU).
"$bin/cmax-bench" orchestration --root / --hostname "$node" --scheduler slurm --step --jsonl \
  >"$t/log/orchestration.jsonl" 2>>"$t/log/orch.err"
finding orchestration.slurm.step "f[0]['severity']=='SEVERITY_INFO' and not f[0].get('not_measured') and f[0]['title'].endswith('every online CPU')" ||
  fail "orchestration --step: $(grep slurm.step "$t/log/orchestration.jsonl") $(tail -3 "$t/log/orch.err")"
echo "  step: $(python3 -c "import json
print([json.loads(l)['finding']['title'] for l in open('$t/log/orchestration.jsonl') if 'slurm.step' in l][0])")"

echo "slurm_test: every check holds"
