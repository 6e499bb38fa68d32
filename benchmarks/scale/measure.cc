#include "benchmarks/scale/measure.h"

#include <cstdio>
#include <fstream>

#include "google/protobuf/util/message_differencer.h"

namespace cmax::scale {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double SecondsSince(Clock::time_point a) { return Seconds(a, Clock::now()); }

int64_t StatusKb(const std::string& key, int pid) {
  std::ifstream in(pid > 0 ? "/proc/" + std::to_string(pid) + "/status" : "/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  }
  return -1;
}

void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::string ScorecardDifferences(v1::Scorecard a, v1::Scorecard b) {
  a.clear_generated();
  b.clear_generated();
  std::string differences;
  google::protobuf::util::MessageDifferencer diff;
  diff.ReportDifferencesToString(&differences);
  if (diff.Compare(a, b)) return "";
  return differences.empty() ? "(no difference said)" : differences.substr(0, 4000);
}

bool SameScorecard(const v1::Scorecard& a, const v1::Scorecard& b) {
  const std::string differences = ScorecardDifferences(a, b);
  if (differences.empty()) return true;
  std::fprintf(stderr, "the two scorecards differ:\n%s\n", differences.c_str());
  return false;
}

}  // namespace cmax::scale
