#include "common/logging.h"

#include <mutex>

#include "spdlog/sinks/stdout_sinks.h"

namespace cmax {

std::shared_ptr<spdlog::logger> GetLogger(const std::string& component) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto logger = spdlog::stderr_logger_mt(component);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  logger->set_level(spdlog::get_level());
  return logger;
}

void SetLogLevel(const std::string& level) {
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace cmax
