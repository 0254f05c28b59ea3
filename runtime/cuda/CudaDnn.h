// The cuDNN side of conv2d and its gradients that needs no device: descriptors, checked
// against the plan (tests/unit/cuda runs it on machines without a GPU).
#pragma once

#include "runtime/Status.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/ConvSupport.h"

namespace plait::rt {

/// Builds the cuDNN descriptors of the convolution `shape` in `dtype` (what conv2d,
/// conv2d_grad_input and conv2d_grad_weight give cuDNN) and checks that cuDNN computes the
/// plan's output shape; errors for what cuDNN cannot take (asymmetric padding, ceil_mode,
/// f16).
Status describeConvForCudnn(const cpu::ConvShape &shape, DType dtype, bool bias);

} // namespace plait::rt
