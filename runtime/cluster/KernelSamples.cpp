// The synthetic kernel calls plait-calibrate times per kernel class: their operands and the
// classes' kernels (KernelSamples.h).
#include "runtime/cluster/KernelSamples.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "codegen/schema/FusedElementwise.h"
#include "runtime/cpu/Workspace.h"

namespace plait::cluster {
namespace {

bool hasSuffix(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

} // namespace

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0)
    return "unknown-host";
  return name;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d", &utc);
  return text;
}

double significant(double x) { return std::strtod(fmt::format("{:.4g}", x).c_str(), nullptr); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// A number in [0, 1) that looks random in i (splitmix64's finaliser): neighbours compare
// either way with even odds, as a max pool's window or a where's condition meets real data.
float scattered(uint64_t i) {
  uint64_t z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(z >> 40) / float(1ull << 24);
}

rt::TensorView KernelOperands::make(rt::DType dtype, std::vector<int64_t> shape, float value) {
  rt::TensorView view;
  view.dtype = dtype;
  view.shape = std::move(shape);
  std::vector<uint8_t> &bytes = storage.emplace_back(std::max<size_t>(view.bytes(), 1), 0);
  view.data = bytes.data();
  int64_t n = view.numel();
  // In (value, value + 0.5): no zeros, no denormals; scattered rather than increasing, so
  // that kernels whose branches follow the data (max pools, where, relu) meet them as
  // unpredictable as real activations make them. A scalar is `value` itself (a step
  // count, an exponent, a learning rate).
  if (dtype == rt::DType::F32)
    for (int64_t i = 0; i < n; ++i)
      static_cast<float *>(view.data)[i] =
          n == 1 ? value : value + 0.5f * scattered(uint64_t(i));
  else if (dtype == rt::DType::I1)
    for (int64_t i = 0; i < n; ++i)
      bytes[size_t(i)] = uint8_t(scattered(uint64_t(i) + 0x5bd1e995u) < 0.5f);
  return view;
}

void KernelOperands::allocateWorkspace(std::string_view kernel) {
  std::vector<rt::OperandType> in, out;
  for (const rt::TensorView &t : inputs)
    in.push_back({t.dtype, &t.shape});
  for (const rt::TensorView &t : outputs)
    out.push_back({t.dtype, &t.shape});
  workspaceBytes = rt::kernelWorkspaceBytes(kernel, in, out, attrs);
  workspace.assign(workspaceBytes + rt::kWorkspaceAlignment, 0);
  uintptr_t base = reinterpret_cast<uintptr_t>(workspace.data());
  aligned = workspace.data() + (rt::kWorkspaceAlignment - base % rt::kWorkspaceAlignment) %
                                   rt::kWorkspaceAlignment;
}

// The registered kernel a timed variant runs ("pow_square" is pow with a scalar exponent).
std::string registered(const std::string &variant) {
  if (variant == "pow_square")
    return "pow";
  if (variant == "transpose_heads")
    return "transpose";
  if (variant == "where_scalar")
    return "where";
  if (variant == "reduce_sum_rows")
    return "reduce_sum";
  if (variant == "matmul_batch" || variant == "matmul_perm")
    return "matmul";
  if (variant.rfind("fused_", 0) == 0)
    return "fused_elementwise";
  // Rows of 16 (the row-wise kernels), small planes and images (pools, convolutions), the
  // direct convolutions ("conv2d_grad_input_depthwise_small" is conv2d_grad_input).
  std::string base = variant;
  for (std::string_view suffix : {"_16", "_small", "_depthwise", "_grouped"})
    if (hasSuffix(base, suffix))
      base = base.substr(0, base.size() - suffix.size());
  return base;
}

// The operands of `kernel` (a registered kernel or a variant) for `elements` f32 elements
// (a multiple of 256), shaped as the plans shape them: rows of 256 (the last axis the softmax,
// norm and reduction work over; the "_16" variants: rows of 16, as attention's and small
// models' rows are), NCHW images of 16×16 for the pools. `elements` is what the cost model's
// table counts for the kernel (result elements; the first operand's for reductions, pools and
// their gradients). The matmul variants are elements / 256 GEMMs of 4×4×4 (a batch: its
// per-GEMM cost, FLOPs negligible), counted as rows, not elements. The fused variants run
// the fused kernel interpreted on one multiply, stored or summed over rows.
void kernelOperands(const std::string &kernel, int64_t elements, KernelOperands &k) {
  using rt::DType;
  const bool short16 = hasSuffix(kernel, "_16");
  const int64_t width = short16 ? 16 : 256;
  const int64_t rows = elements / width;
  const std::vector<int64_t> shape{rows, width};
  k.elements = elements;
  const std::string base = registered(kernel);
  if (base == "softmax" || base == "layer_norm" || base == "softmax_cross_entropy" ||
      base == "softmax_cross_entropy_grad" || kernel == "reduce_sum" || kernel == "reduce_sum_16")
    k.rows = rows;
  if (kernel == "reduce_sum_rows")
    k.rows = 256; // a result element each
  if (kernel == "mul" || kernel == "add") {
    k.in(DType::F32, shape), k.in(DType::F32, shape, 1.0f), k.out(DType::F32, shape);
  } else if (kernel == "pow") { // x ** y elementwise, and x ** 2 (a scalar exponent)
    k.in(DType::F32, shape), k.in(DType::F32, shape, 1.0f), k.out(DType::F32, shape);
  } else if (kernel == "pow_square") {
    k.in(DType::F32, shape), k.in(DType::F32, {}, 2.0f), k.out(DType::F32, shape);
  } else if (kernel == "relu" || kernel == "exp" || kernel == "erf" || kernel == "gelu") {
    k.in(DType::F32, shape, -0.25f), k.out(DType::F32, shape);
  } else if (kernel == "where") {
    k.in(DType::I1, shape), k.in(DType::F32, shape), k.in(DType::F32, shape);
    k.out(DType::F32, shape);
  } else if (kernel == "where_scalar") { // one side a broadcast scalar, as in relu's gradient
    k.in(DType::I1, shape), k.in(DType::F32, shape), k.in(DType::F32, {}, 0.0f);
    k.out(DType::F32, shape);
  } else if (kernel == "cast") {
    k.in(DType::F32, shape), k.out(DType::I32, shape);
  } else if (kernel == "transpose") { // a matrix transposed
    k.in(DType::F32, shape), k.out(DType::F32, {256, rows});
    k.ints("perm", {1, 0});
  } else if (kernel == "transpose_heads") { // rows of 16 moved whole, as attention heads are
    k.in(DType::F32, {rows, 16, 16}), k.out(DType::F32, {16, rows, 16});
    k.ints("perm", {1, 0, 2});
  } else if (kernel == "concat") {
    k.in(DType::F32, {rows, 128}), k.in(DType::F32, {rows, 128}), k.out(DType::F32, shape);
    k.ints("axis", {1});
  } else if (kernel == "slice") {
    k.in(DType::F32, {rows, 512}), k.out(DType::F32, shape);
    k.ints("starts", {0, 128});
    k.ints("ends", {rows, 384});
    k.ints("steps", {1, 1});
  } else if (kernel == "reduce_sum" || kernel == "reduce_sum_16") {
    k.in(DType::F32, shape), k.out(DType::F32, {rows});
    k.ints("axes", {1});
    k.ints("keepdims", {0});
  } else if (kernel == "reduce_sum_rows") { // over the leading axis, as bias gradients are
    k.in(DType::F32, shape), k.out(DType::F32, {256});
    k.ints("axes", {0});
    k.ints("keepdims", {0});
  } else if (base == "softmax_cross_entropy") { // rows of logits, class 0 the target
    k.in(DType::F32, shape), k.in(DType::I64, {rows}), k.out(DType::F32, {});
  } else if (base == "softmax_cross_entropy_grad") {
    k.in(DType::F32, shape), k.in(DType::I64, {rows}), k.in(DType::F32, {}, 1.0f);
    k.out(DType::F32, shape);
  } else if (base == "softmax") {
    k.in(DType::F32, shape), k.out(DType::F32, shape);
    k.ints("axis", {-1});
  } else if (base == "layer_norm") {
    k.in(DType::F32, shape), k.in(DType::F32, {width}), k.in(DType::F32, {width});
    k.out(DType::F32, shape);
    k.ints("axis", {-1});
  } else if (kernel.rfind("max_pool2d", 0) == 0 || kernel.rfind("avg_pool2d", 0) == 0) {
    // The table counts a pool's input elements, its gradient's first operand's (x, or dy);
    // its rows are the planes of that operand: 16×16, or 4×4 for the "_small" variants.
    const bool small = hasSuffix(kernel, "_small");
    const std::string pool = registered(kernel);
    const int64_t side = small ? 4 : 16, planes = elements / (side * side);
    if (pool == "max_pool2d_grad") { // (x, dy) -> dx
      k.in(DType::F32, {1, planes, side, side}), k.in(DType::F32, {1, planes, side / 2, side / 2});
      k.out(DType::F32, {1, planes, side, side});
    } else if (pool == "avg_pool2d_grad") { // dy -> dx
      k.in(DType::F32, {1, planes, side, side}), k.out(DType::F32, {1, planes, 2 * side, 2 * side});
    } else {
      k.in(DType::F32, {1, planes, side, side}), k.out(DType::F32, {1, planes, side / 2, side / 2});
    }
    k.ints("kernel", {2, 2});
    k.ints("strides", {2, 2});
    k.ints("pads", {0, 0, 0, 0});
    k.ints("dilations", {1, 1});
    k.rows = planes;
    if (hasSuffix(pool, "_grad"))
      k.elements = k.outputs[0].numel(); // a gradient's work is over dx's windows
  } else if (kernel.rfind("conv2d", 0) == 0 && (kernel.find("_depthwise") != std::string::npos ||
                                                kernel.find("_grouped") != std::string::npos)) {
    // The direct convolutions (conv_depthwise, conv_grouped: runtime/cpu/ConvSupport.h,
    // Workspace.h directConvWork): 3x3, padded by 1, over one image's C = max(16, elements /
    // plane) channels (a multiple of 16), depthwise (w [C, 1, 3, 3]) on planes of 24x24 (8x8:
    // "_small"), as MobileNet's and EfficientNet's middle layers are (a block's planes then fill L1
    // and more, as theirs do), or in groups of 8 channels and filters on 12x12 (RegNet's width at
    // the largest plane it computes directly; "_small": 4 on 4x4), marked `direct`. `elements`
    // counts their vector multiply-adds, `rows` the vectors laid out.
    const bool small = hasSuffix(kernel, "_small");
    const bool depthwise = kernel.find("_depthwise") != std::string::npos;
    const std::string conv = registered(kernel);
    const int64_t side = depthwise ? (small ? 8 : 24) : (small ? 4 : 12);
    const int64_t channels = std::max<int64_t>(16, elements / (side * side) / 16 * 16);
    const int64_t width = depthwise ? 1 : small ? 4 : 8, group = channels / width;
    const std::vector<int64_t> x{1, channels, side, side}, w{channels, width, 3, 3};
    if (conv == "conv2d_grad_weight") // (x, dy) -> dw
      k.in(DType::F32, x), k.in(DType::F32, x), k.out(DType::F32, w);
    else // conv2d: (x, w) -> y; conv2d_grad_input: (dy, w) -> dx; y and x alike (stride 1)
      k.in(DType::F32, x), k.in(DType::F32, w), k.out(DType::F32, x);
    k.ints("strides", {1, 1});
    k.ints("pads", {1, 1, 1, 1});
    k.ints("dilations", {1, 1});
    k.ints("group", {group});
    if (!depthwise)
      k.ints("direct", {1});
    const double plane = double(side * side);
    const rt::DirectConvWork work =
        rt::directConvWork(rt::convKindOf(conv), depthwise, 1, double(channels), double(channels),
                           double(group), plane, plane, 9);
    k.elements = int64_t(work.multiplyAdds);
    k.rows = int64_t(work.moved);
  } else if (kernel.rfind("conv2d", 0) == 0) {
    // One filter of 3×3 over 4 channels, padded by 1: a column of 36 values per output pixel
    // and 72 FLOPs, so that the time is the kernel's own (im2col or col2im, a GEMM call per
    // image), not its FLOPs. Images of 8×8 (`elements` / 256 of them), or 4×4 ("_small").
    const bool small = hasSuffix(kernel, "_small");
    const std::string conv = registered(kernel);
    const int64_t side = small ? 4 : 8, images = elements / (4 * side * side);
    const std::vector<int64_t> x{images, 4, side, side}, w{1, 4, 3, 3}, y{images, 1, side, side};
    if (conv == "conv2d")
      k.in(DType::F32, x), k.in(DType::F32, w), k.out(DType::F32, y);
    else if (conv == "conv2d_grad_input") // (dy, w) -> dx
      k.in(DType::F32, y), k.in(DType::F32, w), k.out(DType::F32, x);
    else // conv2d_grad_weight: (x, dy) -> dw
      k.in(DType::F32, x), k.in(DType::F32, y), k.out(DType::F32, w);
    k.ints("strides", {1, 1});
    k.ints("pads", {1, 1, 1, 1});
    k.ints("dilations", {1, 1});
    k.elements = images * 36 * side * side; // the columns
    k.rows = images;                        // the GEMMs
  } else if (kernel == "adamw_update") {    // in place, as plans update parameters
    k.in(DType::F32, shape), k.in(DType::F32, shape), k.in(DType::F32, shape);
    k.in(DType::F32, shape), k.in(DType::F32, {}, 0.001f), k.in(DType::F32, {}, 1.0f);
    k.outputs = {k.inputs[0], k.inputs[2], k.inputs[3]};
  } else if (kernel == "sgd_update") {
    k.in(DType::F32, shape), k.in(DType::F32, shape), k.in(DType::F32, {}, 0.01f);
    k.in(DType::F32, {}, 1.0f);
    k.outputs = {k.inputs[0]};
  } else if (kernel == "matmul_batch" || kernel == "matmul_perm") {
    const int64_t gemms = elements / 256;
    if (kernel == "matmul_batch") { // batched on both sides: one GEMM per entry
      k.in(DType::F32, {gemms, 4, 4});
    } else { // the lhs read through a permutation, as attention's heads are
      k.in(DType::F32, {4, gemms, 4});
      k.ints("lhs_perm", {1, 0, 2});
    }
    k.in(DType::F32, {gemms, 4, 4}), k.out(DType::F32, {gemms, 4, 4});
    k.elements = 0;
    k.rows = gemms;
  } else if (kernel == "fused_mul" || kernel == "fused_row_sum" || kernel == "fused_row_sum_16") {
    k.in(DType::F32, shape), k.in(DType::F32, shape, 1.0f);
    k.ints("program", {fused::Mul, 0, 1, -1});
    k.ints("outputs", {2});
    if (kernel == "fused_mul") {
      k.out(DType::F32, shape);
    } else {
      k.out(DType::F32, {rows, 1});
      k.ints("reductions", {fused::Sum});
      k.rows = rows;
    }
  }
  k.allocateWorkspace(registered(kernel));
}

const std::vector<KernelClass> &kernelClasses() {
  static const std::vector<KernelClass> classes = {
      {"binary", {"mul", "add"}},
      {"unary", {"relu"}},
      {"transcendental", {"exp", "erf", "gelu"}},
      {"pow", {"pow", "pow_square"}},
      {"where", {"where", "where_scalar"}},
      {"cast", {"cast"}},
      {"movement", {"transpose", "transpose_heads"}},
      {"copy", {"concat", "slice"}},
      {"reduction", {"reduce_sum", "reduce_sum_rows", "reduce_sum_16"}},
      {"loss", {"softmax_cross_entropy", "softmax_cross_entropy_16"}},
      {"loss_grad", {"softmax_cross_entropy_grad", "softmax_cross_entropy_grad_16"}},
      {"softmax", {"softmax", "softmax_16"}},
      {"norm", {"layer_norm", "layer_norm_16"}},
      {"pool", {"max_pool2d", "avg_pool2d", "max_pool2d_small", "avg_pool2d_small"}},
      {"pool_grad",
       {"max_pool2d_grad", "avg_pool2d_grad", "max_pool2d_grad_small", "avg_pool2d_grad_small"}},
      {"adamw", {"adamw_update"}},
      {"sgd", {"sgd_update"}},
      {"matmul", {"matmul_batch", "matmul_perm"}},
      {"fused", {"fused_mul", "fused_row_sum", "fused_row_sum_16"}},
      {"conv",
       {"conv2d", "conv2d_grad_input", "conv2d_grad_weight", "conv2d_small",
        "conv2d_grad_input_small", "conv2d_grad_weight_small"}},
      {"conv_depthwise",
       {"conv2d_depthwise", "conv2d_grad_input_depthwise", "conv2d_grad_weight_depthwise",
        "conv2d_depthwise_small", "conv2d_grad_input_depthwise_small",
        "conv2d_grad_weight_depthwise_small"}},
      {"conv_grouped",
       {"conv2d_grouped", "conv2d_grad_input_grouped", "conv2d_grad_weight_grouped",
        "conv2d_grouped_small", "conv2d_grad_input_grouped_small",
        "conv2d_grad_weight_grouped_small"}},
  };
  return classes;
}

} // namespace plait::cluster
