// libFuzzer target: the coordinator's web view, from the first byte a
// browser sends to the handler's answer. The bytes of one connection go
// through the guard (common/http_guard.h) and cpp-httplib's parser into the
// web view's own handlers (coordinator/web/web_routes.h: the token and
// session checks, sign-in and sign-out, the pages, the JSON API, the
// scorecard files, the comparison), up to 8 requests a connection. The data
// behind them is a fixed fake (two runs, two agents) and a report
// directory with real scorecards of both runs.
//
// Properties beyond "no crash" (ASan and UBSan watch the handlers and the
// page renderers; cpp-httplib is Debian's, not instrumented):
//   - every answer starts with a status line;
//   - no answer but the sign-in form is 200, and no answer sets a session
//     cookie, unless the input carried one of the two tokens: nothing gets
//     past the credential check;
//   - every answer the handlers gave carries the Content-Security-Policy;
//   - no answer is a 5xx: the fake never fails, so a 500 is a handler's bug;
//   - no answer holds the bytes of a file outside the report directory (a
//     scorecard planted beside it): run ids never walk out of it.
//
// The fixture lives in $CMAX_FUZZ_WORK_DIR (tests/fuzz/smoke.sh sets it),
// else in a fresh directory under $TMPDIR that is removed at exit.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/web/web_routes.h"
#include "google/protobuf/util/json_util.h"
#include "reports/compare.h"
#include "tests/fuzz/http_input.h"

namespace {

namespace web = cmax::coordinator::web;
namespace v1 = cmax::v1;

constexpr char kToken[] = "fuzz-token-0123456789";
constexpr char kReadToken[] = "fuzz-read-token-abcdef";
// In a scorecard beside the report directory, never in one inside it.
constexpr char kOutsideMarker[] = "OUTSIDE-THE-REPORT-ROOT";

// The input of the request being served: the logger's checks read it.
std::string* current_input = nullptr;

int HexValue(char c) {
  return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
}

// The input with %XX and '+' decoded once, as the server decodes a query.
std::string Decoded(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size() && absl::ascii_isxdigit(in[i + 1]) &&
        absl::ascii_isxdigit(in[i + 2])) {
      out.push_back(static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2])));
      i += 2;
    } else {
      out.push_back(in[i] == '+' ? ' ' : in[i]);
    }
  }
  return out;
}

// Whether the request's bytes carry `s`, as sent or decoded.
bool InputHas(const char* s) {
  if (current_input == nullptr) return false;
  return absl::StrContains(*current_input, s) || absl::StrContains(Decoded(*current_input), s);
}

bool InputHasToken() { return InputHas(kToken) || InputHas(kReadToken); }

// A file outside the report directory leaked into an answer. The marker in
// an answer to a request that itself carries it is an echo (a run id in
// "no run r1OUTSIDE-...", which the fuzzer learns from this very check),
// not a leak.
bool Leaked(const std::string& answer) {
  return absl::StrContains(answer, kOutsideMarker) && !InputHas(kOutsideMarker);
}

// r1 completed with a scorecard, r2 running with a failed task; agents n1, n2.
class FakeSource : public web::WebSource {
 public:
  explicit FakeSource(const std::string& report_root) {
    for (const char* id : {"r1", "r2"}) {
      v1::GetRunResponse& r = runs_[id];
      r.mutable_run()->set_run_id(id);
      r.mutable_run()->set_plan_name(id == std::string("r1") ? "quick" : "<b>full</b>");
      r.mutable_run()->set_state(id == std::string("r1") ? "completed" : "running");
      r.mutable_run()->set_report_dir(absl::StrCat(report_root, "/", id));
      for (int i = 0; i < 2; ++i) {
        auto* t = r.add_tasks();
        t->set_task_id(absl::StrCat(id, ".0.n", i));
        t->set_suite("gemm");
        t->set_node(absl::StrCat("n", i));
        t->set_state(i == 0 ? v1::TASK_COMPLETED : v1::TASK_FAILED);
        if (i == 1) {
          t->set_exit_code(2);
          t->set_message("could not run");
          t->set_stderr_tail("no device <script>x</script>");
        }
      }
    }
  }
  absl::StatusOr<v1::ListAgentsResponse> Agents() override {
    v1::ListAgentsResponse r;
    for (int i = 0; i < 2; ++i) {
      auto* a = r.add_agents();
      a->set_node_name(absl::StrCat("n", i));
      a->set_state(i == 0 ? "connected" : "busy");
    }
    return r;
  }
  absl::StatusOr<v1::ListRunsResponse> Runs(int limit) override {
    v1::ListRunsResponse r;
    for (const auto& [id, run] : runs_) {
      if (r.runs_size() < limit) *r.add_runs() = run.run();
    }
    return r;
  }
  absl::StatusOr<v1::GetRunResponse> Run(const std::string& run_id) override {
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("no run '", run_id, "'"));
    return it->second;
  }

 private:
  std::map<std::string, v1::GetRunResponse> runs_;
};

v1::Scorecard CardOf(const std::string& id, const std::string& marker) {
  v1::Scorecard c;
  c.set_run_id(id);
  c.set_plan(absl::StrCat("quick ", marker));
  c.set_tier("not rated");
  auto* cat = c.add_categories();
  cat->set_name("Compute");
  cat->set_grade(id == "r1" ? "B" : "not measured");
  cat->set_measured(id == "r1");
  auto* rule = cat->add_rules();
  rule->set_rule_id("gemm.tflops");
  rule->set_category("Compute");
  rule->set_outcome("warn");
  rule->set_node("n0");
  rule->set_value(700);
  rule->set_expected(800);
  auto* node = c.add_nodes();
  node->set_node("n0");
  node->set_verdict("pass");
  return c;
}

void WriteCard(const std::string& dir, const v1::Scorecard& card) {
  std::filesystem::create_directories(dir);
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(card, &json).ok()) std::abort();
  std::ofstream(dir + "/scorecard.json") << json;
  std::ofstream(dir + "/scorecard.html") << "<html>" << card.plan() << "</html>";
  std::ofstream(dir + "/scorecard.md") << "# " << card.plan() << "\n";
}

std::string* scratch_dir = nullptr;  // removed at exit when this target made it

// <work>/reports/{r1,r2}/scorecard.* and, beside reports/, a scorecard
// holding the marker under names a walk out of reports/ would reach.
std::string MakeFixture() {
  std::string work;
  if (const char* env = std::getenv("CMAX_FUZZ_WORK_DIR"); env && *env) {
    work = env;
    std::filesystem::create_directories(work);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/cmax-web-fuzz-XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    work = templ;
    scratch_dir = new std::string(work);
    std::atexit([] { std::filesystem::remove_all(*scratch_dir); });
  }
  const std::string reports = work + "/reports";
  WriteCard(reports + "/r1", CardOf("r1", ""));
  WriteCard(reports + "/r2", CardOf("r2", ""));
  WriteCard(work + "/outside", CardOf("outside", kOutsideMarker));
  WriteCard(work, CardOf("outside", kOutsideMarker));
  return reports;
}

cmax::fuzz::FuzzServer* Server() {
  static cmax::fuzz::FuzzServer* server = [] {
    const std::string reports = MakeFixture();
    web::WebOptions o;
    o.token = kToken;
    o.read_token = kReadToken;
    o.report_root = reports;
    o.poll_hold = absl::ZeroDuration();          // since= answers at once
    o.wrong_token_pause = absl::ZeroDuration();  // a wrong token would stall the fuzzer
    o.compare_page = [](const v1::Scorecard& a,
                        const v1::Scorecard& b) -> absl::StatusOr<std::string> {
      return cmax::reports::RenderCompareHtml(cmax::reports::CompareScorecards(a, b));
    };
    // A static key: the fuzzer wants its runs repeatable.
    static auto* routes = new web::WebRoutes(std::move(o), std::make_unique<FakeSource>(reports),
                                             std::string(64, 'k'), /*tls=*/false);
    auto* s = new cmax::fuzz::FuzzServer();
    s->set_payload_max_length(cmax::HttpLimits{}.max_body_bytes);
    routes->Install(*s);
    s->set_logger([](const httplib::Request& req, const httplib::Response& res) {
      if (res.status >= 500) std::abort();
      const bool routed = res.has_header("Content-Security-Policy");
      if (res.status == 200 && !routed) std::abort();
      if (res.status == 200 && req.path != "/login" && !InputHasToken()) std::abort();
      const std::string cookie = res.get_header_value("Set-Cookie");
      if (!cookie.empty() && !absl::StrContains(cookie, "Max-Age=0") && !InputHasToken())
        std::abort();
      if (Leaked(res.body)) std::abort();
    });
    return s;
  }();
  return server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  current_input = &input;
  cmax::fuzz::FuzzServer* server = Server();
  const std::string out = cmax::fuzz::ServeInput(*server, data, size, 8);
  if (!out.empty() && !absl::StartsWith(out, "HTTP/1.1 ")) std::abort();
  if (Leaked(out)) std::abort();
  current_input = nullptr;
  return 0;
}
