// Bitwise and tolerance comparison of tensors. Both operands are brought to a canonical
// form (CPU, contiguous, conjugation and negation resolved, strided layout) and then
// walked element by element over their raw bytes, so a comparison never depends on
// floating-point equality: NaN payloads and signed zeros are told apart.
#include "framework/check/compare.h"

#include "framework/ir/meta.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace passcheck::check {

namespace {

constexpr uint64_t kNanDistance = std::numeric_limits<uint64_t>::max();

std::string scalar_type_name(c10::ScalarType type) {
  std::string name = ir::dtype_short_name(type);
  if (name == "unknown_dtype") name = c10::toString(type);
  return name;
}

bool is_meta(const at::Tensor& t) { return t.device().is_meta(); }

/// CPU, contiguous, strided, with lazy conjugation/negation applied: the form whose
/// bytes are the logical values in row-major order.
at::Tensor canonical(const at::Tensor& t) {
  at::Tensor c = t;
  if (c.layout() != at::kStrided) c = c.to_dense();
  c = c.resolve_conj().resolve_neg();
  if (!c.device().is_cpu()) c = c.to(at::kCPU);
  return c.contiguous();
}

/// How to read one element: `components` scalars of type `component`, each `width`
/// bytes (complex numbers are two components).
struct ElementCodec {
  c10::ScalarType component;
  int components = 1;
  size_t width = 0;
};

bool codec_for(c10::ScalarType type, ElementCodec* codec) {
  switch (type) {
    case c10::ScalarType::Bool:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Char:
    case c10::ScalarType::Short:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
      *codec = {type, 1, c10::elementSize(type)};
      return true;
    case c10::ScalarType::ComplexHalf:
      *codec = {c10::ScalarType::Half, 2, 2};
      return true;
    case c10::ScalarType::ComplexFloat:
      *codec = {c10::ScalarType::Float, 2, 4};
      return true;
    case c10::ScalarType::ComplexDouble:
      *codec = {c10::ScalarType::Double, 2, 8};
      return true;
    default:
      // Quantized tensors carry scale and zero point outside their bytes; comparing
      // bytes alone would call different tensors equal.
      return false;
  }
}

uint64_t load_bits(const uint8_t* p, size_t width) {
  switch (width) {
    case 1: return *p;
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

template <typename T>
T bits_as(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

double to_double(c10::ScalarType type, uint64_t bits) {
  switch (type) {
    case c10::ScalarType::Bool: return bits != 0 ? 1.0 : 0.0;
    case c10::ScalarType::Byte: return static_cast<double>(static_cast<uint8_t>(bits));
    case c10::ScalarType::Char: return static_cast<double>(static_cast<int8_t>(bits));
    case c10::ScalarType::Short: return static_cast<double>(static_cast<int16_t>(bits));
    case c10::ScalarType::Int: return static_cast<double>(static_cast<int32_t>(bits));
    case c10::ScalarType::Long: return static_cast<double>(static_cast<int64_t>(bits));
    case c10::ScalarType::Half:
      return static_cast<double>(static_cast<float>(
          c10::Half(static_cast<uint16_t>(bits), c10::Half::from_bits())));
    case c10::ScalarType::BFloat16:
      return static_cast<double>(static_cast<float>(
          c10::BFloat16(static_cast<uint16_t>(bits), c10::BFloat16::from_bits())));
    case c10::ScalarType::Float: return static_cast<double>(bits_as<float>(bits));
    case c10::ScalarType::Double: return bits_as<double>(bits);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

/// Exponent and mantissa masks of a floating format, zero for non-floats.
struct FloatMasks {
  uint64_t exponent = 0, mantissa = 0;
  unsigned bits = 0;
};

FloatMasks float_masks(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Half: return {0x7C00, 0x03FF, 16};
    case c10::ScalarType::BFloat16: return {0x7F80, 0x007F, 16};
    case c10::ScalarType::Float: return {0x7F800000, 0x007FFFFF, 32};
    case c10::ScalarType::Double: return {0x7FF0000000000000ull, 0x000FFFFFFFFFFFFFull, 64};
    default: return {};
  }
}

bool is_nan_bits(const FloatMasks& m, uint64_t bits) {
  return (bits & m.exponent) == m.exponent && (bits & m.mantissa) != 0;
}

/// Maps a sign-magnitude float pattern to an unsigned key that orders like the
/// floats: negatives are inverted below the sign bit, positives lifted above it, so
/// -0.0 and +0.0 are neighbours and the mapping is a bijection.
uint64_t ordered_key(const FloatMasks& m, uint64_t bits) {
  const uint64_t all = m.bits == 64 ? ~0ull : ((1ull << m.bits) - 1);
  const uint64_t sign = 1ull << (m.bits - 1);
  return (bits & sign) ? (~bits & all) : (bits | sign);
}

uint64_t abs_diff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

uint64_t distance(c10::ScalarType type, uint64_t a, uint64_t b) {
  if (a == b) return 0;
  const FloatMasks masks = float_masks(type);
  if (masks.bits != 0) {
    if (is_nan_bits(masks, a) || is_nan_bits(masks, b)) return kNanDistance;
    return abs_diff(ordered_key(masks, a), ordered_key(masks, b));
  }
  switch (type) {
    case c10::ScalarType::Bool: return 1;
    case c10::ScalarType::Byte: return abs_diff(a, b);
    case c10::ScalarType::Char:
    case c10::ScalarType::Short:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long: {
      // Sign-extend, then subtract in unsigned arithmetic: exact even for
      // INT64_MAX - INT64_MIN, which does not fit a signed difference.
      auto sext = [&](uint64_t v) {
        const unsigned shift = 64 - 8 * static_cast<unsigned>(c10::elementSize(type));
        return static_cast<int64_t>(v << shift) >> shift;
      };
      const int64_t sa = sext(a), sb = sext(b);
      return sa > sb ? static_cast<uint64_t>(sa) - static_cast<uint64_t>(sb)
                     : static_cast<uint64_t>(sb) - static_cast<uint64_t>(sa);
    }
    default: return 1;
  }
}

std::vector<int64_t> unravel(int64_t linear, c10::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 0) continue;  // unreachable: an empty tensor has no mismatch
    index[d] = linear % sizes[d];
    linear /= sizes[d];
  }
  return index;
}

/// Significant digits that print every value of the dtype distinctly.
int digits_for(const std::string& dtype) {
  if (dtype == "f16" || dtype == "ComplexHalf") return 5;
  if (dtype == "bf16") return 4;
  if (dtype == "f32" || dtype == "c64") return 9;
  if (dtype == "f64" || dtype == "c128") return 17;
  return 19;  // integers: exact up to 2^53, which is what a double holds anyway
}

std::string format_value(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g", digits, v);
  return buffer;
}

std::string format_bits(uint64_t bits) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%" PRIx64, bits);
  return buffer;
}

std::string format_ulp(uint64_t ulp) {
  return ulp == kNanDistance ? std::string("NaN") : std::to_string(ulp);
}

/// "expected 1 actual 1.00000012 (1 ULP)", with bit patterns added when the printed
/// values cannot tell the two apart (NaN payloads).
std::string describe_first_mismatch(const TensorComparison& c) {
  const int digits = digits_for(c.dtype);
  std::string e = format_value(c.expected_value, digits);
  std::string a = format_value(c.actual_value, digits);
  if (e == a) {
    e += " (" + format_bits(c.expected_bits) + ")";
    a += " (" + format_bits(c.actual_bits) + ")";
  }
  return "at " + format_sizes(c.first_mismatch_index) + " expected " + e + " actual " + a +
         " (" + format_ulp(c.first_ulp) + " ULP)";
}

}  // namespace

std::string format_sizes(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(sizes[i]);
  }
  return out + "]";
}

std::string dtype_name(const at::Tensor& t) {
  return t.defined() ? scalar_type_name(t.scalar_type()) : std::string("undefined");
}

std::string TensorComparison::describe() const {
  std::string out = name + ": ";
  if (equal) {
    if (dtype == "undefined") return out + "equal (both undefined)";
    return out + "equal (" + dtype + " " + format_sizes(sizes) + ", " + std::to_string(numel) +
           " elements)";
  }
  out += problem;
  if (values_differ()) {
    out += "; first " + describe_first_mismatch(*this) + "; max " + format_ulp(max_ulp) + " ULP";
  }
  return out;
}

TensorComparison compare_bitwise(const std::string& name, const at::Tensor& expected,
                                 const at::Tensor& actual) {
  TensorComparison c;
  c.name = name;
  if (!expected.defined() || !actual.defined()) {
    c.equal = !expected.defined() && !actual.defined();
    const at::Tensor& present = expected.defined() ? expected : actual;
    c.dtype = dtype_name(present);
    if (present.defined()) {
      c.sizes = present.sizes().vec();
      c.numel = present.numel();
      c.problem = expected.defined() ? "actual is undefined, expected is defined"
                                     : "expected is undefined, actual is defined";
    }
    return c;
  }

  c.sizes = expected.sizes().vec();
  c.numel = expected.numel();
  c.dtype = dtype_name(expected);
  if (expected.scalar_type() != actual.scalar_type()) {
    c.dtype += " vs " + dtype_name(actual);
    c.problem = "dtype " + c.dtype;
    return c;
  }
  if (expected.sizes() != actual.sizes()) {
    c.problem = "sizes " + format_sizes(c.sizes) + " vs " + format_sizes(actual.sizes().vec());
    return c;
  }
  if (is_meta(expected) || is_meta(actual)) {
    c.problem = "meta tensors hold no data to compare";
    return c;
  }
  ElementCodec codec;
  if (!codec_for(expected.scalar_type(), &codec)) {
    c.problem = "dtype " + c.dtype + " is not supported by the bitwise comparator";
    return c;
  }

  const at::Tensor e = canonical(expected);
  const at::Tensor a = canonical(actual);
  const auto* eb = static_cast<const uint8_t*>(e.data_ptr());
  const auto* ab = static_cast<const uint8_t*>(a.data_ptr());
  const size_t item = codec.width * codec.components;
  const int64_t n = c.numel;
  if (n == 0 || std::memcmp(eb, ab, static_cast<size_t>(n) * item) == 0) {
    c.equal = true;
    return c;
  }

  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* ep = eb + static_cast<size_t>(i) * item;
    const uint8_t* ap = ab + static_cast<size_t>(i) * item;
    if (std::memcmp(ep, ap, item) == 0) continue;
    uint64_t ulp = 0;
    bool first_component_seen = false;
    for (int k = 0; k < codec.components; ++k) {
      const uint64_t ev = load_bits(ep + k * codec.width, codec.width);
      const uint64_t av = load_bits(ap + k * codec.width, codec.width);
      if (ev == av) continue;
      ulp = std::max(ulp, distance(codec.component, ev, av));
      if (c.mismatches == 0 && !first_component_seen) {
        first_component_seen = true;
        c.expected_bits = ev;
        c.actual_bits = av;
        c.expected_value = to_double(codec.component, ev);
        c.actual_value = to_double(codec.component, av);
      }
    }
    if (c.mismatches == 0) {
      c.first_mismatch_index = unravel(i, e.sizes());
      c.first_ulp = ulp;
    }
    c.max_ulp = std::max(c.max_ulp, ulp);
    ++c.mismatches;
  }
  c.problem = std::to_string(c.mismatches) + " of " + std::to_string(n) + " elements differ";
  return c;
}

bool ToleranceReport::within(double atol, double rtol) const {
  return max_abs <= atol || max_rel <= rtol;
}

ToleranceReport compare_tolerance(const at::Tensor& expected, const at::Tensor& actual) {
  ToleranceReport report;
  if (!expected.defined() && !actual.defined()) return report;
  if (!expected.defined() || !actual.defined()) {
    throw std::invalid_argument("compare_tolerance: exactly one tensor is undefined");
  }
  if (expected.sizes() != actual.sizes()) {
    throw std::invalid_argument("compare_tolerance: sizes " + format_sizes(expected.sizes().vec()) +
                                " vs " + format_sizes(actual.sizes().vec()));
  }
  if (is_meta(expected) || is_meta(actual)) {
    throw std::invalid_argument("compare_tolerance: meta tensors hold no data to compare");
  }
  auto as_f64 = [](const at::Tensor& t) {
    at::Tensor c = canonical(t);
    if (c.is_complex()) return at::view_as_real(c.to(at::kComplexDouble)).contiguous();
    return c.to(at::kDouble).contiguous();
  };
  const at::Tensor e = as_f64(expected);
  const at::Tensor a = as_f64(actual);
  const double* ep = e.data_ptr<double>();
  const double* ap = a.data_ptr<double>();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0, n = e.numel(); i < n; ++i) {
    const double x = ep[i], y = ap[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;  // also equal infinities
    const double abs_diff = std::isnan(x) || std::isnan(y) ? inf : std::fabs(x - y);
    const double rel_diff = x == 0 ? inf : abs_diff / std::fabs(x);
    report.max_abs = std::max(report.max_abs, abs_diff);
    report.max_rel = std::max(report.max_rel, std::isnan(rel_diff) ? inf : rel_diff);
  }
  return report;
}

std::string format_comparison_table(const std::vector<TensorComparison>& rows) {
  const std::vector<std::string> header = {"name",       "dtype",   "shape",         "verdict",
                                           "mismatches", "max ULP", "first mismatch"};
  std::vector<std::vector<std::string>> cells;
  int64_t equal_count = 0;
  for (const TensorComparison& c : rows) {
    if (c.equal) ++equal_count;
    std::string mismatches = "-", max_ulp = "-", detail;
    if (c.equal) {
      mismatches = "0";
      max_ulp = "0";
    } else if (c.values_differ()) {
      mismatches = std::to_string(c.mismatches) + "/" + std::to_string(c.numel);
      max_ulp = format_ulp(c.max_ulp);
      detail = describe_first_mismatch(c);
    } else {
      detail = c.problem;
    }
    cells.push_back({c.name, c.dtype, c.dtype == "undefined" ? "-" : format_sizes(c.sizes),
                     c.equal ? "equal" : "DIFFERS", mismatches, max_ulp, detail});
  }

  std::vector<size_t> width(header.size());
  for (size_t k = 0; k < header.size(); ++k) width[k] = header[k].size();
  for (const auto& row : cells)
    for (size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());

  std::ostringstream out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t k = 0; k < row.size(); ++k) {
      if (k != 0) line += "  ";
      line += row[k];
      // The last column is free text; padding it would only add trailing blanks.
      if (k + 1 < row.size()) line.append(width[k] - row[k].size(), ' ');
    }
    // Rows with an empty last column would otherwise end in the previous padding.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  emit(header);
  std::vector<std::string> rule;
  for (size_t k = 0; k < header.size(); ++k) rule.emplace_back(width[k], '-');
  emit(rule);
  for (const auto& row : cells) emit(row);
  out << rows.size() << (rows.size() == 1 ? " tensor: " : " tensors: ") << equal_count
      << " equal, " << (static_cast<int64_t>(rows.size()) - equal_count) << " differ\n";
  return out.str();
}

}  // namespace passcheck::check
