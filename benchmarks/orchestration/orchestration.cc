// Sources of the keys and defaults checked here: slurm.conf(5), cgroup.conf(5),
// gres.conf(5), topology.conf(5), spank(8) (slurm.schedmd.com/man_index.html);
// the kubelet's KubeletConfiguration (kubernetes.io/docs/reference/config-api/
// kubelet-config.v1beta1/) and its device plugin directory
// (kubernetes.io/docs/concepts/extend-kubernetes/compute-storage-net/device-plugins/);
// CDI (github.com/cncf-tags/container-device-interface: specs in /etc/cdi and
// /var/run/cdi). Summarised in /work/shared/REFERENCES.md.
#include "benchmarks/orchestration/orchestration.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/hostcheck/host_facts.h"
#include "benchmarks/orchestration/config_text.h"
#include "common/sysroot.h"

namespace cmax::orchestration {
namespace {

constexpr char kSlurmConfLink[] = "https://slurm.schedmd.com/slurm.conf.html";
constexpr char kCgroupConfLink[] = "https://slurm.schedmd.com/cgroup.conf.html";
constexpr char kGresConfLink[] = "https://slurm.schedmd.com/gres.conf.html";
constexpr char kTopologyLink[] = "https://slurm.schedmd.com/topology.html";
constexpr char kKubeletLink[] =
    "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/";

// Where a Slurm installation keeps slurm.conf: Debian and upstream, older
// Debian, and slurmd's cache in configless mode (slurm.conf(5) "configless").
const char* const kSlurmConfPaths[] = {"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf",
                                       "/var/spool/slurmd/conf-cache/slurm.conf",
                                       "/run/slurm/conf/slurm.conf"};

std::string Dir(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::string Shown(const ConfigValue& v) { return absl::StrCat(Where(v), ": ", v.key, "=", v.value); }

Check Make(std::string id, Status status, std::string title) {
  Check c;
  c.id = std::move(id);
  c.status = status;
  c.title = std::move(title);
  return c;
}

// The Slurm configuration this node runs with: scontrol's view when it
// answered (the effective one), the files otherwise.
struct SlurmView {
  std::string conf_path;  // "" when no slurm.conf was found
  ConfigFile slurm, cgroup, gres, topology;
  bool have_cgroup = false, have_gres = false, have_topology = false;
  std::optional<ConfigFile> scontrol;

  std::optional<ConfigValue> Get(absl::string_view key, const ConfigFile& file) const {
    if (scontrol.has_value()) {
      if (auto v = scontrol->Get(key)) return v;
    }
    return file.Get(key);
  }
};

std::string NodeHostname(const Options& o, const Sysroot& root) {
  if (!o.hostname.empty()) return o.hostname;
  auto line = root.ReadLine("/etc/hostname");
  if (!line.has_value()) return "";
  std::string h = *line;
  if (size_t dot = h.find('.'); dot != std::string::npos) h.resize(dot);
  return h;
}

bool LineAppliesTo(const ConfigLine& l, const std::string& host) {
  for (const ConfigValue& p : l.pairs) {
    if (!absl::EqualsIgnoreCase(p.key, "NodeName")) continue;
    if (host.empty()) return false;
    auto names = ExpandHostlist(p.value);
    return names.has_value() && std::find(names->begin(), names->end(), host) != names->end();
  }
  return true;  // no NodeName: every node
}

// "gpu:h100:8,nic:2" -> 8; nullopt when there is no gpu entry.
std::optional<int> GpuGresCount(absl::string_view gres) {
  for (absl::string_view item : absl::StrSplit(gres, ',')) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    if (parts.empty() || !absl::EqualsIgnoreCase(parts[0], "gpu")) continue;
    int n = 1;
    if (parts.size() > 1) {
      std::string last = parts.back();
      if (size_t paren = last.find('('); paren != std::string::npos) last.resize(paren);
      if (!absl::SimpleAtoi(last, &n)) n = 1;
    }
    return n;
  }
  return std::nullopt;
}

void CheckGres(const SlurmView& v, const Sysroot& root, const std::string& host, int node_gpus,
               std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.gres", Status::kPass, "GPUs in gres.conf match the node");
  c.links = {kGresConfLink};
  if (node_gpus < 0) {
    c.status = Status::kNotMeasured;
    c.detail = "the node's GPUs could not be read from /sys/bus/pci/devices";
    c.title = "not measured: the node's GPUs are unknown";
    out->push_back(std::move(c));
    return;
  }
  if (node_gpus == 0) {
    c.status = Status::kInfo;
    c.title = "no NVIDIA GPU on this node: no GPU GRES to check";
    out->push_back(std::move(c));
    return;
  }
  auto types = v.Get("GresTypes", v.slurm);
  bool gpu_type = types.has_value() && absl::c_linear_search(SplitList(types->value), "gpu");
  if (types.has_value()) c.evidence.push_back(Shown(*types));
  if (!gpu_type) {
    c.status = Status::kFail;
    c.title = "GresTypes does not list gpu: jobs cannot request GPUs";
    c.detail = absl::StrCat("the node has ", node_gpus, " GPUs; slurm.conf ",
                            types.has_value() ? "GresTypes has no gpu" : "sets no GresTypes");
    c.action = absl::StrCat("Set GresTypes=gpu in ", v.conf_path,
                            " and describe the GPUs in gres.conf (AutoDetect=nvml or "
                            "Name=gpu File=/dev/nvidia[0-", node_gpus - 1, "]).");
    out->push_back(std::move(c));
    return;
  }
  // slurm.conf's NodeName line for this node: Gres=gpu:N.
  std::optional<int> declared;
  for (const ConfigLine& l : v.slurm.lines) {
    if (l.pairs.empty() || !absl::EqualsIgnoreCase(l.pairs[0].key, "NodeName")) continue;
    if (!LineAppliesTo(l, host)) continue;
    for (const ConfigValue& p : l.pairs) {
      if (!absl::EqualsIgnoreCase(p.key, "Gres")) continue;
      declared = GpuGresCount(p.value);
      c.evidence.push_back(Shown(p));
    }
  }
  // gres.conf: AutoDetect, or Name=gpu lines (File= device lists, Count=).
  bool autodetect = false;
  int counted = 0;
  std::vector<std::string> missing_files;
  for (const ConfigLine& l : v.gres.lines) {
    if (!LineAppliesTo(l, host)) continue;
    bool gpu = false;
    std::optional<ConfigValue> file, count;
    for (const ConfigValue& p : l.pairs) {
      if (absl::EqualsIgnoreCase(p.key, "AutoDetect")) {
        const std::string mode = absl::AsciiStrToLower(p.value);
        if (mode == "nvml" || mode == "nvidia") {
          autodetect = true;
          c.evidence.push_back(Shown(p));
        }
      }
      if (absl::EqualsIgnoreCase(p.key, "Name") && absl::EqualsIgnoreCase(p.value, "gpu")) gpu = true;
      if (absl::EqualsIgnoreCase(p.key, "File")) file = p;
      if (absl::EqualsIgnoreCase(p.key, "Count")) count = p;
    }
    if (!gpu) continue;
    c.evidence.push_back(absl::StrCat(v.gres.source, ":", l.line, ": ", l.text));
    if (file.has_value()) {
      auto files = ExpandHostlist(file->value);
      if (!files.has_value()) continue;
      counted += static_cast<int>(files->size());
      for (const std::string& f : *files) {
        if (!root.Exists(f)) missing_files.push_back(f);
      }
    } else if (count.has_value()) {
      int n = 0;
      if (absl::SimpleAtoi(count->value, &n)) counted += n;
    }
  }
  const std::string gres_path = v.have_gres ? v.gres.source : Dir(v.conf_path) + "/gres.conf";
  if (declared.has_value() && *declared != node_gpus) {
    c.status = Status::kFail;
    c.title = absl::StrCat("slurm.conf declares ", *declared, " GPUs for this node; it has ",
                           node_gpus);
    c.action = absl::StrCat("Set Gres=gpu:", node_gpus, " on this node's NodeName line in ",
                            v.conf_path, " (or replace the missing GPUs).");
  } else if (autodetect) {
    c.title = "gres.conf: slurmd detects the GPUs through NVML (AutoDetect)";
    c.detail = absl::StrCat("the node has ", node_gpus, " GPUs");
  } else if (!v.have_gres && !v.scontrol.has_value()) {
    c.status = Status::kFail;
    c.title = "no gres.conf: Slurm does not know this node's GPUs";
    c.action = absl::StrCat("Write ", gres_path, " with AutoDetect=nvml (or Name=gpu File=/dev/nvidia[0-",
                            node_gpus - 1, "]).");
  } else if (counted != node_gpus) {
    c.status = Status::kFail;
    c.title = absl::StrCat("gres.conf lists ", counted, " GPUs; the node has ", node_gpus);
    c.action = absl::StrCat("In ", gres_path, " set Name=gpu File=/dev/nvidia[0-", node_gpus - 1,
                            "] (or AutoDetect=nvml) for this node.");
  } else if (!missing_files.empty()) {
    c.status = Status::kFail;
    c.title = absl::StrCat("gres.conf names device files that do not exist: ",
                           absl::StrJoin(missing_files, ", "));
    c.action = absl::StrCat("Correct the File= list in ", gres_path,
                            " to the /dev/nvidiaN files of this node.");
  } else {
    c.title = absl::StrCat("gres.conf lists the node's ", node_gpus, " GPUs");
  }
  c.evidence.push_back(absl::StrCat("/sys/bus/pci/devices: ", node_gpus, " NVIDIA GPUs"));
  out->push_back(std::move(c));
}

void CheckConstrainDevices(const SlurmView& v, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.constrain_devices", Status::kPass,
                 "ConstrainDevices=yes: a job sees only the GPUs it was given");
  c.links = {kCgroupConfLink};
  const std::string path = v.have_cgroup ? v.cgroup.source : Dir(v.conf_path) + "/cgroup.conf";
  auto cd = v.Get("ConstrainDevices", v.cgroup);
  auto tp = v.Get("TaskPlugin", v.slurm);
  bool cgroup_task = tp.has_value() && absl::c_linear_search(SplitList(tp->value), "task/cgroup");
  if (cd.has_value()) c.evidence.push_back(Shown(*cd));
  if (tp.has_value()) c.evidence.push_back(Shown(*tp));
  if (!cd.has_value() && !v.have_cgroup && !v.scontrol.has_value()) {
    c.evidence.push_back(absl::StrCat(path, ": absent"));
  }
  const bool yes = cd.has_value() && absl::EqualsIgnoreCase(cd->value, "yes");
  if (!yes || !cgroup_task) {
    c.status = Status::kFail;
    c.title = !yes ? (cd.has_value() ? "ConstrainDevices is not yes: a job sees every GPU of the node"
                                     : "ConstrainDevices is unset (default no): a job sees every "
                                       "GPU of the node")
                   : "ConstrainDevices=yes without task/cgroup in TaskPlugin: it is not enforced";
    c.action = absl::StrCat("Set ConstrainDevices=yes in ", path,
                            " and TaskPlugin=task/cgroup,task/affinity in ", v.conf_path,
                            "; restart slurmd.");
    Check sec = c;
    sec.id = "orchestration.slurm.device_isolation";
    sec.category = "security";
    sec.title = absl::StrCat("jobs are not confined to their GPUs: ", c.title);
    out->push_back(std::move(c));
    out->push_back(std::move(sec));
    return;
  }
  out->push_back(std::move(c));
}

void CheckTaskPlugin(const SlurmView& v, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.task_plugin", Status::kPass,
                 "TaskPlugin has task/cgroup and task/affinity");
  c.links = {kSlurmConfLink};
  auto tp = v.Get("TaskPlugin", v.slurm);
  std::vector<std::string> list = tp.has_value() ? SplitList(tp->value) : std::vector<std::string>{};
  if (tp.has_value()) {
    c.evidence.push_back(Shown(*tp));
  } else {
    c.evidence.push_back(absl::StrCat(v.conf_path, ": no TaskPlugin (default task/none)"));
  }
  const bool cg = absl::c_linear_search(list, "task/cgroup");
  const bool aff = absl::c_linear_search(list, "task/affinity");
  if (!cg) {
    c.status = Status::kFail;
    c.title = "TaskPlugin lacks task/cgroup: jobs are not confined to their CPUs, memory and GPUs";
  } else if (!aff) {
    c.status = Status::kWarn;
    c.title = "TaskPlugin lacks task/affinity: tasks are not bound to the cores near their GPUs";
  }
  if (c.status != Status::kPass) {
    c.action = absl::StrCat("Set TaskPlugin=task/cgroup,task/affinity in ", v.conf_path, ".");
  }
  out->push_back(std::move(c));
}

void CheckSelect(const SlurmView& v, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.select", Status::kPass,
                 "SelectType=select/cons_tres: GPUs are allocated as trackable resources");
  c.links = {kSlurmConfLink};
  auto st = v.Get("SelectType", v.slurm);
  if (st.has_value()) c.evidence.push_back(Shown(*st));
  const std::string value = st.has_value() ? absl::AsciiStrToLower(st->value) : "";
  if (value != "select/cons_tres") {
    c.status = value == "select/linear" || value == "select/cons_res" ? Status::kWarn
                                                                        : Status::kFail;
    c.title = st.has_value()
                  ? absl::StrCat("SelectType is ", st->value,
                                 ", not select/cons_tres: GPUs are not scheduled per GPU")
                  : "no SelectType set: GPUs are not scheduled per GPU";
    c.action = absl::StrCat("Set SelectType=select/cons_tres (with SelectTypeParameters="
                            "CR_Core_Memory) in ",
                            v.conf_path, ".");
  }
  out->push_back(std::move(c));
}

// Job accounting for users (`sacct`, a ClusterMAX expectation:
// docs/clustermax-criteria.md): AccountingStorageType must be slurmdbd for
// sacct to show jobs; JobAcctGatherType decides whether usage is recorded.
void CheckAccounting(const SlurmView& v, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.accounting", Status::kPass, "");
  c.links = {"https://slurm.schedmd.com/accounting.html"};
  auto storage = v.Get("AccountingStorageType", v.slurm);
  auto gather = v.Get("JobAcctGatherType", v.slurm);
  for (const auto& x : {storage, gather}) {
    if (x.has_value()) c.evidence.push_back(Shown(*x));
  }
  const std::string type = storage.has_value() ? storage->value : "";
  if (!absl::EqualsIgnoreCase(type, "accounting_storage/slurmdbd")) {
    c.status = Status::kWarn;
    c.title = absl::StrCat("no job accounting (AccountingStorageType ",
                           type.empty() ? "unset" : type, "): sacct has no jobs to show users");
    c.action = absl::StrCat("Run slurmdbd and set AccountingStorageType=accounting_storage/slurmdbd "
                            "and JobAcctGatherType=jobacct_gather/cgroup in ", v.conf_path, ".");
    out->push_back(std::move(c));
    return;
  }
  const std::string g = gather.has_value() ? gather->value : "";
  c.title = absl::StrCat("job accounting through slurmdbd",
                         g.empty() || absl::EndsWithIgnoreCase(g, "/none")
                             ? "; JobAcctGatherType unset or none: no usage per job"
                             : "; usage gathered by " + g);
  out->push_back(std::move(c));
}

void CheckHealthProgram(const SlurmView& v, const Sysroot& root, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.health_check", Status::kPass, "HealthCheckProgram is set");
  c.links = {kSlurmConfLink};
  auto prog = v.Get("HealthCheckProgram", v.slurm);
  auto interval = v.Get("HealthCheckInterval", v.slurm);
  auto state = v.Get("HealthCheckNodeState", v.slurm);
  for (const auto& x : {prog, interval, state}) {
    if (x.has_value()) c.evidence.push_back(Shown(*x));
  }
  int seconds = 0;
  if (interval.has_value()) {
    // "300" in slurm.conf, "300 sec" in scontrol's output.
    (void)absl::SimpleAtoi(absl::string_view(interval->value).substr(0, interval->value.find(' ')),
                           &seconds);
  }
  if (!prog.has_value() || prog->value.empty()) {
    c.status = Status::kFail;
    c.title = "no HealthCheckProgram: Slurm never checks this node between jobs";
    c.action = absl::StrCat("Set HealthCheckProgram=/usr/local/bin/cmax-healthcheck, "
                            "HealthCheckInterval=300 and HealthCheckNodeState=ANY in ",
                            v.conf_path, " (deploy/slurm/cmax-healthcheck, docs/slurm.md).");
    out->push_back(std::move(c));
    return;
  }
  const bool cmax = absl::StrContains(prog->value, "cmax");
  c.detail = absl::StrCat(prog->value, cmax ? " (cmax's health check)" : " (not cmax's)",
                          ", every ", seconds, " s");
  if (!v.scontrol.has_value() && !root.Exists(prog->value)) {
    c.status = Status::kFail;
    c.title = absl::StrCat("HealthCheckProgram ", prog->value, " does not exist on this node");
    c.action = absl::StrCat("Install ", prog->value, " on every node or correct HealthCheckProgram in ",
                            v.conf_path, ".");
  } else if (seconds <= 0) {
    c.status = Status::kWarn;
    c.title = "HealthCheckProgram is set but HealthCheckInterval is 0: it never runs periodically";
    c.action = absl::StrCat("Set HealthCheckInterval=300 in ", v.conf_path, ".");
  } else {
    c.title = absl::StrCat("HealthCheckProgram ", prog->value, " runs every ", seconds, " s",
                           cmax ? " (cmax's)" : "");
  }
  out->push_back(std::move(c));
}

void CheckTopology(const SlurmView& v, const Sysroot& root, const std::string& host,
                   std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.topology", Status::kPass, "a topology plugin is set");
  c.links = {kTopologyLink};
  auto tp = v.Get("TopologyPlugin", v.slurm);
  if (tp.has_value()) c.evidence.push_back(Shown(*tp));
  const std::string dir = Dir(v.conf_path);
  const std::string value = tp.has_value() ? absl::AsciiStrToLower(tp->value) : "";
  const bool yaml = root.Exists(dir + "/topology.yaml");
  if (yaml) c.evidence.push_back(absl::StrCat(dir, "/topology.yaml: present (topology.conf ignored)"));
  if (value != "topology/tree" && value != "topology/block" && !yaml) {
    c.status = Status::kWarn;
    c.title = tp.has_value() ? absl::StrCat("TopologyPlugin is ", tp->value,
                                            ": jobs are placed without regard to the network")
                             : "no TopologyPlugin: jobs are placed without regard to the network";
    c.action = absl::StrCat("Set TopologyPlugin=topology/tree (switches) or topology/block "
                            "(NVLink domains such as NVL72 racks) in ",
                            v.conf_path, " and describe the fabric in ", dir, "/topology.conf.");
    out->push_back(std::move(c));
    return;
  }
  // This node's switch or block in topology.conf.
  std::string where;
  for (const ConfigLine& l : v.topology.lines) {
    if (l.pairs.empty()) continue;
    const std::string kind = l.pairs[0].key;
    if (!absl::EqualsIgnoreCase(kind, "SwitchName") && !absl::EqualsIgnoreCase(kind, "BlockName")) {
      continue;
    }
    for (const ConfigValue& p : l.pairs) {
      if (!absl::EqualsIgnoreCase(p.key, "Nodes")) continue;
      auto names = ExpandHostlist(p.value);
      if (names.has_value() && absl::c_linear_search(*names, host)) {
        where = absl::StrCat(kind, "=", l.pairs[0].value);
        if (absl::EqualsIgnoreCase(kind, "BlockName")) {
          // For the scorecard's check of blocks against NVLink domains
          // (orchestration_judge.cc).
          c.block_labels = {{"block", l.pairs[0].value},
                             {"source", absl::StrCat(v.topology.source, ":", l.line)}};
        }
        c.evidence.push_back(absl::StrCat(v.topology.source, ":", l.line, ": ", l.text));
      }
    }
  }
  if (where.empty() && !yaml) {
    c.status = Status::kWarn;
    c.title = absl::StrCat(tp->value, " is set but ", dir, "/topology.conf does not place ",
                           host.empty() ? "this node" : host);
    c.action = absl::StrCat("Add this node to a SwitchName or BlockName line's Nodes= in ", dir,
                            "/topology.conf.");
  } else {
    c.title = absl::StrCat(tp.has_value() ? tp->value : "topology.yaml", " places this node",
                           where.empty() ? "" : absl::StrCat(" in ", where));
  }
  out->push_back(std::move(c));
}

void CheckContainers(const SlurmView& v, const Sysroot& root, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.containers", Status::kInfo, "");
  const std::string dir = Dir(v.conf_path);
  std::vector<std::string> files = {dir + "/plugstack.conf"};
  for (const std::string& f : root.List(dir + "/plugstack.conf.d")) {
    files.push_back(absl::StrCat(dir, "/plugstack.conf.d/", f));
  }
  bool pyxis = false;
  for (const std::string& f : files) {
    auto text = root.Read(f);
    if (!text.ok()) continue;
    ConfigFile pc = ParseSlurmConfig(*text, f);
    for (const ConfigLine& l : pc.lines) {
      if (absl::StrContains(l.text, "pyxis")) {
        pyxis = true;
        c.evidence.push_back(absl::StrCat(f, ":", l.line, ": ", l.text));
      }
    }
  }
  bool enroot = false;
  for (const char* p : {"/usr/bin/enroot", "/usr/local/bin/enroot"}) {
    if (root.Exists(p)) {
      enroot = true;
      c.evidence.push_back(absl::StrCat(p, ": present"));
    }
  }
  c.title = absl::StrCat("container support: pyxis ", pyxis ? "configured" : "not configured",
                         ", enroot ", enroot ? "installed" : "not installed");
  if (!pyxis || !enroot) {
    c.action = absl::StrCat("For containers in jobs (srun --container-image) install enroot and "
                            "add `required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so` to ",
                            dir, "/plugstack.conf.");
  }
  c.links = {"https://github.com/NVIDIA/pyxis"};
  out->push_back(std::move(c));
}

void CheckNodeState(const Options& o, const std::string& host, std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.node_state", Status::kPass, "");
  if (!o.run || host.empty()) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: the node's Slurm state";
    c.detail = host.empty() ? "the node's hostname is unknown"
                            : "scontrol runs only on the real root (--root /)";
    out->push_back(std::move(c));
    return;
  }
  auto text = o.run({"scontrol", "show", "node", host});
  if (!text.has_value()) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: the node's Slurm state";
    c.detail = absl::StrCat("`scontrol show node ", host, "` did not answer");
    out->push_back(std::move(c));
    return;
  }
  auto fields = ParseScontrolNode(*text);
  auto st = fields.find("State");
  if (st == fields.end()) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: the node's Slurm state";
    c.detail = absl::StrCat("`scontrol show node ", host, "` printed no State=");
    out->push_back(std::move(c));
    return;
  }
  c.evidence.push_back(absl::StrCat("scontrol show node ", host, " (output line ", st->second.line,
                                    "): State=", st->second.value));
  auto reason = fields.find("Reason");
  if (reason != fields.end()) {
    c.evidence.push_back(absl::StrCat("Reason=", reason->second.value));
  }
  const std::string s = absl::AsciiStrToUpper(st->second.value);
  if (absl::StrContains(s, "DOWN") || absl::StrContains(s, "DRAIN") ||
      absl::StrContains(s, "FAIL") || absl::StrContains(s, "NOT_RESPONDING")) {
    c.status = Status::kWarn;
    c.title = absl::StrCat("Slurm holds this node out of service: State=", st->second.value);
    c.action = absl::StrCat("Fix the reason and return it: scontrol update NodeName=", host,
                            " State=RESUME.");
  } else {
    c.title = absl::StrCat("Slurm state ", st->second.value);
  }
  out->push_back(std::move(c));
}

std::optional<SlurmView> FindSlurm(const Options& o, const Sysroot& root,
                                   std::vector<Check>* out) {
  SlurmView v;
  v.conf_path = FindSlurmConf(root);
  if (o.run) {
    if (auto text = o.run({"scontrol", "show", "config"})) {
      ConfigFile sc = ParseScontrolConfig(*text);
      if (!sc.lines.empty()) v.scontrol = std::move(sc);
    }
  }
  if (v.conf_path.empty() && !v.scontrol.has_value()) return std::nullopt;
  if (v.conf_path.empty()) v.conf_path = "/etc/slurm/slurm.conf";
  auto text = root.Read(v.conf_path);
  if (!text.ok() && !v.scontrol.has_value()) {
    Check c = Make("orchestration.slurm", Status::kNotMeasured,
                   "not measured: slurm.conf could not be read");
    c.detail = std::string(text.status().message());
    out->push_back(std::move(c));
    return std::nullopt;
  }
  if (text.ok()) v.slurm = ParseSlurmConfig(*text, v.conf_path);
  const std::string dir = Dir(v.conf_path);
  auto read = [&](const std::string& name, ConfigFile* f, bool* have) {
    f->source = dir + "/" + name;
    auto t = root.Read(f->source);
    if (!t.ok()) return;
    *f = ParseSlurmConfig(*t, f->source);
    *have = true;
  };
  read("cgroup.conf", &v.cgroup, &v.have_cgroup);
  read("gres.conf", &v.gres, &v.have_gres);
  read("topology.conf", &v.topology, &v.have_topology);
  return v;
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; nullopt when malformed.
std::optional<std::set<int>> ParseCpuList(absl::string_view text) {
  std::set<int> out;
  for (absl::string_view part : absl::StrSplit(absl::StripAsciiWhitespace(text), ',',
                                              absl::SkipEmpty())) {
    std::vector<absl::string_view> ends = absl::StrSplit(part, '-');
    int lo = 0, hi = 0;
    if (ends.size() > 2 || !absl::SimpleAtoi(ends[0], &lo)) return std::nullopt;
    hi = lo;
    if (ends.size() == 2 && !absl::SimpleAtoi(ends[1], &hi)) return std::nullopt;
    if (lo < 0 || hi < lo || hi - lo > 65536) return std::nullopt;
    for (int c = lo; c <= hi; ++c) out.insert(c);
  }
  return out;
}

// The CPUs of the NUMA node of the GPU behind /dev/nvidiaMINOR: the minor's
// PCI address from /proc/driver/nvidia/gpus/*/information ("Device Minor:"),
// its numa_node, that node's cpulist. nullopt when any step is unknown.
std::optional<std::set<int>> GpuNumaCpus(const Sysroot& root, int minor, std::string* how) {
  for (const std::string& bdf : root.List("/proc/driver/nvidia/gpus")) {
    auto info = root.Read(absl::StrCat("/proc/driver/nvidia/gpus/", bdf, "/information"));
    if (!info.ok()) continue;
    for (absl::string_view line : absl::StrSplit(*info, '\n')) {
      if (!absl::StartsWith(line, "Device Minor:")) continue;
      int m = -1;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(13)), &m) || m != minor) break;
      auto numa = root.ReadLine(absl::StrCat("/sys/bus/pci/devices/", bdf, "/numa_node"));
      int node = -1;
      if (!numa || !absl::SimpleAtoi(*numa, &node) || node < 0) return std::nullopt;
      auto list = root.ReadLine(absl::StrCat("/sys/devices/system/node/node", node, "/cpulist"));
      if (!list) return std::nullopt;
      *how = absl::StrCat("/dev/nvidia", minor, " is ", bdf, " on NUMA node ", node, " (cpus ",
                          *list, ")");
      return ParseCpuList(*list);
    }
  }
  return std::nullopt;
}

void CheckStep(const Options& o, const Sysroot& root, const std::string& host, int node_gpus,
               std::vector<Check>* out) {
  Check c = Make("orchestration.slurm.step", Status::kPass, "");
  c.links = {"https://slurm.schedmd.com/srun.html"};
  if (!o.run || host.empty() || node_gpus < 0) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: the one-step job";
    c.detail = !o.run ? "srun runs only on the real root (--root /)"
                      : host.empty() ? "the node's hostname is unknown" : "the node's GPUs are unknown";
    out->push_back(std::move(c));
    return;
  }
  std::vector<std::string> argv = {"srun", "-N1", "-n1", "-w", host, "--exclusive", "--quiet"};
  const int asked = node_gpus > 0 ? 1 : 0;
  if (asked > 0) argv.push_back("--gres=gpu:1");
  argv.push_back("--");
  argv.insert(argv.end(), o.step_probe.begin(), o.step_probe.end());
  const std::string shown = absl::StrJoin(argv, " ");
  auto text = o.run(argv);
  if (!text.has_value()) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: the one-step job did not run";
    c.detail = absl::StrCat("`", shown, "` did not exit 0 (the node busy, down or not in a "
                                        "partition this user may use)");
    out->push_back(std::move(c));
    return;
  }
  std::optional<std::set<int>> cpus;
  std::vector<int> gpus;
  int n = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++n;
    if (absl::ConsumePrefix(&line, "cpus=")) {
      cpus = ParseCpuList(line);
      c.evidence.push_back(absl::StrCat(shown, " (output line ", n, "): cpus=", line));
    } else if (absl::ConsumePrefix(&line, "gpus=")) {
      for (absl::string_view g : absl::StrSplit(line, ',', absl::SkipEmpty())) {
        int v = 0;
        if (absl::SimpleAtoi(g, &v)) gpus.push_back(v);
      }
      c.evidence.push_back(absl::StrCat(shown, " (output line ", n, "): gpus=", line));
    }
  }
  if (!cpus.has_value()) {
    c.status = Status::kNotMeasured;
    c.title = "not measured: the one-step job printed no cpus= line";
    c.detail = absl::StrCat("`", shown, "`");
    out->push_back(std::move(c));
    return;
  }
  // The cores it must have: with a GPU, that GPU's NUMA node; without, every
  // online CPU (the step holds the node exclusively).
  std::optional<std::set<int>> want;
  std::string how;
  if (asked > 0 && gpus.size() == 1) {
    want = GpuNumaCpus(root, gpus[0], &how);
  } else if (asked == 0) {
    if (auto online = root.ReadLine("/sys/devices/system/cpu/online")) {
      want = ParseCpuList(*online);
      how = absl::StrCat("/sys/devices/system/cpu/online: ", *online);
    }
  }
  if (!how.empty()) c.evidence.push_back(how);
  std::vector<int> lacking;
  if (want.has_value()) {
    for (int cpu : *want) {
      if (!cpus->count(cpu)) lacking.push_back(cpu);
    }
  }
  if (static_cast<int>(gpus.size()) != asked) {
    c.status = Status::kFail;
    c.title = absl::StrCat("a job step that asked for ", asked, " GPU", asked == 1 ? "" : "s",
                           " sees ", gpus.size());
    c.action = absl::StrCat("Confine jobs to their GPUs: ConstrainDevices=yes in cgroup.conf, "
                            "TaskPlugin=task/cgroup,task/affinity, the GPUs in gres.conf; restart "
                            "slurmd.");
  } else if (!lacking.empty()) {
    c.status = Status::kFail;
    c.title = absl::StrCat("a job step lacks ", lacking.size(), " of the ", want->size(),
                           " CPU cores it should get (", asked > 0 ? "its GPU's NUMA node" : "the node",
                           ")");
    c.action = "Bind GPUs to their cores: Cores= on gres.conf's lines (or AutoDetect=nvml), "
               "TaskPlugin=task/affinity; check CpuSpec/CoreSpecCount in slurm.conf.";
  } else {
    c.title = absl::StrCat("a job step sees exactly the ", asked, " GPU", asked == 1 ? "" : "s",
                           " it asked for and ", cpus->size(), " CPUs",
                           want.has_value() ? (asked > 0 ? ", its GPU's NUMA node included"
                                                         : ", every online CPU")
                                            : " (the GPU's NUMA node unknown)");
  }
  out->push_back(std::move(c));
}

bool IsSocketLike(const std::string& name) { return absl::EndsWith(name, ".sock"); }

void CheckKubernetes(const Options& o, const Sysroot& root, int node_gpus,
                     std::vector<Check>* out) {
  (void)o;
  const std::string kubelet_conf = "/var/lib/kubelet/config.yaml";
  auto text = root.Read(kubelet_conf);
  std::map<std::string, ConfigValue> kc;
  if (text.ok()) kc = ParseTopLevelYaml(*text, kubelet_conf);
  auto get = [&](const std::string& key) -> std::optional<ConfigValue> {
    auto it = kc.find(key);
    if (it == kc.end()) return std::nullopt;
    return it->second;
  };
  const std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  std::vector<std::string> sockets;
  for (const std::string& f : root.List(plugin_dir)) {
    if (IsSocketLike(f) && f != "kubelet.sock") sockets.push_back(f);
  }
  // NVIDIA device plugin: nvidia-gpu.sock (github.com/NVIDIA/k8s-device-plugin,
  // its plugin socket name); any socket naming nvidia counts.
  {
    Check c = Make("orchestration.k8s.device_plugin", Status::kPass, "");
    c.links = {"https://github.com/NVIDIA/k8s-device-plugin"};
    std::vector<std::string> nvidia;
    for (const auto& s : sockets) {
      if (absl::StrContains(absl::AsciiStrToLower(s), "nvidia")) nvidia.push_back(s);
    }
    c.evidence.push_back(absl::StrCat(plugin_dir, ": ",
                                      sockets.empty() ? "no plugin sockets" : absl::StrJoin(sockets, ", ")));
    const bool operator_present = root.Exists("/run/nvidia/validations") ||
                                  root.Exists("/usr/local/nvidia/toolkit");
    if (operator_present) c.evidence.push_back("GPU Operator: /run/nvidia/validations or /usr/local/nvidia/toolkit present");
    if (node_gpus == 0) {
      c.status = Status::kInfo;
      c.title = "no NVIDIA GPU on this node: no GPU device plugin needed";
    } else if (nvidia.empty()) {
      c.status = Status::kFail;
      c.title = "no NVIDIA device plugin registered with the kubelet: pods cannot request GPUs";
      c.action = "Deploy the NVIDIA GPU Operator or the NVIDIA device plugin DaemonSet on the GPU "
                 "nodes (it registers nvidia-gpu.sock in /var/lib/kubelet/device-plugins).";
    } else {
      c.title = absl::StrCat("NVIDIA device plugin registered (", absl::StrJoin(nvidia, ", "), ")",
                             operator_present ? " by the GPU Operator" : "");
    }
    out->push_back(std::move(c));
  }
  {
    Check c = Make("orchestration.k8s.cdi", Status::kInfo, "");
    std::vector<std::string> specs;
    for (const char* d : {"/etc/cdi", "/var/run/cdi", "/run/cdi"}) {
      for (const std::string& f : root.List(d)) {
        if (absl::EndsWith(f, ".yaml") || absl::EndsWith(f, ".json")) specs.push_back(absl::StrCat(d, "/", f));
      }
    }
    c.title = specs.empty() ? "no CDI specs (/etc/cdi, /var/run/cdi)"
                            : absl::StrCat("CDI specs: ", absl::StrJoin(specs, ", "));
    for (const auto& s : specs) c.evidence.push_back(absl::StrCat(s, ": present"));
    c.links = {"https://github.com/cncf-tags/container-device-interface"};
    out->push_back(std::move(c));
  }
  const std::string restart = absl::StrCat(" in ", kubelet_conf, " and restart the kubelet (drain the node first).");
  {
    Check c = Make("orchestration.k8s.topology_manager", Status::kPass, "");
    c.links = {kKubeletLink};
    auto p = get("topologyManagerPolicy");
    if (!text.ok()) {
      c.status = Status::kNotMeasured;
      c.title = "not measured: the kubelet's topology manager policy";
      c.detail = absl::StrCat(kubelet_conf, ": ", text.status().message());
    } else {
      const std::string value = p.has_value() ? p->value : "none";
      c.evidence.push_back(p.has_value() ? Shown(*p)
                                         : absl::StrCat(kubelet_conf, ": no topologyManagerPolicy (default none)"));
      if (value == "single-numa-node" || value == "restricted") {
        c.title = absl::StrCat("topologyManagerPolicy ", value, ": GPUs, CPUs and NICs aligned");
      } else if (node_gpus == 0) {
        c.status = Status::kInfo;
        c.title = absl::StrCat("topologyManagerPolicy ", value, " (no GPUs on this node)");
      } else {
        c.status = value == "best-effort" ? Status::kWarn : Status::kFail;
        c.title = absl::StrCat("topologyManagerPolicy ", value,
                               ": a pod's GPUs may sit on another NUMA node than its CPUs");
        c.action = absl::StrCat("Set topologyManagerPolicy: single-numa-node (or restricted)", restart);
      }
    }
    out->push_back(std::move(c));
  }
  {
    Check c = Make("orchestration.k8s.cpu_manager", Status::kPass, "");
    c.links = {"https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/"};
    auto p = get("cpuManagerPolicy");
    if (!text.ok()) {
      c.status = Status::kNotMeasured;
      c.title = "not measured: the kubelet's CPU manager policy";
      c.detail = absl::StrCat(kubelet_conf, ": ", text.status().message());
    } else {
      const std::string value = p.has_value() ? p->value : "none";
      c.evidence.push_back(p.has_value() ? Shown(*p)
                                         : absl::StrCat(kubelet_conf, ": no cpuManagerPolicy (default none)"));
      if (value == "static") {
        c.title = "cpuManagerPolicy static: guaranteed pods get exclusive cores";
      } else {
        c.status = Status::kWarn;
        c.title = absl::StrCat("cpuManagerPolicy ", value, ": pods share every core");
        c.action = absl::StrCat("Set cpuManagerPolicy: static (with reservedSystemCPUs)", restart);
      }
    }
    out->push_back(std::move(c));
  }
  {
    std::vector<std::string> hcas = root.List("/sys/class/infiniband");
    Check c = Make("orchestration.k8s.rdma_plugin", Status::kPass, "");
    if (hcas.empty()) {
      c.status = Status::kInfo;
      c.title = "no RDMA devices (/sys/class/infiniband): no RDMA device plugin needed";
    } else {
      std::vector<std::string> rdma;
      for (const auto& s : sockets) {
        const std::string l = absl::AsciiStrToLower(s);
        if (absl::StrContains(l, "rdma") || absl::StrContains(l, "sriov")) rdma.push_back(s);
      }
      c.evidence.push_back(absl::StrCat("/sys/class/infiniband: ", absl::StrJoin(hcas, ", ")));
      if (rdma.empty()) {
        c.status = Status::kWarn;
        c.title = absl::StrCat(hcas.size(), " RDMA devices and no RDMA device plugin: pods cannot use them");
        c.action = "Deploy the NVIDIA Network Operator or the k8s-rdma-shared-dev-plugin / SR-IOV "
                   "device plugin on these nodes.";
      } else {
        c.title = absl::StrCat("RDMA device plugin registered (", absl::StrJoin(rdma, ", "), ")");
      }
    }
    out->push_back(std::move(c));
  }
}

bool HasKubernetes(const Sysroot& root) {
  return root.Exists("/var/lib/kubelet/config.yaml") || root.Exists("/etc/kubernetes/kubelet.conf") ||
         root.Exists("/var/lib/kubelet/device-plugins");
}

}  // namespace

std::string StatusName(Status s) {
  switch (s) {
    case Status::kPass: return "PASS";
    case Status::kInfo: return "INFO";
    case Status::kWarn: return "WARN";
    case Status::kFail: return "FAIL";
    case Status::kNotMeasured: return "NOT MEASURED";
  }
  return "NOT MEASURED";
}

std::string StepProbe(const Sysroot& root) {
  std::string cpus;
  if (auto status = root.Read("/proc/self/status"); status.ok()) {
    for (absl::string_view line : absl::StrSplit(*status, '\n')) {
      if (absl::ConsumePrefix(&line, "Cpus_allowed_list:")) {
        cpus = std::string(absl::StripAsciiWhitespace(line));
      }
    }
  }
  std::vector<std::string> gpus;
  for (const std::string& name : root.List("/dev")) {
    absl::string_view n = name;
    int minor = 0;
    if (!absl::ConsumePrefix(&n, "nvidia") || !absl::SimpleAtoi(n, &minor)) continue;
    // The device cgroup (ConstrainDevices=yes) refuses open() of a GPU the
    // job was not given.
    int fd = open(root.Path("/dev/" + name).c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    close(fd);
    gpus.push_back(absl::StrCat(minor));
  }
  std::sort(gpus.begin(), gpus.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return absl::StrCat("cpus=", cpus, "\ngpus=", absl::StrJoin(gpus, ","), "\n");
}

std::string FindSlurmConf(const Sysroot& root) {
  for (const char* p : kSlurmConfPaths) {
    if (root.Exists(p)) return p;
  }
  return "";
}

int WriteChecks(const std::vector<Check>& checks, bool jsonl, RecordWriter& out) {
  bool failed = false;
  for (const auto& c : checks) {
    if (c.status == Status::kFail) failed = true;
    if (jsonl) {
      out.Find(ToFinding(c));
      if (!c.block_labels.empty()) out.Measure("slurm_block", 1, "count", c.block_labels);
      continue;
    }
    std::printf("%-13s %-44s %s\n", StatusName(c.status).c_str(), c.id.c_str(), c.title.c_str());
    for (const auto& e : c.evidence) std::printf("%13s   read: %s\n", "", e.c_str());
    if (!c.detail.empty()) std::printf("%13s   %s\n", "", c.detail.c_str());
    if (!c.action.empty()) std::printf("%13s   fix: %s\n", "", c.action.c_str());
  }
  return failed ? 1 : 0;
}

v1::Finding ToFinding(const Check& c) {
  v1::Finding f;
  f.set_check_id(c.id);
  f.set_category(c.category);
  f.set_subject(c.subject);
  // The scorecard says "not measured" itself (Finding.not_measured); the
  // title keeps only what was not measured and why.
  absl::string_view title = c.title;
  if (c.status == Status::kNotMeasured) absl::ConsumePrefix(&title, "not measured: ");
  f.set_title(std::string(title));
  f.set_detail(c.detail);
  for (const auto& e : c.evidence) f.add_evidence(e);
  for (const auto& l : c.links) f.add_links(l);
  f.set_action(c.action);
  switch (c.status) {
    case Status::kPass:
    case Status::kInfo: f.set_severity(v1::SEVERITY_INFO); break;
    case Status::kWarn: f.set_severity(v1::SEVERITY_WARN); break;
    case Status::kFail: f.set_severity(v1::SEVERITY_FAIL); break;
    case Status::kNotMeasured:
      f.set_severity(v1::SEVERITY_INFO);
      f.set_not_measured(true);
      break;
  }
  return f;
}

std::vector<Check> RunChecks(const Options& o) {
  std::vector<Check> out;
  Sysroot root(o.root);
  const std::string host = NodeHostname(o, root);
  int node_gpus = -1;
  if (auto gpus = bench::hostcheck::ReadNvidiaGpus(root); gpus.ok()) {
    node_gpus = static_cast<int>(gpus->size());
  }
  bool found = false;
  if (o.scheduler != "kubernetes") {
    if (auto v = FindSlurm(o, root, &out)) {
      found = true;
      CheckGres(*v, root, host, node_gpus, &out);
      CheckConstrainDevices(*v, &out);
      CheckTaskPlugin(*v, &out);
      CheckSelect(*v, &out);
      CheckHealthProgram(*v, root, &out);
      CheckAccounting(*v, &out);
      CheckTopology(*v, root, host, &out);
      CheckContainers(*v, root, &out);
      CheckNodeState(o, host, &out);
      if (!o.step_probe.empty()) CheckStep(o, root, host, node_gpus, &out);
    } else if (!out.empty()) {
      found = true;  // Slurm is there but unreadable: said so already
    }
  }
  if (o.scheduler != "slurm" && HasKubernetes(root)) {
    found = true;
    CheckKubernetes(o, root, node_gpus, &out);
  }
  if (!found) {
    Check c = Make("orchestration.scheduler", Status::kFail,
                   "neither Slurm nor Kubernetes is set up on this node");
    c.evidence = {"no slurm.conf (/etc/slurm, /etc/slurm-llnl, slurmd's configless cache)",
                  "no kubelet (/var/lib/kubelet/config.yaml, /etc/kubernetes/kubelet.conf)"};
    if (o.scheduler != "auto") {
      c.evidence.push_back(absl::StrCat("the plan asked for ", o.scheduler));
    }
    if (!o.managed) {
      c.status = Status::kNotMeasured;
      c.title = "not measured: bare metal (managed: false), no scheduler expected";
    } else {
      c.action = "A managed cluster runs jobs through Slurm or Kubernetes: install and configure "
                 "one (docs/orchestration.md), or say `managed: false` in the plan for bare metal.";
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace cmax::orchestration
