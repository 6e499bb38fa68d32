#include "common/suite_flags.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace cmax {
namespace {

std::string Description(const SuiteInfo& suite, const std::string& binary) {
  std::string details = suite.details;
  for (const BackendSpec& b : suite.backends) {
    if (b.binary == binary && !b.details.empty()) details = b.details;
  }
  const std::string summary = SuiteSummary(suite, binary);
  return details.empty() ? summary : absl::StrCat(summary, "\n\n", details);
}

// The help line of a parameter: its text, then what it takes.
std::string OptionHelp(const ParamSpec& spec, const std::vector<std::string>& served) {
  std::string out = spec.help;
  std::vector<std::string> choices = spec.choices;
  if (served.size() == 1) {
    auto it = spec.choices_by_backend.find(served.front());
    if (it != spec.choices_by_backend.end()) choices = it->second;
  }
  if (!choices.empty()) {
    absl::StrAppend(&out, " [", absl::StrJoin(choices, spec.type == ParamType::kEnum ? "|" : ","),
                    "]");
  }
  if (spec.min != 0 || spec.max != 0) {
    absl::StrAppend(&out, " (", spec.min, "..", spec.max, ")");
  }
  return out;
}

}  // namespace

SuiteFlags::SuiteFlags(const SuiteInfo& suite, std::string binary, std::string usage_tail)
    : suite_(suite),
      binary_(std::move(binary)),
      served_(BackendsServedBy(suite, binary_)),
      taken_(ParamsTakenBy(suite, binary_)),
      parser_(absl::StrCat(binary_, " ", suite.name, " ", usage_tail), Description(suite, binary_)) {}

namespace {
const SuiteInfo& Registered(const std::string& name) {
  static const SuiteInfo* kUnknown = new SuiteInfo{.name = "unknown"};
  const SuiteInfo* s = FindSuite(name);
  return s != nullptr ? *s : *kUnknown;
}
}  // namespace

SuiteFlags::SuiteFlags(const std::string& suite, std::string binary, std::string usage_tail)
    : SuiteFlags(Registered(suite), std::move(binary), std::move(usage_tail)) {
  if (suite_.name != suite) errors_.push_back(absl::StrCat("suite '", suite, "' is not registered"));
}

const ParamSpec* SuiteFlags::Applicable(const std::string& name) const {
  for (const ParamSpec* spec : taken_) {
    if (spec->name == name) return spec;
  }
  return nullptr;
}

bool SuiteFlags::Want(const std::string& name, std::vector<ParamType> types) {
  const ParamSpec* spec = Applicable(name);
  if (spec == nullptr) {
    errors_.push_back(absl::StrCat("--", name, " is not a parameter ", binary_, " ",
                                   suite_.name, " declares"));
    return false;
  }
  if (std::find(types.begin(), types.end(), spec->type) == types.end()) {
    errors_.push_back(absl::StrCat("--", name, " is bound to a variable of the wrong type"));
    return false;
  }
  if (std::find(bound_.begin(), bound_.end(), name) != bound_.end()) {
    errors_.push_back(absl::StrCat("--", name, " is bound twice"));
    return false;
  }
  bound_.push_back(name);
  return true;
}

void SuiteFlags::Register(const ParamSpec& spec) {
  const std::string name = spec.name;
  parser_.SetCheck(name, [this, name](const std::string& value) -> absl::Status {
    const ParamSpec* s = Applicable(name);
    if (auto st = ValidateParam(*s, value); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", st.message()));
    }
    given_[name] = value;
    return absl::OkStatus();
  });
}

void SuiteFlags::Bind(const std::string& name, int64_t* out, const std::string& short_name) {
  if (!Want(name, {ParamType::kInt, ParamType::kBytes})) return;
  const ParamSpec& spec = *Applicable(name);
  if (spec.type == ParamType::kBytes) {
    parser_.AddBytes(name, out, OptionHelp(spec, served_), short_name);
  } else {
    parser_.AddInt(name, out, OptionHelp(spec, served_), short_name);
  }
  Register(spec);
}

void SuiteFlags::Bind(const std::string& name, double* out, const std::string& short_name) {
  if (!Want(name, {ParamType::kNumber})) return;
  parser_.AddDouble(name, out, OptionHelp(*Applicable(name), served_), short_name);
  Register(*Applicable(name));
}

void SuiteFlags::Bind(const std::string& name, std::string* out,
                      const std::string& short_name) {
  if (!Want(name, {ParamType::kEnum, ParamType::kEnumList, ParamType::kIntList,
                   ParamType::kPath, ParamType::kToken})) {
    return;
  }
  parser_.AddString(name, out, OptionHelp(*Applicable(name), served_), short_name);
  Register(*Applicable(name));
}

void SuiteFlags::Bind(const std::string& name, bool* out) {
  if (!Want(name, {ParamType::kFlag})) return;
  parser_.AddFlag(name, out, OptionHelp(*Applicable(name), served_));
  Register(*Applicable(name));
}

absl::Status SuiteFlags::ParseArgs(const std::vector<std::string>& args) {
  // Every declared parameter this binary takes must be read: one declared
  // and ignored would be accepted in a plan and silently do nothing.
  for (const ParamSpec& spec : suite_.params) {
    if (Applicable(spec.name) != &spec) continue;
    if (std::find(bound_.begin(), bound_.end(), spec.name) == bound_.end()) {
      errors_.push_back(absl::StrCat("--", spec.name, " is declared but not read"));
    }
  }
  if (!errors_.empty()) {
    return absl::InternalError(absl::StrCat("declaration and flags disagree (a bug): ",
                                            absl::StrJoin(errors_, "; ")));
  }
  given_.clear();
  CMAX_RETURN_IF_ERROR(parser_.Parse(args));
  if (parser_.help_requested()) return absl::OkStatus();
  // The rules across parameters, with this binary's backend when none is
  // given (cmax-bench gemm is the cpu backend, whatever the plan default).
  std::map<std::string, std::string> params = given_;
  if (!served_.empty() && !params.count("backend")) params["backend"] = served_.front();
  return CheckAcrossParams(suite_, params);
}

absl::Status SuiteFlags::ParseArgs(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return ParseArgs(args);
}

std::optional<int> SuiteFlags::Parse(int argc, char** argv) {
  if (auto s = ParseArgs(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", suite_.name.c_str(), std::string(s.message()).c_str());
    return 2;
  }
  if (parser_.help_requested()) {
    std::fputs(parser_.Help().c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

}  // namespace cmax
