// safetensors writer: the format other tools (PyTorch, JAX, HF) load trained weights from.
#include "runtime/io/Safetensors.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

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
  }
  return "?";
}

} // namespace

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
