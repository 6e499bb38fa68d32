// Counted nouns for messages: "1 node", "2 nodes", "0 nodes". One helper so
// the coordinator's log, cmaxctl and the scorecard agree on the words.
#ifndef CMAX_COMMON_PLURAL_H_
#define CMAX_COMMON_PLURAL_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cmax {

// "1 node" / "3 nodes": `one` when n is 1, otherwise `many`.
inline std::string Counted(int64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// "1 of 1 node" / "0 of 3 nodes": the noun agrees with the total.
inline std::string CountedOf(int64_t n, int64_t total, absl::string_view one,
                             absl::string_view many) {
  return absl::StrCat(n, " of ", total, " ", total == 1 ? one : many);
}

}  // namespace cmax

#endif  // CMAX_COMMON_PLURAL_H_
