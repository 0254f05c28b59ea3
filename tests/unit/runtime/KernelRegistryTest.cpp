// Attribute accessors and the kernel registry.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "runtime/Kernel.h"

namespace plait::rt {
namespace {

TEST(AttrsTest, ReadsEachKindWithDefaults) {
  Attrs attrs;
  attrs.set("axis", {{-1}, {}, ""});
  attrs.set("perm", {{1, 0, 2}, {}, ""});
  attrs.set("eps", {{}, {1e-5}, ""});
  attrs.set("mode", {{}, {}, "tanh"});
  attrs.set("flag", {{1}, {}, ""});
  EXPECT_TRUE(attrs.has("axis"));
  EXPECT_FALSE(attrs.has("missing"));
  EXPECT_EQ(attrs.getInt("axis", 0), -1);
  EXPECT_EQ(attrs.getInt("missing", 42), 42);
  EXPECT_EQ(attrs.getInts("perm"), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_TRUE(attrs.getInts("missing").empty());
  EXPECT_DOUBLE_EQ(attrs.getFloat("eps", 0), 1e-5);
  EXPECT_DOUBLE_EQ(attrs.getFloat("axis", 0), -1.0); // an int read as float
  EXPECT_EQ(attrs.getInt("eps", 7), 0);               // a float read as int truncates
  EXPECT_DOUBLE_EQ(attrs.getFloat("missing", 0.5), 0.5);
  EXPECT_EQ(attrs.getStr("mode", "none"), "tanh");
  EXPECT_EQ(attrs.getStr("missing", "none"), "none");
  EXPECT_EQ(attrs.getStr("axis", "none"), "none"); // numbers are not strings
  EXPECT_TRUE(attrs.getBool("flag", false));
  EXPECT_FALSE(attrs.getBool("missing", false));
}

// A plan's floats are anyone's: one outside int64's range or NaN, read as an integer, must not
// be undefined behaviour (the plan fuzzer's sanitizers stop on it).
TEST(AttrsTest, FloatsReadAsIntsSaturate) {
  Attrs attrs;
  attrs.set("big", {{}, {1e300}, ""});
  attrs.set("small", {{}, {-1e300}, ""});
  attrs.set("inf", {{}, {-INFINITY}, ""});
  attrs.set("nan", {{}, {NAN}, ""});
  attrs.set("edge", {{}, {-0x1p63}, ""});
  attrs.set("neg", {{}, {-2.75}, ""});
  EXPECT_EQ(attrs.getInt("big", 0), INT64_MAX);
  EXPECT_EQ(attrs.getInt("small", 0), INT64_MIN);
  EXPECT_EQ(attrs.getInt("inf", 0), INT64_MIN);
  EXPECT_EQ(attrs.getInt("nan", 5), 5);
  EXPECT_EQ(attrs.getInt("edge", 0), INT64_MIN);
  EXPECT_EQ(attrs.getInt("neg", 0), -2);
  EXPECT_FALSE(attrs.getBool("nan", false));
}

TEST(KernelRegistryTest, FindsRegisteredKernels) {
  plait::testing::registerTestKernels();
  EXPECT_NE(findKernel("test_add_f32"), nullptr);
  EXPECT_EQ(findKernel("no_such_kernel"), nullptr);
  std::vector<std::string> names = kernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "test_scale_f32"), names.end());
}

} // namespace
} // namespace plait::rt
