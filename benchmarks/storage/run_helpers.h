// Small helpers the storage run's files share: byte counts for people, the
// tail of fio's stderr for evidence, a regular file's size, and the storage
// finding every check of the suite starts from (category "storage").
#ifndef CMAX_BENCHMARKS_STORAGE_RUN_HELPERS_H_
#define CMAX_BENCHMARKS_STORAGE_RUN_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "cmax/v1/record.pb.h"

namespace cmax::storage {

// "1.5 GiB": binary units, one decimal.
std::string HumanBytes(double b);

// The last `n` characters of `s` (all of it when shorter).
std::string Tail(const std::string& s, size_t n);

// Size of the regular file `path` (lstat: a symbolic link is not one);
// false when it is missing or not a regular file.
bool FileSize(const std::string& path, int64_t* size);

// A finding of category "storage".
v1::Finding MakeFinding(const std::string& check_id, v1::Severity severity,
                        const std::string& subject, const std::string& title,
                        const std::string& detail);

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_RUN_HELPERS_H_
