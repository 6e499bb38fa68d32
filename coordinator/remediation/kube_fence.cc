// KubeFencer (fence.h): kubectl cordon, a NoSchedule taint and cmax's
// annotation.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "coordinator/remediation/fence.h"
#include "coordinator/remediation/fence_internal.h"

namespace cmax::remediation {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using internal::CheckNodeName;

constexpr size_t kMaxOutput = 64 << 10;
constexpr size_t kMaxNodeJson = 4 << 20;  // a node's status lists its images

std::shared_ptr<spdlog::logger> Log() { return GetLogger("fence"); }

// What Inspect reads from `kubectl get node N -o json`.
struct NodeView {
  bool cordoned = false;
  bool ours = false;                // annotation cmax.io/fenced-by=cmax
  bool tainted = false;             // our taint key with effect NoSchedule
  bool foreign_taint = false;       // our taint key, another effect
  std::vector<std::string> taints;  // "key=value:Effect" of every taint
};

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

const Struct* Object(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  return v != nullptr && v->has_struct_value() ? &v->struct_value() : nullptr;
}

std::string Text(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  return v != nullptr && v->kind_case() == Value::kStringValue ? v->string_value() : "";
}

void ReadTaints(const Struct& spec, const std::string& taint_key, NodeView* view) {
  const Value* taints = Field(spec, "taints");
  if (taints == nullptr || !taints->has_list_value()) return;
  for (const Value& t : taints->list_value().values()) {
    if (!t.has_struct_value()) continue;
    const Struct& taint = t.struct_value();
    const std::string key = Text(taint, "key");
    const std::string effect = Text(taint, "effect");
    const std::string value = Text(taint, "value");
    view->taints.push_back(
        absl::StrCat(key, value.empty() ? "" : "=", value, ":", effect));
    if (key != taint_key) continue;
    (effect == "NoSchedule" ? view->tainted : view->foreign_taint) = true;
  }
}

absl::StatusOr<NodeView> ParseNode(const std::string& json, const std::string& node,
                                   const std::string& taint_key) {
  Struct doc;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &doc);
  const Struct* meta = Object(doc, "metadata");
  if (!parsed.ok() || meta == nullptr || Text(*meta, "name") != node) {
    return absl::UnavailableError(
        absl::StrCat("kubectl get node ", node, " -o json: not that node's JSON"));
  }
  NodeView view;
  if (const Struct* ann = Object(*meta, "annotations")) {
    view.ours = Text(*ann, std::string(kFencedByAnnotation)) == kFencedByValue;
  }
  if (const Struct* spec = Object(doc, "spec")) {
    const Value* u = Field(*spec, "unschedulable");
    view.cordoned =
        u != nullptr && u->kind_case() == Value::kBoolValue && u->bool_value();
    ReadTaints(*spec, taint_key, &view);
  }
  return view;
}

FenceState StateOf(const NodeView& view, const std::string& taint_key) {
  FenceState fs;
  std::vector<std::string> parts;
  if (view.cordoned) parts.push_back("cordoned");
  if (!view.taints.empty())
    parts.push_back(absl::StrCat("taints ", absl::StrJoin(view.taints, ", ")));
  fs.detail = parts.empty() ? "schedulable" : absl::StrJoin(parts, "; ");
  if (view.ours) {
    fs.holder = FenceHolder::kCmax;
  } else if (view.cordoned || view.tainted || view.foreign_taint) {
    fs.holder = FenceHolder::kOperator;
    if (!view.cordoned) {
      fs.detail = absl::StrCat(fs.detail, " (", taint_key, " set without ",
                               kFencedByAnnotation, "=", kFencedByValue, ")");
    }
  }
  return fs;
}

}  // namespace

KubeFencer::KubeFencer(std::string kubectl, std::string kubeconfig, std::string taint_key,
                       std::chrono::milliseconds timeout)
    : kubectl_(std::move(kubectl)),
      kubeconfig_(std::move(kubeconfig)),
      taint_key_(std::move(taint_key)),
      timeout_(timeout) {}

absl::StatusOr<std::string> KubeFencer::Kubectl(const std::vector<std::string>& args,
                                                size_t max_output) {
  std::vector<std::string> argv = {
      kubectl_, "--kubeconfig", kubeconfig_,
      absl::StrCat("--request-timeout=", timeout_.count(), "ms")};
  argv.insert(argv.end(), args.begin(), args.end());
  return internal::RunFenceCommand(argv, timeout_, max_output);
}

absl::StatusOr<FenceState> KubeFencer::Inspect(const std::string& node) {
  CMAX_RETURN_IF_ERROR(CheckNodeName(node));
  CMAX_ASSIGN_OR_RETURN(std::string json,
                        Kubectl({"get", "node", node, "-o", "json"}, kMaxNodeJson));
  CMAX_ASSIGN_OR_RETURN(NodeView view, ParseNode(json, node, taint_key_));
  return StateOf(view, taint_key_);
}

absl::Status KubeFencer::Fence(const std::string& node, const std::string& reason) {
  CMAX_ASSIGN_OR_RETURN(FenceState state, Inspect(node));
  if (state.holder == FenceHolder::kOperator) {
    return absl::AlreadyExistsError(absl::StrCat("held by operator: ", state.detail));
  }
  const std::string mark = absl::StrCat(kFencedByAnnotation, "=", kFencedByValue);
  CMAX_RETURN_IF_ERROR(
      Kubectl({"annotate", "node", node, mark, "--overwrite"}, kMaxOutput).status());
  CMAX_RETURN_IF_ERROR(Kubectl({"cordon", node}, kMaxOutput).status());
  CMAX_RETURN_IF_ERROR(
      Kubectl({"taint", "nodes", node, absl::StrCat(taint_key_, "=cmax:NoSchedule"),
               "--overwrite"},
              kMaxOutput)
          .status());
  Log()->warn("fenced {} in Kubernetes (cordon, taint {}): {}", node, taint_key_, reason);
  return absl::OkStatus();
}

absl::Status KubeFencer::Lift(const std::string& node) {
  CMAX_RETURN_IF_ERROR(CheckNodeName(node));
  CMAX_ASSIGN_OR_RETURN(std::string json,
                        Kubectl({"get", "node", node, "-o", "json"}, kMaxNodeJson));
  CMAX_ASSIGN_OR_RETURN(NodeView view, ParseNode(json, node, taint_key_));
  const FenceState state = StateOf(view, taint_key_);
  if (state.holder == FenceHolder::kNone) return absl::OkStatus();
  if (state.holder == FenceHolder::kOperator) {
    return absl::FailedPreconditionError(
        absl::StrCat("cordoned by someone else: ", state.detail));
  }
  if (view.tainted) {
    CMAX_RETURN_IF_ERROR(
        Kubectl({"taint", "nodes", node, absl::StrCat(taint_key_, ":NoSchedule-")},
                kMaxOutput)
            .status());
  }
  if (view.cordoned)
    CMAX_RETURN_IF_ERROR(Kubectl({"uncordon", node}, kMaxOutput).status());
  CMAX_RETURN_IF_ERROR(
      Kubectl({"annotate", "node", node, absl::StrCat(kFencedByAnnotation, "-")},
              kMaxOutput)
          .status());
  Log()->info("returned {} to Kubernetes scheduling (was: {})", node, state.detail);
  return absl::OkStatus();
}

}  // namespace cmax::remediation
