// --nproc: re-executes plait-run under mpirun with the same arguments (less --nproc).
#include "runtime/comm/Mpirun.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace plait::rt {

std::vector<std::string> withoutOption(const std::vector<std::string> &args,
                                       const std::string &name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i; // and its value
      continue;
    }
    if (args[i].rfind(name + "=", 0) == 0)
      continue;
    out.push_back(args[i]);
  }
  return out;
}

namespace {

// The first executable `program` on PATH, or "" when there is none.
std::string findOnPath(const std::string &program) {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate))
      return candidate.string();
  }
  return "";
}

} // namespace

Status execUnderMpirun(uint32_t nproc, const std::vector<std::string> &args) {
  std::string mpirun = findOnPath("mpirun");
  if (mpirun.empty())
    return Status::errorf("--nproc {}: mpirun not found on PATH (install openmpi-bin, or "
                          "start the ranks yourself with mpirun -np {})",
                          nproc, nproc);
  std::error_code ec;
  // The ranks run this very binary, even when it was started through a relative path or
  // a symlink.
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec)
    return Status::internal(fmt::format("--nproc {}: cannot find this executable: {}", nproc,
                                        ec.message()));
  std::vector<std::string> argv = {mpirun, "-np", std::to_string(nproc), "--oversubscribe"};
  if (::geteuid() == 0) // OpenMPI refuses root unless told; containers often run as root
    argv.push_back("--allow-run-as-root");
  argv.push_back(self);
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char *> cargv;
  for (std::string &a : argv)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  ::execv(mpirun.c_str(), cargv.data());
  return Status::errorf("--nproc {}: cannot run {}: {}", nproc, mpirun, std::strerror(errno));
}

} // namespace plait::rt
