// Attribute and size helpers shared by the cost model's two halves (OpCost.cpp: what each
// instruction costs; CostModel.cpp: the ranks, collectives and the step simulation).
#pragma once

#include <algorithm>
#include <string>

#include "passes/analysis/CostModel.h"

namespace plait::cost {

inline double numel(const plan::TensorDesc &t) { return double(plan::numelOf(t)); }

inline int64_t intAttr(const plan::InstrDesc &instr, const char *name, int64_t fallback) {
  for (const plan::AttrDesc &a : instr.attrs)
    if (a.name == name && !a.ints.empty())
      return a.ints.front();
  return fallback;
}

inline std::string stringAttr(const plan::InstrDesc &instr, const char *name) {
  for (const plan::AttrDesc &a : instr.attrs)
    if (a.name == name)
      return a.str;
  return "";
}

/// Multiply-adds per GEMM call of a contraction (its FLOPs over its GEMM calls, `rows`).
inline double multiplyAddsPerCall(const OpCost &cost) {
  return cost.flops / 2 / std::max(cost.rows, 1.0);
}

} // namespace plait::cost
