// The NVLinks a GPU should have, by platform (data/nvlink_platforms.yaml,
// compiled in; each entry cites its source): link count, link speed and the
// size of a multi-node NVLink domain.
#ifndef CMAX_BENCHMARKS_HEALTH_NVLINK_PLATFORMS_H_
#define CMAX_BENCHMARKS_HEALTH_NVLINK_PLATFORMS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::health {

struct NvLinkPlatform {
  std::string name;                  // "GB200 NVL72"
  std::vector<std::string> match;    // all must occur in the GPU's name
  std::vector<std::string> exclude;  // none may occur
  int links = 0;                     // NVLinks per GPU
  double link_gbps = 0;              // one link, GB/s per direction (0: not judged)
  int domain_gpus = 0;               // GPUs of one multi-node domain (0: the node's own)
};

class NvLinkPlatforms {
 public:
  // INVALID_ARGUMENT names the entry and field at fault.
  static absl::StatusOr<NvLinkPlatforms> Parse(const std::string& yaml_text);
  // The compiled-in table; an error here is a build defect.
  static const NvLinkPlatforms& Default();

  // The first entry matching `gpu_name` (case-insensitive), nullptr when none.
  const NvLinkPlatform* Find(const std::string& gpu_name) const;
  const std::vector<NvLinkPlatform>& entries() const { return entries_; }

 private:
  std::vector<NvLinkPlatform> entries_;
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_NVLINK_PLATFORMS_H_
