// Judge: inventory uniformity. The nodes of one run should be alike: the
// same number of GPUs, the same GPU model, the same NVIDIA driver and the
// same kernel. A fleet where they differ was not delivered (or is not kept)
// as one configuration, and results across it do not compare.
//
// Input: RunData.inventories (each node's last Hello, built by
// `cmax-bench hostcheck --inventory`), restricted to RunData.nodes when that
// is set. No inventory: no result. One node with an inventory (a one-node
// fleet): one not_measured result, inventory.uniform, since nothing could be
// compared; Lifecycle is then not measured rather than graded on nothing.
// GPU model and driver are compared among nodes with GPUs only; a CPU node
// already differs in gpu_count.
//
// Output, category Lifecycle, one fleet-wide result an attribute
// (rule_id inventory.uniform_<attribute>): pass when every node agrees,
// warn listing the nodes of each value when they do not. When one value is
// held by a strict majority, every node outside it also gets a warn of its
// own (same rule id, node set), so its verdict shows it.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

// Its rules' category, from the suite's declaration.
std::string Category() { return JudgeCategory("hostcheck"); }
constexpr size_t kMaxNamesPerValue = 20;

struct Attribute {
  const char* name;     // gpu_count, gpu_model, driver_version, kernel
  const char* what;     // in words
  bool gpu_nodes_only;  // compare only nodes with GPUs
  std::function<std::string(const v1::Inventory&)> value;
  const char* action;
};

std::string NameList(const std::vector<std::string>& nodes) {
  if (nodes.size() <= kMaxNamesPerValue) return absl::StrJoin(nodes, ", ");
  std::vector<std::string> head(nodes.begin(), nodes.begin() + kMaxNamesPerValue);
  return absl::StrCat(absl::StrJoin(head, ", "), " and ",
                      nodes.size() - kMaxNamesPerValue, " more");
}

std::string Shown(const std::string& value) {
  return value.empty() ? "(unknown)" : value;
}

void JudgeAttribute(
    const Attribute& attr,
    const std::vector<std::pair<std::string, const v1::Inventory*>>& nodes,
    std::vector<v1::RuleResult>* out) {
  std::map<std::string, std::vector<std::string>> by_value;  // value -> nodes
  size_t compared = 0;
  for (const auto& [node, inv] : nodes) {
    if (attr.gpu_nodes_only && inv->gpu_count() <= 0) continue;
    by_value[attr.value(*inv)].push_back(node);
    ++compared;
  }
  if (compared < 2) return;

  v1::RuleResult r;
  r.set_rule_id(absl::StrCat("inventory.uniform_", attr.name));
  r.set_category(Category());
  r.set_subject("fleet");
  r.set_value(static_cast<double>(by_value.size()));
  r.set_expected(1);
  r.set_unit("distinct values");
  if (by_value.size() == 1) {
    r.set_outcome("pass");
    r.set_message(absl::StrCat("all ", compared, " nodes have the same ", attr.what, ": ",
                               Shown(by_value.begin()->first)));
    out->push_back(std::move(r));
    return;
  }

  // Largest group first; ties by value for a stable order.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups(by_value.begin(),
                                                                       by_value.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.second.size() > b.second.size();
  });
  std::vector<std::string> summary;
  for (const auto& [value, members] : groups) {
    summary.push_back(absl::StrCat(Shown(value), " on ", members.size(), " node",
                                   members.size() == 1 ? "" : "s"));
    r.add_evidence(absl::StrCat(attr.name, "=", Shown(value), ": ", NameList(members)));
  }
  r.set_outcome("warn");
  r.set_message(
      absl::StrCat("nodes differ in ", attr.what, ": ", absl::StrJoin(summary, ", ")));
  r.set_action(attr.action);
  out->push_back(r);

  bool strict_majority = groups[0].second.size() > groups[1].second.size();
  if (!strict_majority) return;
  const std::string& common = groups[0].first;
  for (size_t g = 1; g < groups.size(); ++g) {
    for (const std::string& node : groups[g].second) {
      v1::RuleResult n;
      n.set_rule_id(r.rule_id());
      n.set_category(Category());
      n.set_outcome("warn");
      n.set_node(node);
      n.set_subject("node");
      n.set_message(absl::StrCat(node, " has ", attr.what, " ", Shown(groups[g].first),
                                 "; ", groups[0].second.size(), " of ", compared,
                                 " nodes have ", Shown(common)));
      n.add_evidence(absl::StrCat(node, ": ", attr.name, "=", Shown(groups[g].first)));
      n.add_evidence(absl::StrCat("most nodes: ", attr.name, "=", Shown(common)));
      n.set_action(attr.action);
      out->push_back(std::move(n));
    }
  }
}

}  // namespace

void JudgeInventoryUniformity(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::vector<std::pair<std::string, const v1::Inventory*>> nodes;
  if (!data.nodes.empty()) {
    for (const std::string& node : data.nodes) {
      auto it = data.inventories.find(node);
      if (it != data.inventories.end()) nodes.emplace_back(node, &it->second);
    }
  } else {
    for (const auto& [node, inv] : data.inventories) nodes.emplace_back(node, &inv);
  }
  if (nodes.empty()) return;
  if (nodes.size() == 1) {
    v1::RuleResult r;
    r.set_rule_id("inventory.uniform");
    r.set_category(Category());
    r.set_subject("fleet");
    r.set_outcome("not_measured");
    r.set_message(absl::StrCat("inventory uniformity needs two or more nodes to compare; only ",
                               nodes.front().first, " has an inventory"));
    out->push_back(std::move(r));
    return;
  }

  static const Attribute kAttributes[] = {
      {"gpu_count", "GPU count", false,
       [](const v1::Inventory& i) { return absl::StrCat(i.gpu_count()); },
       "find the missing GPUs on the nodes with fewer (`cmax-bench hostcheck "
       "--expect-gpus=N`, `lspci -d 10de:`) or correct the node selection"},
      {"gpu_model", "GPU model", true,
       [](const v1::Inventory& i) { return i.gpu_model(); },
       "check the odd nodes against the order; evaluate different models as separate "
       "runs"},
      {"driver_version", "NVIDIA driver version", true,
       [](const v1::Inventory& i) { return i.driver_version(); },
       "install one driver version on every node (drain, upgrade, reboot the odd ones)"},
      {"kernel", "kernel", false, [](const v1::Inventory& i) { return i.kernel(); },
       "boot every node into the same kernel (finish the rolling upgrade or roll it "
       "back)"},
  };
  for (const Attribute& attr : kAttributes) JudgeAttribute(attr, nodes, out);
}

}  // namespace cmax::reports
