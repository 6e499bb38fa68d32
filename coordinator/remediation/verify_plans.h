// The plans the fault loop runs to verify a repaired node
// (data/verify-gpu.yaml, data/verify-cpu.yaml), compiled in so the
// coordinator needs no plan files installed beside it.
#ifndef CMAX_COORDINATOR_REMEDIATION_VERIFY_PLANS_H_
#define CMAX_COORDINATOR_REMEDIATION_VERIFY_PLANS_H_

namespace cmax::remediation {

// The YAML text of the verify plan for a node with GPUs, or without.
const char* VerifyPlanYaml(bool gpus);

}  // namespace cmax::remediation

#endif  // CMAX_COORDINATOR_REMEDIATION_VERIFY_PLANS_H_
