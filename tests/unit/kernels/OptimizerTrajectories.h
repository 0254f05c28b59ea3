// Shared by the optimizer kernel suites: three-step trajectories from one param and three
// gradients, checked against values baked in from torch.optim (PyTorch 1.13, CPU, float32,
// foreach=False; NAdam as PyTorch 2 computes it, Lion as its reference does).
#pragma once

#include <vector>

#include "KernelTestSupport.h"
#include "runtime/cpu/KernelSupport.h"

namespace plait::rt::test {

inline const std::vector<double> kParam0 = {0.5, -1.25, 2.0, 0.0, -0.75, 3.5};
inline const std::vector<std::vector<double>> kGrads = {
    {-0.30000001192092896, 0.0, 0.30000001192092896, -0.10000000149011612, 0.20000000298023224,
     -0.20000000298023224},
    {0.20999999344348907, -0.1899999976158142, 0.10999999940395355, -0.28999999165534973,
     0.009999999776482582, 0.3100000023841858},
    {0.019999999552965164, 0.3199999928474426, -0.07999999821186066, 0.2199999988079071,
     -0.18000000715255737, 0.11999999731779099},
};

/// PyTorch and these kernels do the same float32 operations in the same order; only fused
/// multiply-adds in PyTorch's vectorised loops may differ, by an ulp per step.
constexpr double kRtol = 2e-6, kAtol = 1e-8;

inline OwnedTensor f32(std::vector<double> v) {
  int64_t n = (int64_t)v.size();
  return makeFloat(DType::F32, {n}, v);
}
inline OwnedTensor f32Scalar(double v) { return makeFloat(DType::F32, {}, {v}); }
/// An lr operand: f64, as plait-compile writes the lr hyper-parameter.
inline OwnedTensor lrScalar(double v) { return makeFloat(DType::F64, {}, {v}); }

/// Runs three steps of `update` (param, grad, lr, step and its states; adamw_update's moments
/// before lr and step, amsgrad's max_exp_avg_sq after) from kParam0 with kGrads and zero
/// states, checking each step's param and states against `expected` (per step: the param,
/// then each state).
inline void checkStateful(const char *update, double lr, const Attrs &attrs, size_t states,
                          const std::vector<std::vector<std::vector<double>>> &expected,
                          double firstStep = 1) {
  int64_t n = (int64_t)kParam0.size();
  cpu::UpdateKind kind;
  ASSERT_TRUE(cpu::updateKindOf(update, kind)) << update;
  OwnedTensor param = f32(kParam0);
  std::vector<OwnedTensor> state(states, f32(std::vector<double>(kParam0.size(), 0.0)));
  for (size_t k = 0; k < expected.size(); ++k) {
    std::vector<OwnedTensor> inputs(4 + states, param);
    inputs[1] = f32(kGrads[k]);
    const size_t lrAt = kind == cpu::UpdateKind::AdamW ? 4 : 2; // adamw: after its moments
    inputs[lrAt] = lrScalar(lr);
    inputs[lrAt + 1] = f32Scalar(firstStep + double(k));
    for (size_t j = 0; j < states; ++j)
      inputs[cpu::updateStateOperand(kind, j)] = state[j];
    std::vector<std::pair<DType, std::vector<int64_t>>> outputs(states + 1, {DType::F32, {n}});
    KernelResult r = runKernel(update, inputs, outputs, attrs);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    for (size_t j = 0; j <= states; ++j)
      EXPECT_TRUE(allClose(r.out(j).floats(), expected[k][j], kRtol, kAtol))
          << update << " result " << j << ", step " << k + 1;
    param = r.out(0);
    for (size_t j = 0; j < states; ++j)
      state[j] = r.out(j + 1);
  }
}

} // namespace plait::rt::test
