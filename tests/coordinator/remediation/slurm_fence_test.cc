// SlurmFencer (coordinator/remediation/fence.h) against a fake `scontrol`: a
// script the test writes into a scratch folder that records its argv and
// answers `show node N -o` from a state file per node, in the one-line format
// of Slurm 23.02's `scontrol show node -o` (fields as slurm_sprint_node_table
// prints them; Reason= last with its "[user@time]" stamp), and applies
// `update NodeName=N State=DRAIN|RESUME [Reason=...]` to that state.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "coordinator/remediation/fence.h"
#include "tests/scratch_dir.h"

namespace cmax::remediation {
namespace {

// $dir/nodes/N.state holds State=, $dir/nodes/N.reason the Reason= value.
const char kFakeScontrol[] = R"(#!/bin/bash
dir=$(dirname "$0")
printf '%s\n' "$*" >>"$dir/argv.log"
if [[ $1 == show && $2 == node && $4 == -o ]]; then
  n=$3
  if [[ ! -f $dir/nodes/$n.state ]]; then echo "Node $n not found" >&2; exit 1; fi
  state=$(cat "$dir/nodes/$n.state"); reason=$(cat "$dir/nodes/$n.reason" 2>/dev/null)
  line="NodeName=$n Arch=x86_64 CoresPerSocket=56 CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=0.31 AvailableFeatures=h100 ActiveFeatures=h100 Gres=gpu:h100:8 NodeAddr=$n NodeHostName=$n Version=23.02.7 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) RealMemory=2063000 AllocMem=0 FreeMem=2001234 Sockets=2 Boards=1 State=$state ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu BootTime=2026-11-30T08:00:00 SlurmdStartTime=2026-11-30T08:01:10 LastBusyTime=2026-12-01T09:00:00 ResumeAfterTime=None CfgTRES=cpu=224,mem=2063000M,billing=224,gres/gpu=8 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s"
  [[ -n $reason ]] && line="$line Reason=$reason"
  echo "$line"; exit 0
fi
if [[ $1 == update && $2 == NodeName=* ]]; then
  n=${2#NodeName=}; f=$dir/nodes/$n.state
  [[ -f $f ]] || { echo "Invalid node name specified" >&2; exit 1; }
  base=$(cut -d+ -f1 "$f")
  case $3 in
    State=DRAIN) echo "$base+DRAIN" >"$f"; echo "${4#Reason=} [slurm@2026-12-07T15:00:00]" >"$dir/nodes/$n.reason" ;;
    State=RESUME) echo "$base" >"$f"; rm -f "$dir/nodes/$n.reason" ;;
    *) echo "bad state $3" >&2; exit 1 ;;
  esac
  exit 0
fi
echo "fake scontrol: unexpected: $*" >&2; exit 2
)";

class FakeSlurm {
 public:
  FakeSlurm() {
    std::filesystem::create_directories(dir_.path + "/nodes");
    testing::WriteFileWithMode(Scontrol(), kFakeScontrol, 0755);
  }
  std::string Scontrol() const { return dir_.path + "/scontrol"; }
  void SetNode(const std::string& node, const std::string& state,
               const std::string& reason = "") {
    testing::WriteFileWithMode(dir_.path + "/nodes/" + node + ".state", state + "\n",
                               0644);
    if (!reason.empty()) {
      testing::WriteFileWithMode(dir_.path + "/nodes/" + node + ".reason", reason + "\n",
                                 0644);
    }
  }
  std::string State(const std::string& node) const {
    return Read("/nodes/" + node + ".state");
  }
  std::string Reason(const std::string& node) const {
    return Read("/nodes/" + node + ".reason");
  }
  // Each call's arguments (argv[1..] joined by spaces).
  std::vector<std::string> Calls() const {
    const std::string log = Read("/argv.log");
    return absl::StrSplit(log, '\n', absl::SkipEmpty());
  }
  // The calls that change something.
  std::vector<std::string> Updates() const {
    std::vector<std::string> out;
    for (const auto& c : Calls()) {
      if (c.rfind("update", 0) == 0) out.push_back(c);
    }
    return out;
  }

 private:
  std::string Read(const std::string& rel) const {
    std::ifstream in(dir_.path + rel);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  testing::ScratchDir dir_;
};

TEST_CASE("SlurmFencer drains an idle node with cmax's reason and resumes it",
          "[remediation]") {
  FakeSlurm slurm;
  slurm.SetNode("n1", "IDLE");
  SlurmFencer fencer(slurm.Scontrol());
  auto before = fencer.Inspect("n1");
  REQUIRE(before.ok());
  CHECK(before->holder == FenceHolder::kNone);
  CHECK(before->Describe() == "not fenced: State=IDLE");

  REQUIRE(fencer.Fence("n1", "Xid 79 on GPU 3 \"fell off the bus\"; incident=7").ok());
  CHECK(slurm.Updates() ==
        std::vector<std::string>{
            "update NodeName=n1 State=DRAIN Reason=cmax fence: Xid 79 on GPU 3 "
            "fell off the bus incident7"});
  CHECK(slurm.State("n1") == "IDLE+DRAIN");
  auto fenced = fencer.Inspect("n1");
  REQUIRE(fenced.ok());
  CHECK(fenced->holder == FenceHolder::kCmax);
  CHECK(fenced->Describe() ==
        "fenced by cmax: cmax fence: Xid 79 on GPU 3 fell off the bus incident7");

  // Fencing again is a no-op; lifting resumes the node.
  REQUIRE(fencer.Fence("n1", "again").ok());
  CHECK(slurm.Updates().size() == 1);
  REQUIRE(fencer.Lift("n1").ok());
  CHECK(slurm.Updates().back() == "update NodeName=n1 State=RESUME");
  CHECK(slurm.State("n1") == "IDLE");
  // Lifting a node that is not fenced changes nothing.
  REQUIRE(fencer.Lift("n1").ok());
  CHECK(slurm.Updates().size() == 2);
}

TEST_CASE("SlurmFencer leaves an operator's drain and down alone", "[remediation]") {
  FakeSlurm slurm;
  slurm.SetNode("n1", "IDLE+DRAIN", "maint [root@2026-12-01T10:00:00]");
  slurm.SetNode("n2", "DOWN*", "Not responding [slurm@2026-12-02T11:12:13]");
  slurm.SetNode("n3", "MIXED+DRAIN",
                "cmax run-20261201: gemm slow [slurm@2026-12-01T10:00:00]");
  SlurmFencer fencer(slurm.Scontrol());

  absl::Status s = fencer.Fence("n1", "Xid 79");
  CHECK(s.code() == absl::StatusCode::kAlreadyExists);
  CHECK(s.message() == "held by operator: maint");
  CHECK(IsHeldByOperator(s));
  s = fencer.Lift("n1");
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(s.message() == "drained by someone else: maint");

  s = fencer.Fence("n2", "Xid 79");
  CHECK(s.message() == "held by operator: Not responding");
  CHECK(fencer.Lift("n2").code() == absl::StatusCode::kFailedPrecondition);
  // A run-end drain ("cmax RUN: ...", coordinator/slurm_drain.h) is not the
  // fault loop's to lift either.
  CHECK(IsHeldByOperator(fencer.Fence("n3", "x")));
  CHECK(fencer.Lift("n3").code() == absl::StatusCode::kFailedPrecondition);

  CHECK(slurm.Updates().empty());
  CHECK(slurm.State("n1") == "IDLE+DRAIN");
  CHECK(slurm.Reason("n1") == "maint [root@2026-12-01T10:00:00]");
}

TEST_CASE("SlurmFencer reports unknown nodes and bad names and failing commands",
          "[remediation]") {
  FakeSlurm slurm;
  SlurmFencer fencer(slurm.Scontrol());
  absl::Status s = fencer.Fence("n9", "x");
  CHECK(s.code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("show node n9 -o: exit 1: Node n9 not found"));

  for (const std::string bad : {"-n1", "n1 n2", "", "n1;reboot", "State=DOWN"}) {
    CHECK(fencer.Fence(bad, "x").code() == absl::StatusCode::kInvalidArgument);
    CHECK(fencer.Lift(bad).code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(slurm.Calls().size() == 1);  // only n9's show

  SlurmFencer missing(slurm.Scontrol() + "-absent");
  CHECK(missing.Inspect("n1").status().code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("SlurmFencer gives up on a scontrol that hangs within its timeout",
          "[remediation]") {
  testing::ScratchDir dir;
  const std::string path = dir.path + "/scontrol";
  testing::WriteFileWithMode(path, "#!/bin/sh\nexec sleep 30\n", 0755);
  SlurmFencer fencer(path, std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = fencer.Fence("n1", "x");
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("SanitizeSlurmReason keeps what scontrol cannot misread", "[remediation]") {
  CHECK(SanitizeSlurmReason("cmax: a=b \"c\" 'd' $(e) f/g+h-i_j.k") ==
        "cmax: ab c d e f/g+h-i_j.k");
  CHECK(SanitizeSlurmReason(std::string(300, 'x')).size() == 100);
  CHECK(IsFenceableNodeName("gpu-node-01.cluster"));
  CHECK_FALSE(IsFenceableNodeName("-x"));
  CHECK_FALSE(IsFenceableNodeName(".x"));
  CHECK_FALSE(IsFenceableNodeName("a/b"));
}

TEST_CASE("NoFencer fences nothing and says so", "[remediation]") {
  NoFencer none;
  auto s = none.Inspect("n1");
  REQUIRE(s.ok());
  CHECK(s->holder == FenceHolder::kNone);
  CHECK(s->Describe() == "not fenced: fence is none");
  CHECK(none.Fence("n1", "x").ok());
  CHECK(none.Lift("n1").ok());
  CHECK(none.Fence("-n1", "x").code() == absl::StatusCode::kInvalidArgument);
  Policy policy;
  CHECK(MakeFencer(policy)->Name() == "none");
  policy.fence = FenceKind::kSlurm;
  CHECK(MakeFencer(policy)->Name() == "slurm");
}

}  // namespace
}  // namespace cmax::remediation
