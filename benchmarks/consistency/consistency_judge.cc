// Consistency judge: compares `consistency_digest` measurements (suite
// consistency, CPU or GPU backend) across the run.
//
// Records are grouped by (workload, model, versions); within a group every
// subject (a node's CPU, or one GPU of a node) must report the same digest.
//   * all agree                               -> pass (fleet-wide)
//   * a digest held by a strict majority of at least three subjects, others
//     differ                                  -> critical per dissenter
//     ("silent data corruption suspect", naming node, GPU, UUID)
//   * otherwise (fewer peers, no majority)    -> warn "disagreement, no
//     culprit" (fleet-wide: nobody can be blamed)
// Across models of the same workload (B200 beside B300, two CPU models),
// differences are expected: the largest relative error between the models'
// values is reported as a pass, never a fault.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

constexpr char kMetric[] = "consistency_digest";
constexpr int kMinPeers = 3;

struct Subject {
  std::string node;
  std::string gpu;   // empty for the CPU backend
  std::string uuid;
  std::map<std::string, int> digests;  // digest -> times reported
  double value = 0;

  std::string Name() const {
    return gpu.empty() ? absl::StrCat(node, " CPU")
                       : absl::StrCat(node, " GPU ", gpu, uuid.empty() ? "" : " " + uuid);
  }
  std::string SubjectId() const { return gpu.empty() ? "cpu" : "gpu:" + gpu; }
  // The digest it reported most (its own repeats disagreeing is the suite's
  // finding, not this judge's).
  std::string Digest() const {
    return std::max_element(digests.begin(), digests.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; })
        ->first;
  }
};

v1::RuleResult Result(const std::string& rule, const std::string& outcome,
                      const std::string& node, const std::string& subject,
                      const std::string& message) {
  return MakeRule(rule, JudgeCategory("consistency"), outcome, node, subject, message);
}

}  // namespace

void JudgeConsistency(const RunData& data, std::vector<v1::RuleResult>* out) {
  // (workload, model, versions) -> subject key -> Subject
  using GroupKey = std::tuple<std::string, std::string, std::string>;
  std::map<GroupKey, std::map<std::string, Subject>> groups;
  ForEachRecord(
      data, {v1::Record::kMeasurement, {}, kMetric}, [&](const v1::ExportedRecord& er) {
        if (!er.record().has_measurement()) return;
        const v1::Measurement& m = er.record().measurement();
        if (m.metric() != kMetric) return;
        std::string digest = LabelValue(m, "digest");
        if (digest.empty()) return;
        std::string node = RecordNode(er);  // the sender (record_speaker.h)
        std::string gpu = LabelValue(m, "gpu");
        GroupKey key{LabelValue(m, "workload"), LabelValue(m, "model"),
                     LabelValue(m, "versions")};
        Subject& s = groups[key][node + "\x1f" + gpu];
        s.node = node;
        s.gpu = gpu;
        if (s.uuid.empty()) s.uuid = LabelValue(m, "uuid");
        if (s.digests.empty()) s.value = m.value();
        s.digests[digest]++;
      });

  // workload -> model -> representative value (of the group's majority digest)
  std::map<std::string, std::map<std::string, double>> model_values;

  for (const auto& [key, subjects] : groups) {
    const auto& [workload, model, versions] = key;
    std::map<std::string, std::vector<const Subject*>> by_digest;
    for (const auto& [_, s] : subjects) by_digest[s.Digest()].push_back(&s);
    auto majority = std::max_element(
        by_digest.begin(), by_digest.end(),
        [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    model_values[workload][model] = majority->second.front()->value;
    std::string where = absl::StrCat(workload, " on ", model.empty() ? "unknown model" : model);
    int n = static_cast<int>(subjects.size());

    if (by_digest.size() == 1) {
      v1::RuleResult r = Result("consistency.agree", "pass", "", workload,
                                absl::StrCat(n, " subject(s) agree bit for bit on ", where));
      r.add_evidence(absl::StrCat("digest ", majority->first, "; versions: ", versions));
      r.set_value(n);
      r.set_unit("subjects");
      out->push_back(std::move(r));
      continue;
    }
    int agree = static_cast<int>(majority->second.size());
    bool strict_majority = 2 * agree > n;
    if (strict_majority && agree >= kMinPeers) {
      for (const auto& [digest, members] : by_digest) {
        if (digest == majority->first) continue;
        for (const Subject* s : members) {
          v1::RuleResult r = Result(
              "consistency.sdc_suspect", "critical", s->node, s->SubjectId(),
              absl::StrCat("silent data corruption suspect: ", s->Name(), " disagrees with ",
                           agree, " peers on ", where));
          r.add_evidence(absl::StrCat("its digest: ", digest));
          r.add_evidence(absl::StrCat("majority digest (", agree, " of ", n, "): ",
                                      majority->first));
          r.add_evidence(absl::StrCat("versions: ", versions));
          r.set_action(
              "drain and inspect hardware: rerun consistency and burn-in on this "
              "device; replace it if the disagreement repeats");
          out->push_back(std::move(r));
        }
      }
      continue;
    }
    v1::RuleResult r = Result(
        "consistency.disagreement", "warn", "", workload,
        absl::StrCat("disagreement, no culprit: ", n, " subjects on ", where, " give ",
                     by_digest.size(), " different digests and no digest has a majority of at "
                     "least ", kMinPeers, " peers"));
    for (const auto& [digest, members] : by_digest) {
      std::vector<std::string> names;
      for (const Subject* s : members) names.push_back(s->Name());
      r.add_evidence(absl::StrCat(digest, ": ", absl::StrJoin(names, ", ")));
    }
    r.set_action("rerun consistency on more devices of this model to find which one is wrong");
    out->push_back(std::move(r));
  }

  // Across models: divergence, reported as a relative error, never a fault.
  for (const auto& [workload, models] : model_values) {
    if (models.size() < 2) continue;
    double worst = 0;
    std::string pair;
    for (auto a = models.begin(); a != models.end(); ++a) {
      for (auto b = std::next(a); b != models.end(); ++b) {
        double scale = std::max({std::fabs(a->second), std::fabs(b->second), 1e-300});
        double rel = std::fabs(a->second - b->second) / scale;
        if (rel >= worst) {
          worst = rel;
          pair = absl::StrCat(a->first, " vs ", b->first);
        }
      }
    }
    v1::RuleResult r = Result(
        "consistency.model_divergence", "pass", "", workload,
        absl::StrFormat("divergence across models on %s: largest relative error %.3g (%s); "
                        "different silicon may round differently, this is not a fault",
                        workload, worst, pair));
    r.set_value(worst);
    r.set_unit("relative error");
    for (const auto& [model, value] : models) {
      r.add_evidence(absl::StrFormat("%s: %.17g", model, value));
    }
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
