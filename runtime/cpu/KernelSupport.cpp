// Argument checks and half-precision staging shared by the CPU kernels.
#include "runtime/cpu/KernelSupport.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "codegen/schema/DropoutMask.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {

Status checkArity(const KernelCall &call, std::string_view kernel, size_t minInputs,
                  size_t maxInputs, size_t outputs) {
  if (call.inputs.size() < minInputs || call.inputs.size() > maxInputs) {
    if (minInputs == maxInputs)
      return Status::errorf("{}: expected {} inputs, got {}", kernel, minInputs,
                            call.inputs.size());
    return Status::errorf("{}: expected {} to {} inputs, got {}", kernel, minInputs, maxInputs,
                          call.inputs.size());
  }
  if (call.outputs.size() != outputs)
    return Status::errorf("{}: expected {} outputs, got {}", kernel, outputs,
                          call.outputs.size());
  return checkOperandRanks(call, kernel);
}

Status checkOperandRanks(const KernelCall &call, std::string_view kernel) {
  const std::vector<TensorView> &outputs = call.outputs;
  for (const auto *list : {&call.inputs, &outputs})
    for (const TensorView &t : *list)
      if (t.shape.size() > kMaxRank)
        return Status::errorf("{}: an operand has rank {}, more than the {} the CPU kernels "
                              "support", kernel, t.shape.size(), kMaxRank);
  return Status();
}

Status normalizeAxis(std::string_view kernel, int64_t axis, int64_t rank, int64_t &out) {
  if (axis < -rank || axis >= rank)
    return Status::errorf("{}: axis {} is out of range for rank {}", kernel, axis, rank);
  out = axis < 0 ? axis + rank : axis;
  return Status();
}

Status unsupportedDtype(std::string_view kernel, DType a) {
  return Status::errorf("{}: unsupported dtype {}", kernel, dtypeName(a));
}

Status unsupportedDtype(std::string_view kernel, DType a, DType b) {
  return Status::errorf("{}: unsupported dtype {} x {}", kernel, dtypeName(a), dtypeName(b));
}

Status checkShape(std::string_view kernel, std::string_view what, ShapeRef actual,
                  ShapeRef expected) {
  if (actual != expected)
    return Status::errorf("{}: {} has shape {}, expected {}", kernel, what, shapeString(actual),
                          shapeString(expected));
  return Status();
}

Status checkSameDtype(std::string_view kernel, const TensorView &a, const TensorView &b) {
  if (a.dtype != b.dtype)
    return unsupportedDtype(kernel, a.dtype, b.dtype);
  return Status();
}

Status checkMatmulBias(const KernelCall &call, const TensorView &bias) {
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("matmul", bias, out));
  if (!isFloat(bias.dtype))
    return Status::errorf("matmul: the bias is {}, not a float tensor", dtypeName(bias.dtype));
  if (call.attrs.has("result_perm"))
    return Status::error("matmul: a bias needs a product without result_perm");
  if (out.rank() < 2 || bias.rank() != 1 || bias.shape[0] != out.shape.back())
    return Status::errorf("matmul: bias {} is not a vector of the result {}'s last dimension",
                          shapeString(bias.shape), shapeString(out.shape));
  return Status();
}

Status checkNormCall(const KernelCall &call, std::string_view kernel, NormCall kind, bool rms,
                     int64_t &axis) {
  const bool add = kind == NormCall::AddNorm, grad = kind == NormCall::Grad;
  const size_t scale = add ? 2 : 1; // the scale's input
  const size_t params = grad && !rms && call.outputs.size() == 3 ? 2 : 1; // grad: results
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, grad ? 3 : scale + 1,
                                   grad ? 3 : scale + (rms ? 1 : 2),
                                   grad ? params + 1 : add ? 2 : 1));
  const TensorView &x = call.inputs[0];
  PLAIT_RETURN_IF_ERROR(normalizeAxis(kernel, call.attrs.getInt("axis", -1), x.rank(), axis));
  auto likeX = [&](std::string_view what, const TensorView &t) -> Status {
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, what, t.shape, x.shape));
    return checkSameDtype(kernel, x, t);
  };
  auto normalised = [&](std::string_view what, const TensorView &t) -> Status {
    PLAIT_RETURN_IF_ERROR(
        checkShape(kernel, what, t.shape, ShapeRef(x.shape).slice(size_t(axis), x.shape.size())));
    return checkSameDtype(kernel, x, t);
  };
  if (add)
    PLAIT_RETURN_IF_ERROR(likeX("residual", call.inputs[1]));
  if (grad)
    PLAIT_RETURN_IF_ERROR(likeX("dy", call.inputs[2]));
  static constexpr std::string_view kResults[][2] = {{"output", ""}, {"y", "sum"}, {"dx", ""}};
  for (size_t o = 0; o < (add ? 2 : 1); ++o)
    PLAIT_RETURN_IF_ERROR(likeX(kResults[size_t(kind)][o], call.outputs[o]));
  PLAIT_RETURN_IF_ERROR(normalised("scale", call.inputs[scale]));
  if (!grad && call.inputs.size() > scale + 1)
    PLAIT_RETURN_IF_ERROR(normalised("bias", call.inputs[scale + 1]));
  for (size_t p = 1; grad && p <= params; ++p)
    PLAIT_RETURN_IF_ERROR(normalised(p == 1 ? "dscale" : "dbias", call.outputs[p]));
  return Status();
}

DType batchNormComputeDtype(DType x) {
  return x == DType::BF16 || x == DType::F16 ? DType::F32 : x;
}

Status checkBatchNormCall(const KernelCall &call, BatchNormKind kind, BatchNormShape &out) {
  const std::string_view kernel = batchNormKernelName(kind);
  static constexpr size_t kInputs[] = {3, 5, 1, 4}, kOutputs[] = {3, 3, 1, 1};
  const bool optional = kind == BatchNormKind::kForward || kind == BatchNormKind::kGrad;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, kInputs[size_t(kind)],
                                   kInputs[size_t(kind)] + optional, kOutputs[size_t(kind)]));
  const TensorView &x = call.inputs[0];
  if (x.rank() < 2)
    return Status::errorf("{}: x has shape {}, expected [N, C, ...]", kernel, shapeString(x.shape));
  const Dims channels{x.shape[1]};
  auto check = [&](std::string_view what, const TensorView &t, ShapeRef shape) -> Status {
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, what, t.shape, shape));
    return checkSameDtype(kernel, x, t);
  };
  const int64_t pair = 2 * x.shape[1];
  const DType compute = batchNormComputeDtype(x.dtype);
  // A [copies * 2C] vector of the compute type (copies 0: any W >= 1 of them).
  auto vector = [&](std::string_view what, const TensorView &t, int64_t copies) -> Status {
    const bool ok =
        t.rank() == 1 && (copies > 0 ? t.shape[0] == copies * pair
                                     : pair > 0 && t.shape[0] >= pair && t.shape[0] % pair == 0);
    if (!ok)
      return Status::errorf("{}: {} has shape {}, expected [{}{}]", kernel, what,
                            shapeString(t.shape), copies > 0 ? "" : "W * ", pair);
    if (t.dtype != compute)
      return Status::errorf("{}: {} has dtype {}, expected {} (the compute type of x's {})", kernel,
                            what, dtypeName(t.dtype), dtypeName(compute), dtypeName(x.dtype));
    return Status();
  };
  switch (kind) {
  case BatchNormKind::kForward:
  case BatchNormKind::kGrad: {
    const bool grad = kind == BatchNormKind::kGrad;
    static constexpr std::string_view kForward[] = {"scale", "bias"};
    static constexpr std::string_view kGrad[] = {"scale", "mean", "var"};
    if (grad) {
      for (size_t i = 0; i < 3; ++i)
        PLAIT_RETURN_IF_ERROR(check(kGrad[i], call.inputs[i + 1], channels));
      PLAIT_RETURN_IF_ERROR(check("dy", call.inputs[4], x.shape));
    } else {
      for (size_t i = 0; i < 2; ++i)
        PLAIT_RETURN_IF_ERROR(check(kForward[i], call.inputs[i + 1], channels));
    }
    static constexpr std::string_view kResults[2][3] = {{"y", "mean", "var"},
                                                        {"dx", "dscale", "dbias"}};
    PLAIT_RETURN_IF_ERROR(check(kResults[grad][0], call.outputs[0], x.shape));
    for (size_t o = 1; o < 3; ++o)
      PLAIT_RETURN_IF_ERROR(check(kResults[grad][o], call.outputs[o], channels));
    if (call.inputs.size() > kInputs[size_t(kind)]) {
      const TensorView &extra = call.inputs.back();
      PLAIT_RETURN_IF_ERROR(vector(grad ? "sums" : "stats", extra, grad ? 1 : 0));
      if (grad)
        out.sums = true;
      else
        out.ranks = extra.shape[0] / pair;
    }
    break;
  }
  case BatchNormKind::kStats:
    PLAIT_RETURN_IF_ERROR(vector("stats", call.outputs[0], 1));
    break;
  case BatchNormKind::kGradSums:
    PLAIT_RETURN_IF_ERROR(check("mean", call.inputs[1], channels));
    PLAIT_RETURN_IF_ERROR(check("var", call.inputs[2], channels));
    PLAIT_RETURN_IF_ERROR(check("dy", call.inputs[3], x.shape));
    PLAIT_RETURN_IF_ERROR(vector("sums", call.outputs[0], 1));
    break;
  }
  out.batch = x.shape[0];
  out.channels = x.shape[1];
  out.spatial = product(x.shape, 2, x.rank());
  return Status();
}

Status checkAttentionCall(const KernelCall &call, bool grad, AttentionShape &out) {
  const std::string_view kernel = grad ? "attention_grad" : "attention";
  const size_t operands = grad ? 6 : 3; // then the step, with dropout
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, operands, operands + 1, grad ? 3 : 2));
  const TensorView &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  const char *names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const TensorView &t = call.inputs[i];
    if (t.shape.size() != 4)
      return Status::errorf("{}: {} has shape {}, expected [batch, seq, heads, dim]", kernel,
                            names[i], shapeString(t.shape));
    if (t.dtype != DType::F32 && t.dtype != DType::BF16)
      return unsupportedDtype(kernel, t.dtype);
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, q, t));
  }
  out.batch = q.shape[0];
  out.queries = q.shape[1];
  out.heads = q.shape[2];
  out.dim = q.shape[3];
  out.keys = k.shape[1];
  out.valueDim = v.shape[3];
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "k", k.shape, {out.batch, out.keys, out.heads, out.dim}));
  PLAIT_RETURN_IF_ERROR(
      checkShape(kernel, "v", v.shape, {out.batch, out.keys, out.heads, out.valueDim}));
  const Dims outShape{out.batch, out.queries, out.heads, out.valueDim};
  const Dims lseShape{out.batch, out.heads, out.queries};
  if (!grad) {
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "out", call.outputs[0].shape, outShape));
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "lse", call.outputs[1].shape, lseShape));
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, q, call.outputs[0]));
    if (call.outputs[1].dtype != DType::F32)
      return Status::errorf("{}: lse must be f32, got {}", kernel, dtypeName(call.outputs[1].dtype));
  } else {
    const TensorView &o = call.inputs[3], &lse = call.inputs[4], &dout = call.inputs[5];
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "out", o.shape, outShape));
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "lse", lse.shape, lseShape));
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "dout", dout.shape, outShape));
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, q, o));
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, q, dout));
    if (lse.dtype != DType::F32)
      return Status::errorf("{}: lse must be f32, got {}", kernel, dtypeName(lse.dtype));
    for (int i = 0; i < 3; ++i) {
      PLAIT_RETURN_IF_ERROR(checkShape(kernel, fmt::format("d{}", names[i]), call.outputs[i].shape,
                                       call.inputs[i].shape));
      PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, q, call.outputs[i]));
    }
  }
  out.scale = call.attrs.getFloat("scale", 0.0);
  out.causal = call.attrs.getBool("causal", false);
  if (!(std::isfinite(out.scale) && out.scale > 0))
    return Status::errorf("{}: scale must be a finite number > 0, got {}", kernel, out.scale);
  // Dropout on the probabilities: the mask plait.dropout_mask {ratio = dropout, seed, stream}
  // would draw this step on this rank (DropoutMask.h).
  out.dropout = call.attrs.getFloat("dropout", 0.0);
  if (!(out.dropout >= 0.0 && out.dropout < 1.0))
    return Status::errorf("{}: dropout must be in [0, 1), got {}", kernel, out.dropout);
  const bool hasStep = call.inputs.size() > operands;
  if ((out.dropout > 0) != hasStep)
    return Status::errorf("{}: {}", kernel,
                          hasStep ? "a step operand needs dropout > 0"
                                  : "dropout needs the step operand");
  if (hasStep)
    PLAIT_RETURN_IF_ERROR(drawKeyOf(kernel, call, call.inputs[operands], out.dropoutKey));
  return Status();
}

Status drawKeyOf(std::string_view kernel, const KernelCall &call, const TensorView &stepView,
                 uint64_t &key) {
  if (stepView.dtype != DType::F32 || stepView.numel() != 1)
    return Status::errorf("{}: step must be one f32 value, got {} {}", kernel,
                          dtypeName(stepView.dtype), shapeString(stepView.shape));
  const float step = *stepView.as<float>();
  if (!(step >= 0.0f) || step > 16777216.0f)
    return Status::errorf("{}: step {} is not a step number", kernel, step);
  key = dropout::streamKey(uint64_t(call.attrs.getInt("seed", 0)),
                           uint64_t(call.attrs.getInt("stream", 0)), uint64_t(step), call.rank);
  return Status();
}

Status checkIndexDtype(std::string_view kernel, std::string_view what, const TensorView &t) {
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    return Status::errorf("{}: {} must be i64 or i32, got {}", kernel, what, dtypeName(t.dtype));
  return Status();
}

Status normalizeIndices(std::string_view kernel, const TensorView &indices, int64_t axis,
                        int64_t size, int64_t *rows) {
  int64_t count = indices.numel();
  for (int64_t q = 0; q < count; ++q) {
    int64_t v = indexAt(indices, q);
    int64_t r = v < 0 ? v + size : v;
    if (r < 0 || r >= size)
      return Status::errorf("{}: index {} is out of range for axis {} of size {}", kernel, v,
                            axis, size);
    rows[q] = r;
  }
  return Status();
}

int64_t product(ShapeRef shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

Dims contiguousStrides(ShapeRef shape) {
  Dims strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Status Scratch::takeBytes(int64_t count, size_t elementSize, uint8_t *&out) {
  uint64_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(uint64_t(count), uint64_t(elementSize), &bytes))
    return Status::errorf("{}: a workspace chunk of {} elements of {} bytes is too large",
                          kernel_, count, elementSize);
  uint64_t chunk = workspaceChunkBytes(bytes);
  if (chunk > call_.workspaceBytes - used_ || (chunk != 0 && !call_.workspace))
    return Status::errorf("{}: needs at least {} workspace bytes, the call has {}", kernel_,
                          used_ + chunk, call_.workspace ? call_.workspaceBytes : 0);
  out = call_.workspace ? call_.workspace + used_ : nullptr;
  used_ += chunk;
  return Status();
}

Scratch::~Scratch() {
  if (call_.workspaceUsed)
    *call_.workspaceUsed = std::max(*call_.workspaceUsed, used_ + nested_);
}

PLAIT_SIMD_CLONES void widenBf16Row(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = widenBf16(in[i]);
}

PLAIT_SIMD_CLONES void narrowBf16Row(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = narrowBf16(in[i]);
}

PLAIT_SIMD_CLONES void widenF16Row(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = widenF16(in[i]);
}

PLAIT_SIMD_CLONES void narrowF16Row(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = narrowF16(in[i]);
}

void widenHalfRow(const uint16_t *in, DType dtype, float *out, int64_t n) {
  if (dtype == DType::BF16)
    widenBf16Row(in, out, n);
  else
    widenF16Row(in, out, n);
}

void narrowHalfRow(const float *in, DType dtype, uint16_t *out, int64_t n) {
  if (dtype == DType::BF16)
    narrowBf16Row(in, out, n);
  else
    narrowF16Row(in, out, n);
}

// Split across the kernels' threads (one chunk inside a parallel region).
void widenToF32(const void *src, DType srcType, float *dst, int64_t n) {
  const uint16_t *bits = static_cast<const uint16_t *>(src);
  parallelFor(n, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    widenHalfRow(bits + begin, srcType, dst + begin, end - begin);
  });
}

void narrowFromF32(const float *src, void *dst, DType dstType, int64_t n) {
  uint16_t *bits = static_cast<uint16_t *>(dst);
  parallelFor(n, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
    narrowHalfRow(src + begin, dstType, bits + begin, end - begin);
  });
}

bool hasHalfTensor(const KernelCall &call) {
  for (const TensorView &t : call.inputs)
    if (isHalf(t.dtype))
      return true;
  for (const TensorView &t : call.outputs)
    if (isHalf(t.dtype))
      return true;
  return false;
}

namespace {

// The views runStagedInF32 retargets, with what they pointed at before.
struct StagedView {
  TensorView *view;
  DType dtype;
  void *data;
  bool output; // one of the call's outputs: narrowed back after the f32 kernel
};
// More than any staged kernel's operands (adamw_update has 6 inputs and 3 outputs).
constexpr size_t kMaxStagedViews = 16;

} // namespace

Status runStagedInF32(const KernelCall &call, KernelFn f32Kernel) {
  // The caller owns the views (KernelCall says so): they are pointed at f32 copies for the
  // inner call, which never copies a view (that would allocate its shape), and restored below.
  auto &inputs = const_cast<std::vector<TensorView> &>(call.inputs);
  StagedView staged[kMaxStagedViews];
  size_t count = 0;
  Scratch scratch(call, "half-precision staging");
  auto restore = [&] {
    for (size_t i = 0; i < count; ++i) {
      staged[i].view->dtype = staged[i].dtype;
      staged[i].view->data = staged[i].data;
    }
  };
  Status status;
  for (auto *list : {&inputs, &call.outputs})
    for (TensorView &t : *list) {
      if (!isHalf(t.dtype))
        continue;
      float *copy = nullptr;
      if (count == kMaxStagedViews)
        status = Status::errorf("half-precision staging: more than {} half tensors",
                                kMaxStagedViews);
      else
        status = scratch.take(std::max<int64_t>(t.numel(), 1), copy);
      if (!status.ok()) {
        restore();
        return status;
      }
      if (list == &inputs)
        widenToF32(t.data, t.dtype, copy, t.numel());
      staged[count++] = {&t, t.dtype, t.data, list == &call.outputs};
      t.dtype = DType::F32;
      t.data = copy;
    }
  uint64_t innerUsed = 0;
  KernelCall inner{inputs,         call.outputs,   call.attrs,          call.rank,
                   call.worldSize, scratch.rest(), scratch.restBytes(), &innerUsed};
  status = f32Kernel(inner);
  scratch.addNested(innerUsed);
  if (status.ok())
    for (size_t i = 0; i < count; ++i)
      if (staged[i].output)
        narrowFromF32(staged[i].view->as<float>(), staged[i].data, staged[i].dtype,
                      staged[i].view->numel());
  restore();
  return status;
}

namespace {

/// runStagedInF32Entries with `entries` entries a slice.
Status runStagedInF32Batches(const KernelCall &call, KernelFn f32Kernel, int64_t entries,
                             uint64_t wholeInputs) {
  auto &inputs = const_cast<std::vector<TensorView> &>(call.inputs);
  struct Slice {
    TensorView *view;
    DType dtype;
    void *data;
    int64_t batch, entryElements; // the view's dimension 0 and elements per entry
    float *copy;                  // half tensors: the f32 copy of `entries` entries (or whole)
    bool output, whole;
  };
  Slice slices[kMaxStagedViews];
  size_t count = 0;
  Scratch scratch(call, "half-precision staging");
  auto restore = [&] {
    for (size_t i = 0; i < count; ++i) {
      slices[i].view->dtype = slices[i].dtype;
      slices[i].view->data = slices[i].data;
      if (!slices[i].whole)
        slices[i].view->shape[0] = slices[i].batch;
    }
  };
  int64_t batch = -1;
  for (auto *list : {&inputs, &call.outputs})
    for (TensorView &t : *list) {
      const bool whole = list == &inputs && stagedWhole(wholeInputs, size_t(&t - list->data()));
      if ((!whole && (t.rank() == 0 || (batch >= 0 && t.shape[0] != batch))) ||
          count == kMaxStagedViews) {
        restore();
        return Status::errorf("half-precision staging: operands without one batch dimension "
                              "(or more than {})",
                              kMaxStagedViews);
      }
      if (!whole)
        batch = t.shape[0];
      Slice slice{&t,      t.dtype,
                  t.data,  whole ? 1 : batch,
                  whole ? t.numel() : batch == 0 ? 0 : t.numel() / batch,
                  nullptr, list == &call.outputs,
                  whole};
      if (isHalf(t.dtype)) {
        Status s = scratch.take(
            std::max<int64_t>(whole ? t.numel() : entries * slice.entryElements, 1), slice.copy);
        if (!s.ok()) {
          restore();
          return s;
        }
        if (whole) { // widened once, for every call
          widenToF32(t.data, t.dtype, slice.copy, t.numel());
          t.dtype = DType::F32;
          t.data = slice.copy;
        }
      }
      slices[count++] = slice;
    }
  Status status;
  for (int64_t b0 = 0; b0 < batch && entries > 0 && status.ok(); b0 += entries) {
    const int64_t n = std::min(entries, batch - b0);
    for (size_t i = 0; i < count; ++i) {
      Slice &s = slices[i];
      if (s.whole)
        continue;
      const int64_t offset = b0 * s.entryElements;
      s.view->shape[0] = n;
      if (s.copy) {
        const void *from = static_cast<const uint16_t *>(s.data) + offset;
        if (!s.output)
          widenToF32(from, s.dtype, s.copy, n * s.entryElements);
        s.view->dtype = DType::F32;
        s.view->data = s.copy;
      } else {
        s.view->data = static_cast<uint8_t *>(s.data) + offset * int64_t(dtypeSize(s.dtype));
      }
    }
    uint64_t innerUsed = 0;
    KernelCall inner{inputs,         call.outputs,   call.attrs,          call.rank,
                     call.worldSize, scratch.rest(), scratch.restBytes(), &innerUsed};
    inner.batchOffset = call.batchOffset + b0;
    status = f32Kernel(inner);
    scratch.addNested(innerUsed);
    for (size_t i = 0; i < count && status.ok(); ++i) {
      const Slice &s = slices[i];
      if (s.copy && s.output)
        narrowFromF32(s.copy, static_cast<uint16_t *>(s.data) + b0 * s.entryElements, s.dtype,
                      n * s.entryElements);
    }
  }
  restore();
  return status;
}

} // namespace

Status runStagedInF32Entries(const KernelCall &call, KernelFn f32Kernel, uint64_t wholeInputs) {
  int64_t batch = -1, largest = 0;
  for (const std::vector<TensorView> *list : {&call.inputs, &std::as_const(call.outputs)})
    for (size_t i = 0; i < list->size(); ++i) {
      const TensorView &t = (*list)[i];
      if ((list == &call.inputs && stagedWhole(wholeInputs, i)) || t.rank() == 0)
        continue;
      batch = batch < 0 ? t.shape[0] : batch;
      if (isHalf(t.dtype) && batch > 0)
        largest = std::max(largest, t.numel() / batch);
    }
  return runStagedInF32Batches(call, f32Kernel, batchStageEntries(std::max<int64_t>(batch, 0),
                                                                  largest),
                               wholeInputs);
}

Status runStagedInF32Rows(const KernelCall &call, KernelFn f32Kernel, int64_t axis) {
  const TensorView &x = call.inputs[0];
  if (!rowWiseStaged(axis, int64_t(x.rank())))
    return runStagedInF32(call, f32Kernel);
  return runStagedInF32Entries(call, f32Kernel, lowerRankInputs(call.inputs.size(), [&](size_t i) {
                                 return call.inputs[i].rank();
                               }));
}

Status checkLikeParam(std::string_view kernel, std::string_view what, const TensorView &param,
                      const TensorView &t) {
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, param, t));
  return checkShape(kernel, what, t.shape, param.shape);
}

Status checkUpdateGrad(std::string_view kernel, const TensorView &param, const TensorView &grad,
                       bool halfGrad) {
  if (halfGrad && grad.dtype != param.dtype &&
      (grad.dtype == DType::BF16 || grad.dtype == DType::F16))
    return checkShape(kernel, "grad", grad.shape, param.shape);
  return checkLikeParam(kernel, "grad", param, grad);
}

size_t updateStateOperand(UpdateKind kind, size_t k) {
  if (kind == UpdateKind::AdamW)
    return k < 2 ? 2 + k : 6;
  return 4 + k;
}

Status checkUpdateTensors(std::string_view kernel, UpdateKind kind, const Attrs &attrs,
                          const TensorView *in, const TensorView *out, size_t states,
                          bool halfGrad) {
  // The states' names and their new values', in operand order (at most 3: updateStateCount);
  // literals, as the check runs every step, which allocates nothing.
  struct Names {
    std::string_view state, next;
  };
  static constexpr Names kExpAvg{"exp_avg", "new_exp_avg"},
      kExpAvgSq{"exp_avg_sq", "new_exp_avg_sq"},
      kMaxExpAvgSq{"max_exp_avg_sq", "new_max_exp_avg_sq"},
      kBuffer{"momentum_buffer", "new_momentum_buffer"}, kSum{"sum", "new_sum"},
      kSquareAvg{"square_avg", "new_square_avg"}, kGradAvg{"grad_avg", "new_grad_avg"},
      kExpInf{"exp_inf", "new_exp_inf"}, kAccDelta{"acc_delta", "new_acc_delta"},
      kPrev{"prev", "new_prev"}, kStepSize{"step_size", "new_step_size"}, kAx{"ax", "new_ax"};
  Names names[3] = {};
  switch (kind) {
  case UpdateKind::Sgd:
    names[0] = kBuffer;
    break;
  case UpdateKind::AdamW:
    names[0] = kExpAvg, names[1] = kExpAvgSq, names[2] = kMaxExpAvgSq;
    break;
  case UpdateKind::Adagrad:
    names[0] = kSum;
    break;
  case UpdateKind::RMSprop: {
    size_t k = 0;
    names[k++] = kSquareAvg;
    if (attrs.getBool("centered", false))
      names[k++] = kGradAvg;
    names[k] = kBuffer;
    break;
  }
  case UpdateKind::Lion:
    names[0] = kExpAvg;
    break;
  case UpdateKind::Adamax:
    names[0] = kExpAvg, names[1] = kExpInf;
    break;
  case UpdateKind::NAdam:
  case UpdateKind::RAdam:
  case UpdateKind::Lamb:
    names[0] = kExpAvg, names[1] = kExpAvgSq;
    break;
  case UpdateKind::Adadelta:
    names[0] = kSquareAvg, names[1] = kAccDelta;
    break;
  case UpdateKind::Rprop:
    names[0] = kPrev, names[1] = kStepSize;
    break;
  case UpdateKind::Asgd:
    names[0] = kAx;
    break;
  }
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkUpdateGrad(kernel, param, in[1], halfGrad));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kernel, "new_param", param, out[0]));
  for (size_t k = 0; k < states && k < 3; ++k) {
    PLAIT_RETURN_IF_ERROR(
        checkLikeParam(kernel, names[k].state, param, in[updateStateOperand(kind, k)]));
    PLAIT_RETURN_IF_ERROR(checkLikeParam(kernel, names[k].next, param, out[1 + k]));
  }
  return {};
}

Status checkGroupedCast(const std::vector<TensorView> &inputs,
                        const std::vector<TensorView> &outputs) {
  constexpr std::string_view kName = "grouped_cast";
  if (inputs.empty() || inputs.size() != outputs.size())
    return Status::errorf("{}: {} operands and {} results, not one result per operand", kName,
                          inputs.size(), outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView &x = inputs[i], &y = outputs[i];
    if (!isFloat(x.dtype) || !isFloat(y.dtype))
      return Status::errorf("{}: cast {} from {} to {} is not between floats", kName, i,
                            dtypeName(x.dtype), dtypeName(y.dtype));
    Status s = checkShape("cast", "output", y.shape, x.shape);
    if (!s.ok())
      return s.withPrefix(fmt::format("{}: cast {}: ", kName, i));
  }
  return Status();
}

bool updateKindOf(std::string_view name, UpdateKind &kind) {
  static constexpr std::pair<std::string_view, UpdateKind> kNames[] = {
      {"sgd_update", UpdateKind::Sgd},
      {"adamw_update", UpdateKind::AdamW},
      {"adagrad_update", UpdateKind::Adagrad},
      {"rmsprop_update", UpdateKind::RMSprop},
      {"lion_update", UpdateKind::Lion},
      {"adamax_update", UpdateKind::Adamax},
      {"nadam_update", UpdateKind::NAdam},
      {"radam_update", UpdateKind::RAdam},
      {"adadelta_update", UpdateKind::Adadelta},
      {"rprop_update", UpdateKind::Rprop},
      {"asgd_update", UpdateKind::Asgd},
      {"lamb_update", UpdateKind::Lamb}};
  for (const auto &[n, k] : kNames)
    if (n == name) {
      kind = k;
      return true;
    }
  return false;
}

size_t updateStateCount(UpdateKind kind, const Attrs &attrs) {
  const bool momentum = attrs.getFloat("momentum", 0.0) != 0.0;
  switch (kind) {
  case UpdateKind::Sgd:
    return momentum ? 1 : 0;
  case UpdateKind::AdamW:
    return attrs.getBool("amsgrad", false) ? 3 : 2;
  case UpdateKind::Adagrad:
  case UpdateKind::Lion:
  case UpdateKind::Asgd:
    return 1;
  case UpdateKind::RMSprop:
    return 1 + (attrs.getBool("centered", false) ? 1 : 0) + (momentum ? 1 : 0);
  case UpdateKind::Adamax:
  case UpdateKind::NAdam:
  case UpdateKind::RAdam:
  case UpdateKind::Adadelta:
  case UpdateKind::Rprop:
  case UpdateKind::Lamb:
    return 2;
  }
  return 0;
}

Status groupedUpdateLayout(const Attrs &attrs, size_t inputs, size_t outputs,
                           GroupedUpdateLayout &out) {
  constexpr std::string_view kName = "grouped_update";
  std::string_view update = attrs.getStrView("update", "");
  int64_t per = attrs.getInt("operands_per_update", 0);
  int64_t perResult = attrs.getInt("results_per_update", 0);
  UpdateKind kind;
  if (!updateKindOf(update, kind))
    return Status::errorf("{}: update must be adamw_update, sgd_update, adagrad_update, "
                          "rmsprop_update, lion_update, adamax_update, nadam_update, "
                          "radam_update, adadelta_update, rprop_update, asgd_update or "
                          "lamb_update, got '{}'",
                          kName, update);
  const int64_t states = int64_t(updateStateCount(kind, attrs));
  if (per != 4 + states || perResult != 1 + states)
    return Status::errorf("{}: {} does not take {} operands and give {} results with these "
                          "attributes ({} and {})",
                          kName, update, per, perResult, 4 + states, 1 + states);
  size_t count = inputs / size_t(per);
  if (count == 0 || inputs % size_t(per) != 0 || outputs != count * size_t(perResult))
    return Status::errorf("{}: {} operands and {} results are not groups of {} and {}", kName,
                          inputs, outputs, per, perResult);
  out = {kind, size_t(per), size_t(perResult), count};
  return {};
}

Status sliceView(const Attrs &attrs, const TensorView &x, const TensorView &y, int64_t &offset,
                 Dims &strides) {
  const std::vector<int64_t> &starts = attrs.getInts("starts"), &ends = attrs.getInts("ends"),
                             &steps = attrs.getInts("steps");
  size_t rank = x.shape.size();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return Status::errorf("slice: starts, ends and steps need one entry per dimension ({})",
                          rank);
  Dims inStrides = contiguousStrides(x.shape), shape;
  strides.clear();
  offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = x.shape[d], b = starts[d], e = ends[d], s = steps[d];
    bool ok = s > 0 ? (0 <= b && b <= e && e <= n) : s < 0 && (-1 <= e && e <= b && b <= n - 1);
    if (!ok)
      return Status::errorf("slice: [{}:{}:{}] of dimension {} (size {}) is not normalised", b,
                            e, s, d, n);
    int64_t count = s > 0 ? (e - b + s - 1) / s : (b - e - s - 1) / (-s);
    shape.push_back(count);
    strides.push_back(s * inStrides[d]);
    if (count > 0)
      offset += b * inStrides[d];
  }
  return checkShape("slice", "output", y.shape, shape);
}

Status planTopK(const KernelCall &call, int64_t &rows, int64_t &n, int64_t &k) {
  constexpr const char *kName = "top_k";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  const TensorView &out = call.outputs[0];
  if (out.dtype != DType::I64)
    return Status::errorf("{}: output dtype {} should be i64", kName, dtypeName(out.dtype));
  if (x.rank() == 0)
    return Status::errorf("{}: x must have rank >= 1", kName);
  n = x.shape.back();
  k = call.attrs.getInt("k", -1);
  if (k < 0 || k > n)
    return Status::errorf("{}: k {} is not in [0, {}], the size of the last axis", kName, k, n);
  Dims outShape{ShapeRef(x.shape)};
  outShape.back() = k;
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, outShape));
  rows = product(x.shape, 0, x.shape.size() - 1);
  return {};
}

Status planSquareMatrices(const KernelCall &call, bool cofactors, int64_t &batch, int64_t &n) {
  const char *kName = cofactors ? "cofactors" : "det";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, x, out));
  if (!isFloat(x.dtype))
    return unsupportedDtype(kName, x.dtype);
  if (x.rank() < 2)
    return Status::errorf("{}: x must have rank >= 2 (matrices in its last two axes)", kName);
  n = x.shape.back();
  if (x.shape[x.rank() - 2] != n || n < 1)
    return Status::errorf("{}: the matrices of x must be square and not empty, got {} x {}", kName,
                          x.shape[x.rank() - 2], n);
  const ShapeRef xShape(x.shape);
  const Dims outShape = cofactors ? Dims(xShape) : Dims(xShape.slice(0, xShape.size() - 2));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, outShape));
  batch = product(x.shape, 0, x.shape.size() - 2);
  return {};
}

Status planWeightEma(const KernelCall &call, EmaSchedule &schedule) {
  constexpr const char *kName = "weight_ema";
  const size_t n = call.outputs.size();
  if (n == 0 || call.inputs.size() != 2 * n + 1)
    return Status::errorf("{}: needs N params, their N averages and the step for N results, "
                          "got {} inputs and {} outputs",
                          kName, call.inputs.size(), n);
  for (size_t k = 0; k < n; ++k) {
    const TensorView &param = call.inputs[k], &ema = call.inputs[n + k];
    const TensorView &out = call.outputs[k];
    const std::string which = n == 1 ? std::string(kName) : fmt::format("{} {}", kName, k);
    if (!isFloat(param.dtype))
      return Status::errorf("{}: param must be a float tensor, got {}", which,
                            dtypeName(param.dtype));
    for (const auto &[what, t] :
         {std::pair<const char *, const TensorView *>{"ema", &ema}, {"new ema", &out}}) {
      if (t->dtype != param.dtype)
        return Status::errorf("{}: {} dtype {} differs from the param's {}", which, what,
                              dtypeName(t->dtype), dtypeName(param.dtype));
      PLAIT_RETURN_IF_ERROR(checkShape(which, what, t->shape, param.shape));
    }
  }
  const TensorView &step = call.inputs.back();
  if (step.dtype != DType::F32 || step.numel() != 1)
    return Status::errorf("{}: step must be an f32 scalar, got {} {}", kName,
                          dtypeName(step.dtype), shapeString(step.shape));
  EmaSchedule &s = schedule;
  s.decay = call.attrs.getFloat("decay", -1.0);
  if (!(s.decay > 0.0 && s.decay < 1.0))
    return Status::errorf("{}: decay {} is not in (0, 1)", kName, s.decay);
  s.warmup = call.attrs.getBool("warmup", false);
  s.power = call.attrs.getFloat("power", 0.0);
  s.invGamma = call.attrs.getFloat("inv_gamma", 1.0);
  s.minDecay = call.attrs.getFloat("min_decay", 0.0);
  const int64_t start = call.attrs.getInt("start", 0), every = call.attrs.getInt("every", 1);
  if (!(s.power >= 0 && std::isfinite(s.power)) || !(s.invGamma > 0 && std::isfinite(s.invGamma)))
    return Status::errorf("{}: needs power >= 0 and inv_gamma > 0, got {} and {}", kName, s.power,
                          s.invGamma);
  if (!(s.minDecay >= 0 && s.minDecay <= s.decay))
    return Status::errorf("{}: min_decay {} is not in [0, decay {}]", kName, s.minDecay, s.decay);
  if (start < 0 || every < 1)
    return Status::errorf("{}: needs start >= 0 and every >= 1, got {} and {}", kName, start,
                          every);
  s.start = double(start);
  s.every = double(every);
  return {};
}

} // namespace plait::rt::cpu
