// The built-in pass registry: PassRegistry::global() and register_builtin_passes().
// They live here rather than in framework/check so that the framework does not depend
// on the passes; anything that uses the global registry links passcheck_passes.
#include "passes/registry.h"

#include "framework/check/pass.h"
#include "passes/ac/ac_passes.h"
#include "passes/chunk/chunk_passes.h"
#include "passes/cleanup/cleanup_passes.h"
#include "passes/cudagraph/cudagraph_passes.h"
#include "passes/collectives/collective_passes.h"
#include "passes/fsdp/fsdp_passes.h"
#include "passes/placement/placement_passes.h"
#include "passes/schedule/schedule_passes.h"
#include "passes/partition/partition_passes.h"
#include "passes/subgraph/subgraph_passes.h"

namespace passcheck::check {

namespace {

// The families in registration order; the name is the family's directory under passes/.
struct FamilyRegistration {
  const char* name;
  void (*add)(PassRegistry&);
};
constexpr FamilyRegistration kFamilies[] = {
    {"cleanup", passes::register_cleanup_passes},       {"ac", passes::register_ac_passes},
    {"chunk", passes::register_chunk_passes},           {"collectives", passes::register_collective_passes},
    {"fsdp", passes::register_fsdp_passes},             {"placement", passes::register_placement_passes},
    {"schedule", passes::register_schedule_passes},     {"partition", passes::register_partition_passes},
    {"cudagraph", passes::register_cudagraph_passes},     {"subgraph", passes::register_subgraph_passes},
};

}  // namespace

void register_builtin_passes(PassRegistry& registry) {
  for (const FamilyRegistration& family : kFamilies) family.add(registry);
}

std::vector<PassFamily> builtin_pass_families() {
  std::vector<PassFamily> families;
  for (const FamilyRegistration& family : kFamilies) {
    PassRegistry alone;
    family.add(alone);
    PassFamily f{family.name, {}};
    for (const RegisteredPass* p : alone.list()) f.passes.push_back(p->info.name);
    families.push_back(std::move(f));
  }
  return families;
}

const PassRegistry& PassRegistry::global() {
  // Function-local static: built on first use, after every static initializer, and
  // thread-safe to initialize; const, so nothing changes it afterwards (the house check
  // of ci/check_no_mutable_globals.py exempts it by name for that reason).
  static const PassRegistry registry = [] {
    PassRegistry r;
    register_builtin_passes(r);
    return r;
  }();
  return registry;
}

}  // namespace passcheck::check
