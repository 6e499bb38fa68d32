// The random pattern that every verified copy of the memory suite carries:
// word i of a buffer is PatternWord(seed, i). Host and device compute the same
// function, so a copy is checked without a second copy of the data.
#ifndef CMAX_BENCHMARKS_CUDA_PATTERN_H_
#define CMAX_BENCHMARKS_CUDA_PATTERN_H_

#include <cstdint>

#ifdef __CUDACC__
#define CMAX_HOST_DEVICE __host__ __device__
#else
#define CMAX_HOST_DEVICE
#endif

namespace cmax::bench {

// SplitMix64 finaliser (Steele, Lea, Flood: "Fast splittable pseudorandom
// number generators", OOPSLA 2014) of the word's index mixed with the seed.
CMAX_HOST_DEVICE inline uint64_t PatternWord(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CUDA_PATTERN_H_
