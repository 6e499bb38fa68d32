// Health change judge: the counters the health suite reads (ECC, row
// remapping, PCIe replays, NVLink errors, InfiniBand error counters, Xid
// events) compared between the first and the last health task on each node,
// so errors that appeared while the evaluation loaded the node are named as
// such (a passive check alone sees only counts since the driver loaded or
// the node booted). benchmarks/plans/full.yaml runs `health` first and
// `health-after` last for this. Rules in RULES.md ("Health change").
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"

namespace cmax::reports {
namespace {

constexpr char kSuite[] = "health";
constexpr char kRule[] = "health.change";

// What a counter's growth during the run means. `outcome` for any increase.
struct CounterRule {
  const char* metric;
  const char* outcome;
  const char* meaning;
  const char* action;
};

constexpr CounterRule kCounters[] = {
    {"gpu_ecc_volatile_dbe", "fail", "new uncorrectable (double-bit) ECC errors",
     "drain the node; reset the GPU, check row remapping, replace the GPU if errors recur"},
    {"gpu_ecc_aggregate_dbe", "fail", "new uncorrectable ECC errors (lifetime count)",
     "drain the node; reset the GPU, check row remapping, replace the GPU if errors recur"},
    {"gpu_remapped_rows_uncorrectable", "fail", "rows remapped for uncorrectable errors",
     "reset the GPU when idle so the remap takes effect; replace it if remaps keep coming"},
    {"gpu_retired_pages_dbe", "fail", "pages retired for double-bit errors",
     "reset the GPU; replace it when retired pages approach the limit"},
    {"gpu_ecc_volatile_sbe", "warn", "new corrected (single-bit) ECC errors",
     "watch the count; a growing count predicts uncorrectable errors"},
    {"gpu_remapped_rows_correctable", "warn", "rows remapped for corrected errors",
     "watch the count; reset the GPU when idle so pending remaps take effect"},
    {"gpu_retired_pages_sbe", "warn", "pages retired for repeated single-bit errors",
     "watch the count"},
    {"gpu_pcie_replay_count", "warn", "PCIe replays (link-level retransmissions)",
     "reseat the GPU or riser; check the slot if replays keep growing under load"},
    {"nvlink_replay_errors", "warn", "NVLink replays", "reset the GPU; have the provider "
     "inspect the NVLink/NVSwitch if errors keep growing"},
    {"nvlink_recovery_errors", "warn", "NVLink recoveries", "reset the GPU; have the provider "
     "inspect the NVLink/NVSwitch if errors keep growing"},
    {"nvlink_crc_flit_errors", "warn", "NVLink CRC flit errors", "reset the GPU; have the "
     "provider inspect the NVLink/NVSwitch if errors keep growing"},
    {"nvlink_crc_data_errors", "warn", "NVLink CRC data errors", "reset the GPU; have the "
     "provider inspect the NVLink/NVSwitch if errors keep growing"},
    {"nvlink_effective_errors", "warn", "NVLink5 errors left after FEC", "reset the GPU; have "
     "the provider inspect the NVLink/NVSwitch if errors keep growing"},
    {"ib_counter", "warn", "InfiniBand/RoCE port errors",
     "check the cable, transceiver and switch port; reseat or replace the cable"},
    {"xid_events_total", "warn", "new NVIDIA Xid events in the kernel log",
     "read the health findings of the last health task for the codes and their actions"},
    {"sxid_events_total", "warn", "new NVSwitch SXid events in the kernel log",
     "read the health findings of the last health task for the codes and their actions"},
};

const CounterRule* RuleFor(const std::string& metric) {
  for (const auto& c : kCounters) {
    if (metric == c.metric) return &c;
  }
  return nullptr;
}

struct Reading {
  double value = 0;
  std::map<std::string, std::string> labels;
};

// One health task's counters on one node: "metric|k=v,k=v" -> reading.
struct Snapshot {
  std::string task_id;
  std::string name;
  int64_t started_ns = 0;
  int suite_index = -1;
  bool simulated = false;
  std::map<std::string, Reading> counters;
};

std::string Identity(const std::string& metric, const std::map<std::string, std::string>& l) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : l) {
    if (k == "driver") continue;  // a driver update is not another counter
    parts.push_back(absl::StrCat(k, "=", v));
  }
  return absl::StrCat(metric, "|", absl::StrJoin(parts, ","));
}

// "node-1 GPU 3 (GPU-...)", "node-1 mlx5_0 port 1 symbol_error", "node-1".
std::string Subject(const std::string& node, const std::map<std::string, std::string>& l) {
  auto get = [&](const char* k) {
    auto it = l.find(k);
    return it == l.end() ? std::string() : it->second;
  };
  if (!get("gpu").empty()) {
    std::string uuid = get("uuid");
    return absl::StrCat(node, " GPU ", get("gpu"),
                        uuid.empty() ? "" : absl::StrCat(" (", uuid, ")"));
  }
  if (!get("device").empty()) {
    return absl::StrCat(node, " ", get("device"), " port ", get("port"), " ", get("counter"));
  }
  return node;
}

// Completed health tasks per node, in the order they started.
std::map<std::string, std::vector<Snapshot>> CollectSnapshots(const RunData& data) {
  std::map<std::string, const v1::TaskInfo*> tasks;
  for (const auto& t : data.tasks) {
    if (t.suite() == kSuite && t.state() == v1::TASK_COMPLETED) tasks[t.task_id()] = &t;
  }
  std::map<std::pair<std::string, std::string>, Snapshot> by_node_task;
  // Only the counters' metrics are looked at below: the rest is not parsed.
  RecordFilter filter{v1::Record::kMeasurement};
  filter.metric_in = [](const std::string& metric) { return RuleFor(metric) != nullptr; };
  ForEachRecord(data, filter, [&](const v1::ExportedRecord& rec) {
    if (!rec.record().has_measurement()) return;
    auto task = tasks.find(rec.task_id());
    if (task == tasks.end()) return;  // unfinished tasks: the tasks judge says why
    const v1::Measurement& m = rec.record().measurement();
    if (RuleFor(m.metric()) == nullptr) return;
    const std::string node = RecordNode(rec);
    Snapshot& s = by_node_task[{node, rec.task_id()}];
    s.task_id = rec.task_id();
    s.name = task->second->name().empty() ? kSuite : task->second->name();
    s.started_ns = task->second->started_unix_ns();
    s.suite_index = task->second->suite_index();
    s.simulated = s.simulated || m.simulated();
    Reading r{m.value(), {m.labels().begin(), m.labels().end()}};
    s.counters[Identity(m.metric(), r.labels)] = std::move(r);
  });
  std::map<std::string, std::vector<Snapshot>> out;
  for (auto& [key, s] : by_node_task) out[key.first].push_back(std::move(s));
  for (auto& [node, list] : out) {
    std::sort(list.begin(), list.end(), [](const Snapshot& a, const Snapshot& b) {
      return a.started_ns != b.started_ns ? a.started_ns < b.started_ns
                                          : a.suite_index < b.suite_index;
    });
  }
  return out;
}

v1::RuleResult Result(const std::string& node, const std::string& subject,
                      const std::string& outcome) {
  return MakeRule(kRule, JudgeCategory("health"), outcome, node, subject);
}

std::string Between(const Snapshot& a, const Snapshot& b) {
  std::string apart;
  if (b.started_ns > a.started_ns) {
    apart = absl::StrCat(", ", FormatNumber((b.started_ns - a.started_ns) / 1e9), " s apart");
  }
  return absl::StrCat("between ", a.name, " (task ", a.task_id, ") and ", b.name, " (task ",
                      b.task_id, ")", apart);
}

void CompareNode(const std::string& node, const Snapshot& first, const Snapshot& last,
                 std::vector<v1::RuleResult>* out) {
  const bool simulated = first.simulated || last.simulated;
  const std::string between = Between(first, last);
  int compared = 0, grew = 0;
  for (const auto& [id, after] : last.counters) {
    auto it = first.counters.find(id);
    if (it == first.counters.end()) continue;
    const Reading& before = it->second;
    const std::string metric = id.substr(0, id.find('|'));
    const CounterRule* rule = RuleFor(metric);
    ++compared;
    // A counter at its legacy width's maximum before the run cannot show
    // growth: say so rather than "no change".
    if (auto w = before.labels.find("width_bits"); w != before.labels.end()) {
      int bits = std::atoi(w->second.c_str());
      const bool saturated =
          bits > 0 && bits < 64 && before.value >= static_cast<double>((uint64_t{1} << bits) - 1);
      if (saturated) {
        v1::RuleResult r = Result(node, Subject(node, before.labels), "not_measured");
        r.set_message(absl::StrCat(Subject(node, before.labels), ": saturated at ",
                                   FormatNumber(before.value), " (", bits,
                                   "-bit counter) before the run: its change is unknown"));
        r.add_evidence(between);
        r.set_action("clear the port counters (perfquery -x -R) before the next evaluation");
        out->push_back(std::move(r));
        continue;
      }
    }
    if (after.value == before.value) continue;
    ++grew;
    const bool reset = after.value < before.value;
    v1::RuleResult r = Result(node, Subject(node, after.labels), reset ? "warn" : rule->outcome);
    std::string what = rule->meaning;
    if (auto c = after.labels.find("counter"); c != after.labels.end()) {
      absl::StrAppend(&what, " (", c->second, ")");
    }
    if (reset) {
      r.set_message(absl::StrCat(Subject(node, after.labels), ": ", metric, " went down from ",
                                 FormatNumber(before.value), " to ", FormatNumber(after.value),
                                 " during the run: the driver was reloaded, the GPU reset or "
                                 "the node rebooted (errors in between are unknown)"));
      r.set_action("find out what reset the node or GPU during the evaluation (kernel log)");
    } else {
      r.set_message(absl::StrCat(Subject(node, after.labels), ": ",
                                 FormatNumber(after.value - before.value), " ", what,
                                 " during the run (", FormatNumber(before.value), " -> ",
                                 FormatNumber(after.value), ")"));
      r.set_action(rule->action);
    }
    r.add_evidence(between);
    r.add_evidence(absl::StrCat(metric, " before ", FormatNumber(before.value), ", after ",
                                FormatNumber(after.value)));
    r.set_value(after.value - before.value);
    r.set_expected(0);
    r.set_unit("count");
    if (simulated) {
      r.set_outcome("not_measured");
      r.set_message(absl::StrCat(kSimulatedBanner, ": ", r.message()));
    }
    out->push_back(std::move(r));
  }
  if (grew > 0) return;  // the results above carry the outcome
  v1::RuleResult r = Result(node, "node", "pass");
  if (compared == 0) {
    r.set_outcome("not_measured");
    r.set_message(absl::StrCat(node, ": the health tasks share no counter to compare (no GPU, "
                               "NVLink, InfiniBand or kernel-log reading in both)"));
  } else {
    r.set_message(absl::StrCat(node, ": none of ", compared,
                               " health counters changed during the run"));
    if (simulated) {
      r.set_outcome("not_measured");
      r.set_message(absl::StrCat(kSimulatedBanner, ": ", r.message()));
    }
  }
  r.add_evidence(between);
  r.set_value(compared);
  r.set_unit("counters");
  out->push_back(std::move(r));
}

}  // namespace

void HealthChangeJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  int health_entries = 0;
  for (const auto& s : data.plan.suites()) health_entries += s.suite() == kSuite;
  const auto snapshots = CollectSnapshots(data);
  if (health_entries == 0 && snapshots.empty()) return;  // no health in this run: nothing to say
  if (health_entries < 2) {
    v1::RuleResult r = Result("", "fleet", "not_measured");
    r.set_message("health ran once: the change of ECC, PCIe, NVLink, InfiniBand and Xid counters "
                  "across the run needs a second health entry at the end of the plan");
    r.set_action("add `- {suite: health, name: health-after}` as the plan's last entry "
                 "(benchmarks/plans/full.yaml does)");
    out->push_back(std::move(r));
    return;
  }
  for (const auto& node : data.nodes) {
    auto it = snapshots.find(node);
    if (it == snapshots.end() || it->second.size() < 2) {
      v1::RuleResult r = Result(node, "node", "not_measured");
      r.set_message(absl::StrCat(node, ": ", it == snapshots.end() ? 0 : it->second.size(),
                                 " completed health task(s) with counters: the change across "
                                 "the run is not measured"));
      out->push_back(std::move(r));
      continue;
    }
    CompareNode(node, it->second.front(), it->second.back(), out);
  }
}

}  // namespace cmax::reports
