// The one place where LibTorch version differences live: Debian's 1.13 on CPU builds,
// the GPU machine's 2.x for CUDA builds. Everything else calls these helpers.
#pragma once

#include <ATen/core/jit_type.h>
#include <c10/core/Storage.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

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

}  // namespace passcheck::compat
