// Orchestration judge: Slurm's topology/block blocks against the NVLink
// domains (RULES.md, "Slurm blocks and NVLink domains"). A block is where
// Slurm places a job that asks for one (--segment, topology/block in
// slurm.conf(5) and topology.conf(5)); on GB200 / GB300 NVL72 racks a block
// should be one NVLink domain, or a job given a block crosses domains and
// its GPUs talk over the network instead of NVLink.
//
// Input: the orchestration suite's `slurm_block` Measurements (label block,
// one per node in a BlockName line) and the health suite's `nvlink_fabric`
// Measurements (label cluster_uuid, per GPU; an all-zero UUID is no domain).
// A node's domain is the UUID most of its registered GPUs report. Nodes
// without both are not judged here (no result: nothing to compare).
//
// Output, category Orchestration, per node (rule orchestration.slurm_block):
// fail when its block holds nodes of another NVLink domain; warn when its
// domain's nodes sit in other blocks too (the domain is split); else pass.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/record_set.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

bool NoDomain(const std::string& uuid) {
  for (char c : uuid) {
    if (c != '0' && c != '-') return false;
  }
  return true;
}

std::string Names(const std::set<std::string>& nodes) {
  std::vector<std::string> v(nodes.begin(), nodes.end());
  if (v.size() > 8) {
    const size_t more = v.size() - 8;
    v.resize(8);
    return absl::StrCat(absl::StrJoin(v, ", "), " and ", more, " more");
  }
  return absl::StrJoin(v, ", ");
}

}  // namespace

void JudgeSlurmBlocks(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::string, std::string> block_of;                        // node -> block
  std::map<std::string, std::map<std::string, int>> domain_votes;     // node -> uuid -> GPUs
  // Labels are parsed only of these two metrics (reports/record_set.h).
  RecordFilter every;
  every.labels_if = [](const v1::ExportedRecord& rec) {
    if (!rec.record().has_measurement()) return false;
    const std::string& m = rec.record().measurement().metric();
    return m == "slurm_block" || m == "nvlink_fabric";
  };
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    if (!rec.record().has_measurement()) return;
    const v1::Measurement& m = rec.record().measurement();
    const std::string node = RecordNode(rec);
    if (node.empty()) return;
    if (m.metric() == "slurm_block") {
      const std::string block = LabelValue(m, "block");
      if (!block.empty()) block_of[node] = block;
    } else if (m.metric() == "nvlink_fabric" && m.value() >= 1) {
      const std::string uuid = LabelValue(m, "cluster_uuid");
      if (!uuid.empty() && !NoDomain(uuid)) ++domain_votes[node][uuid];
    }
  });
  std::map<std::string, std::string> domain_of;  // node -> uuid
  for (const auto& [node, votes] : domain_votes) {
    std::string best;
    int most = 0;
    for (const auto& [uuid, n] : votes) {
      if (n > most) best = uuid, most = n;
    }
    domain_of[node] = best;
  }
  std::map<std::string, std::set<std::string>> block_nodes, domain_nodes;
  for (const auto& [node, block] : block_of) {
    auto d = domain_of.find(node);
    if (d == domain_of.end()) continue;
    block_nodes[block].insert(node);
    domain_nodes[d->second].insert(node);
  }
  const std::string category = JudgeCategory("orchestration");
  for (const auto& [node, block] : block_of) {
    auto d = domain_of.find(node);
    if (d == domain_of.end()) continue;
    const std::string& domain = d->second;
    std::set<std::string> other_domain, other_block;
    std::set<std::string> other_domains, other_blocks;
    for (const std::string& n : block_nodes[block]) {
      if (domain_of[n] != domain) other_domain.insert(n), other_domains.insert(domain_of[n]);
    }
    for (const std::string& n : domain_nodes[domain]) {
      if (block_of[n] != block) other_block.insert(n), other_blocks.insert(block_of[n]);
    }
    v1::RuleResult r = MakeRule("orchestration.slurm_block", category, "pass", node,
                                absl::StrCat("block:", block));
    r.add_evidence(absl::StrCat(node, ": Slurm block ", block, ", NVLink domain ", domain));
    if (!other_domain.empty()) {
      r.set_outcome("fail");
      r.set_message(absl::StrCat("Slurm block ", block, " spans NVLink domains: ", node, " is in ",
                                 domain, ", ", Names(other_domain), " in ",
                                 absl::StrJoin(other_domains, ", "),
                                 "; a job given this block crosses domains"));
      r.set_action(absl::StrCat("In topology.conf put each NVLink domain (rack) in a BlockName "
                                "of its own; move ", Names(other_domain), " out of block ", block,
                                "."));
    } else if (!other_block.empty()) {
      r.set_outcome("warn");
      r.set_message(absl::StrCat("NVLink domain ", domain, " is split over Slurm blocks ", block,
                                 " and ", absl::StrJoin(other_blocks, ", "), " (",
                                 Names(other_block), ")"));
      r.set_action(absl::StrCat("In topology.conf list the whole NVLink domain ", domain,
                                " in one BlockName."));
    } else {
      r.set_message(absl::StrCat("Slurm block ", block, " is NVLink domain ", domain, " (",
                                 block_nodes[block].size(), " nodes)"));
    }
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
