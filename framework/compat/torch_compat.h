// The one place where LibTorch version differences live: Debian's 1.13 on CPU builds,
// the GPU machine's 2.x for CUDA builds. Everything else calls these helpers.
#pragma once

#include <ATen/core/jit_type.h>
#include <c10/core/SafePyObject.h>
#include <c10/core/Storage.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <memory>
#include <string>

#define PASSCHECK_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace passcheck::compat {

/// Message of a c10::Error without the C++ backtrace LibTorch appends.
inline std::string error_message(const c10::Error& e) { return e.what_without_backtrace(); }

/// Size in bytes of a storage (1.13 returns size_t, 2.x has SymInt-aware variants).
inline int64_t storage_nbytes(const c10::Storage& storage) { return static_cast<int64_t>(storage.nbytes()); }

/// True for schema types that carry a plain or symbolic integer (int, SymInt).
inline bool is_int_type(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::IntType || t->kind() == c10::TypeKind::SymIntType;
}

/// True for the schema types a dtype, layout or memory format is declared with.
inline c10::TypeKind real_kind(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  return t->kind();
}

/// While alive, LibTorch's backward formulas take their "tensor-subclass-like" branch
/// (at::areAnyTensorSubclassLike is true), the branch PyTorch's make_fx records: functional
/// ops instead of in-place writes into fresh temporaries (index_add instead of index_add_),
/// and no `.item()` decisions on data (the backward of a full max()). Meta tensors always
/// take that branch, so CPU and meta traces agree. The branch is chosen by asking whether
/// a dispatch mode is active: the guard sets a placeholder mode that owns no Python
/// object (it is leaked, never released, so it never reaches an interpreter), keeps the
/// Python dispatch key out of the included set and in the excluded set (LibTorch asks a
/// mode's interpreter to detach tensors unless Python is excluded), so nothing is ever
/// routed to it. The autograd engine carries both sets into the backward.
/// On LibTorch 2.x the mode stack has another type and dispatch_mode_enabled() also
/// looks at the excluded set; until that path is verified on a CUDA build the guard does
/// nothing there (docs/tracer-conformance.md).
class SubclassLikeBackwardGuard {
 public:
  SubclassLikeBackwardGuard() {
#if !PASSCHECK_TORCH_AT_LEAST(2, 0)
    static auto* placeholder = new std::shared_ptr<c10::SafePyObject>(std::make_shared<c10::SafePyObject>(nullptr, nullptr));
    python_was_included_ = c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python);
    snapshot_was_included_ = c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::PythonTLSSnapshot);
    python_was_excluded_ = c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::Python);
    c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::Python, true);
    previous_ = c10::impl::TorchDispatchModeTLS::get_mode();
    c10::impl::TorchDispatchModeTLS::set_mode(*placeholder);
    c10::impl::tls_set_dispatch_key_included(c10::DispatchKey::Python, python_was_included_);
    c10::impl::tls_set_dispatch_key_included(c10::DispatchKey::PythonTLSSnapshot, snapshot_was_included_);
    active_ = true;
#endif
  }
  ~SubclassLikeBackwardGuard() {
#if !PASSCHECK_TORCH_AT_LEAST(2, 0)
    if (!active_) return;
    if (previous_) c10::impl::TorchDispatchModeTLS::set_mode(previous_);
    else c10::impl::TorchDispatchModeTLS::reset_mode();
    c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::Python, python_was_excluded_);
    c10::impl::tls_set_dispatch_key_included(c10::DispatchKey::Python, python_was_included_);
    c10::impl::tls_set_dispatch_key_included(c10::DispatchKey::PythonTLSSnapshot, snapshot_was_included_);
#endif
  }
  SubclassLikeBackwardGuard(const SubclassLikeBackwardGuard&) = delete;
  SubclassLikeBackwardGuard& operator=(const SubclassLikeBackwardGuard&) = delete;
  /// False where the LibTorch build cannot force the branch (see the class comment).
  static constexpr bool supported() { return !PASSCHECK_TORCH_AT_LEAST(2, 0); }

 private:
  bool active_ = false;
  std::shared_ptr<c10::SafePyObject> previous_;
  bool python_was_included_ = false;
  bool snapshot_was_included_ = false;
  bool python_was_excluded_ = false;
};

}  // namespace passcheck::compat
