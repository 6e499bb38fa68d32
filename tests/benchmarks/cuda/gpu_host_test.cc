// Host-only decisions of the GPU suites, tested without a GPU (built on
// every machine, CUDA or not): the split-K choice and the tolerance the GEMM
// check applies for the reduction used, cuBLAS status names, the deadline
// poll behind the NCCL init timeout and the burn-in's hang detection, where
// cuBLASLt / NCCL are looked for on a node, and the fabric check of a
// multi-node NVLink tray (NVSwitches elsewhere, GPUs reporting registration).
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "benchmarks/gpu_common/cublas_choice.h"
#include "benchmarks/gpu_common/gemm_check.h"
#include "benchmarks/gpu_common/gpu_poll.h"
#include "benchmarks/gpu_common/library_search.h"
#include "benchmarks/gpu_common/pcie_link.h"
#include "benchmarks/health/fabric_checks.h"
#include "benchmarks/health/file_gpu_probe.h"

namespace fs = std::filesystem;
using namespace cmax;
using namespace cmax::bench;

namespace {

// A fresh directory under the system temp dir, removed with the object.
struct TempTree {
  fs::path root;
  TempTree() {
    std::string tmpl = (fs::temp_directory_path() / "cmax-gpu-host-XXXXXX").string();
    root = mkdtemp(tmpl.data());
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void File(const std::string& node_path, const std::string& text = "x") const {
    fs::path p = root / node_path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void Dir(const std::string& node_path) const { fs::create_directories(root / node_path.substr(1)); }
};

// A clock that advances only when slept on.
struct FakeClock {
  std::chrono::steady_clock::time_point t{};
  PollClock clock() {
    return {[this] { return t; }, [this](std::chrono::microseconds d) { t += d; }};
  }
};

}  // namespace

TEST_CASE("burn-in and consistency take the first offered algorithm without split-K", "[gpu_host]") {
  // The heuristic's order is best first; split-K ones are passed over.
  CHECK(FirstWithoutSplitK({{4, kReductionComputeType}, {1, 0}, {1, 0}}) == 1);
  CHECK(FirstWithoutSplitK({{1, 0}, {2, kReductionInplace}}) == 0);
  CHECK(FirstWithoutSplitK({{2, kReductionInplace}, {8, kReductionOutputType}}) == -1);
  CHECK(FirstWithoutSplitK({}) == -1);
}

TEST_CASE("the GEMM never reduces split-K in a 16-bit output type", "[gpu_host]") {
  // bf16/fp16 outputs (2 bytes; fp8 inputs write bf16 too): only in the fp32
  // compute type. INPLACE adds the parts in the output type as OUTPUT_TYPE
  // does (cuBLASLt, cublasLtReductionScheme_t), so neither is admitted.
  for (int bytes : {1, 2}) {
    INFO(bytes << "-byte output");
    CHECK(GemmReductionMask(bytes) == kReductionComputeType);
    CHECK((GemmReductionMask(bytes) & kReductionInplace) == 0);
    CHECK((GemmReductionMask(bytes) & kReductionOutputType) == 0);
  }
  CHECK(GemmReductionMask(4) == kReductionAll);
  CHECK(GemmReductionMask(8) == kReductionAll);
  CHECK(ReductionSchemeName(kReductionOutputType) == "output_type");
  CHECK(ReductionSchemeName(kReductionInplace) == "inplace");
  CHECK(ReductionSchemeName(kReductionNone) == "none");
  // Which kept schemes round each part to the output type.
  CHECK(ReducesInOutputType(kReductionInplace));
  CHECK(ReducesInOutputType(kReductionOutputType));
  CHECK_FALSE(ReducesInOutputType(kReductionComputeType));
  CHECK_FALSE(ReducesInOutputType(kReductionNone));
}

TEST_CASE("a split-K reduction in the output type widens the tolerance by its splits", "[gpu_host]") {
  // A bf16 element whose partial sums were each rounded to bf16: 8 splits,
  // each off by one bf16 rounding of a partial of size ~scale.
  GemmSample s;
  s.ref = 1.0;
  s.scale = 10.0;
  const double u_out = RoundingFor(GemmDtype::kBf16).u_out;
  s.got = s.ref + 6 * u_out * s.scale;  // what 8 output-type roundings can add up to
  const int64_t k = 256;                // narrow k: the accumulation term is small
  const double plain = AllowedError(GemmDtype::kBf16, k, s);
  const double split8 = AllowedError(GemmDtype::kBf16, k, s, {8, true});
  CHECK(split8 == Approx(plain + 2 * 8 * u_out * s.scale));
  // In the compute type, or no split: nothing added.
  CHECK(AllowedError(GemmDtype::kBf16, k, s, {8, false}) == plain);
  CHECK(AllowedError(GemmDtype::kBf16, k, s, {1, true}) == plain);
  CHECK_FALSE(CheckGemmSamples(GemmDtype::kBf16, k, {s}).ok());
  CHECK(CheckGemmSamples(GemmDtype::kBf16, k, {s}, {8, true}).ok());
  // The GEMM's own mapping of a kept algorithm's scheme (gpu_gemm.cc): an
  // in-place split-K result of a healthy GPU passes like an output-type one.
  for (uint32_t scheme : {kReductionInplace, kReductionOutputType}) {
    INFO(ReductionSchemeName(scheme));
    const GemmReduction kept{8, ReducesInOutputType(scheme)};
    CHECK(CheckGemmSamples(GemmDtype::kBf16, k, {s}, kept).ok());
  }
  CHECK_FALSE(
      CheckGemmSamples(GemmDtype::kBf16, k, {s}, {8, ReducesInOutputType(kReductionComputeType)})
          .ok());
  // A wrong element (off by the scale) still fails with the widened bound.
  s.got = s.ref + s.scale;
  CHECK_FALSE(CheckGemmSamples(GemmDtype::kBf16, k, {s}, {8, true}).ok());
}

TEST_CASE("cuBLAS errors name their status", "[gpu_host]") {
  CHECK(CublasStatusNameFallback(15) == "CUBLAS_STATUS_NOT_SUPPORTED");
  CHECK(CublasStatusNameFallback(13) == "CUBLAS_STATUS_EXECUTION_FAILED");
  CHECK(CublasStatusNameFallback(7) == "CUBLAS_STATUS_INVALID_VALUE");
  CHECK(CublasStatusNameFallback(99) == "CUBLAS_STATUS_99");
}

TEST_CASE("the deadline poll ends a wait that never finishes", "[gpu_host]") {
  using namespace std::chrono;
  FakeClock fc;
  int polls = 0;
  // Finishes on the 5th poll.
  PollResult r = PollUntil([&] { return ++polls == 5 ? PollState::kDone : PollState::kPending; },
                           {}, seconds(10), fc.clock());
  CHECK(r.outcome == PollOutcome::kDone);
  CHECK(r.polls == 5);

  // Never finishes (a NCCL rank that never joins, a hung GPU): timed out at
  // the deadline, with one last poll at it, not long after.
  fc = FakeClock();
  polls = 0;
  r = PollUntil([&] { ++polls; return PollState::kPending; }, {}, seconds(3), fc.clock(),
                milliseconds(100));
  CHECK(r.outcome == PollOutcome::kTimedOut);
  CHECK(r.waited >= seconds(3));
  CHECK(r.waited < seconds(3) + milliseconds(1));
  CHECK(PollOutcomeName(r.outcome) == "timed out");

  // Finishing exactly at the deadline counts as done.
  fc = FakeClock();
  const auto start = fc.t;
  r = PollUntil([&] { return fc.t - start >= seconds(2) ? PollState::kDone : PollState::kPending; },
                {}, seconds(2), fc.clock(), milliseconds(500));
  CHECK(r.outcome == PollOutcome::kDone);

  // Another local rank failed: stop at once instead of at the deadline.
  fc = FakeClock();
  polls = 0;
  r = PollUntil([&] { ++polls; return PollState::kPending; }, [&] { return polls >= 3; },
                seconds(300), fc.clock());
  CHECK(r.outcome == PollOutcome::kStopped);
  CHECK(r.waited < seconds(1));

  // An error is reported as such.
  fc = FakeClock();
  r = PollUntil([] { return PollState::kFailed; }, {}, seconds(1), fc.clock());
  CHECK(r.outcome == PollOutcome::kFailed);
}

TEST_CASE("a polled CUDA query that said not ready leaves no stale error behind", "[gpu_host]") {
  // A fake runtime: its last-error slot, as cudaPeekAtLastError /
  // cudaGetLastError see it. The codes are CUDA's (cudaErrorNotReady 600,
  // cudaErrorLaunchFailure 719), but any distinct ints would do.
  constexpr int kSuccess = 0, kNotReady = 600, kLaunchFailure = 719;
  int last = kSuccess;
  int takes = 0;
  CudaQueryCalls calls{.success = kSuccess,
                       .not_ready = kNotReady,
                       .peek_last = [&] { return last; },
                       .take_last = [&] {
                         ++takes;
                         int was = last;
                         last = kSuccess;
                         return was;
                       }};
  // The query was not ready and left that as the last error: cleared, so
  // the next launch's cudaGetLastError() is that launch's own.
  last = kNotReady;
  CHECK(CudaQueryState(kNotReady, calls) == PollState::kPending);
  CHECK(last == kSuccess);
  CHECK(takes == 1);
  // Not ready with nothing left behind: nothing to take.
  CHECK(CudaQueryState(kNotReady, calls) == PollState::kPending);
  CHECK(takes == 1);
  // Not ready while an earlier call's real error is pending: that error
  // stays for its own check.
  last = kLaunchFailure;
  CHECK(CudaQueryState(kNotReady, calls) == PollState::kPending);
  CHECK(last == kLaunchFailure);
  CHECK(takes == 1);
  // Done and failed map as the deadline poll expects.
  CHECK(CudaQueryState(kSuccess, calls) == PollState::kDone);
  CHECK(CudaQueryState(kLaunchFailure, calls) == PollState::kFailed);

  // Through the deadline poll, as the burn-in's hang check uses it: a GPU
  // that finishes on the 4th query ends done with the slot clean.
  FakeClock fc;
  int queries = 0;
  last = kSuccess;
  PollResult r = PollUntil(
      [&] {
        const int rc = ++queries < 4 ? kNotReady : kSuccess;
        if (rc == kNotReady) last = kNotReady;  // what the runtime may do
        return CudaQueryState(rc, calls);
      },
      {}, std::chrono::seconds(5), fc.clock());
  CHECK(r.outcome == PollOutcome::kDone);
  CHECK(last == kSuccess);
}

TEST_CASE("every copy the GPU suites wait for with a deadline goes through page-locked memory",
          "[gpu_host]") {
  // A cudaMemcpyAsync between the device and pageable host memory returns
  // only once it is done, so on a hung GPU the poll after it never reaches
  // its deadline (burnin.gpu_hang never written, the NCCL timeout never
  // fires). In every GPU source that polls (PollUntil, QueryState), each
  // host<->device cudaMemcpyAsync must name a PinnedHost buffer (the
  // sources call them pinned*), never a stack variable or a vector.
  const fs::path root = fs::path(CMAX_SOURCE_DIR) / "benchmarks";
  int polling_files = 0, copies = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".cc" && ext != ".cu") continue;
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("PollUntil(") == std::string::npos &&
        text.find("QueryState(") == std::string::npos) {
      continue;
    }
    if (e.path().filename() == "gpu_poll.cc" || e.path().filename() == "cuda_env.cc") continue;
    ++polling_files;
    for (size_t at = text.find("cudaMemcpyAsync("); at != std::string::npos;
         at = text.find("cudaMemcpyAsync(", at + 1)) {
      // The call's text up to its closing parenthesis.
      size_t end = at + std::string("cudaMemcpyAsync(").size();
      for (int depth = 1; end < text.size() && depth > 0; ++end) {
        if (text[end] == '(') ++depth;
        if (text[end] == ')') --depth;
      }
      const std::string call = text.substr(at, end - at);
      if (!absl::StrContains(call, "HostToDevice") && !absl::StrContains(call, "DeviceToHost")) {
        continue;
      }
      ++copies;
      INFO(e.path().string() << ": " << call);
      CHECK(absl::StrContains(call, "pinned"));
    }
  }
  // The burn-in and the NCCL collective poll; both copy to and from the host.
  CHECK(polling_files >= 2);
  CHECK(copies >= 4);
}

TEST_CASE("cuBLASLt and NCCL are looked for in CUDA dirs and pip wheels of python3 on PATH",
          "[gpu_host]") {
  TempTree t;
  t.File("/usr/local/cuda/lib64/libcublasLt.so.13");
  // A virtual environment whose python3 links to the system one: its own
  // site-packages hold the wheels (nvidia-cublas, nvidia-nccl).
  t.File("/usr/bin/python3");
  t.Dir("/opt/venv/bin");
  fs::create_symlink(t.root / "usr/bin/python3", t.root / "opt/venv/bin/python3");
  t.File("/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2");
  t.File("/opt/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublasLt.so.13");
  t.File("/home/u/.local/lib/python3.11/site-packages/nvidia/cublas/lib/libcublasLt.so.12");
  LibrarySearchEnv env;
  env.root = t.root.string();
  env.path = "/opt/venv/bin:/usr/bin";
  env.home = "/home/u";
  const auto dirs = LibrarySearchDirs(env);
  REQUIRE_FALSE(dirs.empty());
  CHECK(dirs.front() == "/usr/local/cuda/lib64");
  auto has = [&](const std::string& d) { return std::find(dirs.begin(), dirs.end(), d) != dirs.end(); };
  CHECK(has("/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib"));
  CHECK(has("/opt/venv/lib/python3.11/site-packages/nvidia/cu13/lib"));
  CHECK(has("/home/u/.local/lib/python3.11/site-packages/nvidia/cublas/lib"));
  CHECK_FALSE(has("/usr/local/cuda/lib"));  // absent here: not listed
  CHECK(FindLibraryFile(env, dirs, {"libnccl.so.2"}) ==
        "/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2");
  CHECK(FindLibraryFile(env, dirs, {"libcublasLt.so.13"}) ==
        "/usr/local/cuda/lib64/libcublasLt.so.13");  // the system CUDA first
  CHECK(FindLibraryFile(env, dirs, {"libcudnn.so.9"}).empty());
  const std::string said = DescribeSearch(env, dirs);
  CHECK(absl::StrContains(said, "LD_LIBRARY_PATH=<empty>"));
  CHECK(absl::StrContains(said, "/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib"));

  // CMAX_CUDA_LIBRARY_PATH replaces the search.
  env.only = "/nowhere:/usr/local/cuda/lib64";
  CHECK(LibrarySearchDirs(env) == std::vector<std::string>{"/usr/local/cuda/lib64"});
  CHECK(absl::StrContains(DescribeSearch(env, LibrarySearchDirs(env)),
                          "only in CMAX_CUDA_LIBRARY_PATH=/nowhere:/usr/local/cuda/lib64"));
}

TEST_CASE("a library that is nowhere is NOT_FOUND naming where it looked and one that is there loads",
          "[gpu_host]") {
  TempTree t;
  const char* old = getenv("CMAX_CUDA_LIBRARY_PATH");
  const std::string saved = old ? old : "";
  setenv("CMAX_CUDA_LIBRARY_PATH", t.root.c_str(), 1);
  auto missing = LoadCudaLibrary("NCCL 2", {"libnccl.so.2"});
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(absl::StrContains(missing.status().message(), "NCCL 2 (libnccl.so.2) not found"));
  CHECK(absl::StrContains(missing.status().message(), t.root.string()));
  // A real shared library found in a listed directory is opened from there.
  std::string libdir;
  for (const char* d : {"/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"}) {
    if (fs::exists(fs::path(d) / "libz.so.1")) {
      libdir = d;
      break;
    }
  }
  if (!libdir.empty()) {
    setenv("CMAX_CUDA_LIBRARY_PATH", libdir.c_str(), 1);
    auto found = LoadCudaLibrary("zlib", {"libz.so.1"});
    REQUIRE(found.ok());
    CHECK(found->path == libdir + "/libz.so.1");
  }
  if (old) {
    setenv("CMAX_CUDA_LIBRARY_PATH", saved.c_str(), 1);
  } else {
    unsetenv("CMAX_CUDA_LIBRARY_PATH");
  }
}

TEST_CASE("an NVL72 tray without local NVSwitches still checks its GPUs' fabric registration",
          "[gpu_host]") {
  // A GB200 compute tray: four GPUs report fabric info, no NVSwitch on the
  // tray's PCI bus (the switches are in the switch trays), no Fabric Manager.
  auto inv = health::FileGpuProbe::ParseYaml(R"(
driver_version: "570.133.20"
gpus:
  - {index: 0, name: "NVIDIA GB200", uuid: GPU-a, pci_bus_id: "00000008:01:00.0", fabric_state: COMPLETED, fabric_status: 0}
  - {index: 1, name: "NVIDIA GB200", uuid: GPU-b, pci_bus_id: "00000009:01:00.0", fabric_state: NOT_STARTED}
  - {index: 2, name: "NVIDIA GB200", uuid: GPU-c, pci_bus_id: "00000018:01:00.0", fabric_state: IN_PROGRESS}
  - {index: 3, name: "NVIDIA GB200", uuid: GPU-d, pci_bus_id: "00000019:01:00.0", fabric_state: COMPLETED, fabric_status: 999}
)");
  REQUIRE(inv.ok());
  health::HealthResult r;
  health::CheckFabric({}, std::nullopt, *inv, &r);
  auto found = r.FindingsWithId("health.fabric_registration");
  REQUIRE(found.size() == 3);
  std::vector<std::string> subjects;
  for (const auto* f : found) {
    subjects.push_back(f->subject());
    CHECK(f->severity() == v1::SEVERITY_FAIL);
    CHECK(f->labels().at("nvswitch_local") == "false");
    CHECK(absl::StrContains(f->action(), "NVL72"));
    // No local Fabric Manager is asked for on such a tray.
    CHECK_FALSE(absl::StrContains(f->action(), "systemctl enable --now nvidia-fabricmanager"));
  }
  CHECK(subjects == std::vector<std::string>{"gpu:1", "gpu:2", "gpu:3"});
  CHECK(r.FindingsWithId("health.fabric_manager_down").empty());

  // Every GPU registered: nothing found, and the check says it looked.
  auto good = health::FileGpuProbe::ParseYaml(R"(
gpus:
  - {index: 0, fabric_state: COMPLETED, fabric_status: 0}
  - {index: 1, fabric_state: COMPLETED, fabric_status: 0}
)");
  REQUIRE(good.ok());
  health::HealthResult ok;
  health::CheckFabric({}, std::nullopt, *good, &ok);
  CHECK(ok.findings.empty());
  REQUIRE(ok.logs.size() == 1);
  CHECK(absl::StrContains(ok.logs[0], "checking each GPU's registration"));
}

TEST_CASE("a GPU's PCIe link and the rate its host copies are held to", "[gpu_host]") {
  // sysfs spellings (Documentation/ABI/testing/sysfs-bus-pci).
  CHECK(PcieGenFromSpeed("32.0 GT/s PCIe") == 5);
  CHECK(PcieGenFromSpeed("16.0 GT/s PCIe\n") == 4);
  CHECK(PcieGenFromSpeed("8.0 GT/s PCIe") == 3);
  CHECK(PcieGenFromSpeed("2.5 GT/s PCIe") == 1);
  CHECK(PcieGenFromSpeed("5.0 GT/s") == 2);
  CHECK(PcieGenFromSpeed("64.0 GT/s PCIe") == 6);
  CHECK(PcieGenFromSpeed("Unknown") == 0);
  CHECK(PcieGenFromSpeed("") == 0);
  CHECK(PcieGenFromSpeed("20.0 GT/s PCIe") == 0);
  // Gen 5 x16 (an H200 SXM's host link): 32 GT/s x 16 x 128/130 / 8.
  CHECK(PcieGbPerDirection(5, 16) == Approx(63.0154).epsilon(1e-4));
  CHECK(PcieGbPerDirection(4, 16) == Approx(31.5077).epsilon(1e-4));
  CHECK(PcieGbPerDirection(1, 16) == Approx(4.0));  // 8b/10b
  CHECK(PcieGbPerDirection(5, 8) == Approx(PcieGbPerDirection(5, 16) / 2));
  CHECK(PcieGbPerDirection(0, 16) == 0);
  CHECK(PcieGbPerDirection(5, 0) == 0);

  TempTree t;
  const std::string dev = "/sys/bus/pci/devices/0000:1b:00.0/";
  t.File(dev + "max_link_speed", "32.0 GT/s PCIe\n");
  t.File(dev + "max_link_width", "16\n");
  // Idle: the GPU has lowered its link; the rate still comes from max_*.
  t.File(dev + "current_link_speed", "2.5 GT/s PCIe\n");
  t.File(dev + "current_link_width", "16\n");
  auto link = ReadPcieLink(t.root.string(), "0000:1b:00.0");
  REQUIRE(link.ok());
  CHECK(link->gen == 5);
  CHECK(link->width == 16);
  CHECK(link->gbps == Approx(63.0154).epsilon(1e-4));
  CHECK(link->current == "2.5 GT/s PCIe x16");
  // No such device (or a GPU on NVLink-C2C without these files): NOT_FOUND.
  auto none = ReadPcieLink(t.root.string(), "0000:99:00.0");
  CHECK(absl::IsNotFound(none.status()));
  // Text that is no rate: INVALID_ARGUMENT naming the file's words.
  const std::string odd = "/sys/bus/pci/devices/0000:2b:00.0/";
  t.File(odd + "max_link_speed", "Unknown\n");
  t.File(odd + "max_link_width", "16\n");
  auto bad = ReadPcieLink(t.root.string(), "0000:2b:00.0");
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("'Unknown'"));
}

TEST_CASE("a GPU on NVLink-C2C is not a PCIe link in the copy's labels",
          "[gpu_host][grace]") {
  TempTree t;
  const std::string h100 = "/sys/bus/pci/devices/0000:1b:00.0/";
  t.File(h100 + "max_link_speed", "32.0 GT/s PCIe\n");
  t.File(h100 + "max_link_width", "16\n");
  t.File(h100 + "current_link_speed", "32.0 GT/s PCIe\n");
  t.File(h100 + "current_link_width", "16\n");
  // A GB200 function as the grace-gb200 fixture has it: in sysfs, with no
  // link files.
  t.File("/sys/bus/pci/devices/0008:01:00.0/vendor", "0x10de\n");

  HostLink pcie = ReadHostLink(t.root.string(), "0000:1b:00.0");
  CHECK(pcie.kind == HostLinkKind::kPcie);
  auto labels = HostLinkLabels(pcie);
  CHECK(labels.at("host_link") == "pcie");
  CHECK(labels.at("pcie_gen") == "5");
  CHECK(labels.at("pcie_width") == "16");
  CHECK(labels.at("pcie_gbps") == "63.02");
  CHECK(labels.at("pcie_current") == "32.0 GT/s PCIe x16");

  HostLink c2c = ReadHostLink(t.root.string(), "0008:01:00.0");
  CHECK(c2c.kind == HostLinkKind::kNotPcie);
  labels = HostLinkLabels(c2c);
  CHECK(labels.at("host_link") == "not_pcie");
  CHECK_THAT(labels.at("host_link_note"), Catch::Contains("not a PCIe link"));
  // No figure for a PCIe floor to hold the copy to.
  CHECK_FALSE(labels.count("pcie_gbps"));
  CHECK_FALSE(labels.count("pcie_gen"));

  HostLink gone = ReadHostLink(t.root.string(), "0000:99:00.0");
  CHECK(gone.kind == HostLinkKind::kUnknown);
  CHECK(HostLinkLabels(gone).at("host_link") == "unknown");
  CHECK_FALSE(HostLinkLabels(gone).count("pcie_gbps"));

  // The fixture tree's GPUs read the same.
  const std::string grace =
      std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/hostcheck/grace-gb200";
  for (const char* bdf :
       {"0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"}) {
    INFO(bdf);
    CHECK(ReadHostLink(grace, bdf).kind == HostLinkKind::kNotPcie);
  }
  const std::string h100_tree =
      std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/hostcheck/healthy-8xh100";
  HostLink h = ReadHostLink(h100_tree, "0000:18:00.0");
  CHECK(h.kind == HostLinkKind::kPcie);
  CHECK(h.pcie.gen == 5);
}
