// libFuzzer target: the plan parser (YAML text -> cmax.v1.Plan).
//
// Besides "no crash, no leak, no sanitizer report", it checks the contract
// between the two entry points: a plan ParsePlan accepts must also pass
// ValidatePlan (the check the coordinator applies to plans from the wire),
// and every error names the source.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/plan_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<cmax::v1::Plan> plan = cmax::ParsePlan(text, "fuzz.yaml");
  if (!plan.ok()) {
    if (plan.status().message().find("fuzz.yaml") == absl::string_view::npos) abort();
    return 0;
  }
  if (absl::Status s = cmax::ValidatePlan(*plan); !s.ok()) {
    fprintf(stderr, "ParsePlan accepted what ValidatePlan refuses: %s\n", s.ToString().c_str());
    abort();
  }
  return 0;
}
