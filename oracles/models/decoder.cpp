#include "oracles/models/decoder.h"

#include "framework/trace/module_scope.h"

namespace passcheck::models {

at::Tensor pre_norm_block_forward(const std::string& fqn, const at::Tensor& x, RMSNormImpl& attention_norm,
                                  SubmoduleForward attention, RMSNormImpl& ffn_norm, const std::string& ffn_name,
                                  SubmoduleForward ffn) {
  using trace::call_module;
  at::Tensor normed =
      call_module(fqn + ".attention_norm", x, [&attention_norm](const at::Tensor& in) { return attention_norm.forward(in); });
  const std::string attention_fqn = fqn + ".attention";
  at::Tensor h = x + call_module(attention_fqn, normed, [attention = std::move(attention), attention_fqn](
                                                            const at::Tensor& in) { return attention(attention_fqn, in); });
  at::Tensor normed2 = call_module(fqn + ".ffn_norm", h, [&ffn_norm](const at::Tensor& in) { return ffn_norm.forward(in); });
  const std::string ffn_fqn = fqn + "." + ffn_name;
  return h + call_module(ffn_fqn, normed2, [ffn = std::move(ffn), ffn_fqn](const at::Tensor& in) { return ffn(ffn_fqn, in); });
}

at::Tensor moe_or_dense_block_forward(const std::string& fqn, const at::Tensor& x, RMSNormImpl& attention_norm,
                                      SubmoduleForward attention, RMSNormImpl& ffn_norm, MoEImpl* moe,
                                      SwiGLUFeedForwardImpl* feed_forward) {
  if (moe)
    return pre_norm_block_forward(fqn, x, attention_norm, std::move(attention), ffn_norm, "moe",
                                  [moe](const std::string& name, const at::Tensor& in) { return moe->forward(name, in); });
  return pre_norm_block_forward(
      fqn, x, attention_norm, std::move(attention), ffn_norm, "feed_forward",
      [feed_forward](const std::string& name, const at::Tensor& in) { return feed_forward->forward(name, in); });
}

}  // namespace passcheck::models
