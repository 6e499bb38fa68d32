#include "benchmarks/audit/ib_isolation.h"

#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace cmax::audit {
namespace {

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

bool ParseHex(std::string s, uint64_t* out) {
  s = Trim(s);
  if (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) s = s.substr(2);
  if (s.empty()) return false;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 16);
  if (end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

std::string Hex4(uint64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04llx", static_cast<unsigned long long>(v));
  return buf;
}

CheckResult Port(const std::string& id, const std::string& dev, const std::string& port) {
  CheckResult r;
  r.check_id = id;
  r.category = "security";
  r.subject = absl::StrCat("port:", dev, "/", port);
  return r;
}

CheckResult PkeyCheck(const Sysroot& root, const std::string& base, const std::string& dev,
                      const std::string& port, Tenancy tenancy) {
  CheckResult r = Port("audit.ib.pkey", dev, port);
  r.title = absl::StrCat("P_Key partitioning on ", dev, "/", port);
  std::vector<uint64_t> keys;
  for (const auto& idx : root.List(base + "/pkeys")) {
    uint64_t v = 0;
    auto line = root.ReadLine(absl::StrCat(base, "/pkeys/", idx));
    if (line && ParseHex(*line, &v) && (v & 0x7fff) != 0) keys.push_back(v);
  }
  r.evidence.push_back(absl::StrCat(root.Path(base + "/pkeys"), ": ", keys.size(), " keys"));
  std::vector<std::string> shown;
  for (uint64_t k : keys) shown.push_back(Hex4(k));
  r.found = shown.empty() ? "empty P_Key table" : absl::StrJoin(shown, ", ");
  if (keys.empty()) {
    r.status = CheckStatus::kUnknown;
    r.why = "no readable P_Key entries";
    return r;
  }
  bool only_default = true;
  for (uint64_t k : keys) {
    if ((k & 0x7fff) != 0x7fff) only_default = false;
  }
  if (!only_default) {
    r.status = CheckStatus::kPass;
    r.why = "the port is a member of partitions other than the default";
    return r;
  }
  r.required = "a tenant partition key besides the default 0xffff";
  std::string why =
      "only the default partition key (full membership): every node on the fabric can reach "
      "this port, tenants are not partitioned";
  switch (tenancy) {
    case Tenancy::kShared:
      r.status = CheckStatus::kFail;
      r.why = why + " on a fabric shared between tenants";
      break;
    case Tenancy::kSingle:
      r.status = CheckStatus::kInfo;
      r.why = why + " (acceptable: the cluster has a single tenant)";
      break;
    case Tenancy::kUnspecified:
      r.status = CheckStatus::kWarn;
      r.why = why + " (fails with --tenancy shared)";
      break;
  }
  r.remediation = "Give each tenant its own P_Key (partitions.conf on the SM or UFM) and "
                  "limited default membership.";
  return r;
}

bool LooksLikeDrop(const std::string& text) {
  std::string t = absl::AsciiStrToLower(text);
  return absl::StrContains(t, "timed out") || absl::StrContains(t, "timeout") ||
         absl::StrContains(t, "recv failed");
}

bool LooksLikeNoPermission(const std::string& text) {
  std::string t = absl::AsciiStrToLower(text);
  return absl::StrContains(t, "permission denied") || absl::StrContains(t, "can't open umad") ||
         absl::StrContains(t, "umad_open_port") || absl::StrContains(t, "operation not permitted") ||
         absl::StrContains(t, "qp0") || absl::StrContains(t, "no such device");
}

CheckResult MkeyCheck(const Sysroot& root, const std::string& base, const std::string& dev,
                      const std::string& port, const CommandRunner& commands) {
  CheckResult r = Port("audit.ib.mkey", dev, port);
  r.title = absl::StrCat("M_Key protection on ", dev, "/", port);
  r.required = "ProtectBits >= 2 (UFM's recommendation) and an M_Key set";
  auto state = root.ReadLine(base + "/state");
  if (state && !absl::StrContains(*state, "ACTIVE")) {
    r.status = CheckStatus::kSkipped;
    r.why = absl::StrCat("port state is ", *state);
    return r;
  }
  std::string lid = "0";
  if (auto l = root.ReadLine(base + "/lid")) {
    uint64_t v = 0;
    if (ParseHex(*l, &v)) lid = absl::StrCat(v);
  }
  if (commands.Find("smpquery").empty()) {
    r.status = CheckStatus::kUnknown;
    r.why = "smpquery (infiniband-diags) is not installed: M_Key not measured";
    r.not_measured = true;
    return r;
  }
  std::vector<std::string> argv = {"smpquery", "-C", dev, "-P", port, "portinfo", lid, port};
  r.evidence.push_back(absl::StrJoin(argv, " "));
  auto res = commands.Run(argv);
  if (!res.ok()) {
    r.status = CheckStatus::kUnknown;
    r.why = std::string(res.status().message());
    r.not_measured = true;
    return r;
  }
  std::string text = res->out + "\n" + res->err;
  PortInfoKeys keys = ParseSmpPortInfo(res->out);
  bool ok = res->exit.exited && res->exit.code == 0 && !res->timed_out;
  if (ok && keys.has_protect_bits) {
    r.found = absl::StrCat("ProtectBits ", keys.protect_bits, ", Mkey ",
                           keys.has_mkey ? absl::StrCat("0x", absl::Hex(keys.mkey, absl::kZeroPad16))
                                         : "not shown");
    r.evidence.push_back(absl::StrCat("smpquery: ", r.found));
    if (keys.protect_bits == 0) {
      r.status = CheckStatus::kFail;
      r.why = keys.has_mkey && keys.mkey == 0
                  ? "no M_Key and no protection: any node can reconfigure this port (and the SM's view of it)"
                  : "M_Key set but ProtectBits 0: anyone can read the key and reconfigure the port";
      r.remediation = "Set m_key and m_key_protection_level 2 in opensm.conf (or UFM), then "
                      "restart the SM.";
    } else if (keys.protect_bits == 1) {
      r.status = CheckStatus::kWarn;
      r.why = "ProtectBits 1 protects Set only; the key can still be read (UFM recommends 2)";
      r.remediation = "Raise m_key_protection_level to 2.";
    } else {
      r.status = CheckStatus::kPass;
      r.why = absl::StrCat("ProtectBits ", keys.protect_bits, ": the M_Key is hidden and enforced");
    }
    return r;
  }
  std::string tail = text.size() > 300 ? text.substr(text.size() - 300) : text;
  r.evidence.push_back(absl::StrCat("smpquery ", res->exit.Describe(), ": ", Trim(tail)));
  if (LooksLikeNoPermission(text)) {
    r.status = CheckStatus::kUnknown;
    r.why = "smpquery was refused (no umad permission, or a VF without QP0): proves nothing";
    r.not_measured = true;
    return r;
  }
  if (res->timed_out || LooksLikeDrop(text)) {
    // A level-2 port silently drops a Get with the wrong key; that means
    // "protected" only if a control query to the same port answers.
    std::vector<std::string> ctl = {"smpquery", "-C", dev, "-P", port, "nodeinfo", lid};
    auto node = commands.Run(ctl);
    r.evidence.push_back(absl::StrJoin(ctl, " "));
    if (node.ok() && node->exit.exited && node->exit.code == 0 &&
        absl::StrContains(node->out, "NodeType")) {
      r.status = CheckStatus::kPass;
      r.found = "PortInfo dropped, NodeInfo answered";
      r.why = "the PortInfo query was dropped while NodeInfo to the same port answered: "
              "M_Key protection (level 2 or higher) is in force";
      return r;
    }
    r.status = CheckStatus::kUnknown;
    r.found = "no answer";
    r.why = "PortInfo got no answer and neither did the NodeInfo control query: not measured";
    r.not_measured = true;
    return r;
  }
  r.status = CheckStatus::kUnknown;
  r.why = absl::StrCat("smpquery failed (", res->exit.Describe(), ")");
  return r;
}

CheckResult RoceCheck(const Sysroot& root, const std::string& base, const std::string& dev,
                      const std::string& port) {
  CheckResult r = Port("audit.roce.gids", dev, port);
  r.status = CheckStatus::kInfo;
  r.title = absl::StrCat("RoCE GIDs on ", dev, "/", port);
  std::set<std::string> types, ndevs, vlans;
  for (const auto& idx : root.List(base + "/gid_attrs/types")) {
    auto type = root.ReadLine(absl::StrCat(base, "/gid_attrs/types/", idx));
    if (!type || type->empty()) continue;  // unused entries do not read
    types.insert(*type);
    auto ndev = root.ReadLine(absl::StrCat(base, "/gid_attrs/ndevs/", idx));
    if (!ndev || ndev->empty()) continue;
    ndevs.insert(*ndev);
    if (ndev->find('.') != std::string::npos || root.Exists("/proc/net/vlan/" + *ndev)) {
      vlans.insert(*ndev);
    }
  }
  r.found = absl::StrCat("GID types ", types.empty() ? "none" : absl::StrJoin(types, ", "),
                         "; netdevs ", ndevs.empty() ? "none" : absl::StrJoin(ndevs, ", "));
  r.why = vlans.empty()
              ? "no RoCE GID sits on a VLAN device: tenant isolation, if any, lives in the "
                "switch or DPU"
              : absl::StrCat("RoCE GIDs on VLAN devices ", absl::StrJoin(vlans, ", "),
                             ": tenants may be separated by VLAN");
  return r;
}

std::vector<CheckResult> OpenSmConf(const Sysroot& root) {
  std::vector<CheckResult> out;
  const std::string path = "/etc/opensm/opensm.conf";
  auto text = root.Read(path);
  CheckResult r;
  r.check_id = "audit.ib.opensm_keys";
  r.category = "security";
  r.subject = absl::StrCat("path:", path);
  r.title = "OpenSM management keys";
  if (!text.ok()) {
    r.status = absl::IsNotFound(text.status()) ? CheckStatus::kSkipped : CheckStatus::kUnknown;
    r.why = absl::IsNotFound(text.status())
                ? "no opensm.conf on this node (the SM may run elsewhere, or in UFM)"
                : std::string(text.status().message());
    r.not_measured = true;  // SKIPPED, or unreadable: the keys were not seen
    out.push_back(r);
    return out;
  }
  std::map<std::string, std::string> kv;
  int lineno = 0;
  std::map<std::string, int> where;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++lineno;
    std::string l = Trim(line);
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> parts = absl::StrSplit(l, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (parts.size() < 2) continue;
    kv[parts[0]] = parts[1];
    where[parts[0]] = lineno;
  }
  std::vector<std::string> problems;
  std::vector<std::string> found;
  bool fail = false;
  auto key_value = [&](const std::string& k, uint64_t* v) {
    auto it = kv.find(k);
    if (it == kv.end()) return false;
    found.push_back(absl::StrCat(k, " ", it->second, " (line ", where[k], ")"));
    return ParseHex(it->second, v);
  };
  uint64_t mkey = 0, smkey = 0, sakey = 0;
  if (!key_value("m_key", &mkey) || mkey == 0) {
    problems.push_back("m_key is 0 or unset: the SM assigns no M_Keys");
    fail = true;
  }
  auto lvl = kv.find("m_key_protection_level");
  int level = 0;
  if (lvl != kv.end()) {
    found.push_back(absl::StrCat("m_key_protection_level ", lvl->second, " (line ",
                                 where["m_key_protection_level"], ")"));
    if (!absl::SimpleAtoi(lvl->second, &level)) level = 0;
  }
  if (level == 0) {
    problems.push_back("m_key_protection_level 0");
    fail = true;
  } else if (level < 2) {
    problems.push_back(absl::StrCat("m_key_protection_level ", level, " (UFM recommends 2)"));
  }
  // OpenSM's default SM_Key and SA_Key are 0x1: a well-known value.
  if (!key_value("sm_key", &smkey) || smkey <= 1) problems.push_back("sm_key is the default (0x1)");
  if (!key_value("sa_key", &sakey) || sakey <= 1) problems.push_back("sa_key is the default (0x1)");
  r.found = found.empty() ? "no key settings" : absl::StrJoin(found, "; ");
  r.evidence.push_back(root.Path(path));
  r.required = "m_key set, m_key_protection_level 2, non-default sm_key and sa_key";
  if (problems.empty()) {
    r.status = CheckStatus::kPass;
    r.why = "management keys set and M_Key protection level 2 or higher";
  } else {
    r.status = fail ? CheckStatus::kFail : CheckStatus::kWarn;
    r.why = absl::StrJoin(problems, "; ");
    r.remediation = "Set m_key, m_key_protection_level 2, sm_key and sa_key to secret values "
                    "in opensm.conf and restart OpenSM.";
  }
  out.push_back(r);
  return out;
}

}  // namespace

PortInfoKeys ParseSmpPortInfo(const std::string& text) {
  PortInfoKeys k;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    std::string key = Trim(line.substr(0, colon));
    std::string value(line.substr(colon + 1));
    size_t start = value.find_first_not_of('.');
    value = Trim(start == std::string::npos ? "" : value.substr(start));
    if (key == "Mkey") {
      uint64_t v = 0;
      if (ParseHex(value, &v)) {
        k.has_mkey = true;
        k.mkey = v;
      }
    } else if (key == "ProtectBits") {
      int v = 0;
      if (absl::SimpleAtoi(value, &v)) {
        k.has_protect_bits = true;
        k.protect_bits = v;
      }
    } else if (key == "MkeyLeasePeriod") {
      int v = 0;
      if (absl::SimpleAtoi(value, &v)) k.lease_period = v;
    }
  }
  return k;
}

std::vector<CheckResult> CheckInfiniband(const Sysroot& root, Tenancy tenancy,
                                         const CommandRunner& commands) {
  std::vector<CheckResult> out;
  bool any_ib = false;
  for (const auto& dev : root.List("/sys/class/infiniband")) {
    for (const auto& port : root.List(absl::StrCat("/sys/class/infiniband/", dev, "/ports"))) {
      std::string base = absl::StrCat("/sys/class/infiniband/", dev, "/ports/", port);
      std::string layer = root.ReadLine(base + "/link_layer").value_or("");
      if (layer == "InfiniBand") {
        any_ib = true;
        out.push_back(PkeyCheck(root, base, dev, port, tenancy));
        out.push_back(MkeyCheck(root, base, dev, port, commands));
      } else if (layer == "Ethernet") {
        out.push_back(RoceCheck(root, base, dev, port));
      }
    }
  }
  if (any_ib) {
    for (auto& r : OpenSmConf(root)) out.push_back(r);
  }
  if (out.empty()) {
    CheckResult r;
    r.check_id = "audit.ib.ports";
    r.category = "security";
    r.subject = "node";
    r.status = CheckStatus::kSkipped;
    r.title = "InfiniBand/RoCE isolation";
    r.why = "no RDMA ports under /sys/class/infiniband";
    out.push_back(r);
  }
  return out;
}

}  // namespace cmax::audit
