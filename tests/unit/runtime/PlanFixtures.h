// Test plans: well-formed ones through PlanBuilder, malformed ones through RawPlan, which
// writes any field value the schema can hold (bad dtypes, wrong byte counts, bad versions).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codegen/PlanBuilder.h"
#include "codegen/schema/PlanVersion.h"
#include "runtime/Kernel.h"

namespace plait::testing {

/// Kernels registered by the runtime tests themselves, so that executor tests do not
/// depend on runtime/cpu/. Names start with "test_" to stay clear of real kernels.
///   test_add_f32(a, b) -> a + b            (same shapes)
///   test_scale_f32(x) -> x * attr "factor" (default 1)
///   test_fail() -> error "boom"
///   test_throw() -> throws std::runtime_error
void registerTestKernels();

struct RawTensor {
  std::string name;
  int8_t dtype = 0; // F32
  std::vector<int64_t> shape;
  int8_t kind = 0;  // Activation
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int32_t data = -1;
  std::string init;
};

struct RawAttr {
  std::string name;
  bool hasName = true;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;
};

struct RawInstr {
  uint32_t kernel = 0;
  std::vector<uint32_t> inputs, outputs;
  std::vector<RawAttr> attrs;
  std::string name;
};

struct RawPlan {
  uint32_t version = kPlanVersion;
  uint32_t worldSize = 1;
  std::vector<uint64_t> arenaBytes;
  std::vector<std::string> kernels;
  std::vector<RawTensor> tensors;
  std::vector<RawInstr> instrs;
  std::vector<uint32_t> inputs, outputs;
  std::vector<std::vector<uint8_t>> buffers;
  std::string device; // plait-compile --device; empty: absent (cpu)
};

std::vector<uint8_t> serializeRaw(const RawPlan &plan);
/// `bytes` with the plan file's checksum trailer (codegen/schema/PlanChecksum.h), as
/// plait-compile writes plan files and loadPlan requires them.
std::vector<uint8_t> withChecksum(std::vector<uint8_t> bytes);

/// A valid two-instruction f32 plan over test kernels:
///   t0 x     input    [2, 3] at 0
///   t1 bias  constant [2, 3] at 32  (data: 0.5 each)
///   t2 w     param    [2, 3] at 64  (init "ones")
///   t3 sum   activation [2, 3] at 96 = test_add_f32(x, bias)     instr 0 "/add"
///   t4 y     activation [2, 3] at 0  = test_scale_f32(sum) * 2   instr 1 "/scale"
///             (reuses x's memory: x is dead after instr 0)
/// outputs: y, w. arena: 128 bytes.
RawPlan validRawPlan();

/// The bytes of `values` as little-endian f32.
std::vector<uint8_t> f32Bytes(const std::vector<float> &values);

/// A fresh empty directory for one test, under GoogleTest's temp dir.
std::string freshTempDir(const std::string &name);

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes);
void writeFile(const std::string &path, const std::string &bytes);

} // namespace plait::testing
