// What a schedule says (cmax.v1.ScheduleSpec, as cmaxctl sends it) parsed
// into numbers, and the time arithmetic of its slots and daily window.
//
//   every   "30s", "15m", "6h", "7d": 1 second to 365 days here (seconds are for
//           tests and trials; a real fleet wants hours or days). The
//           coordinator's floor (Schedules::Limits, --min-schedule-period,
//           1 h by default) is checked by Schedules::Add, not here.
//   window  "HH:MM-HH:MM" in UTC, start included, end excluded; an end
//           before the start wraps past midnight ("22:00-04:00"). Empty: any
//           time.
//   nodes   "all" (or empty), "a,b,c" (node names), or "regex:RE" (RE2, full
//           match): the plan's own node selector (cmax.v1.NodeSelector).
//
// Slots are created + k * every (k >= 1). A slot may start only inside the
// window: a slot that comes due outside it waits for the window's next
// opening.
//
// Thread: pure functions and a value type; any thread.
#ifndef CMAX_COORDINATOR_SCHEDULE_TERMS_H_
#define CMAX_COORDINATOR_SCHEDULE_TERMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/plan.pb.h"
#include "cmax/v1/schedule.pb.h"

namespace cmax::coordinator {

inline constexpr int64_t kNsPerSecond = 1000000000;
inline constexpr int64_t kMinuteNs = 60 * kNsPerSecond;
inline constexpr int64_t kDayNs = 1440 * kMinuteNs;

// A daily window in minutes after 00:00 UTC: [start, end), wrapping when
// end < start. start == end never happens (refused).
struct DailyWindow {
  int start_minute = 0;
  int end_minute = 0;
};

struct ScheduleTerms {
  int64_t every_ns = 0;
  v1::NodeSelector nodes;     // all, names or name_regex
  bool only_idle = false;
  bool has_window = false;
  DailyWindow window;
  int max_nodes_at_once = 0;  // 0: all at once
};

// INVALID_ARGUMENT naming the option and what it accepts; the plan is
// checked too (ValidatePlan, and at least one suite). Nothing else is
// looked at: whether the nodes exist is a question for each slot.
absl::StatusOr<ScheduleTerms> ParseScheduleSpec(const v1::ScheduleSpec& spec);

absl::StatusOr<int64_t> ParseEvery(const std::string& text);        // nanoseconds
// A whole number with a unit, s, m, h or d, from 1s to `max_days`, in
// nanoseconds; INVALID_ARGUMENT naming `option` and giving `examples`.
absl::StatusOr<int64_t> ParseDuration(const std::string& text, const std::string& option,
                                      const std::string& examples, int64_t max_days);
absl::StatusOr<DailyWindow> ParseWindow(const std::string& text);
absl::StatusOr<v1::NodeSelector> ParseNodeSelector(const std::string& text);

// Whether `unix_ns` (UTC) falls in the window.
bool InWindow(const DailyWindow& window, int64_t unix_ns);
// The first instant >= `unix_ns` inside the window (`unix_ns` itself when
// it is inside).
int64_t NextInWindow(const DailyWindow& window, int64_t unix_ns);

// The first slot after `unix_ns`: anchor + k * every > unix_ns, k >= 1.
int64_t NextSlotAfter(int64_t anchor_ns, int64_t every_ns, int64_t unix_ns);
// When the slot at `slot_ns` may start: at once, or at the window's next
// opening.
int64_t StartOfSlot(const ScheduleTerms& terms, int64_t slot_ns);

// The connected nodes the selector takes, in name order, and (`missing`)
// the names it lists that are not connected.
std::vector<std::string> SelectScheduleNodes(const v1::NodeSelector& selector,
                                             const std::vector<std::string>& connected,
                                             std::vector<std::string>* missing);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SCHEDULE_TERMS_H_
