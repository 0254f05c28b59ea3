// Element types and tensor views of the runtime (no MLIR dependency).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace plait::rt {

/// Same numbering as plait.fb.DType in codegen/schema/plan.fbs.
/// I8/I16 are signed; U8..U64 unsigned (MLIR's ui8..ui64). The small integer types are data
/// types (inputs, constants, outputs, casts, integer arithmetic, comparisons and movement), never
/// trained: the compiler refuses gradients through them.
enum class DType : uint8_t {
  F32 = 0, F64 = 1, BF16 = 2, F16 = 3, I64 = 4, I32 = 5, I1 = 6,
  I8 = 7, U8 = 8, I16 = 9, U16 = 10, U32 = 11, U64 = 12
};
inline constexpr int kNumDTypes = 13;

/// Bytes per element (I1 is one byte, 0 or 1; an unknown dtype 0). Inline: the kernel
/// workspace library and the plan builder size tensors with it without linking the runtime.
constexpr size_t dtypeSize(DType t) {
  switch (t) {
  case DType::I1:
  case DType::I8:
  case DType::U8:
    return 1;
  case DType::BF16:
  case DType::F16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  }
  return 0;
}

/// The most dimensions a tensor may have. The loader rejects plans with more, so that kernels
/// can keep shapes and strides on the stack (runtime/cpu/Dims.h) instead of the heap.
inline constexpr size_t kMaxRank = 16;

const char *dtypeName(DType t);     // "f32", "i64", ...
bool parseDTypeName(const std::string &name, DType &out); // the inverse of dtypeName
bool isFloat(DType t);
bool isUnsigned(DType t);            // U8, U16, U32, U64

/// A dense row-major tensor living in memory owned by someone else (usually the arena).
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t rank() const { return (int64_t)shape.size(); }
  int64_t numel() const {
    // A zero anywhere makes it 0, checked first: the loaders bound a non-empty shape by its
    // data's size, but huge dimensions before a zero would overflow the running product.
    for (int64_t d : shape)
      if (d == 0)
        return 0;
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t bytes() const { return (size_t)numel() * dtypeSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

std::string shapeString(const std::vector<int64_t> &shape); // "[2, 3]"
std::string shapeString(const int64_t *dims, size_t rank);

// IEEE half and bfloat16 conversions (round to nearest even).
float bf16ToFloat(uint16_t v);
uint16_t floatToBf16(float v);
float f16ToFloat(uint16_t v);
uint16_t floatToF16(float v);

} // namespace plait::rt
