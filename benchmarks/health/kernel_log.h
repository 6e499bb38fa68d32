// The kernel log since boot, and the NVIDIA Xid / SXid events in it.
//
// Sources, in order:
//  1. <root>/dev/kmsg, read non-blocking until EAGAIN (a character device on a
//     real system: one record per read(); a regular file under a fixture root).
//     Record format "<prio>,<seq>,<usec>,<flags>;<text>" with dictionary lines
//     starting with a space (Linux Documentation/ABI/testing/dev-kmsg).
//  2. On the real system only (root "/"): `journalctl -k -o short-monotonic
//     --no-pager`, lines "[ <sec>.<usec>] <host> kernel: <text>".
// A refusal of /dev/kmsg (EPERM/EACCES: kernel.dmesg_restrict=1) with no
// usable journal is PERMISSION_DENIED: the caller reports "not measured",
// never "no Xids". A log of zero lines is never taken as evidence either.
#ifndef CMAX_BENCHMARKS_HEALTH_KERNEL_LOG_H_
#define CMAX_BENCHMARKS_HEALTH_KERNEL_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "common/sysroot.h"

namespace cmax::health {

struct KernelLogLine {
  double mono_s = -1;  // seconds since boot; negative when unknown
  std::string text;
};

struct KernelLog {
  std::string source;  // "kmsg" or "journal"
  std::vector<KernelLogLine> lines;
};

struct KernelLogOptions {
  // Seam for tests: opens a path like open(2) (returns an fd, or -1 with
  // errno set). Empty: ::open.
  std::function<int(const char* path, int flags)> open_fn;
  // Try the journal when /dev/kmsg fails (only ever on the real root).
  bool allow_journal = true;
  std::chrono::milliseconds journal_timeout{20000};
};

// Reads the log. OK: at least one line from `source`. PERMISSION_DENIED: the
// log exists but may not be read (message says what was tried). NOT_FOUND or
// INTERNAL otherwise. Messages name the paths and commands.
absl::StatusOr<KernelLog> ReadKernelLog(const Sysroot& root, const KernelLogOptions& options = {});

// The pieces ReadKernelLog and the follower (kmsg_follower.h) share.
// Opens <root>/dev/kmsg non-blocking: the fd, or PERMISSION_DENIED
// (dmesg_restrict), NOT_FOUND or INTERNAL naming the path. Sets *path.
absl::StatusOr<int> OpenKmsg(const Sysroot& root,
                             const std::function<int(const char* path, int flags)>& open_fn,
                             std::string* path);
// Appends what `fd` has now, up to `max_bytes`: until EOF (a regular file) or
// EAGAIN (the device has no more records). EPIPE (records overwritten before
// they were read) is counted in *overwritten and reading goes on. Errors as
// OpenKmsg's, naming "read <path>"; what was read before stays in *out.
absl::Status ReadAvailable(int fd, const std::string& path, size_t max_bytes, std::string* out,
                           uint64_t* overwritten);

// One kmsg record line; nullopt for dictionary lines and malformed lines.
std::optional<KernelLogLine> ParseKmsgRecord(absl::string_view line);
// One journalctl short-monotonic line; nullopt for "-- ... --" markers.
std::optional<KernelLogLine> ParseJournalLine(absl::string_view line);

// An Xid ("NVRM: Xid (PCI:0000:18:00): 79, pid=1234, ...") or an SXid from an
// NVSwitch ("nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, ...").
struct XidEvent {
  bool sxid = false;
  int code = 0;
  std::string pci;  // normalised "dddd:bb:dd" (see NormalizePciAddress); may be empty
  long pid = -1;    // -1 when not printed or '<unknown>'
  bool fatal = false;  // SXid only: the driver printed "Fatal"
  double mono_s = -1;
  std::string text;
};

std::vector<XidEvent> ParseXidEvents(const std::vector<KernelLogLine>& lines);

// "NVRM: GPU at PCI:0000:18:00: GPU-1d2c..." lines: normalised PCI -> UUID.
std::map<std::string, std::string> ParseGpuUuidLines(const std::vector<KernelLogLine>& lines);

// "0000:18:00", "00000000:18:00.0", "PCI:0000:18:00" -> "0000:18:00"
// (domain:bus:device, lower case, function dropped). Empty when unparsable.
std::string NormalizePciAddress(absl::string_view address);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_KERNEL_LOG_H_
