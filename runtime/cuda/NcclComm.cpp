// NCCL bootstrap over MPI and the four collectives of a plan.
// UNVERIFIED with more than one rank: the one GPU lent so far (an H200) ran world size 1
// only, where no communicator carries a collective (NCCL refuses two ranks on one GPU).
#include "runtime/cuda/NcclComm.h"

#include <nccl.h>

#include <cstring>

#include "runtime/cuda/CudaStatus.h"

namespace plait::rt {
namespace {

Status ncclTypeOf(DType t, ncclDataType_t &out) {
  switch (t) {
  case DType::F32: out = ncclFloat32; return {};
  case DType::F64: out = ncclFloat64; return {};
  case DType::BF16: out = ncclBfloat16; return {};
  case DType::F16: out = ncclFloat16; return {};
  case DType::I64: out = ncclInt64; return {};
  case DType::I32: out = ncclInt32; return {};
  case DType::I1: out = ncclUint8; return {};
  case DType::I8: out = ncclInt8; return {};
  case DType::U8: out = ncclUint8; return {};
  case DType::U32: out = ncclUint32; return {};
  case DType::U64: out = ncclUint64; return {};
  case DType::I16:
  case DType::U16:
    break; // NCCL has no 16-bit integers
  }
  return Status::errorf("NCCL: no collective type for dtype {}", dtypeName(t));
}

} // namespace

NcclComms::~NcclComms() {
  for (auto &[groups, comm] : comms_)
    if (comm)
      (void)ncclCommDestroy(comm);
}

Status NcclComms::get(const RankGroups &groups, ncclComm *&out) {
  auto it = comms_.find(groups);
  if (it != comms_.end()) {
    out = it->second;
    return {};
  }
  // Every rank interns the partition on the MPI side too (collective over the world).
  CommGroup mpiGroup = 0;
  PLAIT_RETURN_IF_ERROR(bootstrap_.group(groups, mpiGroup));
  out = nullptr;
  uint32_t group = 0, index = 0;
  bool member = groups.locate(bootstrap_.rank(), group, index);
  if (member && groups.groupSize > 1) {
    // The id travels as 16 int64 values (128 bytes), broadcast from the group's member 0.
    static_assert(sizeof(ncclUniqueId) == 16 * sizeof(int64_t), "ncclUniqueId is 128 bytes");
    int64_t words[16] = {};
    if (index == 0) {
      ncclUniqueId id;
      PLAIT_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
      std::memcpy(words, &id, sizeof id);
    }
    CollectiveArgs args;
    args.kind = CollectiveKind::Broadcast;
    args.dtype = DType::I64;
    args.send = words;
    args.recv = words;
    args.count = 16;
    args.root = 0;
    CommRequest request = 0;
    PLAIT_RETURN_IF_ERROR(bootstrap_.start(mpiGroup, args, request));
    PLAIT_RETURN_IF_ERROR(bootstrap_.wait(request));
    ncclUniqueId id;
    std::memcpy(&id, words, sizeof id);
    PLAIT_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&out, int(groups.groupSize), id, int(index)));
  }
  comms_.emplace(groups, out);
  return {};
}

Status NcclComms::enqueue(ncclComm *comm, const CollectiveArgs &args, cudaStream_t stream) {
  ncclDataType_t type;
  PLAIT_RETURN_IF_ERROR(ncclTypeOf(args.dtype, type));
  size_t count = size_t(args.count), element = dtypeSize(args.dtype);
  if (!comm) { // a group of one: every collective is the identity
    if (args.send != args.recv && count != 0)
      PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(args.recv, args.send, count * element,
                                                 cudaMemcpyDeviceToDevice, stream));
    return {};
  }
  switch (args.kind) {
  case CollectiveKind::AllReduce:
    PLAIT_NCCL_RETURN_IF_ERROR(
        ncclAllReduce(args.send, args.recv, count, type, ncclSum, comm, stream));
    break;
  case CollectiveKind::ReduceScatter:
    PLAIT_NCCL_RETURN_IF_ERROR(
        ncclReduceScatter(args.send, args.recv, count, type, ncclSum, comm, stream));
    break;
  case CollectiveKind::AllGather:
    PLAIT_NCCL_RETURN_IF_ERROR(ncclAllGather(args.send, args.recv, count, type, comm, stream));
    break;
  case CollectiveKind::Broadcast:
    PLAIT_NCCL_RETURN_IF_ERROR(
        ncclBroadcast(args.send, args.recv, count, type, int(args.root), comm, stream));
    break;
  }
  return {};
}

Status NcclComms::asyncError() const {
  for (const auto &[groups, comm] : comms_) {
    if (!comm)
      continue;
    ncclResult_t async = ncclSuccess;
    PLAIT_NCCL_RETURN_IF_ERROR(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      return Status::errorf("NCCL: a collective failed: {}", ncclGetErrorString(async));
  }
  return {};
}

void NcclComms::abortAll() {
  for (auto &[groups, comm] : comms_)
    if (comm) {
      (void)ncclCommAbort(comm);
      comm = nullptr;
    }
}

} // namespace plait::rt
