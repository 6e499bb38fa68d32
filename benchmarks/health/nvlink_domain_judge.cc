// NVLink domain judge: the rack-scale view of the NVLink fabric (RULES.md,
// rule "NVLink domains"). The health suite measures `nvlink_fabric` once per
// GPU that reports a fabric registration (benchmarks/health/fabric_domain.h),
// labelled cluster_uuid, clique_id, fabric_state and, where the platform
// says, nvlink_domain_gpus (72 for GB200 / GB300 NVL72). GPUs are grouped by
// cluster UUID (the NVLink domain, a rack); an all-zero UUID is a node's own
// fabric and is not grouped. Each (node, GPU) counts once, as its last
// record says (health and health-after in one plan).
//
// Per domain (subject "domain:<uuid>"):
//  - nvlink.domain (fleet-wide): pass with the grouping (GPUs, nodes,
//    cliques); warn when fewer GPUs registered than the platform's domain
//    size, naming the domain and the count.
//  - nvlink.domain_clique (per node): fail for a node with a registered GPU
//    outside the domain's main clique (the clique most of its GPUs are in):
//    "node-7 GPU 3 in clique 2, the other 71 GPUs of domain <uuid> in clique 1".
// Unregistered GPUs are the health finding's (health.fabric_registration);
// here they only do not count towards the domain's size.
// Not measured: the health suite said it could not read the fabric
// (health.nvlink_fabric_not_measured) and no GPU of the run reports a domain.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

// Its rules' category, from the suite's declaration.
std::string Category() { return JudgeCategory("health"); }

struct FabricGpu {
  std::string node;
  std::string gpu;
  std::string clique;  // "" when not reported
  bool registered = false;
  int expected = 0;  // nvlink_domain_gpus, 0 when the platform gives none
};

bool IsZeroUuid(const std::string& uuid) {
  return std::all_of(uuid.begin(), uuid.end(),
                     [](char c) { return c == '0' || c == '-'; });
}

std::string GpuList(const std::vector<const FabricGpu*>& gpus) {
  std::vector<std::string> ids;
  for (const auto* g : gpus) ids.push_back(g->gpu);
  return absl::StrCat(ids.size() == 1 ? "GPU " : "GPUs ", absl::StrJoin(ids, ", "));
}

std::string Gpus(size_t n) { return absl::StrCat(n, n == 1 ? " GPU" : " GPUs"); }

void JudgeDomain(const std::string& uuid, const std::vector<FabricGpu>& gpus,
                 std::vector<v1::RuleResult>* out) {
  const std::string subject = absl::StrCat("domain:", uuid);
  std::vector<const FabricGpu*> registered;
  std::set<std::string> nodes;
  int expected = 0;
  for (const FabricGpu& g : gpus) {
    nodes.insert(g.node);
    expected = std::max(expected, g.expected);
    if (g.registered) registered.push_back(&g);
  }
  // clique -> its registered GPUs
  std::map<std::string, std::vector<const FabricGpu*>> cliques;
  for (const FabricGpu* g : registered) cliques[g->clique].push_back(g);
  std::string main_clique;
  size_t main_size = 0;
  for (const auto& [clique, members] : cliques) {
    if (members.size() > main_size) {  // ties: the lowest id (map order)
      main_clique = clique;
      main_size = members.size();
    }
  }
  std::vector<std::string> clique_text;
  for (const auto& [clique, members] : cliques) {
    clique_text.push_back(absl::StrCat("clique ", clique.empty() ? "?" : clique, ": ",
                                       Gpus(members.size())));
  }

  // The odd GPUs, per node.
  std::map<std::string, std::vector<const FabricGpu*>> odd_by_node;
  for (const FabricGpu* g : registered) {
    if (g->clique != main_clique) odd_by_node[g->node].push_back(g);
  }
  for (const auto& [node, odd] : odd_by_node) {
    // By the clique they are in.
    std::map<std::string, std::vector<const FabricGpu*>> by_clique;
    for (const auto* g : odd) by_clique[g->clique].push_back(g);
    std::vector<std::string> parts;
    for (const auto& [clique, members] : by_clique) {
      parts.push_back(absl::StrCat(GpuList(members), " in clique ",
                                   clique.empty() ? "(none reported)" : clique));
    }
    const size_t others = registered.size() - odd.size();
    std::string rest =
        others == main_size
            ? absl::StrCat("the other ", Gpus(others), " of domain ", uuid, " in clique ",
                           main_clique)
            : absl::StrCat(main_size, " of the ", Gpus(registered.size()), " of domain ",
                           uuid, " in clique ", main_clique);
    v1::RuleResult r =
        MakeRule("nvlink.domain_clique", Category(), "fail", node, subject,
                 absl::StrCat(node, " ", absl::StrJoin(parts, ", "), ", ", rest));
    r.set_value(static_cast<double>(odd.size()));
    r.set_expected(0);
    r.set_unit("GPUs outside the main clique");
    r.add_evidence(absl::StrCat("domain ", uuid, ": ", absl::StrJoin(clique_text, "; ")));
    r.set_action(
        "GPUs of one NVLink domain must share one clique to reach each other over "
        "NVLink: check "
        "the partition of the rack in its NVLink management (NMX-M / NMX-C, or the "
        "switch "
        "trays' fabric manager), then reset the odd GPU or reboot its tray and rerun "
        "health");
    out->push_back(std::move(r));
  }

  // The domain as a whole.
  std::string msg =
      absl::StrCat("domain ", uuid, ": ", Gpus(registered.size()), " registered on ",
                   nodes.size(), nodes.size() == 1 ? " node" : " nodes");
  if (registered.size() < gpus.size()) {
    absl::StrAppend(&msg, " (", gpus.size() - registered.size(), " more not registered)");
  }
  absl::StrAppend(&msg, ", ",
                  cliques.size() == 1 ? absl::StrCat("one clique (", main_clique, ")")
                                      : absl::StrCat(cliques.size(), " cliques"));
  const bool short_of_size =
      expected > 0 && static_cast<int>(registered.size()) < expected;
  if (short_of_size) {
    absl::StrAppend(&msg, "; the platform's domain has ", expected, " GPUs");
  }
  v1::RuleResult r = MakeRule("nvlink.domain", Category(), short_of_size ? "warn" : "pass",
                              "", subject, msg);
  r.set_value(static_cast<double>(registered.size()));
  if (expected > 0) r.set_expected(expected);
  r.set_unit("GPUs");
  r.add_evidence(absl::StrCat("nodes: ", absl::StrJoin(nodes, ", ")));
  if (!clique_text.empty()) r.add_evidence(absl::StrJoin(clique_text, "; "));
  std::vector<std::string> unregistered;
  for (const FabricGpu& g : gpus) {
    if (!g.registered) unregistered.push_back(absl::StrCat(g.node, " GPU ", g.gpu));
  }
  if (!unregistered.empty()) {
    r.add_evidence(absl::StrCat("not registered: ", absl::StrJoin(unregistered, ", ")));
  }
  if (short_of_size) {
    r.set_action(absl::StrCat(
        "find the missing ", expected - static_cast<int>(registered.size()),
        " GPUs of domain ", uuid,
        ": trays not in this run (add them to the plan), GPUs that did not register (see "
        "health.fabric_registration), or trays powered off; a full NVL72 rack has 18 "
        "trays of 4"));
  }
  out->push_back(std::move(r));
}

}  // namespace

void NvlinkDomainJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  // (node, gpu) -> its cluster UUID and state: the last record wins, so a
  // plan that runs health twice (health, health-after) counts each GPU once,
  // as the later run saw it.
  std::map<std::pair<std::string, std::string>, std::pair<std::string, FabricGpu>> latest;
  std::vector<std::string> not_measured;  // "node: why"
  // Labels are read only of nvlink_fabric measurements: the rest is not
  // parsed (reports/record_set.h).
  RecordFilter every;
  every.labels_if = [](const v1::ExportedRecord& rec) {
    return rec.record().has_measurement() && rec.record().measurement().metric() == "nvlink_fabric";
  };
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    const v1::Record& record = rec.record();
    if (record.has_finding()) {
      const v1::Finding& f = record.finding();
      if (f.check_id() == "health.nvlink_fabric_not_measured") {
        not_measured.push_back(absl::StrCat(RecordNode(rec), ": ", f.detail()));
      }
      return;
    }
    if (!record.has_measurement()) return;
    const v1::Measurement& m = record.measurement();
    if (m.metric() != "nvlink_fabric") return;
    const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
    if (!suite.empty() && suite != "health") return;
    FabricGpu g;
    g.node = RecordNode(rec);
    g.gpu = LabelValue(m, "gpu");
    g.clique = LabelValue(m, "clique_id");
    g.registered = m.value() >= 1;
    int expected = 0;
    if (absl::SimpleAtoi(LabelValue(m, "nvlink_domain_gpus"), &expected))
      g.expected = expected;
    latest[{g.node, g.gpu}] = {LabelValue(m, "cluster_uuid"), g};
  });
  const size_t gpus_reporting = latest.size();
  std::map<std::string, std::vector<FabricGpu>> domains;  // cluster UUID -> GPUs
  for (const auto& [key, entry] : latest) {
    const auto& [uuid, g] = entry;
    if (uuid.empty() || IsZeroUuid(uuid)) continue;
    domains[uuid].push_back(g);
  }
  if (gpus_reporting == 0) {
    if (not_measured.empty()) return;  // health did not look here, or no NVLink at all
    v1::RuleResult r =
        MakeRule("nvlink.domain", Category(), "not_measured", "", "NVLink domains",
                 absl::StrCat("no GPU reported an NVLink domain (",
                              not_measured.size() == 1
                                  ? "1 node"
                                  : absl::StrCat(not_measured.size(), " nodes"),
                              " could not read the fabric)"));
    for (size_t i = 0; i < not_measured.size() && i < 8; ++i)
      r.add_evidence(not_measured[i]);
    r.set_action(
        "run health where NVML answers the fabric query (NVIDIA driver installed, "
        "Hopper or later)");
    out->push_back(std::move(r));
    return;
  }
  for (const auto& [uuid, gpus] : domains) JudgeDomain(uuid, gpus, out);
}

}  // namespace cmax::reports
