// The built-in pass registry: PassRegistry::global() and register_builtin_passes().
// They live here rather than in framework/check so that the framework does not depend
// on the passes; anything that uses the global registry links passcheck_passes.
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

namespace passcheck::check {

void register_builtin_passes(PassRegistry& registry) {
  passes::register_cleanup_passes(registry);
  passes::register_ac_passes(registry);
  passes::register_chunk_passes(registry);
  passes::register_collective_passes(registry);
  passes::register_fsdp_passes(registry);
  passes::register_placement_passes(registry);
  passes::register_schedule_passes(registry);
  passes::register_partition_passes(registry);
  passes::register_cudagraph_passes(registry);
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
