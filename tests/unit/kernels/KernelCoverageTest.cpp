// Every op of the plait dialect (ir/PlaitOps.td) except the plan-data sources has a kernel.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

/// Mnemonics of `def X : Plait_...<"mnemonic"` in the ODS file.
std::set<std::string> dialectMnemonics() {
  std::ifstream file(PLAIT_OPS_TD);
  EXPECT_TRUE(file.good()) << "cannot read " << PLAIT_OPS_TD;
  std::stringstream text;
  text << file.rdbuf();
  std::string s = text.str();
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
