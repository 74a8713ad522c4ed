// Precompiled header for targets that use LibTorch: the heavy, stable headers only. Not
// torch/torch.h: its data loaders, optimizers, serialization and JIT frontend would make
// every translation unit load a third more PCH than the few that use them parse.
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/utils.h>
