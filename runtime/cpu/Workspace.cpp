// Workspace sizes of the CPU kernels: for each kernel that needs scratch, the chunks it takes
// (runtime/cpu/*Kernels.cpp say which, next to each Scratch::take), in the same arithmetic.
#include "runtime/cpu/Workspace.h"

#include "codegen/schema/Determinant.h"
#include "codegen/schema/MatmulLayout.h"

#include "runtime/cpu/ReductionSplit.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

namespace plait::rt {
namespace {

uint64_t saturatingMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/// Product of dims [begin, end); negative dimensions (rejected by the loader) count as 0.
uint64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  uint64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    n = saturatingMul(n, shape[i] < 0 ? 0 : uint64_t(shape[i]));
  return n;
}

uint64_t numel(const OperandType &t) { return product(*t.shape, 0, t.shape->size()); }

/// `n` as an int64_t for the slot rules in Workspace.h, saturating at INT64_MAX.
int64_t clampedInt64(uint64_t n) { return int64_t(std::min<uint64_t>(n, INT64_MAX)); }

/// One chunk of `count` elements of `elementSize` bytes.
uint64_t chunk(uint64_t count, uint64_t elementSize) {
  return workspaceChunkBytes(saturatingMul(count, elementSize));
}

bool isHalfType(DType t) { return t == DType::BF16 || t == DType::F16; }

/// The bytes of an element in the type kernels compute it in: bf16/f16 as f32
/// (KernelSupport.h Bf16Elements, F16Elements).
uint64_t valueBytes(DType t) { return isHalfType(t) ? 4 : dtypeSize(t); }

// The kernels that compute bf16/f16 through f32 copies (runStagedInF32; attention and the
// row-wise kernels a few entries of dimension 0 at a time): every float kernel but matmul and
// gemm (f32 tiles, a folded matmul's gathered rows: gemmBytes), gather_grad (a tile of rows), the
// unary maps (pieces: kHalfMapKernels), the binary ops (pieces of their result:
// kHalfBinaryKernels), the reductions and clamp (which read half elements widened: computeBytes,
// the reductions' with f32 accumulators), the norms' gradients (a row of each operand at a time in
// f32) and weight_ema (two f32 buffers of its largest half average). Movement, indexing, cast,
// where and the logical ops move or test elements as they are.
// clang-format off
constexpr std::string_view kStagedKernels[] = {
    "softmax", "log_softmax", "layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm",
    "conv2d",
    "max_pool2d", "avg_pool2d", "softmax_cross_entropy", "nll_loss",
    "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d_grad",
    "avg_pool2d_grad", "softmax_cross_entropy_grad", "nll_loss_grad",
    "sgd_update", "adamw_update", "adagrad_update", "rmsprop_update", "lion_update",
    "adamax_update", "nadam_update", "radam_update", "adadelta_update", "rprop_update",
    "asgd_update", "lamb_update", "lamb_norms", "adafactor_update", "adafactor_stats",
    "adafactor_norms", "attention", "attention_grad", "det",
    "cofactors"};
// clang-format on

// The unary maps, which compute bf16/f16 in pieces of halfMapPiece elements.
// clang-format off
constexpr std::string_view kHalfMapKernels[] = {
    "exp", "log", "sqrt", "rsqrt", "reciprocal", "erf", "tanh", "sin", "cos", "sigmoid",
    "silu", "softplus", "floor", "ceil", "round", "gelu", "leaky_relu", "elu", "hard_sigmoid",
    "neg", "abs", "relu", "sign"};
// clang-format on

// The binary ops, which compute bf16/f16 in pieces of halfMapPiece elements of their result,
// a buffer for each operand's part (BinaryKernels.cpp halfBinary).
// clang-format off
constexpr std::string_view kHalfBinaryKernels[] = {
    "add", "sub", "mul", "div", "mod", "pow", "max", "min", "equal", "less", "less_equal",
    "greater", "greater_equal"};
// clang-format on

template <size_t N> bool listed(const std::string_view (&list)[N], std::string_view kernel) {
  return std::find(std::begin(list), std::end(list), kernel) != std::end(list);
}
bool isHalfBinary(std::string_view kernel) { return listed(kHalfBinaryKernels, kernel); }
bool isHalfMap(std::string_view kernel) { return listed(kHalfMapKernels, kernel); }

// The row-wise kernels, which stage a few entries of dimension 0 at a time (rowWiseStaged).
bool isRowWise(std::string_view kernel) {
  return kernel == "softmax" || kernel == "log_softmax" || kernel == "layer_norm" ||
         kernel == "rms_norm" || kernel == "add_layer_norm" || kernel == "add_rms_norm";
}

bool isStaged(std::string_view kernel) {
  static const std::unordered_set<std::string_view> staged(std::begin(kStagedKernels),
                                                           std::end(kStagedKernels));
  return staged.count(kernel) != 0;
}

/// `axis` normalised against `rank` (ODS default `dflt` when absent), or false.
bool axisOf(const Attrs &attrs, int64_t dflt, size_t rank, size_t &out) {
  int64_t axis = attrs.getInt("axis", dflt), r = int64_t(rank);
  if (axis < -r || axis >= r)
    return false;
  out = size_t(axis < 0 ? axis + r : axis);
  return true;
}

/// A conv2d whose 1x1, stride-1, unpadded window makes its input the column matrix itself
/// (ConvShape::pointwise): no im2col buffer.
bool pointwiseConv(const std::vector<int64_t> &w, const Attrs &attrs) {
  const std::vector<int64_t> &strides = attrs.getInts("strides"), &pads = attrs.getInts("pads");
  return w[2] == 1 && w[3] == 1 && strides == std::vector<int64_t>{1, 1} &&
         pads == std::vector<int64_t>{0, 0, 0, 0};
}

/// A depthwise conv2d (ConvShape::depthwise: w [C, 1, kH, kW] in C groups), computed without
/// columns (ConvSupport.h depthwiseConv2d and its adjoints).
bool depthwiseConv(const std::vector<int64_t> &w, const Attrs &attrs) {
  return w.size() == 4 && w[1] == 1 && attrs.getInt("group", 1) == w[0];
}

/// The slots of depthwise or direct grouped blocks: `elements` of `dtype` and `sums` doubles
/// each.
uint64_t blockSlotBytes(const DepthwiseBlocks &d, DType dtype) {
  const uint64_t slots = uint64_t(d.slots);
  return saturatingAdd(chunk(saturatingMul(uint64_t(d.elements), slots), dtypeSize(dtype)),
                       chunk(saturatingMul(uint64_t(d.sums), slots), 8));
}

/// A grouped conv2d (or adjoint) computed directly (ConvShape::groupedDirect): its `direct`
/// on a grouped shape of at most kGroupedDirectLanes channels and filters a group.
bool groupedDirectConv(const std::vector<int64_t> &w, const Attrs &attrs) {
  const int64_t group = attrs.getInt("group", 1);
  return attrs.getBool("direct", false) && w.size() == 4 && group > 0 && w[0] % group == 0 &&
         groupedDirectShape(group, w[1], w[0] / group);
}

/// A direct grouped convolution's workspace (Workspace.h groupedBlocks) of x [N, C, H, W] (or
/// dx), y [N, F, OH, OW] (or dy) and w [F, C/group, kH, kW]. 0 when x is not 4-D.
uint64_t groupedBytes(const std::vector<int64_t> &x, const std::vector<int64_t> &y,
                      const std::vector<int64_t> &w, const Attrs &attrs, DType dtype,
                      bool gradWeight) {
  if (x.size() != 4 || y.size() != 4 || w.size() != 4)
    return 0;
  DepthwiseBlocks d =
      groupedBlocks(x[0], attrs.getInt("group", 1), clampedInt64(product(x, 2, 4)),
                    clampedInt64(product(y, 2, 4)), clampedInt64(product(w, 2, 4)), gradWeight);
  return blockSlotBytes(d, dtype);
}

/// A conv2d or conv2d_grad_input computed by Winograd F(2x2, 3x3) (ConvShape::winograd): its
/// `winograd` on a 3x3 window of stride 1 and dilation 1 in one group.
bool winogradConv(const std::vector<int64_t> &w, const Attrs &attrs) {
  if (!attrs.getBool("winograd", false) || w.size() != 4)
    return false;
  auto pair = [&](const char *name) { // absent: 1, 1; another length: not a window it takes
    if (!attrs.has(name))
      return std::vector<int64_t>{1, 1};
    const std::vector<int64_t> &v = attrs.getInts(name);
    return v.size() == 2 ? v : std::vector<int64_t>{0, 0};
  };
  const std::vector<int64_t> strides = pair("strides"), dilations = pair("dilations");
  return winogradWindow(w[2], w[3], strides[0], strides[1], dilations[0], dilations[1],
                        attrs.getInt("group", 1));
}

/// A conv2d's images per GEMM (ConvShape::imageBlock): its `image_block` (1 when absent;
/// the kernel refuses one below 1) but at most `batch`, and 1 for an empty batch.
uint64_t imageBlock(const Attrs &attrs, uint64_t batch) {
  const int64_t block = attrs.getInt("image_block", 1);
  return block < 1 || batch == 0 ? 1 : std::min(uint64_t(block), batch);
}

/// The image blocks of `batch` images, `block` at a time (ConvShape::blocks).
uint64_t imageBlocks(uint64_t batch, uint64_t block) {
  return batch / block + (batch % block != 0);
}

/// A depthwise convolution's blocks of channels (Workspace.h depthwiseBlocks) of x [N, C, H, W]
/// (or dx), y [N, C, OH, OW] (or dy) and w [C, 1, kH, kW]: `slots` of elements of `dtype`, then
/// the weight gradient's sums in f64. 0 when x is not 4-D (the kernel rejects it).
uint64_t depthwiseBytes(const std::vector<int64_t> &x, const std::vector<int64_t> &y,
                        const std::vector<int64_t> &w, DType dtype, bool gradWeight) {
  if (x.size() != 4 || y.size() != 4 || w.size() != 4)
    return 0;
  DepthwiseBlocks d =
      depthwiseBlocks(x[0], x[1], clampedInt64(product(x, 2, 4)), clampedInt64(product(y, 2, 4)),
                      clampedInt64(product(w, 2, 4)), gradWeight);
  return blockSlotBytes(d, dtype);
}

/// The column matrices of conv2d and its adjoints (ColumnMatrix), `slots` of them: patch x
/// (block x outPlane) elements each, patch from the weight `w`, outPlane from the conv output
/// (or its gradient) `y`, block from its batch; none for a pointwise convolution of one image
/// a block or a depthwise one. With more than one image a block, as many staging matrices of
/// F/group x (block x outPlane).
uint64_t convColumns(const OperandType &w, const OperandType &y, const Attrs &attrs,
                     uint64_t slots) {
  if (w.shape->size() != 4 || y.shape->size() != 4 || depthwiseConv(*w.shape, attrs) ||
      groupedDirectConv(*w.shape, attrs))
    return 0;
  const uint64_t block = imageBlock(attrs, product(*y.shape, 0, 1));
  const uint64_t columns = saturatingMul(block, product(*y.shape, 2, 4));
  const uint64_t group = uint64_t(std::max<int64_t>(attrs.getInt("group", 1), 1));
  const uint64_t cols =
      pointwiseConv(*w.shape, attrs) && block == 1
          ? 0
          : chunk(saturatingMul(saturatingMul(product(*w.shape, 1, 4), columns), slots),
                  dtypeSize(w.dtype));
  const uint64_t stage =
      block == 1
          ? 0
          : chunk(saturatingMul(saturatingMul(product(*w.shape, 0, 1) / group, columns), slots),
                  dtypeSize(w.dtype));
  return saturatingAdd(cols, stage);
}

/// convColumnSlots of `units` of `unitWork` multiply-adds each, either of them maybe huge.
uint64_t slotsFor(uint64_t units, uint64_t unitWork) {
  return uint64_t(convColumnSlots(clampedInt64(units), clampedInt64(unitWork)));
}

/// Winograd.cpp's workspace: the transformed weights (16 x outChannels x inChannels), then per
/// slot a transformed chunk of input tiles (16 x inChannels x chunk) and its products (16 x
/// outChannels x chunk). `tiled` is the shape whose 2x2 tiles it walks: the result's (y, or dx
/// for the adjoint), or for conv2d_grad_weight (`gradWeight`) dy's, whose workspace is the
/// summed products, then one chunk's transformed x and dy (Workspace.h winogradGradChunks,
/// one slot).
uint64_t winogradBytes(uint64_t inChannels, uint64_t outChannels, const std::vector<int64_t> &tiled,
                       DType dtype, bool gradWeight = false) {
  if (tiled.size() != 4)
    return 0;
  const uint64_t tilesWide = (product(tiled, 3, 4) + 1) / 2;
  const uint64_t tileRows = saturatingMul(product(tiled, 0, 1), (product(tiled, 2, 3) + 1) / 2);
  if (tileRows == 0 || tilesWide == 0 || outChannels == 0 || inChannels == 0)
    return 0;
  const int64_t wide = clampedInt64(tilesWide), rows = clampedInt64(tileRows);
  const int64_t in = clampedInt64(inChannels), out = clampedInt64(outChannels);
  const WinogradChunks chunking =
      gradWeight ? winogradGradChunks(wide, rows, in, out) : winogradChunks(wide, rows, in, out);
  const uint64_t chunkTiles = uint64_t(chunking.tiles), slots = uint64_t(chunking.slots);
  const size_t size = dtypeSize(dtype);
  return saturatingAdd(
      chunk(saturatingMul(16, saturatingMul(outChannels, inChannels)), size),
      saturatingAdd(
          chunk(saturatingMul(slots, saturatingMul(16, saturatingMul(inChannels, chunkTiles))),
                size),
          chunk(saturatingMul(slots, saturatingMul(16, saturatingMul(outChannels, chunkTiles))),
                size)));
}

/// conv2d's and conv2d_grad_input's slots: one per chunk of their (image block, group) units,
/// each F/group x patch x (block x outPlane) multiply-adds (w the weight, y the output or its
/// gradient).
uint64_t unitSlots(const OperandType &w, const OperandType &y, const Attrs &attrs) {
  if (w.shape->size() != 4 || y.shape->size() != 4)
    return 1;
  uint64_t group = uint64_t(std::max<int64_t>(attrs.getInt("group", 1), 1));
  uint64_t filtersPerGroup = product(*w.shape, 0, 1) / group;
  const uint64_t batch = product(*y.shape, 0, 1), block = imageBlock(attrs, batch);
  return slotsFor(saturatingMul(imageBlocks(batch, block), group),
                  saturatingMul(saturatingMul(filtersPerGroup, product(*w.shape, 1, 4)),
                                saturatingMul(block, product(*y.shape, 2, 4))));
}

/// The accumulator copies of a reduction of `x` into `y` over its "axes" (none: every axis):
/// one per block of rows when its outermost dimensions are reduced (ReductionSplit.h).
uint64_t reduceSlots(const OperandType &x, const OperandType &y, const Attrs &attrs) {
  std::vector<int64_t> runs;
  std::vector<bool> kept;
  if (!cpu::reductionRuns(*x.shape, attrs.getInts("axes"), runs, kept))
    return 1; // the kernel rejects the axis before taking any
  return uint64_t(cpu::reductionSlots(
      runs.data(), runs.size(), [&](size_t r) { return bool(kept[r]); },
      clampedInt64(numel(x)), clampedInt64(numel(y))));
}

/// A matmul's or gemm's workspace (LinalgKernels.cpp): a folded permuted matmul's gathered
/// lhs rows (`fold_rows`: matmul::foldedChunkRows, elements as stored), then for bf16/f16 the f32
/// tiles (Gemm.cpp halfGemmRowMajor) for the dimensions of each of its GEMMs: a matmul's batch
/// folds into M when its rhs has no batch and its lhs is not transposed, a folded one's chunk is M.
/// 0 when it computes nothing.
uint64_t gemmBytes(std::string_view kernel, const std::vector<OperandType> &in,
                   const LazyAttrs &attrs) {
  if (kernel == "gemm" && !isHalfType(in[0].dtype))
    return 0; // no tiles, and gemm never folds: its attributes need no decoding
  uint64_t gathered = 0;
  const std::vector<int64_t> &x = *in[0].shape, &y = *in[1].shape;
  int64_t m = 0, n = 0, k = 0;
  if (kernel == "gemm") {
    if (x.size() != 2 || y.size() != 2)
      return 0;
    bool transA = attrs().getBool("trans_a", false), transB = attrs().getBool("trans_b", false);
    m = x[transA ? 1 : 0];
    k = x[transA ? 0 : 1];
    n = y[transB ? 0 : 1];
  } else {
    const Attrs &a = attrs();
    const bool permuted = a.has("lhs_perm") || a.has("rhs_perm") || a.has("result_perm");
    std::vector<int64_t> as, bs; // the logical operands, batch first
    for (int i = 0; i < 2; ++i) {
      const std::vector<int64_t> &stored = i == 0 ? x : y;
      std::vector<int64_t> &dims = i == 0 ? as : bs;
      const char *perm = i == 0 ? "lhs_perm" : "rhs_perm";
      if (permuted && a.has(perm)) {
        for (int64_t d : a.getInts(perm)) {
          if (d < 0 || d >= int64_t(stored.size()))
            return 0; // the kernel rejects the permutation
          dims.push_back(stored[size_t(d)]);
        }
      } else {
        dims = stored;
      }
      if (!permuted && dims.size() == 1) // numpy's promotion of a vector
        dims.insert(i == 0 ? dims.begin() : dims.end(), 1);
      if (dims.size() < 2)
        return 0;
      if (a.getBool(i == 0 ? "transpose_lhs" : "transpose_rhs", false))
        std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
    }
    m = as[as.size() - 2];
    k = as.back();
    n = bs.back();
    uint64_t batchA = product(as, 0, as.size() - 2), batchB = product(bs, 0, bs.size() - 2);
    if (batchA == 0 || batchB == 0)
      return 0; // no GEMM runs
    if (!permuted && batchB == 1 && !a.getBool("transpose_lhs", false))
      m = clampedInt64(saturatingMul(uint64_t(std::max<int64_t>(m, 0)), batchA));
    int64_t rows = permuted && a.getBool("fold_rows", false) && batchB == 1
                       ? matmul::foldedChunkRows(clampedInt64(batchA), std::max<int64_t>(m, 0), k)
                       : 0;
    if (rows > 0) {
      gathered = chunk(saturatingMul(uint64_t(rows), uint64_t(k)), dtypeSize(in[0].dtype));
      m = rows;
    }
  }
  if (!isHalfType(in[0].dtype))
    return gathered;
  int64_t floats = halfGemmTile(m, n, k).floats();
  return saturatingAdd(gathered, floats == 0 ? 0 : chunk(uint64_t(floats), 4));
}

/// The workspace of the kernel computing in f32/f64 (after any half staging).
uint64_t computeBytes(std::string_view kernel, const std::vector<OperandType> &in,
                      const std::vector<OperandType> &out, const LazyAttrs &attrs) {
  auto operands = [&](size_t inputs, size_t outputs) {
    return in.size() >= inputs && out.size() >= outputs;
  };
  if ((kernel == "det" || kernel == "cofactors") && operands(1, 1) && in[0].shape->size() >= 2) {
    // LinalgKernels.cpp: det a matrix and its pivots; cofactors Determinant.h's scratch and
    // the matrix's cofactors, in f64.
    const int64_t n = std::max<int64_t>(in[0].shape->back(), 0);
    const uint64_t matrix = saturatingMul(uint64_t(n), uint64_t(n));
    if (kernel == "det")
      return saturatingAdd(chunk(matrix, 8), chunk(uint64_t(n), 8));
    return saturatingAdd(chunk(uint64_t(linalg::cofactorScratch(n)), 8), chunk(matrix, 8));
  }
  if ((kernel == "matmul" || kernel == "gemm") && operands(2, 1))
    return gemmBytes(kernel, in, attrs);
  if (kernel == "conv2d" && operands(2, 1)) {
    if (in[0].shape->size() == 4 && out[0].shape->size() == 4 &&
        depthwiseConv(*in[1].shape, attrs())) // x's planes in, y's out
      return depthwiseBytes(*in[0].shape, *out[0].shape, *in[1].shape, in[0].dtype, false);
    if (groupedDirectConv(*in[1].shape, attrs())) // x's planes in, y's out, the taps
      return groupedBytes(*in[0].shape, *out[0].shape, *in[1].shape, attrs(), in[0].dtype, false);
    if (winogradConv(*in[1].shape, attrs())) // Winograd.cpp: x's channels in, y's out
      return winogradBytes(product(*in[1].shape, 1, 2), product(*in[1].shape, 0, 1), *out[0].shape,
                           in[1].dtype);
    return convColumns(in[1], out[0], attrs(), unitSlots(in[1], out[0], attrs()));
  }
  if (kernel == "conv2d_grad_input" && operands(2, 1)) { // (dy, w) -> dx
    if (in[0].shape->size() == 4 && out[0].shape->size() == 4 &&
        depthwiseConv(*in[1].shape, attrs())) // dx's planes in the block's first buffer
      return depthwiseBytes(*out[0].shape, *in[0].shape, *in[1].shape, in[0].dtype, false);
    if (groupedDirectConv(*in[1].shape, attrs())) // dx's planes in the first buffer, dy's after
      return groupedBytes(*out[0].shape, *in[0].shape, *in[1].shape, attrs(), in[0].dtype, false);
    if (winogradConv(*in[1].shape, attrs()))             // dy's channels in, dx's out
      return winogradBytes(product(*in[1].shape, 0, 1), product(*in[1].shape, 1, 2), *out[0].shape,
                           in[1].dtype);
    return convColumns(in[1], in[0], attrs(), unitSlots(in[1], in[0], attrs()));
  }
  if (kernel == "conv2d_grad_weight" && operands(2, 1)) { // (x, dy) -> dw
    if (!in[0].shape->empty() && (*in[0].shape)[0] == 0)
      return 0; // an empty batch: dw is zeroed, no columns are built
    if (depthwiseConv(*out[0].shape, attrs()) && in[1].shape->size() == 4)
      return depthwiseBytes(*in[0].shape, *in[1].shape, *out[0].shape, in[0].dtype, true);
    if (groupedDirectConv(*out[0].shape, attrs()) && in[1].shape->size() == 4)
      return groupedBytes(*in[0].shape, *in[1].shape, *out[0].shape, attrs(), in[0].dtype, true);
    if (winogradConv(*out[0].shape, attrs())) // Winograd.cpp: x's channels in, dy's out
      return winogradBytes(product(*out[0].shape, 1, 2), product(*out[0].shape, 0, 1), *in[1].shape,
                           out[0].dtype, true);
    // a column matrix (and staging matrix) and, but for the first, a dw per run of image
    // blocks of F x patch x (block x outPlane) multiply-adds (GradKernels.cpp convGradWeight)
    uint64_t runs = 1;
    if (!in[0].shape->empty() && in[1].shape->size() == 4 && out[0].shape->size() == 4) {
      const uint64_t group = uint64_t(std::max<int64_t>(attrs().getInt("group", 1), 1));
      const uint64_t batch = product(*in[0].shape, 0, 1), block = imageBlock(attrs(), batch);
      const uint64_t columns = saturatingMul(block, product(*in[1].shape, 2, 4));
      runs = convGradWeightRowPanels(clampedInt64(product(*out[0].shape, 0, 1) / group),
                                     clampedInt64(columns))
                 ? 1
                 : slotsFor(imageBlocks(batch, block), saturatingMul(numel(out[0]), columns));
    }
    return saturatingAdd(convColumns(out[0], in[1], attrs(), runs),
                         runs > 1 ? chunk(saturatingMul(numel(out[0]), runs - 1),
                                          dtypeSize(out[0].dtype))
                                  : 0);
  }
  if (kernel == "max_pool2d_grad" && operands(2, 1)) { // the argmax of each window of a plane
    if (in[0].shape->size() != 4 || in[1].shape->size() != 4) // per chunk: maxPoolGradSlots
      return 0;
    uint64_t outPlane = product(*in[1].shape, 2, 4);
    int64_t slots =
        maxPoolGradSlots(clampedInt64(product(*in[0].shape, 0, 2)),
                         clampedInt64(saturatingAdd(product(*in[0].shape, 2, 4), outPlane)));
    return chunk(saturatingMul(outPlane, uint64_t(slots)), 8);
  }
  if ((kernel == "layer_norm_grad" || kernel == "rms_norm_grad") && operands(1, 2)) {
    // (x, scale, dy) -> (dx, dscale, dbias?): a double copy of each parameter gradient per
    // chunk of rows (normGradSlots).
    size_t axis;
    const std::vector<int64_t> &x = *in[0].shape;
    if (!axisOf(attrs(), -1, x.size(), axis))
      return 0;
    uint64_t rows = product(x, 0, axis), n = product(x, axis, x.size());
    uint64_t slots = uint64_t(normGradSlots(clampedInt64(rows), clampedInt64(n)));
    uint64_t sums = chunk(saturatingMul(saturatingMul(n, slots), out.size() - 1), 8);
    if (!isHalfType(in[0].dtype))
      return sums;
    // bf16/f16: the scale widened, then a row of x, dy and dx in f32 per chunk
    return saturatingAdd(sums, chunk(saturatingMul(n, saturatingAdd(1, saturatingMul(3, slots))), 4));
  }
  if (kernel == "gather_grad" && operands(2, 1) && isHalfType(out[0].dtype)) {
    // the normalised indices, then an f32 tile of gatherGradTileRows rows (GradKernels.cpp)
    size_t axis;
    const std::vector<int64_t> &y = *out[0].shape;
    if (!axisOf(attrs(), 0, y.size(), axis))
      return 0;
    uint64_t inner = product(y, axis + 1, y.size());
    uint64_t rows = uint64_t(gatherGradTileRows(y[axis], clampedInt64(inner)));
    return saturatingAdd(chunk(numel(in[1]), 8),
                         chunk(std::max<uint64_t>(saturatingMul(rows, inner), 1), 4));
  }
  if ((kernel == "gather" || kernel == "gather_grad") && operands(2, 1)) // normalised indices
    return chunk(numel(in[1]), 8);
  if ((kernel == "reduce_sum" || kernel == "reduce_mean" || kernel == "reduce_prod") &&
      operands(1, 1)) // accumulators: double for floats, uint64 for integers; per block of rows
    return chunk(saturatingMul(numel(out[0]), reduceSlots(in[0], out[0], attrs())), 8);
  if (kernel == "fused_elementwise") { // a double accumulator per reduced result's element
    // The iteration shape: every operand broadcast together (right-aligned; a dimension of 0
    // against 1 is 0), as the kernel checks they do.
    std::vector<int64_t> shape;
    for (const std::vector<OperandType> *operands : {&in, &out})
      for (const OperandType &t : *operands) {
        const std::vector<int64_t> &dims = *t.shape;
        if (dims.size() > shape.size())
          shape.insert(shape.begin(), dims.size() - shape.size(), 1);
        for (size_t d = 0; d < dims.size(); ++d) {
          int64_t &at = shape[shape.size() - dims.size() + d];
          at = at == 0 || dims[d] == 0 ? 0 : std::max(at, dims[d]);
        }
      }
    const int64_t iteration = clampedInt64(product(shape, 0, shape.size()));
    const std::vector<int64_t> &reductions = attrs().getInts("reductions");
    uint64_t bytes = 0;
    for (size_t o = 0; o < reductions.size() && o < out.size(); ++o)
      if (reductions[o] != 0) {
        // A sum over outer dimensions (its last axis the iteration shape's) keeps a copy per
        // chunk of a split (fusedSumSlots).
        const std::vector<int64_t> &y = *out[o].shape;
        bool outer = shape.empty() || (!y.empty() && y.back() == shape.back());
        uint64_t slots =
            outer ? uint64_t(fusedSumSlots(iteration, clampedInt64(numel(out[o])))) : 1;
        bytes = saturatingAdd(bytes, chunk(saturatingMul(numel(out[o]), slots), 8));
      }
    return bytes;
  }
  if ((kernel == "reduce_max" || kernel == "reduce_min") && operands(1, 1))
    return chunk(saturatingMul(numel(out[0]), reduceSlots(in[0], out[0], attrs())),
                 valueBytes(in[0].dtype));
  if ((kernel == "argmax" || kernel == "argmin") && operands(1, 1)) { // best value per column
    size_t axis;
    if (!axisOf(attrs(), 0, in[0].shape->size(), axis))
      return 0;
    return chunk(product(*in[0].shape, axis + 1, in[0].shape->size()), valueBytes(in[0].dtype));
  }
  if ((kernel == "softmax" || kernel == "log_softmax") && operands(1, 1)) {
    size_t axis;
    if (!axisOf(attrs(), -1, in[0].shape->size(), axis))
      return 0;
    uint64_t inner = product(*in[0].shape, axis + 1, in[0].shape->size());
    if (inner == 1) // softmax along the innermost axis works row by row
      return 0;
    return saturatingAdd(chunk(inner, dtypeSize(in[0].dtype)), chunk(inner, 8));
  }
  if ((kernel == "attention" && (operands(3, 2) || operands(4, 2))) ||
      (kernel == "attention_grad" && (operands(6, 3) || operands(7, 3)))) {
    // AttentionKernels.cpp: a block of query rows' scores (the gradient: and of their
    // gradients), attentionWorkspaceRows rows of T, T = k's dimension 1.
    const std::vector<int64_t> &q = *in[0].shape, &k = *in[1].shape;
    if (q.size() != 4 || k.size() != 4 || product(q, 0, 4) == 0 || product(k, 0, 4) == 0)
      return 0;
    uint64_t rows = uint64_t(attentionWorkspaceRows(q[1]));
    uint64_t block = chunk(saturatingMul(rows, product(k, 1, 2)), 4);
    return kernel == "attention" ? block : saturatingAdd(block, block);
  }
  bool loss = kernel == "softmax_cross_entropy" || kernel == "nll_loss";
  bool lossGrad = kernel == "softmax_cross_entropy_grad" || kernel == "nll_loss_grad";
  if ((loss || lossGrad) && operands(1, 0)) {
    const std::vector<int64_t> &x = *in[0].shape;
    if (x.size() < 2)
      return 0;
    // LossTargets: a class and a weight per position; the loss: a loss per position too.
    uint64_t positions = saturatingMul(product(x, 0, 1), product(x, 2, x.size()));
    uint64_t bytes = saturatingAdd(chunk(positions, 8), chunk(positions, 8));
    return loss ? saturatingAdd(bytes, chunk(positions, 8)) : bytes;
  }
  return 0;
}

/// runStagedInF32's workspace: an f32 copy of every half tensor (at least one element),
/// inputs then outputs, then the f32 kernel's own workspace.
uint64_t stagedBytes(std::string_view kernel, const std::vector<OperandType> &inputs,
                     const std::vector<OperandType> &outputs, const LazyAttrs &attrs) {
  uint64_t bytes = 0;
  std::vector<OperandType> in = inputs, out = outputs;
  for (auto *list : {&in, &out})
    for (OperandType &t : *list)
      if (isHalfType(t.dtype)) {
        bytes = saturatingAdd(bytes, chunk(std::max<uint64_t>(numel(t), 1), 4));
        t.dtype = DType::F32;
      }
  return saturatingAdd(bytes, computeBytes(kernel, in, out, attrs));
}

/// runStagedInF32Entries's workspace: of the half tensors it slices along dimension 0 (every
/// operand but the inputs in `wholeInputs`, a bit each, and with `wholeOutputs` the outputs:
/// conv2d_grad_weight's f32 dw, GradKernels.cpp halfConvGradWeight), batchStageEntries
/// entries each (sized by the largest entry among them), of the others whole copies; then
/// the f32 kernel's own workspace for a slice of that many entries (the last one, if
/// smaller, needs no more). An empty batch runs no slice.
uint64_t batchStagedBytes(std::string_view kernel, const std::vector<OperandType> &inputs,
                          const std::vector<OperandType> &outputs, const LazyAttrs &attrs,
                          uint64_t wholeInputs, bool wholeOutputs = false) {
  auto sliced = [&](const std::vector<OperandType> *list, size_t i) {
    if (list == &outputs)
      return !wholeOutputs && !(*list)[i].shape->empty();
    return !stagedWhole(wholeInputs, i) && !(*list)[i].shape->empty();
  };
  int64_t batch = -1;
  uint64_t largest = 0;
  for (const auto *list : {&inputs, &outputs})
    for (size_t i = 0; i < list->size(); ++i)
      if (sliced(list, i)) {
        const OperandType &t = (*list)[i];
        batch = batch < 0 ? (*t.shape)[0] : batch;
        if (isHalfType(t.dtype) && batch > 0)
          largest = std::max(largest, numel(t) / uint64_t(batch));
      }
  batch = std::max<int64_t>(batch, 0);
  const int64_t entries = batchStageEntries(batch, clampedInt64(largest));
  // The copies, and the operands as a slice of `entries` shows them to the f32 kernel.
  uint64_t bytes = 0;
  std::vector<std::vector<int64_t>> shapes;
  shapes.reserve(inputs.size() + outputs.size());
  std::vector<OperandType> in = inputs, out = outputs;
  for (auto *list : {&in, &out})
    for (size_t i = 0; i < list->size(); ++i) {
      OperandType &t = (*list)[i];
      const bool slice = sliced(list == &in ? &inputs : &outputs, i);
      if (isHalfType(t.dtype)) {
        const uint64_t elements =
            slice ? saturatingMul(uint64_t(entries), batch == 0 ? 0 : numel(t) / uint64_t(batch))
                  : numel(t);
        bytes = saturatingAdd(bytes, chunk(std::max<uint64_t>(elements, 1), 4));
        t.dtype = DType::F32;
      }
      if (slice) {
        shapes.push_back(*t.shape);
        shapes.back()[0] = entries;
        t.shape = &shapes.back();
      }
    }
  return entries == 0 ? bytes : saturatingAdd(bytes, computeBytes(kernel, in, out, attrs));
}

} // namespace

uint64_t kernelWorkspaceBytes(std::string_view kernel, const std::vector<OperandType> &inputs,
                              const std::vector<OperandType> &outputs, const LazyAttrs &attrs) {
  bool half = false;
  for (const auto *list : {&inputs, &outputs})
    for (const OperandType &t : *list)
      half |= isHalfType(t.dtype);
  if (half && isHalfMap(kernel))
    return inputs.size() == 1 && outputs.size() == 1 && inputs[0].dtype == outputs[0].dtype
               ? chunk(uint64_t(halfMapPiece(clampedInt64(numel(inputs[0])))), 4)
               : 0; // the kernel rejects the call
  if (half && isHalfBinary(kernel))
    return inputs.size() == 2 && outputs.size() == 1
               ? saturatingMul(chunk(uint64_t(halfMapPiece(clampedInt64(numel(outputs[0])))), 4),
                               2)
               : 0; // the kernel rejects the call
  if (kernel == "weight_ema") {
    // Its bf16 / f16 averages one at a time through two f32 buffers (param, average) of the
    // largest of them.
    uint64_t most = 0;
    for (const OperandType &t : outputs)
      if (isHalfType(t.dtype) && t.shape)
        most = std::max<uint64_t>(most, std::max<uint64_t>(numel(t), 1));
    return most == 0 ? 0 : saturatingMul(chunk(most, 4), 2);
  }
  if (!half || !isStaged(kernel))
    return computeBytes(kernel, inputs, outputs, attrs);
  // softmax_cross_entropy(_grad) of half logits [N, C, d...] in plait-fuse-loss-cast's form,
  // the class weights (when given) after its operands.
  const size_t operands = kernel == "softmax_cross_entropy_grad" ? 3 : 2;
  const DType *weight = inputs.size() > operands ? &inputs[operands].dtype : nullptr;
  bool rows = inputs.size() >= operands && outputs.size() == 1 && inputs[0].shape &&
              inputs[0].shape->size() >= 2 &&
              ((kernel == "softmax_cross_entropy_grad" &&
                halfLossGradRows(inputs[0].dtype, inputs[2].dtype, outputs[0].dtype, weight)) ||
               (kernel == "softmax_cross_entropy" &&
                halfLossRows(inputs[0].dtype, outputs[0].dtype, weight)));
  if (rows) {
    // The targets (computeBytes), then the slots' rows of C floats, a slot per chunk of the
    // N x D positions.
    const std::vector<int64_t> &x = *inputs[0].shape;
    const uint64_t positions = saturatingMul(product(x, 0, 1), product(x, 2, x.size()));
    uint64_t slots = uint64_t(lossRowSlots(clampedInt64(positions)));
    return saturatingAdd(computeBytes(kernel, inputs, outputs, attrs),
                         chunk(saturatingMul(slots, product(x, 1, 2)), 4));
  }
  if (int64_t whole = batchStagedWholeInputs(kernel);
      whole >= 0 && !inputs.empty() && !inputs[0].shape->empty())
    // runStagedInF32Entries: attention, convolutions, pools; each half tensor's copy holds
    // batchStageEntries entries, but the inputs staged whole.
    return batchStagedBytes(kernel, inputs, outputs, attrs, uint64_t(whole));
  if (isRowWise(kernel) && !inputs.empty() && inputs[0].shape) {
    // runStagedInF32Rows along an axis past dimension 0: batchStageEntries entries of each
    // half tensor but the lower-rank inputs (a norm's scale and bias), which are staged whole.
    // (The kernels take no output of a lower rank.)
    const size_t rank = inputs[0].shape->size();
    size_t axis;
    if (axisOf(attrs(), -1, rank, axis) && rowWiseStaged(int64_t(axis), int64_t(rank)))
      return batchStagedBytes(kernel, inputs, outputs, attrs,
                              lowerRankInputs(inputs.size(), [&](size_t i) {
                                return inputs[i].shape->size();
                              }));
  }
  if (kernel == "conv2d_grad_weight" && inputs.size() == 2 && outputs.size() == 1 &&
      !inputs[0].shape->empty())
    // halfConvGradWeight: slices of x and dy, one f32 dw summed over them.
    return batchStagedBytes(kernel, inputs, outputs, attrs, 0, true);
  // runStagedInF32: an f32 copy of every whole half tensor.
  return stagedBytes(kernel, inputs, outputs, attrs);
}

} // namespace plait::rt
