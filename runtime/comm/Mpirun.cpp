// --nproc: re-executes plait-run under mpirun with the same arguments (less --nproc).
#include "runtime/comm/Mpirun.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

namespace {

// mpirun -np N --oversubscribe [--allow-run-as-root] SELF ARGS, as argv.
Status mpirunCommand(uint32_t nproc, const std::vector<std::string> &args,
                     std::vector<std::string> &argv) {
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
  argv = {mpirun, "-np", std::to_string(nproc), "--oversubscribe"};
  if (::geteuid() == 0) // OpenMPI refuses root unless told; containers often run as root
    argv.push_back("--allow-run-as-root");
  argv.push_back(self);
  argv.insert(argv.end(), args.begin(), args.end());
  return {};
}

std::vector<char *> cArgv(std::vector<std::string> &argv) {
  std::vector<char *> out;
  for (std::string &a : argv)
    out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

} // namespace

Status execUnderMpirun(uint32_t nproc, const std::vector<std::string> &args) {
  std::vector<std::string> argv;
  PLAIT_RETURN_IF_ERROR(mpirunCommand(nproc, args, argv));
  std::vector<char *> cargv = cArgv(argv);
  ::execv(argv[0].c_str(), cargv.data());
  return Status::errorf("--nproc {}: cannot run {}: {}", nproc, argv[0], std::strerror(errno));
}

Status runUnderMpirun(uint32_t nproc, const std::vector<std::string> &args, int &exitCode) {
  std::vector<std::string> argv;
  PLAIT_RETURN_IF_ERROR(mpirunCommand(nproc, args, argv));
  std::vector<char *> cargv = cArgv(argv);
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0)
    return Status::errorf("--nproc {}: cannot fork: {}", nproc, std::strerror(errno));
  if (child == 0) {
    ::execv(argv[0].c_str(), cargv.data());
    std::fprintf(stderr, "plait-run: --nproc %u: cannot run %s: %s\n", nproc, argv[0].c_str(),
                 std::strerror(errno));
    ::_exit(1);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return Status::errorf("--nproc {}: waiting for mpirun: {}", nproc, std::strerror(errno));
  exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {};
}

} // namespace plait::rt
