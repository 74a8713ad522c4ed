// The incremental verifier mutants (verifier_mutants.h): each drops some touched nodes
// from the change set before calling the real verify_changes.
#include "suites/mutants/verifier_mutants.h"

namespace passcheck::mutants {

namespace {

// verify_changes with the touched nodes for which `skip` holds left out.
VerifierMutant skipping(std::string name, std::string description,
                        std::function<bool(const check::ChangeSet&, size_t)> skip) {
  return VerifierMutant{std::move(name), std::move(description),
                        [skip](const ir::Graph& g, const check::ChangeSet& changes) {
                          check::ChangeSet kept;
                          kept.graph_changes = changes.graph_changes;
                          for (size_t i = 0; i < changes.nodes.size(); ++i)
                            if (!skip(changes, i)) kept.nodes.push_back(changes.nodes[i]);
                          return check::verify_changes(g, kept);
                        }};
}

// True when every bit of what happened to node i is in `bits`.
bool only(const check::ChangeSet& c, size_t i, uint8_t bits) { return (c.nodes[i]->touched() & ~bits) == 0; }

}  // namespace

const std::vector<VerifierMutant>& verifier_mutants() {
  static const std::vector<VerifierMutant> all = {
      skipping("verifier-skips-last-touched", "the last node the pass touched is not re-verified",
               [](const check::ChangeSet& c, size_t i) { return i + 1 == c.nodes.size(); }),
      skipping("verifier-ignores-moves", "a node that only moved is not re-verified (its operands and users)",
               [](const check::ChangeSet& c, size_t i) { return only(c, i, ir::kTouchMoved); }),
      skipping("verifier-ignores-use-lists", "a node whose outputs only gained or lost uses is not re-verified",
               [](const check::ChangeSet& c, size_t i) { return only(c, i, ir::kTouchUses); }),
      skipping("verifier-ignores-arguments", "a node whose arguments changed in place is not re-verified",
               [](const check::ChangeSet& c, size_t i) { return only(c, i, ir::kTouchArgs | ir::kTouchUses); }),
  };
  return all;
}

}  // namespace passcheck::mutants
