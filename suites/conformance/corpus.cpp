// Reader and runner of the tracer conformance corpus (corpus.h). The argument syntax is
// the one the reference script reads: %refs, numbers, true/false, None, "strings", dtype
// short names, cpu, and [lists]; arguments map to schema arguments by position.
#include "suites/conformance/corpus.h"

#include "framework/exec/schema_args.h"
#include "framework/ir/meta.h"
#include "framework/trace/module_scope.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/nn/module.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace passcheck::conformance {

namespace {

class ArgReader {
 public:
  ArgReader(const std::string& text, std::string where) : text_(text), where_(std::move(where)) {}

  std::vector<CorpusArg> all() {
    std::vector<CorpusArg> out;
    skip();
    if (pos_ == text_.size()) return out;
    while (true) {
      out.push_back(value());
      skip();
      if (pos_ == text_.size()) return out;
      expect(',');
    }
  }

 private:
  void skip() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(where_ + ": " + what + " at column " + std::to_string(pos_ + 1) + " of the arguments");
  }
  void expect(char c) {
    skip();
    if (pos_ >= text_.size() || text_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  CorpusArg value() {
    skip();
    if (pos_ >= text_.size()) fail("missing argument");
    CorpusArg a;
    if (text_[pos_] == '[') {
      ++pos_;
      a.kind = CorpusArg::Kind::List;
      skip();
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return a;
      }
      while (true) {
        a.items.push_back(value());
        skip();
        if (pos_ < text_.size() && text_[pos_] == ']') {
          ++pos_;
          return a;
        }
        expect(',');
      }
    }
    if (text_[pos_] == '"') {
      size_t end = text_.find('"', pos_ + 1);
      if (end == std::string::npos) fail("unterminated string");
      a.kind = CorpusArg::Kind::String;
      a.text = text_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      return a;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   std::string("%_.+-").find(text_[pos_]) != std::string::npos))
      ++pos_;
    std::string tok = text_.substr(start, pos_ - start);
    if (tok.empty()) fail("unexpected character");
    if (tok[0] == '%') {
      a.kind = CorpusArg::Kind::Ref;
      a.text = tok.substr(1);
    } else if (tok == "true" || tok == "false") {
      a.kind = CorpusArg::Kind::Bool;
      a.b = tok == "true";
    } else if (tok == "None") {
      a.kind = CorpusArg::Kind::None;
    } else if (ir::dtype_from_short_name(tok)) {
      a.kind = CorpusArg::Kind::Dtype;
      a.text = tok;
    } else if (tok == "dev") {  // the device the step runs on
      a.kind = CorpusArg::Kind::Device;
      a.text = tok;
    } else if (tok == "inf" || tok == "-inf" || tok == "nan") {
      a.kind = CorpusArg::Kind::Float;
      a.f = tok == "nan" ? NAN : (tok[0] == '-' ? -INFINITY : INFINITY);
    } else if (std::regex_match(tok, std::regex("-?[0-9]+"))) {
      a.kind = CorpusArg::Kind::Int;
      a.i = std::stoll(tok);
    } else {
      char* end = nullptr;
      a.f = std::strtod(tok.c_str(), &end);
      if (*end != '\0') fail("cannot read '" + tok + "'");
      a.kind = CorpusArg::Kind::Float;
    }
    return a;
  }

  const std::string& text_;
  std::string where_;
  size_t pos_ = 0;
};

std::string strip_comment(const std::string& line) {
  size_t first = line.find_first_not_of(' ');
  if (first != std::string::npos && line[first] == '%') return line;
  size_t hash = line.find('#');
  return hash == std::string::npos ? line : line.substr(0, hash);
}

// As LibTorch's C++ operators build it (`x * 0.5`): outside the dispatcher.
at::Tensor wrapped_number(const CorpusArg& a) {
  at::Tensor t = c10::scalar_to_tensor(a.kind == CorpusArg::Kind::Bool  ? c10::Scalar(a.b)
                                       : a.kind == CorpusArg::Kind::Int ? c10::Scalar(a.i)
                                                                        : c10::Scalar(a.f));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

c10::IValue to_ivalue(const CorpusArg& a, const c10::Argument& schema_arg, const std::map<std::string, at::Tensor>& env,
                      const CorpusOp& op) {
  auto where = [&] { return "corpus line " + std::to_string(op.line) + ", argument '" + schema_arg.name() + "'"; };
  auto ref = [&](const CorpusArg& r) -> at::Tensor {
    auto it = env.find(r.text);
    if (it == env.end()) throw std::invalid_argument(where() + ": unknown value %" + r.text);
    return it->second;
  };
  using K = CorpusArg::Kind;
  exec::SchemaArgKind kind = exec::classify(schema_arg);
  switch (a.kind) {
    case K::None: return c10::IValue();
    case K::Ref: return c10::IValue(ref(a));
    case K::String: return c10::IValue(a.text);
    case K::Dtype: return c10::IValue(static_cast<int64_t>(*ir::dtype_from_short_name(a.text)));
    case K::Device: {
      // The device of the step's inputs, so one program traces on the CPU and on meta.
      c10::Device device(c10::DeviceType::CPU);
      if (!env.empty()) device = env.begin()->second.device();
      return c10::IValue(device);
    }
    case K::Bool:
    case K::Int:
    case K::Float:
      if (kind == exec::SchemaArgKind::Tensor) return c10::IValue(wrapped_number(a));
      if (a.kind == K::Bool) return c10::IValue(a.b);
      if (a.kind == K::Int)
        return kind == exec::SchemaArgKind::Float ? c10::IValue(static_cast<double>(a.i)) : c10::IValue(a.i);
      return c10::IValue(a.f);
    case K::List: break;
  }
  if (kind == exec::SchemaArgKind::TensorList) {
    c10::List<at::Tensor> list;
    for (const CorpusArg& e : a.items) list.push_back(ref(e));
    return c10::IValue(list);
  }
  if (kind == exec::SchemaArgKind::OptionalTensorList) {
    c10::List<c10::optional<at::Tensor>> list;
    for (const CorpusArg& e : a.items)
      list.push_back(e.kind == K::None ? c10::optional<at::Tensor>() : c10::optional<at::Tensor>(ref(e)));
    return c10::IValue(list);
  }
  if (kind == exec::SchemaArgKind::IntList) {
    std::vector<int64_t> v;
    for (const CorpusArg& e : a.items) v.push_back(e.i);
    return c10::IValue(v);
  }
  if (kind == exec::SchemaArgKind::FloatList) {
    std::vector<double> v;
    for (const CorpusArg& e : a.items) v.push_back(e.kind == K::Int ? static_cast<double>(e.i) : e.f);
    return c10::IValue(v);
  }
  throw std::invalid_argument(where() + ": a list where the schema takes " + schema_arg.type()->str());
}

void call(const CorpusOp& op, std::map<std::string, at::Tensor>& env) {
  std::optional<c10::OperatorHandle> handle = exec::find_operator(op.op);
  if (!handle) throw std::invalid_argument("corpus line " + std::to_string(op.line) + ": unknown operator " + op.op);
  const auto& schema_args = handle->schema().arguments();
  if (op.args.size() > schema_args.size())
    throw std::invalid_argument("corpus line " + std::to_string(op.line) + ": too many arguments for " + op.op);
  torch::jit::Stack stack;
  for (size_t i = 0; i < schema_args.size(); ++i) {
    if (i < op.args.size()) stack.push_back(to_ivalue(op.args[i], schema_args[i], env, op));
    else if (schema_args[i].default_value()) stack.push_back(*schema_args[i].default_value());
    else throw std::invalid_argument("corpus line " + std::to_string(op.line) + ": missing argument '" +
                                     schema_args[i].name() + "' of " + op.op);
  }
  handle->callBoxed(&stack);
  std::vector<at::Tensor> results;
  for (const c10::IValue& r : stack) {
    if (r.isTensor()) results.push_back(r.toTensor());
    else if (r.isTensorList())
      for (const at::Tensor& t : r.toTensorVector()) results.push_back(t);
  }
  if (results.size() != op.outs.size())
    throw std::invalid_argument("corpus line " + std::to_string(op.line) + ": " + op.op + " returned " +
                                std::to_string(results.size()) + " tensors for " + std::to_string(op.outs.size()) +
                                " names");
  for (size_t i = 0; i < results.size(); ++i) env[op.outs[i]] = results[i];
}

}  // namespace

std::vector<CorpusProgram> read_corpus(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot open");
  std::vector<CorpusProgram> programs;
  std::string raw;
  const std::regex input_re(R"(input\s+(\w+)\s+(\w+)\[([0-9,]*)\](.*))");
  const std::regex op_re(R"((nograd\s+)?(.+?)=\s*([\w:.]+)\((.*)\))");
  for (int lineno = 1; std::getline(in, raw); ++lineno) {
    std::string line = strip_comment(raw);
    std::string where = path + ":" + std::to_string(lineno);
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) continue;
    std::smatch m;
    std::string trimmed = line.substr(line.find_first_not_of(' '));
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
    if (first == "program") {
      CorpusProgram p;
      words >> p.name;
      p.line = lineno;
      programs.push_back(std::move(p));
    } else if (programs.empty()) {
      throw std::invalid_argument(where + ": a line outside a program");
    } else if (first == "input") {
      if (!std::regex_match(trimmed, m, input_re)) throw std::invalid_argument(where + ": bad input line");
      CorpusInput input;
      input.name = m[1];
      auto dtype = ir::dtype_from_short_name(m[2].str());
      if (!dtype) throw std::invalid_argument(where + ": unknown dtype " + std::string(m[2]));
      input.dtype = *dtype;
      std::stringstream sizes(m[3]);
      for (std::string s; std::getline(sizes, s, ',');) input.sizes.push_back(std::stoll(s));
      std::istringstream flags(m[4]);
      for (std::string f; flags >> f;) {
        if (f == "grad") input.requires_grad = true;
        else if (f.rfind("high=", 0) == 0) input.high = std::stoll(f.substr(5));
        else throw std::invalid_argument(where + ": unknown input flag " + f);
      }
      programs.back().inputs.push_back(std::move(input));
    } else if (first == "output") {
      for (std::string w; words >> w;) programs.back().outputs.push_back(w.substr(w[0] == '%' ? 1 : 0));
    } else {
      if (!std::regex_match(trimmed, m, op_re)) throw std::invalid_argument(where + ": cannot read operation line");
      CorpusOp op;
      op.no_grad = m[1].matched;
      std::stringstream outs(m[2]);
      for (std::string o; std::getline(outs, o, ',');) {
        size_t b = o.find('%'), e = o.find_last_not_of(' ');
        if (b == std::string::npos) throw std::invalid_argument(where + ": result names start with %");
        op.outs.push_back(o.substr(b + 1, e - b));
      }
      op.op = m[3];
      op.args = ArgReader(m[4], where).all();
      op.line = lineno;
      programs.back().ops.push_back(std::move(op));
    }
  }
  return programs;
}

std::vector<at::Tensor> example_inputs(const CorpusProgram& program, uint64_t seed, c10::Device device) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> out;
  for (const CorpusInput& spec : program.inputs) {
    int64_t n = 1;
    for (int64_t s : spec.sizes) n *= s;
    at::Tensor t;
    if (at::isFloatingType(spec.dtype)) t = at::randn(spec.sizes, gen).to(spec.dtype);
    else if (spec.dtype == at::kBool) t = at::arange(n).remainder(3).eq(0).reshape(spec.sizes);
    else t = at::arange(n).remainder(spec.high).to(spec.dtype).reshape(spec.sizes);
    out.push_back(t.to(device).set_requires_grad(spec.requires_grad));
  }
  return out;
}

std::vector<at::Tensor> replay_inputs(const CorpusProgram& program, uint64_t seed, bool with_nan) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> out;
  for (const CorpusInput& spec : program.inputs) {
    at::Tensor t;
    if (at::isFloatingType(spec.dtype)) {
      at::Tensor f = at::randn(spec.sizes, gen).flatten();
      int64_t n = f.numel();
      // Zeros, a tie (two equal values, the largest of the row being the tied one), and a NaN.
      if (n > 1) f[n - 1] = 0.0;
      if (n > 3) f[1] = f[0].item<double>() + 4.0, f[2] = f[1].item<double>();
      if (with_nan && n > 4) f[3] = NAN;
      t = f.reshape(spec.sizes).to(spec.dtype);
    } else if (spec.dtype == at::kBool) {
      t = at::rand(spec.sizes, gen).lt(0.5);
    } else {
      t = at::randint(spec.high, spec.sizes, gen, at::TensorOptions().dtype(spec.dtype));
    }
    out.push_back(t.set_requires_grad(spec.requires_grad));
  }
  return out;
}

trace::StepFunction make_step(const CorpusProgram& program) {
  return [program](const std::vector<c10::IValue>& args) -> c10::IValue {
    std::map<std::string, at::Tensor> env;
    for (size_t i = 0; i < program.inputs.size(); ++i) env[program.inputs[i].name] = args.at(i).toTensor();
    for (const CorpusOp& op : program.ops) {
      if (op.no_grad) {
        at::NoGradGuard no_grad;
        call(op, env);
      } else {
        call(op, env);
      }
    }
    at::Tensor loss;
    for (const std::string& name : program.outputs) {
      const at::Tensor& t = env.at(name);
      if (!at::isFloatingType(t.scalar_type())) continue;
      loss = loss.defined() ? loss + t.sum() : t.sum();
    }
    std::vector<at::Tensor> wrt;
    for (const CorpusInput& input : program.inputs)
      if (input.requires_grad) wrt.push_back(env.at(input.name));
    c10::List<at::Tensor> result;
    result.push_back(loss);
    for (const at::Tensor& g : trace::gradients({loss}, wrt)) result.push_back(g);
    return c10::IValue(result);
  };
}

std::vector<at::Tensor> run_eager(const CorpusProgram& program, const std::vector<at::Tensor>& inputs) {
  std::vector<c10::IValue> args;
  for (size_t i = 0; i < inputs.size(); ++i)
    args.emplace_back(inputs[i].detach().clone().set_requires_grad(program.inputs[i].requires_grad));
  at::AutoGradMode grad_on(true);
  c10::IValue result = make_step(program)(args);
  return result.toTensorVector();
}

bool uses_random(const CorpusProgram& program) {
  for (const CorpusOp& op : program.ops)
    for (const char* random : {"dropout", "rand", "bernoulli", "normal", "randint"})
      if (op.op.find(random) != std::string::npos) return true;
  return false;
}

}  // namespace passcheck::conformance
