// Live progress of a run for `cmaxctl run` and `cmaxctl watch`: a bar per
// suite (tasks ended / total), failures as they happen, a summary at the end.
// On a terminal the bars are redrawn in place; otherwise one line per change.
#ifndef CMAX_COORDINATOR_CTL_PROGRESS_H_
#define CMAX_COORDINATOR_CTL_PROGRESS_H_

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cmax/v1/service.pb.h"

namespace cmax::ctl {

class RunProgress {
 public:
  RunProgress(FILE* out, bool tty) : out_(out), tty_(tty) {}
  void OnEvent(const v1::RunEvent& event);
  // Prints the summary. Returns the exit code of run/watch:
  // 0 all completed and no node failed; 1 a task failed, was lost or timed
  // out, or a node failed; 3 the run did not finish (cancelled, or `ended`
  // is false because the stream broke).
  int Finish(bool ended);
  const v1::RunInfo& run() const { return run_; }

 private:
  void Redraw();
  v1::RunInfo run_;
  std::map<std::string, v1::TaskInfo> tasks_;  // by task id
  std::vector<std::string> suite_order_;
  FILE* out_;
  bool tty_;
  int drawn_lines_ = 0;
};

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_PROGRESS_H_
