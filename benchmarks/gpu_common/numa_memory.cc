#include "benchmarks/gpu_common/numa_memory.h"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cmax::bench {

std::string NormalizePciBusId(const std::string& bus_id) {
  std::string s;
  for (char c : bus_id) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  // Domain:bus:device.function; add the domain when only bus:device.function.
  if (std::count(s.begin(), s.end(), ':') == 1) s = "0000:" + s;
  // cudaDeviceGetPCIBusId may print an 8-digit domain ("00000000:3b:00.0").
  size_t colon = s.find(':');
  if (colon == 8 && s.compare(0, 4, "0000") == 0) s = s.substr(4);
  return s;
}

int PciNumaNode(const Sysroot& root, const std::string& bus_id) {
  auto line = root.ReadLine(absl::StrCat("/sys/bus/pci/devices/", NormalizePciBusId(bus_id),
                                         "/numa_node"));
  int node = -1;
  if (!line || !absl::SimpleAtoi(*line, &node) || node < 0) return -1;
  return node;
}

absl::StatusOr<std::unique_ptr<NumaHostBuffer>> NumaHostBuffer::Allocate(size_t bytes, int node) {
  if (bytes == 0) return absl::InvalidArgumentError("NumaHostBuffer: zero bytes");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of ", bytes, " bytes failed: ", std::strerror(errno)));
  }
  if (node >= 0) {
    const unsigned long bits = 8 * sizeof(unsigned long);
    std::vector<unsigned long> mask(static_cast<size_t>(node) / bits + 1, 0);
    mask[static_cast<size_t>(node) / bits] |= 1UL << (static_cast<unsigned long>(node) % bits);
    // maxnode counts bits; the kernel reads maxnode-1 of them, hence +1.
    long rc = syscall(SYS_mbind, p, bytes, MPOL_BIND, mask.data(), mask.size() * bits + 1, 0);
    if (rc != 0) {
      int err = errno;
      munmap(p, bytes);
      return absl::FailedPreconditionError(
          absl::StrCat("mbind to NUMA node ", node, " failed: ", std::strerror(err)));
    }
  }
  // Touch every page so it is allocated now, on the bound node.
  std::memset(p, 0, bytes);
  return std::unique_ptr<NumaHostBuffer>(new NumaHostBuffer(p, bytes, node));
}

NumaHostBuffer::~NumaHostBuffer() { munmap(data_, size_); }

}  // namespace cmax::bench
