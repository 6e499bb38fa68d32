// A rank 0 that lies, for the rdma integration test (issue 28, item 1).
// Installed as cmax-bench in a --bench-dir of its own, it runs the real
// cmax-bench (CMAX_TEST_BIN_DIR) for everything except rank 0 of the rdma
// suite. There it plays the server's side of the rdma rendezvous protocol
// (benchmarks/rdma/rdma.cc) the way a compromised or broken node could: it
// publishes the client's own rails back under its own name, then answers
// every run's "rdma/srv/<k>" with a value that would put a perftest option
// (or garbage) on the client's argv if the client trusted it. It starts no
// perftest; it waits for the client's "rdma/result" and exits 0.
//
// Environment: HOSTILE_RDMA_MARKER, the path the injected
// --out_json_file= options name (a real perftest would write there).
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/rendezvous_client.h"

namespace {

int RunRealBench(char** argv) {
  std::string real = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";
  argv[0] = real.data();
  execv(real.c_str(), argv);
  std::perror(real.c_str());
  return 127;
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "hostile rdma rank: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* rank = std::getenv("CMAX_RANK");
  if (argc < 2 || std::string(argv[1]) != "rdma" || rank == nullptr ||
      std::string(rank) != "0") {
    return RunRealBench(argv);
  }
  const char* marker_env = std::getenv("HOSTILE_RDMA_MARKER");
  const char* node_env = std::getenv("CMAX_NODE_NAME");
  const std::string marker = marker_env ? marker_env : "/tmp/hostile-rdma-marker";
  const std::string node = node_env ? node_env : "hostile";

  auto rv = cmax::RendezvousClient::FromEnvironment();
  if (!rv.ok()) return Fail(std::string(rv.status().message()));
  auto peer = (*rv)->Get("rdma/rails/1", absl::Seconds(120));
  if (!peer.ok()) return Fail(std::string(peer.status().message()));
  // The client's rails as our own: rail i meets rail i, so every run the
  // client plans reaches the answer below.
  std::vector<std::string> lines = absl::StrSplit(*peer, '\n', absl::SkipEmpty());
  if (lines.empty()) return Fail("the client published no rails");
  lines[0] = absl::StrCat("ok ", node);
  if (auto st = (*rv)->Set("rdma/rails/0", absl::StrJoin(lines, "\n")); !st.ok()) {
    return Fail(std::string(st.message()));
  }
  const std::string opt = absl::StrCat("--out_json_file=", marker);
  const std::vector<std::string> answers = {
      absl::StrCat("ready 18515 ", opt),              // an option for the address
      absl::StrCat("ready 18515 127.0.0.1,", opt),    // one good, one option
      absl::StrCat("ready ", opt, " 127.0.0.1"),      // an option for the port
      absl::StrCat("ready 18515 127.0.0.1 ", opt),    // an option after a space
      "ready 70000 127.0.0.1",                        // a port out of range
      "ready 18515 127.0.0.1;touch " + marker,        // shell text
  };
  // Rails times the suite's three tests: one answer per run, in turn.
  const size_t runs = (lines.size() - 1) * 3;
  for (size_t k = 0; k < runs; ++k) {
    if (auto st = (*rv)->Set(absl::StrCat("rdma/srv/", k), answers[k % answers.size()]);
        !st.ok()) {
      return Fail(std::string(st.message()));
    }
  }
  auto result = (*rv)->Get("rdma/result", absl::Seconds(120));
  std::printf("hostile rdma rank: the client's result: %s\n",
              result.ok() ? result->c_str() : std::string(result.status().message()).c_str());
  return 0;
}
