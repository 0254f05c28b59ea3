// The attention kernels' reference in double, and the test data and comparisons around it:
// shared by the CUDA attention tests on a device (tests/unit/cuda/CudaAttentionTest.cpp) and
// under the emulation (tests/cuda_emulation).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "tests/unit/cuda/TensorBytes.h"

namespace plait::attention_test {

using rt::DType;

/// Batch, queries, keys, heads, qk head dimension, v head dimension.
struct Shapes {
  int64_t b, s, t, h, d, e;
};

/// The values as `dtype` holds them.
inline std::vector<float> rounded(DType dtype, std::vector<float> x) {
  return decode(dtype, encode(dtype, x));
}

/// `n` values uniform in [-1, 1), as `dtype` holds them.
inline std::vector<float> randomValues(std::mt19937 &rng, DType dtype, int64_t n) {
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &f : x)
    f = value(rng);
  return rounded(dtype, std::move(x));
}

/// Random q, k, v (and dout, for the gradients) of `z`'s shapes, as `dtype` holds them.
struct Operands {
  std::vector<float> q, k, v, dout;
};
inline Operands randomOperands(std::mt19937 &rng, DType dtype, const Shapes &z, bool grad) {
  Operands o;
  o.q = randomValues(rng, dtype, z.b * z.s * z.h * z.d);
  o.k = randomValues(rng, dtype, z.b * z.t * z.h * z.d);
  o.v = randomValues(rng, dtype, z.b * z.t * z.h * z.e);
  if (grad)
    o.dout = randomValues(rng, dtype, z.b * z.s * z.h * z.e);
  return o;
}

struct Case {
  Shapes z;
  bool causal;
  double scale;
};

inline std::string describeCase(const Case &c, DType dtype) {
  return ::testing::PrintToString(std::vector<int64_t>{c.z.b, c.z.s, c.z.t, c.z.h, c.z.d, c.z.e}) +
         " (B, S, T, H, D, E) " + rt::dtypeName(dtype) + (c.causal ? " causal" : "") +
         " scale " + std::to_string(c.scale);
}

/// The attention of Case in double: indices as the kernels' (BSHD operands, lse [B, H, S]).
struct Reference {
  Shapes z;
  bool causal;
  double scale;
  int64_t qAt(int64_t b, int64_t i, int64_t h) const { return ((b * z.s + i) * z.h + h) * z.d; }
  int64_t kAt(int64_t b, int64_t j, int64_t h) const { return ((b * z.t + j) * z.h + h) * z.d; }
  int64_t vAt(int64_t b, int64_t j, int64_t h) const { return ((b * z.t + j) * z.h + h) * z.e; }
  int64_t oAt(int64_t b, int64_t i, int64_t h) const { return ((b * z.s + i) * z.h + h) * z.e; }
  int64_t lseAt(int64_t b, int64_t i, int64_t h) const { return (b * z.h + h) * z.s + i; }
  bool sees(int64_t i, int64_t j) const { return !causal || j <= i; }
  double score(const std::vector<float> &q, const std::vector<float> &k, int64_t b, int64_t i,
               int64_t j, int64_t h) const {
    double dot = 0;
    for (int64_t d = 0; d < z.d; ++d)
      dot += double(q[qAt(b, i, h) + d]) * double(k[kAt(b, j, h) + d]);
    return scale * dot;
  }

  void forward(const std::vector<float> &q, const std::vector<float> &k,
               const std::vector<float> &v, std::vector<double> &out,
               std::vector<double> &lse) const {
    out.assign(size_t(z.b * z.s * z.h * z.e), 0.0);
    lse.assign(size_t(z.b * z.h * z.s), 0.0);
    for (int64_t b = 0; b < z.b; ++b)
      for (int64_t h = 0; h < z.h; ++h)
        for (int64_t i = 0; i < z.s; ++i) {
          double top = -INFINITY;
          for (int64_t j = 0; j < z.t; ++j)
            if (sees(i, j))
              top = std::max(top, score(q, k, b, i, j, h));
          double sum = 0;
          for (int64_t j = 0; j < z.t; ++j)
            if (sees(i, j))
              sum += std::exp(score(q, k, b, i, j, h) - top);
          const double l = top + std::log(sum);
          lse[lseAt(b, i, h)] = l;
          for (int64_t j = 0; j < z.t; ++j)
            if (sees(i, j)) {
              const double p = std::exp(score(q, k, b, i, j, h) - l);
              for (int64_t e = 0; e < z.e; ++e)
                out[oAt(b, i, h) + e] += p * double(v[vAt(b, j, h) + e]);
            }
        }
  }

  /// attention_grad's formulas, reading `out` and `lse` as given (as the kernel does).
  void grad(const std::vector<float> &q, const std::vector<float> &k,
            const std::vector<float> &v, const std::vector<float> &out,
            const std::vector<float> &lse, const std::vector<float> &dout,
            std::vector<double> &dq, std::vector<double> &dk, std::vector<double> &dv) const {
    dq.assign(q.size(), 0.0);
    dk.assign(k.size(), 0.0);
    dv.assign(v.size(), 0.0);
    for (int64_t b = 0; b < z.b; ++b)
      for (int64_t h = 0; h < z.h; ++h)
        for (int64_t i = 0; i < z.s; ++i) {
          double delta = 0;
          for (int64_t e = 0; e < z.e; ++e)
            delta += double(dout[oAt(b, i, h) + e]) * double(out[oAt(b, i, h) + e]);
          for (int64_t j = 0; j < z.t; ++j) {
            if (!sees(i, j))
              continue;
            const double p = std::exp(score(q, k, b, i, j, h) - double(lse[lseAt(b, i, h)]));
            double dp = 0;
            for (int64_t e = 0; e < z.e; ++e)
              dp += double(dout[oAt(b, i, h) + e]) * double(v[vAt(b, j, h) + e]);
            const double ds = p * (dp - delta);
            for (int64_t e = 0; e < z.e; ++e)
              dv[vAt(b, j, h) + e] += p * double(dout[oAt(b, i, h) + e]);
            for (int64_t d = 0; d < z.d; ++d) {
              dq[qAt(b, i, h) + d] += scale * ds * double(k[kAt(b, j, h) + d]);
              dk[kAt(b, j, h) + d] += scale * ds * double(q[qAt(b, i, h) + d]);
            }
          }
        }
  }
};

/// got[i] against want[i] within tol * max(1, |want[i]|).
inline void expectNear(const char *what, const std::vector<float> &got,
                       const std::vector<double> &want, double tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i)
    if (!(std::fabs(double(got[i]) - want[i]) <= tol * std::max(1.0, std::fabs(want[i])))) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
      ++reported;
    }
}

/// The cases both suites run.
inline const Case kCases[] = {
    {{2, 37, 53, 3, 24, 40}, false, 0.2},  // S != T, D != E, ragged row groups and tiles
    {{1, 77, 77, 2, 64, 48}, true, 0.125}, // causal over three key tiles
    {{2, 70, 33, 2, 16, 8}, true, 0.25},   // causal, queries past the last key see them all
    {{1, 20, 90, 2, 32, 33}, true, 0.3},   // causal, keys past the last query get zeros
    {{1, 9, 41, 1, 7, 5}, false, 2.0},     // odd dimensions, wide scores (online rescaling)
    {{1, 19, 40, 1, 256, 256}, false, 0.0625}, // the largest head: > 48 KiB of shared memory
    {{1, 19, 40, 2, 256, 96}, true, 0.0625},
};

} // namespace plait::attention_test
