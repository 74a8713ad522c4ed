// The one place where differences between the two supported torch versions live: 2.15
// (the project's virtual environment, CI) and 2.11 (the GPU machine's Python torch).
// Everything else is written against the API both share; a difference found later goes
// here, named after what differs, with the versions it concerns.
#pragma once

#include <torch/version.h>

/// True when the LibTorch being compiled against is at least major.minor.
#define PASSCHECK_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !PASSCHECK_TORCH_AT_LEAST(2, 11)
#error "passcheck needs torch 2.11 or newer (the project's venv pins 2.15; the GPU machine has 2.11)"
#endif
