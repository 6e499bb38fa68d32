// remediation_fence_probe: one SlurmFencer call from the command line, for
// tests/deploy/slurm_test.sh (the real scontrol against a real slurmctld).
//   remediation_fence_probe inspect|fence|lift NODE [REASON]
// Prints FenceState::Describe() (inspect) or "ok", else the Status; exit 0
// when OK, 1 otherwise, 2 on usage.
#include <cstdio>
#include <string>

#include "coordinator/remediation/fence.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr,
                 "usage: remediation_fence_probe inspect|fence|lift NODE [REASON]\n");
    return 2;
  }
  const std::string verb = argv[1];
  const std::string node = argv[2];
  cmax::remediation::SlurmFencer fencer("scontrol");
  absl::Status s;
  if (verb == "inspect") {
    auto state = fencer.Inspect(node);
    if (state.ok()) {
      std::printf("%s\n", state->Describe().c_str());
      return 0;
    }
    s = state.status();
  } else if (verb == "fence") {
    s = fencer.Fence(node, argc == 4 ? argv[3] : "probe");
  } else if (verb == "lift") {
    s = fencer.Lift(node);
  } else {
    std::fprintf(stderr, "unknown verb '%s'\n", verb.c_str());
    return 2;
  }
  std::printf("%s\n", s.ok() ? "ok" : s.ToString().c_str());
  return s.ok() ? 0 : 1;
}
