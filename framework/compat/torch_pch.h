// Precompiled header for targets that use LibTorch: the heavy, stable headers only.
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>
