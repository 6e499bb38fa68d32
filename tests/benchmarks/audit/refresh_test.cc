// `cmax-bench audit refresh` and the judging it feeds: the real CSAF and OSV
// documents under tests/fixtures/advisories/ (SOURCES.md) become a table, and
// the audit on fixture roots built here judges versions just below and just
// above each floor; a truncated document, a stale table and the grace period.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/audit/audit.h"
#include "benchmarks/audit/refresh.h"
#include "benchmarks/audit/version_checks.h"
#include "common/subprocess.h"
#include "tests/benchmarks/audit/audit_test_util.h"

namespace cmax::audit {
namespace {

namespace fs = std::filesystem;

std::string Documents() { return std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/advisories"; }
std::string Bench() { return std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench"; }

// A fresh directory under the temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cmax-refresh-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  // Writes `rel` (parents created); `exec` makes it an executable script.
  void Write(const std::string& rel, const std::string& text, bool exec = false) const {
    fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    if (exec) chmod(p.c_str(), 0755);
  }

 private:
  std::string path_;
};

AdvisoryDb Shipped() {
  auto db = LoadAdvisories(testing::ShippedAdvisories());
  REQUIRE(db.ok());
  return *db;
}

const Advisory* FindAdvisory(const AdvisoryDb& db, const std::string& id) {
  for (const auto& a : db.advisories) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

// The refreshed table, written out and read back as the audit reads it.
AdvisoryDb Refreshed(const std::string& today = "2025-11-01") {
  auto result = RefreshFromDirectory(Documents(), Shipped(), today);
  REQUIRE(result.ok());
  INFO(absl::StrJoin(result->skipped, "\n"));
  REQUIRE(result->skipped.empty());
  auto db = ParseAdvisories(FormatAdvisoryTable(result->db), "refreshed.yaml");
  INFO(db.status().message());
  REQUIRE(db.ok());
  return *db;
}

// Versions of one node, each read the way the collectors read it.
struct Node {
  std::string driver, dcgm, cuda, docker, runc, ctk, nic_fw;
  // Command output of containerd --version, kubelet --version,
  // dcgm-exporter --version and nv-fabricmanager --version (empty: absent).
  std::string containerd, kubelet, dcgm_exporter, fabric_manager;
  std::string ofed;  // ofed_info -s
};

// A fake command printing `out` (empty: none).
void FakeCommand(const TempDir& dir, const std::string& name, const std::string& out) {
  if (!out.empty()) dir.Write("bin/" + name, absl::StrCat("#!/bin/sh\nprintf '", out, "\\n'\n"), true);
}

void BuildRoot(const TempDir& dir, const Node& n) {
  if (!n.driver.empty()) {
    dir.Write("root/proc/driver/nvidia/version",
              absl::StrCat("NVRM version: NVIDIA UNIX x86_64 Kernel Module  ", n.driver,
                           "  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar 18 2025\n"));
  }
  std::string dpkg;
  if (!n.dcgm.empty()) {
    dpkg += absl::StrCat("Package: datacenter-gpu-manager\nStatus: install ok installed\n",
                         "Version: 1:", n.dcgm, "\n\n");
  }
  if (!n.docker.empty()) {
    dpkg += absl::StrCat("Package: docker-ce\nStatus: install ok installed\nVersion: 5:",
                         n.docker, "-1~debian.12~bookworm\n\n");
  }
  dir.Write("root/var/lib/dpkg/status", dpkg);
  dir.Write("root/etc/os-release", "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n");
  if (!n.cuda.empty()) {
    dir.Write("root/usr/local/cuda/version.json",
              absl::StrCat("{\n   \"cuda\" : {\n      \"name\" : \"CUDA SDK\",\n      \"version\" : \"",
                           n.cuda, "\"\n   }\n}\n"));
  }
  if (!n.nic_fw.empty()) {  // "-": the device without a readable fw_ver
    dir.Write("root/sys/class/infiniband/mlx5_0/fw_ver", n.nic_fw == "-" ? "" : n.nic_fw + "\n");
  }
  dir.Write("bin/.keep", "");
  FakeCommand(dir, "containerd", n.containerd);
  FakeCommand(dir, "kubelet", n.kubelet);
  FakeCommand(dir, "dcgm-exporter", n.dcgm_exporter);
  FakeCommand(dir, "nv-fabricmanager", n.fabric_manager);
  FakeCommand(dir, "ofed_info", n.ofed);
  if (!n.runc.empty()) {
    dir.Write("bin/runc", absl::StrCat("#!/bin/sh\nprintf 'runc version ", n.runc,
                                       "\\ncommit: v", n.runc, "\\nspec: 1.0.2-dev\\n'\n"),
              true);
  }
  if (!n.ctk.empty()) {
    dir.Write("bin/nvidia-ctk", absl::StrCat("#!/bin/sh\nprintf 'NVIDIA Container Toolkit CLI "
                                             "version ", n.ctk, "\\n'\n"),
              true);
  }
}

AuditReport AuditNode(const Node& n, const AdvisoryDb& db, const std::string& today = "2025-11-01",
                      int grace_days = 0) {
  TempDir dir;
  BuildRoot(dir, n);
  testing::ScopedPath path(dir.path() + "/bin");
  AuditOptions options;
  options.root = dir.path() + "/root";
  options.today_ym = today.substr(0, 7);
  options.today = today;
  options.grace_days = grace_days;
  options.command_timeout = std::chrono::milliseconds(5000);
  return RunAuditChecks(options, db);
}

CheckStatus StatusOf(const AuditReport& r, const std::string& check_id) {
  const CheckResult* c = testing::FindCheck(r, check_id);
  INFO(check_id);
  REQUIRE(c != nullptr);
  INFO(c->found << " / " << c->required << " / " << c->why);
  return c->status;
}

TEST_CASE("refresh maps NVIDIA's CSAF bulletins and OSV records to the table",
          "[audit][refresh]") {
  auto result = RefreshFromDirectory(Documents(), Shipped(), "2025-11-01");
  REQUIRE(result.ok());
  CHECK(result->skipped.empty());
  CHECK(result->parsed.size() == 28);
  CHECK(result->db.generated == "2025-11-01");
  CHECK(result->db.sources.size() == 28);
  const AdvisoryDb& db = result->db;

  const Advisory* ctk = FindAdvisory(db, "NVIDIA-5659");
  REQUIRE(ctk != nullptr);
  CHECK(ctk->component == "container_toolkit");
  CHECK(ctk->fixed == std::vector<std::string>{"1.17.8"});
  CHECK(ctk->severity == "critical");
  CHECK(ctk->published == "2025-07-15");
  CHECK(ctk->affected == std::vector<std::string>{"<= 1.17.7"});
  CHECK(ctk->cves == std::vector<std::string>{"CVE-2025-23266", "CVE-2025-23267"});
  CHECK(ctk->url == "https://nvidia.custhelp.com/app/answers/detail/a_id/5659");

  const Advisory* drv = FindAdvisory(db, "NVIDIA-5630");
  REQUIRE(drv != nullptr);
  CHECK(drv->component == "driver");
  // Only the Linux data center rows, one fix per branch; no vGPU rows.
  CHECK(drv->fixed == std::vector<std::string>{"535.247.01", "550.163.01", "570.133.07",
                                               "575.51.02"});
  CHECK(drv->severity == "high");

  const Advisory* dcgm = FindAdvisory(db, "NVIDIA-5453");
  REQUIRE(dcgm != nullptr);
  CHECK(dcgm->component == "dcgm");
  CHECK(dcgm->fixed == std::vector<std::string>{"3.1.7"});
  CHECK(dcgm->published == "2023-03-31");

  const Advisory* cuda = FindAdvisory(db, "NVIDIA-5643");
  REQUIRE(cuda != nullptr);
  CHECK(cuda->component == "cuda_toolkit");
  CHECK(cuda->severity == "medium");

  const Advisory* docker = FindAdvisory(db, "GHSA-v23v-6jw2-98fq");
  REQUIRE(docker != nullptr);
  CHECK(docker->component == "docker");
  CHECK(docker->introduced == "19.03.0");
  CHECK(docker->fixed.size() == 4);
  CHECK(docker->severity == "critical");
  CHECK(docker->published == "2024-07-30");
  CHECK(docker->url == "https://github.com/moby/moby/security/advisories/GHSA-v23v-6jw2-98fq");

  const Advisory* runc = FindAdvisory(db, "GO-2024-2491");
  REQUIRE(runc != nullptr);
  CHECK(runc->component == "runc");
  CHECK(runc->introduced == "1.0.0-rc93");
  CHECK(runc->fixed == std::vector<std::string>{"1.1.12"});
  CHECK(runc->published.empty());  // the Go database's 0001-01-01 placeholder
  CHECK(runc->severity == "high");  // no severity given: taken as high, and said
  CHECK(absl::StrContains(runc->description, "no severity"));

  // The base's own entries stay (the Debian backport, Slurm, the branch table).
  CHECK(FindAdvisory(db, "GHSA-xr7r-f8xq-vfvv") != nullptr);
  CHECK(FindAdvisory(db, "SchedMD-CVE-2025-43904") != nullptr);
  CHECK(FindDriverBranch(db, 580) != nullptr);

  // The written table reads back whole.
  auto back = ParseAdvisories(FormatAdvisoryTable(db), "refreshed.yaml");
  REQUIRE(back.ok());
  CHECK(back->advisories.size() == db.advisories.size());
  CHECK(back->generated == "2025-11-01");
  CHECK(back->sources == db.sources);
  CHECK(FindAdvisory(*back, "GHSA-xr7r-f8xq-vfvv")->distributions.at("debian/bookworm") ==
        "1.1.5+ds1-1+deb12u1");
  CHECK(FindAdvisory(*back, "NVIDIA-5659")->published == "2025-07-15");
}

TEST_CASE("each judged component just below its floor misses, at the floor passes",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed();
  Node below{"570.133.06", "3.1.6", "12.8.1", "25.0.5", "1.1.11", "1.17.7", "28.39.1002"};
  AuditReport low = AuditNode(below, db);
  CHECK(StatusOf(low, "audit.advisory.NVIDIA-5630") == CheckStatus::kFail);
  CHECK(StatusOf(low, "audit.advisory.NVIDIA-5453") == CheckStatus::kFail);
  CHECK(StatusOf(low, "audit.advisory.NVIDIA-5643") == CheckStatus::kWarn);  // medium
  CHECK(StatusOf(low, "audit.advisory.GHSA-v23v-6jw2-98fq") == CheckStatus::kFail);
  CHECK(StatusOf(low, "audit.advisory.GO-2024-2491") == CheckStatus::kFail);
  CHECK(StatusOf(low, "audit.advisory.NVIDIA-5659") == CheckStatus::kFail);
  const CheckResult* ctk = testing::FindCheck(low, "audit.advisory.NVIDIA-5659");
  CHECK(ctk->required == ">= 1.17.8");
  CHECK(ctk->links.front() == "https://nvidia.custhelp.com/app/answers/detail/a_id/5659");
  const CheckResult* dcgm = testing::FindCheck(low, "audit.advisory.NVIDIA-5453");
  CHECK(dcgm->required == ">= 3.1.7");
  CHECK(dcgm->advisory_id == "NVIDIA-5453");
  // NIC firmware on train 39 (LTS23) below NVIDIA-5699's 39.8002.
  CHECK(StatusOf(low, "audit.advisory.NVIDIA-5699") == CheckStatus::kFail);

  Node at{"570.133.07", "3.1.7", "12.9.0", "25.0.6", "1.1.12", "1.17.8", ""};
  AuditReport high = AuditNode(at, db);
  for (const char* id : {"NVIDIA-5630", "NVIDIA-5453", "NVIDIA-5643", "GHSA-v23v-6jw2-98fq",
                         "GO-2024-2491", "NVIDIA-5659"}) {
    CHECK(StatusOf(high, absl::StrCat("audit.advisory.", id)) == CheckStatus::kPass);
  }
}

TEST_CASE("refresh maps firmware trains, DCGM Exporter, containerd and Kubernetes",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed();
  const Advisory* fw = FindAdvisory(db, "NVIDIA-5699");
  REQUIRE(fw != nullptr);
  CHECK(fw->component == "nic_firmware");
  CHECK(fw->severity == "critical");
  CHECK(fw->fixed == std::vector<std::string>{"xx.28.4702", "xx.32.1908", "xx.35.8002",
                                              "xx.39.8002", "xx.43.8002", "xx.46.3008"});
  const Advisory* exporter = FindAdvisory(db, "NVIDIA-5857-dcgm_exporter");
  REQUIRE(exporter != nullptr);
  CHECK(exporter->fixed == std::vector<std::string>{"4.8.2"});
  CHECK(exporter->affected == std::vector<std::string>{"<= 4.8.2"});
  CHECK(FindAdvisory(db, "NVIDIA-5857-dcgm")->fixed == std::vector<std::string>{"4.5.3"});
  CHECK(FindAdvisory(db, "NVIDIA-5850")->fixed == std::vector<std::string>{"1.19.1"});
  CHECK(FindAdvisory(db, "NVIDIA-5821")->fixed ==
        std::vector<std::string>{"535.309.01", "580.159.03", "595.71.05"});
  const Advisory* containerd = FindAdvisory(db, "GO-2026-5475");
  REQUIRE(containerd != nullptr);
  CHECK(containerd->component == "containerd");
  CHECK(containerd->introduced == "1.7.0");
  CHECK(containerd->fixed ==
        std::vector<std::string>{"1.7.33", "2.0.10", "2.1.9", "2.2.5", "2.3.2"});
  CHECK(FindAdvisory(db, "GO-2025-4100")->component == "containerd");
  const Advisory* kube = FindAdvisory(db, "GO-2025-3465");
  REQUIRE(kube != nullptr);
  CHECK(kube->component == "kubelet");
  CHECK(kube->cves == std::vector<std::string>{"CVE-2025-0426"});
  CHECK(FindAdvisory(db, "GO-2024-3286")->fixed ==
        std::vector<std::string>{"1.28.12", "1.29.7", "1.30.3"});
}

TEST_CASE("newly judged components: below the floor fails, at it passes, unreadable UNKNOWN",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed("2026-12-07");
  Node below{.driver = "580.159.02", .dcgm = "4.5.2", .ctk = "1.19.0", .nic_fw = "28.46.3007",
             .containerd = "containerd github.com/containerd/containerd/v2 v2.2.4 77c8e1a",
             .kubelet = "Kubernetes v1.32.1",
             .dcgm_exporter = "DCGM Exporter version 4.5.2-4.8.1",
             .fabric_manager = "Fabric Manager version is : 580.159.01"};
  AuditReport low = AuditNode(below, db, "2026-12-07");
  for (const char* id : {"NVIDIA-5821", "NVIDIA-5857-dcgm", "NVIDIA-5850", "NVIDIA-5699",
                         "GO-2026-5475", "GO-2025-3465", "NVIDIA-5857-dcgm_exporter"}) {
    CHECK(StatusOf(low, absl::StrCat("audit.advisory.", id)) == CheckStatus::kFail);
  }
  CHECK(testing::FindCheck(low, "audit.advisory.NVIDIA-5699")->required == ">= xx.46.3008");
  CHECK(StatusOf(low, "audit.advisory.GO-2025-4100") == CheckStatus::kPass);  // 2.2.0 fixed it
  CHECK(StatusOf(low, "audit.fabric_manager.driver_match") == CheckStatus::kFail);

  Node at{.driver = "580.159.03", .dcgm = "4.5.3", .ctk = "1.19.1", .nic_fw = "28.46.3008",
          .containerd = "containerd github.com/containerd/containerd/v2 v2.2.5 1a2b3c4",
          .kubelet = "Kubernetes v1.32.2",
          .dcgm_exporter = "DCGM Exporter version 4.5.3-4.8.2",
          .fabric_manager = "Fabric Manager version is : 580.159.03"};
  AuditReport high = AuditNode(at, db, "2026-12-07");
  for (const char* id : {"NVIDIA-5821", "NVIDIA-5747", "NVIDIA-5857-dcgm", "NVIDIA-5850",
                         "NVIDIA-5699", "GO-2026-5475", "GO-2025-4100", "GO-2025-3465",
                         "GO-2024-3286", "NVIDIA-5857-dcgm_exporter"}) {
    CHECK(StatusOf(high, absl::StrCat("audit.advisory.", id)) == CheckStatus::kPass);
  }
  CHECK(StatusOf(high, "audit.fabric_manager.driver_match") == CheckStatus::kPass);

  Node unreadable{.driver = "580.159.03", .nic_fw = "-", .containerd = "containerd: no version",
                  .kubelet = "kubelet: no version", .dcgm_exporter = "no version",
                  .fabric_manager = "Fabric Manager: unknown"};
  AuditReport unknown = AuditNode(unreadable, db, "2026-12-07");
  for (const char* c : {"nic_firmware", "containerd", "kubelet", "dcgm_exporter",
                        "fabric_manager"}) {
    CHECK(StatusOf(unknown, absl::StrCat("audit.version.", c)) == CheckStatus::kUnknown);
  }
  CHECK(StatusOf(unknown, "audit.fabric_manager.driver_match") == CheckStatus::kUnknown);
  CHECK(testing::FindCheck(unknown, "audit.version.nic_firmware")->subject ==
        "component:nic_firmware:mlx5_0");
}

TEST_CASE("firmware: another LTS train below its fix fails, a newer train passes",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed("2026-12-07");
  CHECK(StatusOf(AuditNode(Node{.nic_fw = "22.43.8001"}, db, "2026-12-07"),
                 "audit.advisory.NVIDIA-5699") == CheckStatus::kFail);
  CHECK(StatusOf(AuditNode(Node{.nic_fw = "22.43.8002"}, db, "2026-12-07"),
                 "audit.advisory.NVIDIA-5699") == CheckStatus::kPass);
  // Train 45 (an older GA) has no fix of its own: older than 46.3008, it fails.
  CHECK(StatusOf(AuditNode(Node{.nic_fw = "32.45.1020"}, db, "2026-12-07"),
                 "audit.advisory.NVIDIA-5699") == CheckStatus::kFail);
  CHECK(StatusOf(AuditNode(Node{.nic_fw = "40.47.1000"}, db, "2026-12-07"),
                 "audit.advisory.NVIDIA-5699") == CheckStatus::kPass);
  // The earlier bulletins on LTS24 (train 43): 5655 (high) fails, 5684
  // (medium) warns below 43.3608; at it both pass, 5699's 43.8002 still fails.
  AuditReport below = AuditNode(Node{.nic_fw = "28.43.3606"}, db, "2026-12-07");
  CHECK(StatusOf(below, "audit.advisory.NVIDIA-5655") == CheckStatus::kFail);
  CHECK(StatusOf(below, "audit.advisory.NVIDIA-5684") == CheckStatus::kWarn);
  AuditReport at = AuditNode(Node{.nic_fw = "28.43.3608"}, db, "2026-12-07");
  CHECK(StatusOf(at, "audit.advisory.NVIDIA-5655") == CheckStatus::kPass);
  CHECK(StatusOf(at, "audit.advisory.NVIDIA-5684") == CheckStatus::kPass);
  CHECK(StatusOf(at, "audit.advisory.NVIDIA-5562") == CheckStatus::kPass);
  CHECK(StatusOf(at, "audit.advisory.NVIDIA-5699") == CheckStatus::kFail);
  // A fix NVIDIA names for one family (ConnectX-4's 12.28.2302) does not
  // judge another family on that train: UNKNOWN, never a pass.
  AuditReport cx5 = AuditNode(Node{.nic_fw = "16.28.4000"}, db, "2026-12-07");
  CHECK(StatusOf(cx5, "audit.advisory.NVIDIA-5562") == CheckStatus::kUnknown);
}

TEST_CASE("the shipped table judges the 2026 bulletins, firmware, containerd and kubelet",
          "[audit][refresh]") {
  AdvisoryDb db = Shipped();
  Node below{.driver = "580.126.09", .dcgm = "4.5.2", .ctk = "1.19.0", .nic_fw = "28.43.8001",
             .containerd = "containerd github.com/containerd/containerd v1.7.32 1a2b3c4",
             .kubelet = "Kubernetes v1.31.5", .dcgm_exporter = "4.5.2-4.8.1"};
  AuditReport low = AuditNode(below, db, "2026-12-07");
  for (const char* id : {"NVIDIA-5821", "NVIDIA-5857-dcgm", "NVIDIA-5850", "NVIDIA-5699",
                         "GO-2026-5475", "GO-2025-3465", "NVIDIA-5857-dcgm_exporter"}) {
    CHECK(StatusOf(low, absl::StrCat("audit.advisory.", id)) == CheckStatus::kFail);
  }
  CHECK(StatusOf(low, "audit.advisory.NVIDIA-5747") == CheckStatus::kPass);
  // An end-of-life branch that misses no fix only warns (lifecycle).
  AuditReport eol = AuditNode(Node{.driver = "535.309.01"}, db, "2026-07-15");
  const CheckResult* branch = testing::FindCheck(eol, "audit.driver.branch");
  REQUIRE(branch != nullptr);
  CHECK(branch->status == CheckStatus::kWarn);
  CHECK(branch->category == "lifecycle");
}

TEST_CASE("MLNX_OFED per release: below its fix fails, at it passes, DOCA-OFED is UNKNOWN",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed("2026-12-07");
  const Advisory* ofed = FindAdvisory(db, "NVIDIA-5654");
  REQUIRE(ofed != nullptr);
  CHECK(ofed->component == "ofed");
  CHECK(ofed->fixed == std::vector<std::string>{"23.10-5.1.4.0", "24.10-3.2.5.0", "5.8-7.0.6.1"});
  auto status = [&](const std::string& out) {
    return StatusOf(AuditNode(Node{.ofed = out}, db, "2026-12-07"), "audit.advisory.NVIDIA-5654");
  };
  CHECK(status("MLNX_OFED_LINUX-24.10-3.1.0.0:") == CheckStatus::kFail);
  CHECK(status("MLNX_OFED_LINUX-24.10-3.2.5.0:") == CheckStatus::kPass);
  CHECK(status("MLNX_OFED_LINUX-5.8-6.0.4.2:") == CheckStatus::kFail);
  CHECK(status("MLNX_OFED_LINUX-5.8-7.0.6.1:") == CheckStatus::kPass);
  CHECK(status("MLNX_OFED_LINUX-23.10-5.1.4.0:") == CheckStatus::kPass);
  AuditReport doca = AuditNode(Node{.ofed = "OFED-internal-25.01-0.6.0:"}, db, "2026-12-07");
  CHECK(StatusOf(doca, "audit.version.ofed") == CheckStatus::kUnknown);
}

TEST_CASE("the 2026 CUDA Toolkit and runc advisories: below fails, at the fix passes",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed("2026-12-07");
  auto status = [&](const Node& n, const std::string& id) {
    return StatusOf(AuditNode(n, db, "2026-12-07"), "audit.advisory." + id);
  };
  // NVIDIA-5755: every CUDA Toolkit before 13.1.
  CHECK(status(Node{.cuda = "12.9.1"}, "NVIDIA-5755") == CheckStatus::kFail);
  CHECK(status(Node{.cuda = "13.0.2"}, "NVIDIA-5755") == CheckStatus::kFail);
  CHECK(status(Node{.cuda = "13.1.0"}, "NVIDIA-5755") == CheckStatus::kPass);
  // GO-2026-5761: runc 1.3.6 / 1.4.3.
  CHECK(status(Node{.runc = "1.3.5"}, "GO-2026-5761") == CheckStatus::kFail);
  CHECK(status(Node{.runc = "1.3.6"}, "GO-2026-5761") == CheckStatus::kPass);
  CHECK(status(Node{.runc = "1.4.2"}, "GO-2026-5761") == CheckStatus::kFail);
  CHECK(status(Node{.runc = "1.4.3"}, "GO-2026-5761") == CheckStatus::kPass);
  CHECK(status(Node{.runc = "1.2.8"}, "GO-2026-5761") == CheckStatus::kFail);  // 1.2 got no fix
}

// The shipped entries that refresh made, as refresh makes them again from
// the kept documents (fixtures, and the older NVIDIA bulletins in
// nvidia-2022-2025/): same fixes, ranges, severity, date and CVEs.
void CheckSameAsShipped(const AdvisoryDb& refreshed, const AdvisoryDb& shipped, int* compared) {
  for (const auto& a : refreshed.advisories) {
    const Advisory* s = FindAdvisory(shipped, a.id);
    if (s == nullptr || (a.id.rfind("NVIDIA-", 0) != 0 && a.id.rfind("GO-", 0) != 0)) continue;
    if (a.id == "GO-2024-2491") continue;  // shipped as its GHSA, hand-written
    INFO(a.id);
    CHECK(s->component == a.component);
    CHECK(s->fixed == a.fixed);
    CHECK(s->severity == a.severity);
    CHECK(s->published == a.published);
    CHECK(s->cves == a.cves);
    ++*compared;
  }
}

TEST_CASE("the shipped table's refreshed entries come from the kept documents",
          "[audit][refresh]") {
  AdvisoryDb shipped = Shipped();
  int compared = 0;
  for (const std::string dir : {Documents(), Documents() + "/nvidia-2022-2025"}) {
    auto result = RefreshFromDirectory(dir, shipped, "2026-12-07");
    REQUIRE(result.ok());
    CHECK(result->skipped.empty());
    CheckSameAsShipped(result->db, shipped, &compared);
  }
  CHECK(compared >= 45);
}

TEST_CASE("containerd: each record's own range, introduced versions respected",
          "[audit][refresh]") {
  AdvisoryDb db = Shipped();
  auto status = [&](const std::string& v, const std::string& id) {
    Node n{.containerd = "containerd github.com/containerd/containerd v" + v + " 1a2b3c4"};
    return StatusOf(AuditNode(n, db, "2026-12-07"), "audit.advisory." + id);
  };
  CHECK(status("1.7.26", "GO-2025-3528") == CheckStatus::kFail);
  CHECK(status("1.7.27", "GO-2025-3528") == CheckStatus::kPass);
  CHECK(status("1.7.26", "GO-2026-5378") == CheckStatus::kPass);  // introduced in 1.7.27
  CHECK(status("1.7.27", "GO-2026-5378") == CheckStatus::kFail);
  CHECK(status("1.7.32", "GO-2026-5378") == CheckStatus::kPass);
  CHECK(status("2.0.4", "GO-2025-3701") == CheckStatus::kFail);
  CHECK(status("2.0.5", "GO-2025-3701") == CheckStatus::kPass);
  CHECK(status("1.7.33", "GO-2025-3701") == CheckStatus::kPass);  // 2.0.1 introduced it
  CHECK(status("2.1.0", "GO-2025-3699") == CheckStatus::kFail);
  CHECK(status("2.1.1", "GO-2025-3699") == CheckStatus::kPass);
  CHECK(status("1.7.28", "GO-2025-4108") == CheckStatus::kFail);
  CHECK(status("2.3.2", "GO-2026-5758") == CheckStatus::kPass);
  CHECK(status("2.3.1", "GO-2026-5758") == CheckStatus::kFail);
}

TEST_CASE("a component the table has no floor for is UNKNOWN, never a pass",
          "[audit][refresh]") {
  AdvisoryDb db = Shipped();
  AuditReport r = AuditNode(Node{.fabric_manager = "Fabric Manager version is : 580.95.05"}, db);
  const CheckResult* fm = testing::FindCheck(r, "audit.advisories.fabric_manager");
  REQUIRE(fm != nullptr);
  CHECK(fm->status == CheckStatus::kUnknown);
  CHECK(fm->not_measured);
  // No driver to compare with: the consistency rule cannot say either.
  CHECK(StatusOf(r, "audit.fabric_manager.driver_match") == CheckStatus::kUnknown);
}

TEST_CASE("a branch the advisory fixed nowhere fails, above every range passes",
          "[audit][refresh]") {
  AdvisoryDb db = Refreshed();
  // Docker 24.0 is affected (24.0.0 to 25.0.6) and got no 24.0 release.
  AuditReport r24 = AuditNode(Node{.docker = "24.0.9"}, db);
  CHECK(StatusOf(r24, "audit.advisory.GHSA-v23v-6jw2-98fq") == CheckStatus::kFail);
  CHECK(absl::StrContains(testing::FindCheck(r24, "audit.advisory.GHSA-v23v-6jw2-98fq")->why,
                          "has no fixed release"));
  CHECK(StatusOf(AuditNode(Node{.docker = "28.0.1"}, db), "audit.advisory.GHSA-v23v-6jw2-98fq") ==
        CheckStatus::kPass);
  CHECK(StatusOf(AuditNode(Node{.docker = "18.09.9"}, db),
                 "audit.advisory.GHSA-v23v-6jw2-98fq") == CheckStatus::kPass);
  // A range the source says has no fix fails even above every listed fix.
  Advisory a;
  a.id = "X-1";
  a.component = "runc";
  a.severity = "high";
  a.fixed = {"1.1.12"};
  a.affected = {">= 1.2.0, < 1.3.0 (no fix)"};
  ComponentInfo info{.id = "runc", .name = "runc"};
  ComponentVersion v{.component = "runc", .installed = true, .version = "1.2.5",
                     .source = "upstream binary"};
  CHECK(EvaluateAdvisory(a, info, v).kind == AdvisoryVerdict::kVulnerable);
  v.version = "1.3.0";
  CHECK(EvaluateAdvisory(a, info, v).kind == AdvisoryVerdict::kFixed);
}

TEST_CASE("a truncated document is named and skipped, the rest goes on", "[audit][refresh]") {
  TempDir dir;
  std::ifstream in(Documents() + "/nvidia-5659-container-toolkit.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  dir.Write("docs/5659-truncated.json", text.substr(0, text.size() / 2));
  dir.Write("docs/not-an-advisory.json", "{\"hello\": 1}");
  fs::copy_file(Documents() + "/GHSA-v23v-6jw2-98fq.json",
                dir.path() + "/docs/GHSA-v23v-6jw2-98fq.json");
  auto result = RefreshFromDirectory(dir.path() + "/docs", Shipped(), "2025-11-01");
  REQUIRE(result.ok());
  CHECK(result->parsed == std::vector<std::string>{"GHSA-v23v-6jw2-98fq.json"});
  REQUIRE(result->skipped.size() == 2);
  CHECK(absl::StartsWith(result->skipped[0], "5659-truncated.json: "));
  CHECK(absl::StartsWith(result->skipped[1], "not-an-advisory.json: "));
  CHECK(FindAdvisory(result->db, "GHSA-v23v-6jw2-98fq") != nullptr);

  // The command: exit 1, the file named on stderr, the table written.
  const std::string out = dir.path() + "/table.yaml";
  auto res = RunCommand({Bench(), "audit", "refresh", "--from", dir.path() + "/docs", "--out", out,
                         "--base", testing::ShippedAdvisories(), "--today", "2025-11-01"},
                        std::chrono::seconds(60));
  REQUIRE(res.ok());
  INFO(res->err);
  CHECK(res->exit.code == 1);
  CHECK(absl::StrContains(res->err, "5659-truncated.json"));
  auto written = LoadAdvisories(out);
  REQUIRE(written.ok());
  CHECK(written->generated == "2025-11-01");
  // Every document good: exit 0. No such directory: exit 2.
  fs::remove(dir.path() + "/docs/5659-truncated.json");
  fs::remove(dir.path() + "/docs/not-an-advisory.json");
  auto ok = RunCommand({Bench(), "audit", "refresh", "--from", dir.path() + "/docs", "--out", out,
                        "--base", testing::ShippedAdvisories()},
                       std::chrono::seconds(60));
  REQUIRE(ok.ok());
  CHECK(ok->exit.code == 0);
  auto missing = RunCommand({Bench(), "audit", "refresh", "--from", dir.path() + "/nope", "--out",
                             out, "--base", testing::ShippedAdvisories()},
                            std::chrono::seconds(60));
  REQUIRE(missing.ok());
  CHECK(missing->exit.code == 2);
}

TEST_CASE("the table's date: fresh is a fact, stale or undated a warning", "[audit][refresh]") {
  AdvisoryDb db = Refreshed("2025-09-01");
  JudgeOptions options;
  options.today = absl::CivilDay(2025, 9, 20);
  CheckResult fresh = CheckTableAge(db, options);
  CHECK(fresh.status == CheckStatus::kInfo);
  CHECK(fresh.category == "security");
  options.today = absl::CivilDay(2025, 10, 15);  // 44 days
  CheckResult stale = CheckTableAge(db, options);
  CHECK(stale.status == CheckStatus::kWarn);
  CHECK(absl::StrContains(stale.why, "44 days ago"));
  options.max_table_age_days = 60;
  CHECK(CheckTableAge(db, options).status == CheckStatus::kInfo);
  db.generated.clear();
  CHECK(CheckTableAge(db, options).status == CheckStatus::kWarn);

  // In the audit: the stale table's finding, and the date in the report.
  AuditReport r = AuditNode(Node{.ctk = "1.17.8"}, Refreshed("2025-09-01"), "2025-11-01");
  CHECK(StatusOf(r, "audit.advisories.age") == CheckStatus::kWarn);
  CHECK(r.advisories_generated == "2025-09-01");
}

TEST_CASE("within the grace period a miss warns and says when it fails", "[audit][refresh]") {
  AdvisoryDb db = Refreshed();
  Node n{.ctk = "1.17.7"};
  // NVIDIA-5659 was published on 2025-07-15.
  AuditReport early = AuditNode(n, db, "2025-07-20", 30);
  CHECK(StatusOf(early, "audit.advisory.NVIDIA-5659") == CheckStatus::kWarn);
  CHECK(absl::StrContains(testing::FindCheck(early, "audit.advisory.NVIDIA-5659")->why,
                          "until 2025-08-14"));
  CHECK(StatusOf(AuditNode(n, db, "2025-08-14", 30), "audit.advisory.NVIDIA-5659") ==
        CheckStatus::kFail);
  CHECK(StatusOf(AuditNode(n, db, "2025-07-20", 0), "audit.advisory.NVIDIA-5659") ==
        CheckStatus::kFail);
}

TEST_CASE("an unusable table leaves every version check UNKNOWN with the reason",
          "[audit][refresh]") {
  AdvisoryDb broken;
  broken.path = "broken.yaml";
  broken.error = "broken.yaml:4:3: missing 'url'";
  AuditReport r = AuditNode(Node{.driver = "570.133.07", .ctk = "1.17.8"}, broken);
  const CheckResult* ctk = testing::FindCheck(r, "audit.version.container_toolkit");
  REQUIRE(ctk != nullptr);
  CHECK(ctk->status == CheckStatus::kUnknown);
  CHECK(absl::StrContains(ctk->why, "missing 'url'"));
  CHECK(StatusOf(r, "audit.version.driver") == CheckStatus::kUnknown);
  CHECK(testing::FindCheck(r, "audit.driver.branch") == nullptr);
  for (const auto& c : r.checks) {
    if (!c.component.empty() && c.component != "kernel") CHECK(c.status != CheckStatus::kPass);
  }
}

TEST_CASE("the shipped table judges DCGM, CUDA and Docker and says how old it is",
          "[audit][refresh]") {
  AdvisoryDb db = Shipped();
  CHECK(db.generated == "2025-11-05");
  Node n{.dcgm = "3.1.6", .cuda = "12.8.1", .docker = "24.0.9"};
  AuditReport r = AuditNode(n, db, "2026-12-07");
  CHECK(StatusOf(r, "audit.advisory.NVIDIA-5453") == CheckStatus::kFail);
  CHECK(StatusOf(r, "audit.advisory.NVIDIA-5661") == CheckStatus::kWarn);  // medium
  CHECK(StatusOf(r, "audit.advisory.GHSA-v23v-6jw2-98fq") == CheckStatus::kFail);
  const CheckResult* age = testing::FindCheck(r, "audit.advisories.age");
  REQUIRE(age != nullptr);
  CHECK(age->status == CheckStatus::kWarn);
  CHECK(absl::StrContains(age->why, "2025-11-05"));
  Node fixed{.dcgm = "3.1.7", .cuda = "13.0.88", .docker = "27.1.1"};
  AuditReport ok = AuditNode(fixed, db, "2026-12-07");
  for (const char* id : {"NVIDIA-5453", "NVIDIA-5661", "GHSA-v23v-6jw2-98fq"}) {
    CHECK(StatusOf(ok, absl::StrCat("audit.advisory.", id)) == CheckStatus::kPass);
  }
}

// A kernel advisory fixed in Debian bookworm's 6.1.123-1 (a test table; the
// package versions are bookworm's linux-image-6.1.0-N-amd64 numbering).
AdvisoryDb KernelTable() {
  auto db = ParseAdvisories(
      "generated: 2025-11-01\n"
      "components: {kernel: {name: Linux kernel, scheme: debian}}\n"
      "advisories:\n"
      "  - {id: DSA-TEST-1, component: kernel, severity: high, published: 2025-01-01,\n"
      "     distributions: {debian/bookworm: 6.1.123-1}, url: https://security-tracker.debian.org/}\n",
      "kernel.yaml");
  REQUIRE(db.ok());
  return *db;
}

AuditReport AuditKernel(const std::string& running_pkg, const std::string& newest_pkg) {
  TempDir dir;
  dir.Write("bin/.keep", "");
  dir.Write("root/etc/os-release", "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n");
  dir.Write("root/proc/sys/kernel/osrelease", "6.1.0-28-amd64\n");
  dir.Write("root/lib/modules/6.1.0-28-amd64/modules.dep", "");
  dir.Write("root/lib/modules/6.1.0-30-amd64/modules.dep", "");
  dir.Write("root/var/lib/dpkg/status",
            absl::StrCat("Package: linux-image-6.1.0-28-amd64\nStatus: install ok installed\n"
                         "Version: ", running_pkg, "\n\n"
                         "Package: linux-image-6.1.0-30-amd64\nStatus: install ok installed\n"
                         "Version: ", newest_pkg, "\n\n"));
  testing::ScopedPath path(dir.path() + "/bin");
  AuditOptions options;
  options.root = dir.path() + "/root";
  options.today = "2025-11-01";
  options.command_timeout = std::chrono::milliseconds(5000);
  return RunAuditChecks(options, KernelTable());
}

TEST_CASE("a fixed kernel installed but not running fails like a missing fix",
          "[audit][refresh]") {
  AuditReport pending = AuditKernel("6.1.119-1", "6.1.124-1");
  CHECK(pending.kernel.running_package == "6.1.119-1");
  CHECK(pending.kernel.newest_package == "6.1.124-1");
  const CheckResult* c = testing::FindCheck(pending, "audit.advisory.DSA-TEST-1");
  REQUIRE(c != nullptr);
  CHECK(c->status == CheckStatus::kFail);
  CHECK(absl::StrContains(c->why, "installed but not running"));
  CHECK(absl::StrContains(c->remediation, "reboot"));

  const CheckResult* missing =
      testing::FindCheck(AuditKernel("6.1.119-1", "6.1.122-1"), "audit.advisory.DSA-TEST-1");
  CHECK(missing->status == CheckStatus::kFail);
  CHECK(absl::StrContains(missing->why, "no fixed kernel is installed"));

  CHECK(StatusOf(AuditKernel("6.1.124-1", "6.1.124-1"), "audit.advisory.DSA-TEST-1") ==
        CheckStatus::kPass);
}

}  // namespace
}  // namespace cmax::audit
