#include "runtime/TensorStore.h"

#include <fmt/format.h>

namespace plait::rt {

Status gatherShards(const TensorStore &store, Communicator &comm, uint32_t tensor,
                    std::vector<uint8_t> &out) {
  const Plan &plan = store.plan();
  const PlanTensor &t = plan.tensors[tensor];
  const auto *mine = static_cast<const uint8_t *>(store.view(tensor).data);
  if (!t.sharded) {
    out.assign(mine, mine + t.bytes);
    return {};
  }
  out.assign(t.shard.paddedNumel * dtypeSize(t.dtype), 0);
  CommGroup group = 0;
  Status s = comm.group(t.shard.groups, group);
  if (s.ok()) {
    CollectiveArgs args;
    args.kind = CollectiveKind::AllGather;
    args.dtype = t.dtype;
    args.send = mine;
    args.recv = out.data();
    args.count = uint64_t(t.numel());
    CommRequest request;
    s = comm.start(group, args, request);
    if (s.ok())
      s = comm.wait(request);
  }
  return s.withPrefix(fmt::format("{}: gathering the shards of tensor {} ('{}'): ", plan.path,
                                  tensor, printable(t.name)));
}

} // namespace plait::rt
