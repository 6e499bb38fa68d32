// Small helpers shared by the judges and the scorecard builder: category
// names, which category a record feeds, how a measured subject is named, and
// how numbers are printed. Pure functions.
#ifndef CMAX_REPORTS_JUDGE_UTIL_H_
#define CMAX_REPORTS_JUDGE_UTIL_H_

#include <string>
#include <vector>

#include "cmax/v1/record.pb.h"
#include "cmax/v1/run.pb.h"
#include "cmax/v1/scorecard.pb.h"
#include "common/severity.h"
#include "common/task_state.h"
#include "reports/record_set.h"
#include "reports/run_data.h"

namespace cmax::reports {

// The eight scorecard categories, in the order the scorecard shows them:
// Compute, Networking, Storage, Reliability, Security, Lifecycle,
// Orchestration, Monitoring (ClusterMAX's, less Pricing, Partnerships and
// Availability, which no run can measure).
const std::vector<std::string>& CategoryNames();

// "reliability", "Reliability" or "RELIABILITY" -> "Reliability"; empty when
// the name is not one of the eight.
std::string CanonicalCategory(const std::string& name);

// The category a suite mainly feeds (suite catalog); Reliability when the
// suite is unknown or its category is not one of the eight.
// The scorecard category of a suite's judge's rules: its declaration's
// judge_category, else its category (SuiteCategory).
std::string JudgeCategory(const std::string& suite);
std::string SuiteCategory(const std::string& suite);

// The category a Measurement feeds: the fleet metric table's category when
// the metric is in it (metric_table.h), else its suite's category.
std::string MeasurementCategory(const v1::Measurement& m, const std::string& record_suite);

// The category a Finding feeds: its own category, Reliability when unknown.
std::string FindingCategory(const v1::Finding& f);

// A rule result with its identity filled in (RuleResult contract in run_data.h).
v1::RuleResult MakeRule(const std::string& rule_id, const std::string& category,
                        const std::string& outcome, const std::string& node,
                        const std::string& subject, const std::string& message = "");

// How a plan entry (or its task) is named for people: its suite, or
// "burnin-fleet (burnin)" when the entry has a name of its own.
std::string EntryLabel(const std::string& name, const std::string& suite);

// Task outcomes as the judges read them (RULES.md, rule 2):
// could not run (TASK_FAILED with exit code 2) and broke (lost, hung or
// crashed): cmax::TaskCouldNotRun and cmax::TaskBroke (common/task_state.h,
// included above), as cmaxctl and the coordinator count them;
// not started: could not run, decided by the coordinator before any attempt
// (attempt 0): its plan entry needs more nodes than the run has, and its
// message says so ("not measured: needs 2 nodes, the run has 1");
bool TaskNotStarted(const v1::TaskInfo& t);
// A rule result in one line, for what is read at a glance (a category's
// summary, a node's verdict, an incident, the fleet page): its title (a
// finding's title without the detail), else its message; the first line,
// at most kHeadlineChars, cut at a word with "…". The message in full stays
// in the rules and the findings table.
inline constexpr size_t kHeadlineChars = 140;
std::string Headline(const v1::RuleResult& r);
std::string OneLine(const std::string& text, size_t max_chars = kHeadlineChars);

// A scorecard task's state as every view says it: "could not run" for a
// failed task with exit code 2 (it measured nothing and failed nothing),
// else its state's name.
std::string TaskStateShown(const v1::TaskSummary& t);
// a failure of `t` is `node`'s: the nodes in blamed_nodes, every node of the
// task when the coordinator blamed none;
bool TaskBlames(const v1::TaskInfo& t, const std::string& node);
// stopped on `node`: a group task that broke or could not run because of
// another node's rank, not this one's.
bool TaskStoppedOn(const v1::TaskInfo& t, const std::string& node);

// The plan entry a task runs (TaskInfo.suite_index), nullptr when unknown.
const v1::SuiteSpec* PlanEntryOf(const RunData& data, const v1::TaskInfo& task);

// True for a URL the renderings may make a link of: http:// or https://
// with a host, and no whitespace, control character, quote, backslash,
// backtick or angle bracket (a finding's links come from agents and from
// advisory tables; anything else is shown as text, never linked).
bool IsSafeWebLink(const std::string& url);

// The value of label `key`, "" when absent.
std::string LabelValue(const google::protobuf::Map<std::string, std::string>& labels,
                       const std::string& key);
std::string LabelValue(const v1::Measurement& m, const std::string& key);

// The node a record is about: the node that sent it (ExportedRecord.node,
// the authenticated agent; record_speaker.h), else, for a record that has no
// sender (a hand-made file, never a stored record), its "node" label.
std::string RecordNode(const v1::ExportedRecord& rec);

// "node-2 gpu:5 (GPU-1234)" from the node and the gpu / uuid / peer labels
// that are present; just the node when none is.
std::string DescribeSubject(const std::string& node, const v1::Measurement& m);

// "a,b , c" -> {"a", "b", "c"}; empty pieces dropped.
std::vector<std::string> SplitNodes(const std::string& nodes);

// A number for people: "790", "671.5", "0.85", "1.2e-05".
std::string FormatNumber(double v);

// "790 TFLOP/s" (value and unit, unit omitted when empty).
std::string FormatValue(double v, const std::string& unit);

// A task state's name: cmax::TaskStateName (common/task_state.h, included
// above).

// A severity's name: cmax::SeverityName (common/severity.h, included above).

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_JUDGE_UTIL_H_
