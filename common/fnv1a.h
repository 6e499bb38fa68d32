// FNV-1a, 64 bits, over raw bytes: a fast, stable digest (not a cryptographic
// hash): the consistency suite's output digests, the agent's rendezvous file
// names. Constants from the FNV specification (offset basis
// 14695981039346656037, prime 1099511628211), draft-eastlake-fnv.
#ifndef CMAX_COMMON_FNV1A_H_
#define CMAX_COMMON_FNV1A_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"

namespace cmax {

class Fnv1a64 {
 public:
  void Update(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      h_ ^= p[i];
      h_ *= 1099511628211ULL;
    }
  }
  void Update(std::string_view text) { Update(text.data(), text.size()); }
  uint64_t value() const { return h_; }
  std::string Hex() const { return absl::StrFormat("%016x", h_); }  // 16 lower-case hex digits

 private:
  uint64_t h_ = 14695981039346656037ULL;
};

}  // namespace cmax

#endif  // CMAX_COMMON_FNV1A_H_
