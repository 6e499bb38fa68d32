// Hand-built run data for the scorecard tests.
#ifndef CMAX_TESTS_REPORTS_SCORECARD_TEST_UTIL_H_
#define CMAX_TESTS_REPORTS_SCORECARD_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "reports/run_data.h"

namespace cmax::reports::testing {

inline v1::ExportedRecord Meas(const std::string& node, const std::string& suite,
                               const std::string& metric, double value, const std::string& unit,
                               const std::map<std::string, std::string>& labels = {}) {
  v1::ExportedRecord rec;
  rec.set_node(node);
  rec.set_suite(suite);
  rec.set_task_id(suite + "@" + node);
  rec.set_attempt(1);
  v1::Measurement* m = rec.mutable_record()->mutable_measurement();
  m->set_suite(suite);
  m->set_metric(metric);
  m->set_value(value);
  m->set_unit(unit);
  for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  return rec;
}

inline v1::ExportedRecord Find(const std::string& node, const std::string& suite,
                               const std::string& check_id, v1::Severity severity,
                               const std::string& category, const std::string& subject,
                               const std::string& title, const std::string& detail = "") {
  v1::ExportedRecord rec;
  rec.set_node(node);
  rec.set_suite(suite);
  rec.set_task_id(suite + "@" + node);
  rec.set_attempt(1);
  v1::Finding* f = rec.mutable_record()->mutable_finding();
  f->set_suite(suite);
  f->set_check_id(check_id);
  f->set_severity(severity);
  f->set_category(category);
  f->set_subject(subject);
  f->set_title(title);
  f->set_detail(detail);
  return rec;
}

inline v1::TaskInfo Task(const std::string& node, const std::string& suite, v1::TaskState state,
                         int exit_code = 0, const std::string& message = "",
                         const std::string& stderr_tail = "") {
  v1::TaskInfo t;
  t.set_task_id(suite + "@" + node);  // the id Meas and Find give its records
  t.set_run_id("run-1");
  t.set_suite(suite);
  t.set_name(suite);
  t.set_node(node);
  t.set_state(state);
  t.set_attempt(1);
  t.set_exit_code(exit_code);
  t.set_message(message);
  t.set_stderr_tail(stderr_tail);
  return t;
}

// Three nodes ran hostcheck and reported plausible inventory figures; every
// task completed.
inline RunData CleanHostcheckRun() {
  RunData d;
  d.run.set_run_id("run-1");
  d.run.set_plan_name("quick");
  d.run.set_state("completed");
  d.run.set_created_unix_ns(1764451065123000000);   // 2025-11-29T21:17:45.123Z
  d.run.set_finished_unix_ns(1764451125000000000);  // one minute later
  d.plan.set_name("quick");
  d.plan.add_suites()->set_suite("hostcheck");  // entry 0, the tasks' suite_index
  d.nodes = {"node-1", "node-2", "node-3"};
  for (const auto& n : d.nodes) {
    d.records.push_back(Meas(n, "hostcheck", "gpu_count", 8, "count"));
    d.records.push_back(Meas(n, "hostcheck", "cpu_cores", 112, "count"));
    d.records.push_back(Meas(n, "hostcheck", "memory_total_gib", 2015.6, "GiB"));
    d.records.push_back(Find(n, "hostcheck", "hostcheck.swap", v1::SEVERITY_INFO, "reliability",
                             "node", "swap is disabled"));
    d.tasks.push_back(Task(n, "hostcheck", v1::TASK_COMPLETED));
  }
  return d;
}

// Adds to every selected node of `d` one result with an outcome in each rated
// category other than Reliability (hostcheck's): a tier can then be given
// (a tier needs Compute, Networking, Storage, Reliability, Security,
// Orchestration and Monitoring evaluated on at least 90% of the selected
// nodes).
inline void EvaluateEveryCategory(RunData* d) {
  for (const auto& n : d->nodes) {
    d->records.push_back(Find(n, "gemm", "gemm.verified", v1::SEVERITY_INFO, "compute", "gpu:0",
                              "GEMM results verified"));
    d->records.push_back(Find(n, "connectivity", "connectivity.peers", v1::SEVERITY_INFO,
                              "networking", "node", "every peer reachable"));
    d->records.push_back(Find(n, "storage", "storage.verify", v1::SEVERITY_INFO, "storage",
                              "path:/data", "written data read back intact"));
    d->records.push_back(Find(n, "audit", "audit.runc", v1::SEVERITY_INFO, "security", "node",
                              "runc 1.1.14 is not affected"));
    d->records.push_back(Find(n, "orchestration", "orchestration.slurm.constrain_devices",
                              v1::SEVERITY_INFO, "orchestration", "node",
                              "ConstrainDevices=yes: a job sees only the GPUs it was given"));
    d->records.push_back(Find(n, "monitoring", "monitoring.signals.dcgm", v1::SEVERITY_INFO,
                              "monitoring", "node",
                              "dcgm exporter exports all 8 health signals checked"));
  }
}

inline const v1::CategoryGrade& Category(const v1::Scorecard& card, const std::string& name) {
  for (const auto& c : card.categories()) {
    if (c.name() == name) return c;
  }
  static const v1::CategoryGrade missing;
  return missing;
}

inline const v1::NodeVerdict& NodeOf(const v1::Scorecard& card, const std::string& name) {
  for (const auto& n : card.nodes()) {
    if (n.node() == name) return n;
  }
  static const v1::NodeVerdict missing;
  return missing;
}

inline bool AnyReasonContains(const v1::NodeVerdict& n, const std::string& text) {
  for (const auto& r : n.reasons()) {
    if (r.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace cmax::reports::testing

#endif  // CMAX_TESTS_REPORTS_SCORECARD_TEST_UTIL_H_
