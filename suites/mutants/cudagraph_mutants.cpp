// The cudagraph mutants (see cudagraph_mutants.h): the real pass with its static-input
// guard disabled, or asking the wrapper for one of the injected wrapper bugs it declares.
#include "suites/mutants/cudagraph_mutants.h"

#include "framework/exec/captured_graph.h"

namespace passcheck::mutants {

std::vector<MutantInfo> cudagraph_mutants() {
  namespace bugs = exec::injected_wrapper_bugs;
  std::vector<MutantInfo> out;
  out.push_back(MutantInfo{"mutant-cudagraph-static-arguments", "cudagraph", 11,
                           "arguments and outputs of eager parts are marked static, so a replay reads the buffers of "
                           "the capture call instead of copying the new values in",
                           disabled_guard("input-changes-address")});
  out.push_back(MutantInfo{"mutant-cudagraph-skips-a-copy", "cudagraph", 11,
                           "the wrapper never copies its first non-static input into the kept buffer, so every "
                           "replay reads that input's value from the capture call",
                           injected_bug(bugs::kSkipNonStaticCopy)});
  out.push_back(MutantInfo{"mutant-cudagraph-unchecked-static-addresses", "cudagraph", 11,
                           "the wrapper skips its static-address check, so a static input re-allocated after capture "
                           "is replayed silently from its old storage",
                           injected_bug(bugs::kUncheckedStaticAddresses)});
  out.push_back(MutantInfo{"mutant-cudagraph-self-compared-address-check", "cudagraph", 15,
                           "upstream's static-address check: it compares the kept buffers' addresses with the "
                           "addresses recorded from those same buffers, never fires, and a moved static input "
                           "replays on stale memory",
                           injected_bug(bugs::kSelfComparedAddressCheck)});
  check::InjectedFaults per_call_static = disabled_guard("input-changes-address");
  per_call_static.injected_bugs.insert(bugs::kUncheckedStaticAddresses);
  out.push_back(MutantInfo{"mutant-cudagraph-static-per-call-values", "cudagraph", 11,
                           "values each call produces anew (arguments and outputs of eager parts) are marked static "
                           "and no address check guards them: a replay reads the capture call's buffer, which on a "
                           "GPU may have been handed to anything (the replay model poisons it)",
                           per_call_static});
  out.push_back(MutantInfo{"mutant-cudagraph-captures-host-scalars", "cudagraph", 0,
                           "nodes that read tensor data into a host scalar (item) and their consumers are captured "
                           "instead of left eager, so the capture fails (a capturing CUDA stream refuses the host "
                           "read)",
                           disabled_guard("data-dependent-scalar")});
  out.push_back(MutantInfo{"mutant-cudagraph-captures-grouped-mm-fallback", "cudagraph", 0,
                           "aten::_grouped_mm is captured whatever its dtype, though its non-bfloat16 fallback reads "
                           "the offsets on the host, which a capturing stream refuses",
                           injected_bug("grouped-mm-always-capturable")});
  out.push_back(MutantInfo{"mutant-cudagraph-captures-dynamic-shape-consumers", "cudagraph", 0,
                           "a node reading the output of nonzero is captured, so a later call with another count "
                           "of nonzeros meets a captured graph that replays only the shape it recorded",
                           injected_bug("captures-dynamic-shape-consumers")});
  return out;
}

}  // namespace passcheck::mutants
