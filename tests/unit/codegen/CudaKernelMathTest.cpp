// The generated CUDA kernels' element functions (plait_fused_<i>_at: broadcast indexing, the
// program, pow's special cases) and the kernels themselves (grid-stride loops, 16-byte
// vector loads and stores, scalar tails, per-lane running sums; each thread of a grid run in
// turn under PLAIT_CUDA_EMULATION, on several grids, aligned and not), compiled as host C++
// and compared with the CPU interpreter (runtime/cpu/FusedKernels.cpp) on random inputs,
// since no kernel can launch without a GPU:
//   * with exp and erf mapped to the runtime's own approximations, every element must be the
//     same bits as the interpreter's, over random programs of every opcode and input form;
//   * with the math library's expf and erff (as the device code calls CUDA's), realistic
//     chains (GELU, a layer norm, softmax, the pow cases) within 1e-6 relative (absolute
//     below magnitude 1).
//   * bf16 inputs and results (loads widened, stores rounded as the CPU's cast rounds) and
//     round_bf16, over random programs: the same bits as the interpreter's;
// Also: an opcode without a CUDA expression makes code generation fail with a clear error,
// as does a bf16 reduced result (CUDA sums in float atomics);
// and runtime/cuda/CudaModule: one-line errors without a device, and where there is one
// (never here), the generated kernels launched and compared with the interpreter.
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "codegen/schema/FusedElementwise.h"
#include "compiler/CudaCodegen.h"
#include "compiler/FusedExpressions.h"
#include "compiler/KernelBuild.h"
#include "tests/unit/kernels/KernelTestSupport.h"
#ifdef PLAIT_HAVE_CUDA_TOOLKIT
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaModule.h"
#include "runtime/cuda/CudaStatus.h"
#include "tests/unit/cuda/CudaTestSupport.h"
#endif

namespace plait {
namespace {

namespace fs = std::filesystem;
using rt::DType;
using rt::test::OwnedTensor;
using Shape = std::vector<int64_t>;

/// One fused instruction of a test plan: its inputs (with values) and program.
struct Case {
  std::vector<OwnedTensor> inputs;
  std::vector<bool> constant; // input r is a plan constant (its value known to codegen)
  Shape shape;                // the result's
  std::vector<int64_t> program, outputs;
  std::vector<int64_t> reductions = {}; // per result (fused::Reduction); empty: all stored
  std::vector<Shape> resultShapes = {}; // per result; empty: all `shape`
  std::vector<DType> resultTypes = {};  // per result; empty: all f32

  Shape resultShape(size_t o) const { return resultShapes.empty() ? shape : resultShapes[o]; }
  DType resultType(size_t o) const { return resultTypes.empty() ? DType::F32 : resultTypes[o]; }
};

/// Random values from the test's generator (each tensor seeded from it).
OwnedTensor randomTensor(Shape shape, std::mt19937 &rng, double lo, double hi) {
  return rt::test::randomFloats(std::move(shape), uint32_t(rng()), lo, hi);
}

OwnedTensor scalar(double v) { return rt::test::makeFloat(DType::F32, {}, {v}); }

/// The plan of `cases`, one fused_elementwise instruction each (instruction i = case i).
plan::PlanDesc planOf(const std::vector<Case> &cases) {
  plan::PlanDesc plan;
  for (const Case &c : cases) {
    plan::InstrDesc instr;
    instr.kernel = "fused_elementwise";
    instr.name = fmt::format("case{}", plan.instrs.size());
    for (size_t r = 0; r < c.inputs.size(); ++r) {
      plan::TensorDesc t;
      t.shape = c.inputs[r].view.shape;
      t.dtype = fb::DType(c.inputs[r].view.dtype); // the same numbering
      if (c.constant[r]) {
        t.kind = fb::TensorKind::Constant;
        t.data = c.inputs[r].bytes;
      }
      instr.inputs.push_back(uint32_t(plan.tensors.size()));
      plan.tensors.push_back(t);
    }
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      plan::TensorDesc t;
      t.shape = c.resultShape(o);
      t.dtype = fb::DType(c.resultType(o));
      instr.outputs.push_back(uint32_t(plan.tensors.size()));
      plan.tensors.push_back(t);
    }
    instr.attrs.push_back({"program", c.program, {}, ""});
    instr.attrs.push_back({"outputs", c.outputs, {}, ""});
    if (!c.reductions.empty())
      instr.attrs.push_back({"reductions", c.reductions, {}, ""});
    plan.instrs.push_back(instr);
  }
  return plan;
}

using ElementsFn = void (*)(const float *const *, float *const *, int64_t);
using LaunchFn = int (*)(const float *const *, float *const *, unsigned, unsigned);

/// A host build of the kernels runs them under tests/cuda_emulation's emulation of CUDA, built
/// into the same shared object: every thread of the grid a fiber, the flushes' __activemask,
/// __match_any_sync and warp shuffles as on a device.
constexpr const char *kEmulation = "#define PLAIT_CUDA_EMULATION 1\n"
                                   "#include \"tests/cuda_emulation/Emulation.cpp\"\n";

/// The generated source of `plan`, compiled by the host compiler with two shims per kernel:
/// elements_<i> runs its element function over all n elements, launch_<i> runs the kernel
/// itself on a grid of `grid` blocks of `block` threads under the emulation (returning the
/// launch's CUDA error, 0 when it ran).
/// `exactMath` maps expf, erff and the sigmoid to the runtime's approximations. Unloaded at
/// the end of the test.
class HostKernels {
public:
  HostKernels(const plan::PlanDesc &plan, const std::vector<Case> &cases, bool exactMath) {
    std::vector<size_t> generated;
    std::vector<std::string> symbols;
    std::string error;
    std::string source = cudaKernelSource(plan, generated, symbols, error, &lanes_);
    EXPECT_EQ(error, "");
    EXPECT_EQ(generated.size(), cases.size());
    std::string prefix = std::string("#include <math.h>\n#include <cmath>\n") + kEmulation;
    if (exactMath)
      prefix += "#include \"runtime/cpu/VectorMath.h\"\n"
                "#define expf(x) plait::rt::cpu::expApprox(x)\n"
                "#define erff(x) plait::rt::cpu::erfApprox(x)\n"
                "#define plait_sigmoid(x) plait::rt::cpu::sigmoidApprox(x)\n";
    std::string shims;
    for (size_t k = 0; k < generated.size(); ++k) {
      size_t i = generated[k];
      const Case &c = cases[i];
      // (bf16 tensors are passed as the kernel's plait_bf16 pointers, i1 ones as bytes.)
      std::string pointers;
      for (size_t r = 0; r < c.inputs.size(); ++r)
        pointers += c.inputs[r].view.dtype == DType::BF16
                        ? fmt::format("(const plait_bf16 *)in[{}], ", r)
                    : c.inputs[r].view.dtype == DType::I1
                        ? fmt::format("(const uint8_t *)in[{}], ", r)
                        : fmt::format("in[{}], ", r);
      for (size_t o = 0; o < c.outputs.size(); ++o)
        pointers += c.resultType(o) == DType::BF16 ? fmt::format("(plait_bf16 *)out[{}], ", o)
                                                   : fmt::format("out[{}], ", o);
      shims += fmt::format("extern \"C\" void elements_{0}(const float *const *in, float *const "
                           "*out, int64_t n) {{\n  for (int64_t i = 0; i < n; ++i)\n    "
                           "{1}_at({2}i);\n}}\n",
                           i, symbols[k], pointers);
      pointers.resize(pointers.size() - 2); // the trailing ", "
      shims += fmt::format("extern \"C\" int launch_{0}(const float *const *in, float *const "
                           "*out, unsigned grid, unsigned block) {{\n"
                           "  ::plait_emu::Launch(grid, block)({1}, {2});\n"
                           "  return int(cudaGetLastError());\n}}\n",
                           i, symbols[k], pointers);
    }
    std::vector<uint8_t> object;
    error = compileCached("c++",
                          fmt::format("-x c++ -O2 -std=c++17 -shared -fPIC -ffp-contract=off "
                                      "-fno-math-errno -fno-strict-aliasing -w -I{}",
                                      shellQuote(PLAIT_SOURCE_DIR)),
                          prefix + source + shims, "kernels.cpp", ".so", object);
    EXPECT_EQ(error, "");
    if (!error.empty())
      return;
    path_ = fs::temp_directory_path() / fmt::format("plait-cuda-math-{}.so", getpid());
    std::ofstream(path_, std::ios::binary)
        .write(reinterpret_cast<const char *>(object.data()), std::streamsize(object.size()));
    library_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(library_, nullptr) << dlerror();
  }
  ~HostKernels() {
    if (library_)
      dlclose(library_);
    std::error_code ec;
    fs::remove(path_, ec);
  }
  ElementsFn elements(size_t i) const { return symbol<ElementsFn>("elements", i); }
  LaunchFn launch(size_t i) const { return symbol<LaunchFn>("launch", i); }
  /// Kernel k's elements per iteration (4, or 8 with a bf16 vector operand).
  int64_t lanes(size_t k) const { return k < lanes_.size() ? lanes_[k] : 0; }

private:
  template <typename Fn> Fn symbol(const char *kind, size_t i) const {
    return library_ ? reinterpret_cast<Fn>(dlsym(library_, fmt::format("{}_{}", kind, i).c_str()))
                    : nullptr;
  }
  fs::path path_;
  void *library_ = nullptr;
  std::vector<int64_t> lanes_;
};

/// The interpreter's results for `c`.
rt::test::KernelResult interpret(const Case &c) {
  std::vector<std::pair<DType, Shape>> results;
  for (size_t o = 0; o < c.outputs.size(); ++o)
    results.push_back({c.resultType(o), c.resultShape(o)});
  rt::test::AttrsBuilder attrs;
  attrs.ints("program", c.program).ints("outputs", c.outputs);
  if (!c.reductions.empty())
    attrs.ints("reductions", c.reductions);
  return rt::test::runKernel("fused_elementwise", c.inputs, results, attrs.build());
}

/// Within 1e-6 relative of the interpreter (absolute below magnitude 1).
bool withinOneMillionth(float a, float b) {
  return std::fabs(double(a) - double(b)) <= 1e-6 * std::max(1.0, std::fabs(double(b)));
}

/// How compareWithInterpreter runs the generated code: the element function over every
/// element (grid 0), or the kernel on a grid of `grid` x `block` threads with every tensor
/// placed `offset` elements past a 64-byte boundary (1: no operand is 16-byte aligned, so the
/// kernel takes its scalar loop throughout).
struct HostRun {
  unsigned grid = 0, block = 0;
  int64_t offset = 0;
};

#if defined(__SANITIZE_ADDRESS__)
#define PLAIT_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLAIT_UNDER_ASAN 1
#endif
#endif

/// The runs every comparison makes: the element functions; the kernels on one thread, on a
/// grid whose stride is not a multiple of 4 or 8, and on 3 x 32 threads; and misaligned. Under
/// AddressSanitizer only the element functions: ASan does not follow the emulation's fiber
/// stacks (the main build runs the kernels).
#ifdef PLAIT_UNDER_ASAN
const std::vector<HostRun> kHostRuns = {{0, 0, 0}};
#else
const std::vector<HostRun> kHostRuns = {{0, 0, 0}, {1, 1, 0}, {2, 5, 0}, {3, 32, 0}, {2, 3, 1}};
#endif

/// A tensor's bytes at `offset` elements past a 64-byte boundary (the copy keeps the storage).
struct PlacedBytes {
  std::vector<uint8_t> storage;
  uint8_t *data = nullptr;
  PlacedBytes(const std::vector<uint8_t> &bytes, size_t elementSize, int64_t offset) {
    storage.assign(bytes.size() + 64 + size_t(offset) * elementSize, 0);
    auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + ((64 - address % 64) % 64) + size_t(offset) * elementSize;
    std::copy(bytes.begin(), bytes.end(), data);
  }
};

/// Runs every case through the generated element functions, and its kernel on each of
/// kHostRuns' grids, and through the interpreter; `close` decides whether two elements agree.
template <typename Close>
void compareWithInterpreter(const std::vector<Case> &cases, bool exactMath, Close close) {
  // A private cache: the test always compiles what it generates now.
  std::string cache = (fs::temp_directory_path() / fmt::format("plait-cuda-math-cache-{}",
                                                               getpid())).string();
  setenv("PLAIT_CODEGEN_CACHE", cache.c_str(), 1);
  plan::PlanDesc plan = planOf(cases);
  HostKernels kernels(plan, cases, exactMath);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    rt::test::KernelResult reference = interpret(c);
    ASSERT_TRUE(reference.status.ok()) << reference.status.message();
    int64_t numel = 1;
    for (int64_t d : c.shape)
      numel *= d;
    for (const HostRun &run : kHostRuns) {
      std::vector<PlacedBytes> inputs;
      std::vector<const float *> in;
      for (const OwnedTensor &t : c.inputs) {
        inputs.emplace_back(t.bytes, rt::dtypeSize(t.view.dtype), run.offset);
        in.push_back(reinterpret_cast<const float *>(inputs.back().data));
      }
      // Results start at zero (as the launch zeroes reduced ones).
      std::vector<OwnedTensor> out;
      std::vector<PlacedBytes> placed;
      std::vector<float *> outPointers;
      for (size_t o = 0; o < c.outputs.size(); ++o) {
        out.emplace_back(c.resultType(o), reference.out(o).view.shape);
        std::fill(out.back().bytes.begin(), out.back().bytes.end(), uint8_t(0));
        placed.emplace_back(out.back().bytes, rt::dtypeSize(c.resultType(o)), run.offset);
        outPointers.push_back(reinterpret_cast<float *>(placed.back().data));
      }
      std::string how = run.grid == 0 ? std::string("element function")
                                      : fmt::format("kernel on {} x {} threads, offset {}",
                                                    run.grid, run.block, run.offset);
      if (run.grid == 0) {
        ElementsFn fn = kernels.elements(i);
        ASSERT_NE(fn, nullptr) << "case " << i;
        fn(in.data(), outPointers.data(), numel);
      } else {
        LaunchFn fn = kernels.launch(i);
        ASSERT_NE(fn, nullptr) << "case " << i;
        ASSERT_EQ(fn(in.data(), outPointers.data(), run.grid, run.block), 0) << "case " << i;
      }
      for (size_t o = 0; o < out.size(); ++o) {
        std::copy(placed[o].data, placed[o].data + out[o].bytes.size(), out[o].bytes.begin());
        // (bf16 elements widened to their f32 values: the same bits, or close, as f32 ones.)
        std::vector<float> got = out[o].floats(), expected = reference.out(o).floats();
        for (size_t e = 0; e < expected.size(); ++e)
          ASSERT_TRUE(close(got[e], expected[e]))
              << "case " << i << " (" << plan.instrs[i].name << ", " << how << ", "
              << kernels.lanes(i) << " lanes) result " << o << " element " << e
              << ": generated " << got[e] << ", interpreter " << expected[e];
      }
    }
  }
  std::error_code ec;
  fs::remove_all(cache, ec);
}

bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

/// A random case: 1-5 inputs of the result's shape, one element, or broadcast (dimensions
/// of 1, fewer leading dimensions); 1-10 instructions of every opcode; 1-2 results. With
/// `bf16`, each input and result is bf16 or f32 at random.
Case randomCase(std::mt19937 &rng, bool bf16 = false) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  int rank = pick(1, 4);
  for (int d = 0; d < rank; ++d)
    c.shape.push_back(pick(1, 9));
  int inputs = pick(1, 5);
  for (int r = 0; r < inputs; ++r) {
    Shape shape = c.shape;
    bool constant = false;
    switch (pick(0, 3)) {
    case 0: // whole
      c.inputs.push_back(randomTensor(shape, rng, 0.25, 2.0));
      break;
    case 1: { // one element: an exponent pow special-cases, or not; a plan constant or not
      shape = pick(0, 1) ? Shape{} : Shape{1};
      constant = pick(0, 1);
      double value = std::vector<double>{1, 2, 3, 2.5, -1, 0.75}[size_t(pick(0, 5))];
      c.inputs.push_back(rt::test::makeFloat(DType::F32, shape, {value}));
      break;
    }
    default: // broadcast: dimensions of 1, and fewer leading dimensions
      for (int64_t &d : shape)
        if (pick(0, 1))
          d = 1;
      shape.erase(shape.begin(), shape.begin() + pick(0, int(shape.size()) - 1));
      c.inputs.push_back(randomTensor(shape, rng, 0.25, 2.0));
    }
    if (bf16 && pick(0, 1))
      c.inputs.back() = rt::test::runOk("cast", {c.inputs.back()}, DType::BF16,
                                        c.inputs.back().view.shape);
    c.constant.push_back(constant);
  }
  int count = pick(1, 10);
  for (int k = 0; k < count; ++k) {
    int64_t code = pick(0, int(fused::kNumOpcodes) - 1);
    int64_t defined = inputs + k;
    int64_t a = pick(0, int(defined) - 1);
    int arity = fused::opcodeInfo(code).arity;
    int64_t b = arity >= 2 ? pick(0, int(defined) - 1) : -1;
    int64_t third = arity == 3 ? pick(0, int(defined) - 1) : -1;
    c.program.insert(c.program.end(), {code, a, b, third});
  }
  c.outputs.push_back(inputs + count - 1);
  if (count > 1 && pick(0, 1))
    c.outputs.push_back(inputs + pick(0, count - 2));
  for (size_t o = 0; bf16 && o < c.outputs.size(); ++o)
    c.resultTypes.push_back(pick(0, 1) ? DType::BF16 : DType::F32);
  return c;
}

std::vector<Case> realisticCases();

/// Kernels that read or write bf16 tensors whole (8 lanes): a chain as bf16-mixed plans have
/// it (bf16 in, f32 math rounded to bf16, f32 and bf16 out) over 4x16x96; the same over
/// 5x7x13 (455 elements: 56 vector iterations and a tail of 7) and over 7 elements (no
/// vector iteration); bf16 and f32 inputs with a bf16 result and a row sum; an f32 input
/// with a bf16 result beside a broadcast bf16 input.
std::vector<Case> bf16VectorCases() {
  using namespace fused;
  std::mt19937 rng(29);
  auto bf16 = [&](Shape shape, double lo, double hi) {
    return rt::test::runOk("cast", {randomTensor(shape, rng, lo, hi)}, DType::BF16, shape);
  };
  std::vector<Case> cases;
  for (Shape s : {Shape{4, 16, 96}, Shape{5, 7, 13}, Shape{7}}) {
    Case chain{{bf16(s, -4, 4), rt::test::makeFloat(DType::BF16, {}, {0.70710678})},
               {false, true},
               s,
               {Mul, 0, 1, -1, RoundBf16, 2, -1, -1, Erf, 3, -1, -1, RoundBf16, 4, -1, -1, Add, 5, 0, -1},
               {6, 5}};
    chain.resultTypes = {DType::F32, DType::BF16};
    cases.push_back(chain);
  }
  Shape s = {5, 7, 13};
  // (Multiples of 1/64 and 1/16 of magnitude <= 1/2: bf16 holds them, and float holds their
  // products and sums exactly, so the row sums are the interpreter's in any order.)
  auto dyadic = [&](DType dtype, Shape shape, double scale) {
    std::vector<double> values(size_t(shape[0] * shape[1] * shape[2]));
    for (double &v : values)
      v = (int(rng() % 65) - 32) / scale;
    return rt::test::makeFloat(dtype, shape, values);
  };
  Case mixed{{dyadic(DType::BF16, s, 64), dyadic(DType::F32, s, 16)}, {false, false}, s,
             {Mul, 0, 1, -1, BroadcastTo, 2, -1, -1}, {2, 3}, {Store, Sum}, {s, {5, 7, 1}}};
  mixed.resultTypes = {DType::BF16, DType::F32};
  cases.push_back(mixed);
  Case broadcast{{randomTensor(s, rng, -2, 2), bf16({13}, -1, 1)}, {false, false}, s,
                 {Add, 0, 1, -1}, {2}};
  broadcast.resultTypes = {DType::BF16};
  cases.push_back(broadcast);
  return cases;
}

TEST(CudaKernelMath, RandomProgramsMatchTheInterpreterBitForBit) {
  std::mt19937 rng(7);
  std::vector<Case> cases;
  for (int i = 0; i < 200; ++i)
    cases.push_back(randomCase(rng));
  compareWithInterpreter(cases, /*exactMath=*/true, sameBits);
}

// bf16 inputs (whole, one element, broadcast; plan constants too) and results, over random
// programs in which round_bf16 is one opcode among the others: the CUDA element functions
// (host-compiled, with the host's rounding for __float2bfloat16_rn) give the interpreter's
// bits. The rounding opcode also appears in RandomProgramsMatchTheInterpreterBitForBit.
TEST(CudaKernelMath, Bf16ProgramsMatchTheInterpreterBitForBit) {
  std::mt19937 rng(17);
  std::vector<Case> cases;
  for (int i = 0; i < 200; ++i)
    cases.push_back(randomCase(rng, /*bf16=*/true));
  std::vector<Case> vectors = bf16VectorCases();
  cases.insert(cases.end(), vectors.begin(), vectors.end());
  compareWithInterpreter(cases, /*exactMath=*/true, sameBits);
}

// A kernel that reads or writes a whole bf16 tensor moves it 16 bytes (8 elements) at a time,
// and then takes 8 elements per iteration, its f32 operands as two float4s ("cuda_lanes" 8);
// an f32-only kernel takes 4 with one float4 each. (The values: Bf16ProgramsMatchThe...)
TEST(CudaKernelMath, Bf16TensorsAreReadAndWrittenEightElementsAtATime) {
  std::vector<Case> cases = bf16VectorCases();
  cases.push_back(realisticCases()[0]); // f32 only
  plan::PlanDesc plan = planOf(cases);
  std::vector<size_t> generated;
  std::vector<std::string> symbols;
  std::vector<int64_t> lanes;
  std::string error;
  std::string source = cudaKernelSource(plan, generated, symbols, error, &lanes);
  ASSERT_EQ(error, "");
  ASSERT_EQ(lanes.size(), cases.size());
  for (size_t k = 0; k + 1 < cases.size(); ++k)
    EXPECT_EQ(lanes[k], 8) << "case " << k;
  EXPECT_EQ(lanes.back(), 4);
  auto kernelOf = [&](size_t k) {
    size_t at = source.find(fmt::format("__global__ void {}(", symbols[k]));
    return at == std::string::npos ? std::string() : source.substr(at, source.find("#endif", at) - at);
  };
  // Case 0: a bf16 input and bf16 and f32 results.
  std::string first = kernelOf(0);
  EXPECT_NE(first.find("const plait_bf16x8 a0 = reinterpret_cast<const plait_bf16x8 *>(in0)[v];"),
            std::string::npos) << first;
  EXPECT_NE(first.find("reinterpret_cast<plait_bf16x8 *>(out1)[v] = z1;"), std::string::npos);
  EXPECT_NE(first.find("reinterpret_cast<float4 *>(out0)[2 * v + 1] = "), std::string::npos);
  EXPECT_NE(first.find("for (int64_t v = first; v < n / 8; v += step)"), std::string::npos);
  std::string f32 = kernelOf(cases.size() - 1);
  EXPECT_NE(f32.find("const float4 a0_0 = reinterpret_cast<const float4 *>(in0)[v];"),
            std::string::npos) << f32;
  EXPECT_EQ(f32.find("plait_bf16x8"), std::string::npos);
}

/// The chains plait-fuse-elementwise makes of the samples, over 4x16x96 (not a multiple of
/// the interpreter's tile), with inputs broadcast per row, per column and as scalars.
std::vector<Case> realisticCases() {
  using namespace fused;
  std::mt19937 rng(11);
  Shape s = {4, 16, 96};
  OwnedTensor x = randomTensor(s, rng, -4, 4), bias = randomTensor({96}, rng, -1, 1);
  OwnedTensor mean = randomTensor({4, 16, 1}, rng, -1, 1), var = randomTensor({4, 16, 1}, rng, 0.1, 2);
  std::vector<Case> cases;
  // GELU with a bias: y = (x + b) * 0.5 * (1 + erf((x + b) / sqrt 2)).
  cases.push_back({{x, bias, scalar(1.4142135), scalar(1.0), scalar(0.5)},
                   {false, false, true, true, true}, s,
                   {Add, 0, 1, -1, Div, 5, 2, -1, Erf, 6, -1, -1, Add, 7, 3, -1, Mul, 5, 8, -1, Mul, 9, 4, -1},
                   {10, 5}});
  // A layer norm: (x - mean) / sqrt(var + eps) * gamma + beta, and (x - mean)^2.
  cases.push_back({{x, mean, var, scalar(1e-5), bias, bias, scalar(2.0)},
                   {false, false, false, true, false, false, true}, s,
                   {Sub, 0, 1, -1, Add, 2, 3, -1, Sqrt, 8, -1, -1, Div, 7, 9, -1, Mul, 10, 4, -1, Add, 11, 5, -1, Pow, 7, 6, -1},
                   {12, 13}});
  // Softmax's numerator and the GELU's derivative: exp(x - max), exp(-x^2 / 2).
  cases.push_back({{x, mean, scalar(-0.5)}, {false, false, true}, s,
                   {Sub, 0, 1, -1, Exp, 3, -1, -1, Mul, 0, 0, -1, Mul, 5, 2, -1, Exp, 6, -1, -1, Neg, 7, -1, -1},
                   {4, 8}});
  // pow: constant exponents 1, 2, 3 and 2.5 (products, then powf), a one-element exponent
  // codegen cannot see (decided per element), and a whole exponent.
  OwnedTensor positive = randomTensor(s, rng, 0.1, 3), exponents = randomTensor(s, rng, -2, 2);
  for (double e : {1.0, 2.0, 3.0, 2.5, -0.5})
    cases.push_back({{positive, scalar(e)}, {false, true}, s, {Pow, 0, 1, -1}, {2}});
  for (double e : {1.0, 2.0, 3.0, 0.5})
    cases.push_back({{positive, scalar(e)}, {false, false}, s, {Pow, 0, 1, -1}, {2}});
  cases.push_back({{positive, exponents}, {false, false}, s, {Pow, 0, 1, -1}, {2}});
  return cases;
}

/// One program that uses every opcode (the test fails to build a new opcode into it until it
/// is listed here), over 4x16x96 values in [0.25, 2] and a scalar, with two results.
Case everyOpcodeCase() {
  using namespace fused;
  std::mt19937 rng(5);
  Shape s = {4, 16, 96};
  // Registers: 0 x, 1 y, 2 one; instruction k defines register 3 + k.
  Case c{{randomTensor(s, rng, 0.25, 2), randomTensor(s, rng, 0.25, 2), scalar(1.0)},
         {false, false, true}, s,
         {Log, 0, -1, -1,        Tanh, 0, -1, -1,      Sigmoid, 0, -1, -1,   // 3 4 5
          Silu, 1, -1, -1,       Rsqrt, 0, -1, -1,     Reciprocal, 1, -1, -1, // 6 7 8
          Sin, 0, -1, -1,        Cos, 1, -1, -1,       Abs, 3, -1, -1,        // 9 10 11
          Relu, 3, -1, -1,       Max, 4, 5, -1,        Min, 6, 7, -1,         // 12 13 14
          Greater, 0, 1, -1,     GreaterEqual, 0, 2, -1, Less, 1, 2, -1,      // 15 16 17
          LessEqual, 0, 1, -1,   Equal, 0, 0, -1,      Not, 15, -1, -1,       // 18 19 20
          And, 16, 17, -1,       Or, 18, 19, -1,       Where, 20, 13, 14,     // 21 22 23
          Where, 21, 8, 9,       Where, 22, 10, 11,    Add, 23, 24, -1,       // 24 25 26
          Sub, 26, 25, -1,       Mul, 27, 12, -1,      Div, 28, 2, -1,        // 27 28 29
          Neg, 29, -1, -1,       Exp, 4, -1, -1,       Erf, 5, -1, -1,        // 30 31 32
          Sqrt, 0, -1, -1,       Pow, 0, 2, -1,        BroadcastTo, 2, -1, -1, // 33 34 35
          RoundBf16, 30, -1, -1, Add, 31, 32, -1,      Add, 33, 34, -1,       // 36 37 38
          Add, 37, 38, -1,       Add, 39, 35, -1,      Add, 40, 36, -1},      // 39 40 41
         {41, 36}};
  std::vector<bool> used(kNumOpcodes, false);
  for (size_t k = 0; k < c.program.size(); k += kInstructionWidth)
    used[size_t(c.program[k])] = true;
  for (int64_t code = 0; code < kNumOpcodes; ++code)
    EXPECT_TRUE(used[size_t(code)]) << opcodeInfo(code).name << " is not in everyOpcodeCase";
  return c;
}

/// i1 inputs (masks: whole, one element, broadcast per row), read as 1.0f for any nonzero
/// byte: where over them, and their truth values multiplied in.
Case maskInputsCase() {
  using namespace fused;
  std::mt19937 rng(23);
  Shape s = {4, 16, 96};
  std::vector<uint8_t> whole(4 * 16 * 96), rows(4 * 16);
  for (uint8_t &b : whole)
    b = uint8_t(rng() % 3 == 0 ? 0 : rng() % 4 + 1); // nonzero bytes other than 1 too
  for (uint8_t &b : rows)
    b = uint8_t(rng() % 2);
  OwnedTensor mask = rt::test::make<uint8_t>(s, whole);
  OwnedTensor rowMask = rt::test::make<uint8_t>({4, 16, 1}, rows);
  OwnedTensor one = rt::test::make<uint8_t>({}, {7});
  OwnedTensor x = randomTensor(s, rng, -2, 2), neg = scalar(-1e9);
  // 5 = where(mask, x, -1e9); 6 = 5 * rowMask; 7 = where(one, 6, x).
  return {{mask, rowMask, one, x, neg}, {false, false, true, false, true}, s,
          {Where, 0, 3, 4, Mul, 5, 1, -1, Where, 2, 6, 3}, {7, 5}};
}

TEST(CudaKernelMath, MaskInputsMatchTheInterpreterBitForBit) {
  compareWithInterpreter({maskInputsCase()}, /*exactMath=*/true, sameBits);
}

// Every opcode at once: the CUDA element function (host-compiled, the CPU's exp, erf and
// sigmoid) gives the interpreter's bits, and with CUDA's own math stays within a millionth.
TEST(CudaKernelMath, EveryOpcodeMatchesTheInterpreter) {
  compareWithInterpreter({everyOpcodeCase()}, /*exactMath=*/true, sameBits);
  compareWithInterpreter({everyOpcodeCase()}, /*exactMath=*/false, withinOneMillionth);
}

// ...and nvcc compiles its kernel, one reading i1 inputs and those moving bf16 tensors 8
// elements at a time, for every architecture (no GPU needed).
TEST(CudaKernelMath, EveryOpcodeCompilesWithNvcc) {
  std::string cache = (fs::temp_directory_path() / fmt::format("plait-cuda-every-op-{}",
                                                               getpid())).string();
  setenv("PLAIT_CODEGEN_CACHE", cache.c_str(), 1);
  std::vector<Case> cases = {everyOpcodeCase(), maskInputsCase()};
  std::vector<Case> bf16 = bf16VectorCases();
  cases.insert(cases.end(), bf16.begin(), bf16.end());
  plan::PlanDesc plan = planOf(cases);
  CudaCodegenResult generated = generateCudaKernels(plan);
  fs::remove_all(cache);
  if (generated.userError)
    GTEST_SKIP() << generated.error;
  ASSERT_EQ(generated.error, "");
  EXPECT_EQ(generated.kernels, int64_t(cases.size()));
  EXPECT_GT(generated.fatbinBytes, 0);
  // Each instruction names its kernel and the elements per thread its launch gives it.
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    std::vector<int64_t> lanes;
    for (const plan::AttrDesc &a : plan.instrs[i].attrs)
      if (a.name == "cuda_lanes")
        lanes = a.ints;
    EXPECT_EQ(lanes, std::vector<int64_t>{i < 2 ? 4 : 8}) << "case " << i;
  }
}

TEST(CudaKernelMath, RealisticChainsMatchTheInterpreterBitForBit) {
  compareWithInterpreter(realisticCases(), /*exactMath=*/true, sameBits);
}

// Instructions whose kernels would read the same (the same program, shapes and element
// types) share one: the four pows whose one-element exponent is an input (not a constant the
// kernel can see) run one kernel, and so do the constant exponents 2.5 and -0.5 (powf with the
// exponent read from its input); 1, 2 and 3 are products, each its own. Still bit for bit
// (RealisticChainsMatchTheInterpreterBitForBit runs every instruction through the kernel it
// names).
TEST(CudaKernelMath, IdenticalKernelsAreGeneratedOnce) {
  std::vector<Case> cases = realisticCases();
  plan::PlanDesc plan = planOf(cases);
  std::vector<size_t> generated;
  std::vector<std::string> symbols;
  std::string error;
  std::string source = cudaKernelSource(plan, generated, symbols, error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(generated.size(), cases.size());
  ASSERT_EQ(symbols.size(), cases.size());
  // Cases 3-7: constant exponents; 8-11: one-element input exponents; 12: a whole exponent.
  for (size_t k = 9; k <= 11; ++k)
    EXPECT_EQ(symbols[k], symbols[8]) << k;
  EXPECT_EQ(symbols[7], symbols[6]);
  std::set<std::string> distinct(symbols.begin(), symbols.end());
  EXPECT_EQ(distinct.size(), cases.size() - 4) << fmt::format("{}", fmt::join(symbols, " "));
  size_t kernels = 0;
  for (size_t at = source.find("__global__ void"); at != std::string::npos;
       at = source.find("__global__ void", at + 1))
    ++kernels;
  EXPECT_EQ(kernels, distinct.size());
  EXPECT_NE(source.find(fmt::format("// case9: shares {}", symbols[8])), std::string::npos);
}

// Reduced results (a fused reduce_sum / reduce_mean): each element adds itself (a mean's
// scaled by 1 / its count) into its sum, in float, where the interpreter sums in double; a
// device adds atomically in any order. Within 2e-5 of the interpreter's sums (relative, or
// absolute below magnitude 1), over rows, outer dimensions, a copy of a stored value, and
// results that are all reduced from broadcast inputs.
TEST(CudaKernelMath, ReducedResultsSumWhatTheInterpreterSums) {
  using namespace fused;
  std::mt19937 rng(13);
  Shape s = {4, 16, 96};
  OwnedTensor x = randomTensor(s, rng, -2, 2), b = randomTensor({96}, rng, -1, 1);
  OwnedTensor rowOnly = randomTensor({4, 16, 1}, rng, -1, 1);
  std::vector<Case> cases;
  // y = x * b stored, its row sums and means, and its sums and means over [4, 16].
  cases.push_back({{x, b}, {false, false}, s,
                   {Mul, 0, 1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 2, -1, -1},
                   {2, 3, 4, 5, 6},
                   {Store, Sum, Mean, Sum, Mean},
                   {s, {4, 16, 1}, {4, 16, 1}, {1, 1, 96}, {1, 1, 96}}});
  // Nothing whole: a per-row value broadcast along rows times a column, summed both ways.
  cases.push_back({{rowOnly, b}, {false, false}, s,
                   {Mul, 0, 1, -1, BroadcastTo, 2, -1, -1},
                   {2, 3},
                   {Sum, Mean},
                   {{4, 1, 96}, {4, 16, 1}}});
  compareWithInterpreter(cases, /*exactMath=*/true, [](float a, float e) {
    return std::fabs(double(a) - double(e)) <= 2e-5 * std::max(1.0, std::fabs(double(e)));
  });
}

TEST(CudaKernelMath, LibmMathIsWithinOneMillionthOfTheInterpreter) {
  compareWithInterpreter(realisticCases(), /*exactMath=*/false, withinOneMillionth);
}

TEST(CudaKernelMath, AnOpcodeWithoutACudaExpressionIsAnError) {
  std::mt19937 rng(3);
  Case c{{randomTensor({8}, rng, 0, 1)}, {false}, {8}, {fused::Neg, 0, -1, -1}, {1}};
  plan::PlanDesc plan = planOf({c});
  // An opcode beyond the table: what a new opcode without a CUDA expression looks like (the
  // program check is bypassed by asking for the expression directly).
  std::vector<size_t> generated;
  std::vector<std::string> symbols;
  std::string error;
  EXPECT_NE(cudaKernelSource(plan, generated, symbols, error), "");
  EXPECT_EQ(error, "");
  plan.instrs[0].attrs[0].ints[0] = fused::kNumOpcodes;
  // fusedInstructions() leaves a program that does not check to the interpreter...
  EXPECT_EQ(cudaKernelSource(plan, generated, symbols, error), "");
  EXPECT_TRUE(generated.empty());
  // ...and the expression table reports an opcode it has no entry for.
  FusedInstruction f;
  f.instr = &plan.instrs[0];
  f.program = &plan.instrs[0].attrs[0].ints;
  f.outputs = &plan.instrs[0].attrs[1].ints;
  f.numel = 8;
  f.elements = {8, 8};
  EXPECT_EQ(fusedExpression(KernelTarget::Cuda, plan, f, 0, error), "");
  EXPECT_EQ(error, fmt::format("case0: fused opcode {} (unknown) has no CUDA expression in "
                               "compiler/FusedExpressions.cpp",
                               int64_t(fused::kNumOpcodes)));
}

// A bf16 reduced result: CUDA sums into the result with float atomics, so a bf16 one would
// round at every add; plait-fuse-elementwise never makes one for CUDA, and codegen says so.
TEST(CudaKernelMath, ABf16ReducedResultIsAnError) {
  std::mt19937 rng(19);
  OwnedTensor x = rt::test::runOk("cast", {randomTensor({4, 8}, rng, 0, 1)}, DType::BF16, {4, 8});
  Case c{{x}, {false}, {4, 8}, {fused::Neg, 0, -1, -1}, {1}, {fused::Sum}, {{4, 1}}};
  c.resultTypes = {DType::BF16};
  plan::PlanDesc plan = planOf({c});
  std::vector<size_t> generated;
  std::vector<std::string> symbols;
  std::string error;
  EXPECT_EQ(cudaKernelSource(plan, generated, symbols, error), "");
  EXPECT_EQ(error, "case0: result 0 is a bf16 reduce_sum; CUDA's fused sums are float atomics "
                   "(plait-fuse-elementwise leaves bf16 reductions unfused for --device cuda)");
}

// An input that does not broadcast to the result (the verifier rejects it; codegen says so
// too, rather than index past its shape).
TEST(CudaKernelMath, AnInputThatDoesNotBroadcastIsAnError) {
  std::mt19937 rng(5);
  Case c{{randomTensor({2, 1, 4}, rng, 0, 1), randomTensor({4}, rng, 0, 1)},
         {false, false}, {4}, {fused::Add, 0, 1, -1}, {2}};
  plan::PlanDesc plan = planOf({c});
  std::vector<size_t> generated;
  std::vector<std::string> symbols;
  std::string error;
  EXPECT_EQ(cudaKernelSource(plan, generated, symbols, error), "");
  EXPECT_EQ(error, "case0: input 0 of shape [2, 1, 4] does not broadcast to the result's "
                   "shape [4] (numpy rules, at most 16 dimensions)");
  // Nor one whose dimension is neither 1 nor the result's.
  Case d{{randomTensor({3}, rng, 0, 1), randomTensor({2, 4}, rng, 0, 1)},
         {false, false}, {2, 4}, {fused::Add, 0, 1, -1}, {2}};
  plan = planOf({d});
  error.clear();
  EXPECT_EQ(cudaKernelSource(plan, generated, symbols, error), "");
  EXPECT_EQ(error, "case0: input 0 of shape [3] does not broadcast to the result's shape [2, 4] "
                   "(numpy rules, at most 16 dimensions)");
}

/// Values k / scale for k = +-1..range (random signs): products of two such tensors are
/// multiples of 1 / (scale * scale') that float holds exactly, as it holds their sums while
/// those stay under 2^24 units, whatever order they are added in.
OwnedTensor dyadicTensor(Shape shape, std::mt19937 &rng, int range, double scale) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  std::uniform_int_distribution<int> magnitude(1, range), sign(0, 1);
  for (double &v : values)
    v = (sign(rng) ? 1 : -1) * magnitude(rng) / scale;
  return rt::test::makeFloat(DType::F32, std::move(shape), values);
}

/// Long sums for the device's reduced results (CudaModule.ReducedResultsSumOnTheDevice): rows
/// of 256 (the longest row plait-fuse-elementwise fuses a sum of; whole warps on one row; 4 M
/// elements, so each device thread loops 4 times) and of 96 (a warp across rows), summed along
/// rows and over columns. The terms are multiples of 1/1024 of magnitude <= 1/2 and no sum has
/// more than 2^14 of them, so every order of adding gives the same sums: a lost or doubled term
/// (|term| >= 1/1024) shows. Means scale each term by 1/row first, which rounds.
std::vector<Case> longSumCases() {
  using namespace fused;
  std::mt19937 rng(17);
  std::vector<Case> cases;
  for (Shape s : {Shape{64, 256, 256}, Shape{16, 256, 96}}) {
    const int64_t row = s[2];
    OwnedTensor x = dyadicTensor(s, rng, 32, 64), b = dyadicTensor({row}, rng, 16, 16);
    cases.push_back({{x, b}, {false, false}, s,
                     {Mul, 0, 1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 2, -1, -1, BroadcastTo, 2, -1, -1},
                     {2, 3, 4, 5},
                     {Store, Sum, Mean, Sum},
                     {s, {s[0], s[1], 1}, {s[0], s[1], 1}, {1, 1, row}}});
  }
  return cases;
}

/// Equal within 1e-5 (relative above magnitude 1): exact sums compare equal, means within
/// their rounding.
bool withinSumRounding(float a, float e) {
  return std::fabs(double(a) - double(e)) <= 1e-5 * std::max(1.0, std::fabs(double(e)));
}

// The host build of the generated code (one element at a time, in memory order) on the long
// sums: the same as the interpreter's.
TEST(CudaKernelMath, LongSumsMatchTheInterpreter) {
  compareWithInterpreter(longSumCases(), /*exactMath=*/true, withinSumRounding);
}

#ifdef PLAIT_HAVE_CUDA_TOOLKIT
rt::Status failingDriverCall() {
  PLAIT_CU_RETURN_IF_ERROR(CUDA_ERROR_INVALID_VALUE);
  return {};
}

TEST(CudaModule, WithoutADeviceContextsAreOneLineErrors) {
  if (haveCudaDevice())
    GTEST_SKIP() << "a CUDA device is present (LaunchesGeneratedKernels runs)";
  std::unique_ptr<rt::CudaContext> context;
  rt::Status s = rt::CudaContext::open(0, context);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(context, nullptr);
  // No driver at all (CUDA's reason), or a driver without a device (the call that failed).
  std::string m = s.message();
  RecordProperty("message", m);
  EXPECT_TRUE(m.rfind("no CUDA driver: ", 0) == 0 || m.find(" failed at ") != std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  // Asking again gives the same answer (the driver is resolved once).
  EXPECT_EQ(rt::CudaContext::open(0, context).message(), m);
}

TEST(CudaModule, APlanWithoutKernelsIsAnError) {
  std::unique_ptr<rt::CudaModule> module;
  EXPECT_EQ(rt::CudaModule::load(rt::CudaDriver(), {}, module).message(),
            "the plan carries no CUDA kernels (compiled with --no-codegen?)");
}

TEST(CudaModule, TheStatusMacroRecordsTheCallFileAndLine) {
  std::string m = failingDriverCall().message();
  EXPECT_EQ(m.rfind("CUDA_ERROR_INVALID_VALUE failed at ", 0), 0u) << m;
  EXPECT_NE(m.find("CudaKernelMathTest.cpp:"), std::string::npos) << m;
}

// Where there is a GPU: the generated kernels of the realistic chains, compiled by nvcc,
// loaded, launched and compared with the interpreter (never run on the machine this was
// written on, which has no GPU).
/// Generates, loads and launches every case's kernel on device 0 (as the runtime does: reduced
/// results zeroed by the launch) and compares each result with the interpreter's by `close`.
template <typename Close> void launchAndCompare(const std::vector<Case> &cases, Close close) {
  plan::PlanDesc plan = planOf(cases);
  CudaCodegenResult generated = generateCudaKernels(plan);
  if (generated.userError)
    GTEST_SKIP() << generated.error;
  ASSERT_EQ(generated.error, "");
  std::unique_ptr<rt::CudaContext> context;
  ASSERT_TRUE(rt::CudaContext::open(0, context).ok());
  const rt::CudaDriver &cu = context->driver();
  std::unique_ptr<rt::CudaModule> module;
  rt::Status loaded = rt::CudaModule::load(cu, plan.generatedCuda, module);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    CUfunction kernel = nullptr;
    std::string symbol; // the kernel the instruction runs (shared when identical)
    int64_t lanes = 0;  // its elements per iteration
    for (const plan::AttrDesc &a : plan.instrs[i].attrs) {
      if (a.name == "cuda_symbol")
        symbol = a.str;
      if (a.name == "cuda_lanes" && a.ints.size() == 1)
        lanes = a.ints[0];
    }
    ASSERT_TRUE(lanes == 4 || lanes == 8) << "case " << i << ": cuda_lanes " << lanes;
    ASSERT_TRUE(module->kernel(symbol, kernel).ok()) << symbol;
    rt::test::KernelResult reference = interpret(c);
    ASSERT_TRUE(reference.status.ok()) << "case " << i << ": " << reference.status.message();
    std::vector<CUdeviceptr> pointers;
    for (const OwnedTensor &t : c.inputs) {
      CUdeviceptr p = 0;
      ASSERT_EQ(cu.cuMemAlloc(&p, t.bytes.size()), CUDA_SUCCESS);
      ASSERT_EQ(cu.cuMemcpyHtoD(p, t.bytes.data(), t.bytes.size()), CUDA_SUCCESS);
      pointers.push_back(p);
    }
    std::vector<std::pair<CUdeviceptr, size_t>> reduced;
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      size_t numel = size_t(reference.out(o).view.numel());
      CUdeviceptr p = 0;
      ASSERT_EQ(cu.cuMemAlloc(&p, numel * rt::dtypeSize(c.resultType(o))), CUDA_SUCCESS);
      pointers.push_back(p);
      if (!c.reductions.empty() && c.reductions[o] != fused::Store)
        reduced.emplace_back(p, numel);
    }
    int64_t elements = 1;
    for (int64_t d : c.shape)
      elements *= d;
    rt::Status launched =
        rt::launchFusedKernel(cu, kernel, pointers, elements, nullptr, reduced, lanes);
    ASSERT_TRUE(launched.ok()) << launched.message();
    ASSERT_EQ(cu.cuCtxSynchronize(), CUDA_SUCCESS);
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      // (bf16 results widened to their f32 values.)
      OwnedTensor result(c.resultType(o), reference.out(o).view.shape);
      ASSERT_EQ(cu.cuMemcpyDtoH(result.bytes.data(), pointers[c.inputs.size() + o],
                                result.bytes.size()),
                CUDA_SUCCESS);
      std::vector<float> expected = reference.out(o).floats(), got = result.floats();
      for (size_t e = 0; e < got.size(); ++e)
        ASSERT_TRUE(close(got[e], expected[e]))
            << "case " << i << " result " << o << " element " << e << ": device " << got[e]
            << ", interpreter " << expected[e];
    }
    for (CUdeviceptr p : pointers)
      cu.cuMemFree(p);
  }
}

TEST(CudaModule, LaunchesGeneratedKernels) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  launchAndCompare(realisticCases(), withinOneMillionth);
}

// bf16 tensors read and written 8 elements at a time on the device: within a bf16 unit of the
// interpreter (the device's erff may round a value the other way before it is narrowed).
TEST(CudaModule, LaunchesBf16Kernels) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  launchAndCompare(bf16VectorCases(), [](float a, float e) {
    return std::fabs(double(a) - double(e)) <= std::max(1.0, std::fabs(double(e))) / 128;
  });
}

TEST(CudaModule, LaunchesEveryOpcode) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  launchAndCompare({everyOpcodeCase(), maskInputsCase()}, withinOneMillionth);
}

// The same sums on the device: per-thread running sums, warp sums and atomic adds, with the
// launch's smaller grid for kernels with reduced results.
TEST(CudaModule, ReducedResultsSumOnTheDevice) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  launchAndCompare(longSumCases(), withinSumRounding);
}

#endif

} // namespace
} // namespace plait
