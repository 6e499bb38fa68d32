#include "coordinator/ctl/analysis.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/args.h"
#include "common/status_macros.h"
#include "coordinator/ctl/progress.h"
#include "google/protobuf/util/json_util.h"
#include "reports/baseline.h"
#include "reports/compare.h"
#include "reports/rank.h"

namespace cmax::ctl {
namespace {

constexpr size_t kMaxScorecardBytes = 256 << 20;

int UsageError(const std::string& error, const std::string& help) {
  std::fprintf(stderr, "cmaxctl: %s\n\n%s", error.c_str(), help.c_str());
  return kExitUsage;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > kMaxScorecardBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than ", kMaxScorecardBytes,
                                                   " bytes"));
  }
  return ss.str();
}

absl::StatusOr<v1::Scorecard> LoadScorecard(const std::string& path) {
  CMAX_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseScorecardJson(text, path);
}

// The scorecard of `run_id` from the coordinator. `code` gets the exit code
// on failure.
absl::StatusOr<v1::Scorecard> FetchScorecard(Client& client, const std::string& run_id,
                                             int* code) {
  v1::GetReportRequest req;
  req.set_run_id(run_id);
  req.set_format("json");
  v1::GetReportResponse resp;
  auto ctx = client.Context(120);
  grpc::Status st = client.stub()->GetReport(ctx.get(), req, &resp);
  if (!st.ok()) {
    *code = ExitCodeFor(st);
    if (*code == kExitFailed) *code = kExitUsage;  // compare's documented "unreadable input"
    return absl::UnavailableError(
        absl::StrCat("run ", run_id, ": ", Describe(st, client.address())));
  }
  *code = kExitUsage;
  return ParseScorecardJson(resp.content(), absl::StrCat("run ", run_id));
}

int Write(const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") {
    const std::string shown = ForTerminal(content);  // agents' text: controls made visible
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    return kExitOk;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    std::fprintf(stderr, "cmaxctl: cannot write %s\n", path.c_str());
    return kExitFailed;
  }
  std::fprintf(stderr, "wrote %s (%zu bytes)\n", path.c_str(), content.size());
  return kExitOk;
}

std::string Basename(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") name.resize(name.size() - 5);
  return name;
}

}  // namespace

absl::StatusOr<v1::Scorecard> ParseScorecardJson(const std::string& text,
                                                 const std::string& source) {
  v1::Scorecard card;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto st = google::protobuf::util::JsonStringToMessage(text, &card, options); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a cmax scorecard (JSON): ", std::string(st.message())));
  }
  if (card.run_id().empty() && card.categories().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a cmax scorecard (no run_id and no categories)"));
  }
  return card;
}

int CmdCompare(const ClientOptions& options, const std::vector<std::string>& args) {
  std::string format = "text", out;
  bool files = false;
  double threshold = 5.0;
  ArgParser p(
      "cmaxctl compare RUN_A RUN_B | --files A.json B.json [--threshold PCT] "
      "[--format text|json|html] [-o FILE]",
      "What changed from run A (before) to run B (after), of what both runs measured, led by "
      "a summary: metrics per plan entry, node and GPU that moved beyond their noise (the "
      "threshold, the suite's declared noise, their spread in run A, or a floor per unit: 10% "
      "for times, 5% for rates), findings of warn or worse that appeared or cleared where both "
      "runs ran the check ('not measured in B' where B did not), node verdicts where both ran "
      "the same suites, and the tier (docs/scorecard.md). Exit 0 no regression, 1 regressions "
      "found (a metric worse beyond its noise in its known direction, a worse comparable node "
      "verdict, a new finding of warn or worse, a worse comparable tier), 2 usage or unreadable "
      "input, 3 coordinator unreachable, 6 credentials refused.");
  p.AddFlag("files", &files, "RUN_A and RUN_B are exported scorecard JSON files");
  p.AddDouble("threshold", &threshold,
              "least percent a metric must move to be listed (default 5); its noise may ask more");
  p.AddString("format", &format, "text, json or html (default text)");
  p.AddString("output", &out, "write to FILE instead of stdout", "o");
  if (auto s = p.Parse(args); !s.ok()) return UsageError(std::string(s.message()), p.Help());
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (p.positional().size() != 2) return UsageError("compare needs two runs (or files)", p.Help());
  if (format != "text" && format != "json" && format != "html") {
    return UsageError("--format must be text, json or html", p.Help());
  }
  if (!(threshold >= 0)) return UsageError("--threshold must be a percentage >= 0", p.Help());
  v1::Scorecard cards[2];
  std::unique_ptr<Client> client;
  for (int i = 0; i < 2; ++i) {
    const std::string& what = p.positional()[i];
    absl::StatusOr<v1::Scorecard> card;
    int code = kExitUsage;
    if (files) {
      card = LoadScorecard(what);
    } else {
      if (!client) {
        auto c = Client::Create(options);
        if (!c.ok()) {
          std::fprintf(stderr, "cmaxctl: %s\n", std::string(c.status().message()).c_str());
          return kExitUsage;
        }
        client = std::move(*c);
      }
      card = FetchScorecard(*client, what, &code);
    }
    if (!card.ok()) {
      std::fprintf(stderr, "cmaxctl: %s\n", std::string(card.status().message()).c_str());
      return code;
    }
    cards[i] = std::move(*card);
  }
  reports::CompareOptions co;
  co.threshold_pct = threshold;
  const reports::Comparison c = reports::CompareScorecards(cards[0], cards[1], co);
  const std::string text = format == "json"   ? reports::RenderCompareJson(c)
                           : format == "html" ? reports::RenderCompareHtml(c)
                                              : reports::RenderCompareText(c);
  if (int rc = Write(out, text); rc != kExitOk) return rc;
  return c.regressions() > 0 ? kExitFailed : kExitOk;
}

int CmdBaseline(const ClientOptions& options, const std::vector<std::string>& args) {
  std::string out;
  bool file = false;
  ArgParser p("cmaxctl baseline save RUN -o FILE | baseline save --file SCORECARD.json -o FILE",
              "Saves a run's per node, GPU and plan entry metric values (those whose better "
              "direction is known), the fleet medians and its training loss curves (workload "
              "suite), with run id, plan, cmax version and date, as a baseline file for a "
              "plan's 'baseline: FILE'.");
  p.AddFlag("file", &file, "RUN is an exported scorecard JSON file");
  p.AddString("output", &out, "the baseline file to write (required; - for stdout)", "o");
  if (auto s = p.Parse(args); !s.ok()) return UsageError(std::string(s.message()), p.Help());
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (p.positional().size() != 2 || p.positional()[0] != "save") {
    return UsageError("usage: baseline save RUN -o FILE", p.Help());
  }
  if (out.empty()) return UsageError("baseline save needs -o FILE", p.Help());
  absl::StatusOr<v1::Scorecard> card;
  int code = kExitUsage;
  if (file) {
    card = LoadScorecard(p.positional()[1]);
  } else {
    auto c = Client::Create(options);
    if (!c.ok()) {
      std::fprintf(stderr, "cmaxctl: %s\n", std::string(c.status().message()).c_str());
      return kExitUsage;
    }
    card = FetchScorecard(**c, p.positional()[1], &code);
  }
  if (!card.ok()) {
    std::fprintf(stderr, "cmaxctl: %s\n", std::string(card.status().message()).c_str());
    return code;
  }
  const v1::BaselineFile b = reports::MakeBaseline(*card);
  if (b.values().empty() && b.loss_curves().empty()) {
    std::fprintf(stderr,
                 "cmaxctl: run %s has no metric whose better direction is known and no loss "
                 "curve: nothing to "
                 "save as a baseline\n",
                 card->run_id().c_str());
    return kExitUsage;
  }
  if (int rc = Write(out, reports::RenderBaselineJson(b)); rc != kExitOk) return rc;
  std::fprintf(stderr, "baseline of run %s: %d values, %d fleet medians, %d loss curve(s)\n",
               b.run_id().c_str(), b.values_size(), b.fleet_medians_size(),
               b.loss_curves_size());
  return kExitOk;
}

int CmdRank(const std::vector<std::string>& raw_args) {
  // --price NAME_OR_FILE=USD may repeat: taken out before the parser.
  std::vector<std::pair<std::string, double>> prices;
  std::vector<std::string> args;
  const std::string help_usage =
      "cmaxctl rank SCORECARD.json... [--name FILE=NAME]... [--price NAME_OR_FILE=USD]... "
      "[--format text|json|md] [-o FILE]";
  std::vector<std::pair<std::string, std::string>> names;
  for (size_t i = 0; i < raw_args.size(); ++i) {
    const std::string& a = raw_args[i];
    for (const std::string flag : {"--price", "--name"}) {
      if (a == flag || a.rfind(flag + "=", 0) == 0) {
        std::string v;
        if (a == flag) {
          if (i + 1 >= raw_args.size()) {
            std::fprintf(stderr, "cmaxctl: %s needs a value\n", flag.c_str());
            return kExitUsage;
          }
          v = raw_args[++i];
        } else {
          v = a.substr(flag.size() + 1);
        }
        const size_t eq = v.rfind('=');
        if (eq == std::string::npos || eq == 0) {
          std::fprintf(stderr, "cmaxctl: %s wants KEY=VALUE, not '%s'\n", flag.c_str(), v.c_str());
          return kExitUsage;
        }
        if (flag == "--price") {
          double usd;
          if (!absl::SimpleAtod(v.substr(eq + 1), &usd) || !(usd > 0)) {
            std::fprintf(stderr, "cmaxctl: --price %s: the price must be a positive USD figure\n",
                         v.c_str());
            return kExitUsage;
          }
          prices.push_back({v.substr(0, eq), usd});
        } else {
          names.push_back({v.substr(0, eq), v.substr(eq + 1)});
        }
        goto next;
      }
    }
    args.push_back(a);
  next:;
  }
  std::string format = "text", out;
  ArgParser p(help_usage,
              "A league table of scorecards of different clusters (exported with cmaxctl report "
              "RUN --format json, from any coordinator), ordered by the rules in "
              "reports/RULES.md (\"Ranking\"), ties explained, with a second order by USD per "
              "delivered BF16 PFLOP-hour. --name FILE=NAME names a cluster (default: the file "
              "name without .json); --price NAME_OR_FILE=USD gives its price per GPU-hour "
              "(default: the scorecard's plan price, if any).");
  p.AddString("format", &format, "text, json or md (default text)");
  p.AddString("output", &out, "write to FILE instead of stdout", "o");
  if (auto s = p.Parse(args); !s.ok()) return UsageError(std::string(s.message()), p.Help());
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (p.positional().empty()) return UsageError("rank needs at least one scorecard", p.Help());
  if (format == "markdown") format = "md";
  if (format != "text" && format != "json" && format != "md") {
    return UsageError("--format must be text, json or md", p.Help());
  }
  std::vector<reports::RankInput> inputs;
  std::vector<bool> price_used(prices.size(), false), name_used(names.size(), false);
  for (const auto& path : p.positional()) {
    auto card = LoadScorecard(path);
    if (!card.ok()) {
      std::fprintf(stderr, "cmaxctl: %s\n", std::string(card.status().message()).c_str());
      return kExitUsage;
    }
    reports::RankInput in;
    in.cluster = Basename(path);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].first == path || names[i].first == Basename(path)) {
        in.cluster = names[i].second;
        name_used[i] = true;
      }
    }
    for (size_t i = 0; i < prices.size(); ++i) {
      if (prices[i].first == path || prices[i].first == in.cluster ||
          prices[i].first == Basename(path)) {
        in.price_per_gpu_hour = prices[i].second;
        price_used[i] = true;
      }
    }
    in.card = std::move(*card);
    inputs.push_back(std::move(in));
  }
  for (size_t i = 0; i < prices.size(); ++i) {
    if (!price_used[i]) {
      std::fprintf(stderr, "cmaxctl: --price %s: no scorecard or cluster of that name\n",
                   prices[i].first.c_str());
      return kExitUsage;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (!name_used[i]) {
      std::fprintf(stderr, "cmaxctl: --name %s: no scorecard of that file name\n",
                   names[i].first.c_str());
      return kExitUsage;
    }
  }
  const v1::RankTable table = reports::RankClusters(inputs);
  const std::string text = format == "json" ? reports::RenderRankJson(table)
                           : format == "md" ? reports::RenderRankMarkdown(table)
                                            : reports::RenderRankText(table);
  return Write(out, text);
}

}  // namespace cmax::ctl
