// FNV-1a, 64 bits, over raw bytes: a fast digest for comparing outputs bit
// for bit (not a cryptographic hash; nobody is adversarial here). Constants
// from the FNV specification (offset basis 14695981039346656037, prime
// 1099511628211), draft-eastlake-fnv.
#ifndef CMAX_BENCHMARKS_CONSISTENCY_DIGEST_H_
#define CMAX_BENCHMARKS_CONSISTENCY_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace cmax::consistency {

class Fnv1a64 {
 public:
  void Update(const void* data, size_t size);
  uint64_t value() const { return h_; }
  std::string Hex() const;  // 16 lower-case hex digits

 private:
  uint64_t h_ = 14695981039346656037ULL;
};

}  // namespace cmax::consistency

#endif  // CMAX_BENCHMARKS_CONSISTENCY_DIGEST_H_
