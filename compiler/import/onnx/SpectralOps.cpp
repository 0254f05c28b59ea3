// Importers of ONNX's DFT and STFT (opset 17) as matrix products with a constant DFT matrix, so
// that a spectrogram front end trains (the gradient is a product with the same matrix) and
// runs wherever matmul does. A signal of n samples with c = 1 (real) or 2 (complex: re, im)
// channels, viewed as [rows, n * c], times the [n * c, bins * 2] matrix W gives each row's
// spectrum [rows, bins, 2]:
//   y_k = sum_j x_j e^(-s 2 pi i j k / L)      (s = 1; the inverse: s = -1, and / L)
// for k < bins (L, or L / 2 + 1 onesided) and j < min(n, L) (dft_length L pads with zeros or
// truncates). The angles are reduced exactly (j * k mod L), their cosines and sines computed
// in double and rounded to the signal's type. W has n * c * bins * 2 entries: at most 2^24.
// MelWeightMatrix, whose inputs are all constants, becomes a constant (importMelWeightMatrix).
#include "compiler/import/onnx/Importer.h"

#include <cmath>

using namespace mlir;

namespace plait::onnx_import {
namespace {

constexpr int64_t kMaxDftMatrix = int64_t(1) << 24;
/// At most this many frame positions (STFT's constant gather indices).
constexpr int64_t kMaxFramePositions = int64_t(1) << 26;

/// `x` [rows, n * c] times the DFT matrix: [rows, bins, 2]; null after an error (reported).
Value dftRows(NodeContext &ctx, Value x, int64_t rows, int64_t n, int64_t c, int64_t length,
              int64_t bins, bool inverse) {
  if (length < 1 || double(n) * double(c) * double(bins) * 2 > double(kMaxDftMatrix)) {
    (void)ctx.error(length < 1 ? "the DFT length must be positive, got " + llvm::Twine(length)
                               : "the DFT matrix (" + llvm::Twine(n * c) + " x " +
                                     llvm::Twine(bins * 2) + ") would exceed 2^24 entries");
    return {};
  }
  // The callers checked for a float signal, which kindOf knows.
  const ElemKind kind = *kindOf(elementTypeOf(x));
  const double sign = inverse ? -1.0 : 1.0, scale = inverse ? 1.0 / double(length) : 1.0;
  std::vector<double> w(size_t(n * c * bins * 2), 0.0);
  for (int64_t j = 0; j < std::min(n, length); ++j)
    for (int64_t k = 0; k < bins; ++k) {
      const double angle = 2.0 * M_PI * double((j * k) % length) / double(length);
      const double cosine = std::cos(angle) * scale, sine = std::sin(angle) * scale;
      // Output re += x_re cos + s x_im sin; im += x_im cos - s x_re sin.
      double *re = &w[size_t((j * c) * bins * 2 + k * 2)];
      re[0] = cosine;
      re[1] = -sign * sine;
      if (c == 2) {
        double *im = &w[size_t((j * c + 1) * bins * 2 + k * 2)];
        im[0] = sign * sine;
        im[1] = cosine;
      }
    }
  Value matrix = ctx.constant(HostTensor::fromDoubles(kind, {n * c, bins * 2}, w));
  Value y = ctx.create<MatmulOp>({x, matrix});
  return y ? ctx.reshape(y, {rows, bins, 2}) : Value();
}

/// The signal's last dimension: 1 (real) or 2 (complex).
std::optional<int64_t> channelsOf(NodeContext &ctx, RankedTensorType type, llvm::StringRef what) {
  if (type.getRank() < 2 || (type.getShape().back() != 1 && type.getShape().back() != 2)) {
    (void)ctx.error(what + " must end in a dimension of 1 (real) or 2 (complex)");
    return std::nullopt;
  }
  return type.getShape().back();
}

/// A scalar integer input that must be known at compile time, or `dflt` when absent.
std::optional<int64_t> scalarInput(NodeContext &ctx, unsigned i, llvm::StringRef role,
                                   int64_t dflt) {
  if (!ctx.hasInput(i))
    return dflt;
  auto values = ctx.requireIntsInput(i, role);
  if (!values)
    return std::nullopt;
  if (values->size() != 1) {
    (void)ctx.error("input '" + role + "' must be a scalar");
    return std::nullopt;
  }
  return (*values)[0];
}

/// DFT (opset 17): along `axis` (a signal dimension, not the last), forward or inverse,
/// onesided for real input, dft_length as a constant.
LogicalResult importDft(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type || failed(ctx.requireFloatInput(0)))
    return failure();
  auto c = channelsOf(ctx, type, "input");
  if (!c)
    return failure();
  const int64_t rank = type.getRank();
  int64_t axis = ctx.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank - 2)
    return ctx.error("axis " + llvm::Twine(ctx.intAttr("axis", 1)) + " is not a signal axis of " +
                     "rank " + llvm::Twine(rank) + " (the last dimension is re, im)");
  const bool inverse = ctx.intAttr("inverse", 0) != 0, onesided = ctx.intAttr("onesided", 0) != 0;
  if (onesided && (inverse || *c == 2))
    return ctx.unsupported("onesided with " + llvm::Twine(inverse ? "inverse" : "complex input"));
  const int64_t n = type.getDimSize(axis);
  auto length = scalarInput(ctx, 1, "dft_length", n);
  if (!length)
    return failure();
  const int64_t bins = onesided ? *length / 2 + 1 : *length;
  Value x = ctx.input(0);
  if (!x)
    return failure();
  // The signal axis next to the channels: [others..., n, c].
  const AxisMove signal = moveAxis(rank, axis, rank - 2);
  const int64_t rows = type.getNumElements() / (n * *c);
  x = signal.apply(ctx, x);
  x = x ? ctx.reshape(x, {rows, n * *c}) : Value();
  Value y = x ? dftRows(ctx, x, rows, n, *c, *length, bins, inverse) : Value();
  llvm::SmallVector<int64_t> moved = signal.shape(type.getShape());
  moved[size_t(rank - 2)] = bins;
  moved[size_t(rank - 1)] = 2;
  y = y ? ctx.reshape(y, moved) : Value();
  return ctx.setResult(signal.undo(ctx, y));
}

/// STFT (opset 17): signal [batch, length, c]; frames of frame_length every frame_step samples
/// (a gather of constant positions), times the window (which may be computed at run time),
/// each frame's DFT: [batch, frames, bins, 2].
LogicalResult importStft(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type || failed(ctx.requireFloatInput(0)))
    return failure();
  auto c = channelsOf(ctx, type, "signal");
  if (!c)
    return failure();
  if (type.getRank() != 3)
    return ctx.error("signal must be [batch, signal_length, 1 or 2]");
  auto step = scalarInput(ctx, 1, "frame_step", 0);
  if (!step)
    return failure();
  RankedTensorType windowType = ctx.hasInput(2) ? ctx.inputType(2) : RankedTensorType();
  if (ctx.hasInput(2) && (!windowType || windowType.getRank() != 1))
    return windowType ? ctx.error("window must be 1-D") : failure();
  auto frameLength =
      scalarInput(ctx, 3, "frame_length", windowType ? windowType.getDimSize(0) : -1);
  if (!frameLength)
    return failure();
  const int64_t batch = type.getDimSize(0), samples = type.getDimSize(1);
  if (*step < 1)
    return ctx.error("frame_step must be positive, got " + llvm::Twine(*step));
  if (*frameLength < 1 || *frameLength > samples)
    return ctx.error(*frameLength < 0 ? llvm::Twine("needs frame_length or a window")
                                      : "frame_length " + llvm::Twine(*frameLength) +
                                            " must be in [1, " + llvm::Twine(samples) + "]");
  if (windowType && windowType.getDimSize(0) != *frameLength)
    return ctx.error("the window has " + llvm::Twine(windowType.getDimSize(0)) +
                     " samples, frame_length is " + llvm::Twine(*frameLength));
  const bool onesided = ctx.intAttr("onesided", 1) != 0;
  if (onesided && *c == 2)
    return ctx.unsupported("onesided with complex input");
  const int64_t frames = (samples - *frameLength) / *step + 1;
  const int64_t bins = onesided ? *frameLength / 2 + 1 : *frameLength;
  if (double(frames) * double(*frameLength) > double(kMaxFramePositions))
    return ctx.error(llvm::Twine(frames) + " frames of " + llvm::Twine(*frameLength) +
                     " samples: more than 2^26 positions to gather");
  std::vector<int64_t> positions;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < *frameLength; ++j)
      positions.push_back(f * *step + j);
  Value signal = ctx.input(0);
  Value at = ctx.constant(HostTensor::fromInts(ElemKind::I64, {frames, *frameLength}, positions));
  Value framed = signal ? ctx.create<GatherOp>({signal, at}, {ctx.i64Attr("axis", 1)}) : Value();
  if (framed && windowType) {
    Value window = ctx.input(2);
    window = window ? ctx.reshape(window, {*frameLength, 1}) : Value();
    framed = window ? ctx.create<MulOp>({framed, window}) : Value();
  }
  const int64_t rows = batch * frames;
  framed = framed ? ctx.reshape(framed, {rows, *frameLength * *c}) : Value();
  Value y = framed ? dftRows(ctx, framed, rows, *frameLength, *c, *frameLength, bins, false)
                   : Value();
  return ctx.setResult(y ? ctx.reshape(y, {batch, frames, bins, 2}) : Value());
}

/// A float scalar input that must be known at compile time.
std::optional<double> floatScalarInput(NodeContext &ctx, unsigned i, llvm::StringRef role) {
  const HostTensor *t = ctx.requireConstInput(i, role);
  if (!t)
    return std::nullopt;
  if (t->numElements() != 1) {
    (void)ctx.error("input '" + role + "' must be a scalar");
    return std::nullopt;
  }
  return t->getDouble(0);
}

/// MelWeightMatrix (opset 17): a constant [dft_length / 2 + 1, num_mel_bins] of triangular
/// filters, computed as ONNX's reference computes it: num_mel_bins + 2 band edges evenly spaced
/// in mel (2595 log10(1 + f / 700), in float32 as the reference's scalars are; the spacing
/// divides by num_mel_bins + 2, as the reference does), mapped to spectrogram bins
/// floor((dft_length + 1) f / sample_rate); band i rises from edge i to edge i + 1 and falls to
/// edge i + 2 (a band of zero width is a 1 at its centre).
LogicalResult importMelWeightMatrix(NodeContext &ctx) {
  auto mels = scalarInput(ctx, 0, "num_mel_bins", 0);
  auto dftLength = mels ? scalarInput(ctx, 1, "dft_length", 0) : std::nullopt;
  auto rate = dftLength ? scalarInput(ctx, 2, "sample_rate", 0) : std::nullopt;
  auto lower = rate ? floatScalarInput(ctx, 3, "lower_edge_hertz") : std::nullopt;
  auto upper = lower ? floatScalarInput(ctx, 4, "upper_edge_hertz") : std::nullopt;
  if (!upper)
    return failure();
  if (*mels < 1 || *dftLength < 1 || *rate < 1)
    return ctx.error("num_mel_bins, dft_length and sample_rate must be positive");
  if (!(*lower >= 0 && *lower < *upper))
    return ctx.error("the band edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz");
  const int64_t bins = *dftLength / 2 + 1;
  if (double(bins) * double(*mels) > double(kMaxFoldedElements))
    return ctx.error("the matrix (" + llvm::Twine(bins) + " x " + llvm::Twine(*mels) +
                     ") would exceed 2^22 entries");
  std::optional<ElemKind> kind;
  switch (ctx.intAttr("output_datatype", 1)) {
  case 1: kind = ElemKind::F32; break;
  case 10: kind = ElemKind::F16; break;
  case 11: kind = ElemKind::F64; break;
  case 16: kind = ElemKind::BF16; break;
  default:
    return ctx.unsupported("output_datatype " + llvm::Twine(ctx.intAttr("output_datatype", 1)) +
                           " (plait writes float types)");
  }
  auto toMel = [](float hertz) { return 2595.0f * std::log10(1.0f + hertz / 700.0f); };
  const float lowMel = toMel(float(*lower)), highMel = toMel(float(*upper));
  const float step = (highMel - lowMel) / float(*mels + 2);
  std::vector<int64_t> edges;
  for (int64_t e = 0; e < *mels + 2; ++e) {
    const double mel = double(e) * double(step) + double(lowMel);
    const double hertz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    const int64_t bin = int64_t(std::floor(double(*dftLength + 1) * hertz / double(*rate)));
    if (bin < 0 || bin >= bins)
      return ctx.error("band edge " + llvm::Twine(e) + " falls in spectrogram bin " +
                       llvm::Twine(bin) + ", outside [0, " + llvm::Twine(bins - 1) +
                       "] (upper_edge_hertz above sample_rate / 2?)");
    edges.push_back(bin);
  }
  std::vector<double> w(size_t(bins * *mels), 0.0);
  for (int64_t i = 0; i < *mels; ++i) {
    const int64_t left = edges[size_t(i)], centre = edges[size_t(i + 1)],
                  right = edges[size_t(i + 2)];
    if (centre == left)
      w[size_t(centre * *mels + i)] = 1.0;
    else
      for (int64_t j = left; j <= centre; ++j)
        w[size_t(j * *mels + i)] = double(j - left) / double(centre - left);
    for (int64_t j = centre; j < right; ++j)
      w[size_t(j * *mels + i)] = double(right - j) / double(right - centre);
  }
  return ctx.setFolded(0, HostTensor::fromDoubles(*kind, {bins, *mels}, w));
}

} // namespace

void registerSpectralOps(OpImporterMap &map) {
  map["DFT"] = importDft;
  map["STFT"] = importStft;
  map["MelWeightMatrix"] = importMelWeightMatrix;
}

} // namespace plait::onnx_import
