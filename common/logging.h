// One named spdlog logger per component ("coordinator", "agent", ...), all
// writing to stderr, one line per event (line breaks in a message are
// written as "\n"). Under systemd, where stderr is the journal, each line
// carries its syslog priority ("<4>" for a warning, "<3>" for an error) and
// no time of its own, so `journalctl -p warning` finds the warnings.
#ifndef CMAX_COMMON_LOGGING_H_
#define CMAX_COMMON_LOGGING_H_

#include <memory>
#include <string>

#include "spdlog/spdlog.h"

namespace cmax {

// Returns the logger named `component`, creating it on first use.
// Thread-safe.
std::shared_ptr<spdlog::logger> GetLogger(const std::string& component);

// Sets the level of every logger: "debug", "info", "warn", "error".
void SetLogLevel(const std::string& level);

// Whether `fd` is the stream systemd connected to the journal
// (JOURNAL_STREAM): a unit's stdout and stderr. Lines for scripts (the
// coordinator's "listening on") are not written there: the log has them.
bool IsJournalStream(int fd);

}  // namespace cmax

#endif  // CMAX_COMMON_LOGGING_H_
