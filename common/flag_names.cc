#include "common/flag_names.h"

namespace cmax {

DashedFlags::DashedFlags(int argc, char** argv) {
  bool after_separator = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") after_separator = true;
    if (i > 0 && !after_separator && a.size() > 2 && a[0] == '-' && a[1] == '-') {
      size_t end = a.find('=');
      if (end == std::string::npos) end = a.size();
      for (size_t j = 2; j < end; ++j) {
        if (a[j] == '-') a[j] = '_';
      }
    }
    storage_.push_back(std::move(a));
  }
  for (auto& s : storage_) ptrs_.push_back(s.data());
  ptrs_.push_back(nullptr);
}

}  // namespace cmax
