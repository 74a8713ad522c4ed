// Meta kernels (shapes, strides and dtypes only) for ATen operators whose Meta kernel
// PyTorch registers from Python (torch/_meta_registrations.py), which a C++ process never
// loads: the operators torchtitan-style models reach through embeddings,
// scaled_dot_product_attention and grouped experts. Without them a meta trace would run CPU stand-ins of the full
// production shape (a 128-head, 8192-token attention's scores are 34 GB).
//
// The attention kernels' result layouts are LibTorch's own: each kernel runs on a small
// CPU proxy of its arguments (the same dtypes, head dims and stride orders; at most 2
// batches and 3 positions), and the full-size results take the proxy results' stride
// orders. So a meta trace records the graph a CPU trace of the same program records.
#include <ATen/ATen.h>
#include <c10/core/WrapDimMinimal.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace passcheck::exec {
namespace {

// Dims of `t` from the largest stride to the smallest (ties: the earlier dim first).
std::vector<int64_t> dim_order(const at::Tensor& t) {
  std::vector<int64_t> order(static_cast<size_t>(t.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  return order;
}

// Contiguous strides for `sizes` laid out in `order` (outermost first).
std::vector<int64_t> strides_in_order(const std::vector<int64_t>& sizes, const std::vector<int64_t>& order) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t next = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[static_cast<size_t>(*it)] = next;
    next *= std::max<int64_t>(sizes[static_cast<size_t>(*it)], 1);
  }
  return strides;
}

// A CPU tensor of `sizes` with `like`'s stride order (zeros: values never matter here).
at::Tensor proxy(const at::Tensor& like, const std::vector<int64_t>& sizes) {
  return at::zeros({1}, like.options().device(at::kCPU))
      .expand({std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>())})
      .contiguous()
      .as_strided(sizes, strides_in_order(sizes, dim_order(like)));
}

// [B, H, L, E] -> at most 2 batches and 3 positions, every head and feature kept (the
// kernel choice depends on head counts and head dims).
at::Tensor attention_proxy(const at::Tensor& t) {
  std::vector<int64_t> sizes = t.sizes().vec();
  if (sizes.size() == 4) {
    sizes[0] = std::min<int64_t>(sizes[0], 2);
    sizes[2] = std::min<int64_t>(sizes[2], 3);
  }
  return proxy(t, sizes);
}

// A mask broadcast against [B, H, L, S]: its dims shrink as the scores' dims do.
std::optional<at::Tensor> mask_proxy(const std::optional<at::Tensor>& mask, int64_t b, int64_t l, int64_t s) {
  if (!mask || !mask->defined()) return mask;
  std::vector<int64_t> sizes = mask->sizes().vec();
  const size_t n = sizes.size();
  if (n >= 1 && sizes[n - 1] > 1) sizes[n - 1] = s;
  if (n >= 2 && sizes[n - 2] > 1) sizes[n - 2] = l;
  if (n >= 4 && sizes[0] > 1) sizes[0] = b;
  return proxy(*mask, sizes);
}

// A meta tensor of `sizes` in the stride order LibTorch gave `computed`.
at::Tensor meta_like(const at::Tensor& computed, const std::vector<int64_t>& sizes) {
  return at::empty_strided(sizes, strides_in_order(sizes, dim_order(computed)),
                           computed.options().device(c10::DeviceType::Meta));
}

int64_t fused_sdp_choice_meta(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const std::optional<at::Tensor>& mask, double dropout, bool causal,
                              std::optional<double> scale, bool enable_gqa) {
  at::Tensor pq = attention_proxy(q);
  return at::_fused_sdp_choice(pq, attention_proxy(k), attention_proxy(v),
                               mask_proxy(mask, pq.size(0), pq.size(2), std::min<int64_t>(k.size(2), 3)), dropout,
                               causal, scale, enable_gqa);
}

std::tuple<at::Tensor, at::Tensor> flash_cpu_meta(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                  double dropout, bool causal, const std::optional<at::Tensor>& mask,
                                                  std::optional<double> scale) {
  at::Tensor pq = attention_proxy(q);
  auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(
      pq, attention_proxy(k), attention_proxy(v), dropout, causal,
      mask_proxy(mask, pq.size(0), pq.size(2), std::min<int64_t>(k.size(2), 3)), scale);
  std::vector<int64_t> out_sizes = q.sizes().vec();
  out_sizes.back() = v.size(-1);
  std::vector<int64_t> lse_sizes(q.sizes().begin(), q.sizes().end() - 1);
  return {meta_like(out, out_sizes), meta_like(lse, lse_sizes)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_cpu_backward_meta(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
    const at::Tensor& lse, double dropout, bool causal, const std::optional<at::Tensor>& mask,
    std::optional<double> scale) {
  at::Tensor pq = attention_proxy(q);
  std::vector<int64_t> lse_sizes = {pq.size(0), pq.size(1), pq.size(2)};
  auto [gq, gk, gv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
      attention_proxy(grad_out), pq, attention_proxy(k), attention_proxy(v), attention_proxy(out),
      proxy(lse, lse_sizes), dropout, causal, mask_proxy(mask, pq.size(0), pq.size(2), std::min<int64_t>(k.size(2), 3)),
      scale);
  return {meta_like(gq, q.sizes().vec()), meta_like(gk, k.sizes().vec()), meta_like(gv, v.sizes().vec())};
}

// Softmax that gives 0 (not NaN) on rows masked entirely; LibTorch's CPU kernel returns
// a contiguous result.
at::Tensor safe_softmax_meta(const at::Tensor& self, int64_t, std::optional<at::ScalarType> dtype) {
  return at::empty(self.sizes(), self.options().dtype(dtype.value_or(self.scalar_type())));
}

// aten::_grouped_mm (passcheck::grouped_mm is framework/exec/grouped_mm.cpp's): the
// result's shape follows the operand ranks. 2D x 3D -> [m, n]; 3D x 2D -> [m, n];
// 2D x 2D (groups along k) -> [g, m, n]; 3D x 3D -> [g, m, n].
at::Tensor aten_grouped_mm_meta(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& offs,
                           const std::optional<at::Tensor>&, std::optional<at::ScalarType> out_dtype) {
  TORCH_CHECK((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3),
              "_grouped_mm: operands must be 2-D or 3-D, got ", a.dim(), "-D and ", b.dim(), "-D");
  TORCH_CHECK((a.dim() == 3 && b.dim() == 3) || (offs.has_value() && offs->dim() == 1),
              "_grouped_mm: a 2-D operand needs 1-D offsets");
  std::vector<int64_t> sizes;
  if (a.dim() == 2 && b.dim() == 3) sizes = {a.size(0), b.size(2)};
  else if (a.dim() == 3 && b.dim() == 2) sizes = {a.size(1), b.size(1)};
  else if (a.dim() == 2 && b.dim() == 2) sizes = {offs->size(0), a.size(0), b.size(1)};
  else sizes = {a.size(0), a.size(1), b.size(2)};
  return at::empty(sizes, a.options().dtype(out_dtype.value_or(a.scalar_type())));
}

// The two operators of every language model's embedding: its lookup reads a [vocab, dim]
// weight and its backward writes one (8 GiB each for Llama-3 405B as CPU stand-ins).
// Both results are contiguous, as the CPU kernels make them.
at::Tensor index_select_meta(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  std::vector<int64_t> sizes = self.sizes().vec();
  if (!sizes.empty()) sizes[c10::maybe_wrap_dim(dim, self.dim())] = index.numel();
  return at::empty(sizes, self.options());
}

at::Tensor embedding_dense_backward_meta(const at::Tensor& grad, const at::Tensor&, c10::SymInt num_weights,
                                         c10::SymInt, bool) {
  return at::empty({num_weights.expect_int(), grad.size(-1)}, grad.options());
}

}  // namespace

void ensure_meta_kernels_registered() {
  // Referencing this function keeps this object file (and its TORCH_LIBRARY_IMPL block)
  // in every binary that links the executor.
}

}  // namespace passcheck::exec

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_fused_sdp_choice", &passcheck::exec::fused_sdp_choice_meta);
  m.impl("_scaled_dot_product_flash_attention_for_cpu", &passcheck::exec::flash_cpu_meta);
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward", &passcheck::exec::flash_cpu_backward_meta);
  m.impl("_safe_softmax", &passcheck::exec::safe_softmax_meta);
  m.impl("_grouped_mm", &passcheck::exec::aten_grouped_mm_meta);
  m.impl("index_select", &passcheck::exec::index_select_meta);
  m.impl("embedding_dense_backward", &passcheck::exec::embedding_dense_backward_meta);
}
