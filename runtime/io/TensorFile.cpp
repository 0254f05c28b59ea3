// Reading tensor files by extension, and whole-file reads with messages naming the file.
#include "runtime/io/TensorFile.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/io/Npy.h"
#include "runtime/io/OnnxTensor.h"

namespace plait::rt {

Status readFileBytes(const std::string &path, std::string &out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return Status::errorf("{}: no such file", path);
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::errorf("{}: not a regular file", path);
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::errorf("{}: cannot open for reading", path);
  std::ostringstream content;
  content << file.rdbuf();
  if (file.bad())
    return Status::errorf("{}: read error", path);
  out = std::move(content).str();
  return {};
}

Status readTensorFile(const std::string &path, HostTensor &out) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy")
    return readNpy(path, out);
  if (ext == ".pb")
    return readOnnxTensor(path, out);
  return Status::errorf("{}: unknown tensor file type '{}' (expected .npy or .pb)", path, ext);
}

} // namespace plait::rt
