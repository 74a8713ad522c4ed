// Printer and recursive-descent parser for the graph text form (see text.h).
#include "framework/ir/text.h"

#include "framework/ir/subgraph.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace passcheck::ir {

ParseError::ParseError(const std::string& source, int line, int column, const std::string& message)
    : std::runtime_error(source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message),
      line_(line),
      column_(column),
      message_(message) {}

// ---- printing -----------------------------------------------------------------------

namespace {

// The devices a graph may name: the ones passcheck runs graphs on. LibTorch parses many
// more ("mps", "xla", "hpu"), whose use ends in a dispatcher dump, not an error.
constexpr const char* kGraphDevices = "a graph runs on cpu, cuda, cuda:N (N < 64) or meta";
std::optional<c10::Device> graph_device(const std::string& text) {
  if (text == "cpu") return c10::Device(c10::DeviceType::CPU);
  if (text == "meta") return c10::Device(c10::DeviceType::Meta);
  if (text == "cuda") return c10::Device(c10::DeviceType::CUDA);
  if (text.rfind("cuda:", 0) != 0) return std::nullopt;
  const std::string index = text.substr(5);
  if (index.empty() || index.size() > 2 || index.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int n = std::stoi(index);
  if (n >= 64) return std::nullopt;
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(n));
}

struct EnumName {
  int64_t value;
  const char* name;
};

const EnumName kDtypeNames[] = {
    {int64_t(c10::ScalarType::Byte), "torch.uint8"},    {int64_t(c10::ScalarType::Char), "torch.int8"},
    {int64_t(c10::ScalarType::Short), "torch.int16"},   {int64_t(c10::ScalarType::Int), "torch.int32"},
    {int64_t(c10::ScalarType::Long), "torch.int64"},    {int64_t(c10::ScalarType::Half), "torch.float16"},
    {int64_t(c10::ScalarType::Float), "torch.float32"}, {int64_t(c10::ScalarType::Double), "torch.float64"},
    {int64_t(c10::ScalarType::ComplexFloat), "torch.complex64"},
    {int64_t(c10::ScalarType::ComplexDouble), "torch.complex128"},
    {int64_t(c10::ScalarType::Bool), "torch.bool"},     {int64_t(c10::ScalarType::BFloat16), "torch.bfloat16"},
};
const EnumName kLayoutNames[] = {
    {int64_t(c10::Layout::Strided), "torch.strided"},
    {int64_t(c10::Layout::Sparse), "torch.sparse_coo"},
};
const EnumName kMemoryFormatNames[] = {
    {int64_t(c10::MemoryFormat::Contiguous), "torch.contiguous_format"},
    {int64_t(c10::MemoryFormat::Preserve), "torch.preserve_format"},
    {int64_t(c10::MemoryFormat::ChannelsLast), "torch.channels_last"},
    {int64_t(c10::MemoryFormat::ChannelsLast3d), "torch.channels_last_3d"},
};

template <size_t N>
const char* enum_name(const EnumName (&table)[N], int64_t value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return nullptr;
}

// The printer appends to one string: building a temporary per token cost more than the
// walk itself on million-node graphs.
void append_int(std::string& out, int64_t v) {
  char buf[24];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_int_list(std::string& out, const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    append_int(out, v[i]);
  }
}

void append_sym(std::string& out, const sym::Expr& e) {
  if (auto c = e.as_constant()) {
    append_int(out, *c);
    return;
  }
  out += "sym(";
  out += e.to_string();
  out += ')';
}

void append_expr_list(std::string& out, const std::vector<sym::Expr>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    append_sym(out, v[i]);
  }
}

void append_quoted(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  out += '"';
}

std::string quote(const std::string& s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

// "#{phase=..., ...}" after two spaces; nothing when every field has its default.
void append_node_meta(std::string& out, const NodeMeta& m) {
  bool first = true;
  auto key = [&](const char* name) {
    out += first ? "  #{" : ", ";
    first = false;
    out += name;
  };
  if (m.phase != Phase::Forward) {
    key("phase=");
    out += to_string(m.phase);
  }
  if (!m.module_fqn.empty()) {
    key("fqn=");
    append_quoted(out, m.module_fqn);
  }
  if (m.seq_nr >= 0) {
    key("seq=");
    append_int(out, m.seq_nr);
  }
  if (m.recompute != RecomputePolicy::Unset) {
    key("recompute=");
    out += to_string(m.recompute);
  }
  if (m.ac_region_id) {
    key("ac_region=");
    append_int(out, *m.ac_region_id);
  }
  if (!m.custom.empty()) {
    key("custom={");
    bool first_entry = true;
    for (const auto& [k, v] : m.custom) {
      if (!first_entry) out += ", ";
      first_entry = false;
      append_quoted(out, k);
      out += ": ";
      append_quoted(out, v);
    }
    out += '}';
  }
  if (!m.wanted_placements.empty()) {
    key("wants=[");
    for (size_t slot = 0; slot < m.wanted_placements.size(); ++slot) {
      out += slot ? ", (" : "(";
      for (size_t i = 0; i < m.wanted_placements[slot].size(); ++i) {
        if (i) out += ", ";
        out += m.wanted_placements[slot][i].str();
      }
      out += ')';
    }
    out += ']';
  }
  if (!first) out += '}';
}

}  // namespace

std::string format_double(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v && std::signbit(std::strtod(buf, nullptr)) == std::signbit(v)) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

void append_arg(std::string& out, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: out += "None"; return;
    case Arg::Kind::Bool: out += a.b ? "True" : "False"; return;
    case Arg::Kind::Int: append_int(out, a.i); return;
    case Arg::Kind::Float: out += format_double(a.f); return;
    case Arg::Kind::String: append_quoted(out, a.str()); return;
    case Arg::Kind::Dtype:
    case Arg::Kind::Layout:
    case Arg::Kind::MemoryFormat: {
      const char* n = a.kind == Arg::Kind::Dtype    ? enum_name(kDtypeNames, a.i)
                      : a.kind == Arg::Kind::Layout ? enum_name(kLayoutNames, a.i)
                                                    : enum_name(kMemoryFormatNames, a.i);
      if (n) {
        out += n;
        return;
      }
      out += a.kind == Arg::Kind::Dtype ? "torch.dtype(" : a.kind == Arg::Kind::Layout ? "torch.layout(" : "torch.memory_format(";
      append_int(out, a.i);
      out += ')';
      return;
    }
    case Arg::Kind::Device:
      out += "device(";
      append_quoted(out, a.device.str());
      out += ')';
      return;
    case Arg::Kind::Value:
      out += '%';
      out += a.value->name();
      return;
    case Arg::Kind::Sym: append_sym(out, a.expr()); return;
    case Arg::Kind::List:
      out += '[';
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (i) out += ", ";
        append_arg(out, a.list()[i]);
      }
      out += ']';
      return;
  }
  out += '?';
}

void append_type(std::string& out, const Value& v) {
  if (v.type() != ValueType::Tensor) {
    out += to_string(v.type());
    return;
  }
  if (!v.meta()) {
    out += "Tensor";
    return;
  }
  const TensorMeta& m = *v.meta();
  out += dtype_short_name(m.dtype);
  out += '[';
  if (m.sym_sizes().empty()) append_int_list(out, m.sizes);
  else append_expr_list(out, m.sym_sizes());
  out += ']';
  if (m.is_symbolic()) {
    // Symbolic strides print unless they are the row-major ones of the symbolic sizes.
    const std::vector<sym::Expr> strides = m.stride_exprs();
    if (strides != TensorMeta::contiguous_stride_exprs(m.size_exprs())) {
      out += '{';
      append_expr_list(out, strides);
      out += '}';
    }
  } else if (!m.strides.empty() && !m.is_contiguous()) {  // no strides recorded: contiguous
    out += '{';
    append_int_list(out, m.strides);
    out += '}';
  }
  if (m.device.type() != c10::DeviceType::CPU) {
    out += '@';
    out += m.device.str();
  }
}

// " placed(S(0), R)" after a value's type; nothing when no placement is recorded.
void append_placements(std::string& out, const Value& v) {
  if (v.placements().empty()) return;
  out += " placed(";
  for (size_t i = 0; i < v.placements().size(); ++i) {
    if (i) out += ", ";
    out += v.placements()[i].str();
  }
  out += ')';
}

void append_node(std::string& out, const Node& n) {
  for (size_t i = 0; i < n.num_outputs(); ++i) {
    if (i) out += ", ";
    out += '%';
    out += n.output(i)->name();
    out += " : ";
    append_type(out, *n.output(i));
    append_placements(out, *n.output(i));
  }
  if (n.num_outputs() == 0) out += "()";
  out += " = ";
  out += n.op();
  out += '(';
  for (size_t i = 0; i < n.num_args(); ++i) {
    if (i) out += ", ";
    append_arg(out, n.arg(i));
  }
  out += ')';
  append_node_meta(out, n.meta());
}

// `HEADER(inputs):`, one line per node, `return (...)`.
void append_body(std::string& out, const Graph& g, const std::string& header) {
  out += header;
  out += '(';
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* in = g.inputs()[i];
    out += i ? ",\n    " : "\n    ";
    out += to_string(in->role());
    out += " %";
    out += in->name();
    out += " : ";
    append_type(out, *in);
    append_placements(out, *in);
  }
  out += "):\n";
  for (const Node* n : g.nodes()) {
    out += "  ";
    append_node(out, *n);
    out += '\n';
  }
  out += "  return (";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out += i ? ", %" : "%";
    out += g.outputs()[i]->name();
  }
  out += ")\n";
}

}  // namespace

std::string print_arg(const Arg& a) {
  std::string out;
  append_arg(out, a);
  return out;
}

void append_arg_text(std::string& out, const Arg& a) { append_arg(out, a); }

std::string print_type(const Value& v) {
  std::string out;
  append_type(out, v);
  return out;
}

std::string print_node(const Node& n) {
  std::string out;
  append_node(out, n);
  return out;
}

std::string print_graph(const Graph& g) {
  std::string out;
  out.reserve(128 * g.num_nodes() + 1024);  // about a node line each
  for (const sym::Symbol& s : g.symbols()) out += "symbol " + s.to_string() + "\n";
  for (const sym::Claim& c : g.claims())
    out += "claim " + c.kind + " " + quote(c.pass) + " " + quote(c.subject) + " " + quote(c.description) +
           (c.indices.empty() ? "" : " " + c.quantifier_text()) + ": " + c.condition.to_string() + "\n";
  if (g.mesh()) {
    out += "mesh ";
    for (size_t i = 0; i < g.mesh()->dims.size(); ++i)
      out += (i ? ", " : "") + g.mesh()->dims[i].first + "=" + std::to_string(g.mesh()->dims[i].second);
    out += " rank " + std::to_string(g.mesh()->rank) + "\n";
  }
  // Subgraphs come first (in name order), so the text reads callee before caller.
  if (g.root() == &g)
    for (const auto& [name, body] : g.subgraphs()) append_body(out, *body, "subgraph " + name);
  append_body(out, g, "graph");
  return out;
}

// ---- parsing ------------------------------------------------------------------------

namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  std::unique_ptr<Graph> parse() {
    top_ = std::make_unique<Graph>();
    top_->source_name = source_;
    graph_ = top_.get();
    while (true) {
      if (peek_word("symbol")) parse_symbol();
      else if (peek_word("claim")) parse_claim();
      else if (peek_word("mesh")) parse_mesh();
      else if (peek_word("subgraph")) parse_subgraph();
      else break;
    }
    expect_word("graph");
    parse_body();
    skip_space();
    if (!at_end()) fail("unexpected text after 'return (...)'");
    check_calls();
    return std::move(top_);
  }

 private:
  // `subgraph NAME(inputs):` body `return (...)`: parsed into its own graph, which joins
  // the top graph's table (it shares the top graph's symbols and mesh).
  void parse_subgraph() {
    expect_word("subgraph");
    skip_space();
    const int line = line_, col = col_;
    std::string name = read_word();
    if (name.empty()) fail_at(line, col, "expected a subgraph name after 'subgraph'");
    if (top_->find_subgraph(name)) fail_at(line, col, "subgraph " + name + " is defined twice");
    auto body = std::make_unique<Graph>();
    body->source_name = source_;
    graph_ = body.get();
    parse_body();
    graph_ = top_.get();
    top_->add_subgraph(name, std::move(body));
    subgraph_pos_[name] = SourcePos{line, col};
  }

  // Every call names a known subgraph with matching operands, and calls never recurse.
  void check_calls() {
    // Nothing to check without a call or a subgraph: no walk over a graph of a million
    // plain nodes.
    if (!saw_call_ && !top_->has_subgraphs()) return;
    for (const Graph* g : graphs_of(*top_))
      for (const Node* n : g->nodes()) {
        if (!is_invoke_subgraph(*n)) continue;
        std::string problem = call_problem(*n);
        if (!problem.empty()) fail_at(n->source_op().line, n->source_op().column, problem);
      }
    std::string cycle = find_call_cycle(*top_);
    if (!cycle.empty()) {
      const SourcePos pos = subgraph_pos_[cycle.substr(0, cycle.find(' '))];
      fail_at(pos.line, pos.column, "subgraph calls recurse: " + cycle);
    }
    // Too deep or fanning out: located at the top graph's first call, where the nest starts.
    std::string nesting = nesting_problem(*top_);
    if (!nesting.empty()) {
      for (const Node* n : top_->nodes())
        if (is_invoke_subgraph(*n)) fail_at(n->source_op().line, n->source_op().column, nesting);
      fail_at(1, 1, nesting);
    }
  }

  // `(inputs):` nodes `return (...)` into graph_.
  void parse_body() {
    expect('(');
    skip_space();
    if (peek() != ')') {
      do {
        parse_input();
      } while (accept(','));
    }
    expect(')');
    expect(':');
    while (true) {
      skip_space();
      if (at_end()) fail("unexpected end of text: missing 'return (...)'");
      if (peek_word("return")) break;
      parse_node();
    }
    expect_word("return");
    expect('(');
    skip_space();
    if (peek() != ')') {
      do {
        graph_->add_output(parse_value_ref());
      } while (accept(','));
    }
    expect(')');
  }

  [[noreturn]] void fail(const std::string& message) { fail_at(line_, col_, message); }
  [[noreturn]] void fail_at(int line, int col, const std::string& message) {
    throw ParseError(source_, line, col, message);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  // Whitespace and '#' comments. Node metadata ("#{") is recognized only on its node's
  // line (parse_node), so a line starting with "#{" is a comment like any other.
  void skip_space() {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {  // std::isspace, without the locale
        advance();
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }

  bool accept(char c) {
    skip_space();
    if (peek() == c) {
      advance();
      return true;
    }
    return false;
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "' but found " + describe_here());
    advance();
  }

  std::string describe_here() {
    if (at_end()) return "end of text";
    size_t end = pos_;
    while (end < text_.size() && end - pos_ < 20 && text_[end] != '\n') ++end;
    return "'" + std::string(text_.substr(pos_, end - pos_)) + "'";
  }

  // "ns::name" or "ns::name.overload", every part non-empty.
  static bool is_valid_op_name(std::string_view op) {
    const size_t sep = op.find("::");
    if (sep == std::string::npos || sep == 0) return false;
    const std::string_view ns = op.substr(0, sep);
    const std::string_view rest = op.substr(sep + 2);
    if (ns.find_first_of(":.") != std::string::npos || rest.empty() || rest.find(':') != std::string::npos)
      return false;
    const size_t dot = rest.find('.');
    if (dot == std::string::npos) return true;
    return dot > 0 && dot + 1 < rest.size() && rest.find('.', dot + 1) == std::string::npos;
  }

  static bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  }

  bool peek_word(std::string_view w) {
    skip_space();
    // The first character decides almost every time (asked per line, size and number).
    if (at_end() || text_[pos_] != w.front()) return false;
    return text_.substr(pos_, w.size()) == w &&
           (pos_ + w.size() >= text_.size() || !word_char(text_[pos_ + w.size()]));
  }

  void expect_word(std::string_view w) {
    if (!peek_word(w)) fail("expected '" + std::string(w) + "' but found " + describe_here());
    for (size_t i = 0; i < w.size(); ++i) advance();
  }

  std::string_view read_word_view() {
    skip_space();
    size_t start = pos_;
    while (!at_end() && word_char(peek())) advance();
    return text_.substr(start, pos_ - start);
  }
  std::string read_word() { return std::string(read_word_view()); }

  std::string_view read_name_view() {
    if (at_end() || !word_char(peek())) fail("expected a value name after '%' but found " + describe_here());
    size_t start = pos_;
    while (!at_end() && word_char(peek())) advance();
    return text_.substr(start, pos_ - start);
  }
  std::string read_name() { return std::string(read_name_view()); }

  Value* parse_value_ref() {
    skip_space();
    int line = line_, col = col_;
    expect('%');
    const std::string_view name = read_name_view();
    Value* v = graph_->find_value(name);
    if (!v) fail_at(line, col, "use of undefined value %" + std::string(name));
    return v;
  }

  int64_t parse_int() {
    skip_space();
    int line = line_, col = col_;
    size_t start = pos_;
    if (peek() == '-' || peek() == '+') advance();
    const size_t first_digit = pos_;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) advance();
    const std::string_view digits = text_.substr(start, pos_ - start);
    if (pos_ == first_digit) fail_at(line, col, "expected an integer but found " + describe_here());
    // from_chars: no string built per integer (types hold several of them per node).
    int64_t v = 0;
    const char* begin = digits.data() + (digits[0] == '+' ? 1 : 0);
    const std::from_chars_result r = std::from_chars(begin, digits.data() + digits.size(), v);
    if (r.ec == std::errc::result_out_of_range) fail_at(line, col, "integer " + std::string(digits) + " is out of range");
    return v;
  }

  // mesh NAME=SIZE, NAME=SIZE rank R
  void parse_mesh() {
    expect_word("mesh");
    const int line = line_;
    if (top_->mesh()) fail_at(line, 1, "the graph declares its mesh twice");
    MeshInfo mesh;
    int64_t world = 1;
    do {
      skip_space();
      const int dline = line_, dcol = col_;
      std::string name = read_word();
      if (name.empty() || !std::islower(static_cast<unsigned char>(name[0])))
        fail_at(dline, dcol, "expected a mesh dim name such as dp but found " + describe_here());
      for (const auto& d : mesh.dims)
        if (d.first == name) fail_at(dline, dcol, "mesh dim '" + name + "' appears twice");
      expect('=');
      skip_space();
      const int sline = line_, scol = col_;
      int64_t size = parse_int();
      if (size < 1 || size > (1 << 20) || world * size > (1 << 20))
        fail_at(sline, scol, "mesh dim '" + name + "' has size " + std::to_string(size) +
                                 " (sizes are 1 or more, at most 2^20 ranks in all)");
      world *= size;
      mesh.dims.emplace_back(name, size);
    } while (accept(','));
    expect_word("rank");
    skip_space();
    const int rline = line_, rcol = col_;
    mesh.rank = parse_int();
    if (mesh.rank < 0 || mesh.rank >= world)
      fail_at(rline, rcol, "rank " + std::to_string(mesh.rank) + " is outside the mesh's " + std::to_string(world) + " ranks");
    top_->set_mesh(std::move(mesh));
  }

  // placed(S(0), R, P(sum)) after a type: one entry per mesh dim.
  std::vector<Placement> parse_placements(ValueType type, const std::optional<TensorMeta>& meta) {
    std::vector<Placement> placements;
    if (!peek_word("placed")) return placements;
    const int line = line_, col = col_;
    expect_word("placed");
    if (!top_->mesh()) fail_at(line, col, "placements need a 'mesh' line before the graph");
    if (type != ValueType::Tensor) fail_at(line, col, "only tensor values have placements");
    return parse_placement_tuple(line, col, meta ? static_cast<int64_t>(meta->sizes.size()) : -1);
  }

  // "(S(0), R)": one placement per mesh dim; `rank` >= 0 bounds a shard's dim. (line, col)
  // is where the construct started, for a count that does not match the mesh.
  std::vector<Placement> parse_placement_tuple(int line, int col, int64_t rank) {
    std::vector<Placement> placements;
    expect('(');
    do {
      skip_space();
      const int pline = line_, pcol = col_;
      size_t start = pos_;
      while (!at_end() && (word_char(peek()) || peek() == '(')) {
        bool open = peek() == '(';
        advance();
        if (open) {
          while (!at_end() && word_char(peek())) advance();
          if (peek() == ')') advance();
          break;
        }
      }
      std::string text(text_.substr(start, pos_ - start));
      std::optional<Placement> p = Placement::parse(text);
      if (!p) fail_at(pline, pcol, "expected a placement (S(dim), R or P(sum|avg|product|min|max)) but found '" + text + "'");
      if (p->kind == Placement::Kind::Shard && rank >= 0 && p->dim >= rank)
        fail_at(pline, pcol, "placement " + text + " shards dim " + std::to_string(p->dim) + " of a tensor with " +
                                 std::to_string(rank) + " dims");
      placements.push_back(*p);
    } while (accept(','));
    expect(')');
    if (placements.size() != top_->mesh()->dims.size())
      fail_at(line, col, std::to_string(placements.size()) + " placements for a mesh of " +
                             std::to_string(graph_->mesh()->dims.size()) + " dims");
    return placements;
  }

  // symbol NAME in [MIN, MAX] hint H [multiple_of M]
  void parse_symbol() {
    expect_word("symbol");
    skip_space();
    const int line = line_, col = col_;
    sym::Symbol symbol;
    symbol.name = read_word();
    if (symbol.name.empty() || std::isdigit(static_cast<unsigned char>(symbol.name[0])) ||
        symbol.name.find('.') != std::string::npos)
      fail_at(line, col, "expected a symbol name but found " + describe_here());
    expect_word("in");
    expect('[');
    symbol.min = parse_int();
    expect(',');
    symbol.max = parse_int();
    expect(']');
    expect_word("hint");
    symbol.hint = parse_int();
    if (peek_word("multiple_of")) {
      expect_word("multiple_of");
      symbol.multiple_of = parse_int();
      if (symbol.multiple_of < 1) fail_at(line, col, "symbol " + symbol.name + ": multiple_of must be >= 1");
    }
    if (symbol.min > symbol.max) fail_at(line, col, "symbol " + symbol.name + " has an empty range");
    if (!symbol.hint_admissible())
      fail_at(line, col, "symbol " + symbol.name + ": hint " + std::to_string(symbol.hint) + " is not admissible (" +
                             symbol.to_string() + ")");
    if (top_->find_symbol(symbol.name)) fail_at(line, col, "symbol " + symbol.name + " is declared twice");
    top_->add_symbol(symbol);
  }

  // claim KIND "PASS" "SUBJECT" "DESCRIPTION" [forall(i0 < EXPR, ...)]: EXPR
  // (the condition runs to the end of the line and may use the indices)
  void parse_claim() {
    expect_word("claim");
    sym::Claim claim;
    skip_space();
    claim.kind = read_word();
    if (claim.kind.empty()) fail("expected a claim kind but found " + describe_here());
    claim.pass = parse_string();
    claim.subject = parse_string();
    claim.description = parse_string();
    if (peek_word("forall")) claim.indices = parse_claim_indices();
    expect(':');
    skip_space();
    const int line = line_, col = col_;
    size_t start = pos_;
    while (!at_end() && peek() != '\n') advance();
    claim.condition = parse_expr_text(std::string(text_.substr(start, pos_ - start)), line, col, claim.index_names());
    if (!claim.condition.is_boolean()) fail_at(line, col, "claim condition is not a boolean expression");
    top_->add_claim(std::move(claim));
  }

  // forall(NAME < EXPR, ...): the indices a claim quantifies over, each in [0, EXPR).
  std::vector<sym::BoundIndex> parse_claim_indices() {
    expect_word("forall");
    expect('(');
    std::vector<sym::BoundIndex> indices;
    do {
      skip_space();
      const int line = line_, col = col_;
      sym::BoundIndex index;
      index.name = read_word();
      if (index.name.empty()) fail("expected an index name but found " + describe_here());
      if (top_->find_symbol(index.name)) fail_at(line, col, "claim index " + index.name + " is a declared symbol");
      for (const sym::BoundIndex& other : indices)
        if (other.name == index.name) fail_at(line, col, "claim index " + index.name + " is bound twice");
      try {
        sym::Expr::symbol(index.name);
      } catch (const std::invalid_argument&) {
        fail_at(line, col, "claim index '" + index.name + "' is not a valid name");
      }
      expect('<');
      skip_space();
      const int bound_line = line_, bound_col = col_;
      size_t start = pos_;
      int depth = 0;
      while (!at_end() && peek() != '\n') {
        if (peek() == '(') ++depth;
        if ((peek() == ',' || peek() == ')') && depth == 0) break;
        if (peek() == ')') --depth;
        advance();
      }
      index.bound = parse_expr_text(std::string(text_.substr(start, pos_ - start)), bound_line, bound_col);
      if (index.bound.is_boolean()) fail_at(bound_line, bound_col, "the bound of claim index " + index.name + " is not an integer");
      indices.push_back(std::move(index));
    } while (accept(','));
    expect(')');
    return indices;
  }

  // An expression whose symbols must all be declared above the graph (or be among
  // `local`, the indices of the claim it belongs to).
  sym::Expr parse_expr_text(const std::string& text, int line, int col, const std::set<std::string>& local = {}) {
    sym::Expr e;
    try {
      e = sym::parse(text);
    } catch (const sym::ParseError& err) {
      fail_at(line, col + static_cast<int>(err.column) - 1, std::string("in symbolic expression: ") + err.what());
    }
    for (const std::string& name : e.free_symbols())
      if (!local.count(name) && !top_->find_symbol(name))
        fail_at(line, col, "undeclared symbol " + name + " (declare it with a 'symbol' line)");
    return e;
  }

  // sym(EXPR) after the word "sym" was read: the expression runs to the matching ')'.
  sym::Expr parse_sym_call() {
    expect('(');
    const int line = line_, col = col_;
    size_t start = pos_;
    int depth = 1;
    while (!at_end() && peek() != '\n') {
      if (peek() == '(') ++depth;
      if (peek() == ')' && --depth == 0) break;
      advance();
    }
    if (depth != 0) fail_at(line, col, "unterminated sym(...)");
    sym::Expr e = parse_expr_text(std::string(text_.substr(start, pos_ - start)), line, col);
    advance();  // ')'
    if (e.is_boolean()) fail_at(line, col, "sym(...) holds a boolean, not an integer");
    return e;
  }

  // Sizes or strides of a type: plain integers, or expressions once one entry is
  // symbolic (a constant expression costs an allocation; most types have none).
  struct SizeList {
    // Collected in place and copied once at their exact size: a vector grown entry by
    // entry costs an allocation per doubling, for each size and stride list of every value.
    c10::SmallVector<int64_t, 8> ints;
    std::vector<sym::Expr> exprs;  ///< every entry, when `symbolic`
    bool symbolic = false;
    size_t size() const { return symbolic ? exprs.size() : ints.size(); }
    std::vector<sym::Expr> as_exprs() const {
      if (symbolic) return exprs;
      std::vector<sym::Expr> out;
      for (int64_t v : ints) out.push_back(sym::Expr::constant(v));
      return out;
    }
  };

  // An integer or sym(EXPR) in a type's size or stride list.
  void parse_size_entry(SizeList& list) {
    skip_space();
    if (peek_word("sym")) {
      expect_word("sym");
      if (!list.symbolic) {
        list.exprs = list.as_exprs();
        list.symbolic = true;
      }
      list.exprs.push_back(parse_sym_call());
      return;
    }
    const int64_t v = parse_int();
    if (list.symbolic) list.exprs.push_back(sym::Expr::constant(v));
    else list.ints.push_back(v);
  }

  // Sizes or strides of a type; more than kMaxTensorRank entries stop the parse at the
  // first one too many, so a hostile rank costs no more than the cap.
  SizeList parse_size_list(char open, char close, const char* what) {
    SizeList out;
    expect(open);
    skip_space();
    if (peek() != close) {
      do {
        skip_space();
        if (out.size() == kMaxTensorRank)
          fail("type has more than " + std::to_string(kMaxTensorRank) + " " + what +
               " (the graph format's maximum rank is " + std::to_string(kMaxTensorRank) + ")");
        parse_size_entry(out);
      } while (accept(','));
    }
    expect(close);
    return out;
  }

  // Every size computation downstream (contiguous strides, element and byte counts)
  // multiplies the sizes: a type whose bytes do not fit in int64 is refused here.
  void check_byte_count(std::span<const int64_t> sizes, c10::ScalarType dtype, int line, int col) {
    int64_t bytes = dtype_size(dtype);
    for (int64_t s : sizes)
      if (__builtin_mul_overflow(bytes, std::max<int64_t>(s, 1), &bytes))
        fail_at(line, col, "type's byte count overflows int64 (sizes " +
                               format_int_list(std::vector<int64_t>(sizes.begin(), sizes.end())) + ")");
  }

  // dtype[sizes]{strides}@device | Tensor | int | float | bool | None
  void parse_type(ValueType& type, std::optional<TensorMeta>& meta) {
    skip_space();
    int line = line_, col = col_;
    const std::string_view word = read_word_view();
    meta.reset();
    if (word == "int") { type = ValueType::Int; return; }
    if (word == "float") { type = ValueType::Float; return; }
    if (word == "bool") { type = ValueType::Bool; return; }
    if (word == "None") { type = ValueType::None; return; }
    type = ValueType::Tensor;
    if (word == "Tensor") return;
    auto dtype = dtype_from_short_name(word);
    if (!dtype)
      fail_at(line, col, "unknown type '" + std::string(word) +
                             "' (expected a dtype such as f32, bf16, i64, or int/float/bool/None/Tensor)");
    TensorMeta m;
    m.dtype = *dtype;
    SizeList size_list = parse_size_list('[', ']', "sizes");
    if (size_list.symbolic) {
      for (const sym::Expr& s : size_list.exprs)
        if (s.as_constant() && *s.as_constant() < 0) fail_at(line, col, "negative size in type");
    } else {
      for (int64_t s : size_list.ints)
        if (s < 0) fail_at(line, col, "negative size in type");
    }
    SizeList stride_list;
    if (peek() == '{') {
      stride_list = parse_size_list('{', '}', "strides");
      if (stride_list.size() != size_list.size())
        fail_at(line, col, "type has " + std::to_string(size_list.size()) + " sizes but " +
                               std::to_string(stride_list.size()) + " strides");
    }
    const bool symbolic = size_list.symbolic || stride_list.symbolic;
    if (!symbolic)
      check_byte_count(std::span<const int64_t>(size_list.ints.data(), size_list.ints.size()), *dtype, line, col);
    if (symbolic) {
      std::vector<sym::Expr> sizes = size_list.as_exprs();
      std::vector<sym::Expr> strides = stride_list.as_exprs();
      if (strides.empty()) strides = TensorMeta::contiguous_stride_exprs(sizes);
      try {
        m.set_symbolic(sizes, strides, top_->symbol_hints());
      } catch (const std::exception& e) {
        fail_at(line, col, e.what());
      }
      for (int64_t s : m.sizes)
        if (s < 0) fail_at(line, col, "size is negative at the symbols' hints");
      check_byte_count(m.sizes, *dtype, line, col);
    } else {
      m.sizes.assign(size_list.ints.begin(), size_list.ints.end());
      if (stride_list.ints.empty()) m.strides = TensorMeta::contiguous_strides(m.sizes);
      else m.strides.assign(stride_list.ints.begin(), stride_list.ints.end());
    }
    if (peek() == '@') {
      advance();
      int dline = line_, dcol = col_;
      size_t start = pos_;
      while (!at_end() && (word_char(peek()) || peek() == ':')) advance();
      std::string dev(text_.substr(start, pos_ - start));
      std::optional<c10::Device> parsed = graph_device(dev);
      if (!parsed) fail_at(dline, dcol, "invalid device '" + dev.substr(0, 40) + "' (" + kGraphDevices + ")");
      m.device = *parsed;
    }
    meta = std::move(m);
  }

  void define_name(Value* v, const std::string& name, int line, int col) {
    if (graph_->find_value(name)) fail_at(line, col, "value %" + name + " is defined twice");
    graph_->rename(v, name);
  }

  void parse_input() {
    skip_space();
    int line = line_, col = col_;
    std::string role_word = read_word();
    InputRole role;
    if (role_word == "param") role = InputRole::Parameter;
    else if (role_word == "buffer") role = InputRole::Buffer;
    else if (role_word == "arg") role = InputRole::Argument;
    else fail_at(line, col, "expected an input role (param, buffer or arg) but found '" + role_word + "'");
    skip_space();
    int nline = line_, ncol = col_;
    expect('%');
    std::string name = read_name();
    expect(':');
    ValueType type;
    std::optional<TensorMeta> meta;
    parse_type(type, meta);
    std::vector<Placement> placements = parse_placements(type, meta);
    Value* v = graph_->add_input(name, type, std::move(meta), role);
    if (v->name() != name) {
      // A taken or unclean name comes back changed (Graph::unique_name).
      if (graph_->find_value(name)) fail_at(nline, ncol, "value %" + name + " is defined twice");
      fail_at(nline, ncol, "invalid input name %" + name);
    }
    if (!placements.empty()) v->set_placements(std::move(placements));
    v->source_line = nline;
    v->source_column = ncol;
  }

  std::string parse_string() {
    skip_space();
    int line = line_, col = col_;
    expect('"');
    std::string out;
    while (true) {
      if (at_end() || peek() == '\n') fail_at(line, col, "unterminated string");
      const int char_line = line_, char_col = col_;
      char c = peek();
      advance();
      if (c == '"') break;
      if (c == '\\') {
        if (at_end()) fail_at(line, col, "unterminated string");
        char e = peek();
        advance();
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          default: fail_at(char_line, char_col, "unknown escape '\\" + std::string(1, e) + "' in string");
        }
      } else {
        out += c;
      }
    }
    return out;
  }

  template <size_t N>
  Arg parse_enum(const EnumName (&table)[N], const std::string& word, Arg (*make)(int64_t), int line, int col,
                 const char* what) {
    for (const auto& e : table)
      if (word == e.name) return make(e.value);
    fail_at(line, col, std::string("unknown ") + what + " '" + word + "'");
  }

  Arg parse_arg() {
    skip_space();
    int line = line_, col = col_;
    char c = peek();
    if (c == '%') return Arg::of(parse_value_ref());
    if (c == '"') return Arg::string(parse_string());
    if (c == '[') {
      // Bounded so that hostile input fails with a ParseError instead of overflowing the stack.
      if (list_depth_ == kMaxListDepth)
        fail_at(line, col, "argument lists nested too deeply (more than " + std::to_string(kMaxListDepth) + " levels)");
      ++list_depth_;
      advance();
      std::vector<Arg> items;
      skip_space();
      if (peek() != ']') {
        do {
          items.push_back(parse_arg());
        } while (accept(','));
      }
      expect(']');
      --list_depth_;
      return Arg::of_list(std::move(items));
    }
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    std::string word = read_word();
    if (word.empty()) fail_at(line, col, "expected an argument but found " + describe_here());
    if (word == "None") return Arg::none();
    if (word == "True") return Arg::boolean(true);
    if (word == "False") return Arg::boolean(false);
    if (word == "sym") return Arg::symbolic(parse_sym_call());
    if (word == "inf") return Arg::real(INFINITY);
    if (word == "nan") return Arg::real(NAN);
    if (word == "device") {
      expect('(');
      int dline = line_, dcol = col_;
      std::string dev = parse_string();
      expect(')');
      std::optional<c10::Device> parsed = graph_device(dev);
      if (!parsed) fail_at(dline, dcol, "invalid device \"" + dev.substr(0, 40) + "\" (" + kGraphDevices + ")");
      return Arg::dev(*parsed);
    }
    if (word.rfind("torch.", 0) == 0) {
      // The printer's form for values without a name: torch.dtype(N) and friends.
      const Arg::Kind numbered = word == "torch.dtype"           ? Arg::Kind::Dtype
                                 : word == "torch.layout"        ? Arg::Kind::Layout
                                 : word == "torch.memory_format" ? Arg::Kind::MemoryFormat
                                                                 : Arg::Kind::None;
      if (numbered != Arg::Kind::None && peek() == '(') {
        advance();
        Arg a;
        a.kind = numbered;
        a.i = parse_int();
        expect(')');
        return a;
      }
      if (enum_in(kDtypeNames, word))
        return parse_enum(kDtypeNames, word, [](int64_t v) { return Arg::dtype(c10::ScalarType(v)); }, line, col, "dtype");
      if (enum_in(kLayoutNames, word))
        return parse_enum(kLayoutNames, word, [](int64_t v) { return Arg::layout(c10::Layout(v)); }, line, col, "layout");
      return parse_enum(kMemoryFormatNames, word, [](int64_t v) { return Arg::memory_format(c10::MemoryFormat(v)); },
                        line, col, "dtype, layout or memory format");
    }
    fail_at(line, col, "unknown argument '" + word + "'");
  }

  template <size_t N>
  static bool enum_in(const EnumName (&table)[N], const std::string& word) {
    for (const auto& e : table)
      if (word == e.name) return true;
    return false;
  }

  Arg parse_number() {
    int line = line_, col = col_;
    size_t start = pos_;
    bool negative = peek() == '-';
    if (peek() == '-' || peek() == '+') advance();
    if (peek_word("inf")) {
      expect_word("inf");
      return Arg::real(negative ? -INFINITY : INFINITY);
    }
    if (peek_word("nan")) {
      expect_word("nan");
      return Arg::real(negative ? -NAN : NAN);
    }
    bool is_float = false;
    while (!at_end()) {
      char c = peek();
      if (std::isdigit(static_cast<unsigned char>(c))) {
        advance();
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        advance();
        if ((c == 'e' || c == 'E') && (peek() == '-' || peek() == '+')) advance();
      } else {
        break;
      }
    }
    std::string literal(text_.substr(start, pos_ - start));
    char* end = nullptr;
    errno = 0;
    if (is_float) {
      double v = std::strtod(literal.c_str(), &end);
      if (*end != '\0') fail_at(line, col, "malformed number '" + literal + "'");
      return Arg::real(v);
    }
    long long v = std::strtoll(literal.c_str(), &end, 10);
    if (*end != '\0' || literal == "-" || literal == "+") fail_at(line, col, "malformed number '" + literal + "'");
    if (errno == ERANGE) fail_at(line, col, "integer " + literal + " is out of range");
    return Arg::integer(v);
  }

  void parse_meta(NodeMeta& m) {
    expect('{');
    skip_space();
    if (peek() == '}') {
      advance();
      return;
    }
    do {
      skip_space();
      int line = line_, col = col_;
      std::string key = read_word();
      expect('=');
      skip_space();
      const int value_line = line_, value_col = col_;
      if (key == "phase") {
        std::string w = read_word();
        auto p = parse_phase(w);
        if (!p) fail_at(value_line, value_col, "unknown phase '" + w + "' (forward, loss, backward, optimizer)");
        m.phase = *p;
      } else if (key == "fqn") {
        m.module_fqn = parse_string();
      } else if (key == "seq") {
        m.seq_nr = parse_int();
      } else if (key == "recompute") {
        std::string w = read_word();
        auto p = parse_recompute_policy(w);
        if (!p) fail_at(value_line, value_col, "unknown recompute policy '" + w + "'");
        m.recompute = *p;
      } else if (key == "ac_region") {
        m.ac_region_id = parse_int();
      } else if (key == "wants") {
        if (!top_->mesh()) fail_at(value_line, value_col, "wanted placements need a 'mesh' line before the graph");
        expect('[');
        do {
          skip_space();
          m.wanted_placements.push_back(parse_placement_tuple(line_, col_, -1));
        } while (accept(','));
        expect(']');
      } else if (key == "custom") {
        expect('{');
        skip_space();
        if (peek() != '}') {
          do {
            std::string k = parse_string();
            expect(':');
            m.custom[k] = parse_string();
          } while (accept(','));
        }
        expect('}');
      } else {
        fail_at(line, col, "unknown node metadata key '" + key + "' (phase, fqn, seq, recompute, ac_region, custom, wants)");
      }
    } while (accept(','));
    expect('}');
  }

  void parse_node() {
    skip_space();
    const int node_line = line_, node_col = col_;
    // Parsed into the parser's buffers, then copied at their exact size: one allocation
    // per node for each list instead of one per doubling.
    std::vector<OutputDecl>& outs = outs_;
    std::vector<Arg>& args = args_;
    std::vector<SourcePos>& arg_positions = arg_positions_;
    outs.clear();
    args.clear();
    arg_positions.clear();
    if (accept('(')) {
      expect(')');  // a node without outputs
    } else {
      do {
        skip_space();
        OutputDecl d;
        d.line = line_;
        d.col = col_;
        expect('%');
        d.name = read_name();
        expect(':');
        parse_type(d.type, d.meta);
        d.placements = parse_placements(d.type, d.meta);
        outs.push_back(std::move(d));
      } while (accept(','));
    }
    expect('=');
    skip_space();
    int op_line = line_, op_col = col_;
    size_t start = pos_;
    while (!at_end() && (word_char(peek()) || peek() == ':')) advance();
    const std::string_view op = text_.substr(start, pos_ - start);
    if (!is_valid_op_name(op))
      fail_at(op_line, op_col, "expected an operator such as aten::mm but found '" + std::string(op) + "'");
    expect('(');
    skip_space();
    if (peek() != ')') {
      do {
        skip_space();
        arg_positions.push_back(SourcePos{line_, col_});
        args.push_back(parse_arg());
      } while (accept(','));
    }
    expect(')');
    std::optional<NodeMeta> meta;
    while (!at_end() && (peek() == ' ' || peek() == '\t')) advance();
    if (peek() == '#' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '{') {
      advance();
      parse_meta(meta.emplace());
    }
    Node* node = graph_->create(op, std::vector<Arg>(std::make_move_iterator(args.begin()),
                                                     std::make_move_iterator(args.end())));
    saw_call_ |= is_invoke_subgraph(*node);
    node->source_line = node_line;
    node->set_source(SourcePos{op_line, op_col}, arg_positions);
    node->source_column = node_col;
    if (meta) node->mutable_meta() = std::move(*meta);
    for (auto& d : outs) {
      // A taken or unclean name comes back changed (Graph::unique_name).
      Value* v = node->add_output(d.type, std::move(d.meta), d.name);
      if (v->name() != d.name) {
        if (graph_->find_value(d.name)) fail_at(d.line, d.col, "value %" + d.name + " is defined twice");
        fail_at(d.line, d.col, "invalid value name %" + d.name);
      }
      if (!d.placements.empty()) v->set_placements(std::move(d.placements));
      v->source_line = d.line;
      v->source_column = d.col;
    }
  }

  struct OutputDecl {
    std::string name;
    int line, col;
    ValueType type;
    std::optional<TensorMeta> meta;
    std::vector<Placement> placements;
  };
  // parse_node's buffers, reused from node to node.
  std::vector<OutputDecl> outs_;
  std::vector<Arg> args_;
  std::vector<SourcePos> arg_positions_;

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::unique_ptr<Graph> top_;
  Graph* graph_ = nullptr;  // the graph being parsed: top_ or a subgraph body
  std::map<std::string, SourcePos> subgraph_pos_;
  bool saw_call_ = false;  // a passcheck::invoke_subgraph node was parsed
  int list_depth_ = 0;
};

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& source_name) {
  return Parser(text, source_name).parse();
}

}  // namespace passcheck::ir
