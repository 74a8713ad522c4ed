// What every benchmark measures with: a steady clock, elapsed time, and the median of the
// timed runs (the figure the benchmarks report, robust to a slow run).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace passcheck::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double ms_since(Clock::time_point start) { return seconds_since(start) * 1e3; }

/// The median of `v` (the mean of the two middle values for an even count); 0 when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace passcheck::bench
