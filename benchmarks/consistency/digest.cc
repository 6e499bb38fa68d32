#include "benchmarks/consistency/digest.h"

#include "absl/strings/str_format.h"

namespace cmax::consistency {

void Fnv1a64::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h_ ^= p[i];
    h_ *= 1099511628211ULL;
  }
}

std::string Fnv1a64::Hex() const { return absl::StrFormat("%016x", h_); }

}  // namespace cmax::consistency
