// .npy reading and writing, on files written here and on hand-made headers as numpy writes them.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "PlanFixtures.h"
#include "runtime/io/Npy.h"
#include "runtime/io/TensorFile.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;
using rt::DType;

// A version 1.0 .npy file with `dict` as its header and `data` after it.
std::string npyBytes(const std::string &dict, const std::string &data, int major = 1) {
  std::string header = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  size_t len = header.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floatData(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
}

std::string parseError(const std::string &bytes) {
  rt::HostTensor t;
  rt::Status s = rt::parseNpy(bytes, "in.npy", t);
  return s.ok() ? "" : s.message();
}

TEST(NpyTest, ParsesNumpyHeaders) {
  rt::HostTensor t;
  std::string data = floatData({1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(rt::parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                    data),
                           "in.npy", t)
                  .ok());
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.view().as<float>()[5], 6.0f);

  ASSERT_TRUE(rt::parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                                    data, /*major=*/2),
                           "in.npy", t)
                  .ok());
  EXPECT_EQ(t.shape, std::vector<int64_t>{6});

  // Scalar, key order changed, double quotes, Python 2 long suffix, no trailing comma.
  ASSERT_TRUE(rt::parseNpy(npyBytes("{\"shape\": (), \"fortran_order\": False, \"descr\": \"<i8\"}",
                                    std::string("\x07\0\0\0\0\0\0\0", 8)),
                           "in.npy", t)
                  .ok());
  EXPECT_EQ(t.dtype, DType::I64);
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(*t.view().as<int64_t>(), 7);
  ASSERT_TRUE(
      rt::parseNpy(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3L,), }",
                            std::string("\x01\x00\x02", 3)),
                   "in.npy", t)
          .ok());
  EXPECT_EQ(t.dtype, DType::I1);
  EXPECT_EQ(t.bytes, (std::vector<uint8_t>{1, 0, 1})) << "bools are normalised to 0/1";
  ASSERT_TRUE(rt::parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }",
                                    ""),
                           "in.npy", t)
                  .ok());
  EXPECT_EQ(t.shape, (std::vector<int64_t>{0, 4}));
}

TEST(NpyTest, WritesAndReadsBackEveryDtype) {
  std::string dir = freshTempDir("npy");
  struct Case {
    DType dtype;
    std::vector<int64_t> shape;
  };
  for (const Case &c : {Case{DType::F32, {2, 3}}, Case{DType::F64, {4}}, Case{DType::F16, {3, 1}},
                        Case{DType::I64, {}}, Case{DType::I32, {2, 2, 2}},
                        Case{DType::I1, {5}}, Case{DType::F32, {0}}, Case{DType::I8, {3}},
                        Case{DType::U8, {2, 2}}, Case{DType::I16, {3}}, Case{DType::U16, {1, 2}},
                        Case{DType::U32, {2}}, Case{DType::U64, {3}}}) {
    rt::HostTensor in;
    in.dtype = c.dtype;
    in.shape = c.shape;
    in.bytes.resize(in.view().bytes());
    for (size_t i = 0; i < in.bytes.size(); ++i)
      in.bytes[i] = c.dtype == DType::I1 ? i % 2 : static_cast<uint8_t>(i * 7 + 1);
    std::string path = dir + "/" + rt::dtypeName(c.dtype) + ".npy";
    rt::Status s = rt::writeNpy(path, in.view());
    ASSERT_TRUE(s.ok()) << s.message();
    rt::HostTensor out;
    s = rt::readTensorFile(path, out);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(out.dtype, in.dtype);
    EXPECT_EQ(out.shape, in.shape);
    EXPECT_EQ(out.bytes, in.bytes);
    std::string bytes;
    ASSERT_TRUE(rt::readFileBytes(path, bytes).ok());
    size_t headerLen = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    EXPECT_EQ((10 + headerLen) % 64, 0u) << "data is 64-byte aligned, as numpy writes it";
  }
}

TEST(NpyTest, WritesExactNumpyHeader) {
  std::string path = freshTempDir("npy") + "/a.npy";
  std::vector<float> v = {1, 2, 3};
  ASSERT_TRUE(rt::writeNpy(path, {v.data(), DType::F32, {3}}).ok());
  std::string bytes;
  ASSERT_TRUE(rt::readFileBytes(path, bytes).ok());
  // 10 + 58 + 1 bytes do not fit in 64, so numpy pads the header to 128 bytes.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  EXPECT_EQ(bytes.substr(10, 118), dict + std::string(118 - dict.size() - 1, ' ') + "\n");
  EXPECT_EQ(bytes.size(), 128u + 12u);
}

TEST(NpyTest, WriterRejectsBf16) {
  std::vector<uint16_t> v(2);
  rt::Status s = rt::writeNpy(freshTempDir("npy") + "/b.npy", {v.data(), DType::BF16, {2}});
  EXPECT_THAT(s.message(), HasSubstr("numpy has no bf16 dtype; convert the tensor to f32 first"));
}

TEST(NpyTest, WriterReportsUnwritablePath) {
  std::vector<float> v(1);
  rt::Status s = rt::writeNpy("/nonexistent/dir/x.npy", {v.data(), DType::F32, {1}});
  EXPECT_EQ(s.message(), "/nonexistent/dir/x.npy: cannot open for writing");
}

TEST(NpyTest, RejectsBadFiles) {
  std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string data = floatData({1, 2});
  EXPECT_EQ(parseError(""), "in.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError("PK\x03\x04 this is a zip"), "in.npy: not a .npy file (bad magic)");
  EXPECT_EQ(parseError(npyBytes(good, data).substr(0, 40)), "in.npy: truncated .npy header");
  EXPECT_EQ(parseError(npyBytes(good, data, 4)), "in.npy: unsupported .npy format version 4.0");
  EXPECT_EQ(parseError(npyBytes(good, data.substr(0, 6))),
            "in.npy: 6 data bytes, expected 8 for shape [2] of f32 (truncated file)");
  EXPECT_EQ(parseError(npyBytes(good, data + "xx")),
            "in.npy: 10 data bytes, expected 8 for shape [2] of f32");
  EXPECT_THAT(parseError(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data)),
              HasSubstr("in.npy: Fortran-order arrays are not supported"));
  EXPECT_THAT(parseError(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data)),
              HasSubstr("in.npy: big-endian dtype '>f4' is not supported"));
  EXPECT_EQ(parseError(npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data)),
            "in.npy: unsupported dtype '<c8' (supported: <f4 <f8 <f2 <i8 <i4 |b1 |i1 |u1 <i2 <u2 "
            "<u4 <u8)");
  EXPECT_THAT(parseError(npyBytes("{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", data)),
              HasSubstr("numpy has no bfloat16"));
  EXPECT_THAT(parseError(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                  "'shape': (2,), }",
                                  data)),
              HasSubstr("structured numpy dtypes are not supported"));
  EXPECT_THAT(parseError(npyBytes("{'descr': '<f4', 'shape': (2,), }", data)),
              HasSubstr("needs descr, fortran_order and shape"));
  EXPECT_THAT(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
                                  data)),
              HasSubstr("shape is not a tuple of non-negative integers"));
  EXPECT_THAT(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                                  "'extra': 1}",
                                  data)),
              HasSubstr("unexpected key"));
  EXPECT_THAT(parseError(npyBytes("['descr']", data)), HasSubstr("expected a dict"));
  EXPECT_THAT(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                  "(99999999999999999999,), }",
                                  data)),
              HasSubstr("bad .npy header"));
  EXPECT_THAT(parseError(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': "
                                  "(4294967296, 4294967296), }",
                                  data)),
              HasSubstr("is too large"));
  // No elements, but the element count overflows int64 before its zero (found by fuzz.npy:
  // TensorView::numel() multiplied past INT64_MAX).
  EXPECT_THAT(parseError(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': "
                                  "(3037000500, 3037000500, 0), }",
                                  {})),
              HasSubstr("is too large"));
}

// Found by fuzz-npy: a header numpy wrote, with one key misspelt, was echoed with its padding
// and final newline, so the message was two lines.
TEST(NpyTest, BadHeaderMessagesAreOneLine) {
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'oortran_order': False, 'shape': (0, 3), }",
                                "")),
            "in.npy: bad .npy header (unexpected key): {'descr': '<f4', 'oortran_order': False, "
            "'shape': (0, 3), }");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f\n4', 'fortran_order': False, 'shape': (0,), }",
                                "")),
            "in.npy: unsupported dtype '<f\\x0a4' (supported: <f4 <f8 <f2 <i8 <i4 |b1 |i1 |u1 <i2 "
            "<u2 <u4 <u8)");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), \x01}",
                                "")),
            "in.npy: bad .npy header (expected 'key':): {'descr': '<f4', 'fortran_order': "
            "False, 'shape': (0,), \\x01}");
}

TEST(NpyTest, EveryTruncationIsAnError) {
  std::string full = npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                              floatData({1, 2}));
  for (size_t n = 0; n < full.size(); ++n)
    EXPECT_NE(parseError(full.substr(0, n)), "") << n;
}

TEST(NpyTest, RejectsMissingFileAndUnknownExtension) {
  rt::HostTensor t;
  EXPECT_EQ(rt::readTensorFile("/nonexistent/x.npy", t).message(), "/nonexistent/x.npy: no such file");
  EXPECT_EQ(rt::readTensorFile("x.csv", t).message(),
            "x.csv: unknown tensor file type '.csv' (expected .npy or .pb)");
}

// Cross-check with numpy itself when /usr/bin/python3 has it.
TEST(NpyTest, NumpyReadsWhatWeWrite) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no numpy under /usr/bin/python3";
  std::string dir = freshTempDir("npy");
  std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  ASSERT_TRUE(rt::writeNpy(dir + "/ours.npy", {v.data(), DType::F32, {3, 2}}).ok());
  std::string cmd = "/usr/bin/python3 -c \"import numpy as np; a = np.load('" + dir +
                    "/ours.npy'); assert a.shape == (3, 2) and a.dtype == np.float32 and "
                    "a[0, 0] == 1.5 and a[2, 1] == 6; np.save('" + dir +
                    "/theirs.npy', np.arange(6, dtype=np.int32).reshape(2, 3))\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  rt::HostTensor t;
  ASSERT_TRUE(rt::readNpy(dir + "/theirs.npy", t).ok());
  EXPECT_EQ(t.dtype, DType::I32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.view().as<int32_t>()[5], 5);
}

// numpy's descrs of the small integer types ('|u1', '<i2', '<u8', ...), both ways.
TEST(NpyTest, NumpyAgreesOnSmallIntegerTypes) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no numpy under /usr/bin/python3";
  std::string dir = freshTempDir("npy");
  std::string cmd = "/usr/bin/python3 -c \"import numpy as np; [np.save('" + dir +
                    "/' + t + '.npy', np.array([1, 200, 3], t)) for t in ('int8', 'uint8', "
                    "'int16', 'uint16', 'uint32', 'uint64')]\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (auto [name, dtype] : {std::pair{"int8", DType::I8}, {"uint8", DType::U8},
                             {"int16", DType::I16}, {"uint16", DType::U16},
                             {"uint32", DType::U32}, {"uint64", DType::U64}}) {
    rt::HostTensor t;
    ASSERT_TRUE(rt::readNpy(dir + "/" + name + ".npy", t).ok()) << name;
    EXPECT_EQ(t.dtype, dtype) << name;
    EXPECT_EQ(t.bytes.size(), 3 * rt::dtypeSize(dtype)) << name;
    ASSERT_TRUE(rt::writeNpy(dir + "/back_" + name + ".npy", t.view()).ok()) << name;
  }
  // 200 as int8 wraps to -56, as numpy's own array() of it did.
  cmd = "/usr/bin/python3 -c \"import numpy as np; [np.testing.assert_array_equal(np.load('" +
        dir + "/back_' + t + '.npy'), np.load('" + dir + "/' + t + '.npy'), strict=True) "
        "for t in ('int8', 'uint8', 'int16', 'uint16', 'uint32', 'uint64')]\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

} // namespace
} // namespace plait::testing
