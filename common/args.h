// A small command-line parser for suite subcommands (absl flags are global,
// which does not suit one binary with many suites). Accepts --name=value,
// --name value, -n value, and boolean --name.
#ifndef CMAX_COMMON_ARGS_H_
#define CMAX_COMMON_ARGS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace cmax {

class ArgParser {
 public:
  // `usage` is the first line of --help, e.g. "cmax-bench hostcheck [options]".
  ArgParser(std::string usage, std::string description);

  // Register options; the pointers must outlive Parse(). `short_name` may be
  // empty or a single letter ("b" for -b).
  void AddFlag(const std::string& name, bool* out, const std::string& help);
  void AddString(const std::string& name, std::string* out, const std::string& help,
                 const std::string& short_name = "");
  void AddInt(const std::string& name, int64_t* out, const std::string& help,
              const std::string& short_name = "");
  void AddDouble(const std::string& name, double* out, const std::string& help,
                 const std::string& short_name = "");
  // Sizes such as 64K, 1M, 8G.
  void AddBytes(const std::string& name, int64_t* out, const std::string& help,
                const std::string& short_name = "");
  // Counted flag: -v, -vv (also --verbose).
  void AddCount(const std::string& name, const std::string& short_name, int* out,
                const std::string& help);

  // A check of an option's value as given (a flag's: "true" or "false"),
  // run before the value is taken; its error is Parse's.
  using Check = std::function<absl::Status(const std::string& value)>;
  // Sets the check of the option `name` (registered before). False when
  // there is no such option.
  bool SetCheck(const std::string& name, Check check);

  // Parses argv[first..argc). INVALID_ARGUMENT names the bad option. Sets
  // help_requested() for -h/--help (and returns OK).
  absl::Status Parse(int argc, char** argv, int first = 1);
  absl::Status Parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }
  std::string Help() const;

 private:
  enum class Kind { kFlag, kString, kInt, kDouble, kBytes, kCount };
  struct Option {
    std::string name;
    std::string short_name;
    Kind kind;
    void* out;
    std::string help;
    Check check = nullptr;
  };
  Option* Find(const std::string& name, bool is_short);
  absl::Status Set(Option& opt, const std::string& value);

  std::string usage_;
  std::string description_;
  std::vector<Option> options_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// A tool's command line (a benchmark's or a helper's main(), never a
// daemon's): parses argv[1..argc) into `p`. Returns -1 when the tool goes
// on; 0 after printing --help to `out`; 2 after printing the error (which
// names the option and the value, e.g. "--nodes: '5x' is not an integer")
// and then --help to `err`: exit code 2 is "could not run: usage"
// (DESIGN.md). One place for it, so every tool refuses a bad value the same
// way instead of reading "5x" as 5.
int ParseToolArgs(ArgParser& p, int argc, char** argv, std::FILE* out = stdout,
                  std::FILE* err = stderr);
// ParseToolArgs, exiting with its code unless it returned -1. For a tool's
// main() only.
void ParseToolArgsOrExit(ArgParser& p, int argc, char** argv);

}  // namespace cmax

#endif  // CMAX_COMMON_ARGS_H_
