// TfIdfVectorizer (opset 9): counts of the pool's n-grams in integer token sequences, as
// comparisons, sums and scatter-adds onto the output positions, computed at run time.
//
// A sequence's n-grams of length n at skip k are its tokens at s, s + (k + 1), ...,
// s + (n - 1)(k + 1), for every start s and every k in [0, max_skip_count] (unigrams once,
// whatever the skip). Each pool n-gram's count is the number of (s, k) at which the
// sequence has it; counts go to the output at the n-gram's ngram_indexes entry, then TF
// keeps them, IDF gives the weight of the output position where the count is non-zero and
// TFIDF multiplies them by it (weights indexed by output position, as onnxruntime and
// ONNX's reference evaluator index them).
#include "compiler/import/onnx/Importer.h"

#include <algorithm>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// The largest count of token comparisons one level may hold, [B, windows, n-grams]: a
/// pool this large against sequences this long is a text pipeline's featurizer, not a
/// training step's input (and its comparisons would take gigabytes).
constexpr int64_t kMaxTfIdfComparisons = int64_t(1) << 28;
/// One past the largest output position (ngram_indexes entry) taken.
constexpr int64_t kMaxTfIdfOutputs = (int64_t(1) << 31) - 1;

LogicalResult importTfIdfVectorizer(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  if (ctx.hasAttr("pool_strings"))
    return ctx.unsupported("TfIdfVectorizer of strings (pool_strings): plait has no string "
                           "tensors; map the tokens to integer ids and give pool_int64s");
  Type element = xType.getElementType();
  if (!element.isInteger(32) && !element.isInteger(64))
    return ctx.error("input X must be int32 or int64 token ids");
  if (xType.getRank() != 1 && xType.getRank() != 2)
    return ctx.error("input X must be [C] or [N, C] (rank " + Twine(xType.getRank()) + ")");
  const int64_t minN = ctx.intAttr("min_gram_length", 0), maxN = ctx.intAttr("max_gram_length", 0),
                maxSkip = ctx.intAttr("max_skip_count", 0);
  if (minN < 1 || maxN < minN)
    return ctx.error("needs 1 <= min_gram_length <= max_gram_length (got " + Twine(minN) + " and " +
                     Twine(maxN) + ")");
  if (maxSkip < 0)
    return ctx.error("max_skip_count must be >= 0 (got " + Twine(maxSkip) + ")");
  const std::string mode = ctx.stringAttr("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return ctx.error("mode must be TF, IDF or TFIDF (got '" + mode + "')");
  SmallVector<int64_t> pool = ctx.intsAttr("pool_int64s"), starts = ctx.intsAttr("ngram_counts"),
                       indexes = ctx.intsAttr("ngram_indexes");
  SmallVector<double> weights = ctx.floatsAttr("weights");
  if (pool.empty())
    return ctx.error("needs a pool of n-grams (pool_int64s)");
  // ngram_counts: where each length's n-grams start in the pool (1-grams first); each level
  // runs to the next start, the last to the pool's end.
  if (starts.empty() || starts.front() != 0)
    return ctx.error("ngram_counts must start at 0, the 1-grams' start in the pool");
  const int64_t levels = int64_t(starts.size()), poolSize = int64_t(pool.size());
  // Each level's n-grams: where they start in the pool, how many, and the first one's
  // position among all levels' (its ngram_indexes entry).
  struct Level {
    int64_t begin, grams, first;
  };
  SmallVector<Level> byLength;
  int64_t ngrams = 0;
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t begin = starts[size_t(l)],
                  end = l + 1 < levels ? starts[size_t(l + 1)] : poolSize;
    if (begin > end || end > poolSize || (end - begin) % (l + 1) != 0)
      return ctx.error("ngram_counts entry " + Twine(l) + " (" + Twine(begin) +
                       ") does not start a whole number of " + Twine(l + 1) +
                       "-grams within the pool of " + Twine(poolSize) + " ids");
    byLength.push_back({begin, (end - begin) / (l + 1), ngrams});
    ngrams += byLength.back().grams;
  }
  if (int64_t(indexes.size()) != ngrams)
    return ctx.error("ngram_indexes has " + Twine(indexes.size()) + " entries for the pool's " +
                     Twine(ngrams) + " n-grams");
  int64_t outputs = 0;
  for (int64_t index : indexes) {
    if (index < 0 || index >= kMaxTfIdfOutputs)
      return ctx.error("ngram_indexes entry " + Twine(index) + " is not in [0, 2^31 - 1)");
    outputs = std::max(outputs, index + 1);
  }
  if (mode != "TF" && !weights.empty() && int64_t(weights.size()) < outputs)
    return ctx.error("weights has " + Twine(weights.size()) + " entries for " + Twine(outputs) +
                     " output positions");

  const bool batched = xType.getRank() == 2;
  const int64_t rows = batched ? xType.getDimSize(0) : 1, length = xType.getShape().back();
  Type i64 = IntegerType::get(ctx.context(), 64), f32 = Float32Type::get(ctx.context());
  Value x = ctx.input(0);
  x = x ? ctx.reshape(ctx.cast(x, i64), {rows, length}) : x;
  if (!x)
    return failure();
  Value total; // [rows, outputs] f32
  for (int64_t n = minN; n <= std::min(maxN, levels); ++n) {
    const auto [begin, grams, first] = byLength[size_t(n - 1)];
    if (grams == 0)
      continue;
    // The pool's n-grams' j-th ids, [grams], compared at every distance.
    SmallVector<Value> ids;
    for (int64_t j = 0; j < n; ++j) {
      SmallVector<int64_t> column;
      for (int64_t g = 0; g < grams; ++g)
        column.push_back(pool[size_t(begin + g * n + j)]);
      ids.push_back(ctx.constant(HostTensor::fromInts(ElemKind::I64, {grams}, column)));
    }
    Value level; // [rows, grams]
    for (int64_t distance = 1; distance <= (n == 1 ? 1 : maxSkip + 1); ++distance) {
      const int64_t windows = length - (n - 1) * distance;
      if (windows <= 0)
        break; // longer distances fit fewer windows still
      if (rows * windows > kMaxTfIdfComparisons / grams)
        return ctx.unsupported("TfIdfVectorizer of " + Twine(rows * windows) + " windows against " +
                               Twine(grams) + " " + Twine(n) +
                               "-grams (at most 2^28 comparisons a level)");
      Value match; // [rows, windows, grams] f32: 1 where every token matches
      for (int64_t j = 0; j < n; ++j) {
        Value tokens = sliceAlong(ctx, x, 1, j * distance, j * distance + windows, 1);
        tokens = tokens ? ctx.reshape(tokens, {rows, windows, 1}) : tokens;
        Value equal =
            tokens && ids[size_t(j)] ? ctx.create<EqualOp>({tokens, ids[size_t(j)]}) : Value();
        Value one = equal ? ctx.cast(equal, f32) : equal;
        match = !one || !match ? one : ctx.create<MulOp>({match, one});
        if (!match)
          return failure();
      }
      Value counted = ctx.create<ReduceSumOp>(
          {match}, {ctx.arrayAttr("axes", {1}), ctx.boolAttr("keepdims", false)});
      level = !counted || !level ? counted : ctx.create<AddOp>({level, counted});
      if (!level)
        return failure();
    }
    if (!level)
      continue; // sequences shorter than every n-gram of this length
    // Onto the output positions: the counts [grams, rows] scatter-added into [outputs, rows]
    // at their ngram_indexes (small integers, exact in f32).
    SmallVector<int64_t> at(indexes.begin() + first, indexes.begin() + first + grams);
    Value byGram = ctx.create<TransposeOp>({level}, {ctx.arrayAttr("perm", {1, 0})});
    Value placed =
        byGram ? ctx.create<GatherGradOp>(
                     {byGram, ctx.constant(HostTensor::fromInts(ElemKind::I64, {grams}, at))},
                     {ctx.i64Attr("axis", 0)}, RankedTensorType::get({outputs, rows}, f32))
               : Value();
    total = !placed || !total ? placed : ctx.create<AddOp>({total, placed});
    if (!total)
      return failure();
  }
  total = total ? ctx.create<TransposeOp>({total}, {ctx.arrayAttr("perm", {1, 0})})
                : ctx.constant(HostTensor::splat(ElemKind::F32, {rows, outputs}, 0.0));
  if (!total)
    return failure();
  if (mode != "TF") {
    SmallVector<double> w(size_t(outputs), 1.0);
    for (int64_t o = 0; o < outputs && o < int64_t(weights.size()); ++o)
      w[size_t(o)] = weights[size_t(o)];
    Value wv = ctx.constant(HostTensor::fromDoubles(ElemKind::F32, {outputs}, w));
    // TFIDF: count x weight; IDF: (count > 0) x weight.
    if (mode == "IDF") {
      Value seen = ctx.create<GreaterOp>({total, ctx.scalar(0.0, f32)});
      total = seen ? ctx.cast(seen, f32) : seen;
    }
    total = total ? ctx.create<MulOp>({total, wv}) : total;
  }
  return ctx.setResult(total && !batched ? ctx.reshape(total, {outputs}) : total);
}

} // namespace

void registerTfIdfOps(OpImporterMap &map) { map["TfIdfVectorizer"] = importTfIdfVectorizer; }

} // namespace plait::onnx_import
