// Registry entries of the partitioner family (docs/passes.md lists each pass's rules and
// guards).
#include "passes/partition/partition_passes.h"

namespace passcheck::passes {

void register_partition_passes(check::PassRegistry& registry) {
  registry.add(classify_nodes_pass_info(), classify_nodes_pass);
  registry.add_module_pass(partition_min_cut_pass_info(), partition_min_cut_pass);
  registry.add_module_pass(tag_ap_must_save_pass_info(), tag_ap_must_save_pass);
  registry.add_module_pass(partition_save_all_pass_info(), partition_save_all_pass);
}

}  // namespace passcheck::passes
