// PlanMaker: sequential arena placement for hand-built test plans.
#include "PlanMaker.h"

namespace plait::testing {

uint32_t PlanMaker::add(std::string name, fb::TensorKind kind, std::vector<int64_t> shape,
                        fb::DType dtype) {
  plan::TensorDesc t;
  t.name = std::move(name);
  t.kind = kind;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.offset = next_;
  uint64_t bytes = plan::elementSize(dtype);
  for (int64_t d : t.shape)
    bytes *= uint64_t(d);
  next_ += (bytes + 63) / 64 * 64;
  desc_.tensors.push_back(std::move(t));
  return uint32_t(desc_.tensors.size() - 1);
}

uint32_t PlanMaker::alias(std::string name, uint32_t of) {
  plan::TensorDesc t = desc_.tensors[of];
  t.name = std::move(name);
  t.kind = fb::TensorKind::Activation;
  t.data.clear();
  t.init.clear();
  desc_.tensors.push_back(std::move(t));
  return uint32_t(desc_.tensors.size() - 1);
}

uint32_t PlanMaker::instr(std::string kernel, std::vector<uint32_t> inputs,
                          std::vector<uint32_t> outputs, std::vector<plan::AttrDesc> attrs,
                          std::vector<uint32_t> waits) {
  plan::InstrDesc in;
  in.kernel = std::move(kernel);
  in.inputs = std::move(inputs);
  in.outputs = std::move(outputs);
  in.attrs = std::move(attrs);
  in.name = "/" + in.kernel + "_" + std::to_string(desc_.instrs.size());
  in.waits = std::move(waits);
  desc_.instrs.push_back(std::move(in));
  return uint32_t(desc_.instrs.size() - 1);
}

plan::PlanDesc PlanMaker::finish() const {
  plan::PlanDesc out = desc_;
  out.arenaBytes.assign(out.worldSize, next_ == 0 ? 64 : next_);
  if (out.inputs.empty())
    for (uint32_t i = 0; i < out.tensors.size(); ++i)
      if (out.tensors[i].kind == fb::TensorKind::Input)
        out.inputs.push_back(i);
  if (out.workspaceBytes.empty())
    plan::declareWorkspace(out);
  return out;
}

plan::AttrDesc intsAttr(std::string name, std::vector<int64_t> values) {
  plan::AttrDesc a;
  a.name = std::move(name);
  a.ints = std::move(values);
  return a;
}

plan::AttrDesc strAttr(std::string name, std::string value) {
  plan::AttrDesc a;
  a.name = std::move(name);
  a.str = std::move(value);
  return a;
}

std::vector<plan::AttrDesc> groupAttrs(const std::vector<std::vector<int64_t>> &groups) {
  std::vector<int64_t> flat;
  for (const auto &g : groups)
    flat.insert(flat.end(), g.begin(), g.end());
  int64_t size = groups.empty() ? 0 : int64_t(groups[0].size());
  return {intsAttr("groups", flat), intsAttr("group_size", {size})};
}

std::vector<plan::AttrDesc> groupAttrs(const std::vector<std::vector<int64_t>> &groups,
                                       std::vector<plan::AttrDesc> more) {
  std::vector<plan::AttrDesc> attrs = groupAttrs(groups);
  attrs.insert(attrs.end(), more.begin(), more.end());
  return attrs;
}

std::vector<std::vector<int64_t>> wholeWorld(uint32_t world) {
  std::vector<int64_t> all;
  for (uint32_t r = 0; r < world; ++r)
    all.push_back(r);
  return {all};
}

} // namespace plait::testing
