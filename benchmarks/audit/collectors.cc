#include "benchmarks/audit/collectors.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmarks/audit/version.h"
#include "re2/re2.h"

namespace cmax::audit {
namespace {

// Known install locations searched after PATH on a real system. The GPU
// Operator installs the Container Toolkit under /usr/local/nvidia/toolkit.
const char* const kKnownDirs[] = {
    "/usr/local/nvidia/toolkit", "/usr/local/cuda/bin", "/usr/local/sbin", "/usr/local/bin",
    "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/opt/slurm/sbin", "/usr/mellanox/bin"};

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string FirstMatch(const std::string& text, const std::string& pattern) {
  RE2 re(pattern);
  std::string out;
  if (re.ok() && RE2::PartialMatch(text, re, &out)) return out;
  return "";
}

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

std::string LastLines(const std::string& text, size_t max_chars) {
  std::string t = Trim(text);
  if (t.size() <= max_chars) return t;
  return "..." + t.substr(t.size() - max_chars);
}

}  // namespace

// ---- CommandRunner ----------------------------------------------------------

CommandRunner::CommandRunner(const Sysroot& root, std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  const char* path = std::getenv("PATH");
  for (absl::string_view d : absl::StrSplit(path ? path : "", ':', absl::SkipEmpty())) {
    dirs_.emplace_back(d);
  }
  if (root.is_real()) {
    for (const char* d : kKnownDirs) {
      if (std::find(dirs_.begin(), dirs_.end(), d) == dirs_.end()) dirs_.emplace_back(d);
    }
  }
}

std::string CommandRunner::Find(const std::string& name) const {
  if (name.find('/') != std::string::npos) return IsExecutableFile(name) ? name : "";
  for (const auto& d : dirs_) {
    std::string candidate = absl::StrCat(d, "/", name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

absl::StatusOr<CommandResult> CommandRunner::Run(std::vector<std::string> argv) const {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::string path = Find(argv[0]);
  if (path.empty()) return absl::NotFoundError(absl::StrCat(argv[0], " not found"));
  argv[0] = path;
  return RunCommand(argv, timeout_, 1 << 20);
}

// ---- parsing ----------------------------------------------------------------

std::map<std::string, std::string> ParseDpkgStatus(const std::string& text) {
  std::map<std::string, std::string> out;
  std::string package, version, status;
  auto flush = [&] {
    if (!package.empty() && !version.empty() && absl::EndsWith(status, " installed") &&
        absl::StartsWith(status, "install ")) {
      out[package] = version;
    }
    package.clear();
    version.clear();
    status.clear();
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StripAsciiWhitespace(line).empty()) {
      flush();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') continue;  // continuation
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view key = line.substr(0, colon);
    std::string value = Trim(line.substr(colon + 1));
    if (key == "Package") package = value;
    else if (key == "Version") version = value;
    else if (key == "Status") status = value;
  }
  flush();
  return out;
}

std::string DistroFromOsRelease(const std::string& text) {
  std::map<std::string, std::string> kv;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
      value = value.substr(1, value.size() - 2);
    }
    kv[Trim(line.substr(0, eq))] = value;
  }
  std::string id = absl::AsciiStrToLower(kv["ID"]);
  if (id.empty()) return "";
  std::string release = kv["VERSION_CODENAME"];
  if (release.empty() || id == "rhel" || id == "rocky" || id == "almalinux" || id == "centos") {
    release = kv["VERSION_ID"].substr(0, kv["VERSION_ID"].find('.'));
  }
  return release.empty() ? id : absl::StrCat(id, "/", release);
}

std::string ComponentVersion::Describe() const {
  if (!installed) return "not installed";
  std::string v = version.empty() ? "version unknown" : version;
  std::string src = source;
  if (!package.empty()) {
    src = absl::StrCat(source, distribution_package ? " (" + distro + " package " : " (package ",
                       package, ")");
  }
  return absl::StrCat(v, " [", src, evidence.empty() ? "" : ": " + evidence, "]");
}

// ---- Collector ----------------------------------------------------------------

Collector::Collector(const Sysroot& root, const CommandRunner& commands)
    : root_(root), commands_(commands) {
  if (auto status = root_.Read("/var/lib/dpkg/status"); status.ok()) {
    dpkg_ = ParseDpkgStatus(*status);
  }
  if (auto os = root_.Read("/etc/os-release"); os.ok()) {
    distro_ = DistroFromOsRelease(*os);
  } else if (auto os2 = root_.Read("/usr/lib/os-release"); os2.ok()) {
    distro_ = DistroFromOsRelease(*os2);
  }
  // rpm only where its database and the rpm command both exist.
  have_rpm_ = root_.Exists("/var/lib/rpm") && !commands_.Find("rpm").empty();
}

ComponentVersion Collector::Missing(const std::string& component) const {
  ComponentVersion c;
  c.component = component;
  c.source = "none";
  return c;
}

bool Collector::FromDpkg(const std::vector<std::string>& names,
                         const std::vector<std::string>& distro_names,
                         ComponentVersion* out) const {
  for (const auto& name : names) {
    auto it = dpkg_.find(name);
    if (it == dpkg_.end()) continue;
    out->installed = true;
    out->version = it->second;
    out->source = "dpkg";
    out->package = name;
    out->distribution_package =
        std::find(distro_names.begin(), distro_names.end(), name) != distro_names.end();
    if (out->distribution_package) out->distro = distro_;
    out->evidence = root_.Path("/var/lib/dpkg/status");
    return true;
  }
  return false;
}

bool Collector::FromRpm(const std::vector<std::string>& names,
                        const std::vector<std::string>& distro_names,
                        ComponentVersion* out) const {
  if (!have_rpm_) return false;
  for (const auto& name : names) {
    std::vector<std::string> argv = {"rpm"};
    if (!root_.is_real()) argv.push_back("--root=" + root_.root());
    argv.insert(argv.end(), {"-q", "--qf", "%{EPOCH}:%{VERSION}-%{RELEASE}\\n", name});
    auto r = commands_.Run(argv);
    if (!r.ok() || !r->exit.exited || r->exit.code != 0) continue;
    std::string v = Trim(r->out);
    if (absl::StartsWith(v, "(none):")) v = v.substr(7);
    if (v.empty()) continue;
    out->installed = true;
    out->version = v;
    out->source = "rpm";
    out->package = name;
    out->distribution_package =
        std::find(distro_names.begin(), distro_names.end(), name) != distro_names.end();
    if (out->distribution_package) out->distro = distro_;
    out->evidence = absl::StrJoin(argv, " ");
    return true;
  }
  return false;
}

bool Collector::FromCommand(const std::vector<std::string>& argv, const std::string& pattern,
                            ComponentVersion* out) const {
  std::string path = commands_.Find(argv[0]);
  if (path.empty()) return false;
  std::vector<std::string> full = argv;
  full[0] = path;
  out->installed = true;
  out->source = "upstream binary";
  out->evidence = absl::StrJoin(full, " ");
  auto r = commands_.Run(full);
  if (!r.ok()) {
    out->error = std::string(r.status().message());
    return true;
  }
  std::string text = r->out + "\n" + r->err;
  std::string v = FirstMatch(text, pattern);
  if (r->timed_out) {
    out->error = absl::StrCat("timed out after ", commands_.timeout().count(), " ms");
  } else if (v.empty()) {
    out->error = absl::StrCat(r->exit.Describe(), "; no version in output: ",
                              LastLines(text, 300));
  } else {
    out->version = v;
    out->error.clear();
  }
  return true;
}

ComponentVersion Collector::Driver() {
  ComponentVersion c = Missing("driver");
  // The loaded kernel module is the truth; nvidia-smi second.
  if (auto line = root_.ReadLine("/proc/driver/nvidia/version")) {
    std::string v = FirstMatch(*line, R"(Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?))");
    if (v.empty()) v = FirstMatch(*line, R"(\s(\d{3}\.\d+(?:\.\d+)?)\s)");
    if (!v.empty()) {
      c.installed = true;
      c.version = v;
      c.source = "file";
      c.evidence = root_.Path("/proc/driver/nvidia/version");
      return c;
    }
  }
  FromCommand({"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"},
              R"((\d+\.\d+(?:\.\d+)?))", &c);
  if (c.installed) c.source = "nvidia-smi";
  return c;
}

ComponentVersion Collector::CudaDriver() {
  ComponentVersion c = Missing("cuda_driver");
  FromCommand({"nvidia-smi"}, R"(CUDA Version:\s*(\d+\.\d+))", &c);
  if (c.installed) c.source = "nvidia-smi";
  return c;
}

ComponentVersion Collector::CudaToolkit() {
  ComponentVersion c = Missing("cuda_toolkit");
  for (const char* file : {"/usr/local/cuda/version.json"}) {
    if (auto text = root_.Read(file); text.ok()) {
      std::string v = FirstMatch(*text, R"re("cuda"\s*:\s*\{[^}]*"version"\s*:\s*"([^"]+)")re");
      if (!v.empty()) {
        c.installed = true;
        c.version = v;
        c.source = "file";
        c.evidence = root_.Path(file);
        return c;
      }
    }
  }
  FromCommand({"nvcc", "--version"}, R"(release \d+\.\d+, V(\d+\.\d+\.\d+))", &c);
  return c;
}

ComponentVersion Collector::Nccl() {
  ComponentVersion c = Missing("nccl");
  if (FromDpkg({"libnccl2"}, {}, &c) || FromRpm({"libnccl"}, {}, &c)) return c;
  for (const char* header : {"/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h"}) {
    auto text = root_.Read(header);
    if (!text.ok()) continue;
    std::string major = FirstMatch(*text, R"(#define\s+NCCL_MAJOR\s+(\d+))");
    std::string minor = FirstMatch(*text, R"(#define\s+NCCL_MINOR\s+(\d+))");
    std::string patch = FirstMatch(*text, R"(#define\s+NCCL_PATCH\s+(\d+))");
    if (major.empty() || minor.empty()) continue;
    c.installed = true;
    c.version = absl::StrCat(major, ".", minor, patch.empty() ? "" : "." + patch);
    c.source = "file";
    c.evidence = root_.Path(header);
    return c;
  }
  return c;
}

ComponentVersion Collector::ContainerToolkit() {
  ComponentVersion c = Missing("container_toolkit");
  const std::string semver = R"((\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?))";
  // Commands first: the binary in use (the GPU Operator's copy is not in dpkg).
  if (FromCommand({"nvidia-ctk", "--version"}, "version\\s+v?" + semver, &c) && !c.version.empty()) {
    return c;
  }
  ComponentVersion cli = Missing("container_toolkit");
  if (FromCommand({"nvidia-container-cli", "--version"}, "cli-version:\\s*v?" + semver, &cli) &&
      !cli.version.empty()) {
    return cli;
  }
  ComponentVersion pkg = Missing("container_toolkit");
  if (FromDpkg({"nvidia-container-toolkit", "nvidia-container-toolkit-base",
                "libnvidia-container-tools"},
               {}, &pkg) ||
      FromRpm({"nvidia-container-toolkit", "nvidia-container-toolkit-base"}, {}, &pkg)) {
    return pkg;
  }
  if (c.installed) return c;  // found but unreadable: UNKNOWN, never a pass
  return cli;
}

ComponentVersion Collector::Simple(const std::string& component,
                                   const std::vector<std::string>& dpkg,
                                   const std::vector<std::string>& distro_dpkg,
                                   const std::vector<std::string>& argv,
                                   const std::string& pattern) {
  ComponentVersion c = Missing(component);
  if (FromDpkg(dpkg, distro_dpkg, &c) || FromRpm(dpkg, distro_dpkg, &c)) return c;
  if (!argv.empty()) FromCommand(argv, pattern, &c);
  return c;
}

ComponentVersion Collector::Docker() {
  ComponentVersion c = Missing("docker");
  // The server's own answer first (what runs), then the package database.
  if (FromCommand({"docker", "version", "--format", "{{.Server.Version}}"},
                  R"(^\s*v?(\d+\.\d+\.\d+\S*))", &c) &&
      !c.version.empty()) {
    ComponentVersion pkg = Missing("docker");
    if (FromDpkg({"docker.io", "docker-ce"}, {"docker.io"}, &pkg)) {
      c.package = pkg.package;
      c.distribution_package = pkg.distribution_package;
      c.distro = pkg.distro;
    }
    return c;
  }
  ComponentVersion pkg = Missing("docker");
  if (FromDpkg({"docker-ce", "docker.io"}, {"docker.io"}, &pkg) ||
      FromRpm({"docker-ce", "moby-engine"}, {"moby-engine"}, &pkg)) {
    return pkg;
  }
  return c;
}

std::vector<ComponentVersion> Collector::NicFirmware() {
  std::vector<ComponentVersion> out;
  for (const auto& dev : root_.List("/sys/class/infiniband")) {
    std::string path = absl::StrCat("/sys/class/infiniband/", dev, "/fw_ver");
    auto v = root_.ReadLine(path);
    ComponentVersion c = Missing("nic_firmware");
    c.device = dev;
    c.installed = true;  // the device is there; an unreadable version is UNKNOWN
    c.version = v ? *v : "";
    if (c.version.empty()) c.error = absl::StrCat(root_.Path(path), " is missing or empty");
    c.source = "sysfs";
    c.evidence = root_.Path(path);
    if (auto board = root_.ReadLine(absl::StrCat("/sys/class/infiniband/", dev, "/board_id"))) {
      c.evidence += absl::StrCat(" (board ", *board, ")");
    }
    out.push_back(c);
  }
  if (out.empty()) out.push_back(Missing("nic_firmware"));
  return out;
}

std::vector<ComponentVersion> Collector::CollectAll() {
  const std::string semver = R"((\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?))";
  std::vector<ComponentVersion> out;
  out.push_back(Driver());
  out.push_back(CudaDriver());
  out.push_back(CudaToolkit());
  out.push_back(Nccl());
  out.push_back(ContainerToolkit());
  out.push_back(Simple("runc", {"runc"}, {"runc"}, {"runc", "--version"},
                       "runc version\\s+v?" + semver));
  out.push_back(Simple("containerd", {"containerd", "containerd.io"}, {"containerd"},
                       {"containerd", "--version"}, "\\sv?" + semver + "(?:\\s|$)"));
  out.push_back(Docker());
  for (auto& fw : NicFirmware()) out.push_back(fw);
  // MLNX_OFED only: DOCA-OFED prints "OFED-internal-<version>", whose
  // numbers are not MLNX_OFED's and no bulletin names (UNKNOWN).
  out.push_back(Simple("ofed", {}, {}, {"ofed_info", "-s"},
                       R"(MLNX_OFED_LINUX-(\d+\.\d+-[0-9.]*[0-9]))"));
  out.push_back(Simple("dcgm", {"datacenter-gpu-manager-4-core", "datacenter-gpu-manager"}, {},
                       {"dcgmi", "--version"}, "version:\\s*v?" + semver));
  // Release tags are "<DCGM>-<exporter>" ("4.4.1-4.5.2"); NVIDIA's bulletins
  // name the exporter's own version, the second.
  out.push_back(Simple("dcgm_exporter", {}, {}, {"dcgm-exporter", "--version"},
                       R"((?:\d+\.\d+\.\d+-)?(\d+\.\d+\.\d+))"));
  out.push_back(Simple("fabric_manager", {}, {}, {"nv-fabricmanager", "--version"},
                       R"((\d+\.\d+\.\d+))"));
  out.push_back(Simple("slurm", {"slurmd", "slurm-wlm", "slurm-smd-slurmd", "slurm-slurmd"},
                       {"slurmd", "slurm-wlm"}, {"slurmd", "-V"},
                       "slurm(?:-wlm)?\\s+v?" + semver));
  out.push_back(Simple("kubelet", {"kubelet"}, {}, {"kubelet", "--version"},
                       "Kubernetes\\s+v?" + semver));
  return out;
}

KernelInfo Collector::Kernel() const {
  KernelInfo k;
  if (auto r = root_.ReadLine("/proc/sys/kernel/osrelease")) k.running = *r;
  for (const auto& name : root_.List("/lib/modules")) k.installed.push_back(name);
  for (const auto& name : root_.List("/boot")) {
    if (absl::StartsWith(name, "vmlinuz-")) {
      std::string rel = name.substr(8);
      if (std::find(k.installed.begin(), k.installed.end(), rel) == k.installed.end()) {
        k.installed.push_back(rel);
      }
    }
  }
  for (const auto& rel : k.installed) {
    if (k.newest.empty() || CompareDebian(rel, k.newest) > 0) k.newest = rel;
  }
  auto package = [this](const std::string& release) -> std::string {
    auto it = dpkg_.find("linux-image-" + release);
    return release.empty() || it == dpkg_.end() ? "" : it->second;
  };
  k.running_package = package(k.running);
  k.newest_package = package(k.newest);
  k.reboot_required = root_.Exists("/var/run/reboot-required") ||
                      root_.Exists("/run/reboot-required");
  for (const char* f : {"/var/run/reboot-required.pkgs", "/run/reboot-required.pkgs"}) {
    if (auto text = root_.Read(f); text.ok()) {
      for (absl::string_view l : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
        k.reboot_packages.push_back(Trim(l));
      }
      break;
    }
  }
  return k;
}

}  // namespace cmax::audit
