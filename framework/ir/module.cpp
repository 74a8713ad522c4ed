// Module construction, copying and its text form (module.h). A module's text is a header
// line, then each part as a `part NAME [from (...)]` line followed by that part's complete
// graph text; the graph text is handed to the graph parser with the lines before it kept
// as blank lines, so a parse error in a part names its line in the module file.
#include "framework/ir/module.h"

#include "framework/ir/text.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <stdexcept>

namespace passcheck::ir {

Module Module::of_graph(std::unique_ptr<Graph> graph, const std::string& name) {
  Module m;
  for (const Value* in : graph->inputs()) m.input_names.push_back(in->name());
  ModulePart part;
  part.name = name;
  part.input_sources.assign(graph->inputs().size(), std::nullopt);
  for (size_t i = 0; i < graph->outputs().size(); ++i) m.outputs.push_back(PartOutput{0, i});
  part.graph = std::move(graph);
  m.parts.push_back(std::move(part));
  return m;
}

Module Module::clone() const {
  Module m;
  m.input_names = input_names;
  m.outputs = outputs;
  for (const ModulePart& p : parts) m.parts.push_back(ModulePart{p.name, p.graph->clone(), p.input_sources, p.capture});
  return m;
}

void Module::replace_part(size_t part, Module sub) {
  if (part >= parts.size()) throw std::out_of_range("replace_part: no part " + std::to_string(part));
  ModulePart old = std::move(parts[part]);
  const auto& old_inputs = old.graph->inputs();
  if (sub.outputs.size() != old.graph->outputs().size())
    throw std::invalid_argument("replace_part: the replacement of part '" + old.name + "' returns " +
                                std::to_string(sub.outputs.size()) + " results instead of " +
                                std::to_string(old.graph->outputs().size()));
  for (const ModulePart& q : sub.parts)
    for (size_t i = 0; i < parts.size(); ++i)
      if (i != part && parts[i].name == q.name)
        throw std::invalid_argument("replace_part: part name '" + q.name + "' is already taken");
  const size_t shift = sub.parts.size() - 1;  // later parts move by this much
  auto renumber = [&](PartOutput ref) -> PartOutput {
    if (ref.part < part) return ref;
    if (ref.part > part) return PartOutput{ref.part + shift, ref.output};
    const PartOutput& inner = sub.outputs.at(ref.output);
    return PartOutput{part + inner.part, inner.output};
  };
  // Later parts and the results first, while the old numbering still holds.
  for (size_t q = part + 1; q < parts.size(); ++q)
    for (auto& src : parts[q].input_sources)
      if (src) src = renumber(*src);
  for (PartOutput& r : outputs) r = renumber(r);
  std::vector<ModulePart> inserted;
  for (ModulePart& q : sub.parts) {
    for (size_t s = 0; s < q.input_sources.size(); ++s) {
      auto& src = q.input_sources[s];
      if (src) {
        src = PartOutput{part + src->part, src->output};
        continue;
      }
      // A sub-module input: the old part's input of that name, with its source.
      const std::string& name = q.graph->inputs()[s]->name();
      auto it = std::find_if(old_inputs.begin(), old_inputs.end(), [&](const Value* v) { return v->name() == name; });
      if (it == old_inputs.end())
        throw std::invalid_argument("replace_part: input %" + name + " of part '" + q.name + "' is not an input of '" +
                                    old.name + "'");
      src = old.input_sources[static_cast<size_t>(it - old_inputs.begin())];
    }
    inserted.push_back(std::move(q));
  }
  parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(part));
  parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(part), std::make_move_iterator(inserted.begin()),
               std::make_move_iterator(inserted.end()));
}

const char* to_string(CaptureSpec::Backend backend) {
  return backend == CaptureSpec::Backend::Cuda ? "cuda" : "replay";
}

std::optional<CaptureSpec::Backend> parse_capture_backend(std::string_view name) {
  if (name == "replay") return CaptureSpec::Backend::Replay;
  if (name == "cuda") return CaptureSpec::Backend::Cuda;
  return std::nullopt;
}

std::string print_capture_spec(const CaptureSpec& spec) {
  std::string out = std::string("cudagraph(backend=") + to_string(spec.backend) + ", static=[";
  for (size_t i = 0; i < spec.static_inputs.size(); ++i) out += (i ? ", " : "") + std::to_string(spec.static_inputs[i]);
  out += "]";
  if (!spec.check_static_addresses) out += ", check-static-addresses=false";
  if (!spec.injected_bugs.empty()) {
    out += ", injected=[";
    for (size_t i = 0; i < spec.injected_bugs.size(); ++i) out += (i ? ", " : "") + spec.injected_bugs[i];
    out += "]";
  }
  return out + ")";
}

std::optional<size_t> Module::find_part(const std::string& name) const {
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i].name == name) return i;
  return std::nullopt;
}

size_t Module::num_nodes() const {
  size_t n = 0;
  for (const ModulePart& p : parts) n += p.graph->num_nodes();
  return n;
}

std::vector<size_t> Module::linked_outputs(size_t part) const {
  std::set<size_t> used;
  for (size_t q = part + 1; q < parts.size(); ++q)
    for (const auto& src : parts[q].input_sources)
      if (src && src->part == part) used.insert(src->output);
  return {used.begin(), used.end()};
}

int64_t Module::linked_bytes(size_t part) const {
  int64_t bytes = 0;
  std::set<const Value*> seen;  // two output slots may return one value
  for (size_t o : linked_outputs(part)) {
    const Value* v = parts.at(part).graph->outputs().at(o);
    if (seen.insert(v).second && v->meta()) bytes += v->meta()->nbytes();
  }
  return bytes;
}

std::string Module::print() const { return print_module(*this); }

uint64_t Module::hash() const { return std::hash<std::string>{}(print()); }

namespace {

std::string ref_text(const Module& m, const PartOutput& ref) {
  return (ref.part < m.parts.size() ? m.parts[ref.part].name : "?" + std::to_string(ref.part)) + "." +
         std::to_string(ref.output);
}

}  // namespace

std::string print_module(const Module& m) {
  std::string out = "module inputs (";
  for (size_t i = 0; i < m.input_names.size(); ++i) out += (i ? ", %" : "%") + m.input_names[i];
  out += ") returns (";
  for (size_t i = 0; i < m.outputs.size(); ++i) out += (i ? ", " : "") + ref_text(m, m.outputs[i]);
  out += ")\n";
  for (const ModulePart& p : m.parts) {
    out += "part " + p.name;
    bool linked = std::any_of(p.input_sources.begin(), p.input_sources.end(), [](const auto& s) { return s.has_value(); });
    if (linked) {
      out += " from (";
      for (size_t i = 0; i < p.input_sources.size(); ++i)
        out += (i ? ", " : "") + (p.input_sources[i] ? ref_text(m, *p.input_sources[i]) : std::string("-"));
      out += ")";
    }
    if (p.capture) out += " " + print_capture_spec(*p.capture);
    out += "\n" + print_graph(*p.graph);
  }
  return out;
}

namespace {

struct Line {
  std::string_view text;
  int number = 0;
  size_t offset = 0;  // of the line in the whole text
};

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t start = 0;
  int number = 1;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(Line{text.substr(start, end - start), number++, start});
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

bool is_blank_or_comment(std::string_view line) {
  size_t i = line.find_first_not_of(" \t\r");
  return i == std::string_view::npos || line[i] == '#';
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Reads the words of one header line ("module ..." or "part ..."), naming columns in errors.
class LineReader {
 public:
  LineReader(const Line& line, const std::string& source) : line_(line), source_(source) {}

  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }
  [[noreturn]] void fail_at(size_t pos, const std::string& message) const {
    throw ParseError(source_, line_.number, static_cast<int>(pos) + 1, message);
  }
  size_t position() const { return pos_; }
  void skip_space() {
    while (pos_ < line_.text.size() && (line_.text[pos_] == ' ' || line_.text[pos_] == '\t' || line_.text[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= line_.text.size() || line_.text[pos_] == '#';
  }
  std::string found() {
    if (at_end()) return "the end of the line";
    size_t end = pos_;
    while (end < line_.text.size() && is_word_char(line_.text[end])) ++end;
    if (end == pos_) end = pos_ + 1;
    return "'" + std::string(line_.text.substr(pos_, end - pos_)) + "'";
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < line_.text.size() && line_.text[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "' but found " + found());
  }
  // A name: letters, digits, '_' and '.'.
  std::string name(const std::string& what) { return word_of(what, '.'); }
  void word(const std::string& w) {
    size_t at = pos_;
    std::string got = name("'" + w + "'");
    if (got != w) {
      pos_ = at;
      skip_space();
      fail("expected '" + w + "' but found " + found());
    }
  }
  bool peek_word(const std::string& w) {
    skip_space();
    return line_.text.substr(pos_, w.size()) == w &&
           (pos_ + w.size() == line_.text.size() || !is_word_char(line_.text[pos_ + w.size()]));
  }
  // A kebab-case word (an option name or value): letters, digits, '_' and '-'.
  std::string kebab_word(const std::string& what) { return word_of(what, '-'); }
  // The run of name characters and `also` at the cursor; fails naming `what` when empty.
  std::string word_of(const std::string& what, char also) {
    skip_space();
    size_t start = pos_;
    while (pos_ < line_.text.size() && (is_word_char(line_.text[pos_]) || line_.text[pos_] == also)) ++pos_;
    if (start == pos_) fail("expected " + what + " but found " + found());
    return std::string(line_.text.substr(start, pos_ - start));
  }
  // `cudagraph(backend=..., static=[...], check-static-addresses=..., injected=[...])`
  // for a part with `n_inputs` inputs.
  CaptureSpec capture_spec(size_t n_inputs) {
    word("cudagraph");
    expect('(');
    CaptureSpec spec;
    std::set<std::string> seen;
    if (!accept(')')) {
      do {
        skip_space();
        const size_t key_at = pos_;
        std::string key = kebab_word("a cudagraph option (backend, static, check-static-addresses, injected)");
        if (!seen.insert(key).second) fail_at(key_at, "cudagraph option '" + key + "' is given twice");
        expect('=');
        skip_space();
        const size_t value_at = pos_;
        if (key == "backend") {
          std::string v = kebab_word("a backend (replay or cuda)");
          auto b = parse_capture_backend(v);
          if (!b) fail_at(value_at, "unknown cudagraph backend '" + v + "' (expected replay or cuda)");
          spec.backend = *b;
        } else if (key == "static") {
          expect('[');
          if (!accept(']')) {
            do {
              skip_space();
              const size_t at = pos_;
              std::string digits = name("an input index");
              if (digits.empty() || digits.size() > 9 ||
                  !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
                fail_at(at, "static input '" + digits + "' is not an input index");
              size_t index = std::stoul(digits);
              if (index >= n_inputs)
                fail_at(at, "static input " + digits + " is out of range: the part has " + std::to_string(n_inputs) +
                                " inputs");
              if (!spec.static_inputs.empty() && index <= spec.static_inputs.back())
                fail_at(at, "static inputs must be listed in increasing order without repeats");
              spec.static_inputs.push_back(index);
            } while (accept(','));
            expect(']');
          }
        } else if (key == "check-static-addresses") {
          std::string v = kebab_word("true or false");
          if (v != "true" && v != "false") fail_at(value_at, "check-static-addresses must be true or false, not '" + v + "'");
          spec.check_static_addresses = v == "true";
        } else if (key == "injected") {
          expect('[');
          if (!accept(']')) {
            do spec.injected_bugs.push_back(kebab_word("an injected wrapper bug"));
            while (accept(','));
            expect(']');
          }
        } else {
          fail_at(key_at, "unknown cudagraph option '" + key + "' (expected backend, static, check-static-addresses, injected)");
        }
      } while (accept(','));
      expect(')');
    }
    return spec;
  }
  // PART.INDEX, resolved against the parts parsed so far.
  PartOutput part_output(const Module& m, size_t before_part) {
    skip_space();
    size_t at = pos_;
    std::string text = name("a part output such as forward.0");
    size_t dot = text.rfind('.');
    auto bad = [&](const std::string& why) {
      pos_ = at;
      fail(why);
    };
    if (dot == std::string::npos || dot == 0 || dot + 1 == text.size())
      bad("expected a part output such as forward.0 but found '" + text + "'");
    std::string part = text.substr(0, dot), index = text.substr(dot + 1);
    if (!std::all_of(index.begin(), index.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        index.size() > 9)
      bad("output index '" + index + "' of '" + text + "' is not a small non-negative integer");
    std::optional<size_t> p = m.find_part(part);
    if (!p) bad("'" + text + "' names part '" + part + "', which is not defined");
    if (*p >= before_part) bad("'" + text + "' names part '" + part + "', which does not come before this one");
    size_t o = std::stoul(index);
    if (o >= m.parts[*p].graph->outputs().size())
      bad("'" + text + "': part '" + part + "' has " + std::to_string(m.parts[*p].graph->outputs().size()) +
          " outputs");
    return PartOutput{*p, o};
  }

 private:
  const Line& line_;
  const std::string& source_;
  size_t pos_ = 0;
};

// The pieces of text the header lines refer to, kept until every part is parsed (the
// results name parts that come later).
struct PendingPart {
  size_t header_line = 0;  // index into lines
  std::vector<size_t> from_columns;
};

}  // namespace

bool is_module_text(std::string_view text) {
  for (const Line& line : split_lines(text)) {
    if (is_blank_or_comment(line.text)) continue;
    size_t i = line.text.find_first_not_of(" \t");
    std::string_view rest = line.text.substr(i);
    return rest.substr(0, 6) == "module" && (rest.size() == 6 || !is_word_char(rest[6]));
  }
  return false;
}

Module parse_module(std::string_view text, const std::string& source) {
  std::vector<Line> lines = split_lines(text);
  size_t i = 0;
  while (i < lines.size() && is_blank_or_comment(lines[i].text)) ++i;
  if (i == lines.size()) throw ParseError(source, 1, 1, "empty module text: expected 'module inputs (...) returns (...)'");
  const size_t header = i;
  // Part boundaries: lines starting with "part " at column 1.
  std::vector<size_t> part_lines;
  for (size_t j = header + 1; j < lines.size(); ++j)
    if (lines[j].text.substr(0, 5) == "part " || lines[j].text == "part") part_lines.push_back(j);
  if (part_lines.empty())
    throw ParseError(source, lines[header].number, 1, "the module has no 'part NAME' line: a module needs at least one part");
  for (size_t j = header + 1; j < part_lines.front(); ++j)
    if (!is_blank_or_comment(lines[j].text))
      throw ParseError(source, lines[j].number, 1, "expected 'part NAME' after the module line");

  Module m;
  for (size_t k = 0; k < part_lines.size(); ++k) {
    const Line& head = lines[part_lines[k]];
    LineReader r(head, source);
    r.word("part");
    ModulePart part;
    r.skip_space();
    const size_t name_at = r.position();
    part.name = r.name("a part name such as forward");
    if (part.name.find('.') != std::string::npos) r.fail_at(name_at, "part name '" + part.name + "' may not contain '.'");
    if (m.find_part(part.name)) r.fail_at(name_at, "part '" + part.name + "' is defined twice");
    // The graph text runs to the next part line; earlier lines become blank lines so the
    // graph parser's line numbers are the module file's.
    size_t body_begin = lines[part_lines[k]].offset + head.text.size();
    size_t body_end = k + 1 < part_lines.size() ? lines[part_lines[k + 1]].offset : text.size();
    std::string body(static_cast<size_t>(head.number - 1), '\n');
    body += std::string(text.substr(body_begin, body_end - body_begin));
    part.graph = parse_graph(body, source);
    const size_t n_inputs = part.graph->inputs().size();
    part.input_sources.assign(n_inputs, std::nullopt);
    if (r.peek_word("from")) {
      r.word("from");
      r.expect('(');
      size_t slot = 0;
      if (!r.accept(')')) {
        do {
          if (slot == n_inputs)
            r.fail("'from' lists more sources than part '" + part.name + "' has inputs (" + std::to_string(n_inputs) + ")");
          if (r.accept('-')) {
            part.input_sources[slot] = std::nullopt;
          } else {
            part.input_sources[slot] = r.part_output(m, m.parts.size());
          }
          ++slot;
        } while (r.accept(','));
        r.expect(')');
      }
      if (slot != n_inputs)
        r.fail("'from' lists " + std::to_string(slot) + " sources but part '" + part.name + "' has " +
               std::to_string(n_inputs) + " inputs");
    }
    if (r.peek_word("cudagraph")) part.capture = r.capture_spec(n_inputs);
    if (!r.at_end()) r.fail("unexpected " + r.found() + " after the part line");
    m.parts.push_back(std::move(part));
  }

  LineReader r(lines[header], source);
  r.word("module");
  r.word("inputs");
  r.expect('(');
  std::set<std::string> names;
  if (!r.accept(')')) {
    do {
      r.expect('%');
      std::string name = r.name("an input name");
      if (!names.insert(name).second) r.fail("module input %" + name + " is listed twice");
      m.input_names.push_back(name);
    } while (r.accept(','));
    r.expect(')');
  }
  r.word("returns");
  r.expect('(');
  if (!r.accept(')')) {
    do m.outputs.push_back(r.part_output(m, m.parts.size()));
    while (r.accept(','));
    r.expect(')');
  }
  if (!r.at_end()) r.fail("unexpected " + r.found() + " after the module line");
  // A part input not linked to an earlier part is a module input: it must be declared.
  for (const ModulePart& p : m.parts)
    for (size_t s = 0; s < p.input_sources.size(); ++s)
      if (!p.input_sources[s] && !names.count(p.graph->inputs()[s]->name())) {
        const Value* in = p.graph->inputs()[s];
        throw ParseError(source, in->source_line, in->source_column,
                         "input %" + in->name() + " of part '" + p.name +
                             "' has no 'from' source and is not a module input");
      }
  return m;
}

}  // namespace passcheck::ir
