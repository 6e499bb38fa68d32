// Test helper: the Records a piece of code writes through a RecordWriter,
// parsed back from their JSON lines.
#ifndef CMAX_TESTS_BENCHMARKS_GPU_COMMON_CAPTURE_RECORDS_H_
#define CMAX_TESTS_BENCHMARKS_GPU_COMMON_CAPTURE_RECORDS_H_

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/record_io.h"
#include "tests/benchmarks/suite_run.h"

namespace cmax::bench {

inline std::vector<v1::Record> CaptureRecords(
    const std::function<void(RecordWriter*)>& write) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  REQUIRE(mem != nullptr);
  {
    RecordWriter out("burnin", mem);
    write(&out);
  }
  std::fclose(mem);
  std::vector<v1::Record> records = testing::ParseRecords(absl::string_view(buf, len));
  std::free(buf);
  return records;
}

}  // namespace cmax::bench

#endif  // CMAX_TESTS_BENCHMARKS_GPU_COMMON_CAPTURE_RECORDS_H_
