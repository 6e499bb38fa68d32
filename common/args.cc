#include "common/args.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/suite_catalog.h"

namespace cmax {

ArgParser::ArgParser(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description)) {}

void ArgParser::AddFlag(const std::string& name, bool* out, const std::string& help) {
  options_.push_back({name, "", Kind::kFlag, out, help});
}
void ArgParser::AddString(const std::string& name, std::string* out, const std::string& help,
                          const std::string& short_name) {
  options_.push_back({name, short_name, Kind::kString, out, help});
}
void ArgParser::AddInt(const std::string& name, int64_t* out, const std::string& help,
                       const std::string& short_name) {
  options_.push_back({name, short_name, Kind::kInt, out, help});
}
void ArgParser::AddDouble(const std::string& name, double* out, const std::string& help,
                          const std::string& short_name) {
  options_.push_back({name, short_name, Kind::kDouble, out, help});
}
void ArgParser::AddBytes(const std::string& name, int64_t* out, const std::string& help,
                         const std::string& short_name) {
  options_.push_back({name, short_name, Kind::kBytes, out, help});
}
void ArgParser::AddCount(const std::string& name, const std::string& short_name, int* out,
                         const std::string& help) {
  options_.push_back({name, short_name, Kind::kCount, out, help});
}

bool ArgParser::SetCheck(const std::string& name, Check check) {
  Option* o = Find(name, false);
  if (o == nullptr) return false;
  o->check = std::move(check);
  return true;
}

ArgParser::Option* ArgParser::Find(const std::string& name, bool is_short) {
  for (auto& o : options_) {
    if (is_short ? o.short_name == name : o.name == name) return &o;
  }
  return nullptr;
}

absl::Status ArgParser::Set(Option& opt, const std::string& value) {
  auto bad = [&](const char* want) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", opt.name, ": '", value, "' is not ", want));
  };
  switch (opt.kind) {
    case Kind::kString:
      *static_cast<std::string*>(opt.out) = value;
      return absl::OkStatus();
    case Kind::kInt: {
      // Into a local: SimpleAtoi writes what it read of "5x" (5) even as it
      // fails, and a refused value must leave the option as it was.
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad("an integer");
      *static_cast<int64_t*>(opt.out) = v;
      return absl::OkStatus();
    }
    case Kind::kDouble: {
      double d;
      if (!absl::SimpleAtod(value, &d) || !std::isfinite(d)) return bad("a number");
      *static_cast<double*>(opt.out) = d;
      return absl::OkStatus();
    }
    case Kind::kBytes: {
      auto b = ParseBytes(value);
      if (!b.ok()) return bad("a size (4096, 64K, 1M, 8G)");
      *static_cast<int64_t*>(opt.out) = *b;
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("option takes no value");
  }
}

absl::Status ArgParser::Parse(int argc, char** argv, int first) {
  std::vector<std::string> args;
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

absl::Status ArgParser::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      help_ = true;
      continue;
    }
    if (a == "--") {
      for (++i; i < args.size(); ++i) positional_.push_back(args[i]);
      break;
    }
    bool is_long = absl::StartsWith(a, "--");
    bool is_short = !is_long && a.size() >= 2 && a[0] == '-' &&
                    !absl::ascii_isdigit(static_cast<unsigned char>(a[1]));
    if (!is_long && !is_short) {
      positional_.push_back(a);
      continue;
    }
    std::string body = a.substr(is_long ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (size_t eq = body.find('='); is_long && eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    // -vv style counts.
    if (is_short && body.size() > 1 && body.find_first_not_of(body[0]) == std::string::npos) {
      Option* o = Find(std::string(1, body[0]), true);
      if (o && o->kind == Kind::kCount) {
        *static_cast<int*>(o->out) += static_cast<int>(body.size());
        continue;
      }
    }
    Option* opt = Find(name, is_short);
    if (!opt) return absl::InvalidArgumentError(absl::StrCat("unknown option '", a, "'"));
    if (opt->kind == Kind::kFlag) {
      if (has_value) {
        if (value != "true" && value != "false") {
          return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
        }
      } else {
        value = "true";
      }
      if (opt->check) {
        if (auto s = opt->check(value); !s.ok()) return s;
      }
      *static_cast<bool*>(opt->out) = value == "true";
      continue;
    }
    if (opt->kind == Kind::kCount) {
      ++*static_cast<int*>(opt->out);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("option '", a, "' needs a value"));
      }
      value = args[++i];
    }
    if (opt->check) {
      if (auto s = opt->check(value); !s.ok()) return s;
    }
    if (auto s = Set(*opt, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string ArgParser::Help() const {
  std::string out = absl::StrCat("usage: ", usage_, "\n");
  if (!description_.empty()) absl::StrAppend(&out, "\n", description_, "\n");
  if (!options_.empty()) absl::StrAppend(&out, "\noptions:\n");
  for (const auto& o : options_) {
    std::string left = o.short_name.empty() ? absl::StrCat("    --", o.name)
                                            : absl::StrCat("-", o.short_name, ", --", o.name);
    switch (o.kind) {
      case Kind::kString: absl::StrAppend(&left, " VALUE"); break;
      case Kind::kInt: absl::StrAppend(&left, " N"); break;
      case Kind::kDouble: absl::StrAppend(&left, " X"); break;
      case Kind::kBytes: absl::StrAppend(&left, " BYTES"); break;
      default: break;
    }
    absl::StrAppend(&out, absl::StrFormat("  %-28s %s\n", left, o.help));
  }
  absl::StrAppend(&out, "  -h, --help                   this text\n");
  return out;
}

int ParseToolArgs(ArgParser& p, int argc, char** argv, std::FILE* out, std::FILE* err) {
  if (auto s = p.Parse(argc, argv); !s.ok()) {
    std::fprintf(err, "%s\n\n%s", std::string(s.message()).c_str(), p.Help().c_str());
    return 2;
  }
  if (p.help_requested()) {
    std::fprintf(out, "%s", p.Help().c_str());
    return 0;
  }
  return -1;
}

void ParseToolArgsOrExit(ArgParser& p, int argc, char** argv) {
  const int code = ParseToolArgs(p, argc, argv);
  if (code >= 0) {
    std::fflush(stdout);
    std::exit(code);
  }
}

}  // namespace cmax
