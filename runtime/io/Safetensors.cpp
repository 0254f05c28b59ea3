// safetensors reader and writer: the format other tools (PyTorch, JAX, HF) load trained
// weights from, and the format of plait's checkpoint shards.
#include "runtime/io/Safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/io/TensorFile.h"

namespace plait::rt {
namespace {

const char *safetensorsDType(DType t) {
  switch (t) {
  case DType::F32: return "F32";
  case DType::F64: return "F64";
  case DType::BF16: return "BF16";
  case DType::F16: return "F16";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I1: return "BOOL";
  case DType::I8: return "I8";
  case DType::U8: return "U8";
  case DType::I16: return "I16";
  case DType::U16: return "U16";
  case DType::U32: return "U32";
  case DType::U64: return "U64";
  }
  return "?";
}

bool parseDType(const std::string &name, DType &out) {
  static const std::pair<const char *, DType> kNames[] = {
      {"F32", DType::F32}, {"F64", DType::F64}, {"BF16", DType::BF16}, {"F16", DType::F16},
      {"I64", DType::I64}, {"I32", DType::I32}, {"BOOL", DType::I1}, {"I8", DType::I8},
      {"U8", DType::U8},   {"I16", DType::I16}, {"U16", DType::U16}, {"U32", DType::U32},
      {"U64", DType::U64}};
  for (const auto &[text, dtype] : kNames)
    if (name == text) {
      out = dtype;
      return true;
    }
  return false;
}

// The largest header we accept (the format's reference implementation uses 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

} // namespace

Status parseSafetensors(const uint8_t *data, size_t size, const std::string &path,
                        std::vector<std::pair<std::string, HostTensor>> &out) {
  out.clear();
  if (size < 8)
    return Status::errorf("{}: not a safetensors file ({} bytes, the header length alone "
                          "takes 8)", path, size);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | data[i];
  if (headerBytes > kMaxHeaderBytes || headerBytes > size - 8)
    return Status::errorf("{}: header length {} exceeds the file ({} bytes) or the 100 MB "
                          "limit", path, headerBytes, size);
  nlohmann::json header = nlohmann::json::parse(data + 8, data + 8 + headerBytes, nullptr,
                                                /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return Status::errorf("{}: the header is not a JSON object", path);
  const uint64_t dataBytes = size - 8 - headerBytes;
  struct Entry {
    std::string name;
    HostTensor tensor;
    uint64_t begin = 0, end = 0;
  };
  std::vector<Entry> entries;
  for (const auto &[name, info] : header.items()) {
    if (name == "__metadata__")
      continue;
    Entry e;
    e.name = name;
    // Names and dtypes are the file's text: escaped, so an error stays one line.
    const std::string shown = printable(name);
    auto dtype = info.is_object() ? info.find("dtype") : header.end();
    auto shape = info.is_object() ? info.find("shape") : header.end();
    auto offsets = info.is_object() ? info.find("data_offsets") : header.end();
    if (!info.is_object() || dtype == info.end() || shape == info.end() ||
        offsets == info.end() || !dtype->is_string() || !shape->is_array() ||
        !offsets->is_array() || offsets->size() != 2)
      return Status::errorf("{}: tensor '{}': expected {{dtype, shape, data_offsets: [begin, "
                            "end]}}", path, shown);
    if (!parseDType(dtype->get<std::string>(), e.tensor.dtype))
      return Status::errorf("{}: tensor '{}': unknown dtype '{}'", path, shown,
                            printable(dtype->get<std::string>()));
    uint64_t bytes = dtypeSize(e.tensor.dtype);
    for (const auto &d : *shape) {
      if (!d.is_number_unsigned())
        return Status::errorf("{}: tensor '{}': shape entries must be non-negative integers",
                              path, shown);
      uint64_t dim = d.get<uint64_t>();
      if (dim > uint64_t(INT64_MAX) || __builtin_mul_overflow(bytes, dim, &bytes))
        return Status::errorf("{}: tensor '{}': shape is too large", path, shown);
      e.tensor.shape.push_back(int64_t(dim));
    }
    if (!(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      return Status::errorf("{}: tensor '{}': data_offsets must be non-negative integers",
                            path, shown);
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    if (e.begin > e.end || e.end > dataBytes)
      return Status::errorf("{}: tensor '{}': data_offsets [{}, {}) lie outside the {} data "
                            "bytes (file truncated?)", path, shown, e.begin, e.end, dataBytes);
    if (e.end - e.begin != bytes)
      return Status::errorf("{}: tensor '{}': data_offsets hold {} bytes, shape {} of {} "
                            "needs {}", path, shown, e.end - e.begin,
                            shapeString(e.tensor.shape), dtypeName(e.tensor.dtype), bytes);
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (const Entry &e : entries) {
    if (e.begin != covered)
      return Status::errorf("{}: tensor '{}': data_offsets start at {}, expected {} (tensors "
                            "must cover the data without gaps or overlaps)", path,
                            printable(e.name), e.begin, covered);
    covered = e.end;
  }
  if (covered != dataBytes)
    return Status::errorf("{}: {} bytes follow the last tensor's data", path,
                          dataBytes - covered);
  const uint8_t *base = data + 8 + headerBytes;
  out.reserve(entries.size());
  for (Entry &e : entries) {
    e.tensor.bytes.assign(base + e.begin, base + e.end);
    out.emplace_back(std::move(e.name), std::move(e.tensor));
  }
  return {};
}

Status readSafetensors(const std::string &path,
                       std::vector<std::pair<std::string, HostTensor>> &out) {
  std::string bytes;
  PLAIT_RETURN_IF_ERROR(readFileBytes(path, bytes));
  return parseSafetensors(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), path,
                          out);
}

Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, TensorView>> &tensors) {
  // nlohmann::ordered_json keeps the tensors in file order, so equal runs write equal files.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}, {"producer", "plait"}};
  std::set<std::string> names;
  size_t offset = 0;
  for (const auto &[name, view] : tensors) {
    if (!names.insert(name).second)
      return Status::errorf("{}: tensor '{}' appears twice", path, name);
    header[name] = {{"dtype", safetensorsDType(view.dtype)},
                    {"shape", view.shape},
                    {"data_offsets", {offset, offset + view.bytes()}}};
    offset += view.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // the format pads the header to 8 bytes
  uint64_t headerBytes = text.size();

  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::errorf("{}: cannot open for writing", path);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<unsigned char>(headerBytes >> (8 * i));
    out.write(reinterpret_cast<const char *>(length), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto &[name, view] : tensors)
      out.write(static_cast<const char *>(view.data), static_cast<std::streamsize>(view.bytes()));
    if (!out)
      return Status::errorf("{}: write error", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Status::errorf("{}: {}", path, ec.message());
  return {};
}

} // namespace plait::rt
