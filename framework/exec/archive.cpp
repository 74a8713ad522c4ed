// torch.save archives as graph inputs and outputs: the exchange format of the FX bridge
// (python/passcheck_fx). `passcheck run --inputs` / `equiv --inputs` read a list of
// values written by torch.save (LibTorch's pickle loader), checked against the graph's
// inputs, and `run --save-outputs` writes the outputs so torch.load reads them back and
// Python compares them bit for bit.
#include "framework/exec/inputs.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <stdexcept>
#include <string>

namespace passcheck::exec {

namespace {

std::string sizes_text(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

std::string kind_of(const c10::IValue& v) {
  if (v.isTensor()) return "a tensor";
  if (v.isBool()) return "a bool";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isNone()) return "None";
  return "a " + v.tagKind();
}

// The archive's value for input `index`, checked against the graph's declaration and
// laid out (strides, device) as the graph declares it.
c10::IValue checked_input(const std::string& path, size_t index, const ir::Value& input, const c10::IValue& value) {
  const std::string where = path + ": input " + std::to_string(index) + " (%" + input.name() + ")";
  if (input.type() != ir::ValueType::Tensor || !input.meta()) {
    if (value.isTensor())
      throw std::invalid_argument(where + ": the archive holds a tensor, the graph declares " + ir::print_type(input));
    return value;
  }
  const ir::TensorMeta* meta = &*input.meta();
  if (!value.isTensor())
    throw std::invalid_argument(where + ": the archive holds " + kind_of(value) + ", the graph declares a tensor");
  at::Tensor t = value.toTensor();
  if (t.scalar_type() != meta->dtype)
    throw std::invalid_argument(where + ": dtype " + ir::dtype_short_name(t.scalar_type()) + " in the archive, " +
                                ir::dtype_short_name(meta->dtype) + " in the graph");
  if (t.sizes().vec() != meta->sizes)
    throw std::invalid_argument(where + ": shape " + sizes_text(t.sizes()) + " in the archive, " +
                                sizes_text(meta->sizes) + " in the graph");
  if (t.strides().vec() == meta->strides && t.device() == meta->device) return t;
  // Same values in the graph's layout: a pass may depend on the declared strides.
  at::Tensor laid_out =
      at::empty_strided(meta->sizes, meta->strides, t.options().device(meta->device).requires_grad(false));
  laid_out.copy_(t);
  return laid_out;
}

}  // namespace

std::vector<c10::IValue> load_inputs(const std::string& path, const std::vector<ir::Value*>& inputs) {
  const std::string bytes = io::read_file(path, "inputs archive");
  c10::IValue loaded;
  try {
    loaded = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& error) {
    std::string what = error.what();
    what = what.substr(0, what.find('\n'));
    throw std::invalid_argument(path + ": not a torch.save archive of a list of inputs (" + what + ")");
  }
  std::vector<c10::IValue> values;
  if (loaded.isList()) {
    for (const c10::IValue& v : loaded.toListRef()) values.push_back(v);
  } else if (loaded.isTuple()) {
    for (const c10::IValue& v : loaded.toTupleRef().elements()) values.push_back(v);
  } else {
    throw std::invalid_argument(path + ": the archive holds " + kind_of(loaded) +
                                ", not a list of inputs (write it with passcheck_fx.save_inputs)");
  }
  if (values.size() != inputs.size())
    throw std::invalid_argument(path + ": the archive holds " + std::to_string(values.size()) + " inputs, the graph takes " +
                                std::to_string(inputs.size()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = checked_input(path, i, *inputs[i], values[i]);
  return values;
}

void save_values(const std::string& path, const std::vector<c10::IValue>& values) {
  c10::impl::GenericList list(c10::AnyType::get());
  for (const c10::IValue& v : values) list.push_back(v.isTensor() ? c10::IValue(v.toTensor().detach().cpu()) : v);
  const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(list));
  io::write_file(path, std::string(bytes.begin(), bytes.end()), "outputs archive");
}

}  // namespace passcheck::exec
