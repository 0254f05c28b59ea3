// Data-parallel placements of parameter units, and their model-state bytes per rank
// (MLIR-free, so the formulas are unit-tested on their own).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plait {

enum class PlacementKind { Ddp, Zero1, Zero2, Zero3, Fsdp, Hsdp };

struct Placement {
  PlacementKind kind = PlacementKind::Ddp;
  int64_t hsdpGroup = 0; // G of hsdp:G

  /// "ddp", "zero1", ..., "hsdp:2".
  std::string str() const;
  bool shardsOptimizer() const { return kind != PlacementKind::Ddp; }
  bool shardsGrads() const { return shardsOptimizer() && kind != PlacementKind::Zero1; }
  bool shardsParams() const {
    return kind == PlacementKind::Zero3 || kind == PlacementKind::Fsdp ||
           kind == PlacementKind::Hsdp;
  }
  /// Ranks one shard group spans (1 for ddp: nothing is sharded).
  int64_t shardGroupSize(int64_t worldSize) const;
  /// Ranks holding the same shard (hsdp: worldSize / G; ddp: worldSize; zero: 1).
  int64_t replicaGroupSize(int64_t worldSize) const;
};

/// Parses ddp, zero1, zero2, zero3, fsdp or hsdp:G for `worldSize` ranks. On failure `error`
/// is a complete sentence (unknown name, G not dividing the world size, ...).
std::optional<Placement> parsePlacement(std::string_view text, int64_t worldSize,
                                        std::string &error);

struct PlacementRule {
  std::string regex;
  Placement placement;
};

/// Parses "REGEX=STRATEGY,REGEX=STRATEGY"; the regexes are checked by the caller.
std::optional<std::vector<PlacementRule>> parsePlacementRules(std::string_view text,
                                                              int64_t worldSize,
                                                              std::string &error);

/// The unit a param belongs to by default: its name up to and including the first
/// all-digit component ("blocks.3.attn.w" -> "blocks.3"), else its first component
/// ("tok_emb.weight" -> "tok_emb"); a name without dots is its own unit.
std::string defaultUnitKey(std::string_view paramName);

/// `numel` rounded up to a multiple of `groupSize`.
int64_t paddedNumel(int64_t numel, int64_t groupSize);

/// Bytes one rank holds for a unit of `numel` elements of `elementBytes` each, with
/// `statesPerParam` optimizer tensors per param (AdamW 2, SGD with momentum 1, else 0).
/// These are the closed forms of the ZeRO paper (Rajbhandari et al. 2020, section 5) for
/// full-precision training, where a sharded buffer is the unit padded to a multiple of
/// the shard group size:
///   ddp:        params Ψ,    grads Ψ,    optimizer KΨ
///   zero1:      params Ψ,    grads Ψ,    optimizer KΨp/g
///   zero2:      params Ψ,    grads Ψp/g, optimizer KΨp/g
///   zero3/fsdp: params Ψp/g, grads Ψp/g, optimizer KΨp/g   (hsdp:G the same with g = G)
/// with Ψ = numel * elementBytes, Ψp = paddedNumel(numel, g) * elementBytes and g the
/// shard group size. `grads` counts the gradient bytes kept for the optimizer step.
struct ModelStateBytes {
  int64_t params = 0, grads = 0, optimizer = 0;
};
ModelStateBytes modelStateBytes(const Placement &placement, int64_t numel,
                                int64_t elementBytes, int64_t statesPerParam,
                                int64_t worldSize);

/// --precision: fp32, or bf16-mixed (bf16 working params and gradients, f32 master weights
/// and optimizer state).
enum class Precision { Fp32, Bf16Mixed };
inline constexpr int64_t kHalfBytes = 2;

/// As above, with `precision`. bf16-mixed follows the paper's mixed-precision forms (its
/// K = 12 for Adam: the f32 master copy, 4 bytes, plus each state's 4 bytes), with
/// `elementBytes` the master's:
///   ddp:        params 2Ψ,    grads 2Ψ,    optimizer KΨ
///   zero1:      params 2Ψ,    grads 2Ψ,    optimizer KΨp/g
///   zero2:      params 2Ψ,    grads 2Ψp/g, optimizer KΨp/g
///   zero3/fsdp: params 2Ψp/g, grads 2Ψp/g, optimizer KΨp/g
/// with Ψ and Ψp in elements here and K = (1 + statesPerParam) · elementBytes. zero1 and
/// zero2 shard the f32 masters with the optimizer state; the bf16 working params are
/// gathered once per step and kept until the backward is done.
///
/// `gradBytes` is the bytes of one gradient element as the gradient is reduced and kept:
/// 2 (bf16) unless gradients are accumulated in f32 (--micro-batches), then 4.
ModelStateBytes modelStateBytes(const Placement &placement, int64_t numel,
                                int64_t elementBytes, int64_t statesPerParam, int64_t worldSize,
                                Precision precision, int64_t gradBytes = kHalfBytes);

} // namespace plait
