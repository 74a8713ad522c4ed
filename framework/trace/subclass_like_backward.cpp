// The placeholder dispatch mode of SubclassLikeBackwardGuard and its interpreter.
#include "framework/trace/subclass_like_backward.h"

#include <c10/core/SafePyObject.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/PyInterpreter.h>
#include <c10/util/Exception.h>

namespace passcheck::trace {

namespace {

using c10::DispatchKey;

[[noreturn]] void refuse(const char* what) {
  TORCH_CHECK(false, "passcheck's tracing mode has no Python interpreter: ", what,
              " reached it (a Python tensor subclass or Python operator in a C++ trace?)");
}

// Everything LibTorch may ask a mode's interpreter. Only detach is reachable from C++
// (TensorImpl::shallow_copy_and_detach while a mode is on the stack); it detaches as
// LibTorch does without a mode. The rest belongs to Python objects, which never exist here.
class PlaceholderInterpreter final : public c10::impl::PyInterpreterVTable {
 public:
  std::string name() const override { return "passcheck tracing mode"; }
  void incref(PyObject*) const override {}
  void decref(PyObject*) const override {}
  bool try_incref(const c10::impl::PyObjectSlot&) const override { return false; }
  size_t refcnt(PyObject*) const override { return 1; }
  c10::intrusive_ptr<c10::TensorImpl> detach(const c10::TensorImpl* self) const override {
    // With Python excluded, the detach takes LibTorch's own path instead of coming back here.
    c10::impl::ExcludeDispatchKeyGuard plain_detach(DispatchKey::Python);
    return self->shallow_copy_and_detach(c10::VariableVersion(/*version=*/0), /*allow_tensor_metadata_change=*/false);
  }
  void dispatch(const c10::OperatorHandle&, torch::jit::Stack*) const override { refuse("an operator call"); }
  void reportErrorCallback(PyObject*, DispatchKey) const override { refuse("an error callback"); }
  void python_op_registration_trampoline(const c10::OperatorHandle&, DispatchKey, c10::DispatchKeySet,
                                         torch::jit::Stack*, bool, bool) const override {
    refuse("a Python operator registration");
  }
  void throw_abstract_impl_not_imported_error(std::string opname, const char*, const char*) const override {
    refuse(("the abstract implementation of " + opname).c_str());
  }
  void python_dispatcher(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*) const override {
    refuse("the Python dispatcher");
  }
  bool is_contiguous(const c10::TensorImpl*, at::MemoryFormat) const override { refuse("is_contiguous"); }
  c10::SymBool sym_is_contiguous(const c10::TensorImpl*, at::MemoryFormat) const override {
    refuse("sym_is_contiguous");
  }
  bool is_strides_like(const c10::TensorImpl*, at::MemoryFormat) const override { refuse("is_strides_like"); }
  bool is_non_overlapping_and_dense(const c10::TensorImpl*) const override { refuse("is_non_overlapping_and_dense"); }
  c10::Device device(const c10::TensorImpl*) const override { refuse("device"); }
  int64_t dim(const c10::TensorImpl*) const override { refuse("dim"); }
  c10::IntArrayRef strides(const c10::TensorImpl*) const override { refuse("strides"); }
  c10::IntArrayRef sizes(const c10::TensorImpl*) const override { refuse("sizes"); }
  c10::SymIntArrayRef sym_sizes(const c10::TensorImpl*) const override { refuse("sym_sizes"); }
  c10::Layout layout(const c10::TensorImpl*) const override { refuse("layout"); }
  int64_t numel(const c10::TensorImpl*) const override { refuse("numel"); }
  c10::SymInt sym_numel(const c10::TensorImpl*) const override { refuse("sym_numel"); }
  c10::SymIntArrayRef sym_strides(const c10::TensorImpl*) const override { refuse("sym_strides"); }
  c10::SymInt sym_storage_offset(const c10::TensorImpl*) const override { refuse("sym_storage_offset"); }
  // GPU tracing hooks report to Python's CUDA sanitizer; nothing listens here.
  void trace_gpu_event_creation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_event_deletion(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_event_record(c10::DeviceType, uintptr_t, uintptr_t) const override {}
  void trace_gpu_event_wait(c10::DeviceType, uintptr_t, uintptr_t) const override {}
  void trace_gpu_memory_allocation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_memory_deallocation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_stream_creation(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_device_synchronization(c10::DeviceType) const override {}
  void trace_gpu_stream_synchronization(c10::DeviceType, uintptr_t) const override {}
  void trace_gpu_event_synchronization(c10::DeviceType, uintptr_t) const override {}
  void reset_backward_hooks(const c10::TensorImpl*) const override {}
};

// One placeholder mode for the process, never released: it owns no Python object, and
// the autograd engine's threads may still hold copies of the mode stack after a trace.
const std::shared_ptr<c10::impl::PyObject_TorchDispatchMode>& placeholder_mode() {
  static const auto* interpreter_vtable = new PlaceholderInterpreter();
  static auto* interpreter = new c10::impl::PyInterpreter(interpreter_vtable);
  static const auto* mode =
      new std::shared_ptr<c10::impl::PyObject_TorchDispatchMode>(
          std::make_shared<c10::impl::PyObject_TorchDispatchMode>(nullptr, interpreter));
  return *mode;
}

}  // namespace

SubclassLikeBackwardGuard::SubclassLikeBackwardGuard() {
  python_was_included_ = c10::impl::tls_is_dispatch_key_included(DispatchKey::Python);
  snapshot_was_included_ = c10::impl::tls_is_dispatch_key_included(DispatchKey::PythonTLSSnapshot);
  python_was_excluded_ = c10::impl::tls_is_dispatch_key_excluded(DispatchKey::Python);
  c10::impl::TorchDispatchModeTLS::push_non_infra_mode_onto_stack(placeholder_mode());
  // Pushing a mode routes every operator to the Python key; undo that, and make the
  // mode visible to dispatch_mode_enabled() (which ignores it while Python is excluded).
  c10::impl::tls_set_dispatch_key_included(DispatchKey::Python, python_was_included_);
  c10::impl::tls_set_dispatch_key_included(DispatchKey::PythonTLSSnapshot, snapshot_was_included_);
  c10::impl::tls_set_dispatch_key_excluded(DispatchKey::Python, false);
}

SubclassLikeBackwardGuard::~SubclassLikeBackwardGuard() {
  c10::impl::TorchDispatchModeTLS::pop_stack();
  c10::impl::tls_set_dispatch_key_excluded(DispatchKey::Python, python_was_excluded_);
  c10::impl::tls_set_dispatch_key_included(DispatchKey::Python, python_was_included_);
  c10::impl::tls_set_dispatch_key_included(DispatchKey::PythonTLSSnapshot, snapshot_was_included_);
}

}  // namespace passcheck::trace
