// A suite binary's flags, read from the suite's declaration
// (common/suite_declaration.h), checked by plan validation
// (common/suite_catalog.h): the same names, types, ranges, choices and
// cross-parameter rules the coordinator and the agent check a plan with, and
// --help written from the same help texts. The suite only binds each
// declared parameter to its variable (the variable's initial value is the
// default); options of the binary alone, which no plan can give (--jsonl,
// --root, -v), go to extra().
//
//   SuiteFlags flags("<suite>", "cmax-bench");
//   flags.Bind("records", &records);
//   flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
//   if (auto rc = flags.Parse(argc, argv)) return *rc;
#ifndef CMAX_COMMON_SUITE_FLAGS_H_
#define CMAX_COMMON_SUITE_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/args.h"
#include "common/suite_catalog.h"

namespace cmax {

class SuiteFlags {
 public:
  // `binary`: the binary this runs in ("cmax-bench", "cmax-bench-cuda"); it
  // picks the backends served, hence the parameters to bind and the choices
  // allowed. `usage_tail` follows "<binary> <suite> " in the usage line.
  SuiteFlags(const SuiteInfo& suite, std::string binary,
             std::string usage_tail = "[options]");
  // The suite of that name in SuiteCatalog(); it must be registered.
  SuiteFlags(const std::string& suite, std::string binary,
             std::string usage_tail = "[options]");

  // Binds a declared parameter. kInt and kBytes take int64_t, kNumber
  // double, kFlag bool, the rest std::string. A name this binary does not
  // declare, or the wrong type, is a program error that Parse reports.
  // `short_name`: a one-letter alias (-b), as nccl-tests' flags have.
  void Bind(const std::string& name, int64_t* out, const std::string& short_name = "");
  void Bind(const std::string& name, double* out, const std::string& short_name = "");
  void Bind(const std::string& name, std::string* out, const std::string& short_name = "");
  void Bind(const std::string& name, bool* out);

  ArgParser& extra() { return parser_; }

  // Parses argv[1..argc) (argv[0] is the suite name). nullopt: go on. A
  // value: the exit code to return now -- 2 (could not run) after printing
  // "<suite>: <error>" to stderr, 0 after printing --help.
  std::optional<int> Parse(int argc, char** argv);
  // The same without printing: for suites that write their usage error as
  // a record (INVALID_ARGUMENT), or the declaration's disagreement (INTERNAL).
  absl::Status ParseArgs(const std::vector<std::string>& args);
  absl::Status ParseArgs(int argc, char** argv);
  bool help_requested() const { return parser_.help_requested(); }
  std::string Help() const { return parser_.Help(); }

  // The declared parameters given on the command line (name -> value as
  // given; a flag as "true"), after Parse.
  const std::map<std::string, std::string>& given() const { return given_; }
  // The backends this binary serves for the suite (empty: no backends).
  const std::vector<std::string>& served() const { return served_; }

 private:
  // The spec of a parameter this binary takes (ParamsTakenBy), or nullptr.
  const ParamSpec* Applicable(const std::string& name) const;
  bool Want(const std::string& name, std::vector<ParamType> types);
  void Register(const ParamSpec& spec);

  const SuiteInfo& suite_;
  std::string binary_;
  std::vector<std::string> served_;
  std::vector<const ParamSpec*> taken_;  // ParamsTakenBy(suite_, binary_)
  ArgParser parser_;
  std::vector<std::string> bound_;
  std::vector<std::string> errors_;  // program errors (undeclared names, wrong types)
  std::map<std::string, std::string> given_;
};

}  // namespace cmax

#endif  // CMAX_COMMON_SUITE_FLAGS_H_
