// Anchor translation unit for the LibTorch precompiled header.
#include "framework/compat/torch_pch.h"
