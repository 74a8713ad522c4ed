// The cleanup situations generator (see cleanup_situations.h). A case is plain text
// assembled motif by motif; each motif declares its own inputs, uses fresh value names
// and returns what a wrong rewrite would change. Sizes are small and, where a motif
// needs it, distinct (so a transpose or a reshape cannot be an identity by accident).
// Output types are computed here exactly as the executor will find them, since the
// property checks run with metadata checking on.
#include "generators/cleanup_situations.h"
#include "generators/choice.h"

#include "framework/ir/text.h"

#include <algorithm>
#include <functional>
#include <random>

namespace passcheck::gen {

namespace {

using Sizes = std::vector<int64_t>;

Sizes contiguous(const Sizes& sizes) {
  Sizes strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(sizes[i], 1);
  return strides;
}

std::string list(const Sizes& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out;
}

// "f32[2, 3]", with "{strides}" when not row-major.
std::string type(const Sizes& sizes, const Sizes& strides = {}, const std::string& dtype = "f32") {
  std::string out = dtype + "[" + list(sizes) + "]";
  if (!strides.empty() && strides != contiguous(sizes)) out += "{" + list(strides) + "}";
  return out;
}

struct View {
  Sizes sizes, strides;
};

View transposed(const View& v, size_t a, size_t b) {
  View out = v;
  std::swap(out.sizes[a], out.sizes[b]);
  std::swap(out.strides[a], out.strides[b]);
  return out;
}

View permuted(const View& v, const std::vector<size_t>& dims) {
  View out;
  for (size_t d : dims) {
    out.sizes.push_back(v.sizes[d]);
    out.strides.push_back(v.strides[d]);
  }
  return out;
}

View sliced(const View& v, size_t dim, int64_t start, int64_t end, int64_t step) {
  View out = v;
  int64_t stop = std::min(end, v.sizes[dim]);
  out.sizes[dim] = std::max<int64_t>(0, (stop - start + step - 1) / step);
  out.strides[dim] *= step;
  return out;
}

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {}

  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool coin() { return pick(0, 1) == 1; }
  /// Two different sizes in [2, 4].
  std::pair<int64_t, int64_t> two_sizes() {
    int64_t a = pick(2, 4), b = pick(2, 3);
    if (b >= a) ++b;
    return {a, b};
  }
  Sizes three_sizes() {
    Sizes s = {2, 3, 4};
    std::shuffle(s.begin(), s.end(), rng_);
    return s;
  }

  std::string input(const std::string& role, const std::string& type_text) {
    std::string name = "%in" + std::to_string(inputs_.size());
    inputs_.push_back(role + " " + name + " : " + type_text);
    return name;
  }
  /// Appends `%v = op` with the given output type; returns the value.
  std::string node(const std::string& type_text, const std::string& op, const std::string& meta = "") {
    std::string name = "%v" + std::to_string(counter_++);
    lines_.push_back("  " + name + " : " + type_text + " = " + op + (meta.empty() ? "" : "  #{" + meta + "}"));
    return name;
  }
  void node_without_outputs(const std::string& op) { lines_.push_back("  () = " + op); }
  void output(const std::string& value) { outputs_.push_back(value); }

  std::string text() const {
    std::string out = "graph(";
    for (size_t i = 0; i < inputs_.size(); ++i) out += (i ? ",\n    " : "\n    ") + inputs_[i];
    out += "):\n";
    for (const std::string& l : lines_) out += l + "\n";
    out += "  return (";
    for (size_t i = 0; i < outputs_.size(); ++i) out += (i ? ", " : "") + outputs_[i];
    return out + ")\n";
  }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> inputs_, lines_, outputs_;
  int counter_ = 0;
};

using Motif = std::function<std::string(Builder&)>;

// An unused pure chain next to a used value (dce erase-unused).
std::string dead_code(Builder& b) {
  int64_t n = b.pick(2, 4);
  std::string t = type({n});
  std::string x = b.input("arg", t);
  std::string u = b.node(t, "aten::relu(" + x + ")");
  b.node(t, "aten::neg(" + u + ")");
  b.output(b.node(t, "aten::exp(" + x + ")"));
  return "dead-code";
}

// Two candidates for one merge, returned both (cse refuses to merge two returned values:
// distinct-outputs), or, when the situation's size `n` is 3, read by one returned sum,
// so a wrong merge shows in its value (the size decides, so the random stream of every
// later situation is what it was).
void returned_or_combined(Builder& b, const std::string& t, int64_t n, const std::string& a, const std::string& c) {
  if (n != 3) {
    b.output(a);
    b.output(c);
    return;
  }
  b.output(b.node(t, "aten::add.Tensor(" + a + ", " + c + ", 1)"));
}

// A pure op on a buffer, an unused in-place write to the buffer, the same op again
// (cse mutation-between, dce mutating).
std::string write_then_reread(Builder& b) {
  int64_t n = b.pick(2, 4);
  std::string t = type({n});
  std::string buf = b.input("buffer", t), x = b.input("arg", t);
  bool binary = b.coin();
  std::string op = binary ? "aten::mul.Tensor(" + buf + ", " + x + ")" : "aten::relu(" + buf + ")";
  std::string before = b.node(t, op);
  b.node(t, "aten::add_.Tensor(" + buf + ", " + x + ", 1)");
  returned_or_combined(b, t, n, before, b.node(t, op));
  return std::string("write-then-reread(") + (binary ? "mul" : "relu") + ")";
}

// Two equal pure ops, then a write into the first result, directly or through a view
// (cse result-written).
std::string written_result(Builder& b) {
  int64_t n = b.pick(2, 4);
  std::string t = type({n});
  std::string x = b.input("arg", t), y = b.input("arg", t);
  std::string y1 = b.node(t, "aten::mul.Tensor(" + x + ", " + y + ")");
  std::string y2 = b.node(t, "aten::mul.Tensor(" + x + ", " + y + ")");
  bool through_view = b.coin();
  std::string target = through_view ? b.node(t, "aten::view(" + y1 + ", [" + std::to_string(n) + "])") : y1;
  b.node(t, "aten::add_.Tensor(" + target + ", " + x + ", 1)");
  returned_or_combined(b, t, n, y2, y1);
  return std::string("written-result(") + (through_view ? "through a view" : "direct") + ")";
}

// Random draws: two equal ones both used (cse random), or an unused one before a used
// one (dce random).
std::string random_draws(Builder& b) {
  auto [n, m] = b.two_sizes();
  std::string t = type({n, m});
  std::string x = b.input("arg", t);
  int64_t variant = b.pick(0, 2);
  std::string draw = variant == 2 ? "aten::randn([" + list({n, m}) + "], None, None, None, None)"
                                  : "aten::rand_like(" + x + ")";
  std::string first = b.node(t, draw);
  if (variant != 1) b.output(first);
  b.output(b.node(t, draw));
  static const char* names[] = {"two rand_like", "unused rand_like first", "two randn"};
  return std::string("random-draws(") + names[variant] + ")";
}

// The generator state read, a draw, the state swapped back (its result unused) and the
// draw again: the second draw repeats the first only while the swap stays (dce
// side-effects). Or a state read nobody uses.
std::string rng_state(Builder& b) {
  int64_t n = b.pick(2, 4);
  std::string t = type({n});
  std::string x = b.input("arg", t);
  const std::string state_type = "u8[5056]";
  std::string state = b.node(state_type, "passcheck::rng_state(device(\"cpu\"))");
  b.output(b.node(t, "aten::rand_like(" + x + ")"));
  bool swap = b.coin();
  if (swap) b.node(state_type, "passcheck::swap_rng_state(" + state + ", device(\"cpu\"))");
  b.output(b.node(t, "aten::rand_like(" + x + ")"));
  return std::string("rng-state(") + (swap ? "swap back" : "unused read") + ")";
}

// An async assert on a value nobody else reads (dce erase-async-assert), or an in-place
// update without outputs read back (what an assert-shaped mistake would erase).
std::string asserts(Builder& b) {
  int64_t n = b.pick(2, 4);
  std::string t = type({n});
  if (b.coin()) {
    std::string x = b.input("arg", t);
    std::string a = b.node(t, "aten::abs(" + x + ")");
    std::string ge = b.node(type({n}, {}, "b8"), "aten::ge.Scalar(" + a + ", 0)");
    std::string all = b.node("b8[]", "aten::all(" + ge + ")");
    b.node_without_outputs("aten::_assert_async(" + all + ")");
    b.output(b.node(t, "aten::exp(" + x + ")"));
    return "asserts(assert_async)";
  }
  std::string buf = b.input("buffer", t);
  b.node_without_outputs("aten::_foreach_add_.Scalar([" + buf + "], 1.5)");
  b.output(b.node(t, "aten::neg(" + buf + ")"));
  return "asserts(foreach update without outputs)";
}

// detach(x) used, detach of detach, or a detach written in place (the write reaches
// the input it aliases either way).
std::string detaches(Builder& b) {
  auto [n, m] = b.two_sizes();
  std::string t = type({n, m});
  int64_t variant = b.pick(0, 2);
  if (variant == 2) {
    std::string buf = b.input("buffer", t);
    std::string d = b.node(t, "aten::detach(" + buf + ")");
    b.node(t, "aten::mul_.Scalar(" + d + ", 2)");
    b.output(b.node(t, "aten::neg(" + buf + ")"));
    return "detaches(written through)";
  }
  std::string x = b.input("arg", t);
  std::string d = b.node(t, "aten::detach(" + x + ")");
  if (variant == 1) d = b.node(t, "aten::detach(" + d + ")");
  b.output(b.node(t, "aten::relu(" + d + ")"));
  return variant == 1 ? "detaches(twice)" : "detaches(once)";
}

// View-like ops: identities, a reshape that changes the sizes, a restride of a square,
// a permuted square viewed as itself, a view without metadata, an as_strided.
std::string views(Builder& b) {
  auto [n, m] = b.two_sizes();
  Sizes nm = {n, m}, mn = {m, n};
  std::string x = b.input("arg", type(nm));
  std::string all;
  for (int k = 0; k < 2; ++k) {
    int64_t variant = b.pick(0, 8);
    std::string name;
    switch (variant) {
      case 0: b.output(b.node(type(nm), "aten::view(" + x + ", [" + list(nm) + "])")); name = "view identity"; break;
      case 1: b.output(b.node(type(nm), "aten::reshape(" + x + ", [" + std::to_string(n) + ", -1])")); name = "reshape -1"; break;
      case 2: b.output(b.node(type(nm), "aten::_unsafe_view(" + x + ", [" + list(nm) + "])")); name = "_unsafe_view identity"; break;
      case 3:
        b.output(b.node(type(nm), "aten::_reshape_alias(" + x + ", [" + list(nm) + "], [" + list(contiguous(nm)) + "])"));
        name = "_reshape_alias identity";
        break;
      case 4: b.output(b.node(type(mn), "aten::view(" + x + ", [" + list(mn) + "])")); name = "view to other sizes"; break;
      case 5: {
        std::string sq = b.input("arg", type({n, n}));
        b.output(b.node(type({n, n}, {1, n}), "aten::_reshape_alias(" + sq + ", [" + list({n, n}) + "], [1, " +
                                                  std::to_string(n) + "])"));
        name = "_reshape_alias restride";
        break;
      }
      case 6: {
        std::string sq = b.input("arg", type({n, n}));
        std::string p = b.node(type({n, n}, {1, n}), "aten::permute(" + sq + ", [1, 0])");
        b.output(b.node(type({n, n}, {1, n}), "aten::view(" + p + ", [" + list({n, n}) + "])"));
        name = "permuted square viewed";
        break;
      }
      case 7: {
        std::string v = b.node("Tensor", "aten::view(" + x + ", [" + list(mn) + "])");
        b.output(b.node(type(mn), "aten::relu(" + v + ")"));
        name = "view without metadata";
        break;
      }
      default:
        b.output(b.node(type(nm, {1, n}), "aten::as_strided(" + x + ", [" + list(nm) + "], [1, " + std::to_string(n) + "])"));
        name = "as_strided same sizes";
    }
    all += (k ? ", " : "") + name;
  }
  return "views(" + all + ")";
}

// Transpose pairs: t(t(x)) with or without another user of the inner t, transposes
// of the same or of different dimensions, dimensions unreadable without metadata, a
// permutation applied twice.
std::string transposes(Builder& b) {
  int64_t variant = b.pick(0, 5);
  if (variant <= 1) {
    auto [n, m] = b.two_sizes();
    View x{{n, m}, contiguous({n, m})};
    std::string in = b.input("arg", type(x.sizes));
    View t1 = transposed(x, 0, 1);
    std::string inner = b.node(type(t1.sizes, t1.strides), "aten::t(" + in + ")");
    b.output(b.node(type(x.sizes), "aten::relu(" + b.node(type(x.sizes), "aten::t(" + inner + ")") + ")"));
    if (variant == 1) b.output(inner);
    return variant == 1 ? "transposes(t(t(x)), inner used)" : "transposes(t(t(x)))";
  }
  Sizes s = b.three_sizes();
  View x{s, contiguous(s)};
  std::string in = b.input("arg", type(s));
  View t1 = transposed(x, 0, 1);
  switch (variant) {
    case 2: {
      std::string inner = b.node(type(t1.sizes, t1.strides), "aten::transpose.int(" + in + ", 0, 1)");
      b.output(b.node(type(s), "aten::transpose.int(" + inner + ", -2, -3)"));
      return "transposes(same dims)";
    }
    case 3: {
      std::string inner = b.node(type(t1.sizes, t1.strides), "aten::transpose.int(" + in + ", 0, 1)");
      View t2 = transposed(t1, 1, 2);
      b.output(b.node(type(t2.sizes, t2.strides), "aten::transpose.int(" + inner + ", 1, 2)"));
      return "transposes(different dims)";
    }
    case 4: {
      std::string inner = b.node("Tensor", "aten::transpose.int(" + in + ", 0, 1)");
      View t2 = transposed(t1, 2, 0);
      b.output(b.node(type(t2.sizes, t2.strides), "aten::transpose.int(" + inner + ", -1, -3)"));
      return "transposes(negative dims, no metadata)";
    }
    default: {
      View p1 = permuted(x, {1, 2, 0});
      View p2 = permuted(p1, {1, 2, 0});
      std::string inner = b.node(type(p1.sizes, p1.strides), "aten::permute(" + in + ", [1, 2, 0])");
      b.output(b.node(type(p2.sizes, p2.strides), "aten::permute(" + inner + ", [1, 2, 0])"));
      return "transposes(permute twice)";
    }
  }
}

// Slices: whole ones (end = size, None or huge), and ones that are not: a start past
// 0, an end one short, a step of 2, an end read from a graph value, an input without
// metadata.
std::string slices(Builder& b) {
  auto [n, m] = b.two_sizes();
  View x{{n, m}, contiguous({n, m})};
  std::string in = b.input("arg", type(x.sizes));
  std::string all;
  for (int k = 0; k < 2; ++k) {
    size_t dim = b.coin() ? 1 : 0;
    int64_t size = x.sizes[dim];
    std::string d = std::to_string(dim);
    int64_t variant = b.pick(0, 6);
    std::string name;
    auto slice = [&](const View& out, const std::string& self, const std::string& bounds) {
      b.output(b.node(type(out.sizes, out.strides), "aten::slice.Tensor(" + self + ", " + d + ", " + bounds + ")"));
    };
    switch (variant) {
      case 0: {
        static const char* ends[] = {"", "None", "9223372036854775807"};
        int64_t e = b.pick(0, 2);
        slice(x, in, std::string("0, ") + (e == 0 ? std::to_string(size) : ends[e]));
        name = "whole";
        break;
      }
      case 1: slice(sliced(x, dim, 1, size, 1), in, "1, " + std::to_string(size)); name = "start 1"; break;
      case 2: slice(sliced(x, dim, 0, size - 1, 1), in, "0, " + std::to_string(size - 1)); name = "end one short"; break;
      case 3: slice(sliced(x, dim, 0, size, 2), in, "0, " + std::to_string(size) + ", 2"); name = "step 2"; break;
      case 4: {
        std::string other = b.input("arg", type({size - 1}));
        std::string end = b.node("int", "aten::size.int(" + other + ", 0)");
        slice(sliced(x, dim, 0, size - 1, 1), in, "0, " + end);
        name = "end from a graph value";
        break;
      }
      default: {
        std::string w = b.node("Tensor", "aten::relu(" + in + ")");
        slice(sliced(x, dim, 0, size - 1, 1), w, "0, " + std::to_string(size - 1));
        name = "input without metadata";
      }
    }
    all += (k ? ", " : "") + name;
  }
  return "slices(" + all + ")";
}

// Candidates for cse: true duplicates, near-duplicates differing in a constant,
// duplicate views, duplicate uninitialized buffers (filled differently), and a
// rematerialized duplicate.
std::string duplicates(Builder& b) {
  int64_t n = b.pick(2, 4);
  std::string t = type({n});
  std::string x = b.input("arg", t), y = b.input("arg", t);
  int64_t variant = b.pick(0, 5);
  auto both = [&](const std::string& op1, const std::string& op2, const std::string& type_text = "") {
    const std::string& tt = type_text.empty() ? t : type_text;
    std::string d1 = b.node(tt, op1), d2 = b.node(tt, op2);
    returned_or_combined(b, tt, n, d1, d2);
  };
  switch (variant) {
    case 0: both("aten::mul.Tensor(" + x + ", " + y + ")", "aten::mul.Tensor(" + x + ", " + y + ")"); return "duplicates(equal)";
    case 1: both("aten::mul.Scalar(" + x + ", 2.0)", "aten::mul.Scalar(" + x + ", 3.0)"); return "duplicates(other scalar)";
    case 2: both("aten::add.Tensor(" + x + ", " + y + ", 1)", "aten::add.Tensor(" + x + ", " + y + ", 2)"); return "duplicates(other alpha)";
    case 3: {
      std::string v = "aten::view(" + x + ", [1, " + std::to_string(n) + "])";
      both(v, v, type({1, n}));
      return "duplicates(views)";
    }
    case 4: {
      std::string e = "aten::empty.memory_format([" + std::to_string(n) + "], torch.float32)";
      std::string e1 = b.node(t, e), e2 = b.node(t, e);
      b.output(b.node(t, "aten::fill_.Scalar(" + e1 + ", 1.0)"));
      b.output(b.node(t, "aten::fill_.Scalar(" + e2 + ", 2.0)"));
      return "duplicates(uninitialized)";
    }
    default: {
      std::string first = b.node(t, "aten::relu(" + x + ")");
      b.output(first);
      b.output(b.node(t, "aten::relu(" + x + ")", "custom={\"recomputed_from\": \"" + first.substr(1) + "\"}"));
      return "duplicates(rematerialized)";
    }
  }
}

// t(slice(t(x))) with a whole slice: only after the slice goes do the transposes meet
// (canonicalize needs a second round).
std::string hidden_pair(Builder& b) {
  auto [n, m] = b.two_sizes();
  View x{{n, m}, contiguous({n, m})};
  std::string in = b.input("arg", type(x.sizes));
  View t1 = transposed(x, 0, 1);
  std::string inner = b.node(type(t1.sizes, t1.strides), "aten::t(" + in + ")");
  std::string s = b.node(type(t1.sizes, t1.strides), "aten::slice.Tensor(" + inner + ", 0, 0, 9223372036854775807)");
  b.output(b.node(type(x.sizes), "aten::t(" + s + ")"));
  return "hidden-pair";
}

const std::vector<std::pair<std::string, Motif>>& motifs() {
  static const std::vector<std::pair<std::string, Motif>> all = {
      {"dead-code", dead_code},   {"write-then-reread", write_then_reread}, {"written-result", written_result},
      {"random-draws", random_draws}, {"rng-state", rng_state},         {"asserts", asserts},
      {"detaches", detaches},     {"views", views},                         {"transposes", transposes},
      {"slices", slices},         {"duplicates", duplicates},               {"hidden-pair", hidden_pair},
  };
  return all;
}

}  // namespace

const std::vector<std::string>& cleanup_motifs() {
  static const std::vector<std::string> names = names_of(motifs());
  return names;
}

std::string cleanup_situation_text(uint64_t seed, int count, std::string* description) {
  Builder b(seed);
  std::string described;
  for (int k = 0; k < count; ++k) {
    const Motif& motif = motifs()[static_cast<size_t>(b.pick(0, static_cast<int64_t>(motifs().size()) - 1))].second;
    described += (k ? "; " : "") + motif(b);
  }
  if (description) *description = described;
  return b.text();
}

SituationCase generate_cleanup_situation(uint64_t seed, int count) {
  SituationCase c;
  std::string text = cleanup_situation_text(seed, count, &c.description);
  c.graph = std::shared_ptr<ir::Graph>(ir::parse_graph(text, "cleanup-situation-" + std::to_string(seed)).release());
  c.input_seed = seed;
  c.description = "cleanup situations (seed " + std::to_string(seed) + "): " + c.description;
  return c;
}

}  // namespace passcheck::gen
