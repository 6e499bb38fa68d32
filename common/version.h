#ifndef CMAX_COMMON_VERSION_H_
#define CMAX_COMMON_VERSION_H_

namespace cmax {
inline constexpr char kCmaxVersion[] = "0.1.0";
}  // namespace cmax

#endif  // CMAX_COMMON_VERSION_H_
