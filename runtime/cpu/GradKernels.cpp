// Gradient kernels of the training ops (ir/PlaitTrainOps.td): gather_grad, the conv2d and
// pooling adjoints, and the loss gradients. Each is the exact adjoint of its forward kernel
// in this folder (same window geometry, same argmax, same divisor, same ignore/weight rules).
//
// Except where a comment says otherwise, outputs must not share bytes with inputs (the memory
// plan guarantees it: an op's results never overlap its operands).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Window.h"

namespace plait::rt::cpu {
namespace {

/// i64/i32 element `i` of an index tensor as int64.
int64_t indexAt(const TensorView &t, int64_t i) {
  return t.dtype == DType::I64 ? t.as<int64_t>()[i] : (int64_t)t.as<int32_t>()[i];
}

Status checkIndexDtype(std::string_view kernel, std::string_view what, const TensorView &t) {
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    return Status::errorf("{}: {} must be i64 or i32, got {}", kernel, what, dtypeName(t.dtype));
  return Status();
}

//===----------------------------------------------------------------------===//
// gather_grad
//===----------------------------------------------------------------------===//

/// result = 0; result[o, indices[q], :] += grad[o, q, :] with o over result[:axis] and ':'
/// over result[axis+1:]. Repeated indices accumulate.
Status gatherGradKernel(const KernelCall &call) {
  constexpr std::string_view kName = "gather_grad";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  const TensorView &grad = call.inputs[0], &indices = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, grad, out));
  PLAIT_RETURN_IF_ERROR(checkIndexDtype(kName, "indices", indices));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis(kName, call.attrs.getInt("axis", 0), out.rank(), axis));
  std::vector<int64_t> expected(out.shape.begin(), out.shape.begin() + axis);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), out.shape.begin() + axis + 1, out.shape.end());
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "grad", grad.shape, expected));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &gatherGradKernel);

  // Validate every index before writing anything, so an error leaves no half-done result.
  int64_t size = out.shape[axis], count = indices.numel();
  std::vector<int64_t> rows(count);
  for (int64_t q = 0; q < count; ++q) {
    int64_t v = indexAt(indices, q);
    int64_t r = v < 0 ? v + size : v;
    if (r < 0 || r >= size)
      return Status::errorf("{}: index {} is out of range for axis {} of size {}", kName, v,
                            axis, size);
    rows[q] = r;
  }
  int64_t outer = product(out.shape, 0, axis);
  int64_t inner = product(out.shape, axis + 1, out.shape.size());
  return dispatchF32F64(kName, out.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *src = grad.as<T>();
    T *dst = out.as<T>();
    std::fill(dst, dst + out.numel(), T(0));
    for (int64_t o = 0; o < outer; ++o) {
      T *block = dst + o * size * inner;
      for (int64_t q = 0; q < count; ++q, src += inner) {
        T *row = block + rows[q] * inner;
        for (int64_t k = 0; k < inner; ++k)
          row[k] += src[k];
      }
    }
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// conv2d_grad_input, conv2d_grad_weight
//===----------------------------------------------------------------------===//

/// Geometry of the forward conv2d whose adjoint is computed: x [N, C, H, W],
/// w [F, C/group, kH, kW], y [N, F, OH, OW].
struct ConvShape {
  int64_t batch, channels, height, width;
  int64_t filters, groupChannels, group, outHeight, outWidth;
  Window2d window;

  int64_t inPlane() const { return height * width; }
  int64_t outPlane() const { return outHeight * outWidth; }
  int64_t patch() const { return groupChannels * window.kernel[0] * window.kernel[1]; }
  /// A 1x1 unpadded stride-1 convolution: x itself is the column matrix (as in the forward).
  bool pointwise() const {
    const Window2d &w = window;
    return w.kernel[0] == 1 && w.kernel[1] == 1 && w.stride[0] == 1 && w.stride[1] == 1 &&
           w.padBegin[0] == 0 && w.padBegin[1] == 0 && w.padEnd[0] == 0 && w.padEnd[1] == 0;
  }
};

/// Checks the shapes of a conv2d adjoint the way the forward conv2d checks its own:
/// `y` (the gradient) must be what conv2d(x, w) produces.
Status planConvGrad(const KernelCall &call, std::string_view kernel, const TensorView &x,
                    const TensorView &w, const TensorView &y, ConvShape &s) {
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, w));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, y));
  if (x.rank() != 4 || w.rank() != 4)
    return Status::errorf("{}: x and w must be 4-D, got {} and {}", kernel, shapeString(x.shape),
                          shapeString(w.shape));
  s.batch = x.shape[0];
  s.channels = x.shape[1];
  s.height = x.shape[2];
  s.width = x.shape[3];
  s.filters = w.shape[0];
  s.groupChannels = w.shape[1];
  s.group = call.attrs.getInt("group", 1);
  if (s.group < 1 || s.channels % s.group || s.filters % s.group ||
      s.channels / s.group != s.groupChannels)
    return Status::errorf("{}: group {} does not fit x {} and w {}", kernel, s.group,
                          shapeString(x.shape), shapeString(w.shape));
  s.window.kernel[0] = w.shape[2];
  s.window.kernel[1] = w.shape[3];
  PLAIT_RETURN_IF_ERROR(parseWindow(kernel, call.attrs, true, s.window));
  s.window.ceilMode = false;
  s.outHeight = s.window.outputSize(0, s.height);
  s.outWidth = s.window.outputSize(1, s.width);
  return checkShape(kernel, "grad", y.shape, {s.batch, s.filters, s.outHeight, s.outWidth});
}

/// The forward kernel's im2col: col[(c * kH + i) * kW + j][oh * OW + ow] =
/// x[c][oh*sH - pT + i*dH][ow*sW - pL + j*dW], zero in the padding.
template <typename T> void im2col(const T *x, const ConvShape &s, T *col) {
  const Window2d &win = s.window;
  for (int64_t c = 0; c < s.groupChannels; ++c)
    for (int64_t i = 0; i < win.kernel[0]; ++i)
      for (int64_t j = 0; j < win.kernel[1]; ++j) {
        T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * s.outPlane();
        const T *plane = x + c * s.inPlane();
        for (int64_t oh = 0; oh < s.outHeight; ++oh) {
          T *dst = row + oh * s.outWidth;
          int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
          if (ih < 0 || ih >= s.height) {
            std::fill(dst, dst + s.outWidth, T(0));
            continue;
          }
          const T *src = plane + ih * s.width;
          int64_t iw = j * win.dilation[1] - win.padBegin[1];
          for (int64_t ow = 0; ow < s.outWidth; ++ow, iw += win.stride[1])
            dst[ow] = (iw >= 0 && iw < s.width) ? src[iw] : T(0);
        }
      }
}

/// The adjoint of im2col: zeroes the group's input planes `x`, then adds every column entry
/// back to the input position it was read from (padding entries are dropped).
template <typename T> void col2im(const T *col, const ConvShape &s, T *x) {
  const Window2d &win = s.window;
  std::fill(x, x + s.groupChannels * s.inPlane(), T(0));
  for (int64_t c = 0; c < s.groupChannels; ++c)
    for (int64_t i = 0; i < win.kernel[0]; ++i)
      for (int64_t j = 0; j < win.kernel[1]; ++j) {
        const T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * s.outPlane();
        T *plane = x + c * s.inPlane();
        for (int64_t oh = 0; oh < s.outHeight; ++oh) {
          int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
          if (ih < 0 || ih >= s.height)
            continue;
          const T *src = row + oh * s.outWidth;
          T *dst = plane + ih * s.width;
          int64_t iw = j * win.dilation[1] - win.padBegin[1];
          for (int64_t ow = 0; ow < s.outWidth; ++ow, iw += win.stride[1])
            if (iw >= 0 && iw < s.width)
              dst[iw] += src[ow];
        }
      }
}

/// dx[n, group g] = col2im(W_g^T dy[n, g]) with W_g the group's [F/group, patch] filters.
template <typename T> Status convGradInput(const KernelCall &call, const ConvShape &s) {
  const T *dy = call.inputs[0].as<T>(), *w = call.inputs[1].as<T>();
  T *dx = call.outputs[0].as<T>();
  int64_t filtersPerGroup = s.filters / s.group, patch = s.patch();
  int64_t inPlane = s.inPlane(), outPlane = s.outPlane();
  bool pointwise = s.pointwise();
  std::vector<T> col(pointwise ? 0 : patch * outPlane);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      T *image = dx + (n * s.channels + g * s.groupChannels) * inPlane;
      T *columns = pointwise ? image : col.data();
      PLAIT_RETURN_IF_ERROR(gemmRowMajor<T>(
          true, false, patch, outPlane, filtersPerGroup, 1.0, w + g * filtersPerGroup * patch,
          patch, dy + (n * s.filters + g * filtersPerGroup) * outPlane, outPlane, 0.0, columns,
          outPlane));
      if (!pointwise)
        col2im(col.data(), s, image);
    }
  return Status();
}

/// dw_g = sum over n of dy[n, g] im2col(x[n, g])^T.
template <typename T> Status convGradWeight(const KernelCall &call, const ConvShape &s) {
  const T *x = call.inputs[0].as<T>(), *dy = call.inputs[1].as<T>();
  T *dw = call.outputs[0].as<T>();
  int64_t filtersPerGroup = s.filters / s.group, patch = s.patch();
  int64_t inPlane = s.inPlane(), outPlane = s.outPlane();
  if (s.batch == 0) {
    std::fill(dw, dw + s.filters * patch, T(0));
    return Status();
  }
  bool pointwise = s.pointwise();
  std::vector<T> col(pointwise ? 0 : patch * outPlane);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      const T *image = x + (n * s.channels + g * s.groupChannels) * inPlane;
      const T *columns = image;
      if (!pointwise) {
        im2col(image, s, col.data());
        columns = col.data();
      }
      PLAIT_RETURN_IF_ERROR(gemmRowMajor<T>(
          false, true, filtersPerGroup, patch, outPlane, 1.0,
          dy + (n * s.filters + g * filtersPerGroup) * outPlane, outPlane, columns, outPlane,
          n == 0 ? 0.0 : 1.0, dw + g * filtersPerGroup * patch, patch));
    }
  return Status();
}

/// conv2d_grad_input(grad, w) -> dx, shaped like the forward input.
Status conv2dGradInputKernel(const KernelCall &call) {
  constexpr std::string_view kName = "conv2d_grad_input";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  ConvShape s;
  PLAIT_RETURN_IF_ERROR(
      planConvGrad(call, kName, call.outputs[0], call.inputs[1], call.inputs[0], s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &conv2dGradInputKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    return convGradInput<decltype(tag)>(call, s);
  });
}

/// conv2d_grad_weight(x, grad) -> dw, shaped like the forward weight.
Status conv2dGradWeightKernel(const KernelCall &call) {
  constexpr std::string_view kName = "conv2d_grad_weight";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  ConvShape s;
  PLAIT_RETURN_IF_ERROR(
      planConvGrad(call, kName, call.inputs[0], call.outputs[0], call.inputs[1], s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &conv2dGradWeightKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    return convGradWeight<decltype(tag)>(call, s);
  });
}

//===----------------------------------------------------------------------===//
// max_pool2d_grad, avg_pool2d_grad
//===----------------------------------------------------------------------===//

struct PoolShape {
  int64_t planes, height, width, outHeight, outWidth;
  Window2d window;
};

/// Checks a pooling adjoint: `x` is the forward input (or the result, shaped like it) and
/// `grad` must have the forward output's shape.
Status planPoolGrad(const KernelCall &call, std::string_view kernel, bool hasDilations,
                    const TensorView &x, const TensorView &grad, PoolShape &s) {
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, grad));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, call.outputs[0]));
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", call.outputs[0].shape, x.shape));
  if (x.rank() != 4)
    return Status::errorf("{}: x must be 4-D (NCHW), got {}", kernel, shapeString(x.shape));
  std::vector<int64_t> extent = call.attrs.getInts("kernel");
  if (extent.size() != 2)
    return Status::errorf("{}: 'kernel' must have 2 entries, got {}", kernel, extent.size());
  s.window.kernel[0] = extent[0];
  s.window.kernel[1] = extent[1];
  PLAIT_RETURN_IF_ERROR(parseWindow(kernel, call.attrs, hasDilations, s.window));
  s.planes = x.shape[0] * x.shape[1];
  s.height = x.shape[2];
  s.width = x.shape[3];
  s.outHeight = s.window.outputSize(0, s.height);
  s.outWidth = s.window.outputSize(1, s.width);
  return checkShape(kernel, "grad", grad.shape,
                    {x.shape[0], x.shape[1], s.outHeight, s.outWidth});
}

/// Routes each window's gradient to the element the forward max_pool2d selects: the first
/// strict maximum in row-major window order among positions inside the input, or the last
/// NaN (the forward's `v > best || isnan(v)` rule, which is PyTorch's). A window whose
/// positions are all -inf sends its gradient to its first position inside the input, as
/// PyTorch does; a window entirely in the padding sends none.
/// Safe when dx aliases x: each plane's argmaxes are found before the plane is written.
template <typename T> void maxPoolGrad(const T *x, const T *dy, T *dx, const PoolShape &s) {
  const Window2d &w = s.window;
  int64_t inPlane = s.height * s.width, outPlane = s.outHeight * s.outWidth;
  std::vector<int64_t> argmax(outPlane);
  for (int64_t p = 0; p < s.planes; ++p) {
    const T *plane = x + p * inPlane;
    for (int64_t oh = 0; oh < s.outHeight; ++oh)
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t where = -1;
        int64_t h0 = oh * w.stride[0] - w.padBegin[0], w0 = ow * w.stride[1] - w.padBegin[1];
        for (int64_t i = 0; i < w.kernel[0]; ++i) {
          int64_t ih = h0 + i * w.dilation[0];
          if (ih < 0 || ih >= s.height)
            continue;
          for (int64_t j = 0; j < w.kernel[1]; ++j) {
            int64_t iw = w0 + j * w.dilation[1];
            if (iw < 0 || iw >= s.width)
              continue;
            T v = plane[ih * s.width + iw];
            // The first inside position is taken unconditionally; after it only a strictly
            // greater value or a NaN replaces the choice, exactly as in the forward.
            bool wins = v > best || std::isnan(v);
            if (wins || where < 0)
              where = ih * s.width + iw;
            if (wins)
              best = v;
          }
        }
        argmax[oh * s.outWidth + ow] = where;
      }
    T *out = dx + p * inPlane;
    const T *g = dy + p * outPlane;
    std::fill(out, out + inPlane, T(0));
    for (int64_t o = 0; o < outPlane; ++o)
      if (argmax[o] >= 0)
        out[argmax[o]] += g[o];
  }
}

/// Adjoint of the forward avg_pool2d: the same cut windows and divisors (count_include_pad
/// counts the window cut at the end of the padded input, else the input positions in it).
template <typename T> void avgPoolGrad(const T *dy, T *dx, const PoolShape &s, bool countPad) {
  const Window2d &w = s.window;
  int64_t inPlane = s.height * s.width;
  std::fill(dx, dx + s.planes * inPlane, T(0));
  for (int64_t p = 0; p < s.planes; ++p) {
    T *plane = dx + p * inPlane;
    for (int64_t oh = 0; oh < s.outHeight; ++oh) {
      int64_t h0 = oh * w.stride[0] - w.padBegin[0];
      int64_t h1 = std::min(h0 + w.kernel[0], s.height + w.padEnd[0]);
      int64_t padH = h1 - h0;
      h0 = std::max<int64_t>(h0, 0);
      h1 = std::min(h1, s.height);
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
        int64_t w0 = ow * w.stride[1] - w.padBegin[1];
        int64_t w1 = std::min(w0 + w.kernel[1], s.width + w.padEnd[1]);
        int64_t padW = w1 - w0;
        w0 = std::max<int64_t>(w0, 0);
        w1 = std::min(w1, s.width);
        T g = *dy++;
        int64_t count = countPad ? padH * padW : (h1 - h0) * (w1 - w0);
        if (count <= 0)
          continue;
        T share = T(double(g) / double(count));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw)
            plane[ih * s.width + iw] += share;
      }
    }
  }
}

/// max_pool2d_grad(x, grad) -> dx.
Status maxPoolGradKernel(const KernelCall &call) {
  constexpr std::string_view kName = "max_pool2d_grad";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPoolGrad(call, kName, true, call.inputs[0], call.inputs[1], s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &maxPoolGradKernel);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    maxPoolGrad(call.inputs[0].as<T>(), call.inputs[1].as<T>(), call.outputs[0].as<T>(), s);
    return Status();
  });
}

/// avg_pool2d_grad(grad) -> dx, shaped like the forward input (the output's shape).
Status avgPoolGradKernel(const KernelCall &call) {
  constexpr std::string_view kName = "avg_pool2d_grad";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPoolGrad(call, kName, false, call.outputs[0], call.inputs[0], s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &avgPoolGradKernel);
  bool countPad = call.attrs.getBool("count_include_pad", false);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    avgPoolGrad(call.inputs[0].as<T>(), call.outputs[0].as<T>(), s, countPad);
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// softmax_cross_entropy_grad, nll_loss_grad
//===----------------------------------------------------------------------===//

enum class Reduction { Mean, Sum, None };

/// A loss gradient call: input [N, C, d...] seen as [N, C, D], target [N, d...], grad a
/// scalar (mean, sum) or target-shaped (none), optional class weights [C].
struct LossShape {
  int64_t batch = 0, classes = 0, spatial = 1;
  Reduction reduction = Reduction::Mean;
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
};

Status planLossGrad(const KernelCall &call, std::string_view kernel, LossShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 3, 4, 1));
  const TensorView &input = call.inputs[0], &target = call.inputs[1], &grad = call.inputs[2];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, out));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, grad));
  PLAIT_RETURN_IF_ERROR(checkIndexDtype(kernel, "target", target));
  if (input.rank() < 2)
    return Status::errorf("{}: input must be [N, C, ...], got {}", kernel,
                          shapeString(input.shape));
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", out.shape, input.shape));
  s.batch = input.shape[0];
  s.classes = input.shape[1];
  s.spatial = product(input.shape, 2, input.shape.size());
  std::vector<int64_t> expected{s.batch};
  expected.insert(expected.end(), input.shape.begin() + 2, input.shape.end());
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "target", target.shape, expected));
  if (call.inputs.size() > 3) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, call.inputs[3]));
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "weight", call.inputs[3].shape, {s.classes}));
  }
  std::string reduction = call.attrs.getStr("reduction", "mean");
  if (reduction == "mean")
    s.reduction = Reduction::Mean;
  else if (reduction == "sum")
    s.reduction = Reduction::Sum;
  else if (reduction == "none")
    s.reduction = Reduction::None;
  else
    return Status::errorf("{}: reduction must be mean, sum or none, got '{}'", kernel,
                          reduction);
  PLAIT_RETURN_IF_ERROR(
      checkShape(kernel, "grad", grad.shape,
                 s.reduction == Reduction::None ? expected : std::vector<int64_t>{}));
  s.hasIgnore = call.attrs.has("ignore_index");
  s.ignoreIndex = call.attrs.getInt("ignore_index", 0);
  return Status();
}

/// d(loss)/d(input) times grad, per position (n, d) with target t (zero when ignored):
///   from logits:   (softmax(input[n, :, d]) - onehot(t)) * w[t] * g / denom
///   from logp:     -onehot(t) * w[t] * g / denom
/// with denom the sum of w[t] over the non-ignored positions for mean, 1 otherwise -- the
/// forward's normalisation. Every target is validated before anything is written.
/// Safe when the result aliases `input`: a position's classes are all read before any is
/// written.
template <typename T, bool kFromLogits>
Status computeLossGrad(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const T *input = call.inputs[0].as<T>();
  const TensorView &target = call.inputs[1];
  const T *grad = call.inputs[2].as<T>();
  const T *weight = call.inputs.size() > 3 ? call.inputs[3].as<T>() : nullptr;
  T *out = call.outputs[0].as<T>();
  int64_t positions = s.batch * s.spatial;
  double weightSum = 0;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t t = indexAt(target, p);
    if (s.hasIgnore && t == s.ignoreIndex)
      continue;
    if (t < 0 || t >= s.classes)
      return Status::errorf("{}: target {} is out of range for {} classes", kernel, t,
                            s.classes);
    weightSum += weight ? double(weight[t]) : 1.0;
  }
  // With every target ignored there is nothing to scale: all gradients are zero.
  double norm = s.reduction == Reduction::Mean ? weightSum : 1.0;
  for (int64_t n = 0; n < s.batch; ++n) {
    const T *block = input + n * s.classes * s.spatial;
    T *result = out + n * s.classes * s.spatial;
    for (int64_t d = 0; d < s.spatial; ++d) {
      int64_t p = n * s.spatial + d;
      int64_t t = indexAt(target, p);
      if (s.hasIgnore && t == s.ignoreIndex) {
        for (int64_t c = 0; c < s.classes; ++c)
          result[c * s.spatial + d] = T(0);
        continue;
      }
      double g = double(grad[s.reduction == Reduction::None ? p : 0]);
      double scale = (weight ? double(weight[t]) : 1.0) * g / norm;
      if constexpr (kFromLogits) {
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t c = 0; c < s.classes; ++c)
          m = std::max(m, block[c * s.spatial + d]);
        double sum = 0;
        for (int64_t c = 0; c < s.classes; ++c)
          sum += std::exp(double(block[c * s.spatial + d]) - double(m));
        for (int64_t c = 0; c < s.classes; ++c) {
          double prob = std::exp(double(block[c * s.spatial + d]) - double(m)) / sum;
          result[c * s.spatial + d] = T((prob - (c == t ? 1.0 : 0.0)) * scale);
        }
      } else {
        for (int64_t c = 0; c < s.classes; ++c)
          result[c * s.spatial + d] = T(0);
        result[t * s.spatial + d] = T(-scale);
      }
    }
  }
  return Status();
}

template <bool kFromLogits> Status lossGradKernel(const KernelCall &call) {
  constexpr const char *kName =
      kFromLogits ? "softmax_cross_entropy_grad" : "nll_loss_grad";
  LossShape s;
  PLAIT_RETURN_IF_ERROR(planLossGrad(call, kName, s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &lossGradKernel<kFromLogits>);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    return computeLossGrad<decltype(tag), kFromLogits>(call, kName, s);
  });
}

} // namespace

void registerGradKernels() {
  registerKernel("gather_grad", &gatherGradKernel);
  registerKernel("conv2d_grad_input", &conv2dGradInputKernel);
  registerKernel("conv2d_grad_weight", &conv2dGradWeightKernel);
  registerKernel("max_pool2d_grad", &maxPoolGradKernel);
  registerKernel("avg_pool2d_grad", &avgPoolGradKernel);
  registerKernel("softmax_cross_entropy_grad", &lossGradKernel<true>);
  registerKernel("nll_loss_grad", &lossGradKernel<false>);
}

} // namespace plait::rt::cpu
