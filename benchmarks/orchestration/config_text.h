// Readers for the configuration texts the orchestration suite checks: Slurm's
// key=value files (slurm.conf(5), cgroup.conf(5), gres.conf(5),
// topology.conf(5), plugstack.conf(8) lines), `scontrol show config` and
// `scontrol show node` output, kubelet's config.yaml top-level keys, and
// Slurm hostlist expressions ("node[01-04,07]", "/dev/nvidia[0-7]").
// Pure functions over text; every value keeps the line it came from, so a
// finding can name "file:line".
#ifndef CMAX_BENCHMARKS_ORCHESTRATION_CONFIG_TEXT_H_
#define CMAX_BENCHMARKS_ORCHESTRATION_CONFIG_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace cmax::orchestration {

// One `Key=Value` pair and the line (1-based) and source it was read from.
struct ConfigValue {
  std::string key;    // as written
  std::string value;  // without surrounding quotes and whitespace
  int line = 0;
  std::string source;  // "/etc/slurm/slurm.conf" or "scontrol show config"
};

// One line of a Slurm config file: its pairs in order ("NodeName=a Gres=gpu:8"
// is two pairs) and its line number.
struct ConfigLine {
  int line = 0;
  std::string text;  // the line as written, without the comment
  std::vector<ConfigValue> pairs;
};

// A Slurm-style file: '#' starts a comment, pairs are separated by
// whitespace, keys are case-insensitive (slurm.conf(5)). A line without '='
// keeps its text and no pairs (plugstack.conf's "required /path/x.so").
struct ConfigFile {
  std::string source;
  std::vector<ConfigLine> lines;

  // The last value of `key` on any line (later lines win, as in slurmctld),
  // case-insensitive; nullopt when absent.
  std::optional<ConfigValue> Get(absl::string_view key) const;
};

ConfigFile ParseSlurmConfig(absl::string_view text, const std::string& source);

// `scontrol show config` output ("TaskPlugin              = task/cgroup,...");
// the header and blank lines are skipped. Same lookup as a file.
ConfigFile ParseScontrolConfig(absl::string_view text);

// `scontrol show node NAME` output: space-separated Key=Value tokens over
// several lines ("State=IDLE+DRAIN ThreadsPerCore=2"); Reason= takes the rest
// of its line. Keys as written; the first of a key wins.
std::map<std::string, ConfigValue> ParseScontrolNode(absl::string_view text);

// Top-level scalar keys of a kubelet KubeletConfiguration YAML
// ("topologyManagerPolicy: single-numa-node"); nested keys are skipped.
std::map<std::string, ConfigValue> ParseTopLevelYaml(absl::string_view text,
                                                     const std::string& source);

// Expands a Slurm hostlist expression: "node[01-03,7]" -> node01 node02
// node03 node7; several bracket groups and comma-separated items outside
// brackets ("a,b[1-2]") too. nullopt on malformed input or more than
// `max_items` names.
std::optional<std::vector<std::string>> ExpandHostlist(absl::string_view expr,
                                                       size_t max_items = 65536);

// The comma-separated items of a plugin list, lower-cased and trimmed.
std::vector<std::string> SplitList(absl::string_view value);

// "file:line" for a value, "scontrol show config: TaskPlugin" for command
// output.
std::string Where(const ConfigValue& v);

}  // namespace cmax::orchestration

#endif  // CMAX_BENCHMARKS_ORCHESTRATION_CONFIG_TEXT_H_
