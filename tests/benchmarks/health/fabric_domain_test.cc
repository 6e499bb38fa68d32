// The NVLink fabric at rack scale, health side (benchmarks/health/
// fabric_domain.h, nvlink_platforms.h, CheckNvLinkPlatform) against the
// GB200 tray fixtures (tests/fixtures/health/gb200_*, NOTE.md) and the H100
// ones; the scorecard side is in nvlink_domain_test.cc.
#include "benchmarks/health/fabric_domain.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "benchmarks/health/file_gpu_probe.h"
#include "benchmarks/health/health_run.h"
#include "benchmarks/health/nvlink_checks.h"
#include "benchmarks/health/nvlink_platforms.h"
#include "benchmarks/health/nvml_loader.h"
#include "benchmarks/health/thresholds.h"
#include "benchmarks/health/xid_catalog.h"
#include "cmax/v1/inventory.pb.h"
#include "common/record_io.h"
#include "common/subprocess.h"
#include "google/protobuf/util/json_util.h"

namespace fs = std::filesystem;
using namespace cmax;
using namespace cmax::health;

namespace {

const fs::path kFixtures = fs::path(CMAX_SOURCE_DIR) / "tests/fixtures/health";
constexpr char kRack[] = "6c1f3e2a-9b4d-4e8f-a1c2-3d4e5f607182";

void Overlay(const fs::path& overlay, const fs::path& dst) {
  for (const auto& e : fs::recursive_directory_iterator(overlay)) {
    fs::path target = dst / fs::relative(e.path(), overlay);
    if (e.is_directory()) {
      fs::create_directories(target);
    } else {
      fs::create_directories(target.parent_path());
      fs::copy_file(e.path(), target, fs::copy_options::overwrite_existing);
    }
  }
}

// A temporary root: `base` (a whole root) with `overlays` on top; removed at the end.
struct Root {
  fs::path path;
  Root(const std::string& base, const std::vector<std::string>& overlays = {}) {
    char tmpl[] = "/tmp/cmax-fabric-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    Overlay(kFixtures / base, path);
    for (const auto& o : overlays) Overlay(kFixtures / o, path);
  }
  ~Root() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

HealthRun RunOn(const Root& root) {
  auto catalog = XidCatalog::LoadDefault();
  REQUIRE(catalog.ok());
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  HealthOptions opts;
  opts.thresholds = *t;
  opts.expect_gpus = 4;
  return RunHealthChecks(Sysroot(root.path.string()), *catalog, opts);
}

std::string Dump(const HealthResult& r) {
  std::string s;
  for (const auto& f : r.findings) {
    s += SeverityName(f.severity()) + " " + f.check_id() + " " + f.subject() + " " +
         f.title() + "\n";
  }
  return s;
}

const v1::Finding& Only(const HealthResult& r, const std::string& id) {
  auto found = r.FindingsWithId(id);
  INFO(Dump(r));
  REQUIRE(found.size() == 1);
  return *found[0];
}

// The measurement `metric` of GPU `gpu` ("" for node-wide ones).
const v1::Measurement* Metric(const HealthResult& r, const std::string& metric,
                              const std::string& gpu = "") {
  for (const auto& m : r.measurements) {
    if (m.metric() != metric) continue;
    auto it = m.labels().find("gpu");
    if ((it == m.labels().end() ? "" : it->second) == gpu) return &m;
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "a clean GB200 tray: each GPU in the rack's domain and clique, IMEX up, no findings",
    "[health][fabric]") {
  Root root("gb200_tray");
  HealthRun run = RunOn(root);
  INFO(Dump(run.result));
  CHECK(run.result.findings.empty());
  for (const char* gpu : {"0", "1", "2", "3"}) {
    INFO("GPU " << gpu);
    const v1::Measurement* m = Metric(run.result, "nvlink_fabric", gpu);
    REQUIRE(m != nullptr);
    CHECK(m->value() == 1);
    CHECK(m->labels().at("cluster_uuid") == kRack);
    CHECK(m->labels().at("clique_id") == "1");
    CHECK(m->labels().at("fabric_state") == "COMPLETED");
    CHECK(m->labels().at("nvlink_domain_gpus") == "72");
    CHECK(m->labels().at("platform") == "GB200 NVL72");
    REQUIRE(Metric(run.result, "nvlink_links_expected", gpu) != nullptr);
    CHECK(Metric(run.result, "nvlink_links_expected", gpu)->value() == 18);
    REQUIRE(Metric(run.result, "nvlink_link_speed_min", gpu) != nullptr);
    CHECK(Metric(run.result, "nvlink_link_speed_min", gpu)->value() == Approx(53.125));
  }
  REQUIRE(Metric(run.result, "imex_running") != nullptr);
  CHECK(Metric(run.result, "imex_running")->value() == 1);
  REQUIRE(Metric(run.result, "imex_domain_nodes") != nullptr);
  CHECK(Metric(run.result, "imex_domain_nodes")->value() == 18);
  CHECK(Metric(run.result, "nvswitch_count")->value() == 0);

  // The node's NVLink domain as inventory facts.
  auto inv = FileGpuProbe(root.path / "cmax-fixture/gpus.yaml").Probe();
  REQUIRE(inv.ok());
  auto facts = FabricInventoryFacts(*inv);
  CHECK(facts == std::map<std::string, std::string>{{"nvlink_domain", kRack},
                                                    {"nvlink_clique", "1"}});
}

TEST_CASE(
    "a faulty GB200 tray: unregistered GPU, odd clique, health mask bits, slow link",
    "[health][fabric]") {
  Root root("gb200_tray", {"gb200_tray_faults"});
  HealthRun run = RunOn(root);
  INFO(Dump(run.result));
  // GPU 1 never registered: the registration check names it, the domain
  // measurement says 0.
  const v1::Finding& reg = Only(run.result, "health.fabric_registration");
  CHECK(reg.subject() == "gpu:1");
  CHECK(reg.labels().at("nvswitch_local") == "false");
  CHECK(Metric(run.result, "nvlink_fabric", "1")->value() == 0);
  CHECK(Metric(run.result, "nvlink_fabric", "1")->labels().at("fabric_state") ==
        "NOT_STARTED");
  // GPU 3 is registered in another clique: the measurement carries it for
  // the domain judge (one tray alone cannot tell which clique is odd).
  CHECK(Metric(run.result, "nvlink_fabric", "3")->labels().at("clique_id") == "2");
  CHECK(Metric(run.result, "nvlink_fabric", "3")->value() == 1);

  // GPU 2: bandwidth degraded (warn) and a route unhealthy (fail), one finding each.
  auto mask = run.result.FindingsWithId("health.fabric_health");
  REQUIRE(mask.size() == 2);
  std::map<std::string, const v1::Finding*> by;
  for (const auto* f : mask) {
    CHECK(f->subject() == "gpu:2");
    CHECK(f->labels().at("cluster_uuid") == kRack);
    CHECK(absl::StrContains(f->detail(), "healthMask 0x199"));
    by[f->labels().at("condition")] = f;
  }
  REQUIRE(by.count("degraded_bandwidth"));
  REQUIRE(by.count("route_unhealthy"));
  CHECK(by["degraded_bandwidth"]->severity() == v1::SEVERITY_WARN);
  CHECK(by["route_unhealthy"]->severity() == v1::SEVERITY_FAIL);
  CHECK(absl::StrContains(by["route_unhealthy"]->title(), "GPU 2"));
  CHECK(absl::StrContains(by["route_unhealthy"]->action(), "NMX"));

  // GPU 0 NVLink 11 trained at NVLink4 speed.
  const v1::Finding& slow = Only(run.result, "health.nvlink_speed");
  CHECK(slow.subject() == "gpu:0");
  CHECK(slow.severity() == v1::SEVERITY_WARN);
  CHECK(slow.labels().at("nvlinks_slow") == "11");
  CHECK(absl::StrContains(slow.title(), "NVLink 11 below 53.125 GB/s"));
  CHECK(slow.evidence(0) == "link 11: 26.562 GB/s");
  CHECK(Metric(run.result, "nvlink_link_speed_min", "0")->value() == Approx(26.562));
  CHECK(run.result.FindingsWithId("health.nvlink_count").empty());
  CHECK(run.result.FindingsWithId("health.imex_down").empty());

  auto inv = FileGpuProbe(root.path / "cmax-fixture/gpus.yaml").Probe();
  REQUIRE(inv.ok());
  CHECK(FabricInventoryFacts(*inv).at("nvlink_clique") == "1,2");
}

TEST_CASE(
    "a multi-node NVLink tray without nvidia-imex fails with how to start it, and an "
    "unreadable node list warns",
    "[health][fabric]") {
  Root root("gb200_tray", {"gb200_imex_down"});
  HealthRun run = RunOn(root);
  const v1::Finding& f = Only(run.result, "health.imex_down");
  CHECK(f.severity() == v1::SEVERITY_FAIL);
  CHECK(f.subject() == "node");
  CHECK(f.labels().at("cluster_uuid") == kRack);
  CHECK(absl::StrContains(f.action(), "systemctl enable --now nvidia-imex"));
  CHECK(absl::StrContains(f.links(0),
                          "docs.nvidia.com/multi-node-nvlink-systems/imex-guide"));
  CHECK(f.evidence(0) == "/etc/nvidia-imex/nodes_config.cfg: 18 nodes");
  CHECK(Metric(run.result, "imex_running")->value() == 0);
  CHECK(run.result.FindingsWithId("health.imex_config").empty());

  Root no_config("gb200_tray");
  fs::remove(no_config.path / "etc/nvidia-imex/nodes_config.cfg");
  HealthRun run2 = RunOn(no_config);
  const v1::Finding& c = Only(run2.result, "health.imex_config");
  CHECK(c.severity() == v1::SEVERITY_WARN);
  CHECK(absl::StrContains(c.title(), "/etc/nvidia-imex/nodes_config.cfg"));
  CHECK(run2.result.FindingsWithId("health.imex_down").empty());
  CHECK(Metric(run2.result, "imex_domain_nodes") == nullptr);  // not read: not measured
}

TEST_CASE(
    "an H100 GPU with fewer NVLinks than its platform fails naming the missing link",
    "[health][fabric]") {
  Root root("healthy", {"h100_nvlink_missing"});
  HealthRun run = RunOn(root);
  const v1::Finding& f = Only(run.result, "health.nvlink_count");
  CHECK(f.severity() == v1::SEVERITY_FAIL);
  CHECK(f.subject() == "gpu:2");
  CHECK(f.labels().at("nvlinks_missing") == "17");
  CHECK(f.labels().at("platform") == "H100 SXM");
  CHECK(absl::StrContains(f.title(), "17 NVLinks, H100 SXM GPUs have 18"));
  // The single-node fabric: no IMEX expected, no domain finding.
  CHECK(run.result.FindingsWithId("health.imex_down").empty());
  CHECK(Metric(run.result, "imex_running") == nullptr);

  // A link that is there but down is nvlink_down's, not counted twice.
  Root down("healthy", {"nvlink_down"});
  HealthRun run2 = RunOn(down);
  CHECK(run2.result.FindingsWithId("health.nvlink_count").empty());
  CHECK(run2.result.FindingsWithId("health.nvlink_down").size() == 1);
}

TEST_CASE("health mask fields decode one by one, and the v1 query has no mask",
          "[health][fabric]") {
  GpuState g;
  g.index = 5;
  g.uuid = "GPU-x";
  g.name = "NVIDIA GB200";
  g.fabric_state = FabricState::kCompleted;
  g.fabric_status = 0;
  g.fabric_cluster_uuid = kRack;
  g.fabric_clique_id = 4;
  const ImexState imex{4242, std::vector<std::string>{"a", "b"}, ""};
  auto judge = [&](std::optional<uint32_t> mask) {
    g.fabric_health_mask = mask;
    HealthResult r;
    CheckFabricDomain({}, 1, GpuInventory{"", {g}}, imex, NvLinkPlatforms::Default(), &r);
    return r;
  };
  CHECK(judge(std::nullopt).findings.empty());
  CHECK(judge(0).findings.empty());      // every field NOT_SUPPORTED
  CHECK(judge(0x1aa).findings.empty());  // every field FALSE, configuration NONE
  // Route recovery (bits 2-3) and access timeout recovery (bits 6-7) TRUE: warnings.
  HealthResult rec = judge(0x2 | (1 << 2) | (0x2 << 4) | (1 << 6) | (1 << 8));
  REQUIRE(rec.findings.size() == 2);
  std::set<std::string> conditions;
  for (const auto& f : rec.findings) {
    CHECK(f.severity() == v1::SEVERITY_WARN);
    conditions.insert(f.labels().at("condition"));
  }
  CHECK(conditions == std::set<std::string>{"route_recovery", "access_timeout_recovery"});
  // Incorrect configuration 5 (insufficient NVLinks) fails.
  HealthResult cfg = judge(0xaa | (5 << 8));
  REQUIRE(cfg.findings.size() == 1);
  CHECK(cfg.findings[0].severity() == v1::SEVERITY_FAIL);
  CHECK(absl::StrContains(cfg.findings[0].title(), "insufficient NVLinks"));
}

TEST_CASE(
    "the NVLink fabric is not measured without NVML or a fabric query, never passed",
    "[health][fabric]") {
  const ImexState imex;
  HealthResult none;
  CheckFabricDomain(
      {}, 4, absl::UnavailableError("libnvidia-ml.so.1: cannot open shared object"), imex,
      NvLinkPlatforms::Default(), &none);
  const v1::Finding& f = Only(none, "health.nvlink_fabric_not_measured");
  CHECK(f.not_measured());
  CHECK(f.category() == "reliability");
  CHECK(absl::StrContains(f.detail(), "libnvidia-ml.so.1"));
  CHECK(none.measurements.empty());
  HealthResult cpu_only;  // no NVIDIA GPU on the bus: no fabric to join, nothing said
  CheckFabricDomain({}, 0, absl::UnavailableError("no NVML"), imex,
                    NvLinkPlatforms::Default(), &cpu_only);
  CHECK(cpu_only.findings.empty());

  // An A100-era GPU with NVLinks: the driver answers NOT_SUPPORTED (no state).
  GpuState old;
  old.index = 0;
  old.nvlinks.push_back({0, true, 0, 0, 0, 0});
  HealthResult unsupported;
  CheckFabricDomain({"0000:05:00.0"}, 1, GpuInventory{"", {old}}, imex,
                    NvLinkPlatforms::Default(), &unsupported);
  CHECK(Only(unsupported, "health.nvlink_fabric_not_measured").not_measured());
  CHECK(unsupported.WorstSeverity() == v1::SEVERITY_UNSPECIFIED);

  // A PCIe card without NVLink: nothing a fabric could join, nothing said.
  GpuState pcie;
  pcie.index = 0;
  HealthResult quiet;
  CheckFabricDomain({}, 1, GpuInventory{"", {pcie}}, imex, NvLinkPlatforms::Default(),
                    &quiet);
  CHECK(quiet.findings.empty());
  CHECK(FabricInventoryFacts(GpuInventory{"", {pcie}}).empty());
}

TEST_CASE("the platform table: GB200 before B200, PCIe / NVL / GH200 without expectation",
          "[health][fabric]") {
  const NvLinkPlatforms& t = NvLinkPlatforms::Default();
  auto name = [&](const std::string& gpu) {
    const NvLinkPlatform* p = t.Find(gpu);
    return p ? p->name : std::string("none");
  };
  CHECK(name("NVIDIA GB200") == "GB200 NVL72");
  CHECK(t.Find("NVIDIA GB200")->links == 18);
  CHECK(t.Find("NVIDIA GB200")->link_gbps == 53.125);
  CHECK(t.Find("NVIDIA GB200")->domain_gpus == 72);
  CHECK(name("NVIDIA B200") == "B200 SXM");
  CHECK(t.Find("NVIDIA B200")->domain_gpus == 0);
  CHECK(name("NVIDIA H100 80GB HBM3") == "H100 SXM");
  CHECK(t.Find("NVIDIA H100 80GB HBM3")->link_gbps == 26.5625);
  CHECK(name("NVIDIA H200") == "H200 SXM");
  CHECK(name("NVIDIA H100 PCIe") == "none");
  CHECK(name("NVIDIA H100 NVL") == "none");
  CHECK(name("NVIDIA GH200 480GB") == "none");
  CHECK(name("NVIDIA A100-SXM4-80GB") == "none");
  CHECK_FALSE(
      NvLinkPlatforms::Parse("platforms: [{name: x, links: 18}]").ok());  // no match
  CHECK_FALSE(NvLinkPlatforms::Parse("nothing: 1").ok());

  // The fixture file carries the new fabric fields.
  auto inv = FileGpuProbe::ParseYaml(
      "gpus: [{index: 0, fabric_state: COMPLETED, fabric_cluster_uuid: abc, "
      "fabric_clique_id: 3, "
      "fabric_health_mask: 426, nvlinks: [{link: 0, active: true, speed_mbps: 53125}]}]");
  REQUIRE(inv.ok());
  CHECK(inv->gpus[0].fabric_cluster_uuid == "abc");
  CHECK(inv->gpus[0].fabric_clique_id == 3u);
  CHECK(inv->gpus[0].fabric_health_mask == 426u);
  CHECK(inv->gpus[0].nvlinks[0].speed_mbps == 53125u);
}

TEST_CASE("hostcheck --inventory names the node's NVLink domain and clique",
          "[health][fabric][cli]") {
  Root tray("gb200_tray", {"gb200_tray_faults"});
  auto run = RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", "hostcheck",
                         "--inventory", "--root=" + tray.path.string()},
                        std::chrono::seconds(30));
  REQUIRE(run.ok());
  INFO(run->out << run->err);
  REQUIRE(run->exit.exited);
  CHECK(run->exit.code == 0);
  v1::Inventory inv;
  REQUIRE(google::protobuf::util::JsonStringToMessage(run->out, &inv).ok());
  CHECK(inv.gpu_count() == 4);
  REQUIRE(inv.facts().count("nvlink_domain"));
  CHECK(inv.facts().at("nvlink_domain") == kRack);
  CHECK(inv.facts().at("nvlink_clique") == "1,2");

  // An HGX H100 node (NVSwitches on its bus) is its own NVLink domain: not asked, no
  // fact.
  Root h100("healthy");
  run = RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", "hostcheck",
                    "--inventory", "--root=" + h100.path.string()},
                   std::chrono::seconds(30));
  REQUIRE(run.ok());
  v1::Inventory inv2;
  REQUIRE(google::protobuf::util::JsonStringToMessage(run->out, &inv2).ok());
  CHECK_FALSE(inv2.facts().count("nvlink_domain"));
}

TEST_CASE(
    "the NVML loader reads the fabric through the versioned query, v3 then v2, else v1",
    "[health][fabric][nvml]") {
  auto check_common = [](const GpuInventory& inv) {
    REQUIRE(inv.gpus.size() == 2);
    const GpuState& g = inv.gpus[0];
    CHECK(g.name == "NVIDIA GB200");
    CHECK(g.fabric_state == FabricState::kCompleted);
    CHECK(g.fabric_status == 0);
    CHECK(g.fabric_cluster_uuid == kRack);
    CHECK(g.fabric_clique_id == 1u);
    CHECK(inv.gpus[1].fabric_state == FabricState::kNotStarted);
    CHECK(IsZeroClusterUuid(inv.gpus[1].fabric_cluster_uuid));
  };
  unsetenv("CMAX_FAKE_NVML_FABRIC");
  auto v3 = NvmlGpuProbe(CMAX_FAKE_NVML).Probe();
  REQUIRE(v3.ok());
  check_common(*v3);
  CHECK(v3->gpus[0].errors.empty());
  CHECK(v3->gpus[0].fabric_health_mask == 0x1aau);
  REQUIRE(v3->gpus[0].nvlinks.size() == 18);
  CHECK(v3->gpus[0].nvlinks[0].speed_mbps == 53125u);
  CHECK(v3->gpus[0].nvlinks[11].speed_mbps == 26562u);
  // What health makes of it: the slow link, the domain facts.
  HealthResult r;
  CheckNvLinkPlatform(v3->gpus[0], NvLinkPlatforms::Default().Find(v3->gpus[0].name), &r);
  CHECK(Only(r, "health.nvlink_speed").labels().at("nvlinks_slow") == "11");
  CHECK(FabricInventoryFacts(*v3).at("nvlink_domain") == kRack);

  // A driver that knows only v2 answers v3 with ARGUMENT_VERSION_MISMATCH: asked again
  // with v2.
  setenv("CMAX_FAKE_NVML_FABRIC", "v2", 1);
  auto v2 = NvmlGpuProbe(CMAX_FAKE_NVML).Probe();
  unsetenv("CMAX_FAKE_NVML_FABRIC");
  REQUIRE(v2.ok());
  check_common(*v2);
  CHECK(v2->gpus[0].errors.empty());
  CHECK(v2->gpus[0].fabric_health_mask == 0x1aau);

  // Before r550 (no nvmlDeviceGetGpuFabricInfoV): the v1 struct, no health mask.
  auto v1 = NvmlGpuProbe(CMAX_FAKE_NVML_V1).Probe();
  REQUIRE(v1.ok());
  check_common(*v1);
  CHECK_FALSE(v1->gpus[0].fabric_health_mask.has_value());

  // hostcheck --inventory's probe: identity and fabric only.
  auto lean = NvmlGpuProbe(CMAX_FAKE_NVML, /*fabric_only=*/true).Probe();
  REQUIRE(lean.ok());
  check_common(*lean);
  CHECK(lean->gpus[0].nvlinks.empty());
  CHECK(lean->gpus[0].uuid == "GPU-fake-0");
}
