// Audit judge: each component's version across the nodes of a run. Mixed
// drivers, CUDA, NCCL, firmware or kernels are a Lifecycle warning that lists
// the nodes on each version ("driver: 580.65.06 on node-1, node-2; 570.124.06
// on node-3"); a version shared by every node is a pass.
//
// Input: the audit suite's `component_version` Measurements (labels
// component, version, source; value 1), one per component per node (per
// device for NIC firmware).
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/record_set.h"
#include "reports/run_data.h"

namespace cmax::reports {

void JudgeAuditDrift(const RunData& data, std::vector<v1::RuleResult>* out) {
  // component -> version -> nodes
  std::map<std::string, std::map<std::string, std::set<std::string>>> seen;
  ForEachRecord(data, {v1::Record::kMeasurement, {}, "component_version"},
                [&](const v1::ExportedRecord& rec) {
                  if (!rec.record().has_measurement()) return;
                  const auto& m = rec.record().measurement();
                  if (m.metric() != "component_version") return;
                  if (!rec.suite().empty() && rec.suite() != "audit") return;
                  auto comp = m.labels().find("component");
                  auto ver = m.labels().find("version");
                  if (comp == m.labels().end() || ver == m.labels().end()) return;
                  const std::string node = RecordNode(rec);  // the sender
                  if (node.empty()) return;
                  seen[comp->second][ver->second].insert(node);
                });
  for (const auto& [component, by_version] : seen) {
    std::set<std::string> nodes;
    for (const auto& [version, on] : by_version) nodes.insert(on.begin(), on.end());
    if (nodes.size() < 2) continue;  // drift needs at least two nodes
    if (by_version.size() == 1 && by_version.begin()->first == "not installed") continue;
    // Most common version first, then by version text.
    std::vector<std::pair<std::string, std::set<std::string>>> groups(by_version.begin(),
                                                                      by_version.end());
    std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
      return a.second.size() > b.second.size();
    });
    v1::RuleResult r;
    r.set_rule_id("audit.version_drift");
    r.set_category(JudgeCategory("audit"));
    r.set_subject(absl::StrCat("component:", component));
    r.set_unit("versions");
    r.set_value(static_cast<double>(groups.size()));
    r.set_expected(1);
    std::vector<std::string> parts;
    for (const auto& [version, on] : groups) {
      std::string line = absl::StrCat(version, " on ", absl::StrJoin(on, ", "));
      parts.push_back(line);
      r.add_evidence(absl::StrCat(component, ": ", line));
    }
    if (groups.size() == 1) {
      r.set_outcome("pass");
      r.set_message(absl::StrCat(component, ": ", groups.front().first, " on all ", nodes.size(),
                                 " nodes"));
    } else {
      r.set_outcome("warn");
      r.set_message(absl::StrCat(component, ": ", absl::StrJoin(parts, "; ")));
      r.set_action(absl::StrCat("Bring every node to one ", component,
                                " version (the newest supported one) so results compare and "
                                "fixes apply everywhere."));
    }
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
