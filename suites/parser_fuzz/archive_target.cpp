// Fuzz target over input archives (torch.save files: `passcheck run --inputs`), read with
// exec::read_archive: the pickle-stack check, LibTorch's unpickler and the tensor-extent
// check. The input is the archive's pickle (data.pkl): the harness wraps it in a
// well-formed zip with eight 256-byte storages (records data/0 .. data/7), since
// mutating the zip itself mostly breaks its checksums and never reaches the pickle. An
// exception for bad input is the expected outcome; a crash, a sanitizer report or a
// hang is a finding (docs/parser-fuzzing.md). LibTorch itself is not instrumented, so
// only what reaches passcheck's code (and crashes inside LibTorch) is seen.
#include "framework/exec/inputs.h"

#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <exception>
#include <string>

namespace {

std::string archive_around(const uint8_t* pickle, size_t size) {
  std::string zip;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    zip.append(static_cast<const char*>(data), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle, size);
  writer.writeRecord("byteorder", "little", 6);
  std::string storage(256, '\0');
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<char>(i * 37 + 11);
  for (int key = 0; key < 8; ++key) writer.writeRecord("data/" + std::to_string(key), storage.data(), storage.size());
  writer.writeEndOfFile();
  return zip;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    for (const c10::IValue& value : passcheck::exec::read_archive(archive_around(data, size), "fuzz.pt"))
      if (value.isTensor()) (void)value.toTensor().sum().item<double>();  // read every byte the tensor claims
  } catch (const std::exception&) {
    // refused with an error: what hostile input should get
  }
  return 0;
}
