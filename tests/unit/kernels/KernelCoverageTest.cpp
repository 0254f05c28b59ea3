// Every op of the plait dialect (ir/PlaitOps.td) except the plan-data sources has a kernel.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

/// The text of the ODS file `path` and of the files it includes from ir/ (PlaitOps.td holds
/// the dialect's op families in files of their own).
std::string odsText(const std::string &path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::stringstream text;
  text << file.rdbuf();
  std::string s = text.str();
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  std::regex include(R"(include\s+\"ir/(\w+\.td)\")");
  std::string all = s;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), include); it != std::sregex_iterator();
       ++it)
    all += odsText(dir + (*it)[1].str());
  return all;
}

/// Mnemonics of `def X : Plait_...<"mnemonic"` in the ODS files.
std::set<std::string> dialectMnemonics() {
  std::string s = odsText(PLAIT_OPS_TD);
  std::regex def(R"(def\s+Plait_\w+\s*:\s*Plait_\w+\s*<\s*\"([a-z0-9_]+)\")");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), def); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

TEST(KernelCoverage, EveryDialectOpHasAKernel) {
  std::set<std::string> ops = dialectMnemonics();
  EXPECT_GT(ops.size(), 60u) << "the op list looks truncated";
  for (const std::string &op : ops) {
    if (op == "param" || op == "constant") // filled from plan data, not kernels
      continue;
    EXPECT_NE(findKernel(op), nullptr) << "no CPU kernel for plait." << op;
  }
}

TEST(KernelCoverage, ParamAndConstantAreNotKernels) {
  EXPECT_EQ(findKernel("param"), nullptr);
  EXPECT_EQ(findKernel("constant"), nullptr);
}

} // namespace
} // namespace plait::rt::test
