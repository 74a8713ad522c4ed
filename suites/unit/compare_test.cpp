// Unit tests for the bitwise tensor comparator, the tolerance report and the comparison
// table: one-bit differences with exact ULP distances in every floating dtype, NaN
// payloads and signed zeros, mismatch indices through strides, dtype/shape/undefined
// problems, integer and complex tensors, and the report text.
#include "framework/check/compare.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace passcheck::check {
namespace {

/// Integer dtype of the same width, to edit a floating tensor's bit patterns in place.
at::ScalarType bits_dtype(at::ScalarType t) {
  switch (c10::elementSize(t)) {
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

/// Adds `delta` to the raw bit pattern of element `linear` of a contiguous tensor.
void bump_bits(at::Tensor& t, int64_t linear, int64_t delta) {
  at::Tensor bits = t.view(bits_dtype(t.scalar_type())).view(-1);
  bits[linear] += delta;
}

at::Tensor f32_from_bits(uint32_t b) {
  at::Tensor t = at::empty({1}, at::kFloat);
  std::memcpy(t.data_ptr(), &b, 4);
  return t;
}

TEST(CompareBitwise, EqualTensorsAreEqual) {
  at::Tensor e = at::randn({4, 5});
  TensorComparison c = compare_bitwise("w", e, e.clone());
  EXPECT_TRUE(c.equal);
  EXPECT_TRUE(c.problem.empty());
  EXPECT_EQ(c.name, "w");
  EXPECT_EQ(c.dtype, "f32");
  EXPECT_EQ(c.sizes, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(c.numel, 20);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.max_ulp, 0u);
  EXPECT_EQ(c.describe(), "w: equal (f32 [4, 5], 20 elements)");
}

TEST(CompareBitwise, EmptyTensorsAreEqual) {
  TensorComparison c = compare_bitwise("e", at::empty({0, 3}), at::empty({0, 3}));
  EXPECT_TRUE(c.equal);
  EXPECT_EQ(c.numel, 0);
}

class OneBitDifference : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(OneBitDifference, ReportsOneUlpAtTheEditedElement) {
  const at::ScalarType dtype = GetParam();
  at::Tensor e = at::full({2, 3}, 1.0, at::TensorOptions().dtype(dtype));
  at::Tensor a = e.clone();
  bump_bits(a, 4, 1);  // logical index [1, 1]
  TensorComparison c = compare_bitwise("x", e, a);
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.numel, 6);
  EXPECT_EQ(c.problem, "1 of 6 elements differ");
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.first_ulp, 1u);
  EXPECT_EQ(c.max_ulp, 1u);
  EXPECT_EQ(c.expected_value, 1.0);
  // The next representable value above 1 is 1 + machine epsilon of the dtype.
  const double eps = dtype == at::kHalf       ? std::ldexp(1.0, -10)
                     : dtype == at::kBFloat16 ? std::ldexp(1.0, -7)
                     : dtype == at::kFloat    ? std::ldexp(1.0, -23)
                                              : std::ldexp(1.0, -52);
  EXPECT_EQ(c.actual_value, 1.0 + eps);
  EXPECT_EQ(c.actual_bits, c.expected_bits + 1);
}

INSTANTIATE_TEST_SUITE_P(FloatingDtypes, OneBitDifference,
                         ::testing::Values(at::kFloat, at::kBFloat16, at::kHalf, at::kDouble),
                         [](const ::testing::TestParamInfo<at::ScalarType>& info) {
                           return std::string(c10::toString(info.param));
                         });

TEST(CompareBitwise, UlpDistanceCountsRepresentableSteps) {
  at::Tensor e = at::full({1}, 1.0f);
  at::Tensor a = e.clone();
  bump_bits(a, 0, 3);
  EXPECT_EQ(compare_bitwise("x", e, a).max_ulp, 3u);
  // Across zero: -denorm_min, -0, +0, +denorm_min are consecutive in the order.
  TensorComparison c = compare_bitwise("x", f32_from_bits(0x80000001u), f32_from_bits(0x00000001u));
  EXPECT_EQ(c.max_ulp, 3u);
  // Symmetric.
  EXPECT_EQ(compare_bitwise("x", f32_from_bits(0x00000001u), f32_from_bits(0x80000001u)).max_ulp,
            3u);
  // Large distances do not wrap: 1.0 vs -1.0 in f64.
  at::Tensor one = at::full({1}, 1.0, at::kDouble);
  TensorComparison d = compare_bitwise("x", one, -one);
  EXPECT_EQ(d.max_ulp, 2 * (0x3FF0000000000000ull) + 1);
}

TEST(CompareBitwise, FirstMismatchIndexIn3DTensor) {
  at::Tensor e = at::arange(24, at::kFloat).reshape({2, 3, 4});
  at::Tensor a = e.clone();
  a.index_put_({1, 2, 3}, 100.0f);  // later in row-major order
  a.index_put_({1, 0, 2}, -7.0f);   // first in row-major order
  TensorComparison c = compare_bitwise("act", e, a);
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(c.expected_value, 14.0);
  EXPECT_EQ(c.actual_value, -7.0);
  EXPECT_EQ(c.problem, "2 of 24 elements differ");
  const std::string line = c.describe();
  EXPECT_NE(line.find("act: 2 of 24 elements differ"), std::string::npos) << line;
  EXPECT_NE(line.find("at [1, 0, 2] expected 14 actual -7"), std::string::npos) << line;
}

TEST(CompareBitwise, ZeroDimTensorHasEmptyIndex) {
  TensorComparison c = compare_bitwise("s", at::scalar_tensor(1.0), at::scalar_tensor(2.0));
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_TRUE(c.first_mismatch_index.empty());
}

TEST(CompareBitwise, SameNanBitsAreEqualDifferentPayloadsDiffer) {
  EXPECT_TRUE(compare_bitwise("n", f32_from_bits(0x7FC00000u), f32_from_bits(0x7FC00000u)).equal);
  TensorComparison c = compare_bitwise("n", f32_from_bits(0x7FC00000u), f32_from_bits(0x7FC00001u));
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.max_ulp, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(c.expected_bits, 0x7FC00000u);
  EXPECT_EQ(c.actual_bits, 0x7FC00001u);
  // Both print as "nan"; the line must show the bit patterns to explain the verdict.
  const std::string line = c.describe();
  EXPECT_NE(line.find("0x7fc00000"), std::string::npos) << line;
  EXPECT_NE(line.find("0x7fc00001"), std::string::npos) << line;
  EXPECT_NE(line.find("NaN ULP"), std::string::npos) << line;
  // A NaN against a number is also an unordered distance.
  EXPECT_EQ(compare_bitwise("n", at::full({1}, 1.0f), f32_from_bits(0x7FC00000u)).max_ulp,
            std::numeric_limits<uint64_t>::max());
  // Half NaN payloads.
  at::Tensor h = at::full({1}, std::nan(""), at::kHalf);
  at::Tensor h2 = h.clone();
  bump_bits(h2, 0, 1);
  EXPECT_FALSE(compare_bitwise("h", h, h2).equal);
  EXPECT_TRUE(compare_bitwise("h", h, h.clone()).equal);
}

TEST(CompareBitwise, SignedZerosDiffer) {
  at::Tensor pos = at::zeros({3});
  at::Tensor neg = -pos;
  ASSERT_TRUE(at::equal(pos, neg));  // numerically equal...
  TensorComparison c = compare_bitwise("z", pos, neg);
  EXPECT_FALSE(c.equal);  // ...but not bitwise
  EXPECT_EQ(c.mismatches, 3);
  EXPECT_EQ(c.max_ulp, 1u);
  EXPECT_EQ(c.expected_bits, 0u);
  EXPECT_EQ(c.actual_bits, 0x80000000u);
  EXPECT_TRUE(std::signbit(c.actual_value));
}

TEST(CompareBitwise, DtypeMismatchMessage) {
  TensorComparison c = compare_bitwise("d", at::zeros({2}, at::kFloat), at::zeros({2}, at::kDouble));
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.problem, "dtype f32 vs f64");
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.describe(), "d: dtype f32 vs f64");
}

TEST(CompareBitwise, ShapeMismatchMessage) {
  TensorComparison c = compare_bitwise("s", at::zeros({2, 3}), at::zeros({3, 2}));
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.problem, "sizes [2, 3] vs [3, 2]");
  EXPECT_FALSE(c.values_differ());
}

TEST(CompareBitwise, NonContiguousInputsCompareLogically) {
  at::Tensor base = at::arange(12, at::kFloat).reshape({3, 4});
  at::Tensor transposed = base.t();  // 4x3, non-contiguous
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(compare_bitwise("t", transposed, transposed.contiguous()).equal);

  at::Tensor a = transposed.contiguous();
  a.index_put_({2, 1}, 99.0f);
  TensorComparison c = compare_bitwise("t", transposed, a);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(c.expected_value, base.index({1, 2}).item<float>());

  // Strided slice and a stride-0 expansion against materialised copies.
  at::Tensor sliced = base.slice(1, 0, 4, 2);
  EXPECT_TRUE(compare_bitwise("s", sliced, sliced.clone(at::MemoryFormat::Contiguous)).equal);
  at::Tensor expanded = at::arange(3, at::kFloat).expand({5, 3});
  EXPECT_TRUE(compare_bitwise("x", expanded, expanded.contiguous()).equal);
  at::Tensor other = expanded.contiguous();
  other.index_put_({4, 2}, 0.5f);
  TensorComparison ce = compare_bitwise("x", expanded, other);
  EXPECT_EQ(ce.mismatches, 1);
  EXPECT_EQ(ce.first_mismatch_index, (std::vector<int64_t>{4, 2}));
}

TEST(CompareBitwise, ConjugateViewsAreResolved) {
  at::Tensor z = at::complex(at::ones({2}), at::full({2}, 2.0f));
  at::Tensor lazy = z.conj();  // conjugate bit set, storage still holds +2i
  ASSERT_TRUE(lazy.is_conj());
  EXPECT_TRUE(compare_bitwise("c", lazy, z.conj().resolve_conj()).equal);
  TensorComparison c = compare_bitwise("c", lazy, z);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.expected_value, -2.0);  // the imaginary component is the one that differs
  EXPECT_EQ(c.actual_value, 2.0);
}

TEST(CompareBitwise, ComplexComponentUlp) {
  at::Tensor e = at::complex(at::ones({3}, at::kDouble), at::ones({3}, at::kDouble));
  at::Tensor a = e.clone();
  at::view_as_real(a).view(at::kLong).view(-1)[3] += 2;  // imaginary part of element 1
  TensorComparison c = compare_bitwise("z", e, a);
  EXPECT_EQ(c.dtype, "c128");
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.max_ulp, 2u);
}

TEST(CompareBitwise, IntegerTensors) {
  at::Tensor e = at::arange(6, at::kLong).reshape({2, 3});
  at::Tensor a = e.clone();
  a.index_put_({0, 2}, 7);  // 2 -> 7
  TensorComparison c = compare_bitwise("i", e, a);
  EXPECT_EQ(c.dtype, "i64");
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(c.expected_value, 2.0);
  EXPECT_EQ(c.actual_value, 7.0);
  EXPECT_EQ(c.max_ulp, 5u);

  // Extremes of a signed type: the distance is the full range, without overflow.
  at::Tensor lo = at::full({1}, -128, at::kChar);
  at::Tensor hi = at::full({1}, 127, at::kChar);
  EXPECT_EQ(compare_bitwise("i8", lo, hi).max_ulp, 255u);
  at::Tensor lo64 = at::full({1}, std::numeric_limits<int64_t>::min(), at::kLong);
  at::Tensor hi64 = at::full({1}, std::numeric_limits<int64_t>::max(), at::kLong);
  EXPECT_EQ(compare_bitwise("i64", lo64, hi64).max_ulp, std::numeric_limits<uint64_t>::max());

  at::Tensor u = at::full({4}, 200, at::kByte);
  EXPECT_TRUE(compare_bitwise("u8", u, u.clone()).equal);
  EXPECT_EQ(compare_bitwise("u8", u, u - 3).max_ulp, 3u);
}

TEST(CompareBitwise, BoolTensors) {
  // at::tensor has no bool overload in LibTorch 1.13.
  at::Tensor e = at::tensor({1, 0, 1}).to(at::kBool);
  at::Tensor a = at::tensor({1, 1, 1}).to(at::kBool);
  TensorComparison c = compare_bitwise("mask", e, a);
  EXPECT_EQ(c.dtype, "b8");
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.max_ulp, 1u);
  EXPECT_TRUE(compare_bitwise("mask", e, e.clone()).equal);
}

TEST(CompareBitwise, UndefinedTensorsEqualOnlyEachOther) {
  TensorComparison both = compare_bitwise("u", at::Tensor(), at::Tensor());
  EXPECT_TRUE(both.equal);
  EXPECT_TRUE(both.problem.empty());
  EXPECT_EQ(both.describe(), "u: equal (both undefined)");

  TensorComparison left = compare_bitwise("u", at::Tensor(), at::zeros({2}));
  EXPECT_FALSE(left.equal);
  EXPECT_EQ(left.problem, "expected is undefined, actual is defined");
  TensorComparison right = compare_bitwise("u", at::zeros({2}), at::Tensor());
  EXPECT_FALSE(right.equal);
  EXPECT_EQ(right.problem, "actual is undefined, expected is defined");
}

TEST(CompareBitwise, MetaTensorsAreNeverEqual) {
  at::Tensor m = at::empty({2, 2}, at::TensorOptions().device(at::kMeta));
  TensorComparison c = compare_bitwise("m", m, m);
  EXPECT_FALSE(c.equal);
  EXPECT_NE(c.problem.find("meta"), std::string::npos) << c.problem;
  // Dtype and size problems are still reported for meta tensors.
  EXPECT_EQ(compare_bitwise("m", m, at::empty({3}, m.options())).problem, "sizes [2, 2] vs [3]");
}

TEST(CompareBitwise, SparseTensorsCompareTheirDenseValues) {
  at::Tensor dense = at::zeros({3, 3});
  dense.index_put_({1, 2}, 4.0f);
  EXPECT_TRUE(compare_bitwise("sp", dense.to_sparse(), dense).equal);
  at::Tensor other = dense.clone();
  other.index_put_({0, 0}, 1.0f);
  TensorComparison c = compare_bitwise("sp", dense.to_sparse(), other.to_sparse());
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch_index, (std::vector<int64_t>{0, 0}));
}

TEST(CompareTolerance, MaxAbsoluteAndRelative) {
  at::Tensor e = at::tensor({1.0, 2.0, 4.0}, at::kDouble);
  at::Tensor a = at::tensor({1.0, 2.5, 3.0}, at::kDouble);
  ToleranceReport r = compare_tolerance(e, a);
  EXPECT_DOUBLE_EQ(r.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(r.max_rel, 0.25);
  EXPECT_TRUE(r.within(1.0, 0.0));
  EXPECT_TRUE(r.within(0.0, 0.25));
  EXPECT_FALSE(r.within(0.5, 0.2));
  ToleranceReport same = compare_tolerance(e, e);
  EXPECT_EQ(same.max_abs, 0.0);
  EXPECT_TRUE(same.within(0.0, 0.0));
}

TEST(CompareTolerance, MixedDtypesNansAndZeros) {
  // Dtypes may differ: f32 1/3 against its f64 value.
  at::Tensor e64 = at::full({1}, 1.0 / 3.0, at::kDouble);
  ToleranceReport r = compare_tolerance(e64, e64.to(at::kFloat));
  EXPECT_GT(r.max_abs, 0.0);
  EXPECT_LT(r.max_abs, 1e-7);

  const double nan = std::nan("");
  EXPECT_EQ(compare_tolerance(at::tensor({nan, 1.0}), at::tensor({nan, 1.0})).max_abs, 0.0);
  ToleranceReport one_nan = compare_tolerance(at::tensor({nan}), at::tensor({1.0}));
  EXPECT_TRUE(std::isinf(one_nan.max_abs));
  EXPECT_FALSE(one_nan.within(1e9, 1e9));
  // Relative difference against an expected zero.
  ToleranceReport z = compare_tolerance(at::tensor({0.0}), at::tensor({1e-9}));
  EXPECT_DOUBLE_EQ(z.max_abs, 1e-9);
  EXPECT_TRUE(std::isinf(z.max_rel));
  EXPECT_EQ(compare_tolerance(at::tensor({0.0}), at::tensor({-0.0})).max_abs, 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(compare_tolerance(at::tensor({inf}), at::tensor({inf})).max_abs, 0.0);
}

TEST(CompareTolerance, RejectsIncomparableInputs) {
  EXPECT_THROW(compare_tolerance(at::zeros({2}), at::zeros({3})), std::invalid_argument);
  EXPECT_THROW(compare_tolerance(at::zeros({2}), at::Tensor()), std::invalid_argument);
  EXPECT_THROW(compare_tolerance(at::empty({2}, at::TensorOptions().device(at::kMeta)),
                                 at::empty({2}, at::TensorOptions().device(at::kMeta))),
               std::invalid_argument);
  EXPECT_EQ(compare_tolerance(at::Tensor(), at::Tensor()).max_abs, 0.0);
}

TEST(ComparisonTable, ContainsNamesVerdictsAndDetails) {
  at::Tensor e = at::arange(6, at::kFloat).reshape({2, 3});
  at::Tensor a = e.clone();
  bump_bits(a, 5, 2);
  std::vector<TensorComparison> rows = {
      compare_bitwise("layer1.weight.grad", e, e.clone()),
      compare_bitwise("loss", e, a),
      compare_bitwise("mask", at::zeros({2}), at::zeros({2}, at::kDouble)),
  };
  const std::string table = format_comparison_table(rows);
  for (const char* needle :
       {"name", "dtype", "shape", "verdict", "mismatches", "max ULP", "first mismatch",
        "layer1.weight.grad", "loss", "mask", "equal", "DIFFERS", "[2, 3]", "1/6",
        "at [1, 2] expected 5 actual", "(2 ULP)", "dtype f32 vs f64",
        "3 tensors: 1 equal, 2 differ"}) {
    EXPECT_NE(table.find(needle), std::string::npos) << "missing '" << needle << "' in\n"
                                                     << table;
  }
  // Header, rule, three rows, summary.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 6);
  // Columns are aligned: every row's verdict starts where the header's does.
  std::vector<std::string> lines;
  std::string line;
  for (char ch : table) {
    if (ch == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += ch;
    }
  }
  const size_t verdict_col = lines[0].find("verdict");
  EXPECT_EQ(lines[2].substr(verdict_col, 5), "equal");
  EXPECT_EQ(lines[3].substr(verdict_col, 7), "DIFFERS");
  EXPECT_EQ(lines[4].substr(verdict_col, 7), "DIFFERS");
}

TEST(ComparisonTable, EmptyTable) {
  const std::string table = format_comparison_table({});
  EXPECT_NE(table.find("0 tensors: 0 equal, 0 differ"), std::string::npos) << table;
}

}  // namespace
}  // namespace passcheck::check
