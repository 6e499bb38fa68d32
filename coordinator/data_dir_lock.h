// One coordinator per data directory. Two coordinators on one store would
// each believe their own view of runs and tasks and overwrite each other's;
// the lock makes the second one refuse to start instead.
//
// The lock is an exclusive flock(2) on DIR/cmax.lock, held by an open file
// descriptor for the life of the object. The kernel drops it when the
// process dies, so a crashed coordinator leaves no stale lock. The file holds
// the holder's pid, for the error the next one prints.
#ifndef CMAX_COORDINATOR_DATA_DIR_LOCK_H_
#define CMAX_COORDINATOR_DATA_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace cmax::coordinator {

class DataDirLock {
 public:
  // REQUIRES: `dir` exists. FAILED_PRECONDITION naming the directory and the
  // holder's pid when another process holds the lock; the errno's status
  // when the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<DataDirLock>> Acquire(const std::string& dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_DATA_DIR_LOCK_H_
