#include "benchmarks/health/ib_ports.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cmax::health {
namespace {

constexpr char kSysfsDoc[] =
    "https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband";

std::string Subject(const IbPort& p) { return absl::StrCat("port:", p.device, "/", p.port); }

std::map<std::string, std::string> Labels(const IbPort& p) {
  std::map<std::string, std::string> l = {{"device", p.device},
                                          {"port", absl::StrCat(p.port)},
                                          {"link_layer", p.link_layer}};
  if (!p.netdev.empty()) l["netdev"] = p.netdev;
  return l;
}

v1::Finding& PortFinding(HealthResult* r, const IbPort& p, const std::string& id,
                         v1::Severity sev, const std::string& category, const std::string& title,
                         const std::string& detail, const std::string& action) {
  v1::Finding& f = r->Find(id, sev, category, Subject(p), title, detail, action);
  for (const auto& [k, v] : Labels(p)) (*f.mutable_labels())[k] = v;
  f.add_links(kSysfsDoc);
  return f;
}

std::string Name(const IbPort& p) {
  return absl::StrCat(p.link_layer == "Ethernet" ? "RoCE port " : "InfiniBand port ", p.device,
                      "/", p.port, p.netdev.empty() ? "" : " (" + p.netdev + ")");
}

}  // namespace

const std::vector<IbCounterSpec>& IbErrorCounters() {
  // Widths of the IBTA PortCounters attribute fields, which the kernel's
  // counters/ files keep (drivers/infiniband/core/sysfs.c, PORT_PMA_ATTR).
  static const auto* kSpecs = new std::vector<IbCounterSpec>{
      {"symbol_error", 16, "minor link errors (bad symbols) on the physical lanes"},
      {"link_error_recovery", 8, "times the link recovered from errors"},
      {"link_downed", 8, "times the link went down (flaps)"},
      {"port_rcv_errors", 16, "received packets with errors"},
      {"port_rcv_remote_physical_errors", 16, "packets received marked bad by the sender"},
      {"port_rcv_switch_relay_errors", 16, "packets the switch could not relay"},
      {"port_xmit_discards", 16, "outbound packets discarded (port down or congestion)"},
      {"port_xmit_constraint_errors", 8, "packets not sent because of partition constraints"},
      {"port_rcv_constraint_errors", 8, "packets dropped by partition constraints"},
      {"local_link_integrity_errors", 4, "times the link's error threshold was exceeded"},
      {"excessive_buffer_overrun_errors", 4, "consecutive receive buffer overruns"},
      {"VL15_dropped", 16, "management packets dropped"},
  };
  return *kSpecs;
}

std::optional<double> ParseIbRate(const std::string& rate) {
  std::vector<absl::string_view> words = absl::StrSplit(rate, ' ', absl::SkipEmpty());
  double v = 0;
  if (words.empty() || !absl::SimpleAtod(words[0], &v)) return std::nullopt;
  return v;
}

std::vector<IbPort> ReadIbPorts(const Sysroot& root) {
  std::vector<IbPort> out;
  for (const std::string& dev : root.List("/sys/class/infiniband")) {
    std::string ports_dir = absl::StrCat("/sys/class/infiniband/", dev, "/ports");
    for (const std::string& n : root.List(ports_dir)) {
      IbPort p;
      p.device = dev;
      if (!absl::SimpleAtoi(n, &p.port)) continue;
      std::string dir = absl::StrCat(ports_dir, "/", n);
      p.state = root.ReadLine(dir + "/state").value_or("");
      p.phys_state = root.ReadLine(dir + "/phys_state").value_or("");
      p.rate = root.ReadLine(dir + "/rate").value_or("");
      p.rate_gbps = ParseIbRate(p.rate);
      p.link_layer = root.ReadLine(dir + "/link_layer").value_or("InfiniBand");
      if (p.link_layer == "Ethernet") {
        p.netdev = root.ReadLine(dir + "/gid_attrs/ndevs/0").value_or("");
        for (const std::string& i : root.List(dir + "/gid_attrs/types")) {
          if (root.ReadLine(dir + "/gid_attrs/types/" + i).value_or("") == "RoCE v2") {
            p.roce_v2 = true;
          }
        }
      }
      for (const std::string& c : root.List(dir + "/counters")) {
        uint64_t v = 0;
        auto line = root.ReadLine(dir + "/counters/" + c);
        if (line && absl::SimpleAtoi(*line, &v)) p.counters[c] = v;
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

void CheckIbPorts(const std::vector<IbPort>& ports, const HealthThresholds& t, HealthResult* r) {
  r->Measure("ib_port_count", static_cast<double>(ports.size()), "count", {});
  std::map<std::string, double> fastest;  // link layer -> rate
  for (const auto& p : ports) {
    if (p.rate_gbps && *p.rate_gbps > fastest[p.link_layer]) fastest[p.link_layer] = *p.rate_gbps;
  }
  for (const auto& p : ports) {
    auto labels = Labels(p);
    bool active = absl::StartsWith(p.state, "4:");
    bool link_up = absl::StartsWith(p.phys_state, "5:");
    r->Measure("ib_port_active", active && link_up ? 1 : 0, "bool", labels);
    if (p.rate_gbps) r->Measure("ib_port_rate_gbps", *p.rate_gbps, "Gb/s", labels);
    if (!active || !link_up) {
      v1::Finding& f = PortFinding(
          r, p, "health.ib_port_down", v1::SEVERITY_FAIL, "networking",
          absl::StrCat(Name(p), " is down: state '", p.state, "', physical state '", p.phys_state,
                       "'"),
          "expected state '4: ACTIVE' and physical state '5: LinkUp'",
          active ? "check the subnet manager: the link is up but the port is not active"
                 : "check the cable and switch port: reseat or replace the cable or transceiver; "
                   "drain the node until the link is up");
      f.add_evidence(absl::StrCat("state: ", p.state));
      f.add_evidence(absl::StrCat("phys_state: ", p.phys_state));
      f.add_evidence(absl::StrCat("rate: ", p.rate));
      continue;  // rate and counters of a down port say nothing new
    }
    if (p.link_layer == "Ethernet") {
      PortFinding(r, p, "health.roce_port", v1::SEVERITY_INFO, "networking",
                  absl::StrCat(Name(p), ": RDMA over Ethernet",
                               p.roce_v2 ? " (RoCE v2)" : ""),
                  "checked like an InfiniBand port (state, rate, error counters); isolation "
                  "on RoCE comes from VLANs, not P_Keys (see the audit suite)",
                  "none");
    }
    double expect = t.expect_rate_gbps;
    if (p.rate_gbps && expect > 0 && *p.rate_gbps < expect) {
      PortFinding(r, p, "health.ib_port_rate", v1::SEVERITY_FAIL, "networking",
                  absl::StrCat(Name(p), " runs at ", p.rate, ", expected ", expect, " Gb/s"),
                  "a degraded link (fewer lanes or a lower speed) cuts the node's bandwidth",
                  "check the cable and switch port: reseat or replace the cable or transceiver, "
                  "check the switch port's configured speed");
    } else if (p.rate_gbps && expect <= 0 && *p.rate_gbps < fastest[p.link_layer]) {
      PortFinding(r, p, "health.ib_port_rate", v1::SEVERITY_WARN, "networking",
                  absl::StrCat(Name(p), " runs at ", p.rate, ", slower than the node's fastest ",
                               p.link_layer, " port (", fastest[p.link_layer], " Gb/s)"),
                  "no rate expectation given (--expect-ib-rate); judged against the node's ports",
                  "check the cable and switch port, or give the expected rate");
    }
    for (const auto& spec : IbErrorCounters()) {
      auto it = p.counters.find(spec.name);
      if (it == p.counters.end()) continue;
      uint64_t v = it->second;
      uint64_t max = (uint64_t{1} << spec.bits) - 1;
      auto cl = labels;
      cl["counter"] = spec.name;
      cl["width_bits"] = absl::StrCat(spec.bits);
      r->Measure("ib_counter", static_cast<double>(v), "count", cl);
      if (v >= max) {
        v1::Finding& f = PortFinding(
            r, p, "health.ib_counter_saturated", v1::SEVERITY_WARN, "reliability",
            absl::StrCat(Name(p), ": ", spec.name, " is saturated at ", v),
            absl::StrCat(spec.meaning, "; the counter is ", spec.bits,
                         " bits wide and stops at its maximum, so the true count is unknown "
                         "and changes during the run cannot be seen"),
            "check the cable and switch port for a bad link; clear the counters "
            "(perfquery -x -R) and rerun to measure the current rate");
        (*f.mutable_labels())["counter"] = spec.name;
        f.add_evidence(absl::StrCat("counters/", spec.name, " = ", v, " (max ", max, ")"));
      } else if (static_cast<int64_t>(v) >= t.error_counter_warn) {
        v1::Finding& f = PortFinding(
            r, p, "health.ib_counter", v1::SEVERITY_WARN, "reliability",
            absl::StrCat(Name(p), ": ", spec.name, " = ", v), spec.meaning,
            "check the cable and switch port if the count grows during the run");
        (*f.mutable_labels())["counter"] = spec.name;
        f.add_evidence(absl::StrCat("counters/", spec.name, " = ", v));
      }
    }
  }
}

}  // namespace cmax::health
