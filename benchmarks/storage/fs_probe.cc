#include "benchmarks/storage/fs_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace cmax::storage {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
                                      (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// "/a/b" is under "/a" and "/" but not under "/ab".
bool IsUnder(const std::string& path, const std::string& mount) {
  if (mount == "/") return true;
  if (!absl::StartsWith(path, mount)) return false;
  return path.size() == mount.size() || path[mount.size()] == '/';
}

}  // namespace

bool IsPseudoFs(const std::string& type) {
  static const char* kPseudo[] = {"proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs",
                                  "tracefs", "securityfs", "pstore", "bpf", "configfs",
                                  "mqueue", "fusectl", "binfmt_misc", "autofs", "devtmpfs"};
  for (const char* p : kPseudo) {
    if (type == p) return true;
  }
  return false;
}

absl::StatusOr<MountEntry> FindMount(const std::string& mountinfo, const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("not an absolute path: '", path, "'"));
  }
  MountEntry best;
  bool found = false;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    // id parent major:minor root mount_point options [optional...] - type source super
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 7) continue;
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 1 >= f.size()) continue;
    MountEntry e;
    e.mount_point = Unescape(f[4]);
    e.fs_type = std::string(f[dash + 1]);
    e.source = dash + 2 < f.size() ? Unescape(f[dash + 2]) : "";
    if (!IsUnder(path, e.mount_point)) continue;
    if (!found || e.mount_point.size() >= best.mount_point.size()) {
      best = e;
      found = true;
    }
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no mount covers ", path));
  return best;
}

absl::StatusOr<MountEntry> MountOf(const Sysroot& root, const std::string& path) {
  auto text = root.Read("/proc/self/mountinfo");
  if (!text.ok()) return text.status();
  return FindMount(*text, path);
}

std::string FsTypeFromMagic(int64_t magic) {
  // linux/magic.h unless noted.
  struct Known {
    uint32_t magic;
    const char* name;
  };
  static const Known kKnown[] = {
      {0xEF53, "ext2/3/4"},       {0x58465342, "xfs"},       {0x9123683E, "btrfs"},
      {0x01021994, "tmpfs"},      {0x6969, "nfs"},           {0x794C7630, "overlayfs"},
      {0x65735546, "fuse"},       {0xFF534D42, "cifs"},      {0xFE534D42, "smb2"},
      {0x00C36400, "ceph"},       {0x2FC12FC1, "zfs"},       {0xF2F52010, "f2fs"},
      {0x0BD00BD0, "lustre"},     // lustre/include/uapi/linux/lustre/lustre_user.h
      {0x47504653, "gpfs"},       // "GPFS" in ASCII, IBM Spectrum Scale
      {0x19830326, "beegfs"},     // beegfs client: BEEGFS_MAGIC
      {0x858458F6, "ramfs"},      {0x9FA0, "proc"},          {0x62656572, "sysfs"},
      {0x01021997, "9p"},         {0x73717368, "squashfs"},
  };
  for (const auto& k : kKnown) {
    if (static_cast<uint32_t>(magic) == k.magic) return k.name;
  }
  return absl::StrFormat("0x%x", static_cast<uint64_t>(static_cast<uint32_t>(magic)));
}

std::string StorageClass(const std::string& fs_type, const std::string& source) {
  static const char* kShared[] = {"nfs", "nfs4", "lustre", "gpfs", "beegfs", "wekafs",
                                  "ceph", "cifs", "smb3", "glusterfs", "9p", "panfs",
                                  "orangefs", "pvfs2", "afs", "virtiofs"};
  static const char* kLocal[] = {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs",
                                 "f2fs", "ramfs", "overlay", "bcachefs", "vfat", "exfat"};
  for (const char* s : kShared) {
    if (fs_type == s) return "shared";
  }
  for (const char* s : kLocal) {
    if (fs_type == s) return "local";
  }
  if (absl::StartsWith(fs_type, "fuse")) {
    // Overlay and bind helpers are local; everything else on fuse in a GPU
    // cluster is a network client (VAST, Weka, JuiceFS, s3fs, gcsfuse, ...).
    if (absl::StrContains(fs_type, "overlay") || absl::StrContains(fs_type, "bindfs") ||
        absl::StrContains(fs_type, "lxcfs")) {
      return "local";
    }
    return "shared";
  }
  std::string lower = absl::AsciiStrToLower(source);
  if (absl::StrContains(lower, "vast") || absl::StrContains(lower, "weka")) {
    return "shared";
  }
  return "unknown";
}

absl::StatusOr<uint64_t> FreeBytes(const std::string& path) {
  struct statvfs st;
  if (statvfs(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("statvfs ", path, ": ", strerror(errno)));
  }
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

absl::StatusOr<int64_t> StatfsMagic(const std::string& path) {
  struct statfs st;
  if (statfs(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("statfs ", path, ": ", strerror(errno)));
  }
  return static_cast<int64_t>(st.f_type);
}

bool ProbeDirectIo(const std::string& dir, std::string* why) {
  std::string path = absl::StrCat(dir, "/.cmax-direct-probe");
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC,
                0600);
  if (fd < 0) {
    *why = absl::StrCat("open(O_DIRECT): ", strerror(errno));
    unlink(path.c_str());  // a file system may create it and then refuse
    return false;
  }
  void* buf = nullptr;
  bool ok = false;
  if (posix_memalign(&buf, 4096, 4096) == 0) {
    memset(buf, 0x5a, 4096);
    ssize_t n = pwrite(fd, buf, 4096, 0);
    if (n == 4096) {
      ok = true;
    } else {
      *why = absl::StrCat("aligned 4 KiB write with O_DIRECT: ",
                          n < 0 ? strerror(errno) : "short write");
    }
    free(buf);
  } else {
    *why = "posix_memalign failed";
  }
  close(fd);
  unlink(path.c_str());
  return ok;
}

std::string ProbeIoEngine(std::string* why) {
#ifdef __NR_io_uring_setup
  const long nr = __NR_io_uring_setup;
#else
  const long nr = 425;  // the same number on x86-64 and aarch64
#endif
  // struct io_uring_params is 120 bytes; zeroed means "defaults".
  alignas(8) unsigned char params[120] = {};
  long fd = syscall(nr, 1, params);
  if (fd >= 0) {
    close(static_cast<int>(fd));
    *why = "io_uring_setup succeeded";
    return "io_uring";
  }
  int e = errno;
  if (e == ENOSYS) {
    *why = "io_uring_setup: ENOSYS (kernel without io_uring)";
  } else if (e == EPERM) {
    *why = "io_uring_setup: EPERM (blocked by seccomp or kernel.io_uring_disabled)";
  } else {
    *why = absl::StrCat("io_uring_setup: ", strerror(e));
  }
  return "psync";
}

}  // namespace cmax::storage
