// KubeFencer (coordinator/remediation/fence.h) with the real kubectl against
// a stand-in Kubernetes API server on 127.0.0.1 (fake_kube_api.py beside this
// file: one Node, GET and PATCH as the API server applies them, each request
// recorded). Skipped, saying why, where kubectl or python3 is not installed.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "coordinator/remediation/fence.h"
#include "tests/scratch_dir.h"
#include "tests/skip.h"

namespace cmax::remediation {
namespace {

using google::protobuf::Struct;

constexpr char kTaint[] = "cmax.io/quarantined";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A node as `kubectl get node -o json` shows one (trimmed), with a taint of
// someone else's that must survive cmax's fence and lift.
std::string NodeJson(const std::string& name, bool cordoned) {
  return absl::StrCat(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
      R"(","resourceVersion":"100","labels":{"kubernetes.io/hostname":")", name,
      R"("},"annotations":{"node.alpha.kubernetes.io/ttl":"0"}},"spec":{)",
      cordoned ? R"("unschedulable":true,)" : "",
      R"("taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoExecute"}]},)",
      R"("status":{"conditions":[{"type":"Ready","status":"True"}]}})");
}

// The stand-in server, started for one node; stopped with the object.
class FakeApiServer {
 public:
  static std::string Skip() {
    if (FindExecutable("kubectl").empty()) return "kubectl is not on PATH";
    if (FindExecutable("python3").empty())
      return "python3 is not on PATH (fake_kube_api.py)";
    return "";
  }

  explicit FakeApiServer(const std::string& node_json) {
    // kubectl's discovery cache (else ~/.kube/cache) goes with the folder.
    setenv("KUBECACHEDIR", Path("kube-cache").c_str(), 1);
    testing::WriteFileWithMode(Path("node.json"), node_json, 0644);
    SpawnOptions o;
    o.argv = {
        FindExecutable("python3"),
        std::string(CMAX_SOURCE_DIR) + "/tests/coordinator/remediation/fake_kube_api.py",
        "--node",
        Path("node.json"),
        "--state",
        Path("state.json"),
        "--log",
        Path("requests.jsonl"),
        "--port-file",
        Path("port"),
        "--lifetime",
        "120"};
    o.stderr_path = Path("server.err");
    auto p = Subprocess::Spawn(o);
    REQUIRE(p.ok());
    server_ = std::move(*p);
    for (int i = 0; i < 200 && port_.empty(); ++i) {  // up to 10 s
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      port_ = ReadFile(Path("port"));
    }
    INFO(ReadFile(Path("server.err")));
    REQUIRE_FALSE(port_.empty());
    WriteKubeconfig();
  }
  ~FakeApiServer() {
    server_->SignalGroup(SIGKILL);
    server_->Wait();
  }

  std::string Path(const std::string& name) const { return dir_.path + "/" + name; }
  std::string Kubeconfig() const { return Path("kubeconfig"); }

  // The node as the server holds it now.
  Struct Node() const {
    Struct node;
    REQUIRE(
        google::protobuf::util::JsonStringToMessage(ReadFile(Path("state.json")), &node)
            .ok());
    return node;
  }
  // "METHOD path-without-query body" of each request that changed something.
  std::vector<std::string> Patches() const {
    std::vector<std::string> out;
    for (const auto& line :
         absl::StrSplit(ReadFile(Path("requests.jsonl")), '\n', absl::SkipEmpty())) {
      Struct r;
      REQUIRE(google::protobuf::util::JsonStringToMessage(std::string(line), &r).ok());
      const auto& f = r.fields();
      if (f.at("method").string_value() == "GET") continue;
      const std::string path = f.at("path").string_value();
      out.push_back(absl::StrCat(f.at("method").string_value(), " ",
                                 path.substr(0, path.find('?')), " ",
                                 f.at("body").string_value()));
    }
    return out;
  }

 private:
  void WriteKubeconfig() {
    testing::WriteFileWithMode(Kubeconfig(),
                               absl::StrCat(R"(apiVersion: v1
kind: Config
clusters:
- name: stand-in
  cluster:
    server: http://127.0.0.1:)",
                                            port_, R"(
    insecure-skip-tls-verify: true
contexts:
- name: stand-in
  context: {cluster: stand-in, user: nobody}
current-context: stand-in
users:
- name: nobody
  user: {}
)"),
                               0600);
  }

  testing::ScratchDir dir_;
  std::unique_ptr<Subprocess> server_;
  std::string port_;
};

bool Cordoned(const Struct& node) {
  const auto& spec = node.fields().at("spec").struct_value().fields();
  auto it = spec.find("unschedulable");
  return it != spec.end() && it->second.bool_value();
}

std::vector<std::string> Taints(const Struct& node) {
  std::vector<std::string> out;
  const auto& spec = node.fields().at("spec").struct_value().fields();
  auto it = spec.find("taints");
  if (it == spec.end()) return out;
  for (const auto& t : it->second.list_value().values()) {
    const auto& f = t.struct_value().fields();
    out.push_back(absl::StrCat(f.at("key").string_value(), "=",
                               f.at("value").string_value(), ":",
                               f.at("effect").string_value()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Annotation(const Struct& node, const std::string& key) {
  const auto& ann =
      node.fields().at("metadata").struct_value().fields().at("annotations");
  auto it = ann.struct_value().fields().find(key);
  return it == ann.struct_value().fields().end() ? "<none>" : it->second.string_value();
}

TEST_CASE("KubeFencer cordons and taints and annotates and lifts only its own",
          "[remediation]") {
  if (const std::string why = FakeApiServer::Skip(); !why.empty()) CMAX_SKIP(why);
  FakeApiServer api(NodeJson("gpu-01", false));
  KubeFencer fencer(FindExecutable("kubectl"), api.Kubeconfig(), kTaint);

  auto before = fencer.Inspect("gpu-01");
  REQUIRE(before.ok());
  CHECK(before->holder == FenceHolder::kNone);

  absl::Status s = fencer.Fence("gpu-01", "Xid 79");
  REQUIRE(s.ok());
  Struct node = api.Node();
  CHECK(Cordoned(node));
  CHECK(Taints(node) == std::vector<std::string>{"cmax.io/quarantined=cmax:NoSchedule",
                                                 "nvidia.com/gpu=present:NoExecute"});
  CHECK(Annotation(node, "cmax.io/fenced-by") == "cmax");
  auto fenced = fencer.Inspect("gpu-01");
  REQUIRE(fenced.ok());
  CHECK(fenced->holder == FenceHolder::kCmax);
  CHECK(api.Patches().size() == 3);

  REQUIRE(fencer.Lift("gpu-01").ok());
  node = api.Node();
  CHECK_FALSE(Cordoned(node));
  CHECK(Taints(node) == std::vector<std::string>{"nvidia.com/gpu=present:NoExecute"});
  CHECK(Annotation(node, "cmax.io/fenced-by") == "<none>");
  CHECK(Annotation(node, "node.alpha.kubernetes.io/ttl") == "0");
  const auto patches = api.Patches();
  REQUIRE(patches.size() == 6);
  CHECK(patches[4] == R"(PATCH /api/v1/nodes/gpu-01 {"spec":{"unschedulable":null}})");
  CHECK(
      patches[5] ==
      R"(PATCH /api/v1/nodes/gpu-01 {"metadata":{"annotations":{"cmax.io/fenced-by":null}}})");
  // Nothing left to lift: no request changes anything.
  REQUIRE(fencer.Lift("gpu-01").ok());
  CHECK(api.Patches().size() == 6);
}

TEST_CASE("KubeFencer leaves an operator's cordon untouched", "[remediation]") {
  if (const std::string why = FakeApiServer::Skip(); !why.empty()) CMAX_SKIP(why);
  FakeApiServer api(NodeJson("gpu-02", true));
  KubeFencer fencer(FindExecutable("kubectl"), api.Kubeconfig(), kTaint);

  auto state = fencer.Inspect("gpu-02");
  REQUIRE(state.ok());
  CHECK(state->holder == FenceHolder::kOperator);
  absl::Status s = fencer.Fence("gpu-02", "Xid 79");
  CHECK(IsHeldByOperator(s));
  CHECK(s.message() ==
        "held by operator: cordoned; taints nvidia.com/gpu=present:NoExecute");
  s = fencer.Lift("gpu-02");
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith("cordoned by someone else: cordoned"));
  CHECK(api.Patches().empty());
  CHECK(Cordoned(api.Node()));
}

TEST_CASE("KubeFencer takes cmax's taint key without cmax's annotation for an operator's",
          "[remediation]") {
  if (const std::string why = FakeApiServer::Skip(); !why.empty()) CMAX_SKIP(why);
  std::string json = NodeJson("gpu-04", false);
  const std::string theirs =
      R"({"key":"nvidia.com/gpu","value":"present","effect":"NoExecute"})";
  json.replace(json.find(theirs), theirs.size(),
               R"({"key":"cmax.io/quarantined","value":"oncall","effect":"NoSchedule"})");
  FakeApiServer api(json);
  KubeFencer fencer(FindExecutable("kubectl"), api.Kubeconfig(), kTaint);
  absl::Status s = fencer.Fence("gpu-04", "x");
  CHECK(IsHeldByOperator(s));
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("cmax.io/quarantined set without cmax.io/fenced-by=cmax"));
  CHECK(fencer.Lift("gpu-04").code() == absl::StatusCode::kFailedPrecondition);
  CHECK(api.Patches().empty());
}

TEST_CASE("KubeFencer reports a node the API server does not have", "[remediation]") {
  if (const std::string why = FakeApiServer::Skip(); !why.empty()) CMAX_SKIP(why);
  FakeApiServer api(NodeJson("gpu-03", false));
  KubeFencer fencer(FindExecutable("kubectl"), api.Kubeconfig(), kTaint);
  absl::Status s = fencer.Fence("gpu-99", "x");
  CHECK(s.code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("get node gpu-99 -o json: exit 1"));
  CHECK(fencer.Fence("--all", "x").code() == absl::StatusCode::kInvalidArgument);
  CHECK(api.Patches().empty());
}

}  // namespace
}  // namespace cmax::remediation
