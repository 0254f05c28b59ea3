// Winograd F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2016): a 2x2 tile of a 3x3 correlation's outputs is A^T [(G k G^T) . (B^T d B)] A, where d
// is the tile's 4x4 input patch, k the 3x3 window and . the elementwise product:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// Summed over input channels, each of the 16 elementwise products is a GEMM over the tiles:
// M[xi] [outChannels, tiles] = U[xi] [outChannels, inChannels] x V[xi] [inChannels, tiles].
//
// The weight gradient is that product's transpose: y = A^T [(G k G^T) . V] A gives, for a
// tile's 2x2 of dy, dk = G^T [(A dy A^T) . V] G, and since G^T . G is linear the sum over
// images and tiles is taken between the transforms, again 16 GEMMs:
// P[xi] [outChannels, inChannels] = D[xi] [outChannels, tiles] x V[xi]^T [tiles, inChannels].
#include "runtime/cpu/Winograd.h"

#include <algorithm>

#include "runtime/cpu/ConvSupport.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

/// Input channels the weight transforms take at a time (their scratch is on the stack).
constexpr int64_t kChannelBlock = 128;

/// U[xi][o][ch] = (G k G^T)[xi] for the windows k of output channel o and input channels
/// [ch0, ch1) (at most kChannelBlock): w's [o][ch] windows, or for the adjoint w's [ch][o]
/// windows turned 180 degrees. The windows' taps are gathered a channel block at a time, so
/// that both of G's passes run over contiguous channels and vectorise.
template <typename T>
PLAIT_SIMD_CLONES void transformWeightBlock(const T *w, const WinogradConv &c, int64_t o,
                                            int64_t ch0, int64_t ch1, T *u) {
  const int64_t n = ch1 - ch0, pairs = c.outChannels * c.inChannels;
  T k[9][kChannelBlock], gk[4][3][kChannelBlock]; // the taps k[a * 3 + b], then G k
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ch = ch0 + i;
    const T *src = c.adjoint ? w + (ch * c.outChannels + o) * 9 : w + (o * c.inChannels + ch) * 9;
    for (int e = 0; e < 9; ++e)
      k[e][i] = src[c.adjoint ? 8 - e : e];
  }
  for (int b = 0; b < 3; ++b)
    for (int64_t i = 0; i < n; ++i) {
      gk[0][b][i] = k[b][i];
      gk[1][b][i] = T(0.5) * (k[b][i] + k[3 + b][i] + k[6 + b][i]);
      gk[2][b][i] = T(0.5) * (k[b][i] - k[3 + b][i] + k[6 + b][i]);
      gk[3][b][i] = k[6 + b][i];
    }
  T *dst = u + o * c.inChannels + ch0;
  for (int a = 0; a < 4; ++a) { // (G k) G^T
    T *d0 = dst + (a * 4 + 0) * pairs, *d1 = dst + (a * 4 + 1) * pairs;
    T *d2 = dst + (a * 4 + 2) * pairs, *d3 = dst + (a * 4 + 3) * pairs;
    for (int64_t i = 0; i < n; ++i) {
      d0[i] = gk[a][0][i];
      d1[i] = T(0.5) * (gk[a][0][i] + gk[a][1][i] + gk[a][2][i]);
      d2[i] = T(0.5) * (gk[a][0][i] - gk[a][1][i] + gk[a][2][i]);
      d3[i] = gk[a][2][i];
    }
  }
}

/// U[xi][o][c] = (G k G^T)[xi] for every output channel o and input channel c.
template <typename T> void transformWeights(const T *w, const WinogradConv &c, T *u) {
  parallelFor(c.outChannels, grainFor(kElementGrain, 16 * c.inChannels),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o)
                  for (int64_t ch = 0; ch < c.inChannels; ch += kChannelBlock)
                    transformWeightBlock(w, c, o, ch, std::min(c.inChannels, ch + kChannelBlock),
                                         u);
              });
}

/// Tiles of a row the input transform takes at a time (its scratch is on the stack).
constexpr int64_t kRowSegment = 128;

/// V[xi][ch][tx - tx0] = (B^T d B)[xi] for the tiles [tx0, tx1) (at most kRowSegment) of tile
/// row `ty` of image `n`, input channel `ch` (V's rows `ld` long, xi's `xiPitch` apart).
/// B^T d B is separable: the rows' combinations first, over the input rows' columns split
/// into even and odd ones (each tile starts at an even column), then the columns', each a
/// difference or sum of neighbouring even and odd columns: every loop runs over contiguous
/// tiles and vectorises.
template <typename T>
PLAIT_SIMD_CLONES void transformInputRow(const T *in, const WinogradConv &c, int64_t n, int64_t ty,
                                         int64_t tx0, int64_t tx1, int64_t ch, T *v, int64_t ld,
                                         int64_t xiPitch) {
  const int64_t tw = tx1 - tx0, width = tw + 1;
  T rows[16 * (kRowSegment + 1)];
  T *even = rows, *odd = rows + 4 * width;           // the input rows' even and odd columns
  T *ee = rows + 8 * width, *eo = rows + 12 * width; // B^T over the rows
  const T *plane = in + (n * c.inChannels + ch) * c.inHeight * c.inWidth;
  for (int a = 0; a < 4; ++a) {
    const int64_t r = 2 * ty - c.padTop + a;
    T *e = even + a * width, *o = odd + a * width;
    if (r < 0 || r >= c.inHeight) {
      std::fill(e, e + width, T(0));
      std::fill(o, o + width, T(0));
      continue;
    }
    const T *row = plane + r * c.inWidth;
    for (int64_t m = 0; m < width; ++m) {
      const int64_t q = 2 * (tx0 + m) - c.padLeft;
      e[m] = q >= 0 && q < c.inWidth ? row[q] : T(0);
      o[m] = q + 1 >= 0 && q + 1 < c.inWidth ? row[q + 1] : T(0);
    }
  }
  for (int64_t m = 0; m < width; ++m) {
    ee[0 * width + m] = even[0 * width + m] - even[2 * width + m];
    ee[1 * width + m] = even[1 * width + m] + even[2 * width + m];
    ee[2 * width + m] = even[2 * width + m] - even[1 * width + m];
    ee[3 * width + m] = even[1 * width + m] - even[3 * width + m];
    eo[0 * width + m] = odd[0 * width + m] - odd[2 * width + m];
    eo[1 * width + m] = odd[1 * width + m] + odd[2 * width + m];
    eo[2 * width + m] = odd[2 * width + m] - odd[1 * width + m];
    eo[3 * width + m] = odd[1 * width + m] - odd[3 * width + m];
  }
  for (int k = 0; k < 4; ++k) {
    const T *e = ee + k * width, *o = eo + k * width;
    T *v0 = v + (4 * k + 0) * xiPitch + ch * ld, *v1 = v + (4 * k + 1) * xiPitch + ch * ld;
    T *v2 = v + (4 * k + 2) * xiPitch + ch * ld, *v3 = v + (4 * k + 3) * xiPitch + ch * ld;
    for (int64_t tx = 0; tx < tw; ++tx) {
      v0[tx] = e[tx] - e[tx + 1];
      v1[tx] = o[tx] + e[tx + 1];
      v2[tx] = e[tx + 1] - o[tx];
      v3[tx] = o[tx] - o[tx + 1];
    }
  }
}

/// out's tile row `ty` of image `n`, output channel `o` = A^T M A of each tile tx, from
/// M[xi][o][j0 + tx] (rows `ld` long, xi's `xiPitch` apart); the overhang past the plane's
/// last row or column dropped.
template <typename T>
PLAIT_SIMD_CLONES void transformOutputRow(const T *m, const WinogradConv &c, int64_t n, int64_t ty,
                                          int64_t o, T *out, int64_t ld, int64_t xiPitch) {
  const T *p[16];
  for (int xi = 0; xi < 16; ++xi)
    p[xi] = m + xi * xiPitch + o * ld;
  T *plane = out + (n * c.outChannels + o) * c.outHeight * c.outWidth;
  T *row0 = plane + 2 * ty * c.outWidth;
  T *row1 = 2 * ty + 1 < c.outHeight ? row0 + c.outWidth : nullptr;
  const int64_t pairs = c.outWidth / 2, tw = c.tilesWide(); // whole 2x2 tiles across
  auto tile = [&](int64_t tx, T y[2][2]) {
    T t[2][4]; // A^T M
    for (int b = 0; b < 4; ++b) {
      t[0][b] = p[b][tx] + p[4 + b][tx] + p[8 + b][tx];
      t[1][b] = p[4 + b][tx] - p[8 + b][tx] - p[12 + b][tx];
    }
    for (int r = 0; r < 2; ++r) { // (A^T M) A
      y[r][0] = t[r][0] + t[r][1] + t[r][2];
      y[r][1] = t[r][1] - t[r][2] - t[r][3];
    }
  };
  if (row1) {
    for (int64_t tx = 0; tx < pairs; ++tx) {
      T y[2][2];
      tile(tx, y);
      row0[2 * tx] = y[0][0];
      row0[2 * tx + 1] = y[0][1];
      row1[2 * tx] = y[1][0];
      row1[2 * tx + 1] = y[1][1];
    }
  } else {
    for (int64_t tx = 0; tx < pairs; ++tx) {
      T y[2][2];
      tile(tx, y);
      row0[2 * tx] = y[0][0];
      row0[2 * tx + 1] = y[0][1];
    }
  }
  if (pairs < tw) { // an odd width: the last tile's first column
    T y[2][2];
    tile(pairs, y);
    row0[2 * pairs] = y[0][0];
    if (row1)
      row1[2 * pairs] = y[1][0];
  }
}

/// D[xi][o][tx - tx0] = (A d A^T)[xi] for the tiles [tx0, tx1) (at most kRowSegment) of tile
/// row `ty` of image `n` of dy (`out`'s shape), output channel `o`, d the tile's 2x2 of dy
/// (zero past the plane's last row or column); D's rows `ld` long, xi's `xiPitch` apart.
/// A d A^T is separable as B^T d B is: the rows' combinations (d0, d0 + d1, d0 - d1, -d1)
/// over the tiles' even and odd columns, then the columns' the same way.
template <typename T>
PLAIT_SIMD_CLONES void transformGradRow(const T *dy, const WinogradConv &c, int64_t n, int64_t ty,
                                        int64_t tx0, int64_t tx1, int64_t o, T *d, int64_t ld,
                                        int64_t xiPitch) {
  const int64_t tw = tx1 - tx0;
  T cols[12 * kRowSegment];
  T *even = cols, *odd = cols + 2 * tw;       // dy's two rows' even and odd columns
  T *re = cols + 4 * tw, *ro = cols + 8 * tw; // A over the rows
  const T *plane = dy + (n * c.outChannels + o) * c.outHeight * c.outWidth;
  for (int r = 0; r < 2; ++r) {
    const int64_t row = 2 * ty + r;
    T *e = even + r * tw, *od = odd + r * tw;
    if (row >= c.outHeight) {
      std::fill(e, e + tw, T(0));
      std::fill(od, od + tw, T(0));
      continue;
    }
    const T *src = plane + row * c.outWidth;
    for (int64_t m = 0; m < tw; ++m) {
      const int64_t q = 2 * (tx0 + m);
      e[m] = q < c.outWidth ? src[q] : T(0);
      od[m] = q + 1 < c.outWidth ? src[q + 1] : T(0);
    }
  }
  for (int64_t m = 0; m < tw; ++m) {
    re[0 * tw + m] = even[m];
    re[1 * tw + m] = even[m] + even[tw + m];
    re[2 * tw + m] = even[m] - even[tw + m];
    re[3 * tw + m] = -even[tw + m];
    ro[0 * tw + m] = odd[m];
    ro[1 * tw + m] = odd[m] + odd[tw + m];
    ro[2 * tw + m] = odd[m] - odd[tw + m];
    ro[3 * tw + m] = -odd[tw + m];
  }
  for (int k = 0; k < 4; ++k) {
    const T *e = re + k * tw, *od = ro + k * tw;
    T *d0 = d + (4 * k + 0) * xiPitch + o * ld, *d1 = d + (4 * k + 1) * xiPitch + o * ld;
    T *d2 = d + (4 * k + 2) * xiPitch + o * ld, *d3 = d + (4 * k + 3) * xiPitch + o * ld;
    for (int64_t tx = 0; tx < tw; ++tx) {
      d0[tx] = e[tx];
      d1[tx] = e[tx] + od[tx];
      d2[tx] = e[tx] - od[tx];
      d3[tx] = -od[tx];
    }
  }
}

/// dw's 3x3 windows of output channel `o` and input channels [ch0, ch1) (at most
/// kChannelBlock) = G^T P G of their summed products P[xi][o][ch] (xi's `pairs` apart),
/// written or with `accumulate` added: both of G's passes over contiguous channels.
template <typename T>
PLAIT_SIMD_CLONES void transformGradWeightBlock(const T *p, const WinogradConv &c, int64_t o,
                                                int64_t ch0, int64_t ch1, T *dw, bool accumulate) {
  const int64_t n = ch1 - ch0, pairs = c.outChannels * c.inChannels;
  const T *src = p + o * c.inChannels + ch0;
  T t[3][4][kChannelBlock], y[9][kChannelBlock]; // G^T P, then (G^T P) G
  for (int b = 0; b < 4; ++b) {
    const T *p0 = src + (0 + b) * pairs, *p1 = src + (4 + b) * pairs;
    const T *p2 = src + (8 + b) * pairs, *p3 = src + (12 + b) * pairs;
    for (int64_t i = 0; i < n; ++i) {
      t[0][b][i] = p0[i] + T(0.5) * (p1[i] + p2[i]);
      t[1][b][i] = T(0.5) * (p1[i] - p2[i]);
      t[2][b][i] = T(0.5) * (p1[i] + p2[i]) + p3[i];
    }
  }
  for (int a = 0; a < 3; ++a)
    for (int64_t i = 0; i < n; ++i) {
      y[a * 3 + 0][i] = t[a][0][i] + T(0.5) * (t[a][1][i] + t[a][2][i]);
      y[a * 3 + 1][i] = T(0.5) * (t[a][1][i] - t[a][2][i]);
      y[a * 3 + 2][i] = T(0.5) * (t[a][1][i] + t[a][2][i]) + t[a][3][i];
    }
  T *dst = dw + (o * c.inChannels + ch0) * 9;
  for (int64_t i = 0; i < n; ++i)
    for (int e = 0; e < 9; ++e)
      dst[i * 9 + e] = accumulate ? dst[i * 9 + e] + y[e][i] : y[e][i];
}

} // namespace

WinogradConv winogradConvOf(const ConvShape &s, bool adjoint) {
  WinogradConv c;
  c.batch = s.batch;
  c.adjoint = adjoint;
  if (!adjoint) { // x [N, C, H, W] into y [N, F, OH, OW]
    c.inChannels = s.channels, c.inHeight = s.height, c.inWidth = s.width;
    c.outChannels = s.filters, c.outHeight = s.outHeight, c.outWidth = s.outWidth;
    c.padTop = s.window.padBegin[0], c.padLeft = s.window.padBegin[1];
  } else { // dy [N, F, OH, OW] into dx [N, C, H, W]: the window turned, padded by 2 - pad
    c.inChannels = s.filters, c.inHeight = s.outHeight, c.inWidth = s.outWidth;
    c.outChannels = s.channels, c.outHeight = s.height, c.outWidth = s.width;
    c.padTop = 2 - s.window.padBegin[0], c.padLeft = 2 - s.window.padBegin[1];
  }
  return c;
}

template <typename T>
Status winogradConv3x3(const T *in, const T *w, const WinogradConv &c, Scratch &scratch, T *out) {
  const int64_t tw = c.tilesWide(), tileRows = c.batch * c.tilesHigh();
  if (tileRows == 0 || tw == 0 || c.outChannels == 0)
    return Status();
  if (c.inChannels == 0) { // nothing to sum
    std::fill(out, out + c.batch * c.outChannels * c.outHeight * c.outWidth, T(0));
    return Status();
  }
  const WinogradChunks chunking = winogradChunks(tw, tileRows, c.inChannels, c.outChannels);
  const int64_t chunkRows = chunking.rows, chunkTiles = chunking.tiles;
  const int64_t chunks = chunking.count, slots = chunking.slots;
  T *u = nullptr, *v = nullptr, *m = nullptr;
  // workspace (Workspace.cpp winogradBytes): U, then per slot a V and an M
  PLAIT_RETURN_IF_ERROR(scratch.take(16 * c.outChannels * c.inChannels, u));
  PLAIT_RETURN_IF_ERROR(scratch.take(slots * 16 * c.inChannels * chunkTiles, v));
  PLAIT_RETURN_IF_ERROR(scratch.take(slots * 16 * c.outChannels * chunkTiles, m));
  transformWeights(w, c, u);

  // One chunk of tile rows in workspace slot `slot`; `split`: its transforms (by channel) and
  // its 16 GEMMs split across the threads (the same bits: each GEMM and each channel's tiles
  // stay whole).
  auto runChunk = [&](int64_t k, int64_t slot, bool split) -> Status {
    const int64_t firstRow = k * chunkRows, count = std::min(chunkRows, tileRows - firstRow);
    const int64_t tiles = count * tw;
    T *vs = v + slot * 16 * c.inChannels * chunkTiles;
    T *ms = m + slot * 16 * c.outChannels * chunkTiles;
    auto byChannel = [&](int64_t channels, auto &&body) {
      if (split)
        parallelFor(channels, grainFor(kElementGrain, 16 * tiles),
                    [&](int64_t, int64_t begin, int64_t end) { body(begin, end); });
      else
        body(int64_t(0), channels);
    };
    byChannel(c.inChannels, [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch)
        for (int64_t r = 0; r < count; ++r) {
          const int64_t row = firstRow + r;
          for (int64_t tx0 = 0; tx0 < tw; tx0 += kRowSegment)
            transformInputRow(in, c, row / c.tilesHigh(), row % c.tilesHigh(), tx0,
                              std::min(tw, tx0 + kRowSegment), ch, vs + r * tw + tx0, tiles,
                              c.inChannels * tiles);
        }
    });
    Status errors[16];
    auto multiply = [&](int64_t begin, int64_t end) {
      for (int64_t xi = begin; xi < end; ++xi)
        errors[xi] = gemmRowMajor<T>(false, false, c.outChannels, tiles, c.inChannels, 1.0,
                                     u + xi * c.outChannels * c.inChannels, c.inChannels,
                                     vs + xi * c.inChannels * tiles, tiles, 0.0,
                                     ms + xi * c.outChannels * tiles, tiles);
    };
    if (split)
      parallelFor(16, 1, [&](int64_t, int64_t begin, int64_t end) { multiply(begin, end); });
    else
      multiply(0, 16);
    for (const Status &e : errors)
      if (!e.ok())
        return e;
    byChannel(c.outChannels, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o)
        for (int64_t r = 0; r < count; ++r) {
          const int64_t row = firstRow + r;
          transformOutputRow(ms + r * tw, c, row / c.tilesHigh(), row % c.tilesHigh(), o, out,
                             tiles, c.outChannels * tiles);
        }
    });
    return Status();
  };

  if (slots <= 1) {
    for (int64_t k = 0; k < chunks; ++k)
      PLAIT_RETURN_IF_ERROR(runChunk(k, 0, true));
    return Status();
  }
  const int64_t unitWork = 16 * c.inChannels * c.outChannels * chunkTiles;
  return parallelForSlots(
      chunks, std::max(grainFor(kMultiplyAddGrain, unitWork), (chunks + slots - 1) / slots),
      [&](int64_t slot, int64_t begin, int64_t end) -> Status {
        for (int64_t k = begin; k < end; ++k)
          PLAIT_RETURN_IF_ERROR(runChunk(k, slot, false));
        return Status();
      });
}

template <typename T>
Status winogradConvGradWeight3x3(const T *x, const T *dy, const WinogradConv &c, Scratch &scratch,
                                 T *dw, bool accumulate) {
  const int64_t tw = c.tilesWide(), tileRows = c.batch * c.tilesHigh();
  if (c.outChannels == 0 || c.inChannels == 0)
    return Status();
  if (tileRows == 0 || tw == 0) { // nothing to sum
    if (!accumulate)
      std::fill(dw, dw + c.outChannels * c.inChannels * 9, T(0));
    return Status();
  }
  const WinogradChunks chunking = winogradGradChunks(tw, tileRows, c.inChannels, c.outChannels);
  const int64_t chunkRows = chunking.rows, chunkTiles = chunking.tiles;
  T *p = nullptr, *v = nullptr, *d = nullptr;
  // workspace (Workspace.cpp winogradBytes, gradWeight): the sums, then one chunk's V and D
  PLAIT_RETURN_IF_ERROR(scratch.take(16 * c.outChannels * c.inChannels, p));
  PLAIT_RETURN_IF_ERROR(scratch.take(16 * c.inChannels * chunkTiles, v));
  PLAIT_RETURN_IF_ERROR(scratch.take(16 * c.outChannels * chunkTiles, d));
  for (int64_t k = 0; k < chunking.count; ++k) {
    const int64_t firstRow = k * chunkRows, count = std::min(chunkRows, tileRows - firstRow);
    const int64_t tiles = count * tw;
    // x's channels, then dy's, each channel's tiles on one thread
    parallelFor(c.inChannels + c.outChannels, grainFor(kElementGrain, 16 * tiles),
                [&](int64_t, int64_t begin, int64_t end) {
                  for (int64_t ch = begin; ch < end; ++ch)
                    for (int64_t r = 0; r < count; ++r) {
                      const int64_t row = firstRow + r;
                      const int64_t n = row / c.tilesHigh(), ty = row % c.tilesHigh();
                      for (int64_t tx0 = 0; tx0 < tw; tx0 += kRowSegment) {
                        const int64_t tx1 = std::min(tw, tx0 + kRowSegment);
                        if (ch < c.inChannels)
                          transformInputRow(x, c, n, ty, tx0, tx1, ch, v + r * tw + tx0, tiles,
                                            c.inChannels * tiles);
                        else
                          transformGradRow(dy, c, n, ty, tx0, tx1, ch - c.inChannels,
                                           d + r * tw + tx0, tiles, c.outChannels * tiles);
                      }
                    }
                });
    Status errors[16];
    parallelFor(16, 1, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t xi = begin; xi < end; ++xi)
        errors[xi] = gemmRowMajor<T>(false, true, c.outChannels, c.inChannels, tiles, 1.0,
                                     d + xi * c.outChannels * tiles, tiles,
                                     v + xi * c.inChannels * tiles, tiles, k == 0 ? 0.0 : 1.0,
                                     p + xi * c.outChannels * c.inChannels, c.inChannels);
    });
    for (const Status &e : errors)
      if (!e.ok())
        return e;
  }
  parallelFor(c.outChannels, grainFor(kElementGrain, 16 * c.inChannels),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o)
                  for (int64_t ch = 0; ch < c.inChannels; ch += kChannelBlock)
                    transformGradWeightBlock(
                        p, c, o, ch, std::min(c.inChannels, ch + kChannelBlock), dw, accumulate);
              });
  return Status();
}

template Status winogradConv3x3<float>(const float *, const float *, const WinogradConv &,
                                       Scratch &, float *);
template Status winogradConv3x3<double>(const double *, const double *, const WinogradConv &,
                                        Scratch &, double *);

template Status winogradConvGradWeight3x3<float>(const float *, const float *, const WinogradConv &,
                                                 Scratch &, float *, bool);
template Status winogradConvGradWeight3x3<double>(const double *, const double *,
                                                  const WinogradConv &, Scratch &, double *, bool);

} // namespace plait::rt::cpu
