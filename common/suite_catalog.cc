#include "common/suite_catalog.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace cmax {
namespace {

bool IsTokenChar(char ch) {
  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
         ch == ':' || ch == ',' || ch == '+' || ch == '-';
}

absl::Status Bad(const ParamSpec& spec, const std::string& value, const std::string& want) {
  return absl::InvalidArgumentError(
      absl::StrCat("parameter '", spec.name, "': '", value, "' is not ", want));
}

// A bound as people write it: sizes in binary multiples (1M, 64G).
std::string Bound(const ParamSpec& spec, double v) {
  if (spec.type != ParamType::kBytes || v < 1024) return absl::StrCat(v);
  static const char* kUnits[] = {"K", "M", "G", "T", "P"};
  int unit = -1;
  while (unit < 4 && v >= 1024 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++unit;
  }
  return unit < 0 ? absl::StrCat(v) : absl::StrCat(v, kUnits[unit]);
}

absl::Status CheckRange(const ParamSpec& spec, const std::string& value, double v) {
  if ((spec.min != 0 || spec.max != 0) && (v < spec.min || v > spec.max)) {
    return Bad(spec, value,
               absl::StrCat("within [", Bound(spec, spec.min), ", ", Bound(spec, spec.max), "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckAcrossParams(const SuiteInfo& suite,
                               const std::map<std::string, std::string>& params) {
  if (!suite.backends.empty()) {
    auto b = params.find("backend");
    const bool defaulted = b == params.end();
    const std::string backend = defaulted ? suite.backends.front().name : b->second;
    const char* how = defaulted ? " (the default)" : "";
    for (const ParamSpec& spec : suite.params) {
      auto given = params.find(spec.name);
      if (given == params.end()) continue;
      if (!spec.backends.empty() &&
          std::find(spec.backends.begin(), spec.backends.end(), backend) ==
              spec.backends.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "suite '", suite.name, "': parameter '", spec.name, "' applies to backend ",
            absl::StrJoin(spec.backends, ", "), " only, and this task's backend is ", backend,
            how));
      }
      auto allowed = spec.choices_by_backend.find(backend);
      if (allowed != spec.choices_by_backend.end() &&
          std::find(allowed->second.begin(), allowed->second.end(), given->second) ==
              allowed->second.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("suite '", suite.name, "': ", spec.name, " '", given->second,
                         "' is not run by backend ", backend, how, "; it runs ",
                         absl::StrJoin(allowed->second, ", ")));
      }
    }
  }
  if (suite.check) CMAX_RETURN_IF_ERROR(suite.check(params));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParseBytes(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("empty size");
  std::string digits = text;
  int64_t mult = 1;
  char last = absl::ascii_toupper(static_cast<unsigned char>(digits.back()));
  if (last == 'B' && digits.size() > 1) {  // "64KB", "1MiB" style suffixes
    digits.pop_back();
    if (!digits.empty() && (digits.back() == 'i' || digits.back() == 'I')) digits.pop_back();
    last = absl::ascii_toupper(static_cast<unsigned char>(digits.back()));
  }
  switch (last) {
    case 'K': mult = int64_t{1} << 10; break;
    case 'M': mult = int64_t{1} << 20; break;
    case 'G': mult = int64_t{1} << 30; break;
    case 'T': mult = int64_t{1} << 40; break;
    default: break;
  }
  if (mult != 1) digits.pop_back();
  int64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n) || n < 0 || n > (INT64_MAX / mult)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a size in bytes"));
  }
  return n * mult;
}

absl::Status ValidateParam(const ParamSpec& spec, const std::string& value) {
  if (value.size() > 4096) return Bad(spec, value.substr(0, 32) + "...", "short enough");
  if (IsMpirunOption(spec.name)) return ValidateMpirunOption(spec.name, value);
  switch (spec.type) {
    case ParamType::kInt: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return Bad(spec, value, "an integer");
      return CheckRange(spec, value, static_cast<double>(v));
    }
    case ParamType::kNumber: {
      double v;
      if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) return Bad(spec, value, "a number");
      return CheckRange(spec, value, v);
    }
    case ParamType::kBytes: {
      auto v = ParseBytes(value);
      if (!v.ok()) return Bad(spec, value, "a size (4096, 64K, 1M, 2G)");
      return CheckRange(spec, value, static_cast<double>(*v));
    }
    case ParamType::kEnum:
      if (std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
        return Bad(spec, value, absl::StrCat("one of ", absl::StrJoin(spec.choices, ", ")));
      }
      return absl::OkStatus();
    case ParamType::kEnumList: {
      if (value.empty()) return Bad(spec, value, "a list");
      for (absl::string_view item : absl::StrSplit(value, ',')) {
        if (std::find(spec.choices.begin(), spec.choices.end(), item) == spec.choices.end()) {
          return Bad(spec, value,
                     absl::StrCat("a comma-separated list of ", absl::StrJoin(spec.choices, ", ")));
        }
      }
      return absl::OkStatus();
    }
    case ParamType::kIntList: {
      if (value == "all") return absl::OkStatus();
      if (value.empty()) return Bad(spec, value, "a list of integers or 'all'");
      for (absl::string_view item : absl::StrSplit(value, ',')) {
        int64_t v;
        if (!absl::SimpleAtoi(item, &v) || v < 0) {
          return Bad(spec, value, "a list of integers or 'all'");
        }
      }
      return absl::OkStatus();
    }
    case ParamType::kPath: {
      if (value.empty() || value[0] != '/') return Bad(spec, value, "an absolute path");
      for (char ch : value) {
        if (!(absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '_' ||
              ch == '.' || ch == '-' || ch == '+' || ch == '@' || ch == ':')) {
          return Bad(spec, value, "a path of letters, digits and / _ . - + @ :");
        }
      }
      for (absl::string_view part : absl::StrSplit(value, '/')) {
        if (part == "..") return Bad(spec, value, "a path without '..'");
      }
      return absl::OkStatus();
    }
    case ParamType::kToken:
      if (value.empty() || value.size() > 128 ||
          !std::all_of(value.begin(), value.end(), IsTokenChar)) {
        return Bad(spec, value, "a word of letters, digits and _ . : , + -");
      }
      return absl::OkStatus();
    case ParamType::kFlag:
      if (value != "true" && value != "false") return Bad(spec, value, "true or false");
      return absl::OkStatus();
  }
  return absl::InternalError("unknown parameter type");
}

absl::StatusOr<std::vector<std::string>> BuildSuiteArgs(
    const SuiteInfo& suite, const std::map<std::string, std::string>& params,
    bool check_across) {
  std::vector<std::string> args;
  for (const auto& [name, value] : params) {  // std::map: sorted by name
    // Through a plain reference: clang before 16 cannot capture a structured
    // binding (the fuzz build uses clang 14).
    const std::string& wanted = name;
    auto it = std::find_if(suite.params.begin(), suite.params.end(),
                           [&](const ParamSpec& p) { return p.name == wanted; });
    if (it == suite.params.end()) {
      std::vector<std::string> known;
      for (const auto& p : suite.params) known.push_back(p.name);
      return absl::InvalidArgumentError(
          absl::StrCat("suite '", suite.name, "' has no parameter '", name, "' (known: ",
                       known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    if (auto s = ValidateParam(*it, value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("suite '", suite.name, "': ", s.message()));
    }
    if (it->type == ParamType::kFlag) {
      if (value == "true") args.push_back(absl::StrCat("--", name));
    } else {
      args.push_back(absl::StrCat("--", name, "=", value));
    }
  }
  if (check_across) CMAX_RETURN_IF_ERROR(CheckAcrossParams(suite, params));
  return args;
}

absl::Status ValidateSuiteArgs(const SuiteInfo& suite, const std::vector<std::string>& args) {
  std::set<std::string> seen;
  std::map<std::string, std::string> params;  // for suite.check
  for (const auto& arg : args) {
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("argument '", arg, "' is not a --flag"));
    }
    std::string body = arg.substr(2);
    size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    auto it = std::find_if(suite.params.begin(), suite.params.end(),
                           [&](const ParamSpec& p) { return p.name == name; });
    if (it == suite.params.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("suite '", suite.name, "' does not accept --", name));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " given twice"));
    }
    if (it->type == ParamType::kFlag) {
      if (eq != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      params[name] = "true";
      continue;
    }
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
    if (auto s = ValidateParam(*it, body.substr(eq + 1)); !s.ok()) return s;
    params[name] = body.substr(eq + 1);
  }
  return CheckAcrossParams(suite, params);
}

absl::Status ValidateSuiteEnv(const std::string& name, const std::string& value) {
  // Tuning variables only. Sources: NCCL's environment variable documentation
  // (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
  static const std::set<std::string> kAllowed = {
      "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
      "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ",
      "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_QPS_PER_CONNECTION",
      "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_CROSS_NIC", "NCCL_SOCKET_IFNAME",
      "NCCL_SOCKET_FAMILY", "NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
      "NCCL_MAX_NCHANNELS", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_BUFFSIZE",
      "NCCL_NTHREADS", "NCCL_CUMEM_ENABLE", "NCCL_NVLINK_ENABLE",
      "CUDA_DEVICE_MAX_CONNECTIONS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
      "GLOO_SOCKET_IFNAME"};
  if (!kAllowed.count(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable '", name, "' is not allowed in a plan"));
  }
  if (value.size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat("value of ", name, " is too long"));
  }
  for (char ch : value) {
    if (!(IsTokenChar(ch) || ch == '=' || ch == '^' || ch == '/')) {
      return absl::InvalidArgumentError(
          absl::StrCat("value of ", name, " has a character that is not allowed: '", std::string(1, ch), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMpirunOption(const std::string& name, const std::string& value) {
  auto bad = [&](const std::string& want) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "': '",
                                                   value.substr(0, 64), "' is not ", want));
  };
  if (value.empty() || value.size() > 128) return bad("1 to 128 characters");
  if (name == kMpirunBindTo) {
    static const std::set<std::string> kBind = {"none", "core", "socket", "numa"};
    if (!kBind.count(value)) return bad("one of none, core, socket, numa");
    return absl::OkStatus();
  }
  if (name == kMpirunMapBy) {
    // Open MPI 4.1 mpirun(1), --map-by: an object, or ppr:N:object, then
    // modifiers after colons.
    static const std::set<std::string> kObjects = {"slot",     "hwthread", "core", "l1cache",
                                                   "l2cache",  "l3cache",  "socket", "numa",
                                                   "package",  "board",    "node"};
    static const std::set<std::string> kModifiers = {"SPAN", "OVERSUBSCRIBE", "NOOVERSUBSCRIBE",
                                                     "NOLOCAL", "DISPLAY"};
    std::vector<std::string> parts = absl::StrSplit(value, ':');
    size_t i = 0;
    auto small_number = [](const std::string& t) {
      int n = 0;
      return t.size() <= 4 && absl::SimpleAtoi(t, &n) && n >= 1 &&
             std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    if (parts[0] == "ppr") {
      if (parts.size() < 3 || !small_number(parts[1]) || !kObjects.count(parts[2])) {
        return bad("ppr:N:OBJECT");
      }
      i = 3;
    } else {
      if (!kObjects.count(parts[0])) {
        return bad("a mapping (ppr:N:OBJECT or slot, hwthread, core, socket, numa, node...)");
      }
      i = 1;
    }
    for (; i < parts.size(); ++i) {
      const std::string& m = parts[i];
      if (kModifiers.count(m)) continue;
      if (absl::StartsWith(m, "PE=") && small_number(m.substr(3))) continue;
      return bad("a mapping with modifiers PE=N, SPAN, OVERSUBSCRIBE, NOOVERSUBSCRIBE, "
                 "NOLOCAL or DISPLAY");
    }
    return absl::OkStatus();
  }
  if (name == kMpirunIfInclude) {
    // Interface names (IFNAMSIZ: at most 15 characters) or IPv4 CIDRs,
    // comma-separated, as btl_tcp_if_include accepts them.
    for (absl::string_view item : absl::StrSplit(value, ',')) {
      if (item.empty() || item.size() > 18) return bad("interface names or CIDRs");
      size_t slash = item.find('/');
      if (slash != absl::string_view::npos) {
        std::vector<std::string> octets = absl::StrSplit(item.substr(0, slash), '.');
        int bits = 0;
        bool ok = octets.size() == 4 && absl::SimpleAtoi(item.substr(slash + 1), &bits) &&
                  bits >= 0 && bits <= 32;
        for (const auto& o : octets) {
          int v = 0;
          ok = ok && !o.empty() && o.size() <= 3 && absl::SimpleAtoi(o, &v) && v >= 0 && v <= 255;
        }
        if (!ok) return bad("interface names or IPv4 CIDRs (10.0.0.0/8)");
        continue;
      }
      if (item.size() > 15 || item[0] == '-') return bad("interface names (up to 15 characters)");
      for (char ch : item) {
        if (!(absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
              ch == '-')) {
          return bad("interface names of letters, digits and _ . -");
        }
      }
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "mpirun option '", name.substr(0, 64), "' is not allowed (allowed: ", kMpirunBindTo, ", ",
      kMpirunMapBy, ", ", kMpirunIfInclude, ")"));
}

absl::StatusOr<std::vector<std::string>> MpirunOptionArgs(
    const std::vector<std::string>& suite_args, std::vector<std::string>* rest) {
  std::vector<std::string> out;
  rest->clear();
  for (const std::string& arg : suite_args) {
    if (!absl::StartsWith(arg, "--mpirun-")) {
      rest->push_back(arg);
      continue;
    }
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(arg.substr(0, 64), " needs a value"));
    }
    std::string name = arg.substr(2, eq - 2);
    std::string value = arg.substr(eq + 1);
    if (absl::Status s = ValidateMpirunOption(name, value); !s.ok()) return s;
    if (name == kMpirunBindTo) {
      out.insert(out.end(), {"--bind-to", value});
    } else if (name == kMpirunMapBy) {
      out.insert(out.end(), {"--map-by", value});
    } else {
      out.insert(out.end(), {"--mca", "btl_tcp_if_include", value, "--mca", "oob_tcp_if_include",
                             value});
    }
  }
  return out;
}

}  // namespace cmax
