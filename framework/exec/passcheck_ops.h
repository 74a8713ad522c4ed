// Operators passcheck itself defines (namespace "passcheck"), registered with the
// dispatcher so graphs can use them like any ATen operator:
//   passcheck::rng_state(Device device) -> Tensor
//       a copy of the device's default generator state (no randomness consumed)
//   passcheck::swap_rng_state(Tensor state, Device device) -> Tensor
//       installs `state` as the generator state and returns the state it replaced
// Rematerialization's RNG-replay mode brackets a recomputed random op with them, so the
// recomputation draws exactly the numbers the forward drew.
#pragma once

namespace passcheck::exec {

/// Makes sure the passcheck operators are registered (idempotent; the executor calls it).
void ensure_passcheck_ops_registered();

}  // namespace passcheck::exec
