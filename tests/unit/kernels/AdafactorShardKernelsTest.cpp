// Adafactor on flat shards (runtime/cpu/AdafactorShardKernels.cpp): each rank's
// adafactor_stats and adafactor_norms, summed over the group as the all-reduces sum them, and
// its adafactor_update with segments give every param what the whole-tensor kernel gives it,
// for shards that cut rows, batches and params anywhere; the same bits on any thread count;
// and the layout checks' messages.
#include <cmath>
#include <random>

#include "OptimizerTrajectories.h"

namespace plait::rt::test {
namespace {

using Shape = std::vector<int64_t>;

/// One param of the unit, with its whole-tensor states.
struct Param {
  Shape shape;
  std::vector<double> p, g, m;              // values, gradient, exp_avg
  std::vector<std::vector<double>> moments; // row and col, or exp_avg_sq
  std::vector<Shape> momentShapes;
  int64_t numel() const { return int64_t(p.size()); }
  bool factored() const { return shape.size() >= 2; }
};

std::vector<double> uniform(std::mt19937 &rng, size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> out(n);
  for (double &x : out)
    x = d(rng);
  return out;
}

Param makeParam(std::mt19937 &rng, Shape shape) {
  Param q;
  q.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  q.p = uniform(rng, size_t(n), -2, 2);
  q.g = uniform(rng, size_t(n), -0.5, 0.5);
  q.m = uniform(rng, size_t(n), -0.05, 0.05);
  if (q.factored()) {
    Shape row(shape.begin(), shape.end() - 1), col(shape.begin(), shape.end() - 2);
    col.push_back(shape.back());
    q.momentShapes = {row, col};
    q.moments = {uniform(rng, size_t(n / shape.back()), 0.01, 0.2),
                 uniform(rng, size_t(n / shape[shape.size() - 2]), 0.01, 0.2)};
  } else {
    q.momentShapes = {shape};
    q.moments = {uniform(rng, size_t(n), 0.01, 0.2)};
  }
  return q;
}

std::vector<double> cut(const std::vector<double> &x, int64_t from, int64_t n) {
  std::vector<double> out(size_t(n), 0.0);
  for (int64_t i = 0; i < n && from + i < int64_t(x.size()); ++i)
    out[size_t(i)] = x[size_t(from + i)];
  return out;
}

/// The unit's params end to end, then zeros to `padded`.
std::vector<double> flat(const std::vector<Param> &params, std::vector<double> Param::*member,
                         int64_t padded) {
  std::vector<double> out;
  for (const Param &q : params)
    out.insert(out.end(), (q.*member).begin(), (q.*member).end());
  out.resize(size_t(padded), 0.0);
  return out;
}

/// Rank 0 as shard `index` of a group of `size`: the group listed from it.
std::vector<int64_t> groupWithRank0At(int64_t index, int64_t size) {
  std::vector<int64_t> group;
  for (int64_t i = 0; i < size; ++i)
    group.push_back(i == index ? 0 : (i < index ? i + 1 : i));
  return group;
}

/// Runs one sharded step of `params` over a group of `ranks` and checks each shard's new
/// param and exp_avg, and every rank's new second moments, against the whole kernel's.
void checkShardedStep(const std::vector<Param> &params, int64_t ranks, const Attrs &hyper,
                      double step) {
  const bool firstMoment = hyper.has("beta1");
  std::vector<int64_t> segments, factors;
  int64_t total = 0;
  for (const Param &q : params) {
    segments.push_back(q.numel());
    factors.push_back(q.factored() ? q.shape[q.shape.size() - 2] : 0);
    factors.push_back(q.factored() ? q.shape.back() : 0);
    total += q.numel();
  }
  const int64_t shard = (total + ranks - 1) / ranks, padded = shard * ranks;
  // The whole params' updates.
  std::vector<double> wholeP, wholeM;
  std::vector<std::vector<float>> wholeMoments;
  for (const Param &q : params) {
    std::vector<OwnedTensor> in{makeFloat(DType::F32, q.shape, q.p),
                                makeFloat(DType::F32, q.shape, q.g), lrScalar(0.05),
                                f32Scalar(step)};
    std::vector<std::pair<DType, Shape>> out{{DType::F32, q.shape}};
    if (firstMoment) {
      in.push_back(makeFloat(DType::F32, q.shape, q.m));
      out.push_back({DType::F32, q.shape});
    }
    for (size_t j = 0; j < q.moments.size(); ++j) {
      in.push_back(makeFloat(DType::F32, q.momentShapes[j], q.moments[j]));
      out.push_back({DType::F32, q.momentShapes[j]});
    }
    KernelResult r = runKernel("adafactor_update", in, out, hyper);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    for (float x : r.out(0).floats())
      wholeP.push_back(x);
    if (firstMoment)
      for (float x : r.out(1).floats())
        wholeM.push_back(x);
    for (size_t j = 0; j < q.moments.size(); ++j)
      wholeMoments.push_back(r.out(j + (firstMoment ? 2 : 1)).floats());
  }
  const std::vector<double> p = flat(params, &Param::p, padded),
                            g = flat(params, &Param::g, padded),
                            m = flat(params, &Param::m, padded);
  std::vector<OwnedTensor> moments;
  std::vector<std::pair<DType, Shape>> momentOutputs;
  for (const Param &q : params)
    for (size_t j = 0; j < q.moments.size(); ++j) {
      moments.push_back(makeFloat(DType::F32, q.momentShapes[j], q.moments[j]));
      momentOutputs.push_back({DType::F32, q.momentShapes[j]});
    }
  auto attrsFor = [&](int64_t index, bool update) {
    AttrsBuilder b;
    if (update)
      b = AttrsBuilder().f("weight_decay", hyper.getFloat("weight_decay", 0.0));
    if (update && firstMoment)
      b.f("beta1", hyper.getFloat("beta1", 0.0));
    return b.ints("segments", segments)
        .ints("factors", factors)
        .ints("groups", groupWithRank0At(index, ranks))
        .i("group_size", ranks)
        .build();
  };
  // adafactor_stats and adafactor_norms on each rank, summed as the all-reduces sum them.
  int64_t statsLength = int64_t(params.size());
  for (const Param &q : params)
    statsLength +=
        q.factored() ? q.numel() / q.shape.back() + q.numel() / q.shape.end()[-2] : q.numel();
  std::vector<double> stats(size_t(statsLength), 0.0), norms(params.size(), 0.0);
  for (int64_t r = 0; r < ranks; ++r) {
    KernelResult s = runKernel("adafactor_stats",
                               {makeFloat(DType::F32, {shard}, cut(p, r * shard, shard)),
                                makeFloat(DType::F32, {shard}, cut(g, r * shard, shard))},
                               {{DType::F64, {statsLength}}}, attrsFor(r, false));
    ASSERT_TRUE(s.status.ok()) << s.status.message();
    std::vector<double> part = s.out().doubles();
    for (size_t i = 0; i < stats.size(); ++i)
      stats[i] += part[i];
  }
  const OwnedTensor statsTensor = makeFloat(DType::F64, {statsLength}, stats);
  for (int64_t r = 0; r < ranks; ++r) {
    std::vector<OwnedTensor> in{makeFloat(DType::F32, {shard}, cut(p, r * shard, shard)),
                                makeFloat(DType::F32, {shard}, cut(g, r * shard, shard)),
                                f32Scalar(step), statsTensor};
    in.insert(in.end(), moments.begin(), moments.end());
    KernelResult n = runKernel("adafactor_norms", in, {{DType::F64, {int64_t(params.size())}}},
                               attrsFor(r, false));
    ASSERT_TRUE(n.status.ok()) << n.status.message();
    std::vector<double> part = n.out().doubles();
    for (size_t i = 0; i < norms.size(); ++i)
      norms[i] += part[i];
  }
  for (int64_t r = 0; r < ranks; ++r) {
    std::vector<OwnedTensor> in{makeFloat(DType::F32, {shard}, cut(p, r * shard, shard)),
                                makeFloat(DType::F32, {shard}, cut(g, r * shard, shard)),
                                lrScalar(0.05), f32Scalar(step)};
    std::vector<std::pair<DType, Shape>> out{{DType::F32, {shard}}};
    if (firstMoment) {
      in.push_back(makeFloat(DType::F32, {shard}, cut(m, r * shard, shard)));
      out.push_back({DType::F32, {shard}});
    }
    in.insert(in.end(), moments.begin(), moments.end());
    out.insert(out.end(), momentOutputs.begin(), momentOutputs.end());
    in.push_back(statsTensor);
    in.push_back(makeFloat(DType::F64, {int64_t(params.size())}, norms));
    Attrs attrs = attrsFor(r, true);
    for (const char *name : {"eps1", "eps2", "clip_threshold", "decay_rate"})
      if (hyper.has(name))
        attrs.set(name, AttrValue{{}, {hyper.getFloat(name, 0.0)}, {}});
    KernelResult u = runKernel("adafactor_update", in, out, attrs);
    ASSERT_TRUE(u.status.ok()) << u.status.message();
    const int64_t n = std::min(shard, total - r * shard);
    std::vector<float> newP = u.out(0).floats();
    for (int64_t i = 0; i < shard; ++i) {
      const int64_t at = r * shard + i;
      if (i >= n) { // padding: kept
        EXPECT_EQ(newP[size_t(i)], 0.0f) << "padding " << at;
        continue;
      }
      EXPECT_NEAR(newP[size_t(i)], wholeP[size_t(at)], 2e-6 * std::abs(wholeP[size_t(at)]) + 1e-9)
          << "rank " << r << " of " << ranks << ", element " << at;
      if (firstMoment)
        EXPECT_NEAR(u.out(1).floats()[size_t(i)], wholeM[size_t(at)],
                    2e-6 * std::abs(wholeM[size_t(at)]) + 1e-12)
            << "exp_avg, rank " << r << ", element " << at;
    }
    for (size_t j = 0; j < wholeMoments.size(); ++j) {
      std::vector<float> got = u.out(j + (firstMoment ? 2 : 1)).floats();
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], wholeMoments[j][i], 1e-6 * std::abs(wholeMoments[j][i]))
            << "second moment " << j << ", rank " << r << ", entry " << i;
    }
  }
}

/// A matrix, a batch of matrices and a vector: shards of 2, 3 and 5 ranks cut rows, batches
/// and params in the middle; with exp_avg and weight decay, and without.
TEST(AdafactorShard, FlatShardsMatchTheWholeParams) {
  std::mt19937 rng(7);
  const std::vector<Param> params = {makeParam(rng, {3, 5}), makeParam(rng, {2, 2, 3}),
                                     makeParam(rng, {4}), makeParam(rng, {1, 7})};
  for (int64_t ranks : {1, 2, 3, 5}) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    checkShardedStep(params, ranks, AttrsBuilder().f("beta1", 0.9).f("weight_decay", 0.1).build(),
                     3);
    checkShardedStep(params, ranks, AttrsBuilder().f("clip_threshold", 0.5).build(), 1);
  }
}

/// Wide rows (more columns than a piece of 512) over shards that end inside them.
TEST(AdafactorShard, WideRowsCutBetweenRanks) {
  std::mt19937 rng(11);
  const std::vector<Param> params = {makeParam(rng, {5, 1100}), makeParam(rng, {3})};
  for (int64_t ranks : {2, 3})
    checkShardedStep(params, ranks, AttrsBuilder().f("beta1", 0.8).build(), 2);
}

/// The sums are taken in fixed slots: the same bits on one thread and on four.
TEST(AdafactorShard, SameBitsOnAnyThreadCount) {
  const int64_t rows = 300, cols = 701, n = rows * cols;
  std::mt19937 rng(3);
  const std::vector<double> p = uniform(rng, size_t(n), -1, 1), g = uniform(rng, size_t(n), -1, 1);
  const Attrs attrs = AttrsBuilder()
                          .ints("segments", {n})
                          .ints("factors", {rows, cols})
                          .ints("groups", {0, 1})
                          .i("group_size", 2)
                          .build();
  const int64_t half = n / 2 + 1, statsLength = 1 + rows + cols;
  auto run = [&]() {
    KernelResult s = runKernel("adafactor_stats",
                               {makeFloat(DType::F32, {half}, cut(p, 0, half)),
                                makeFloat(DType::F32, {half}, cut(g, 0, half))},
                               {{DType::F64, {statsLength}}}, attrs);
    EXPECT_TRUE(s.status.ok()) << s.status.message();
    KernelResult norms =
        runKernel("adafactor_norms",
                  {makeFloat(DType::F32, {half}, cut(p, 0, half)),
                   makeFloat(DType::F32, {half}, cut(g, 0, half)), f32Scalar(2), s.out(),
                   makeFloat(DType::F32, {rows}, std::vector<double>(size_t(rows), 0.1)),
                   makeFloat(DType::F32, {cols}, std::vector<double>(size_t(cols), 0.1))},
                  {{DType::F64, {1}}}, attrs);
    EXPECT_TRUE(norms.status.ok()) << norms.status.message();
    std::vector<double> out = s.out().doubles();
    out.push_back(norms.out().doubles()[0]);
    return out;
  };
  const std::vector<double> one = run();
  KernelThreads threads(4);
  EXPECT_EQ(run(), one);
}

TEST(AdafactorShard, RejectsBadLayouts) {
  const OwnedTensor x = f32({0.5, -1.0, 0.25, 2.0});
  auto layout = [](std::vector<int64_t> segments, std::vector<int64_t> factors) {
    return AttrsBuilder()
        .ints("segments", std::move(segments))
        .ints("factors", std::move(factors))
        .ints("groups", {0, 1})
        .i("group_size", 2)
        .build();
  };
  struct Case {
    KernelResult result;
    const char *message;
  } cases[] = {
      {runKernel("adafactor_stats", {x, x}, {{DType::F64, {9}}}, layout({6, 2}, {2, 3})),
       "adafactor_stats: needs 2 factors (rows and cols, or 0 and 0) per segment: 2 segments, 2 "
       "factors"},
      {runKernel("adafactor_stats", {x, x}, {{DType::F64, {9}}}, layout({6, 2}, {4, 3, 0, 0})),
       "adafactor_stats: segment 0's factors 4 x 3 do not divide its 6 elements"},
      {runKernel("adafactor_stats", {x, x}, {{DType::F64, {9}}}, layout({6, 3}, {2, 3, 0, 0})),
       "adafactor_stats: segments (9 elements) do not fit 4 x 2 ranks"},
      {runKernel("adafactor_stats", {x, x}, {{DType::F32, {9}}}, layout({6, 2}, {2, 3, 0, 0})),
       "adafactor_stats: stats must be f64 [9], got f32 [9]"},
      {runKernel("adafactor_stats", {x, x}, {{DType::F64, {9}}},
                 AttrsBuilder()
                     .ints("segments", {6, 2})
                     .ints("factors", {2, 3, 0, 0})
                     .ints("groups", {1, 2})
                     .i("group_size", 2)
                     .build()),
       "adafactor_stats: rank 0 is in none of the groups (group size 2)"},
      {runKernel("adafactor_norms",
                 {x, x, f32Scalar(1), makeFloat(DType::F64, {9}, std::vector<double>(9, 1.0)),
                  f32({1, 1}), f32({1, 1}), f32({1, 1})},
                 {{DType::F64, {2}}}, layout({6, 2}, {2, 3, 0, 0})),
       "adafactor_norms: segment 0's exp_avg_sq_col must hold 3 f32 elements, got f32 [2]"},
      {runKernel("adafactor_norms",
                 {x, x, f32Scalar(1), makeFloat(DType::F64, {8}, std::vector<double>(8, 1.0)),
                  f32({1, 1}), f32({1, 1, 1}), f32({1, 1})},
                 {{DType::F64, {2}}}, layout({6, 2}, {2, 3, 0, 0})),
       "adafactor_norms: stats must be f64 [9], got f64 [8]"},
  };
  for (const Case &c : cases) {
    ASSERT_FALSE(c.result.status.ok()) << c.message;
    EXPECT_EQ(c.result.status.message(), c.message);
  }
}

} // namespace
} // namespace plait::rt::test
