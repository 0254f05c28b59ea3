// The CUDA optimizer kernels (runtime/cuda/kernels/*.cu) under the emulation (Emulation.h)
// against the CPU kernels, bit for bit where both do the same arithmetic: the elementwise
// updates (adagrad, rmsprop, lion, adamax, nadam, radam, adadelta, rprop, asgd), LAMB whole,
// grouped and sharded with its norms, and Adafactor in half precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/cpu/Workspace.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/kernels/Launch.h"
#include "tests/cuda_emulation/EmulatedCall.h"
#include "tests/cuda_emulation/EmulatedTestSupport.h"
#include "tests/cuda_emulation/Emulation.h"
#include "tests/unit/cuda/TensorBytes.h"
#include "tests/unit/kernels/KernelTestSupport.h"

namespace plait {
namespace {

using rt::DType;
using rt::test::OwnedTensor;
using namespace emulated_test;
namespace cuda = rt::cuda;

//===--- adagrad, rmsprop, lion, adamax, nadam, radam, adadelta, rprop and asgd updates ----===//

/// One update's attributes, how many states it takes with them, and the step number it runs.
struct UpdateVariant {
  const char *update;
  rt::Attrs attrs;
  size_t states;
  double step = 3;
};

std::vector<UpdateVariant> updateVariants() {
  using rt::test::AttrsBuilder;
  return {
      {"adagrad_update", {}, 1},
      {"adagrad_update", AttrsBuilder().f("lr_decay", 0.01).f("weight_decay", 0.1).build(), 1},
      {"rmsprop_update", {}, 1},
      {"rmsprop_update", AttrsBuilder().i("centered", 1).f("alpha", 0.9).build(), 2},
      {"rmsprop_update", AttrsBuilder().f("momentum", 0.9).f("weight_decay", 0.01).build(), 2},
      {"rmsprop_update",
       AttrsBuilder().i("centered", 1).f("momentum", 0.5).f("weight_decay", 0.01).build(), 3},
      {"lion_update", {}, 1},
      {"lion_update", AttrsBuilder().f("beta1", 0.8).f("weight_decay", 0.1).build(), 1},
      // Step 1 reads the initial accumulator in place of the sum.
      {"adagrad_update", AttrsBuilder().f("initial_accumulator_value", 0.25).build(), 1, 1},
      {"adamax_update", {}, 2},
      {"adamax_update", AttrsBuilder().f("beta1", 0.8).f("weight_decay", 0.1).build(), 2},
      {"nadam_update", {}, 2},
      // The momentum products walked over 40 steps.
      {"nadam_update", AttrsBuilder().f("momentum_decay", 0.1).f("weight_decay", 0.1).build(),
       2, 40},
      {"radam_update", {}, 2},
      // beta2 0.9 at step 9: rho_t > 5, rectified.
      {"radam_update", AttrsBuilder().f("beta2", 0.9).f("weight_decay", 0.1).build(), 2, 9},
      // PyTorch 2's decoupled_weight_decay: the params decayed, the gradient left alone.
      {"nadam_update",
       AttrsBuilder().f("weight_decay", 0.1).i("decoupled_weight_decay", 1).build(), 2},
      {"radam_update",
       AttrsBuilder().f("beta2", 0.9).f("weight_decay", 0.1).i("decoupled_weight_decay", 1)
           .build(),
       2, 9},
      {"adadelta_update", {}, 2},
      // --lr-scale: the step's lr times the update's lr_scale, on the device.
      {"adadelta_update", AttrsBuilder().f("lr_scale", 0.5).build(), 2},
      {"adagrad_update", AttrsBuilder().f("lr_scale", 3).f("lr_decay", 0.01).build(), 1},
      {"adadelta_update", AttrsBuilder().f("rho", 0.8).f("weight_decay", 0.1).build(), 2},
      {"rprop_update", {}, 2},
      // Step 1 reads the (scaled) lr in place of the step size.
      {"rprop_update", AttrsBuilder().f("lr_scale", 3).build(), 2, 1},
      // Both bounds reached: step sizes in [0, 0.1) grown by 1.5 and shrunk by 0.3.
      {"rprop_update",
       AttrsBuilder().f("etaminus", 0.3).f("etaplus", 1.5).f("step_size_min", 0.02)
           .f("step_size_max", 0.05).build(),
       2},
      // ASGD: step 1 (eta the lr, ax = param), then averaging from t0 (mu 1/3 on step 5).
      {"asgd_update", {}, 1, 1},
      {"asgd_update",
       AttrsBuilder().f("lambd", 0.1).f("alpha", 0.5).f("t0", 1).f("weight_decay", 0.05)
           .f("lr_scale", 2).build(),
       1, 5},
  };
}

/// One update's operands: param, grad (of `gradDtype`), lr, step (v.step), then its states,
/// the first (Adagrad's sum, RMSprop's square_avg) in [0.5, 1) so that a centered RMSprop's
/// square_avg stays above grad_avg squared, the others in [-0.1, 0.1), or [0, 0.1) where they
/// are second moments or their maxima (two-state updates).
std::vector<OwnedTensor> updateOperands(std::mt19937 &rng, DType dtype, DType gradDtype,
                                        int64_t n, const UpdateVariant &v) {
  std::vector<OwnedTensor> in = {
      randomTensor(rng, dtype, {n}, -1, 1), randomTensor(rng, gradDtype, {n}, -1, 1),
      rt::test::makeFloat(DType::F64, {}, {0.01}), rt::test::makeFloat(DType::F32, {}, {v.step})};
  const bool twoState = std::string(v.update) != "rmsprop_update" && v.states == 2;
  for (size_t k = 0; k < v.states; ++k)
    in.push_back(k == 0 ? randomTensor(rng, dtype, {n}, 0.5, 1)
                        : randomTensor(rng, dtype, {n}, twoState ? 0.0 : -0.1, 0.1));
  return in;
}

/// The CUDA backend's kernel `name` on `inputs` under the emulation, each result written over
/// the input it replaces (inputs[resultInput[o]], as plans update in place) when `inPlace`,
/// else into fresh tensors; the results' bytes.
std::vector<std::vector<uint8_t>> emulatedUpdate(const std::string &name,
                                                 std::vector<OwnedTensor> inputs,
                                                 const std::vector<size_t> &resultInput,
                                                 const rt::Attrs &attrs, bool inPlace) {
  rt::CudaKernelFn fn = rt::findCudaKernel(name);
  EXPECT_NE(fn, nullptr) << name;
  if (!fn)
    return {};
  std::vector<rt::TensorView> in, out;
  std::vector<OwnedTensor> fresh;
  for (const OwnedTensor &t : inputs)
    in.push_back(t.view);
  for (size_t r : resultInput)
    fresh.emplace_back(inputs[r].view.dtype, inputs[r].view.shape);
  for (size_t o = 0; o < resultInput.size(); ++o)
    out.push_back(inPlace ? inputs[resultInput[o]].view : fresh[o].view);
  std::vector<uint8_t> workspace;
  emu_test::EmulatedCall r = emu_test::callEmulated(fn, in, out, attrs, 0, 1, workspace);
  EXPECT_TRUE(r.taken && r.status.ok()) << name << ": " << r.status.message() << "; "
                                        << plait_emu::lastFailure();
  std::vector<std::vector<uint8_t>> results;
  for (size_t o = 0; o < resultInput.size(); ++o)
    results.push_back(bytes(inPlace ? inputs[resultInput[o]] : fresh[o]));
  return results;
}

/// `got` (bytes of want's dtype, f32 or bf16) against the CPU kernel's `want`, bit for bit;
/// the first element that differs reported.
void expectSameBits(const std::string &what, const std::vector<uint8_t> &got,
                    const OwnedTensor &want) {
  const std::vector<uint8_t> w = bytes(want);
  if (got == w)
    return;
  ASSERT_EQ(got.size(), w.size()) << what;
  std::vector<float> g = decode(want.view.dtype, got), c = decode(want.view.dtype, w);
  for (size_t i = 0; i < g.size(); ++i)
    if (std::memcmp(&g[i], &c[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << " element " << i << ": emulated CUDA " << g[i] << ", CPU "
                    << c[i];
      return;
    }
}

// The updates with states after lr and step (adagrad, rmsprop, lion, adamax, nadam, radam,
// adadelta, rprop, asgd) through the CUDA backend's kernels (the host checks, the states'
// places in the launch, the device code, the step factors computed there) against the CPU
// kernels, bit for bit (the same operations in the same order, 16-bit params through f32 on
// both): each variant alone, f32 in place and bf16, and three of it grouped (grouped_update)
// with bf16 gradients, over more elements than a chunk and fewer than a warp.
TEST(EmulatedKernels, OptimizerUpdatesMatchTheCpuKernelsBitForBit) {
  std::mt19937 rng(41);
  for (const UpdateVariant &v : updateVariants()) {
    const size_t per = 4 + v.states, perResult = 1 + v.states;
    std::vector<size_t> resultInput = {0};
    for (size_t k = 0; k < v.states; ++k)
      resultInput.push_back(4 + k);
    for (DType dtype : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::string(v.update) + " with " + std::to_string(v.states) + " states, " +
                   rt::dtypeName(dtype));
      std::vector<OwnedTensor> in = updateOperands(rng, dtype, dtype, 2500, v);
      std::vector<std::pair<DType, std::vector<int64_t>>> results(perResult, {dtype, {2500}});
      rt::test::KernelResult cpu = rt::test::runKernel(v.update, in, results, v.attrs);
      ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
      std::vector<std::vector<uint8_t>> got =
          emulatedUpdate(v.update, in, resultInput, v.attrs, dtype == DType::F32);
      ASSERT_EQ(got.size(), perResult);
      for (size_t o = 0; o < perResult; ++o)
        expectSameBits("result " + std::to_string(o), got[o], cpu.out(o));
    }
    SCOPED_TRACE(std::string("grouped ") + v.update + " with " + std::to_string(v.states) +
                 " states");
    std::vector<OwnedTensor> in;
    std::vector<std::pair<DType, std::vector<int64_t>>> results;
    std::vector<size_t> groupedResultInput;
    for (int64_t n : {2500, 1, 300}) {
      for (size_t r : resultInput)
        groupedResultInput.push_back(in.size() + r);
      for (OwnedTensor &t : updateOperands(rng, DType::F32, DType::BF16, n, v))
        in.push_back(t);
      results.insert(results.end(), perResult, {DType::F32, {n}});
    }
    rt::Attrs attrs = v.attrs;
    attrs.set("update", rt::AttrValue{{}, {}, v.update});
    attrs.set("operands_per_update", rt::AttrValue{{int64_t(per)}, {}, {}});
    attrs.set("results_per_update", rt::AttrValue{{int64_t(perResult)}, {}, {}});
    rt::test::KernelResult cpu = rt::test::runKernel("grouped_update", in, results, attrs);
    ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
    std::vector<std::vector<uint8_t>> got =
        emulatedUpdate("grouped_update", in, groupedResultInput, attrs, true);
    ASSERT_EQ(got.size(), results.size());
    for (size_t o = 0; o < results.size(); ++o)
      expectSameBits("result " + std::to_string(o), got[o], cpu.out(o));
  }
}

//===--- LAMB ---------------------------------------------------------------------------------===//

/// The CPU kernel `name` as rank `rank` of `worldSize` (runKernel's call, which is rank 0's),
/// with the workspace kernelWorkspaceBytes declares; its results.
rt::test::KernelResult cpuAsRank(const std::string &name, const std::vector<OwnedTensor> &inputs,
                                 const std::vector<std::pair<DType, std::vector<int64_t>>> &outs,
                                 const rt::Attrs &attrs, uint32_t rank, uint32_t worldSize) {
  rt::test::KernelResult r;
  rt::KernelFn fn = rt::findKernel(name);
  if (!fn) {
    r.status = rt::Status::errorf("no kernel named {}", name);
    return r;
  }
  std::vector<OwnedTensor> owned = inputs;
  std::vector<rt::TensorView> in, out;
  for (const OwnedTensor &t : owned)
    in.push_back(t.view);
  for (const auto &[dtype, shape] : outs)
    r.outputs.emplace_back(dtype, shape);
  for (OwnedTensor &t : r.outputs)
    out.push_back(t.view);
  std::vector<rt::OperandType> inTypes, outTypes;
  for (const rt::TensorView &t : in)
    inTypes.push_back({t.dtype, &t.shape});
  for (const rt::TensorView &t : out)
    outTypes.push_back({t.dtype, &t.shape});
  const uint64_t bytes = rt::kernelWorkspaceBytes(name, inTypes, outTypes, attrs);
  std::vector<uint8_t> block(bytes + rt::kWorkspaceAlignment);
  uint8_t *base = block.data();
  base += (rt::kWorkspaceAlignment - reinterpret_cast<uintptr_t>(base) % rt::kWorkspaceAlignment) %
          rt::kWorkspaceAlignment;
  rt::KernelCall call{in, out, attrs, rank, worldSize, bytes ? base : nullptr, bytes};
  r.status = fn(call);
  return r;
}

/// `got` (bytes of want's dtype, f32 or bf16) against the CPU kernel's `want` where the trust
/// ratio, from sums added in another order, may differ in its last bits: within `rel` of
/// each element (and 1e-8), the first element off reported.
void expectNearRatio(const std::string &what, const std::vector<uint8_t> &got,
                     const OwnedTensor &want, double rel) {
  std::vector<float> g = decode(want.view.dtype, got), w = want.floats();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(double(g[i]) - double(w[i])) <= rel * std::fabs(double(w[i])) + 1e-8)) {
      ADD_FAILURE() << what << " element " << i << ": emulated CUDA " << g[i] << ", CPU "
                    << w[i];
      return;
    }
}

/// The tolerance of a LAMB result whose ratio came from sums: a few f32 ulps, or one bf16 ulp
/// (its rounding from f32 values that may differ in their last bits).
double lambTolerance(DType dtype) { return dtype == DType::BF16 ? 1.0 / 128 : 1e-6; }

/// lamb_update's operands (param, grad, lr, step, exp_avg, exp_avg_sq): params in
/// [-paramScale, paramScale), gradients in [-1, 1), exp_avg in [-0.1, 0.1), exp_avg_sq in
/// [0, 0.1).
std::vector<OwnedTensor> lambOperands(std::mt19937 &rng, DType dtype, DType gradDtype,
                                      int64_t n, double step, double paramScale = 1) {
  return {randomTensor(rng, dtype, {n}, -paramScale, paramScale),
          randomTensor(rng, gradDtype, {n}, -1, 1),
          rt::test::makeFloat(DType::F64, {}, {0.01}),
          rt::test::makeFloat(DType::F32, {}, {step}),
          randomTensor(rng, dtype, {n}, -0.1, 0.1),
          randomTensor(rng, dtype, {n}, 0.0, 0.1)};
}

/// A LAMB variant: its attributes, whether it scales by a trust ratio (weight_decay != 0 or
/// always_adapt), the step it runs and the params' scale.
struct LambVariant {
  const char *what;
  rt::Attrs attrs;
  bool adapts;
  double step = 3, paramScale = 1;
};

std::vector<LambVariant> lambVariants() {
  using rt::test::AttrsBuilder;
  return {
      {"default weight decay", {}, true},
      {"no weight decay", AttrsBuilder().f("weight_decay", 0).build(), false},
      {"always_adapt", AttrsBuilder().f("weight_decay", 0).i("always_adapt", 1).build(), true},
      // Params of norm well above the direction's: a ratio past 1, clipped.
      {"trust_clip", AttrsBuilder().f("weight_decay", 0.1).i("trust_clip", 1).build(), true,
       5, 8},
      {"trust_clip off", AttrsBuilder().f("weight_decay", 0.1).build(), true, 5, 8},
      {"step 1, betas, eps, lr_scale",
       AttrsBuilder().f("beta1", 0.8).f("beta2", 0.99).f("eps", 1e-4).f("lr_scale", 0.5)
           .build(),
       true, 1},
  };
}

// lamb_update of whole tensors (its norms taken by the CUDA kernel: partial sums per slot,
// then a block per tensor) against the CPU kernel: the moments bit for bit, the param within
// a few ulps where a trust ratio scales it (its sums added in another order), bit for bit
// where none does. f32 in place and bf16, 2500 elements (one slot) and 100001 (25 slots of
// uneven widths, many blocks of the update).
TEST(EmulatedKernels, LambUpdateMatchesTheCpuKernel) {
  std::mt19937 rng(43);
  const std::vector<size_t> resultInput = {0, 4, 5};
  ASSERT_GT(cuda::lambNormSlots(100001), 1);
  for (const LambVariant &v : lambVariants())
    for (int64_t n : {2500, 100001})
      for (DType dtype : {DType::F32, DType::BF16}) {
        if (dtype == DType::BF16 && n > 2500)
          continue;
        SCOPED_TRACE(std::string(v.what) + ", " + std::to_string(n) + " elements, " +
                     rt::dtypeName(dtype));
        std::vector<OwnedTensor> in = lambOperands(rng, dtype, dtype, n, v.step, v.paramScale);
        const std::vector<std::pair<DType, std::vector<int64_t>>> results(3, {dtype, {n}});
        rt::test::KernelResult cpu =
            rt::test::runKernel("lamb_update", in, results, v.attrs);
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        std::vector<std::vector<uint8_t>> got =
            emulatedUpdate("lamb_update", in, resultInput, v.attrs, dtype == DType::F32);
        ASSERT_EQ(got.size(), 3u);
        if (v.adapts)
          expectNearRatio("new param", got[0], cpu.out(0), lambTolerance(dtype));
        else
          expectSameBits("new param", got[0], cpu.out(0));
        expectSameBits("new exp_avg", got[1], cpu.out(1));
        expectSameBits("new exp_avg_sq", got[2], cpu.out(2));
      }
}

// adafactor_update of bf16 and f16 params, computed in f32 as the CPU kernel stages them
// (widened, the new second moment kept in f32 until it is rounded into its results): a
// batched matrix with a first moment and weight decay, a vector (exp_avg_sq) with the relative
// step, and a matrix without the param's scale; each in place and into fresh results, every
// result bit for bit the CPU kernel's.
TEST(EmulatedKernels, AdafactorUpdateInHalfMatchesTheCpuKernel) {
  using rt::test::AttrsBuilder;
  std::mt19937 rng(59);
  struct Variant {
    const char *what;
    std::vector<int64_t> shape;
    rt::Attrs attrs;
    bool firstMoment;
  };
  const std::vector<Variant> variants = {
      {"batched matrix, beta1, decay",
       {3, 5, 70},
       AttrsBuilder().f("beta1", 0.9).f("weight_decay", 0.01).f("eps1", 1e-30).build(),
       true},
      {"vector, relative step",
       {37},
       AttrsBuilder().i("relative_step", 1).i("warmup_init", 1).build(),
       false},
      {"matrix, no param scale", {9, 300}, AttrsBuilder().i("scale_parameter", 0).build(), false},
  };
  for (const Variant &v : variants)
    for (DType dtype : {DType::BF16, DType::F16})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(std::string(v.what) + ", " + rt::dtypeName(dtype) +
                     (inPlace ? ", in place" : ""));
        const bool factored = v.shape.size() >= 2;
        std::vector<int64_t> rowShape(v.shape.begin(), v.shape.end() - 1), colShape = v.shape;
        if (factored)
          colShape.erase(colShape.end() - 2);
        std::vector<OwnedTensor> in = {
            randomTensor(rng, dtype, v.shape, -1, 1), randomTensor(rng, dtype, v.shape, -0.5, 0.5),
            rt::test::makeFloat(DType::F64, {}, {0.02}), rt::test::makeFloat(DType::F32, {}, {4})};
        std::vector<std::pair<DType, std::vector<int64_t>>> results = {{dtype, v.shape}};
        std::vector<size_t> resultInput = {0};
        auto state = [&](std::vector<int64_t> shape, double lo, double hi) {
          resultInput.push_back(in.size());
          results.push_back({dtype, shape});
          in.push_back(randomTensor(rng, dtype, shape, lo, hi));
        };
        if (v.firstMoment)
          state(v.shape, -0.1, 0.1);
        if (factored) {
          state(rowShape, 0.01, 0.2);
          state(colShape, 0.01, 0.2);
        } else {
          state(v.shape, 0.01, 0.2);
        }
        rt::test::KernelResult cpu = rt::test::runKernel("adafactor_update", in, results, v.attrs);
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        std::vector<std::vector<uint8_t>> got =
            emulatedUpdate("adafactor_update", in, resultInput, v.attrs, inPlace);
        ASSERT_EQ(got.size(), results.size());
        for (size_t r = 0; r < results.size(); ++r)
          expectSameBits("result " + std::to_string(r), got[r], cpu.out(r));
      }
}

// grouped_update of lamb_update: 53 tensors (more than a launch's list of updates, 36, and of
// norms, 48), one of them many slots wide, f32 params with bf16 gradients, each with its own
// ratio; adapting and not.
TEST(EmulatedKernels, GroupedLambUpdateMatchesTheCpuKernel) {
  std::mt19937 rng(47);
  for (const LambVariant &v : lambVariants()) {
    SCOPED_TRACE(v.what);
    std::vector<OwnedTensor> in;
    std::vector<std::pair<DType, std::vector<int64_t>>> results;
    std::vector<size_t> resultInput;
    for (int t = 0; t < 53; ++t) {
      const int64_t n = t == 7 ? 30000 : 1 + (t * 97) % 700;
      for (size_t r : {0, 4, 5})
        resultInput.push_back(in.size() + r);
      for (OwnedTensor &x : lambOperands(rng, DType::F32, DType::BF16, n, v.step, v.paramScale))
        in.push_back(x);
      results.insert(results.end(), 3, {DType::F32, {n}});
    }
    rt::Attrs attrs = v.attrs;
    attrs.set("update", rt::AttrValue{{}, {}, "lamb_update"});
    attrs.set("operands_per_update", rt::AttrValue{{6}, {}, {}});
    attrs.set("results_per_update", rt::AttrValue{{3}, {}, {}});
    rt::test::KernelResult cpu = rt::test::runKernel("grouped_update", in, results, attrs);
    ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
    std::vector<std::vector<uint8_t>> got =
        emulatedUpdate("grouped_update", in, resultInput, attrs, true);
    ASSERT_EQ(got.size(), results.size());
    for (size_t o = 0; o < results.size(); ++o) {
      const std::string what = "update " + std::to_string(o / 3) + " result " +
                               std::to_string(o % 3);
      if (o % 3 == 0 && v.adapts)
        expectNearRatio(what, got[o], cpu.out(o), lambTolerance(DType::F32));
      else
        expectSameBits(what, got[o], cpu.out(o));
    }
  }
}

/// A flat shard of a unit of params laid end to end (`segments`), as rank `rank` sees it:
/// `numel` elements a shard, in the groups of `groups` (group-major) of `groupSize` ranks.
struct LambShard {
  const char *what;
  std::vector<int64_t> segments;
  int64_t numel;
  std::vector<int64_t> groups;
  int64_t groupSize;
  uint32_t rank, worldSize;
};

// Segments of 700, 5000, 1300 and 9 in shards of 4000 (groups {0, 2} and {1, 3}): rank 0 has
// segment 0 and the first part of segment 1, rank 2 (index 1 in its group) the rest of
// segment 1, segments 2 and 3, then padding. Segments of 700 and 3000 in shards of 2000 among
// three ranks: rank 1 has the end of segment 1 and padding, rank 2 only padding.
std::vector<LambShard> lambShards() {
  return {{"rank 0 of 2, a segment cut", {700, 5000, 1300, 9}, 4000, {0, 2, 1, 3}, 2, 0, 4},
          {"rank 2 (index 1 of 2), padding after", {700, 5000, 1300, 9}, 4000, {0, 2, 1, 3}, 2,
           2, 4},
          {"rank 1 of 3", {700, 3000}, 2000, {0, 1, 2}, 3, 1, 3},
          {"rank 2 of 3, all padding", {700, 3000}, 2000, {0, 1, 2}, 3, 2, 3}};
}

rt::Attrs withShard(rt::Attrs attrs, const LambShard &shard) {
  attrs.set("segments", rt::AttrValue{shard.segments, {}, {}});
  attrs.set("groups", rt::AttrValue{shard.groups, {}, {}});
  attrs.set("group_size", rt::AttrValue{{shard.groupSize}, {}, {}});
  return attrs;
}

// lamb_norms on shards of each layout (a segment cut at the shard's edge, padding after the
// last segment, a shard all padding): this rank's sums per segment within 1e-5 of the CPU
// kernel's (added in another order), exactly 0 for the segments it has none of.
TEST(EmulatedKernels, LambNormsMatchTheCpuKernel) {
  std::mt19937 rng(53);
  rt::CudaKernelFn fn = rt::findCudaKernel("lamb_norms");
  ASSERT_NE(fn, nullptr);
  for (const LambShard &shard : lambShards())
    for (DType dtype : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(std::string(shard.what) + ", " + rt::dtypeName(dtype));
      std::vector<OwnedTensor> all = lambOperands(rng, dtype, dtype, shard.numel, 4);
      std::vector<OwnedTensor> in = {all[0], all[1], all[3], all[4], all[5]};
      const rt::Attrs attrs = withShard(rt::test::AttrsBuilder().f("weight_decay", 0.05).build(),
                                        shard);
      const int64_t segments = int64_t(shard.segments.size());
      rt::test::KernelResult cpu = cpuAsRank("lamb_norms", in, {{DType::F32, {segments, 2}}},
                                             attrs, shard.rank, shard.worldSize);
      ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
      std::vector<rt::TensorView> views;
      for (const OwnedTensor &t : in)
        views.push_back(t.view);
      OwnedTensor norms(DType::F32, {segments, 2});
      std::vector<rt::TensorView> out = {norms.view};
      std::vector<uint8_t> workspace;
      emu_test::EmulatedCall r =
          emu_test::callEmulated(fn, views, out, attrs, shard.rank, shard.worldSize, workspace);
      ASSERT_TRUE(r.taken && r.status.ok()) << r.status.message() << "; "
                                            << plait_emu::lastFailure();
      std::vector<float> got = norms.floats(), want = cpu.out(0).floats();
      for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] == 0)
          EXPECT_EQ(got[i], 0.0f) << "sum " << i;
        else
          EXPECT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i])) << "sum " << i;
      }
    }
}

// lamb_update on shards with the unit's norms given (one segment's param sum 0: ratio 1):
// the ratio per segment from the same f32 sums, so bit for bit, adapting (with and without
// trust_clip) or not, f32 in place and bf16.
TEST(EmulatedKernels, ShardedLambUpdateMatchesTheCpuKernelBitForBit) {
  std::mt19937 rng(59);
  rt::CudaKernelFn fn = rt::findCudaKernel("lamb_update");
  ASSERT_NE(fn, nullptr);
  using rt::test::AttrsBuilder;
  const std::vector<std::pair<const char *, rt::Attrs>> variants = {
      {"adapting", {}},
      {"trust_clip", AttrsBuilder().f("weight_decay", 0.1).i("trust_clip", 1).build()},
      {"not adapting", AttrsBuilder().f("weight_decay", 0).build()}};
  for (const LambShard &shard : lambShards())
    for (const auto &[variant, variantAttrs] : variants)
      for (DType dtype : {DType::F32, DType::BF16}) {
        SCOPED_TRACE(std::string(shard.what) + ", " + variant + ", " + rt::dtypeName(dtype));
        const int64_t segments = int64_t(shard.segments.size());
        std::vector<OwnedTensor> in = lambOperands(rng, dtype, dtype, shard.numel, 6);
        std::vector<double> sums;
        for (int64_t k = 0; k < segments; ++k) {
          // Sums of squares over a segment: param's about a third of its length, u's about
          // its length; segment 1's param sum 0 (ratio 1), some ratios past 1 (clipped).
          const double length = double(shard.segments[size_t(k)]);
          sums.push_back(k == 1 ? 0.0 : length * (k % 2 ? 3.0 : 0.3));
          sums.push_back(length * (0.5 + 0.1 * double(k)));
        }
        in.push_back(rt::test::makeFloat(DType::F32, {segments, 2}, sums));
        const rt::Attrs attrs = withShard(variantAttrs, shard);
        const std::vector<std::pair<DType, std::vector<int64_t>>> results(
            3, {dtype, {shard.numel}});
        rt::test::KernelResult cpu = cpuAsRank("lamb_update", in, results, attrs, shard.rank,
                                               shard.worldSize);
        ASSERT_TRUE(cpu.status.ok()) << cpu.status.message();
        std::vector<rt::TensorView> views, out;
        for (const OwnedTensor &t : in)
          views.push_back(t.view);
        std::vector<OwnedTensor> fresh(3, OwnedTensor(dtype, {shard.numel}));
        const bool inPlace = dtype == DType::F32;
        for (size_t o = 0; o < 3; ++o)
          out.push_back(inPlace ? in[o == 0 ? 0 : 3 + o].view : fresh[o].view);
        std::vector<uint8_t> workspace;
        emu_test::EmulatedCall r = emu_test::callEmulated(fn, views, out, attrs, shard.rank,
                                                          shard.worldSize, workspace);
        ASSERT_TRUE(r.taken && r.status.ok()) << r.status.message() << "; "
                                              << plait_emu::lastFailure();
        for (size_t o = 0; o < 3; ++o)
          expectSameBits("result " + std::to_string(o),
                         bytes(inPlace ? in[o == 0 ? 0 : 3 + o] : fresh[o]), cpu.out(o));
      }
}

// The CUDA kernels' checking calls refuse the shard layouts the CPU kernels refuse, with the
// same messages: norms without segments, norms of the wrong shape, segments past the group's
// shards, a rank in none of the groups, an empty segment.
TEST(EmulatedKernels, LambRefusesWhatTheCpuKernelRefuses) {
  using rt::test::AttrsBuilder;
  const OwnedTensor x = rt::test::makeFloat(DType::F32, {4}, {0.5, -1.0, 0.25, 2.0});
  const OwnedTensor lr = rt::test::makeFloat(DType::F64, {}, {0.1}),
                    step = rt::test::makeFloat(DType::F32, {}, {1});
  const OwnedTensor norms1 = rt::test::makeFloat(DType::F32, {1, 2}, {1.0, 1.0}),
                    norms3 = rt::test::makeFloat(DType::F32, {3, 2}, std::vector<double>(6, 0));
  const rt::Attrs twoRanks =
      AttrsBuilder().ints("segments", {3, 4}).ints("groups", {0, 1}).i("group_size", 2).build();
  const std::vector<std::pair<DType, std::vector<int64_t>>> updated(3, {DType::F32, {4}}),
      norms(1, {DType::F32, {2, 2}});
  struct Case {
    const char *kernel;
    std::vector<OwnedTensor> inputs;
    std::vector<std::pair<DType, std::vector<int64_t>>> results;
    rt::Attrs attrs;
  } cases[] = {
      {"lamb_update", {x, x, lr, step, x, x, norms1}, updated, {}},
      {"lamb_update", {x, x, lr, step, x, x, norms3}, updated, twoRanks},
      {"lamb_norms", {x, x, step, x, x}, norms, AttrsBuilder().ints("segments", {3, 4}).build()},
      {"lamb_norms", {x, x, step, x, x}, norms,
       AttrsBuilder().ints("segments", {3, 4}).ints("groups", {1, 2}).i("group_size", 2).build()},
      {"lamb_norms", {x, x, step, x, x}, norms, AttrsBuilder().ints("segments", {3, 0}).build()},
  };
  for (const Case &c : cases) {
    rt::test::KernelResult cpu = rt::test::runKernel(c.kernel, c.inputs, c.results, c.attrs);
    ASSERT_FALSE(cpu.status.ok()) << c.kernel;
    SCOPED_TRACE(cpu.status.message());
    std::vector<rt::TensorView> in, out;
    for (const OwnedTensor &t : c.inputs)
      in.push_back(t.view);
    for (const OwnedTensor &t : cpu.outputs)
      out.push_back(t.view);
    std::vector<uint8_t> workspace;
    emu_test::EmulatedCall r =
        emu_test::callEmulated(rt::findCudaKernel(c.kernel), in, out, c.attrs, 0, 1, workspace);
    EXPECT_FALSE(r.taken);
    EXPECT_EQ(r.status.message(), cpu.status.message());
  }
}

} // namespace
} // namespace plait
