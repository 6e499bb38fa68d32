// Software versions against advisories, InfiniBand and tenant isolation.
#include "common/suite_declaration.h"

namespace cmax::suites::audit {

using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "audit",
    .binary = "cmax-bench",
    .category = "security",
    .judge_category = "lifecycle",
    .help = "component versions against advisories (distribution backports included), "
            "driver branch lifecycle, P_Key/M_Key isolation, forbidden targets",
    .details =
        "Checks every component's version against its advisories (distribution packages\n"
        "against their distribution's fixed version), the NVIDIA driver branch, the kernel,\n"
        "InfiniBand partitions and management keys, and tenant isolation.\n"
        "Status per check: PASS, INFO, WARN, FAIL, CRITICAL, UNKNOWN (could not tell),\n"
        "SKIPPED (does not apply). SKIPPED checks and checks that could not run (smpquery\n"
        "missing or refused, opensm.conf unreadable) are written as not measured.\n"
        "Exit 0 nothing failed, 1 a check failed, 2 could not run.\n"
        "Components include the NVIDIA Container Toolkit, runc, Slurm and the drivers.\n"
        "Tenant isolation: a forbidden target (--forbidden host:port) that accepts a TCP\n"
        "connection is CRITICAL.",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 300,
    .exclusive = false,
    .takes_root = true,
    .params =
        {
            {.name = "advisories", .type = ParamType::kPath,
             .help = "advisory file (default: share/cmax/advisories.yaml next to the binary); absolute, at most 1 MiB; run by the agent: under its --allow-read directories and world-readable",
             .path_use = ParamSpec::PathUse::kReadsFile},
            {.name = "tenancy", .type = ParamType::kEnum,
             .help = "shared: the fabric is shared between tenants (an unpartitioned P_Key table fails); single: one tenant (it is informational)",
             .choices = {"shared", "single"}},
            {.name = "forbidden", .type = ParamType::kToken,
             .help = "comma-separated host:port targets a tenant must not reach (a connection within 1 s is critical)"},
        },
    .metrics =
        {
            {.name = "component_version", .unit = "count", .better = MetricBetter::kNeither,
             .help = "one per component found (labels: component, version, source): an inventory fact, always 1"},
        },
  };
}

}  // namespace cmax::suites::audit
