// What plait-run does with a training run's persistent tensors, the same for the CPU backend
// (runPlan, its Executor's arena) and the CUDA backend (cuda_backend::runPlanOnRank, host
// copies of the device's tensors: HostTensors): --checkpoint-dir and --checkpoint-every,
// --resume (the params and states, the data's position, the plateau schedule, the log), and
// --save-weights / --save-ema-weights.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "runtime/Checkpoint.h"
#include "runtime/DataLoader.h"
#include "runtime/LrController.h"
#include "runtime/RunPlan.h"
#include "runtime/TensorStore.h"

namespace plait::rt {

/// --resume: the newest usable checkpoint in --checkpoint-dir, the same on every rank,
/// restored into `store`. Returns what it records (its step, samples seen, data position) in
/// `resumed`, the position filled in from `data` (null: the run has no --data) where an older
/// checkpoint left it out, and sets `data`'s origin there: the plan may take another global
/// batch than the checkpoint's steps did, and the data continues at the checkpoint's position.
/// Collective.
Status resumeFromCheckpoint(const RunOptions &options, const Plan &plan, const TensorStore &store,
                            Communicator &comm, DataLoader *data, CheckpointInfo &resumed);

/// The lr schedule of a resumed run: the plateau schedule continues from the checkpoint's
/// state; a checkpoint without one starts it afresh, and a plan of another schedule ignores
/// one, both said on stderr by the `lead` rank.
void resumeSchedule(const Plan &plan, const RunOptions &options, const CheckpointInfo &resumed,
                    bool lead, LrController &lrs);

/// --log-jsonl, opened afresh; a resumed run's (`resumedStep` > 0) keeps the file's records up
/// to that step and continues after them, so the file reads as one uninterrupted run.
Status openStepLog(const std::string &path, int64_t resumedStep, std::ofstream &log);

/// Whether a checkpoint is written after `step` (every --checkpoint-every steps and after the
/// last, where --checkpoint-dir is given).
bool checkpointDue(const RunOptions &options, int64_t step);

/// What the checkpoint after `step` records: the samples seen over every batch size so far
/// (counted on from `resumedFrom`, the checkpoint the run resumed from, if any), where the next
/// step's batch starts in `data` (null: no --data), the shuffle seed and the plateau state.
CheckpointInfo checkpointAfter(const RunOptions &options, const Plan &plan, int64_t step,
                               const CheckpointInfo &resumedFrom, const DataLoader *data,
                               const LrController &lrs);

/// ", lr reduced N times to X" (or ", lr not reduced") for a plateau run; empty otherwise.
std::string plateauSummary(const LrController &lrs);

/// --save-weights (ema false) / --save-ema-weights (true): every param under its name as
/// safetensors, written by the `writer` rank, sharded ones gathered first over `comm`, so the
/// file's names and shapes are those of a world-1 run; with `ema`, each param that has a
/// weight EMA written with its average's values. Collective where a param is sharded.
Status saveWeights(const std::string &path, const TensorStore &store, Communicator &comm,
                   bool writer, bool ema);

} // namespace plait::rt
