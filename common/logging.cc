#include "common/logging.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace cmax {
namespace {

// syslog(3) priorities by spdlog level (trace, debug, info, warn, err,
// critical): journald reads a leading "<N>" on a stream line as the line's
// priority (systemd.exec(5), SyslogLevelPrefix=, on by default).
constexpr const char* kPriorityPrefix[] = {"<7>", "<7>", "<6>", "<4>", "<3>", "<2>", "<6>"};

// %* : the line's priority prefix.
class PriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const int level = static_cast<int>(msg.level);
    const char* p = kPriorityPrefix[level >= 0 && level < 7 ? level : 2];
    dest.append(p, p + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PriorityFlag>();
  }
};

// %& : the message with every line break written as "\n", so one event is
// one journal entry (a stderr tail or a multi-line error stays in its line).
class OneLineMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const char* begin = msg.payload.data();
    const char* end = begin + msg.payload.size();
    for (const char* c = begin; c != end; ++c) {
      if (*c == '\n') {
        dest.append("\\n", "\\n" + 2);
      } else if (*c != '\r') {
        dest.push_back(*c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<OneLineMessageFlag>();
  }
};

}  // namespace

bool IsJournalStream(int fd) {
  // JOURNAL_STREAM is "DEVICE:INODE" of the stream systemd connected to the
  // journal; it only counts while `fd` is still that stream.
  const char* env = getenv("JOURNAL_STREAM");
  if (env == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

std::shared_ptr<spdlog::logger> GetLogger(const std::string& component) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto logger = spdlog::stderr_logger_mt(component);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PriorityFlag>('*').add_flag<OneLineMessageFlag>('&');
  // Under journald the journal keeps the time and the priority; elsewhere
  // (a terminal, a test's log file) the line says both itself.
  static const bool journal = IsJournalStream(STDERR_FILENO);
  formatter->set_pattern(journal ? "%*[%n] %&" : "%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %&");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::get_level());
  return logger;
}

void SetLogLevel(const std::string& level) {
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace cmax
