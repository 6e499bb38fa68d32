#include "benchmarks/health/kernel_log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/subprocess.h"

namespace cmax::health {
namespace {

constexpr size_t kMaxLogBytes = 32 << 20;

std::string TailOfString(const std::string& s, size_t max = 400) {
  std::string t = s.size() > max ? s.substr(s.size() - max) : s;
  return std::string(absl::StripAsciiWhitespace(t));
}

absl::Status ErrnoStatus(int e, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", strerror(e));
  if (e == EPERM || e == EACCES) {
    return absl::PermissionDeniedError(
        absl::StrCat(msg, " (kernel.dmesg_restrict=1 allows only privileged readers)"));
  }
  if (e == ENOENT || e == ENOTDIR) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

absl::StatusOr<KernelLog> ReadKmsg(const Sysroot& root, const KernelLogOptions& options) {
  std::string path;
  CMAX_ASSIGN_OR_RETURN(int fd, OpenKmsg(root, options.open_fn, &path));
  std::string data;
  uint64_t overwritten = 0;
  absl::Status s = ReadAvailable(fd, path, kMaxLogBytes, &data, &overwritten);
  ::close(fd);
  if (!s.ok()) return s;
  KernelLog log;
  log.source = "kmsg";
  for (absl::string_view line : absl::StrSplit(data, '\n')) {
    if (auto parsed = ParseKmsgRecord(line)) log.lines.push_back(std::move(*parsed));
  }
  if (log.lines.empty()) {
    return absl::NotFoundError(absl::StrCat(path, ": no kernel log records"));
  }
  return log;
}

absl::StatusOr<KernelLog> ReadJournal(const KernelLogOptions& options) {
  std::vector<std::string> argv = {"journalctl", "-k", "-o", "short-monotonic", "--no-pager"};
  auto r = RunCommand(argv, options.journal_timeout, kMaxLogBytes);
  if (!r.ok()) return r.status();
  std::string cmd = "journalctl -k -o short-monotonic --no-pager";
  if (r->timed_out || !r->exit.exited || r->exit.code != 0) {
    return absl::InternalError(absl::StrCat(cmd, ": ", r->exit.Describe(),
                                            r->timed_out ? " (timed out)" : "", ": ",
                                            TailOfString(r->err)));
  }
  // Without access to the system journal, journalctl prints a hint and
  // shows only the user's own messages: that is not the kernel log.
  if (absl::StrContains(r->err, "not seeing messages") ||
      absl::StrContains(r->err, "No journal files")) {
    return absl::PermissionDeniedError(absl::StrCat(cmd, ": ", TailOfString(r->err)));
  }
  KernelLog log;
  log.source = "journal";
  for (absl::string_view line : absl::StrSplit(r->out, '\n')) {
    if (auto parsed = ParseJournalLine(line)) log.lines.push_back(std::move(*parsed));
  }
  if (log.lines.empty()) return absl::NotFoundError(absl::StrCat(cmd, ": no kernel messages"));
  return log;
}

}  // namespace

absl::StatusOr<int> OpenKmsg(const Sysroot& root,
                             const std::function<int(const char* path, int flags)>& open_fn,
                             std::string* path) {
  *path = root.Path("/dev/kmsg");
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
  int fd = open_fn ? open_fn(path->c_str(), flags) : ::open(path->c_str(), flags);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", *path));
  return fd;
}

absl::Status ReadAvailable(int fd, const std::string& path, size_t max_bytes, std::string* out,
                           uint64_t* overwritten) {
  // One read() of the device returns one whole record (EINVAL when the
  // buffer is too small); a record is about 1 KiB at most, so 16 KiB holds one.
  std::string buf(16384, '\0');
  size_t total = 0;
  while (total < max_bytes) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      out->append(buf.data(), static_cast<size_t>(n));
      total += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return absl::OkStatus();  // end of a regular file
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK) return absl::OkStatus();
    if (e == EINTR) continue;
    if (e == EPIPE) {
      ++*overwritten;
      continue;
    }
    return ErrnoStatus(e, absl::StrCat("read ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<KernelLog> ReadKernelLog(const Sysroot& root, const KernelLogOptions& options) {
  auto kmsg = ReadKmsg(root, options);
  if (kmsg.ok()) return kmsg;
  if (!root.is_real() || !options.allow_journal) return kmsg.status();
  auto journal = ReadJournal(options);
  if (journal.ok()) return journal;
  std::string msg = absl::StrCat(kmsg.status().message(), "; ", journal.status().message());
  // Report the refusal when either source refused: that is the fixable cause.
  if (absl::IsPermissionDenied(kmsg.status()) || absl::IsPermissionDenied(journal.status())) {
    return absl::PermissionDeniedError(msg);
  }
  return absl::Status(kmsg.status().code(), msg);
}

std::optional<KernelLogLine> ParseKmsgRecord(absl::string_view line) {
  if (line.empty() || line[0] == ' ') return std::nullopt;  // dictionary line
  size_t semi = line.find(';');
  if (semi == absl::string_view::npos) return std::nullopt;
  std::vector<absl::string_view> fields = absl::StrSplit(line.substr(0, semi), ',');
  if (fields.size() < 3) return std::nullopt;
  int64_t usec = 0;
  if (!absl::SimpleAtoi(fields[2], &usec)) return std::nullopt;
  KernelLogLine out;
  out.mono_s = static_cast<double>(usec) / 1e6;
  out.text = std::string(line.substr(semi + 1));
  return out;
}

std::optional<KernelLogLine> ParseJournalLine(absl::string_view line) {
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(line);
  if (rest.empty() || absl::StartsWith(rest, "--")) return std::nullopt;
  KernelLogLine out;
  if (rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == absl::string_view::npos) return std::nullopt;
    double s = -1;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(rest.substr(1, close - 1)), &s)) {
      out.mono_s = s;
    }
    rest = rest.substr(close + 1);
  }
  // "<host> kernel: <text>"
  size_t k = rest.find(" kernel: ");
  out.text = std::string(k == absl::string_view::npos ? absl::StripLeadingAsciiWhitespace(rest)
                                                     : rest.substr(k + 9));
  return out;
}

std::string NormalizePciAddress(absl::string_view address) {
  absl::string_view a = absl::StripAsciiWhitespace(address);
  if (absl::StartsWithIgnoreCase(a, "PCI:")) a.remove_prefix(4);
  std::vector<absl::string_view> parts = absl::StrSplit(a, ':');
  if (parts.size() != 3) return "";
  absl::string_view dev = parts[2];
  if (size_t dot = dev.find('.'); dot != absl::string_view::npos) dev = dev.substr(0, dot);
  uint32_t domain = 0, bus = 0, device = 0;
  if (!absl::SimpleHexAtoi(parts[0], &domain) || !absl::SimpleHexAtoi(parts[1], &bus) ||
      !absl::SimpleHexAtoi(dev, &device)) {
    return "";
  }
  return absl::StrFormat("%04x:%02x:%02x", domain & 0xffff, bus, device);
}

std::vector<XidEvent> ParseXidEvents(const std::vector<KernelLogLine>& lines) {
  std::vector<XidEvent> events;
  for (const auto& line : lines) {
    absl::string_view t = line.text;
    size_t at = t.find("Xid (");
    if (at == absl::string_view::npos) continue;
    bool sxid = at > 0 && t[at - 1] == 'S';
    if (!sxid && !absl::StrContains(t.substr(0, at), "NVRM")) continue;
    size_t close = t.find("): ", at);
    if (close == absl::string_view::npos) continue;
    XidEvent e;
    e.sxid = sxid;
    e.pci = NormalizePciAddress(t.substr(at + 5, close - (at + 5)));
    absl::string_view rest = t.substr(close + 3);
    size_t digits = 0;
    while (digits < rest.size() && absl::ascii_isdigit(static_cast<unsigned char>(rest[digits]))) {
      ++digits;
    }
    if (digits == 0 || !absl::SimpleAtoi(rest.substr(0, digits), &e.code)) continue;
    if (size_t p = rest.find("pid="); p != absl::string_view::npos) {
      absl::string_view v = rest.substr(p + 4);
      size_t n = 0;
      while (n < v.size() && absl::ascii_isdigit(static_cast<unsigned char>(v[n]))) ++n;
      long pid = -1;
      if (n > 0 && absl::SimpleAtoi(v.substr(0, n), &pid)) e.pid = pid;
    }
    if (sxid) {
      // "<code>, Fatal, ..." or "<code>, Non-fatal, ..."
      e.fatal = absl::StrContains(rest, ", Fatal") && !absl::StrContains(rest, "Non-fatal");
    }
    e.mono_s = line.mono_s;
    e.text = line.text;
    events.push_back(std::move(e));
  }
  return events;
}

std::map<std::string, std::string> ParseGpuUuidLines(const std::vector<KernelLogLine>& lines) {
  std::map<std::string, std::string> out;
  for (const auto& line : lines) {
    absl::string_view t = line.text;
    size_t at = t.find("NVRM: GPU at PCI:");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = t.substr(at + 13);  // "PCI:dddd:bb:dd: GPU-..."
    size_t sep = rest.find(": GPU-");
    if (sep == absl::string_view::npos) continue;
    std::string pci = NormalizePciAddress(rest.substr(0, sep));
    absl::string_view uuid = absl::StripAsciiWhitespace(rest.substr(sep + 2));
    if (!pci.empty()) out[pci] = std::string(uuid);
  }
  return out;
}

}  // namespace cmax::health
