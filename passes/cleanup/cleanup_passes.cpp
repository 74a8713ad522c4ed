// Registration of the cleanup family: one line per pass, in the order the spec lists
// them. The registry sorts by name, so the order here is only for readers.
#include "passes/cleanup/cleanup_passes.h"

namespace passcheck::passes {

void register_cleanup_passes(check::PassRegistry& registry) {
  registry.add(dce_pass_info(), dce_pass);
  registry.add(remove_detach_pass_info(), remove_detach_pass);
  registry.add(remove_identity_view_pass_info(), remove_identity_view_pass);
  registry.add(remove_b2b_transpose_pass_info(), remove_b2b_transpose_pass);
  registry.add(remove_identity_slice_pass_info(), remove_identity_slice_pass);
  registry.add(normalize_views_pass_info(), normalize_views_pass);
  registry.add(canonicalize_pass_info(), canonicalize_pass);
  registry.add(cse_pass_info(), cse_pass);
}

}  // namespace passcheck::passes
