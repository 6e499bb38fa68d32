// gloo's key-value Store backed by the group's rendezvous
// (common/rendezvous_client.h), so gloo ranks find each other through the
// coordinator like every other group task. Keys get a prefix so gloo's keys
// never collide with cmax's own ("cmax/...").
//
// gloo's Store interface reports errors by throwing; this class throws
// gloo::IoException with the rendezvous error, and the gloo backend catches
// every gloo exception at its boundary (gloo_backend.cc).
// Thread-compatible (gloo calls it from the thread that connects).
#ifndef CMAX_BENCHMARKS_COLLECTIVE_RENDEZVOUS_STORE_H_
#define CMAX_BENCHMARKS_COLLECTIVE_RENDEZVOUS_STORE_H_

#include <chrono>
#include <string>
#include <vector>

#include "common/rendezvous_client.h"
#include "gloo/rendezvous/store.h"

namespace cmax::collective {

class RendezvousStore : public ::gloo::rendezvous::Store {
 public:
  // `client` must outlive the store. `timeout` bounds each get/wait.
  RendezvousStore(RendezvousClient* client, std::string prefix, std::chrono::milliseconds timeout)
      : client_(client), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  RendezvousClient* client_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_RENDEZVOUS_STORE_H_
