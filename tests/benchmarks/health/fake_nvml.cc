// A stand-in for libnvidia-ml.so.1, loaded by NvmlGpuProbe in
// fabric_domain_test.cc so the loader's fabric and NVLink-speed queries run
// without a GPU. It exports the few entry points the test needs, with the C
// signatures and struct layouts of nvml.h as documented at
// docs.nvidia.com/deploy/nvml-api (nvmlGpuFabricInfo_t / _v2_t / _v3_t,
// NVML_STRUCT_VERSION(GpuFabricInfo, N) = sizeof | N << 24, field value
// NVML_FI_DEV_NVLINK_GET_SPEED 164 in MB/s). Two GPUs:
//   0: "NVIDIA GB200", registered (COMPLETED, success) in cluster
//      6c1f3e2a-9b4d-4e8f-a1c2-3d4e5f607182, clique 1, health mask 0x1aa;
//      18 NVLinks, all active, 53125 MB/s except link 11 at 26562.
//   1: "NVIDIA GB200", NOT_STARTED, no cluster, no links.
// CMAX_FAKE_NVML_FABRIC=v2 makes nvmlDeviceGetGpuFabricInfoV accept only the
// v2 version word (a driver before v3: ARGUMENT_VERSION_MISMATCH for v3).
// Built twice: with CMAX_FAKE_NVML_V1_ONLY the library has no
// nvmlDeviceGetGpuFabricInfoV at all (a driver before r550).
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3,
              kVersionMismatch = 25;
constexpr unsigned kGpus = 2;
constexpr unsigned char kUuid[16] = {0x6c, 0x1f, 0x3e, 0x2a, 0x9b, 0x4d, 0x4e, 0x8f,
                                     0xa1, 0xc2, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82};

struct FabricV1 {  // nvmlGpuFabricInfo_t
  unsigned char cluster_uuid[16];
  int status;
  unsigned int clique_id;
  unsigned char state;
};
struct FabricV3 {  // nvmlGpuFabricInfo_v3_t (v2: the same without health_summary)
  unsigned int version;
  unsigned char cluster_uuid[16];
  int status;
  unsigned int clique_id;
  unsigned char state;
  unsigned int health_mask;
  unsigned char health_summary;
};
struct FieldValue {  // nvmlFieldValue_t
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;
  int nvml_return;
  union {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
};
struct PciInfo {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

unsigned Index(void* dev) {
  return static_cast<unsigned>(reinterpret_cast<uintptr_t>(dev)) - 1;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int r) {
  return r == kVersionMismatch ? "Argument Version Mismatch" : "Fake";
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = kGpus;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** dev) {
  if (i >= kGpus) return kInvalidArgument;
  *dev = reinterpret_cast<void*>(static_cast<uintptr_t>(i + 1));
  return kSuccess;
}
int nvmlDeviceGetName(void*, char* buf, unsigned int len) {
  std::strncpy(buf, "NVIDIA GB200", len);
  return kSuccess;
}
int nvmlDeviceGetUUID(void* dev, char* buf, unsigned int len) {
  std::strncpy(buf, Index(dev) == 0 ? "GPU-fake-0" : "GPU-fake-1", len);
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(void* dev, PciInfo* p) {
  std::strcpy(p->bus_id, Index(dev) == 0 ? "00000008:01:00.0" : "00000009:01:00.0");
  return kSuccess;
}
int nvmlDeviceGetNvLinkState(void* dev, unsigned int link, int* active) {
  if (Index(dev) != 0) return kNotSupported;
  if (link >= 18) return kInvalidArgument;
  *active = 1;
  return kSuccess;
}
int nvmlDeviceGetFieldValues(void* dev, int count, FieldValue* values) {
  for (int i = 0; i < count; ++i) {
    FieldValue& v = values[i];
    v.nvml_return = kNotSupported;
    if (v.field_id == 164 && Index(dev) == 0 && v.scope_id < 18) {  // NVLINK_GET_SPEED
      v.nvml_return = kSuccess;
      v.value_type = 1;  // NVML_VALUE_TYPE_UNSIGNED_INT
      v.value.ui = v.scope_id == 11 ? 26562 : 53125;
    }
  }
  return kSuccess;
}
int nvmlDeviceGetGpuFabricInfo(void* dev, FabricV1* f) {
  std::memset(f, 0, sizeof(*f));
  if (Index(dev) == 0) {
    std::memcpy(f->cluster_uuid, kUuid, 16);
    f->clique_id = 1;
    f->state = 3;  // COMPLETED
  } else {
    f->state = 1;  // NOT_STARTED
  }
  return kSuccess;
}
#ifndef CMAX_FAKE_NVML_V1_ONLY
int nvmlDeviceGetGpuFabricInfoV(void* dev, FabricV3* f) {
  const unsigned v2 = 36u | (2u << 24), v3 = 40u | (3u << 24);
  const char* mode = std::getenv("CMAX_FAKE_NVML_FABRIC");
  const bool v2_only = mode && std::strcmp(mode, "v2") == 0;
  if (f->version != v2 && (v2_only || f->version != v3)) return kVersionMismatch;
  const unsigned version = f->version;
  FabricV1 base;
  nvmlDeviceGetGpuFabricInfo(dev, &base);
  std::memcpy(f->cluster_uuid, base.cluster_uuid, 16);
  f->status = base.status;
  f->clique_id = base.clique_id;
  f->state = base.state;
  f->health_mask = Index(dev) == 0 ? 0x1aa : 0;
  if (version == v3) f->health_summary = 1;  // HEALTHY
  return kSuccess;
}
#endif

}  // extern "C"
