// The layout of a sharded Adafactor step (ir/PlaitTrainOps.td: plait.adafactor_stats,
// plait.adafactor_norms and adafactor_update with `segments`), shared by the verifiers, both
// backends' kernels and their tests, so that they cannot read it differently.
//
// A unit's params lie end to end in its flat buffer (`segments`: their element counts), which
// plait-shard cuts into equal shards, one per rank of a group. Each param's second moment is
// factored over its last two dimensions (`factors`: rows and cols of each segment, the
// param's shape[-2] and shape[-1]) or, for a param of rank < 2, kept whole (factors 0, 0).
// Every rank holds the second-moment states whole (they are a row and a column per matrix,
// small) and the stats, summed over the group, tell it what each row, column and element
// needs from the other ranks' shards:
//   [0, S)               each segment's sum of param^2 (the step size's rms(param));
//   then per segment     factored: its rows' sums of g^2 + eps1 (length / cols of them, row
//                        r of batch b at b * rows + r), then its columns' (length / rows, column
//                        c of batch b at b * cols + c); unfactored: g^2 + eps1 of each element.
// Plain data, no MLIR and no CUDA.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace plait::adafactor {

/// One param of a sharded Adafactor unit.
struct Segment {
  int64_t start = 0;          // its first element in the unit's flat buffer
  int64_t length = 0;         // its elements
  int64_t rows = 0, cols = 0; // its last two dimensions when factored; 0, 0 otherwise
  int64_t stats = 0;          // where its rows (then columns), or its elements, start in stats

  bool factored() const { return rows > 0; }
  int64_t batches() const { return factored() ? length / (rows * cols) : 1; }
  /// Row sums (batches x rows) and column sums (batches x cols) of a factored segment.
  int64_t rowCount() const { return length / cols; }
  int64_t colCount() const { return length / rows; }
  /// Its entries in stats after the S param sums.
  int64_t statsLength() const { return factored() ? rowCount() + colCount() : length; }
};

/// Checks `lengths` against `factors` (rows and cols of each segment) and sets the stats'
/// length and the segments' total; returns an error message (empty when they fit). Allocates
/// only for the message (the CPU kernels call it on every step).
inline std::string checkSegments(const std::vector<int64_t> &lengths,
                                 const std::vector<int64_t> &factors, int64_t &statsLength,
                                 int64_t &total) {
  if (lengths.empty())
    return "needs at least one segment";
  if (factors.size() != 2 * lengths.size())
    return "needs 2 factors (rows and cols, or 0 and 0) per segment: " +
           std::to_string(lengths.size()) + " segments, " + std::to_string(factors.size()) +
           " factors";
  statsLength = int64_t(lengths.size());
  total = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    const int64_t length = lengths[k], rows = factors[2 * k], cols = factors[2 * k + 1];
    if (length < 1)
      return "segment " + std::to_string(k) + " has " + std::to_string(length) + " elements";
    const bool none = rows == 0 && cols == 0;
    if (!none && (rows < 1 || cols < 1 || length % (rows * cols) != 0))
      return "segment " + std::to_string(k) + "'s factors " + std::to_string(rows) + " x " +
             std::to_string(cols) + " do not divide its " + std::to_string(length) + " elements";
    statsLength += none ? length : length / cols + length / rows;
    total += length;
  }
  return {};
}

/// Calls fn(k, segment, moment) for each segment of checked `lengths` and `factors` in order:
/// moment is the index of its first second-moment state among the op's (a factored
/// segment's row state, its column state after it; an unfactored one's exp_avg_sq).
template <typename Fn>
void forEachSegment(const std::vector<int64_t> &lengths, const std::vector<int64_t> &factors,
                    Fn &&fn) {
  Segment s;
  s.stats = int64_t(lengths.size());
  int moment = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    s.length = lengths[k];
    s.rows = factors[2 * k];
    s.cols = factors[2 * k + 1];
    fn(k, static_cast<const Segment &>(s), moment);
    moment += s.factored() ? 2 : 1;
    s.start += s.length;
    s.stats += s.statsLength();
  }
}

/// The segments of `lengths` with `factors` as a list (checkSegments' message when they do
/// not fit).
inline std::string layoutSegments(const std::vector<int64_t> &lengths,
                                  const std::vector<int64_t> &factors, std::vector<Segment> &out,
                                  int64_t &statsLength) {
  out.clear();
  int64_t total = 0;
  std::string error = checkSegments(lengths, factors, statsLength, total);
  if (error.empty())
    forEachSegment(lengths, factors, [&](size_t, const Segment &s, int) { out.push_back(s); });
  return error;
}

/// Calls fn(k, segment, moment, lo, hi) (as forEachSegment's) for each segment with elements
/// in this rank's shard, which starts at `offset` in the flat buffer and holds `numel`
/// elements: its local elements [lo, hi), the segment's elements [offset + lo - start,
/// offset + hi - start).
template <typename Fn>
void forShardPieces(const std::vector<int64_t> &lengths, const std::vector<int64_t> &factors,
                    int64_t offset, int64_t numel, Fn &&fn) {
  forEachSegment(lengths, factors, [&](size_t k, const Segment &s, int moment) {
    const int64_t lo = s.start - offset > 0 ? s.start - offset : 0;
    const int64_t end = s.start + s.length - offset;
    const int64_t hi = end < numel ? end : numel;
    if (lo < hi)
      fn(k, s, moment, lo, hi);
  });
}

/// This rank's shard offset in the flat buffer: its index in its group (the first group of
/// `groups`, cut into groups of `groupSize`, that holds `rank`) times `numel`; -1 when no
/// group holds it.
inline int64_t shardOffset(const std::vector<int64_t> &groups, int64_t groupSize, int64_t rank,
                           int64_t numel) {
  if (groups.empty())
    return 0;
  if (groupSize < 1)
    return -1;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i] == rank)
      return int64_t(i % size_t(groupSize)) * numel;
  return -1;
}

} // namespace plait::adafactor
