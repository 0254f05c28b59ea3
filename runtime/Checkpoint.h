// Sharded training checkpoints: each rank writes the params and optimizer state it holds,
// rank 0 writes the metadata (global shapes, shard layout, checksums), published atomically;
// any plan of the same model restores from them, whatever its world size or placement.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/LrController.h"
#include "runtime/Status.h"
#include "runtime/TensorStore.h"
#include "runtime/comm/Comm.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// What a checkpoint records besides the tensors.
struct CheckpointInfo {
  int64_t step = 0;        // the last completed step (1-based); resuming runs step + 1 on
  int64_t globalBatch = 0; // samples per step over every rank, in the steps that wrote it
  uint64_t seed = 0;       // the run's --seed (params initialised from specs)
  /// Samples the run has trained on, over every step and batch size so far.
  int64_t samplesSeen = 0;
  /// Where the next step's global batch starts in the data (a sample index in the epoch),
  /// so that a resumed run continues there whatever its global batch. -1: not recorded
  /// (checkpoints before 2026-12-03, whose runs kept one global batch: step * globalBatch
  /// samples into the data, wrapped at the epoch).
  int64_t dataPosition = -1;
  /// The epoch (0-based) the next step's batch belongs to: with --shuffle, which order the
  /// position indexes. -1: not recorded (computed like the position).
  int64_t dataEpoch = -1;
  /// The --shuffle seed of the run that wrote it; -1: it took the data in order (or, in a
  /// checkpoint before 2026-12-03, is not recorded: those runs could not shuffle).
  int64_t shuffleSeed = -1;
  /// The plateau schedule's state after `step` (LrController): runs of other schedules,
  /// which follow from the step number, record none.
  std::optional<PlateauState> plateau;
};

/// Layout of a checkpoint directory DIR:
///   DIR/step-00000010/meta.json            rank 0: step, world size, the logical tensors
///                                           (global shape, dtype, param or state) and, per
///                                           file, its CRC-32, size and which element ranges
///                                           of which logical tensors it holds
///   DIR/step-00000010/rank-00003.safetensors  what rank 3 alone holds (replicated tensors
///                                           are written once, by rank 0; a shard by the
///                                           ranks of its first group)
///   DIR/latest                              "step-00000010"
/// A checkpoint is written under DIR/.step-N.tmp and renamed into place once every rank's
/// file and the metadata are on disk, so a crash mid-write leaves the previous one intact.
/// The `keep` newest checkpoints are kept (at least 1).
///
/// Collective: every rank of `comm` calls it after the same step.
Status saveCheckpoint(const std::string &dir, const CheckpointInfo &info, const TensorStore &store,
                      Communicator &comm, int keep);

/// One logical tensor of a checkpoint (a param or a state, whole, as a world-1 run holds it)
/// and where its elements are stored.
struct CheckpointTensor {
  std::string kind; // "param" or "state"
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  struct Segment {
    uint32_t file = 0;   // index into CheckpointIndex::files
    std::string key;     // the safetensors entry in that file
    uint64_t start = 0;  // first element of the logical tensor held
    uint64_t count = 0;
    uint64_t offset = 0; // its element offset in the entry
  };
  std::vector<Segment> segments; // sorted by start
  int64_t numel() const;
};

/// One rank's file of a checkpoint, as the metadata describes it.
struct CheckpointFile {
  std::string path;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  std::string contents; // the verified bytes (readCheckpoint); restoring parses these
};

/// A checkpoint's metadata, decoded (and, from readCheckpoint, verified against its files).
struct CheckpointIndex {
  std::string path; // DIR/step-N
  CheckpointInfo info;
  uint32_t worldSize = 1;
  std::string model;
  std::vector<CheckpointFile> files;
  std::map<std::string, CheckpointTensor> tensors;
  // The optimizer updates the saving plan ran (sgd_update, nadam_update, ...; grouped ones by
  // the update they repeat), sorted; empty in checkpoints written before they were recorded.
  std::vector<std::string> updates;
};

/// The optimizer updates `plan` runs, as CheckpointIndex::updates records them.
std::vector<std::string> planUpdates(const Plan &plan);

/// Decodes meta.json's bytes (`path`: the DIR/step-N they belong to) without touching the
/// files: the format and version, the metadata's own CRC-32 (unless `checkCrc` is false,
/// which the fuzzer uses to reach the decoder), the logical tensors and the segments, each
/// of which must lie inside its tensor. Errors name meta.json and the field.
Status parseCheckpointMetadata(const uint8_t *data, size_t size, const std::string &path,
                               CheckpointIndex &out, bool checkCrc = true);

/// Reads and verifies the checkpoint at `path` (a DIR/step-N directory). Any damage (a
/// missing or truncated file, a checksum mismatch, malformed metadata) is an error naming
/// the file.
Status readCheckpoint(const std::string &path, CheckpointIndex &out);

/// The newest checkpoint in `dir` that verifies: DIR/latest first, then the step-N
/// directories from newest to oldest. Each damaged one skipped adds a line to `skipped`.
/// Error when `dir` holds no usable checkpoint.
Status findCheckpoint(const std::string &dir, CheckpointIndex &out,
                      std::vector<std::string> &skipped);

/// True when `dir` holds at least one published checkpoint (DIR/step-N/meta.json), usable or
/// not; what a launcher asks before passing --resume.
bool hasCheckpoint(const std::string &dir);

/// Overwrites every param and optimizer state of `store` (an Executor's arena, or a
/// HostTensors of a device's; this rank's shards included) with the values of a checkpoint
/// read by readCheckpoint or findCheckpoint, resharding as the plan needs. Errors name the
/// logical tensor that is missing or whose shape or dtype differs.
Status restoreCheckpoint(const CheckpointIndex &index, const TensorStore &store);

/// The whole value of logical tensor `name` of a checkpoint read by readCheckpoint or
/// findCheckpoint, assembled from its segments.
Status assembleCheckpointTensor(const CheckpointIndex &index, const std::string &name,
                                HostTensor &out);

} // namespace plait::rt
