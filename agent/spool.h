// Tails a task's spool file (`records.jsonl`, the child's stdout) into
// (seq, Record) pairs. seq is the 0-based line number, so it is stable across
// agent restarts and rewinds: the coordinator dedups by (task, attempt, rank,
// seq).
//
// Line rules (shared by SpoolTailer and CountSpoolLines, so a task's
// record_count always equals the number of entries the tailer yields):
//   - a line ends with '\n'; while the writer may still append, an
//     unterminated tail is not a line yet;
//   - at the end (`final`: the writer has exited) a non-empty unterminated
//     tail is one more line;
//   - a line that does not parse (cmax::ParseRecordLine), including an empty
//     one or one longer than kMaxRecordLineBytes, becomes a Log record of
//     level "error" saying "malformed record line <seq>: <reason>: <first 200
//     chars>" under the same seq: nothing is dropped silently.
//
// Thread: not thread-safe; owned by the executor thread.
#ifndef CMAX_AGENT_SPOOL_H_
#define CMAX_AGENT_SPOOL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/record.pb.h"

namespace cmax::agent {

struct SpoolEntry {
  int64_t seq = 0;
  v1::Record record;
  size_t line_bytes = 0;  // size of the line in the file (for batch sizing)
};

class SpoolTailer {
 public:
  explicit SpoolTailer(std::string path);

  const std::string& path() const { return path_; }
  // Seq of the next line Read() returns.
  int64_t next_seq() const { return next_seq_; }

  // Returns the lines completed since the last call, in order, at most
  // `max_records` of them and stopping once about `max_bytes` of line data
  // are gathered (at least one line when one is available). `final`: the
  // writer is gone, so an unterminated last line counts. A missing file reads
  // as empty. Non-OK (INTERNAL with the path) only on a read error.
  absl::StatusOr<std::vector<SpoolEntry>> Read(size_t max_records, size_t max_bytes,
                                               bool final = false);

  // Repositions so the next Read() starts at line `seq` (resending after a
  // reconnect). Uses a remembered position at or before `seq` and scans
  // forward from there. A seq beyond the lines present stops at the end (the
  // next Read then returns the lines from there on). Non-OK on a read error.
  absl::Status Seek(int64_t seq);

 private:
  // Finds the end of the line starting at offset_: sets *line_end to the
  // offset of its '\n' (or the file end when `final`). False when the line is
  // not complete yet.
  absl::StatusOr<bool> FindLineEnd(int fd, int64_t file_size, bool final,
                                   int64_t* line_end);
  void Remember(int64_t seq, int64_t offset);

  std::string path_;
  int64_t next_seq_ = 0;
  int64_t offset_ = 0;  // file offset of line next_seq_
  // Scan cursor for the current incomplete line, so a long line being
  // written is not rescanned from its start on every call.
  int64_t scanned_to_ = 0;
  // (seq, offset) checkpoints, ascending, bounded: make Seek cheap.
  std::deque<std::pair<int64_t, int64_t>> checkpoints_;
};

// Number of lines in a finished spool under the rules above (final = true).
// A missing file has 0 lines. Non-OK on a read error.
absl::StatusOr<int64_t> CountSpoolLines(const std::string& path);

// The record that stands for a malformed line (see the rules above).
v1::Record MalformedLineRecord(int64_t seq, const std::string& reason,
                               std::string_view line);

}  // namespace cmax::agent

#endif  // CMAX_AGENT_SPOOL_H_
