#include "agent/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/record_io.h"
#include "common/status_macros.h"

namespace cmax::agent {
namespace {

constexpr size_t kScanChunk = 64 << 10;
constexpr size_t kMaxCheckpoints = 256;
constexpr size_t kQuotedPrefix = 200;

// Closes an fd on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status ReadError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

// Reads exactly [offset, offset + size) (short only at end of file).
absl::StatusOr<std::string> ReadRange(int fd, int64_t offset, size_t size,
                                      const std::string& path) {
  std::string data(size, '\0');
  size_t got = 0;
  while (got < size) {
    ssize_t r =
        pread(fd, data.data() + got, size - got, offset + static_cast<int64_t>(got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadError("read", path);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  data.resize(got);
  return data;
}

}  // namespace

v1::Record MalformedLineRecord(int64_t seq, const std::string& reason,
                               std::string_view line) {
  v1::Record record;
  v1::Log* log = record.mutable_log();
  log->set_level("error");
  std::string_view prefix = line.substr(0, std::min(line.size(), kQuotedPrefix));
  log->set_message(absl::StrCat("malformed record line ", seq, ": ", reason, ": ",
                                absl::string_view(prefix.data(), prefix.size())));
  return record;
}

SpoolTailer::SpoolTailer(std::string path) : path_(std::move(path)) {
  checkpoints_.emplace_back(0, 0);
}

void SpoolTailer::Remember(int64_t seq, int64_t offset) {
  if (!checkpoints_.empty() && checkpoints_.back().first >= seq) return;
  checkpoints_.emplace_back(seq, offset);
  if (checkpoints_.size() > kMaxCheckpoints) {
    // Keep (0, 0) so every seq has a checkpoint at or before it; drop the
    // second oldest.
    checkpoints_.erase(checkpoints_.begin() + 1);
  }
}

absl::StatusOr<bool> SpoolTailer::FindLineEnd(int fd, int64_t file_size, bool final,
                                              int64_t* line_end) {
  int64_t pos = std::max(scanned_to_, offset_);
  char buf[kScanChunk];
  while (pos < file_size) {
    size_t want = static_cast<size_t>(std::min<int64_t>(kScanChunk, file_size - pos));
    ssize_t r = pread(fd, buf, want, pos);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadError("read", path_);
    }
    if (r == 0) break;
    const void* nl = memchr(buf, '\n', static_cast<size_t>(r));
    if (nl != nullptr) {
      *line_end = pos + (static_cast<const char*>(nl) - buf);
      return true;
    }
    pos += r;
  }
  scanned_to_ = pos;
  if (final && file_size > offset_) {
    *line_end = file_size;
    return true;
  }
  return false;
}

absl::StatusOr<std::vector<SpoolEntry>> SpoolTailer::Read(size_t max_records,
                                                          size_t max_bytes, bool final) {
  std::vector<SpoolEntry> out;
  Fd fd(open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return out;
    return ReadError("open", path_);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ReadError("stat", path_);
  const int64_t file_size = st.st_size;
  Remember(next_seq_, offset_);
  size_t bytes = 0;
  while (out.size() < max_records && (out.empty() || bytes < max_bytes)) {
    int64_t line_end = 0;
    CMAX_ASSIGN_OR_RETURN(bool found, FindLineEnd(fd.get(), file_size, final, &line_end));
    if (!found) break;
    const int64_t line_len = line_end - offset_;
    SpoolEntry entry;
    entry.seq = next_seq_;
    entry.line_bytes = static_cast<size_t>(line_len);
    if (line_len > static_cast<int64_t>(kMaxRecordLineBytes)) {
      CMAX_ASSIGN_OR_RETURN(std::string prefix,
                            ReadRange(fd.get(), offset_, kQuotedPrefix, path_));
      entry.record =
          MalformedLineRecord(next_seq_,
                              absl::StrCat("record line of ", line_len, " bytes exceeds ",
                                           kMaxRecordLineBytes),
                              prefix);
      entry.line_bytes = kQuotedPrefix;  // what is actually sent
    } else {
      CMAX_ASSIGN_OR_RETURN(std::string line,
                            ReadRange(fd.get(), offset_, static_cast<size_t>(line_len), path_));
      absl::StatusOr<v1::Record> record = ParseRecordLine(line);
      if (record.ok()) {
        entry.record = *std::move(record);
      } else {
        entry.record =
            MalformedLineRecord(next_seq_, std::string(record.status().message()), line);
      }
    }
    bytes += entry.line_bytes;
    out.push_back(std::move(entry));
    offset_ = line_end < file_size ? line_end + 1 : line_end;
    scanned_to_ = offset_;
    ++next_seq_;
  }
  return out;
}

absl::Status SpoolTailer::Seek(int64_t seq) {
  if (seq < 0) seq = 0;
  // The latest checkpoint at or before seq ((0, 0) is always there).
  auto it = std::upper_bound(
      checkpoints_.begin(), checkpoints_.end(), seq,
      [](int64_t s, const std::pair<int64_t, int64_t>& c) { return s < c.first; });
  --it;
  next_seq_ = it->first;
  offset_ = it->second;
  scanned_to_ = offset_;
  if (next_seq_ == seq) return absl::OkStatus();
  Fd fd(open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ReadError("open", path_);
  }
  char buf[kScanChunk];
  int64_t pos = offset_;
  while (next_seq_ < seq) {
    ssize_t r = pread(fd.get(), buf, sizeof(buf), pos);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadError("read", path_);
    }
    if (r == 0) break;
    const char* p = buf;
    const char* end = buf + r;
    while (next_seq_ < seq) {
      const void* nl = memchr(p, '\n', static_cast<size_t>(end - p));
      if (nl == nullptr) break;
      p = static_cast<const char*>(nl) + 1;
      ++next_seq_;
      offset_ = pos + (p - buf);
    }
    pos += r;
  }
  scanned_to_ = offset_;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CountSpoolLines(const std::string& path) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return 0;
    return ReadError("open", path);
  }
  char buf[kScanChunk];
  int64_t lines = 0;
  bool partial = false;  // bytes after the last '\n'
  for (;;) {
    ssize_t r = read(fd.get(), buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ReadError("read", path);
    }
    if (r == 0) break;
    for (ssize_t i = 0; i < r; ++i) {
      if (buf[i] == '\n') {
        ++lines;
        partial = false;
      } else {
        partial = true;
      }
    }
  }
  return lines + (partial ? 1 : 0);
}

}  // namespace cmax::agent
