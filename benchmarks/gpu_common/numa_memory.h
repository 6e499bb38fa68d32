// Host buffers placed on one NUMA node, for host<->device copies from the
// GPU's own socket (nvbandwidth and the peers' H2D checks do the same: a
// buffer on the far socket measures the inter-socket link, not PCIe).
//
// The pages are bound with the mbind(2) system call (MPOL_BIND) on a fresh
// anonymous mapping and touched, so they are allocated on that node before the
// caller pins them (cudaHostRegister). A raw syscall keeps libnuma out of the
// suite binaries: mbind is a stable kernel interface and linux/mempolicy.h
// (linux-libc-dev, always installed with the compiler) has its constants.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_NUMA_MEMORY_H_
#define CMAX_BENCHMARKS_GPU_COMMON_NUMA_MEMORY_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/sysroot.h"

namespace cmax::bench {

// "0000:3B:00.0" -> "0000:3b:00.0" (sysfs spelling); "3b:00.0" gets the
// "0000:" domain prefix.
std::string NormalizePciBusId(const std::string& bus_id);

// /sys/bus/pci/devices/<bus id>/numa_node; -1 when absent, unreadable or -1
// (single-node machines and many VMs).
int PciNumaNode(const Sysroot& root, const std::string& bus_id);

class NumaHostBuffer {
 public:
  // `bytes` of zero-filled, page-aligned memory. node >= 0 binds the pages to
  // that node; node < 0 leaves placement to the kernel. INVALID_ARGUMENT for
  // zero bytes, RESOURCE_EXHAUSTED when mmap fails, FAILED_PRECONDITION with
  // errno's text when mbind refuses (no such node, or a seccomp filter).
  static absl::StatusOr<std::unique_ptr<NumaHostBuffer>> Allocate(size_t bytes, int node);
  ~NumaHostBuffer();
  NumaHostBuffer(const NumaHostBuffer&) = delete;
  NumaHostBuffer& operator=(const NumaHostBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int node() const { return node_; }  // -1 when not bound

 private:
  NumaHostBuffer(void* data, size_t size, int node) : data_(data), size_(size), node_(node) {}
  void* data_;
  size_t size_;
  int node_;
};

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_NUMA_MEMORY_H_
