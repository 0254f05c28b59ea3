// Hand-built plans for collective and sharding tests: tensors placed one after another in
// the arena, collective attributes spelled as in plan.fbs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/PlanBuilder.h"

namespace plait::testing {

/// Builds a PlanDesc tensor by tensor, each at the next 64-byte boundary of the arena (no
/// memory reuse, so that no two tensors overlap unless alias() asks for it).
class PlanMaker {
public:
  explicit PlanMaker(uint32_t worldSize = 1) { desc_.worldSize = worldSize; }

  uint32_t add(std::string name, fb::TensorKind kind, std::vector<int64_t> shape,
               fb::DType dtype = fb::DType::F32);
  /// A second tensor over the same bytes as `of` (in-place collectives).
  uint32_t alias(std::string name, uint32_t of);
  plan::TensorDesc &tensor(uint32_t i) { return desc_.tensors[i]; }
  /// Appends an instruction; returns its index (what `waits` refer to).
  uint32_t instr(std::string kernel, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                 std::vector<plan::AttrDesc> attrs = {}, std::vector<uint32_t> waits = {});
  plan::PlanDesc &desc() { return desc_; }
  /// The plan, with one arena size per rank and, unless set, every input tensor as a graph
  /// input in creation order and the workspace its kernels need (plan::declareWorkspace).
  plan::PlanDesc finish() const;

private:
  plan::PlanDesc desc_;
  uint64_t next_ = 0;
};

plan::AttrDesc intsAttr(std::string name, std::vector<int64_t> values);
plan::AttrDesc strAttr(std::string name, std::string value);
/// `groups` and `group_size` attributes for equal groups, e.g. {{0, 1}, {2, 3}}.
std::vector<plan::AttrDesc> groupAttrs(const std::vector<std::vector<int64_t>> &groups);
/// groupAttrs plus more attributes.
std::vector<plan::AttrDesc> groupAttrs(const std::vector<std::vector<int64_t>> &groups,
                                       std::vector<plan::AttrDesc> more);
/// One group of every rank 0..world-1.
std::vector<std::vector<int64_t>> wholeWorld(uint32_t world);

} // namespace plait::testing
