#include "benchmarks/health/xid_checks.h"

#include <cmath>

#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::health {
namespace {

constexpr size_t kEvidenceLines = 5;

bool CausedByCmax(const XidEvent& e, const XidContext& c, std::string* why) {
  if (e.sxid || (e.code != 43 && e.code != 45)) return false;
  for (const auto& k : c.kills) {
    if (e.pid > 0 && k.pid == e.pid) {
      *why = absl::StrCat("cmax killed pid ", k.pid, " (", "/run/cmax/kills)");
      return true;
    }
  }
  if (!c.boot_unix_ns || e.mono_s < 0) return false;
  int64_t xid_ns = *c.boot_unix_ns + static_cast<int64_t>(std::llround(e.mono_s * 1e9));
  for (const auto& k : c.kills) {
    double dt = static_cast<double>(xid_ns - k.unix_ns) / 1e9;
    // btime has one-second resolution: allow the Xid to read up to 2 s early.
    if (dt >= -2 && dt <= kKillWindowS) {
      *why = absl::StrCat("cmax killed pid ", k.pid, " ", absl::StrFormat("%.1f", dt),
                          " s before this Xid (/run/cmax/kills)");
      return true;
    }
  }
  return false;
}

struct Group {
  std::vector<const XidEvent*> events;
  bool by_cmax = true;
  std::string cmax_reason;
};

}  // namespace

std::vector<KillRecord> ReadKills(const Sysroot& root) {
  std::vector<KillRecord> out;
  auto text = root.Read("/run/cmax/kills");
  if (!text.ok()) return out;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    KillRecord k;
    if (f.size() != 2 || !absl::SimpleAtoi(f[0], &k.unix_ns) || !absl::SimpleAtoi(f[1], &k.pid)) {
      continue;
    }
    out.push_back(k);
  }
  return out;
}

std::optional<int64_t> ReadBootTimeNs(const Sysroot& root) {
  auto text = root.Read("/proc/stat");
  if (!text.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, "btime ")) {
      int64_t s = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &s)) return s * 1000000000LL;
    }
  }
  return std::nullopt;
}

void CheckXids(const std::vector<XidEvent>& events, const XidCatalog& catalog,
               const XidContext& c, HealthResult* r) {
  std::map<std::string, int> index_of;
  for (const auto& g : c.gpus) index_of[g.pci] = g.index;

  int xids = 0, sxids = 0;
  // (sxid, code, pci) -> events
  std::map<std::tuple<bool, int, std::string>, Group> groups;
  for (const auto& e : events) {
    (e.sxid ? sxids : xids)++;
    Group& g = groups[{e.sxid, e.code, e.pci}];
    g.events.push_back(&e);
    std::string why;
    if (CausedByCmax(e, c, &why)) {
      if (g.cmax_reason.empty()) g.cmax_reason = why;
    } else {
      g.by_cmax = false;
    }
  }
  std::map<std::string, std::string> base = {{"source", c.source}};
  r->Measure("xid_events_total", xids, "count", base);
  r->Measure("sxid_events_total", sxids, "count", base);

  for (const auto& [key, g] : groups) {
    const auto& [sxid, code, pci] = key;
    const XidEvent& first = *g.events.front();
    XidInfo info = sxid ? catalog.ForSxid(code, first.fatal) : catalog.Lookup(code);
    if (sxid) {
      for (const XidEvent* e : g.events) {
        if (e->fatal) info = catalog.ForSxid(code, true);
      }
    }
    std::map<std::string, std::string> labels = {{"xid", absl::StrCat(code)},
                                                 {"source", c.source}};
    std::string subject = "node";
    std::string who = pci.empty() ? "an unnamed device" : "PCI " + pci;
    if (!pci.empty()) labels["pci_bus_id"] = pci;
    if (sxid) {
      labels["kind"] = "sxid";
      subject = pci.empty() ? "nvswitch" : "nvswitch:" + pci;
      who = "NVSwitch " + (pci.empty() ? std::string("?") : pci);
    } else if (auto it = index_of.find(pci); it != index_of.end()) {
      labels["gpu"] = absl::StrCat(it->second);
      subject = absl::StrCat("gpu:", it->second);
      who = absl::StrCat("GPU ", it->second, " (PCI ", pci, ")");
    }
    if (auto u = c.uuids.find(pci); u != c.uuids.end() && !sxid) {
      labels["uuid"] = u->second;
      who += " " + u->second;
    }
    r->Measure(sxid ? "sxid_count" : "xid_count", static_cast<double>(g.events.size()), "count",
               labels);

    bool by_cmax = g.by_cmax && !g.cmax_reason.empty();
    v1::Severity sev = by_cmax ? v1::SEVERITY_INFO : info.severity;
    std::string id = by_cmax ? "health.xid_cmax_kill" : (sxid ? "health.sxid" : "health.xid");
    std::string title = absl::StrCat(sxid ? "SXid " : "Xid ", code, " (", info.name, ") on ", who,
                                     g.events.size() > 1
                                         ? absl::StrCat(", ", g.events.size(), " times")
                                         : "",
                                     by_cmax ? ", caused by cmax stopping a task" : "");
    std::string detail =
        by_cmax ? g.cmax_reason
                : absl::StrCat("since boot, from the kernel log (", c.source, ")");
    std::string action = by_cmax ? "none: cmax stopped the task that used the GPU"
                                 : absl::StrCat(ActionWords(info.action), ": ", info.advice);
    v1::Finding& f = r->Find(id, sev, "reliability", subject, title, detail, action);
    for (const auto& [k, v] : labels) (*f.mutable_labels())[k] = v;
    (*f.mutable_labels())["action"] = info.action;
    if (!info.source.empty()) f.add_links(info.source);
    for (size_t i = 0; i < g.events.size() && i < kEvidenceLines; ++i) {
      const XidEvent* e = g.events[i];
      f.add_evidence(e->mono_s >= 0 ? absl::StrFormat("[%12.6f] %s", e->mono_s, e->text)
                                    : e->text);
    }
    if (g.events.size() > kEvidenceLines) {
      f.add_evidence(absl::StrCat("... and ", g.events.size() - kEvidenceLines, " more"));
    }
  }
}

}  // namespace cmax::health
