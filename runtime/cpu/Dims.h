// Shapes and strides the kernels compute per call, held inline rather than on the heap: at
// most kMaxRank dimensions, the limit the plan loader enforces on every tensor.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/Tensor.h"

namespace plait::rt::cpu {

/// A read-only list of dimensions: a std::vector, a Dims, or a braced list (which lives until
/// the end of the full expression it appears in, so pass it straight to a call).
class ShapeRef {
public:
  ShapeRef(const std::vector<int64_t> &v) : data_(v.data()), size_(v.size()) {}
  // Holding on to a braced list's array is what this view is for: the array outlives the
  // call the list is passed to, and no ShapeRef is kept beyond one.
#if defined(__GNUC__) && !defined(__clang__) // GCC's warning; Clang has no such group
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  ShapeRef(std::initializer_list<int64_t> list) : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  ShapeRef(const int64_t *data, size_t size) : data_(data), size_(size) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t *data() const { return data_; }
  const int64_t *begin() const { return data_; }
  const int64_t *end() const { return data_ + size_; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t back() const { return data_[size_ - 1]; }
  /// The dimensions [begin, end) (clamped to the size).
  ShapeRef slice(size_t begin, size_t end) const {
    end = std::min(end, size_);
    begin = std::min(begin, end);
    return {data_ + begin, end - begin};
  }

private:
  const int64_t *data_;
  size_t size_;
};

/// A shape or stride list of up to kMaxRank dimensions, stored inline. Callers keep within
/// kMaxRank (checkArity rejects operands of a higher rank); beyond it, appends are dropped
/// rather than written past the end.
class Dims {
public:
  Dims() = default;
  Dims(size_t n, int64_t value) { assign(n, value); }
  Dims(std::initializer_list<int64_t> list) { append(ShapeRef(list)); }
  explicit Dims(ShapeRef s) { append(s); }

  operator ShapeRef() const { return {v_.data(), n_}; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t *data() { return v_.data(); }
  const int64_t *data() const { return v_.data(); }
  int64_t *begin() { return v_.data(); }
  int64_t *end() { return v_.data() + n_; }
  const int64_t *begin() const { return v_.data(); }
  const int64_t *end() const { return v_.data() + n_; }
  int64_t &operator[](size_t i) { return v_[i]; }
  int64_t operator[](size_t i) const { return v_[i]; }
  int64_t &back() { return v_[n_ - 1]; }
  int64_t back() const { return v_[n_ - 1]; }

  void clear() { n_ = 0; }
  void push_back(int64_t x) {
    if (n_ < kMaxRank)
      v_[n_++] = x;
  }
  void append(ShapeRef s) {
    for (int64_t x : s)
      push_back(x);
  }
  void assign(size_t n, int64_t value) {
    n_ = std::min(n, kMaxRank);
    std::fill(v_.begin(), v_.begin() + n_, value);
  }

private:
  std::array<int64_t, kMaxRank> v_{};
  size_t n_ = 0;
};

inline bool operator==(ShapeRef a, ShapeRef b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
inline bool operator!=(ShapeRef a, ShapeRef b) { return !(a == b); }

inline std::string shapeString(ShapeRef s) { return rt::shapeString(s.data(), s.size()); }

} // namespace plait::rt::cpu
