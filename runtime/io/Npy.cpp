// .npy reading and writing. The header is a Python dict literal; only the three keys numpy
// writes are accepted, parsed by a small cursor rather than a general Python parser.
#include "runtime/io/Npy.h"

#include <cctype>
#include <cstring>
#include <fstream>

#include "runtime/io/TensorFile.h"

namespace plait::rt {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyDtype {
  const char *descr;
  DType dtype;
};
constexpr NpyDtype kNpyDtypes[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16},
    {"<i8", DType::I64}, {"<i4", DType::I32}, {"|b1", DType::I1},
    {"|i1", DType::I8},  {"|u1", DType::U8},  {"<i2", DType::I16},
    {"<u2", DType::U16}, {"<u4", DType::U32}, {"<u8", DType::U64},
};

// Cursor over the header dict, e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    skipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool string(std::string &out) {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return false;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      return false;
    out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  bool boolean(bool &out) {
    skipSpace();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (text_.substr(pos_, n) == word) {
        pos_ += n;
        out = value;
        return true;
      }
    }
    return false;
  }
  // A tuple of non-negative integers: "()", "(3,)", "(2, 3)"; Python 2's "3L" too.
  bool shape(std::vector<int64_t> &out) {
    if (!consume('('))
      return false;
    out.clear();
    while (!consume(')')) {
      skipSpace();
      int64_t v = 0;
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, text_[pos_] - '0', &v))
          return false;
        ++pos_;
      }
      if (pos_ == start)
        return false;
      if (pos_ < text_.size() && text_[pos_] == 'L')
        ++pos_;
      out.push_back(v);
      if (!consume(',') && !peek(')'))
        return false;
    }
    return true;
  }

private:
  std::string_view text_;
  size_t pos_ = 0;
};

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

Status parseHeaderDict(std::string_view text, const std::string &path, NpyHeader &out) {
  auto bad = [&](const char *what) {
    // The start of the header, without numpy's padding (spaces and a newline): one line.
    std::string_view shown = text.substr(0, 120);
    while (!shown.empty() && std::isspace(static_cast<unsigned char>(shown.back())))
      shown.remove_suffix(1);
    return Status::errorf("{}: bad .npy header ({}): {}", path, what, printable(shown));
  };
  HeaderParser p(text);
  if (!p.consume('{'))
    return bad("expected a dict");
  bool haveDescr = false, haveOrder = false, haveShape = false;
  while (!p.consume('}')) {
    std::string key;
    if (!p.string(key) || !p.consume(':'))
      return bad("expected 'key':");
    if (key == "descr") {
      if (p.peek('['))
        return Status::errorf("{}: structured numpy dtypes are not supported", path);
      if (!p.string(out.descr))
        return bad("descr is not a string");
      haveDescr = true;
    } else if (key == "fortran_order") {
      if (!p.boolean(out.fortranOrder))
        return bad("fortran_order is not True or False");
      haveOrder = true;
    } else if (key == "shape") {
      if (!p.shape(out.shape))
        return bad("shape is not a tuple of non-negative integers");
      haveShape = true;
    } else {
      return bad("unexpected key");
    }
    if (!p.consume(',') && !p.peek('}'))
      return bad("expected ',' or '}'");
  }
  if (!haveDescr || !haveOrder || !haveShape)
    return bad("needs descr, fortran_order and shape");
  return {};
}

Status dtypeFromDescr(const std::string &descr, const std::string &path, DType &out) {
  for (const NpyDtype &d : kNpyDtypes)
    if (descr == d.descr) {
      out = d.dtype;
      return {};
    }
  if (!descr.empty() && descr[0] == '>')
    return Status::errorf("{}: big-endian dtype '{}' is not supported (save it little-endian)",
                          path, printable(descr));
  if (descr.size() > 1 && descr[1] == 'V')
    return Status::errorf("{}: dtype '{}' is raw bytes (bfloat16 from ml_dtypes?); numpy has "
                          "no bfloat16, save as float32 or use an ONNX .pb",
                          path, printable(descr));
  std::string supported;
  for (const NpyDtype &d : kNpyDtypes)
    supported += std::string(supported.empty() ? "" : " ") + d.descr;
  return Status::errorf("{}: unsupported dtype '{}' (supported: {})", path, printable(descr),
                        supported);
}

const char *descrOf(DType t) {
  for (const NpyDtype &d : kNpyDtypes)
    if (d.dtype == t)
      return d.descr;
  return nullptr;
}

std::string formatHeaderDict(const char *descr, const std::vector<int64_t> &shape) {
  std::string dims;
  for (int64_t d : shape)
    dims += fmt::format("{}, ", d);
  if (shape.size() > 1)
    dims.resize(dims.size() - 2); // "(2, 3)"; a 1-tuple keeps its comma: "(3,)"
  else if (shape.size() == 1)
    dims.resize(dims.size() - 1);
  return fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
}

} // namespace

Status parseNpy(const std::string &bytes, const std::string &path, HostTensor &out) {
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    return Status::errorf("{}: not a .npy file (bad magic)", path);
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  auto byteAt = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  if (major == 1) {
    headerLen = byteAt(8) | byteAt(9) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return Status::errorf("{}: truncated .npy header", path);
    headerLen = byteAt(8) | byteAt(9) << 8 | byteAt(10) << 16 | byteAt(11) << 24;
    headerStart = 12;
  } else {
    return Status::errorf("{}: unsupported .npy format version {}.{}", path, major,
                          byteAt(7));
  }
  if (headerLen > bytes.size() - headerStart)
    return Status::errorf("{}: truncated .npy header", path);

  NpyHeader header;
  PLAIT_RETURN_IF_ERROR(
      parseHeaderDict(std::string_view(bytes).substr(headerStart, headerLen), path, header));
  if (header.fortranOrder)
    return Status::errorf("{}: Fortran-order arrays are not supported (save a C-contiguous "
                          "array, e.g. np.ascontiguousarray)",
                          path);
  DType dtype;
  PLAIT_RETURN_IF_ERROR(dtypeFromDescr(header.descr, path, dtype));

  // The element count as TensorView::numel() multiplies it, in order, must fit int64 (a late
  // zero does not undo an overflow before it), and its bytes uint64.
  int64_t elements = 1;
  uint64_t expected = 0;
  for (int64_t d : header.shape)
    if (__builtin_mul_overflow(elements, d, &elements))
      return Status::errorf("{}: shape {} is too large", path, shapeString(header.shape));
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements), uint64_t(dtypeSize(dtype)),
                             &expected))
    return Status::errorf("{}: shape {} is too large", path, shapeString(header.shape));
  size_t dataStart = headerStart + headerLen;
  size_t have = bytes.size() - dataStart;
  if (have != expected)
    return Status::errorf("{}: {} data bytes, expected {} for shape {} of {}{}", path, have,
                          expected, shapeString(header.shape), dtypeName(dtype),
                          have < expected ? " (truncated file)" : "");
  out.dtype = dtype;
  out.shape = std::move(header.shape);
  out.bytes.assign(bytes.begin() + dataStart, bytes.end());
  if (dtype == DType::I1)
    for (uint8_t &b : out.bytes)
      b = b != 0;
  return {};
}

Status readNpy(const std::string &path, HostTensor &out) {
  std::string bytes;
  PLAIT_RETURN_IF_ERROR(readFileBytes(path, bytes));
  return parseNpy(bytes, path, out);
}

Status writeNpy(const std::string &path, const TensorView &tensor) {
  const char *descr = descrOf(tensor.dtype);
  if (!descr)
    return Status::errorf("{}: numpy has no {} dtype; convert the tensor to f32 first", path,
                          dtypeName(tensor.dtype));
  std::string dict = formatHeaderDict(descr, tensor.shape);
  // Pad with spaces and a final newline so that the data starts 64-byte aligned, as numpy does.
  size_t prefix = kMagicSize + 2 + 2;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  bool v2 = total - prefix > 0xffff;
  if (v2) {
    prefix += 2;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  size_t headerLen = total - prefix;
  dict.append(headerLen - dict.size() - 1, ' ');
  dict += '\n';

  std::string head(kMagic, kMagicSize);
  head += static_cast<char>(v2 ? 2 : 1);
  head += '\0';
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    head += static_cast<char>((headerLen >> (8 * i)) & 0xff);
  head += dict;

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file)
    return Status::errorf("{}: cannot open for writing", path);
  file.write(head.data(), static_cast<std::streamsize>(head.size()));
  if (tensor.dtype == DType::I1) {
    const uint8_t *src = static_cast<const uint8_t *>(tensor.data);
    std::string normalised(tensor.bytes(), '\0');
    for (size_t i = 0; i < normalised.size(); ++i)
      normalised[i] = static_cast<char>(src[i] != 0);
    file.write(normalised.data(), static_cast<std::streamsize>(normalised.size()));
  } else {
    file.write(static_cast<const char *>(tensor.data),
               static_cast<std::streamsize>(tensor.bytes()));
  }
  file.close();
  if (!file)
    return Status::errorf("{}: write error", path);
  return {};
}

} // namespace plait::rt
