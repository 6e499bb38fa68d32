#include "tests/benchmarks/collective/rank_runner.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/record_io.h"
#include "tests/benchmarks/collective/fake_rendezvous_server.h"
#include "tests/benchmarks/declared_metrics.h"

namespace cmax::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<v1::Record> ParseRecords(const std::string& text) {
  std::vector<v1::Record> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    auto r = ParseRecordLine(std::string_view(line.data(), line.size()));
    if (r.ok()) out.push_back(*r);
  }
  CheckMetricsDeclared(out);  // every metric is its suite's declared one
  return out;
}

std::vector<v1::Measurement> MeasurementsOf(const std::vector<v1::Record>& records,
                                            const std::string& metric) {
  std::vector<v1::Measurement> out;
  for (const auto& r : records) {
    if (r.has_measurement() && r.measurement().metric() == metric) out.push_back(r.measurement());
  }
  return out;
}

std::vector<RankOutput> RunRanks(const std::string& binary, const std::vector<std::string>& args,
                                 int n, const std::string& dir, std::chrono::seconds timeout,
                                 std::function<void(const std::vector<pid_t>&)> during) {
  std::vector<RankOutput> outs(static_cast<size_t>(n));
  auto server = FakeRendezvousServer::Start(dir + "/rdv.sock", n);
  if (!server.ok()) {
    for (auto& o : outs) o.err = std::string(server.status().message());
    return outs;
  }
  std::vector<std::unique_ptr<Subprocess>> procs;
  for (int r = 0; r < n; ++r) {
    SpawnOptions so;
    so.argv.push_back(binary);
    so.argv.insert(so.argv.end(), args.begin(), args.end());
    so.env["CMAX_RENDEZVOUS"] = (*server)->address();
    so.env["CMAX_GROUP"] = "test-group";
    so.env["CMAX_RANK"] = absl::StrCat(r);
    so.env["CMAX_WORLD_SIZE"] = absl::StrCat(n);
    so.env["CMAX_LOCAL_RANK"] = absl::StrCat(r);
    so.env["CMAX_LOCAL_WORLD_SIZE"] = absl::StrCat(n);
    so.env["CMAX_NODE_NAME"] = absl::StrCat("node-", r);
    so.stdout_path = absl::StrCat(dir, "/rank", r, ".out");
    so.stderr_path = absl::StrCat(dir, "/rank", r, ".err");
    auto p = Subprocess::Spawn(so);
    if (!p.ok()) {
      outs[static_cast<size_t>(r)].err = std::string(p.status().message());
      procs.push_back(nullptr);
      continue;
    }
    procs.push_back(std::move(*p));
  }
  std::thread during_thread;
  if (during) {
    std::vector<pid_t> pids;
    for (const auto& p : procs) pids.push_back(p ? p->pid() : -1);
    during_thread = std::thread([during, pids] { during(pids); });
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> done(static_cast<size_t>(n), false);
  int left = n;
  for (int r = 0; r < n; ++r) {
    if (!procs[static_cast<size_t>(r)]) {
      done[static_cast<size_t>(r)] = true;
      --left;
    }
  }
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      auto& p = procs[static_cast<size_t>(r)];
      if (done[static_cast<size_t>(r)]) continue;
      if (p->Poll(&outs[static_cast<size_t>(r)].exit)) {
        done[static_cast<size_t>(r)] = true;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r) {
        if (done[static_cast<size_t>(r)]) continue;
        procs[static_cast<size_t>(r)]->SignalGroup(SIGKILL);
        outs[static_cast<size_t>(r)].exit = procs[static_cast<size_t>(r)]->Wait();
        outs[static_cast<size_t>(r)].timed_out = true;
        done[static_cast<size_t>(r)] = true;
      }
      left = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (during_thread.joinable()) during_thread.join();
  for (int r = 0; r < n; ++r) {
    auto& o = outs[static_cast<size_t>(r)];
    o.out = ReadFile(absl::StrCat(dir, "/rank", r, ".out"));
    std::string err = ReadFile(absl::StrCat(dir, "/rank", r, ".err"));
    o.err += err.size() > 4000 ? err.substr(err.size() - 4000) : err;
    o.records = ParseRecords(o.out);
  }
  return outs;
}

}  // namespace cmax::testing
