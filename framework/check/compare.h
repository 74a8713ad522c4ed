// Tensor comparison for pass verification: a bitwise comparator (same dtype, same
// sizes, identical bit patterns, with the first mismatch and ULP distances to explain
// a failure), a tolerance report for places where numerics may legitimately change,
// and a table formatter for reports. Only at::Tensor is forward-declared here so that
// every checker can include this header without paying for the ATen headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace passcheck::check {

/// The outcome of comparing one expected tensor with one actual tensor bit for bit.
///
/// ULP distances: for floating dtypes (f16, bf16, f32, f64; complex per component,
/// the larger of the two) each bit pattern is mapped to an integer that orders like
/// the float, so adjacent representable values are 1 apart, -0.0 and +0.0 are 1 apart
/// and any two different patterns are at least 1 apart; when either value is a NaN
/// (and the patterns differ) the distance is UINT64_MAX, since NaNs have no place in
/// that order. For integer dtypes the distance is |expected - actual| (the integer
/// ULP is 1); for bool it is 1.
struct TensorComparison {
  std::string name;
  /// Same dtype, same sizes, identical bit patterns (two undefined tensors are equal).
  bool equal = false;
  /// Empty when equal; otherwise e.g. "dtype f32 vs f64", "sizes [2, 3] vs [3, 2]",
  /// "4 of 6 elements differ".
  std::string problem;
  /// Short dtype name of the expected tensor ("f32"), or "f32 vs f64" when they differ.
  std::string dtype;
  /// Sizes of the expected tensor (of the actual one when only that is defined).
  std::vector<int64_t> sizes;
  int64_t numel = 0, mismatches = 0;
  /// Multi-dimensional (logical) index of the first differing element; empty for 0-d.
  std::vector<int64_t> first_mismatch_index;
  /// Values at the first mismatch; for complex dtypes, of the first differing component.
  double expected_value = 0, actual_value = 0;
  /// Raw bit patterns of those values (what tells NaN payloads apart).
  uint64_t expected_bits = 0, actual_bits = 0;
  /// ULP distance at the first mismatch and the largest over all elements.
  uint64_t first_ulp = 0, max_ulp = 0;

  /// True when the elements were compared and some differ (not a dtype/size problem).
  bool values_differ() const { return !equal && mismatches > 0; }
  /// One human-readable line.
  std::string describe() const;
};

/// Compares bit patterns of any dtype among bool, integers, f16, bf16, f32, f64 and
/// complex, any strides, any device (copied to CPU contiguous first). Conjugate and
/// negative views are resolved first, sparse and mkldnn layouts densified. Meta
/// tensors hold no data and are never reported equal.
TensorComparison compare_bitwise(const std::string& name, const at::Tensor& expected,
                                 const at::Tensor& actual);

/// Max absolute / relative difference for reports where numerics may legitimately change.
struct ToleranceReport {
  double max_abs = 0, max_rel = 0;
  /// True when every element is within atol absolutely or every element within rtol
  /// relatively; stricter than torch.allclose, which allows atol + rtol * |expected|.
  bool within(double atol, double rtol) const;
};

/// Differences computed in f64 (complex per component); dtypes may differ. NaN against
/// NaN counts as no difference, NaN against a number as infinite; a relative
/// difference against an expected 0 is infinite unless the values are equal. Throws
/// std::invalid_argument when sizes differ, exactly one tensor is undefined, or either
/// is a meta tensor.
ToleranceReport compare_tolerance(const at::Tensor& expected, const at::Tensor& actual);

/// Table with one row per comparison: name, dtype, shape, verdict, mismatches, max ULP,
/// first mismatch (or the problem), followed by a one-line summary.
std::string format_comparison_table(const std::vector<TensorComparison>& rows);

/// Short dtype name used in comparison reports ("f32", "bf16", "i64", "b8").
std::string dtype_name(const at::Tensor& t);

/// "[2, 3]" formatting used in comparison reports.
std::string format_sizes(const std::vector<int64_t>& sizes);

}  // namespace passcheck::check
