// conv2d, conv2d_grad_input and conv2d_grad_weight of a 3x3 stride-1 window by Winograd's
// F(2x2, 3x3).
#pragma once

#include <cstdint>

#include "runtime/Status.h"

namespace plait::rt::cpu {

class Scratch;
struct ConvShape;

/// A correlation of `in` [batch, inChannels, inHeight, inWidth] with a 3x3 kernel into `out`
/// [batch, outChannels, outHeight, outWidth]: out[n][o][i][j] = sum over c, a, b of
/// k[o][c][a][b] in[n][c][i - padTop + a][j - padLeft + b], zero where that position is outside
/// `in`. conv2d is one with its x, w and pads; conv2d_grad_input one of dy with w's filters and
/// channels swapped and its windows turned 180 degrees (`adjoint`), padded by 2 - pad.
struct WinogradConv {
  int64_t batch = 0, inChannels = 0, inHeight = 0, inWidth = 0;
  int64_t outChannels = 0, outHeight = 0, outWidth = 0;
  int64_t padTop = 0, padLeft = 0;
  bool adjoint = false; // w is [inChannels, outChannels, 3, 3], turned: conv2d_grad_input

  /// 2x2 tiles of an output plane (the last row and column of them may overhang).
  int64_t tilesHigh() const { return (outHeight + 1) / 2; }
  int64_t tilesWide() const { return (outWidth + 1) / 2; }
};

/// conv2d's correlation (x into y), or with `adjoint` conv2d_grad_input's (dy into dx), of a
/// convolution whose ConvShape::winograd holds.
WinogradConv winogradConvOf(const ConvShape &s, bool adjoint);

/// out = the correlation of `in` with w's 3x3 windows (out is written, not added to). Takes
/// its workspace from `scratch` (Workspace.h: the transformed weights, then a transformed
/// input chunk and its products per slot). Chunks of tiles split across threads, each chunk
/// transformed, multiplied and transformed back on one thread: the same bits on any number
/// of threads. Defined for float and double.
template <typename T>
Status winogradConv3x3(const T *in, const T *w, const WinogradConv &c, Scratch &scratch, T *out);

/// conv2d_grad_weight of the convolution `c` (winogradConvOf(s, false): x is `in`, dy has
/// `out`'s shape): dw [outChannels, inChannels, 3, 3] = the sum over images and tiles of
/// G^T [(A d A^T) . (B^T x B)] G, d a tile's 2x2 of dy (zero past the plane) and x its 4x4
/// patch; F(2x2, 3x3)'s matrices transposed, the sum over tiles taken between the transforms
/// as 16 GEMMs of [outChannels, tiles] x [tiles, inChannels] per chunk of tiles. Written into
/// dw, or added to it with `accumulate`. The chunks in order, each chunk's transforms split
/// by channel and its GEMMs by product across threads: the same bits on any number of
/// threads. Its workspace (Workspace.h winogradGradChunks): the summed products, then one
/// chunk's transformed x and dy. Defined for float and double.
template <typename T>
Status winogradConvGradWeight3x3(const T *x, const T *dy, const WinogradConv &c, Scratch &scratch,
                                 T *dw, bool accumulate);

} // namespace plait::rt::cpu
