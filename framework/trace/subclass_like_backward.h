// SubclassLikeBackwardGuard: makes LibTorch's backward formulas take the branch that
// PyTorch's make_fx records (docs/tracer-conformance.md, "Backward formulas").
#pragma once

#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <memory>

namespace passcheck::trace {

/// While alive, at::areAnyTensorSubclassLike() is true on this thread (and on the
/// autograd engine's threads running its backward), as it is under make_fx's dispatch
/// mode: formulas record functional ops instead of in-place writes into fresh
/// temporaries (index_add, not index_add_) and make no `.item()` decisions on data.
///
/// LibTorch answers "is a dispatch mode active?" with a non-empty mode stack while the
/// Python key is not excluded. The guard pushes a placeholder mode that owns no Python
/// object and keeps the Python key out of the included set, so no operator is ever
/// routed to it. The one place LibTorch consults the mode itself is a tensor detach
/// (saving a tensor for backward, .detach()); the placeholder's interpreter performs the
/// plain C++ detach there, and refuses every Python-only request with an error.
class SubclassLikeBackwardGuard {
 public:
  SubclassLikeBackwardGuard();
  ~SubclassLikeBackwardGuard();
  SubclassLikeBackwardGuard(const SubclassLikeBackwardGuard&) = delete;
  SubclassLikeBackwardGuard& operator=(const SubclassLikeBackwardGuard&) = delete;

 private:
  bool python_was_included_ = false;
  bool snapshot_was_included_ = false;
  bool python_was_excluded_ = false;
};

}  // namespace passcheck::trace
