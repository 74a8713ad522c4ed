// The one-line text form of a ProgramSpec (program.h: encode_spec, decode_spec), which
// chunk repro files carry so a replay does not depend on the generator.
#include "generators/program.h"

#include <sstream>
#include <stdexcept>

namespace passcheck::gen {

// ---------------------------------------------------------------------------------
// Text form: "batch=4 in=3 tokens=0 vocab=2 loss=sum classes=2; f32 tanh: relu linear/5/1
// route/3/2; bf16 rms_norm: count_update/2/1" (ops: name, name/out/bias for width
// changes, name/E/k for route and count_update).

std::string encode_spec(const ProgramSpec& spec) {
  std::ostringstream os;
  os << "batch=" << spec.batch << " in=" << spec.in_dim << " tokens=" << (spec.tokens ? 1 : 0) << " vocab=" << spec.vocab
     << " loss=" << to_string(spec.loss) << " classes=" << spec.classes;
  for (const LayerSpec& layer : spec.layers) {
    os << "; " << (layer.bf16 ? "bf16" : "f32") << " " << to_string(layer.end) << ":";
    for (const OpSpec& op : layer.ops) {
      os << " " << to_string(op.kind);
      if (changes_width(op.kind)) os << "/" << op.out << "/" << (op.bias ? 1 : 0);
      if (is_moe(op.kind)) os << "/" << op.experts << "/" << op.top_k;
    }
  }
  return os.str();
}

namespace {
std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}
int64_t to_int(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("program text: " + what + " must be an integer, got '" + s + "'");
}
}  // namespace

ProgramSpec decode_spec(const std::string& text) {
  std::vector<std::string> parts = split_on(text, ';');
  if (parts.empty()) throw std::invalid_argument("program text: empty");
  ProgramSpec s;
  for (const std::string& kv : words(parts[0])) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("program text: expected key=value, got '" + kv + "'");
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "batch") s.batch = to_int(v, k);
    else if (k == "in") s.in_dim = to_int(v, k);
    else if (k == "tokens") s.tokens = to_int(v, k) != 0;
    else if (k == "vocab") s.vocab = to_int(v, k);
    else if (k == "classes") s.classes = to_int(v, k);
    else if (k == "loss") {
      bool found = false;
      for (LossKind l : {LossKind::Sum, LossKind::Mean, LossKind::CrossEntropy})
        if (v == to_string(l)) s.loss = l, found = true;
      if (!found) throw std::invalid_argument("program text: unknown loss '" + v + "'");
    } else {
      throw std::invalid_argument("program text: unknown key '" + k + "'");
    }
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    size_t colon = parts[i].find(':');
    if (colon == std::string::npos) throw std::invalid_argument("program text: layer without ':' in '" + parts[i] + "'");
    std::vector<std::string> head = words(parts[i].substr(0, colon));
    if (head.size() != 2 || (head[0] != "f32" && head[0] != "bf16"))
      throw std::invalid_argument("program text: layer head must be '<f32|bf16> <end>', got '" + parts[i].substr(0, colon) + "'");
    LayerSpec layer;
    layer.bf16 = head[0] == "bf16";
    bool end_found = false;
    for (LayerEnd e : {LayerEnd::Tanh, LayerEnd::LayerNorm, LayerEnd::RmsNorm})
      if (head[1] == to_string(e)) layer.end = e, end_found = true;
    if (!end_found) throw std::invalid_argument("program text: unknown layer end '" + head[1] + "'");
    for (const std::string& w : words(parts[i].substr(colon + 1))) {
      std::vector<std::string> f = split_on(w, '/');
      OpSpec op;
      const std::optional<OpKind> kind = op_kind_named(f[0]);
      if (!kind) throw std::invalid_argument("program text: unknown operation '" + f[0] + "'");
      op.kind = *kind;
      size_t want = changes_width(op.kind) || is_moe(op.kind) ? 3 : 1;
      if (f.size() != want) throw std::invalid_argument("program text: operation '" + w + "' needs " + std::to_string(want) + " fields");
      if (changes_width(op.kind)) {
        op.out = to_int(f[1], "out");
        op.bias = to_int(f[2], "bias") != 0;
      }
      if (is_moe(op.kind)) {
        op.experts = to_int(f[1], "experts");
        op.top_k = to_int(f[2], "top_k");
      }
      layer.ops.push_back(op);
    }
    s.layers.push_back(layer);
  }
  if (s.layers.empty()) throw std::invalid_argument("program text: no layers");
  return s;
}

}  // namespace passcheck::gen
