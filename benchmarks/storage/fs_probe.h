// What the storage suite learns about the file system under --path before it
// writes anything: mount point, file system type, mount source, whether it is
// local scratch or shared storage, free space, and which I/O modes work there
// (O_DIRECT, io_uring).
#ifndef CMAX_BENCHMARKS_STORAGE_FS_PROBE_H_
#define CMAX_BENCHMARKS_STORAGE_FS_PROBE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/sysroot.h"

namespace cmax::storage {

struct MountEntry {
  std::string mount_point;  // unescaped (\040 -> ' ')
  std::string fs_type;      // "ext4", "nfs4", "fuse.juicefs", ...
  std::string source;       // "/dev/nvme0n1p1", "10.0.0.5:/export", ...
};

// The entry of /proc/self/mountinfo (text `mountinfo`) whose mount point is
// the longest prefix of `path` (an absolute, resolved path). The last such
// entry wins (a later mount hides an earlier one at the same point).
// NOT_FOUND when no entry covers the path; INVALID_ARGUMENT for a path that
// is not absolute.
absl::StatusOr<MountEntry> FindMount(const std::string& mountinfo, const std::string& path);

// FindMount over `root`'s /proc/self/mountinfo.
absl::StatusOr<MountEntry> MountOf(const Sysroot& root, const std::string& path);

// Name of a statfs f_type magic number ("ext2/3/4", "xfs", "nfs", ...), or
// "0x<hex>" when unknown. Magic values from linux/magic.h and the file
// systems' own sources (lustre, gpfs, beegfs).
std::string FsTypeFromMagic(int64_t magic);

// "local" (ext4, xfs, btrfs, tmpfs, zfs, ...), "shared" (nfs, nfs4, lustre,
// gpfs, beegfs, wekafs, cephfs, cifs, fuse.* network file systems), or
// "unknown". `source` helps for fuse and nfs mounts of VAST and Weka.
std::string StorageClass(const std::string& fs_type, const std::string& source);

// A pseudo file system (proc, sysfs, cgroup, ...) that cannot hold the
// suite's files.
bool IsPseudoFs(const std::string& type);

// Free bytes for an unprivileged writer (statvfs f_bavail * f_frsize).
absl::StatusOr<uint64_t> FreeBytes(const std::string& path);

// statfs(2) f_type of `path`.
absl::StatusOr<int64_t> StatfsMagic(const std::string& path);

// True when a file in `dir` can be opened with O_DIRECT and an aligned 4 KiB
// block written through it. The probe file is removed. `why` says why not.
bool ProbeDirectIo(const std::string& dir, std::string* why);

// "io_uring" when io_uring_setup(2) works for this process, "psync" when it
// is missing (ENOSYS), blocked (EPERM by seccomp, kernel.io_uring_disabled)
// or fails otherwise; `why` says which.
std::string ProbeIoEngine(std::string* why);

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_FS_PROBE_H_
