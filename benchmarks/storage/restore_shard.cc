// Which checkpoint shard restore reads: the node of rank (rank + 1) mod world
// in a group (PairShard, names exchanged as storage/node/<rank>), and the
// kept shard of a node under --path, or of the next node by name for
// --shard-from next (FindShard), refused when incomplete, behind a symbolic
// link, or written without --verify when --verify is asked.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "benchmarks/storage/run_helpers.h"
#include "benchmarks/storage/storage_run.h"
#include "benchmarks/storage/work_dir.h"

namespace cmax::storage {

absl::Status StorageRun::FindShard(std::string* dir, int* jobs, int64_t* size) {
  struct Candidate {
    std::string dir;
    int64_t mtime = 0;
  };
  std::map<std::string, Candidate> by_node;
  DIR* d = opendir(base_.c_str());
  if (!d) return absl::FailedPreconditionError(absl::StrCat("cannot list ", base_));
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    std::string node = NodeOfWorkDir(name);
    if (node.empty()) continue;
    std::string path = absl::StrCat(base_, "/", name);
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    int64_t ignored;
    if (!FileSize(absl::StrCat(path, "/checkpoint/shard.0.0"), &ignored)) continue;
    if (path == work_) continue;  // this run's own directory
    Candidate& c = by_node[node];
    if (st.st_mtime >= c.mtime) c = {path, st.st_mtime};
  }
  closedir(d);
  std::string target = cfg_.shard_from;
  if (target == "next") {
    // Pairing without a coordinator: the next node by name (cyclic) among
    // those that kept a shard, never this node.
    target.clear();
    for (const auto& [node, c] : by_node) {
      if (node > cfg_.node) {
        target = node;
        break;
      }
    }
    if (target.empty()) {
      for (const auto& [node, c] : by_node) {
        if (node != cfg_.node) {
          target = node;
          break;
        }
      }
    }
    if (target.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--shard-from next: no other node kept a checkpoint shard under ", base_,
          " (run --pattern checkpoint --keep on the other nodes first)"));
    }
  }
  auto it = by_node.find(target);
  if (it == by_node.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no kept checkpoint shard of node '", target, "' under ", base_, " (expected ", base_,
        "/", kWorkDirPrefix, target, "-<pid>/checkpoint/shard.0.0 from --pattern checkpoint "
        "--keep)"));
  }
  auto own = CheckOwnDir(base_, it->second.dir);
  if (!own.ok()) return own.status();
  std::string ckpt = absl::StrCat(*own, "/checkpoint");
  if (auto s = CheckNoSymlinks(*own); !s.ok()) return s;
  int n = 0;
  int64_t first = -1;
  for (;; ++n) {
    int64_t sz = 0;
    if (!FileSize(absl::StrCat(ckpt, "/shard.", n, ".0"), &sz)) break;
    if (first < 0) first = sz;
    if (sz != first) {
      return absl::FailedPreconditionError(
          absl::StrCat("shards in ", ckpt, " differ in size (incomplete checkpoint?)"));
    }
  }
  if (cfg_.verify && access(absl::StrCat(ckpt, "/.cmax-verify").c_str(), F_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--verify: the shard in ", ckpt, " was written without --verify (no crc32c headers)"));
  }
  restore_from_ = target;
  *dir = ckpt;
  *jobs = n;
  *size = first;
  return absl::OkStatus();
}


absl::Status StorageRun::PairShard() {
  const int peer = (rv_->rank() + 1) % rv_->world_size();
  auto node = rv_->Get(absl::StrCat("storage/node/", peer), absl::Seconds(barrier_timeout_s_));
  if (!node.ok()) {
    return absl::Status(node.status().code(),
                        absl::StrCat("node name of rank ", peer, ": ", node.status().message()));
  }
  if (*node == cfg_.node) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", peer, " runs on this node (", cfg_.node, "): no other node's shard to read"));
  }
  cfg_.shard_from = *node;
  restore_from_rank_ = absl::StrCat(peer);
  out_->Log("info", absl::StrCat("restore: rank ", rv_->rank(), " reads the shard of rank ", peer,
                                 " (node ", *node, ")"));
  return absl::OkStatus();
}


}  // namespace cmax::storage
