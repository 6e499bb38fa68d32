// The plan keys of a busbw floor, most specific first: the collective
// judge's floors and the busbw chart's reference line read the same ones.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_BUSBW_FLOOR_KEYS_H_
#define CMAX_BENCHMARKS_COLLECTIVE_BUSBW_FLOOR_KEYS_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cmax::suites::collective {

// "busbw_gbps.<op>.node" (one node) or ".multinode", "busbw_gbps.<op>", and
// a bare "busbw_gbps", every op's floor.
inline std::vector<std::string> BusbwFloorKeys(const std::string& op, bool one_node) {
  const std::string base = absl::StrCat("busbw_gbps.", op);
  return {base + (one_node ? ".node" : ".multinode"), base, "busbw_gbps"};
}

}  // namespace cmax::suites::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_BUSBW_FLOOR_KEYS_H_
