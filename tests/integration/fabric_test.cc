// NVLink domains end to end: two agents whose roots are GB200 NVL72 compute
// trays (tests/fixtures/health/gb200_tray, one with gb200_tray_faults on top)
// run health; the coordinator's scorecard groups their GPUs into the rack's
// NVLink domain, names the GPU in the odd clique on its node, warns that the
// domain is short of NVL72's 72 GPUs, and each node's inventory carries the
// nvlink_domain fact from hostcheck --inventory.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"

using cmax::testing::CategoryOf;
using cmax::testing::Cluster;
using cmax::testing::ClusterOptions;
using cmax::testing::Export;
using cmax::testing::ReportCard;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr char kRack[] = "6c1f3e2a-9b4d-4e8f-a1c2-3d4e5f607182";

// A tray root made of fixtures, in a temporary directory removed at the end.
struct TrayRoot {
  fs::path path;
  explicit TrayRoot(const std::vector<std::string>& layers) {
    char tmpl[] = "/tmp/cmax-fa1-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
    for (const auto& layer : layers) {
      fs::copy(fs::path(Cluster::SourceDir()) / "tests/fixtures/health" / layer, path,
               fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    }
  }
  ~TrayRoot() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE(
    "health on two NVL72 trays: one NVLink domain, the odd clique named on its node",
    "[integration][fabric]") {
  TrayRoot clean({"gb200_tray"});
  TrayRoot faulty({"gb200_tray", "gb200_tray_faults"});
  ClusterOptions o;
  o.agents = 2;
  o.agent_roots = {clean.path.string(), faulty.path.string()};
  Cluster c("fa1", o);
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  std::string plan = c.WritePlan("fabric", "name: fabric\nsuites:\n  - suite: health\n");
  auto run = c.Ctl({"run", "--plan", plan}, 120s);
  INFO(run.out << run.err);
  CHECK(run.exit.code == 1);  // node-1 fails
  const std::string run_id = Cluster::RunIdFrom(run.out);
  REQUIRE_FALSE(run_id.empty());

  int fabric = 0;
  for (const auto& rec : Export(c, run_id)) {
    if (rec.record().has_measurement() &&
        rec.record().measurement().metric() == "nvlink_fabric") {
      ++fabric;
    }
  }
  CHECK(fabric == 8);

  const cmax::v1::Scorecard card = ReportCard(c, run_id);
  const cmax::v1::RuleResult* odd = nullptr;
  const cmax::v1::RuleResult* domain = nullptr;
  for (const auto& r : CategoryOf(card, "Reliability").rules()) {
    if (r.rule_id() == "nvlink.domain_clique") odd = &r;
    if (r.rule_id() == "nvlink.domain") domain = &r;
  }
  REQUIRE(odd != nullptr);
  CHECK(odd->outcome() == "fail");
  CHECK(odd->node() == "node-1");
  CHECK(odd->message() ==
        absl::StrCat("node-1 GPU 3 in clique 2, the other 6 GPUs of domain ", kRack,
                     " in clique 1"));
  REQUIRE(domain != nullptr);
  CHECK(domain->outcome() == "warn");
  CHECK(domain->message() ==
        absl::StrCat("domain ", kRack,
                     ": 7 GPUs registered on 2 nodes (1 more not registered), "
                     "2 cliques; the platform's domain has 72 GPUs"));
  for (const auto& v : card.nodes()) {
    INFO(v.node());
    REQUIRE(v.inventory().count("nvlink_domain"));
    CHECK(v.inventory().at("nvlink_domain") == kRack);
    bool clique_reason = false;
    for (const auto& reason : v.reasons()) {
      clique_reason = clique_reason || absl::StrContains(reason, "in clique 2");
    }
    CHECK(clique_reason == (v.node() == "node-1"));
    if (v.node() == "node-1") CHECK(v.verdict() == "fail");
  }
}
