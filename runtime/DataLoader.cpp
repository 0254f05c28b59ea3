// Training data loader: whole .npy files in memory, contiguous batches copied per step.
#include "runtime/DataLoader.h"

#include <cstring>
#include <filesystem>

#include "runtime/io/Npy.h"

namespace plait::rt {

Status DataLoader::open(const std::string &dir, const Plan &plan, DataLoader &out,
                        uint32_t worldSize, uint32_t rank) {
  out = DataLoader{};
  out.plan_ = &plan;
  out.world_ = worldSize;
  out.rank_ = rank;
  if (!std::filesystem::is_directory(dir))
    return Status::errorf("--data {}: not a directory", dir);
  if (plan.inputs.empty())
    return Status::errorf("--data {}: {} has no graph inputs to feed", dir, plan.path);
  const PlanTensor &first = plan.tensors[plan.inputs[0]];
  if (first.shape.empty())
    return Status::errorf("{}: input '{}' is a scalar; batch inputs need a leading sample "
                          "dimension", plan.path, printable(first.name));
  out.batch_ = first.shape[0];
  for (uint32_t t : plan.inputs) {
    const PlanTensor &input = plan.tensors[t];
    std::string path = (std::filesystem::path(dir) / (input.name + ".npy")).string();
    if (!std::filesystem::exists(path))
      return Status::errorf("--data {}: missing {} for graph input '{}' ({} {})", dir, path,
                            printable(input.name), dtypeName(input.dtype),
                            shapeString(input.shape));
    HostTensor column;
    PLAIT_RETURN_IF_ERROR(readNpy(path, column));
    if (input.shape.empty() || input.shape[0] != out.batch_)
      return Status::errorf("{}: inputs disagree on the batch size ('{}' is {}, '{}' is {})",
                            plan.path, printable(first.name), shapeString(first.shape),
                            printable(input.name), shapeString(input.shape));
    std::vector<int64_t> perSample(input.shape.begin() + 1, input.shape.end());
    if (column.dtype != input.dtype || column.shape.empty() ||
        std::vector<int64_t>(column.shape.begin() + 1, column.shape.end()) != perSample)
      return Status::errorf("{}: expected {} samples of shape {} (leading dimension = "
                            "samples), got {} {}",
                            path, dtypeName(input.dtype), shapeString(perSample),
                            dtypeName(column.dtype), shapeString(column.shape));
    int64_t n = column.shape[0];
    if (out.columns_.empty())
      out.samples_ = n;
    else if (n != out.samples_)
      return Status::errorf("{}: {} samples, but {}.npy has {}", path, n,
                            printable(first.name), out.samples_);
    out.columns_.push_back(std::move(column));
  }
  if (out.world_ == 1 && out.samples_ < out.batch_)
    return Status::errorf("--data {}: {} samples, fewer than one batch of {}", dir,
                          out.samples_, out.batch_);
  if (out.samples_ < out.batch_ * out.world_)
    return Status::errorf("--data {}: {} samples, fewer than one global batch of {} ({} ranks "
                          "x {})", dir, out.samples_, out.batch_ * out.world_, out.world_,
                          out.batch_);
  return {};
}

int64_t DataLoader::leftInOriginEpoch() const {
  int64_t global = batch_ * world_;
  return originPosition_ < samples_ ? (samples_ - originPosition_) / global : 0;
}

std::pair<int64_t, int64_t> DataLoader::fromStart(int64_t step, int64_t globalBatch) const {
  int64_t perEpoch = globalBatch > 0 ? samples_ / globalBatch : 0;
  if (perEpoch == 0)
    return {0, 0};
  return {(step % perEpoch) * globalBatch, step / perEpoch};
}

int64_t DataLoader::position(int64_t step) const {
  int64_t global = batch_ * world_;
  int64_t k = step - originStep_;
  if (k < 0) // before the origin: the run that wrote the checkpoint, had it this batch
    return fromStart(step, global).first;
  // Whole global batches left in the origin's epoch, then whole epochs from sample 0.
  int64_t left = leftInOriginEpoch();
  if (k < left)
    return originPosition_ + k * global;
  return ((k - left) % batchesPerEpoch()) * global;
}

int64_t DataLoader::epoch(int64_t step) const {
  int64_t k = step - originStep_;
  if (k < 0)
    return fromStart(step, batch_ * world_).second;
  int64_t left = leftInOriginEpoch();
  if (k < left)
    return originEpoch_;
  return originEpoch_ + 1 + (k - left) / batchesPerEpoch();
}

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

} // namespace

void DataLoader::setShuffle(uint64_t seed) {
  shuffle_ = true;
  seed_ = seed;
  orderEpoch_ = -1;
  order_.assign(size_t(samples_), 0);
  gathered_.resize(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i)
    gathered_[i].resize(plan_->tensors[plan_->inputs[i]].bytes);
}

const uint8_t *DataLoader::batchData(int64_t step, size_t input) {
  int64_t first = position(step) + rank_ * batch_;
  size_t sampleBytes = plan_->tensors[plan_->inputs[input]].bytes / static_cast<size_t>(batch_);
  const uint8_t *column = columns_[input].bytes.data();
  if (!shuffle_)
    return column + first * sampleBytes;
  if (int64_t e = epoch(step); e != orderEpoch_) {
    // Epoch e's order: Fisher-Yates from the identity, one splitmix64 stream per (seed, e);
    // the modulo's bias (below 2^-40 for a billion samples) does not matter here.
    uint64_t state = seed_ ^ (uint64_t(e) * 0xd1b54a32d192ed03ULL);
    for (int64_t i = 0; i < samples_; ++i)
      order_[size_t(i)] = i;
    for (int64_t i = samples_ - 1; i > 0; --i)
      std::swap(order_[size_t(i)], order_[size_t(splitmix64(state) % uint64_t(i + 1))]);
    orderEpoch_ = e;
  }
  uint8_t *out = gathered_[input].data();
  for (int64_t j = 0; j < batch_; ++j)
    std::memcpy(out + size_t(j) * sampleBytes,
                column + size_t(order_[size_t(first + j)]) * sampleBytes, sampleBytes);
  return out;
}

Status DataLoader::loadBatch(int64_t step, Executor &exec) {
  for (size_t i = 0; i < columns_.size(); ++i) {
    const PlanTensor &input = plan_->tensors[plan_->inputs[i]];
    // Raw bytes rather than a TensorView: building one would copy (allocate) the shape.
    PLAIT_RETURN_IF_ERROR(exec.setInput(i, input.dtype, input.shape, batchData(step, i)));
  }
  return {};
}

} // namespace plait::rt
