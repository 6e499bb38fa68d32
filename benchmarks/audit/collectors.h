// Finds the installed version of each component the audit knows, from files
// under the root first (sysfs, /proc, version files, the dpkg status file)
// and from commands second (argv and a timeout, never a shell).
//
// Commands are looked up on PATH and, when the root is the real system, in
// their known install locations (the GPU Operator's /usr/local/nvidia/toolkit,
// /usr/local/cuda/bin, /usr/sbin, ...). Under a fixture root only PATH is
// searched, so tests put fake commands first on PATH.
#ifndef CMAX_BENCHMARKS_AUDIT_COLLECTORS_H_
#define CMAX_BENCHMARKS_AUDIT_COLLECTORS_H_

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/subprocess.h"
#include "common/sysroot.h"

namespace cmax::audit {

// Finds and runs external commands for the audit.
class CommandRunner {
 public:
  CommandRunner(const Sysroot& root, std::chrono::milliseconds timeout);
  // Absolute path of `name`, or empty when not found.
  std::string Find(const std::string& name) const;
  // Runs argv (argv[0] a name, resolved with Find). NOT_FOUND when the
  // command is missing; otherwise the result, whatever its exit status.
  absl::StatusOr<CommandResult> Run(std::vector<std::string> argv) const;
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::vector<std::string> dirs_;
  std::chrono::milliseconds timeout_;
};

// One component's installed version.
struct ComponentVersion {
  std::string component;   // advisory-table id: "driver", "runc", ...
  std::string device;      // for per-device components (nic_firmware): "mlx5_0"
  bool installed = false;
  std::string version;     // empty when not installed or unreadable
  // "dpkg", "rpm", "upstream binary", "file" or "none".
  std::string source;
  std::string package;     // dpkg/rpm package name when source is a database
  bool distribution_package = false;  // the distribution's own build (may carry backports)
  std::string distro;      // "debian/bookworm" for distribution packages
  std::string evidence;    // the file or command it came from
  std::string error;       // why the version is unknown although installed

  // "1.17.8 (upstream binary: /usr/bin/nvidia-ctk --version)", "not installed".
  std::string Describe() const;
};

struct KernelInfo {
  std::string running;                 // /proc/sys/kernel/osrelease
  std::vector<std::string> installed;  // from /lib/modules and /boot/vmlinuz-*
  std::string newest;                  // newest of `installed` (debian ordering)
  bool reboot_required = false;        // /var/run/reboot-required exists
  std::vector<std::string> reboot_packages;  // /var/run/reboot-required.pkgs
  // The dpkg versions of the linux-image-<release> packages of the running
  // and of the newest installed kernel ("6.1.119-1"); empty when dpkg does
  // not list them (rpm systems, custom kernels).
  std::string running_package;
  std::string newest_package;
};

// Installed packages from a dpkg status file: name -> version, only those
// whose Status is "install ok installed".
std::map<std::string, std::string> ParseDpkgStatus(const std::string& text);

// "debian/bookworm", "ubuntu/jammy", "rhel/9" from /etc/os-release text
// (ID and VERSION_CODENAME, or the major VERSION_ID when there is no codename).
std::string DistroFromOsRelease(const std::string& text);

class Collector {
 public:
  Collector(const Sysroot& root, const CommandRunner& commands);

  // Every component in a fixed order; per-device components appear once per
  // device, or once as not installed.
  std::vector<ComponentVersion> CollectAll();
  KernelInfo Kernel() const;
  const std::string& distro() const { return distro_; }

 private:
  ComponentVersion Missing(const std::string& component) const;
  bool FromDpkg(const std::vector<std::string>& names, const std::vector<std::string>& distro_names,
                ComponentVersion* out) const;
  bool FromRpm(const std::vector<std::string>& names, const std::vector<std::string>& distro_names,
               ComponentVersion* out) const;
  // Runs argv and extracts the first capture of `pattern` from stdout+stderr.
  // True when the command exists (out->installed); version set when matched.
  bool FromCommand(const std::vector<std::string>& argv, const std::string& pattern,
                   ComponentVersion* out) const;

  ComponentVersion Driver();
  ComponentVersion CudaDriver();
  ComponentVersion CudaToolkit();
  ComponentVersion Nccl();
  ComponentVersion ContainerToolkit();
  ComponentVersion Simple(const std::string& component, const std::vector<std::string>& dpkg,
                          const std::vector<std::string>& distro_dpkg,
                          const std::vector<std::string>& argv, const std::string& pattern);
  ComponentVersion Docker();
  std::vector<ComponentVersion> NicFirmware();

  const Sysroot& root_;
  const CommandRunner& commands_;
  std::map<std::string, std::string> dpkg_;
  std::string distro_;
  bool have_rpm_ = false;
};

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_COLLECTORS_H_
