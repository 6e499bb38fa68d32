// The suites' declarations: what each suite is (name, category, help,
// scopes, parameters, backends and their binaries, metrics) and the lookups
// over them. Each suite declares itself once, in its own folder
// (benchmarks/<suite>/<suite>_declaration.cc: cmax::suites::<suite>::
// Declaration()), and benchmarks/CMakeLists.txt registers it with one line.
//
// The cut against common/suite_catalog.h: this header is what a reader of
// the declarations needs -- the scorecard (reports/: categories, graded
// suites, declared metrics and their charts), the suite tables and --help of
// the suite binaries, the agent's inventory run -- and nothing that checks a
// value. Checking values and turning a plan's params into flags (type,
// range and choice checks, rules across parameters, the environment and
// mpirun allow-lists, ParseBytes) is plan validation, in
// common/suite_catalog.h, which includes this one. reports/ includes only
// this header.
#ifndef CMAX_COMMON_SUITE_DECLARATION_H_
#define CMAX_COMMON_SUITE_DECLARATION_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmax/v1/plan.pb.h"
#include "cmax/v1/record.pb.h"

namespace cmax {

enum class ParamType {
  kInt,       // decimal integer within [min, max]
  kNumber,    // decimal number within [min, max]
  kBytes,     // 4096, 64K, 1M, 2G, 1T (binary multiples)
  kEnum,      // one of `choices`
  kEnumList,  // comma-separated subset of `choices`
  kIntList,   // comma-separated integers, or "all"
  kPath,      // absolute path without "..", shell metacharacters or spaces
  kToken,     // [A-Za-z0-9_.:,+-]{1,128}
  kFlag,      // "true" or "false": passed as --name when true
};

struct ParamSpec {
  std::string name;  // plan key and flag (--name)
  ParamType type;
  std::string help;
  std::vector<std::string> choices;
  double min = 0;
  double max = 0;  // 0 and 0: unbounded
  // The backends (SuiteInfo::backends) whose binary takes this parameter;
  // empty: every backend. A plan that gives it to another backend is refused.
  std::vector<std::string> backends = {};
  // Per backend, the subset of `choices` its binary runs (burnin: dtype
  // fp64 on cpu only); a backend not listed runs every choice.
  std::map<std::string, std::vector<std::string>> choices_by_backend = {};
  // For kPath: what the suite does with the path, which the agent checks
  // against its own lists before it spawns the suite (agent/plan_paths.cc).
  // A kPath parameter without a use is refused there.
  enum class PathUse { kNone, kReadsFile, kStorageDir };
  PathUse path_use = PathUse::kNone;
};

// One way to run a suite: the value of its --backend parameter and the
// binary that serves it, with that binary's one-line summary for its suite
// table (empty: the suite's `help`) and its --help text.
struct BackendSpec {
  std::string name;
  std::string binary;  // "cmax-bench" or "cmax-bench-cuda"
  std::string summary = "";
  std::string details = "";  // that binary's --help text (empty: the suite's)
};

enum class MetricBetter { kHigher, kLower, kNeither };

// How the HTML scorecard draws a metric. reports/charts.cc draws what the
// suites declare here and knows no suite by name: the suite's declaration
// says the kind, how a measurement's chart is named, and the reference line.
enum class ChartKind {
  kNone,
  kPerSubject,  // a bar per GPU ("node gpu:N": records with a gpu label), else per node
  kBySize,      // a line per run against a size label, on a log axis
  kMatrix,      // source (label src, else the node) by destination (label dst)
  kOverTime,    // Samples over time, a line per GPU (label gpu) or sensor (label sensor)
};

enum class ChartReference {
  kNone,
  kDatasheetPeak,  // the GPU model's dense peak (gpu_specs.h) at ChartNames::peak_dtype
  kPlanFloor,      // the first of ChartNames::floor_keys the plan's expect.metrics sets
};

// The chart one measurement goes to, as its suite names it.
struct ChartNames {
  std::string id;         // stable, and one chart per id: "gemm:bf16 8192x8192x8192"
  std::string title;      // "GEMM bf16 8192x8192x8192 per GPU"
  std::string line = "";  // kBySize: the run's line
  std::string peak_dtype = "";               // kDatasheetPeak
  std::vector<std::string> floor_keys = {};  // kPlanFloor, most specific first
};

// Names `m`'s chart; false: `m` is not drawn (a total, a soak, a pair the
// chart does not show). `node`: the record's node; `entry`: the plan entry
// it came from.
using ChartNamer = bool (*)(const v1::Measurement& m, const std::string& node,
                            const std::string& entry, ChartNames* out);

// The label's value ("" when `m` has none): for ChartNamers. Inline: the
// declarations (cmax_suite_registry) link before cmax_common.
inline std::string ChartLabel(const v1::Measurement& m, const std::string& key) {
  auto it = m.labels().find(key);
  return it == m.labels().end() ? "" : it->second;
}

struct ChartSpec {
  ChartKind kind = ChartKind::kNone;
  // kPerSubject, kBySize, kMatrix: names each measurement's chart, reading
  // only the labels in `labels` (the rest are not parsed for charts).
  ChartNamer names = nullptr;
  std::vector<std::string> labels = {};
  // kOverTime: the chart's title (one chart per suite and metric).
  std::string title = "";
  // What the card lists as not measured when the run drew none of the
  // charts of this family ("GEMM TFLOP/s per GPU"), and what it lacked
  // (empty: the metric's name).
  std::string family = "";
  std::string family_needs = "";
  ChartReference reference = ChartReference::kNone;
  bool total_note = false;   // kPerSubject: "aggregate <sum> over N nodes" in the note
  std::string x_key = "";    // kBySize: the label on the x axis
  std::string x_label = "";  // kBySize: its words ("message size (bytes)")
  // kMatrix: the suite's metric that is 0 for an unreachable pair, and the
  // title of the per-node chart that replaces a matrix of too many nodes.
  std::string reachable_metric = "";
  std::string many_title = "";
};

// A metric a suite writes (Measurement.metric). With `fleet_group_keys`
// set (fleet = true), the fleet judge compares each node's value against the
// fleet's, among values whose labels `fleet_group_keys` agree (for "job"
// and "gpu" only the kind matters: "all" or one of them).
struct MetricSpec {
  std::string name;
  std::string unit;
  MetricBetter better = MetricBetter::kHigher;
  bool fleet = false;
  std::vector<std::string> fleet_group_keys = {};
  // How far from the fleet's median a value must also be, as a fraction of
  // it, to be named an outlier (beyond the Tukey fences): the figure's own
  // run-to-run noise. A tight fleet has a tiny IQR, so the fences alone
  // would name noise; a value must be both statistically and practically
  // off. 3% suits GPU compute and memory figures; storage bandwidth
  // declares its own.
  double fleet_min_margin = 0.03;
  // Compare only the totals (label "job" or "gpu" = "all"), not the figures
  // of each job or GPU. For a figure that is not a piece of hardware: fio's
  // jobs on one node share its disk and client, one of them getting less than
  // its siblings is the scheduler's doing, while the node's total is what the
  // node delivers.
  bool fleet_totals_only = false;
  std::string help = "";
  // A per-step Sample (labels step and rank) that the replicas of a task
  // must agree on: a training loss. The scorecard keeps each task's agreed
  // curve (Scorecard.loss_curves, reports/loss_curve.h), for a baseline to
  // hold later runs to; its records carry labels model, device, dtype and
  // torch_version (cpu_model on CPUs), which fix the curve.
  bool loss_curve = false;
  // How the HTML scorecard draws it (kNone: not drawn).
  ChartSpec chart = {};
};

struct SuiteInfo {
  std::string name;
  // The binary of a suite without backends; empty for a suite with
  // `backends`, whose binaries are theirs (SuiteBinary, SuiteBinaries).
  std::string binary = "";
  std::string category;    // the scorecard category it mainly feeds (lower case)
  // The category its judge's rules grade when that is not `category`
  // (reports::JudgeCategory): hostcheck's fleet-wide inventory uniformity
  // and audit's version drift grade Lifecycle. Empty: `category`.
  std::string judge_category = "";
  std::string help;        // one line: catalog, docs/plans.md, the binaries' suite tables
  std::string details = "";  // the rest of `<binary> <suite> --help`
  std::vector<v1::Scope> scopes;  // allowed scopes; the first is the default
  // The ranks a group task (gang, barrier) of this suite needs to measure
  // anything: connectivity measures between ranks, so a gang of one rank (one
  // node, one rank a node) has nothing to measure. A group with fewer ends its
  // entry "not measured: needs 2 nodes, the run has 1" (coordinator/
  // scheduler.h). In ranks, not nodes: two ranks on one node do measure.
  int min_ranks = 1;
  int default_timeout_s = 600;
  bool exclusive = true;   // takes the node (GPU- or storage-heavy)
  bool takes_root = false; // accepts --root (fixture trees)
  std::vector<ParamSpec> params;
  // Suites whose backends live in different binaries (gemm: cuda in
  // cmax-bench-cuda, cpu in cmax-bench), the first being the default when a
  // plan names none. Empty for most suites. Use SuiteBinary() rather than
  // `binary` directly.
  std::vector<BackendSpec> backends = {};
  std::vector<MetricSpec> metrics = {};
  // False for a suite that measures nothing about the node (selftest): its
  // records and entries are never graded or counted as coverage.
  bool graded = true;
  // True for the suite the agent runs with --inventory for its Hello
  // (hostcheck; agent/host_info.cc).
  bool inventory = false;
  // Rules across parameters that their types, `backends` and
  // `choices_by_backend` cannot say. Called by BuildSuiteArgs,
  // ValidateSuiteArgs and SuiteFlags with the valid params (name -> value; a
  // flag given as "true"). OK or INVALID_ARGUMENT with the reason. Null for
  // most suites.
  std::function<absl::Status(const std::map<std::string, std::string>& params)> check = nullptr;
};

// The declarations in registration order (generated by
// benchmarks/CMakeLists.txt from its suite list; SuiteCatalog() adds the
// mpirun options to every suite that can run as a gang).
std::vector<SuiteInfo> RegisteredSuites();

// Every suite, in catalog order.
const std::vector<SuiteInfo>& SuiteCatalog();
// nullptr when unknown.
const SuiteInfo* FindSuite(const std::string& name);

// The binary that runs `suite` with these (validated) args: the backend's
// for a "--backend=<value>" arg, else the default backend's, else
// `suite.binary` (a suite without backends). E.g. gemm with "--backend=cpu"
// -> "cmax-bench", gemm without --backend or with "--backend=cuda" ->
// "cmax-bench-cuda".
std::string SuiteBinary(const SuiteInfo& suite, const std::vector<std::string>& args);
// Every binary that serves `suite`, in backend order.
std::vector<std::string> SuiteBinaries(const SuiteInfo& suite);
// The backends `binary` serves for `suite` (empty for a suite without backends).
std::vector<std::string> BackendsServedBy(const SuiteInfo& suite, const std::string& binary);
// The one-line summary `binary` lists for `suite`.
std::string SuiteSummary(const SuiteInfo& suite, const std::string& binary);
// The suite the agent runs for its inventory (SuiteInfo::inventory), or nullptr.
const SuiteInfo* InventorySuite();
// Whether records of `suite` are graded (SuiteInfo::graded; unknown: true).
bool SuiteIsGraded(const std::string& suite);
// The declared metric, or nullptr.
const MetricSpec* FindSuiteMetric(const SuiteInfo& suite, const std::string& metric);

// The parameters `binary` takes for `suite` on its command line, in
// declaration order: the ones of the backends it serves (every one for a
// suite without backends), never the mpirun options (the agent's, see
// below). SuiteFlags binds these; the declarations test checks --help
// against them.
std::vector<const ParamSpec*> ParamsTakenBy(const SuiteInfo& suite, const std::string& binary);

// "node", "gang", "barrier", "pairs" ("unspecified" for anything else).
std::string ScopeName(v1::Scope scope);

// mpirun options a plan may set (launcher: mpirun), as plan params on every
// suite that allows scope gang; the coordinator passes them to the agent as
// suite args ("--mpirun-bind-to=core"), and the agent turns them into mpirun
// arguments instead of passing them to the suite:
//   mpirun-bind-to    --bind-to none|core|socket|numa
//   mpirun-map-by     --map-by ppr:N:OBJECT | OBJECT, then :PE=N :SPAN
//                     :OVERSUBSCRIBE :NOOVERSUBSCRIBE :NOLOCAL :DISPLAY
//   mpirun-if-include --mca btl_tcp_if_include X --mca oob_tcp_if_include X
//                     (X: interface names or IPv4 CIDRs, comma-separated)
// Nothing else reaches mpirun's command line from a plan: no option that
// loads a library, chooses a program or sets an arbitrary MCA parameter.
// Their values are checked and turned into mpirun arguments by
// ValidateMpirunOption and MpirunOptionArgs (common/suite_catalog.h).
inline constexpr char kMpirunBindTo[] = "mpirun-bind-to";
inline constexpr char kMpirunMapBy[] = "mpirun-map-by";
inline constexpr char kMpirunIfInclude[] = "mpirun-if-include";

// Whether a declared parameter is one of these ("mpirun-..."): the agent's,
// never on a suite's command line.
bool IsMpirunOption(const std::string& param_name);

}  // namespace cmax

#endif  // CMAX_COMMON_SUITE_DECLARATION_H_
