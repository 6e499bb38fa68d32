#include "benchmarks/collective/rendezvous_store.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gloo/common/error.h"

namespace cmax::collective {

void RendezvousStore::set(const std::string& key, const std::vector<char>& data) {
  auto s = client_->Set(prefix_ + key, std::string(data.begin(), data.end()));
  if (!s.ok()) {
    throw ::gloo::IoException(absl::StrCat("rendezvous set ", prefix_, key, ": ", s.message()));
  }
}

std::vector<char> RendezvousStore::get(const std::string& key) {
  auto v = client_->Get(prefix_ + key, absl::FromChrono(timeout_));
  if (!v.ok()) {
    throw ::gloo::IoException(
        absl::StrCat("rendezvous get ", prefix_, key, ": ", v.status().message()));
  }
  return std::vector<char>(v->begin(), v->end());
}

void RendezvousStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void RendezvousStore::wait(const std::vector<std::string>& keys,
                           const std::chrono::milliseconds& timeout) {
  for (const auto& key : keys) {
    auto v = client_->Get(prefix_ + key, absl::FromChrono(timeout));
    if (!v.ok()) {
      throw ::gloo::IoException(
          absl::StrCat("rendezvous wait ", prefix_, key, ": ", v.status().message()));
    }
  }
}

}  // namespace cmax::collective
