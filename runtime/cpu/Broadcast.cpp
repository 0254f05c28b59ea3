// numpy broadcasting rules for the CPU kernels.
#include "runtime/cpu/Broadcast.h"

#include <algorithm>

namespace plait::rt::cpu {

bool broadcastsTo(ShapeRef from, ShapeRef to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

bool broadcastShapes(ShapeRef a, ShapeRef b, Dims &out) {
  // Built aside: `out` may be the storage `a` or `b` views (shape = broadcast(shape, x)).
  size_t rank = std::max(a.size(), b.size());
  Dims joined;
  joined.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    joined[i] = da == 1 ? db : da;
  }
  out = joined;
  return true;
}

} // namespace plait::rt::cpu
