// How much scratch memory (workspace) each CPU kernel takes for one call, as a pure function
// of its operand types and attributes. The compiler declares it in the plan (per instruction
// and per rank), the loader recomputes and checks it, and the kernels take exactly these
// chunks from KernelCall::workspace. MLIR-free and runtime-free: it links on its own
// (PlaitKernelWorkspace) into the plan writer.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "runtime/Attrs.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt {

/// The query rows an attention / attention_grad kernel scores at once: its workspace holds
/// this many rows of scores (and of their gradients), never a whole [S, T] matrix.
inline constexpr int64_t kAttentionRowBlock = 256;

/// The query rows an attention kernel's workspace holds: kAttentionRowBlock, or fewer for
/// short sequences, but room for 4 whole heads of them, so that heads split across threads
/// (AttentionKernels.cpp) still score a whole head per block.
inline int64_t attentionWorkspaceRows(int64_t queries) {
  return queries < kAttentionRowBlock / 4 ? 4 * queries : kAttentionRowBlock;
}

/// A bf16/f16 GEMM (matmul, gemm; Gemm.cpp halfGemmRowMajor) runs in f32 tile by tile: each
/// tile of C, at most kHalfGemmTileRows x kHalfGemmTileCols, is summed in f32 over panels of at
/// most kHalfGemmTileDepth of the contracted dimension, from f32 copies of that panel of A and
/// of B, and rounded once into C. Its workspace is those three f32 blocks, whatever the size
/// of the operands: a staged f32 copy of a GPT's [tokens, vocabulary] logits was most of a
/// bf16 plan's workspace.
inline constexpr int64_t kHalfGemmTileRows = 512;
inline constexpr int64_t kHalfGemmTileCols = 1024;
inline constexpr int64_t kHalfGemmTileDepth = 1024;
struct HalfGemmTile {
  int64_t rows = 0, cols = 0, depth = 0;
  /// Floats of each block, rounded up to 16 (64 bytes), so that each block is aligned.
  static int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }
  int64_t aFloats() const { return padded(rows * depth); }
  int64_t bFloats() const { return padded(depth * cols); }
  int64_t cFloats() const { return padded(rows * cols); }
  /// The workspace of one GEMM call: 0 when C is empty (nothing is computed).
  int64_t floats() const { return rows == 0 || cols == 0 ? 0 : aFloats() + bFloats() + cFloats(); }
};
inline HalfGemmTile halfGemmTile(int64_t m, int64_t n, int64_t k) {
  auto clamp = [](int64_t v, int64_t most) { return v < 0 ? 0 : v < most ? v : most; };
  return {clamp(m, kHalfGemmTileRows), clamp(n, kHalfGemmTileCols),
          clamp(k, kHalfGemmTileDepth)};
}

/// bf16/f16 attention and attention_grad stage through f32 a few batch entries at a time
/// (runStagedInF32Entries), and so do the row-wise kernels (rowWiseStaged): as many as keep
/// each staged copy within kBatchStageElements floats, at least one. `largestEntry`: the most
/// elements one batch entry of any of their sliced half operands holds. 0 for an empty batch.
inline constexpr int64_t kBatchStageElements = int64_t(1) << 20;
inline int64_t batchStageEntries(int64_t batch, int64_t largestEntry) {
  int64_t entries = largestEntry > 0 ? kBatchStageElements / largestEntry : batch;
  entries = entries < 1 ? 1 : entries;
  return batch < entries ? (batch < 0 ? 0 : batch) : entries;
}

/// Whether input `i` is staged whole under `wholeInputs`, a bit per input (the batch staging
/// of KernelSupport.h runStagedInF32Entries and of the workspace rule).
inline bool stagedWhole(uint64_t wholeInputs, size_t i) {
  return i < 64 && (wholeInputs >> i & 1) != 0;
}
/// The inputs of a lower rank than input 0, a bit each (a norm's scale and bias, which a
/// row-wise kernel stages whole); `rankOf(i)` gives input i's rank.
template <typename RankOf> uint64_t lowerRankInputs(size_t inputs, RankOf &&rankOf) {
  uint64_t mask = 0;
  for (size_t i = 1; i < inputs && i < 64; ++i)
    if (rankOf(i) < rankOf(0))
      mask |= uint64_t(1) << i;
  return mask;
}

/// The bf16/f16 kernels that stage through f32 a few entries of dimension 0 at a time
/// whatever their attributes (runStagedInF32Entries): attention and its gradient, conv2d and
/// conv2d_grad_input (an image's result needs only that image), and the pools and their
/// gradients (planes). Returns the inputs they stage whole, a bit each (attention's step,
/// conv2d's weight and bias, conv2d_grad_input's weight), or -1 for any other kernel.
/// conv2d_grad_weight sums over the images and stays staged whole.
inline int64_t batchStagedWholeInputs(std::string_view kernel) {
  if (kernel == "attention") // its step (with dropout)
    return 0b1000;
  if (kernel == "attention_grad")
    return 0b1000000;
  if (kernel == "max_pool2d" || kernel == "avg_pool2d" || kernel == "max_pool2d_grad" ||
      kernel == "avg_pool2d_grad")
    return 0;
  if (kernel == "conv2d")
    return 0b110;
  if (kernel == "conv2d_grad_input") // (dy, w) -> dx
    return 0b10;
  return -1;
}

/// softmax, log_softmax, layer_norm, rms_norm, add_layer_norm and add_rms_norm of bf16/f16
/// operands of rank `rank` along (normalised) `axis`: when the axis is not dimension 0, no
/// row crosses dimension 0, and they stage a few of its entries at a time
/// (runStagedInF32Entries, batchStageEntries); a norm's scale and bias, of a lower rank, are
/// staged whole. Along dimension 0 they stage whole copies (runStagedInF32).
inline bool rowWiseStaged(int64_t axis, int64_t rank) { return rank >= 2 && axis >= 1; }

/// A bf16/f16 gather_grad (an embedding's gradient; GradKernels.cpp) sums its result this
/// many rows at a time in an f32 tile of at most kGatherGradTileFloats floats (at least one
/// row), instead of in an f32 copy of the whole result. `inner`: elements per row.
inline constexpr int64_t kGatherGradTileFloats = int64_t(1) << 18;
inline int64_t gatherGradTileRows(int64_t size, int64_t inner) {
  int64_t rows = inner > 0 ? kGatherGradTileFloats / inner : size;
  rows = rows < 1 ? 1 : rows;
  return rows < size ? rows : (size < 0 ? 0 : size);
}

/// A bf16/f16 unary map (exp ... sign, gelu; UnaryKernels.cpp) computes in f32 pieces of at
/// most kHalfMapPieceElements elements in one workspace buffer (at least one element); a
/// binary op (add ... greater_equal; BinaryKernels.cpp) in pieces of its result of as many,
/// a buffer for each operand.
inline constexpr int64_t kHalfMapPieceElements = int64_t(1) << 20;
inline int64_t halfMapPiece(int64_t n) {
  return n < 1 ? 1 : n < kHalfMapPieceElements ? n : kHalfMapPieceElements;
}

/// Accumulator copies a fused kernel keeps for a result it sums over outer dimensions (a bias
/// gradient), one per chunk when its tiles are split across threads (FusedKernels.cpp): each
/// chunk sums its rows into its own copy, and the copies are added in chunk order after.
/// kFusedSumSlots copies when the iteration shape has at least kFusedSumSplitElements
/// elements (two of Parallel.h's kElementGrain) and the result at most kFusedSumSplitMax;
/// otherwise one, and the kernel's walk stays on one thread.
inline constexpr int64_t kFusedSumSlots = 4;
inline constexpr int64_t kFusedSumSplitElements = 2 * 16384;
inline constexpr int64_t kFusedSumSplitMax = 65536;
inline int64_t fusedSumSlots(int64_t iterationNumel, int64_t resultNumel) {
  return iterationNumel >= kFusedSumSplitElements && resultNumel <= kFusedSumSplitMax
             ? kFusedSumSlots
             : 1;
}

/// Column matrices conv2d and its adjoints keep (ConvSupport.h forEachConvUnit,
/// GradKernels.cpp convGradWeight): one per chunk when their units (conv2d, conv2d_grad_input:
/// (image block, group) pairs; conv2d_grad_weight: image blocks; convImageBlock) of
/// `unitWork` multiply-adds each split
/// across threads, each chunk building and multiplying its own. As many as the units make
/// chunks of Parallel.h's kMultiplyAddGrain, at most kConvColumnSlots; 1 (no split) below two.
inline constexpr int64_t kConvColumnSlots = 4;
inline int64_t convColumnSlots(int64_t units, int64_t unitWork) {
  const int64_t grain = cpu::grainFor(cpu::kMultiplyAddGrain, unitWork);
  const int64_t chunks = units / grain;
  return chunks < 2 ? 1 : (chunks < kConvColumnSlots ? chunks : kConvColumnSlots);
}

/// A depthwise convolution (w [C, 1, kH, kW] in C groups; ConvSupport.h depthwiseConv2d and
/// its adjoints) computes kDepthwiseChannelBlock channels at a time, their planes transposed
/// into the workspace as [pixel][channel] so that every loop runs over the block's channels
/// (one image's planes are too small to vectorise: ConvNeXt's 24x24 to 3x3). Its units are
/// (image, block) pairs for conv2d and conv2d_grad_input and blocks for conv2d_grad_weight
/// (its images summed in order within a unit), split across threads as convolution units
/// are, convColumnSlots of them with a workspace slot each. A slot holds `elements` of the
/// kernel's type (the block's input plane and output plane, and for conv2d and
/// conv2d_grad_input its taps) and, for conv2d_grad_weight, `sums` doubles (its taps' sums).
/// Products saturate: a huge shape asks for more workspace than any plan gets.
/// Products and sums of the blocks' sizes, saturating at INT64_MAX (a negative factor too).
inline int64_t blockProduct(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
inline int64_t blockSum(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }
inline constexpr int64_t kDepthwiseChannelBlock = 16;
struct DepthwiseBlocks {
  int64_t units = 0, slots = 1, elements = 0, sums = 0;
  int64_t unitWork = 1; ///< one unit's multiply-adds (lanes included): how its units split
};
inline DepthwiseBlocks depthwiseBlocks(int64_t batch, int64_t channels, int64_t inPlane,
                                       int64_t outPlane, int64_t taps, bool gradWeight) {
  auto mul = blockProduct, add = blockSum;
  DepthwiseBlocks d;
  const int64_t blocks =
      channels / kDepthwiseChannelBlock + (channels % kDepthwiseChannelBlock != 0);
  d.units = gradWeight ? blocks : mul(batch, blocks);
  d.unitWork = std::max<int64_t>(
      mul(mul(mul(taps, outPlane), kDepthwiseChannelBlock), gradWeight ? batch : 1), 1);
  d.slots = convColumnSlots(d.units, d.unitWork);
  d.elements = mul(add(add(inPlane, outPlane), gradWeight ? 0 : taps), kDepthwiseChannelBlock);
  d.sums = gradWeight ? mul(taps, kDepthwiseChannelBlock) : 0;
  return d;
}

/// A grouped convolution of at most kGroupedDirectLanes input channels and filters a group
/// (RegNet's group width 8, ResNeXt-50's 4 to 16; not a depthwise one, computed as above):
/// as GEMMs it is an im2col and a BLAS call of at most 16 rows per (image, group), which ran
/// at 7-10 GFLOP/s against 50-60 for ResNet's. With `direct` (plait-conv-image-blocks sets it;
/// --no-direct-grouped-conv) conv2d and its adjoints compute it directly (ConvSupport.h
/// groupedConv2d), a group's planes transposed into the workspace as [pixel][lane], the lanes
/// its filters (conv2d, conv2d_grad_weight) or its input channels (conv2d_grad_input), and its
/// taps as [tap][lane][lane]. Units: (image, group) pairs for conv2d and conv2d_grad_input,
/// groups for conv2d_grad_weight (the images summed in order within a unit), with slots as the
/// depthwise blocks' (`elements`: the input and output planes of kGroupedDirectLanes lanes a
/// pixel, and but for conv2d_grad_weight the taps; `sums`: its taps' f64 sums).
inline constexpr int64_t kGroupedDirectLanes = 16;
inline bool groupedDirectShape(int64_t group, int64_t groupChannels, int64_t filtersPerGroup) {
  return group > 1 && groupChannels >= 1 && filtersPerGroup >= 1 &&
         groupChannels <= kGroupedDirectLanes && filtersPerGroup <= kGroupedDirectLanes &&
         !(groupChannels == 1 && filtersPerGroup == 1);
}
/// Where the direct kernels beat im2col and GEMMs (plait-conv-grouped-direct marks only
/// those): output planes of at most kGroupedDirectPlane pixels, or groups of 16 filters (every
/// lane used). On larger planes a GEMM per group is wide and the direct kernels' unused lanes
/// cost more: training steps of 4 grouped 3x3 layers of 128 channels at 24x24, one thread,
/// direct / GEMMs: 1.40 with 4 channels a group, 0.99 with 8, 0.63 with 16; at 12x12, 0.67
/// with 4 and 0.64 with 8 (bench/README.md).
inline constexpr int64_t kGroupedDirectPlane = 256;
inline bool groupedDirectPays(int64_t filtersPerGroup, int64_t outPlane) {
  return outPlane <= kGroupedDirectPlane || filtersPerGroup >= kGroupedDirectLanes;
}
inline DepthwiseBlocks groupedBlocks(int64_t batch, int64_t group, int64_t inPlane,
                                     int64_t outPlane, int64_t taps, bool gradWeight) {
  auto mul = blockProduct, add = blockSum;
  constexpr int64_t L = kGroupedDirectLanes;
  DepthwiseBlocks d;
  d.units = gradWeight ? group : mul(batch, group);
  d.unitWork = std::max<int64_t>(mul(mul(mul(taps, outPlane), L * L), gradWeight ? batch : 1), 1);
  d.slots = convColumnSlots(d.units, d.unitWork);
  d.elements = add(mul(add(inPlane, outPlane), L), gradWeight ? 0 : mul(taps, L * L));
  d.sums = gradWeight ? mul(taps, L * L) : 0;
  return d;
}

/// What a direct convolution (a depthwise one, or a grouped one with `direct`) does, for the
/// cost model and plait-calibrate's "conv_depthwise" and "conv_grouped" classes, in vectors of
/// kGroupedDirectLanes lanes (a block's channels, a group's filters or channels): `multiplyAdds`,
/// the vector multiply-adds of its inner loops (each output pixel's taps, for a grouped convolution
/// over the group's channels, or filters for the input gradient; a depthwise input gradient visits
/// each input pixel's taps, those the stride skips too; a depthwise weight gradient's are
/// counted twice: it sums in f64), and `moved`, the vectors it lays out in the workspace
/// and back (each unit's planes, transposed a value at a time; the taps; the weight
/// gradients' f64 sums). Their ratio is what tells the two kinds apart: 4.5 multiply-adds a
/// moved vector for a 3x3 depthwise layer, 36 for a group of 8.
struct DirectConvWork {
  double multiplyAdds = 0, moved = 0;
};
enum class ConvKind { Forward, GradInput, GradWeight };
/// The kind of conv2d, conv2d_grad_input or conv2d_grad_weight (another name: GradWeight).
inline ConvKind convKindOf(std::string_view kernel) {
  return kernel == "conv2d"              ? ConvKind::Forward
         : kernel == "conv2d_grad_input" ? ConvKind::GradInput
                                         : ConvKind::GradWeight;
}
inline DirectConvWork directConvWork(ConvKind kind, bool depthwise, double batch, double channels,
                                     double filters, double group, double inPlane, double outPlane,
                                     double taps) {
  constexpr double L = double(kGroupedDirectLanes);
  DirectConvWork w;
  if (depthwise) {
    const double units = batch * std::ceil(channels / L);
    w.multiplyAdds = units * (kind == ConvKind::GradInput ? inPlane : outPlane) * taps *
                     (kind == ConvKind::GradWeight ? 2 : 1);
    w.moved = units * (inPlane + outPlane + taps);
  } else {
    const double units = batch * group;
    const double lanesSummed = (kind == ConvKind::GradInput ? filters : channels) / group;
    w.multiplyAdds = units * outPlane * taps * lanesSummed;
    w.moved = units * (inPlane + outPlane +
                       (kind == ConvKind::GradWeight ? taps * channels / group : taps * L));
  }
  return w;
}

/// Images whose columns conv2d and its adjoints multiply in one GEMM (their `image_block`,
/// which plait-compile's plait-conv-image-blocks sets from this): for output planes of at
/// most kConvBlockPlane pixels, as many as fill kConvBlockColumns columns, at most the batch;
/// otherwise 1, a GEMM per image. A deep layer's small planes make GEMMs a few columns wide,
/// which OpenBLAS runs slowly: ResNet-18's layer4 at 96x96 (9 pixels) takes half the time as
/// one GEMM of 8 images (forward and input gradient), layer3 (36) 0.8 of it, while planes of
/// 144 or 576 pixels gain nothing (bench/README.md, conv_image_blocks.py). A pointwise convolution
/// (`pointwise`: 1x1, stride 1, no padding) reads each image's planes as its columns without
/// copying them; gathering a block's costs what its wider GEMM saves, so it keeps a GEMM per image.
/// The pass also leaves grouped convolutions at 1 (passes/fusion/ConvImageBlocks.cpp); the kernels
/// take any block.
inline constexpr int64_t kConvBlockPlane = 64;
inline constexpr int64_t kConvBlockColumns = 512;
inline int64_t convImageBlock(int64_t batch, int64_t outPlane, bool pointwise) {
  if (pointwise || batch <= 1 || outPlane <= 0 || outPlane > kConvBlockPlane)
    return 1;
  const int64_t block = (kConvBlockColumns + outPlane - 1) / outPlane;
  return block < batch ? block : batch;
}

/// conv2d and conv2d_grad_input by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
/// 2016; runtime/cpu/Winograd.h; conv2d_grad_weight by its transpose: winogradGradChunks),
/// where plait-compile's plait-conv-winograd sets `winograd` on them: a 3x3 window of stride 1
/// and dilation 1 in one group. Each 2x2 block of outputs (a tile) takes 16 multiply-adds per
/// input channel instead of 36, as 16 GEMMs of [outChannels, inChannels] x [inChannels, tiles],
/// between transforms of the input tiles and of the products. The tiles go in chunks of whole
/// rows of tiles, about kWinogradChunkTiles, each chunk's transformed input and products in a
/// workspace slot (as many slots as convColumnSlots gives the chunks), after the transformed
/// weights. Worth it (winogradPays) where the multiply-adds saved (in x out channels a tile)
/// outweigh the transforms ((in + out) channels a tile): in x out at least
/// kWinogradChannelRatio x (in + out), as 32 in and 32 out or 128 in and 32 out give; and on
/// output planes of at least kWinogradMinPlane pixels a side. Measured on ResNet-18 and
/// DenseNet-121 at 96x96, batch 8 (bench/README.md), with the weights' transform vectorised
/// over channels: ResNet-18's 24x24, 12x12 and 6x6 layers at 0.55-0.87 of im2col's time in all
/// three kernels, DenseNet-121's step 0.81x; ResNet-18's 3x3 planes (2x2 tiles cover 16 pixels
/// for 9) took 1.75x in the weight gradient, so they keep im2col. The windows it computes
/// (ConvShape::winograd, Workspace.cpp, the cost model and the pass all ask this): 3x3,
/// stride 1, dilation 1, one group.
inline bool winogradWindow(int64_t kernelH, int64_t kernelW, int64_t strideH, int64_t strideW,
                           int64_t dilationH, int64_t dilationW, int64_t group) {
  return kernelH == 3 && kernelW == 3 && strideH == 1 && strideW == 1 && dilationH == 1 &&
         dilationW == 1 && group == 1;
}
inline constexpr int64_t kWinogradChunkTiles = 128;
inline constexpr int64_t kWinogradChannelRatio = 16;
inline constexpr int64_t kWinogradMinPlane = 6;
inline bool winogradPays(int64_t inChannels, int64_t outChannels, int64_t outHeight,
                         int64_t outWidth) {
  constexpr int64_t kMax = int64_t(1) << 24; // no overflow below
  return inChannels > 0 && outChannels > 0 && inChannels < kMax && outChannels < kMax &&
         inChannels * outChannels >= kWinogradChannelRatio * (inChannels + outChannels) &&
         outHeight >= kWinogradMinPlane && outWidth >= kWinogradMinPlane;
}
/// How the Winograd kernel cuts `tileRows` rows of `tilesWide` tiles (all positive): chunks
/// of `rows` whole rows (about kWinogradChunkTiles tiles; the last may hold fewer), `tiles`
/// tiles each, `count` of them, and the workspace `slots` convColumnSlots gives them, each
/// chunk 16 x in x out x tiles multiply-adds (counted saturating: any shape a plan names).
struct WinogradChunks {
  int64_t rows, tiles, count, slots;
};
inline WinogradChunks winogradChunks(int64_t tilesWide, int64_t tileRows, int64_t inChannels,
                                     int64_t outChannels) {
  WinogradChunks c;
  c.rows = tilesWide >= kWinogradChunkTiles ? 1 : kWinogradChunkTiles / tilesWide;
  c.rows = c.rows < tileRows ? c.rows : tileRows;
  c.count = tileRows / c.rows + (tileRows % c.rows != 0);
  int64_t tiles = 0, work = 0;
  const bool overflow = __builtin_mul_overflow(c.rows, tilesWide, &tiles) ||
                        __builtin_mul_overflow(tiles, int64_t(16), &work) ||
                        __builtin_mul_overflow(work, inChannels, &work) ||
                        __builtin_mul_overflow(work, outChannels, &work);
  c.tiles = tiles;
  c.slots = convColumnSlots(c.count, overflow ? INT64_MAX : work);
  return c;
}

/// conv2d_grad_weight by Winograd (Winograd.h winogradConvGradWeight3x3, where the pass sets
/// `winograd` on it as on the forward) sums the 16 products of every tile into one
/// 16 x outChannels x inChannels workspace, chunk after chunk of whole rows of tiles, one
/// chunk's transformed x and dy at a time (`slots` is 1): as many tiles as keep those two
/// within kWinogradGradChunkElements (16 x (in + out) a tile), at least a row. Measured on
/// ResNet-18 at 96x96, batch 8 (bench/README.md): its 128-channel layer's weight gradients took
/// 0.62x im2col's time with chunks of 128 tiles, 0.8x with 512 or more; its 64-channel
/// layer's about 0.7x with 128 to 1024.
inline constexpr int64_t kWinogradGradChunkElements = int64_t(1) << 19;
inline WinogradChunks winogradGradChunks(int64_t tilesWide, int64_t tileRows, int64_t inChannels,
                                         int64_t outChannels) {
  constexpr int64_t kMax = int64_t(1) << 24; // channels past it: a row a chunk
  const int64_t perTile = inChannels < kMax && outChannels < kMax ? 16 * (inChannels + outChannels)
                                                                  : kWinogradGradChunkElements;
  const int64_t budget = kWinogradGradChunkElements / (perTile > 0 ? perTile : 1);
  WinogradChunks c;
  c.rows = tilesWide >= budget ? 1 : budget / tilesWide;
  c.rows = c.rows < tileRows ? c.rows : tileRows;
  c.count = tileRows / c.rows + (tileRows % c.rows != 0);
  c.tiles = c.rows * tilesWide; // one row, or at most the budget's tiles
  c.slots = 1;
  return c;
}

/// conv2d_grad_weight (GradKernels.cpp) sums each block of images' dw_g = dy[block, g]
/// im2col(x[block, g])^T into dw (a block: convImageBlock images, their columns side by side,
/// `columns` in all). When a group's dw is larger than a block's column matrix (more filters
/// per group than the block's output pixels, kConvGradWeightBlockRows of them at least: a
/// deep layer's small images), it takes the blocks in order into dw itself, each GEMM split
/// into convGradWeightPanelRows row panels (one column matrix, no copies of dw). Otherwise
/// the blocks are cut into convColumnSlots runs, each with its column matrix and, but for the
/// first, its own copy of dw, added after. Either way the bits do not depend on the thread
/// count. Returns the runs (1 for the row-panel form).
inline constexpr int64_t kConvGradWeightBlockRows = 32;
/// The row panels' height: a multiple of kConvGradWeightBlockRows cutting the group's filters
/// into at most kConvColumnSlots panels (ResNet-18's layer4 weight gradient of 8 images takes
/// 0.79 of the time in panels of 128 filters as in panels of 32: bench/README.md).
inline int64_t convGradWeightPanelRows(int64_t filtersPerGroup) {
  const int64_t quarter = (filtersPerGroup + kConvColumnSlots - 1) / kConvColumnSlots;
  return (quarter + kConvGradWeightBlockRows - 1) / kConvGradWeightBlockRows *
         kConvGradWeightBlockRows;
}
inline bool convGradWeightRowPanels(int64_t filtersPerGroup, int64_t columns) {
  return filtersPerGroup > columns && filtersPerGroup >= 2 * kConvGradWeightBlockRows;
}
inline int64_t convGradWeightRuns(int64_t blocks, int64_t blockWork, int64_t filtersPerGroup,
                                  int64_t columns) {
  return convGradWeightRowPanels(filtersPerGroup, columns) ? 1 : convColumnSlots(blocks, blockWork);
}

/// Argmax planes max_pool2d_grad keeps (GradKernels.cpp), one per chunk when its planes split
/// across threads: kMaxPoolGradSlots (at most one per plane) when its planes of
/// `planeElements` (input plane + gradient plane) hold kFusedSumSplitElements or more in all;
/// otherwise one, and its planes stay on one thread.
inline constexpr int64_t kMaxPoolGradSlots = 4;
inline int64_t maxPoolGradSlots(int64_t planes, int64_t planeElements) {
  int64_t elements = 0;
  bool large = __builtin_mul_overflow(planes, planeElements, &elements) ||
               elements >= kFusedSumSplitElements;
  return planes >= 2 && large ? (planes < kMaxPoolGradSlots ? planes : kMaxPoolGradSlots) : 1;
}

/// softmax_cross_entropy_grad of bf16 or f16 [N, C, d...] logits, its result of the logits'
/// dtype, its incoming gradient of theirs or f32 and its class weights (`weight`; null: none)
/// f32 (plait-fuse-loss-cast's form), runs on the half-precision positions (LossKernels.cpp):
/// each of lossRowSlots slots of C floats of workspace takes a position's classes widened,
/// their f32 gradient, and rounds it into the result. Other half-precision calls are staged
/// through f32 copies (runStagedInF32).
inline bool halfLossGradRows(DType input, DType grad, DType out, const DType *weight) {
  bool half = input == DType::BF16 || input == DType::F16;
  return half && out == input && (grad == input || grad == DType::F32) &&
         (!weight || *weight == DType::F32);
}
/// softmax_cross_entropy of bf16 or f16 [N, C, d...] logits with an f32 result and f32 class
/// weights or none (plait-fuse-loss-cast's form of the loss of their cast to f32) runs on the
/// positions the same way: each position's classes widened into a slot, its loss computed as
/// for f32 logits.
inline bool halfLossRows(DType input, DType out, const DType *weight) {
  return (input == DType::BF16 || input == DType::F16) && out == DType::F32 &&
         (!weight || *weight == DType::F32);
}
inline constexpr int64_t kLossRowSlots = 8;
inline int64_t lossRowSlots(int64_t rows) {
  return rows < 1 ? 1 : rows < kLossRowSlots ? rows : kLossRowSlots;
}

/// Chunks of rows a norm gradient (layer_norm_grad, rms_norm_grad; NormalizationKernels.cpp)
/// splits into, each summing its rows' parameter gradients into its own double copy of n
/// elements; the copies are added in chunk order after, so the sums do not depend on the
/// threads. One chunk per kFusedSumSplitElements elements of x, at most kNormGradSlots and
/// at most one per row.
inline constexpr int64_t kNormGradSlots = 16;
inline int64_t normGradSlots(int64_t rows, int64_t n) {
  int64_t elements = 0;
  int64_t slots = __builtin_mul_overflow(rows, n, &elements)
                      ? kNormGradSlots
                      : elements / kFusedSumSplitElements;
  int64_t most = rows < kNormGradSlots ? rows : kNormGradSlots;
  slots = slots < most ? slots : most;
  return slots < 1 ? 1 : slots;
}

/// The longest head dimension the CUDA attention kernels take (kernels/Launch.h
/// kAttentionMaxHeadDim, checked equal in CudaAttentionKernels.cpp): plait-fuse-attention
/// leaves longer heads decomposed for --device cuda.
inline constexpr int64_t kCudaAttentionMaxHeadDim = 256;

/// Workspace chunks start at multiples of this (the workspace base is aligned to it too).
inline constexpr uint64_t kWorkspaceAlignment = 64;

/// The bytes a chunk of `bytes` occupies: rounded up to kWorkspaceAlignment, saturating.
inline uint64_t workspaceChunkBytes(uint64_t bytes) {
  uint64_t rem = bytes % kWorkspaceAlignment;
  if (rem == 0)
    return bytes;
  uint64_t pad = kWorkspaceAlignment - rem;
  return bytes > UINT64_MAX - pad ? UINT64_MAX : bytes + pad;
}

/// The element type and shape of one kernel operand, as the plan declares it.
struct OperandType {
  DType dtype = DType::F32;
  const std::vector<int64_t> *shape = nullptr; // never null
};

/// A kernel's attributes for kernelWorkspaceBytes: given, or decoded on first use. Few
/// kernels' workspace depends on attributes, so the compiler, which sizes every instruction
/// of every candidate plan, decodes only theirs.
class LazyAttrs {
public:
  LazyAttrs(const Attrs &attrs) : attrs_(&attrs) {} // NOLINT: implicit, for callers with Attrs
  explicit LazyAttrs(std::function<void(Attrs &)> decode) : decode_(std::move(decode)) {}
  const Attrs &operator()() const {
    if (!attrs_) {
      decode_(decoded_);
      attrs_ = &decoded_;
    }
    return *attrs_;
  }

private:
  mutable const Attrs *attrs_ = nullptr;
  mutable Attrs decoded_;
  std::function<void(Attrs &)> decode_;
};

/// The workspace bytes kernel `kernel` takes for one call on operands of these types (0 for
/// kernels that need none, for collectives and for unknown kernels). Saturates at UINT64_MAX
/// instead of wrapping, so a crafted plan cannot make a huge need look small. Operands that
/// the kernel would reject (wrong count or rank) need 0: the kernel fails before taking any.
uint64_t kernelWorkspaceBytes(std::string_view kernel, const std::vector<OperandType> &inputs,
                              const std::vector<OperandType> &outputs, const LazyAttrs &attrs);

} // namespace plait::rt
