// torch.save archives as graph inputs and outputs: the exchange format of the FX bridge
// (python/passcheck_fx). `passcheck run --inputs` / `equiv --inputs` read a list of
// values written by torch.save (LibTorch's pickle loader), checked against the graph's
// inputs, and `run --save-outputs` writes the outputs so torch.load reads them back and
// Python compares them bit for bit.
#include "framework/exec/inputs.h"
#include "framework/io/files.h"
#include "framework/ir/text.h"

#include <ATen/EmptyTensor.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <array>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>

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

// ---- the archive checked before and after LibTorch reads it ------------------------------
// LibTorch's unpickler trusts the archive: it builds nested containers as deep as the
// pickle says (and frees them recursively) and gives a tensor whatever sizes, strides and
// offset the pickle names, checked against nothing. Both are checked here: the pickle's
// stack depth before loading, every tensor's extent against its storage after.

// How many objects a pickle may hold on its stack at once: nesting needs one per level,
// and an archive of inputs (appended in batches of 1000 by Python's pickler) needs a few.
constexpr size_t kMaxPickleStack = 4096;
// The largest memo index (PUT/GET) an archive may name: one per object it holds.
constexpr uint32_t kMaxPickleMemo = 1u << 20;

// What each opcode's argument looks like in the stream.
enum class PickleArg : uint8_t { None, Fixed, Line, TwoLines, Len1, Len4, Len8 };

struct PickleOp {
  PickleArg arg = PickleArg::None;
  uint8_t fixed = 0;      // bytes, for Fixed
  uint8_t pops = 0;       // objects taken from the stack
  bool to_mark = false;   // also everything down to (and including) the last mark
  uint8_t pushes = 0;     // objects put on the stack (a mark counts as one)
  bool known = false;
};

// The protocol 0-5 opcodes (Python's pickletools table): argument form and stack effect.
const std::array<PickleOp, 256>& pickle_ops() {
  static const std::array<PickleOp, 256> table = [] {
    std::array<PickleOp, 256> t{};
    auto op = [&](unsigned char code, PickleArg arg, uint8_t fixed, uint8_t pops, bool to_mark, uint8_t pushes) {
      t[code] = PickleOp{arg, fixed, pops, to_mark, pushes, true};
    };
    using A = PickleArg;
    for (unsigned char c : std::initializer_list<unsigned char>{'I', 'L', 'F', 'S', 'V', 'g', 'P'}) op(c, A::Line, 0, 0, false, 1);
    op('J', A::Fixed, 4, 0, false, 1); op('K', A::Fixed, 1, 0, false, 1); op('M', A::Fixed, 2, 0, false, 1);
    op('G', A::Fixed, 8, 0, false, 1); op('h', A::Fixed, 1, 0, false, 1); op('j', A::Fixed, 4, 0, false, 1);
    op(0x82, A::Fixed, 1, 0, false, 1); op(0x83, A::Fixed, 2, 0, false, 1); op(0x84, A::Fixed, 4, 0, false, 1);
    for (unsigned char c : std::initializer_list<unsigned char>{0x8a, 'U', 'C', 0x8c}) op(c, A::Len1, 0, 0, false, 1);
    for (unsigned char c : std::initializer_list<unsigned char>{0x8b, 'T', 'B', 'X'}) op(c, A::Len4, 0, 0, false, 1);
    for (unsigned char c : std::initializer_list<unsigned char>{0x8e, 0x96, 0x8d}) op(c, A::Len8, 0, 0, false, 1);
    for (unsigned char c : std::initializer_list<unsigned char>{0x97, 'N', 0x88, 0x89, ']', ')', '}', 0x8f, '('}) op(c, A::None, 0, 0, false, 1);
    op(0x98, A::None, 0, 1, false, 1);
    op('a', A::None, 0, 2, false, 1);
    op('e', A::None, 0, 1, true, 1); op('u', A::None, 0, 1, true, 1); op(0x90, A::None, 0, 1, true, 1);
    for (unsigned char c : std::initializer_list<unsigned char>{'l', 't', 'd', 0x91}) op(c, A::None, 0, 0, true, 1);
    op(0x85, A::None, 0, 1, false, 1); op(0x86, A::None, 0, 2, false, 1); op(0x87, A::None, 0, 3, false, 1);
    op('s', A::None, 0, 3, false, 1);
    op('0', A::None, 0, 1, false, 0); op('2', A::None, 0, 1, false, 2); op('1', A::None, 0, 0, true, 0);
    op('p', A::Line, 0, 0, false, 0); op('q', A::Fixed, 1, 0, false, 0); op('r', A::Fixed, 4, 0, false, 0);
    op(0x94, A::None, 0, 1, false, 1);
    op('c', A::TwoLines, 0, 0, false, 1); op(0x93, A::None, 0, 2, false, 1);
    op('R', A::None, 0, 2, false, 1); op('b', A::None, 0, 2, false, 1); op(0x81, A::None, 0, 2, false, 1);
    op(0x92, A::None, 0, 3, false, 1);
    op('i', A::TwoLines, 0, 0, true, 1); op('o', A::None, 0, 0, true, 1);
    op(0x80, A::Fixed, 1, 0, false, 0); op(0x95, A::Fixed, 8, 0, false, 0);
    op('Q', A::None, 0, 1, false, 1);
    op('.', A::None, 0, 1, false, 0);
    return t;
  }();
  return table;
}

// Walks the opcodes of `pickle`, tracking how many objects and marks are on the stack;
// throws when the stream is malformed or holds more than kMaxPickleStack at once.
void check_pickle_stack(const std::string& path, const char* data, size_t size) {
  auto bad = [&](size_t at, const std::string& why) {
    throw std::invalid_argument(path + ": data.pkl byte " + std::to_string(at) + ": " + why);
  };
  std::vector<size_t> marks;  // stack heights at each MARK
  size_t height = 0;
  size_t at = 0;
  auto read_length = [&](size_t bytes) -> uint64_t {
    if (size - at < bytes) bad(at, "truncated length");
    uint64_t n = 0;
    for (size_t k = 0; k < bytes; ++k) n |= uint64_t(static_cast<unsigned char>(data[at + k])) << (8 * k);
    at += bytes;
    return n;
  };
  auto skip_line = [&] {
    const void* nl = std::memchr(data + at, '\n', size - at);
    if (!nl) bad(at, "unterminated text argument");
    at = static_cast<size_t>(static_cast<const char*>(nl) - data) + 1;
  };
  while (at < size) {
    const size_t op_at = at;
    const unsigned char code = static_cast<unsigned char>(data[at++]);
    const PickleOp& op = pickle_ops()[code];
    if (!op.known) bad(op_at, "unknown pickle opcode 0x" + [&] { std::ostringstream o; o << std::hex << int(code); return o.str(); }());
    // LibTorch's unpickler sizes its memo table by the largest index a PUT names: an
    // index of 2^32 would allocate 64 GiB before anything else is read.
    if (code == 'r' || code == 'j') {
      if (size - at < 4) bad(op_at, "truncated argument");
      uint32_t index = 0;
      for (size_t k = 0; k < 4; ++k) index |= uint32_t(static_cast<unsigned char>(data[at + k])) << (8 * k);
      if (index > kMaxPickleMemo)
        bad(op_at, "memo index " + std::to_string(index) + " (an archive of inputs uses a few; at most " +
                       std::to_string(kMaxPickleMemo) + ")");
    }
    if (code == 'p' || code == 'g') {
      const void* nl = std::memchr(data + at, '\n', size - at);
      const size_t length = nl ? static_cast<size_t>(static_cast<const char*>(nl) - (data + at)) : 0;
      if (!nl || length == 0 || length > 7 ||
          std::string(data + at, length).find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(std::string(data + at, length)) > kMaxPickleMemo)
        bad(op_at, "memo index is not a whole number up to " + std::to_string(kMaxPickleMemo));
    }
    switch (op.arg) {
      case PickleArg::None: break;
      case PickleArg::Fixed:
        if (size - at < op.fixed) bad(op_at, "truncated argument");
        at += op.fixed;
        break;
      case PickleArg::Line: skip_line(); break;
      case PickleArg::TwoLines: skip_line(); skip_line(); break;
      case PickleArg::Len1: case PickleArg::Len4: case PickleArg::Len8: {
        const uint64_t n = read_length(op.arg == PickleArg::Len1 ? 1 : op.arg == PickleArg::Len4 ? 4 : 8);
        if (n > size - at) bad(op_at, "argument longer than the pickle");
        at += n;
        break;
      }
    }
    if (op.to_mark) {
      if (marks.empty()) bad(op_at, "no mark to pop to");
      height = marks.back();
      marks.pop_back();
    }
    if (height < op.pops) bad(op_at, "pops from an empty stack");
    height -= op.pops;
    if (code == '(') marks.push_back(height);
    height += op.pushes;
    if (height + marks.size() > kMaxPickleStack)
      bad(op_at, "nests deeper than " + std::to_string(kMaxPickleStack) +
                     " objects (an archive of inputs needs a few; a deeper one is refused before LibTorch reads it)");
    if (code == '.') return;
  }
  bad(at, "no STOP opcode");
}

void check_archive_pickle(const std::string& path, const std::string& bytes) {
  std::istringstream stream(bytes);
  std::tuple<at::DataPtr, size_t> record;
  try {
    caffe2::serialize::PyTorchStreamReader reader(&stream);
    if (!reader.hasRecord("data.pkl")) throw std::invalid_argument("no data.pkl record");
    record = reader.getRecord("data.pkl");
  } catch (const std::exception& error) {
    std::string what = error.what();
    throw std::invalid_argument(path + ": not a torch.save archive (" + what.substr(0, what.find('\n')) + ")");
  }
  check_pickle_stack(path, static_cast<const char*>(std::get<0>(record).get()), std::get<1>(record));
}

// Every tensor reachable from `root` (each container once: a pickle's memo can share or
// cycle them) lies within its storage: sizes and strides non-negative, offset plus the
// furthest element inside the storage's bytes.
void check_tensor_extents(const std::string& path, const c10::IValue& root) {
  std::vector<c10::IValue> pending{root};
  std::unordered_set<const void*> seen;
  size_t tensors = 0;
  while (!pending.empty()) {
    c10::IValue v = std::move(pending.back());
    pending.pop_back();
    if (v.isPtrType() && !seen.insert(v.internalToPointer()).second) continue;
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      const std::string what = path + ": tensor " + std::to_string(tensors++) + " (sizes " +
                               sizes_text(t.sizes()) + ", strides " + sizes_text(t.strides()) + ", offset " +
                               std::to_string(t.storage_offset()) + ")";
      if (!t.has_storage() || t.is_sparse() || t.is_quantized())
        throw std::invalid_argument(what + ": only dense tensors with storage are read");
      for (size_t d = 0; d < t.sizes().size(); ++d)
        if (t.sizes()[d] < 0 || t.strides()[d] < 0) throw std::invalid_argument(what + ": negative size or stride");
      if (t.storage_offset() < 0) throw std::invalid_argument(what + ": negative storage offset");
      const size_t need = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.dtype().itemsize(),
                                                           static_cast<size_t>(t.storage_offset()));
      if (need > t.storage().nbytes())
        throw std::invalid_argument(what + ": reaches byte " + std::to_string(need) + " of a storage of " +
                                    std::to_string(t.storage().nbytes()) + " bytes");
    } else if (v.isList()) {
      for (const c10::IValue& item : v.toListRef()) pending.push_back(item);
    } else if (v.isTuple()) {
      for (const c10::IValue& item : v.toTupleRef().elements()) pending.push_back(item);
    } else if (v.isGenericDict()) {
      for (const auto& entry : v.toGenericDict()) {
        pending.push_back(entry.key());
        pending.push_back(entry.value());
      }
    } else if (v.isObject() || v.isCapsule() || v.isFuture() || v.isRRef()) {
      throw std::invalid_argument(path + ": holds " + v.tagKind() + ", which an archive of values may not");
    }
  }
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

std::vector<c10::IValue> read_archive(const std::string& bytes, const std::string& path) {
  check_archive_pickle(path, bytes);
  c10::IValue loaded;
  try {
    loaded = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& error) {
    std::string what = error.what();
    what = what.substr(0, what.find('\n'));
    throw std::invalid_argument(path + ": not a torch.save archive of a list of inputs (" + what + ")");
  }
  check_tensor_extents(path, loaded);
  std::vector<c10::IValue> values;
  if (loaded.isList()) {
    for (const c10::IValue& v : loaded.toListRef()) values.push_back(v);
  } else if (loaded.isTuple()) {
    for (const c10::IValue& v : loaded.toTupleRef().elements()) values.push_back(v);
  } else {
    throw std::invalid_argument(path + ": the archive holds " + kind_of(loaded) +
                                ", not a list of inputs (write it with passcheck_fx.save_inputs)");
  }
  return values;
}

std::vector<c10::IValue> load_inputs(const std::string& path, const std::vector<ir::Value*>& inputs) {
  std::vector<c10::IValue> values = read_archive(io::read_file(path, "inputs archive"), path);
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
