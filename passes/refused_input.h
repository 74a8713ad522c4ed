// The error a pass throws when one of its guards refuses the whole input (an RNG op
// tagged recomputable, a live-in of odd size, a false guard at the hint): the message
// says what and where, and the decisions the pass counted up to the refusal travel with
// it, so coverage campaigns count the guard that refused although no PassResult is
// returned.
#pragma once

#include "framework/check/pass.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace passcheck::passes {

/// A pass refused its input; partial() holds the rules fired and guards refused so far.
class RefusedInput : public std::runtime_error {
 public:
  RefusedInput(const std::string& message, check::PassResult partial)
      : std::runtime_error(message), partial_(std::move(partial)) {}
  const check::PassResult& partial() const { return partial_; }

 private:
  check::PassResult partial_;
};

}  // namespace passcheck::passes
