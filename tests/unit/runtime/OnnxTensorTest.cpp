// ONNX TensorProto (.pb) reading: raw_data and every typed field, and the error paths.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "PlanFixtures.h"
#include "runtime/io/OnnxTensor.h"
#include "runtime/io/TensorFile.h"

namespace plait::testing {
namespace {

using ::testing::HasSubstr;
using onnx::TensorProto;
using rt::DType;

rt::Status parse(const TensorProto &proto, rt::HostTensor &out, std::string *name = nullptr) {
  return rt::parseOnnxTensor(proto.SerializeAsString(), "in.pb", out, name);
}

std::string parseError(const TensorProto &proto) {
  rt::HostTensor t;
  rt::Status s = parse(proto, t);
  return s.ok() ? "" : s.message();
}

TensorProto floatProto() {
  TensorProto p;
  p.set_name("x");
  p.set_data_type(TensorProto::FLOAT);
  p.add_dims(2);
  p.add_dims(2);
  return p;
}

TEST(OnnxTensorTest, ReadsRawData) {
  TensorProto p = floatProto();
  std::vector<uint8_t> bytes = f32Bytes({1, 2, 3, 4});
  p.set_raw_data(bytes.data(), bytes.size());
  rt::HostTensor t;
  std::string name;
  ASSERT_TRUE(parse(p, t, &name).ok());
  EXPECT_EQ(name, "x");
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.bytes, bytes);
}

TEST(OnnxTensorTest, ReadsTypedFields) {
  rt::HostTensor t;
  TensorProto f = floatProto();
  for (float v : {1.f, 2.f, 3.f, 4.f})
    f.add_float_data(v);
  ASSERT_TRUE(parse(f, t).ok());
  EXPECT_EQ(t.bytes, f32Bytes({1, 2, 3, 4}));

  TensorProto d;
  d.set_data_type(TensorProto::DOUBLE);
  d.add_dims(2);
  d.add_double_data(0.25);
  d.add_double_data(-1);
  ASSERT_TRUE(parse(d, t).ok());
  EXPECT_EQ(t.dtype, DType::F64);
  EXPECT_EQ(t.view().as<double>()[1], -1.0);

  TensorProto i64;
  i64.set_data_type(TensorProto::INT64);
  i64.add_int64_data(int64_t{1} << 40); // a scalar: no dims
  ASSERT_TRUE(parse(i64, t).ok());
  EXPECT_EQ(t.dtype, DType::I64);
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(*t.view().as<int64_t>(), int64_t{1} << 40);

  TensorProto i32;
  i32.set_data_type(TensorProto::INT32);
  i32.add_dims(1);
  i32.add_int32_data(-7);
  ASSERT_TRUE(parse(i32, t).ok());
  EXPECT_EQ(*t.view().as<int32_t>(), -7);

  TensorProto b;
  b.set_data_type(TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {1, 0, 5})
    b.add_int32_data(v);
  ASSERT_TRUE(parse(b, t).ok());
  EXPECT_EQ(t.dtype, DType::I1);
  EXPECT_EQ(t.bytes, (std::vector<uint8_t>{1, 0, 1}));

  TensorProto h;
  h.set_data_type(TensorProto::FLOAT16);
  h.add_dims(2);
  h.add_int32_data(rt::floatToF16(1.5f));
  h.add_int32_data(rt::floatToF16(-2.0f));
  ASSERT_TRUE(parse(h, t).ok());
  EXPECT_EQ(t.dtype, DType::F16);
  EXPECT_EQ(rt::f16ToFloat(t.view().as<uint16_t>()[0]), 1.5f);
  EXPECT_EQ(rt::f16ToFloat(t.view().as<uint16_t>()[1]), -2.0f);

  TensorProto bf;
  bf.set_data_type(TensorProto::BFLOAT16);
  bf.add_dims(1);
  bf.add_int32_data(rt::floatToBf16(3.0f));
  ASSERT_TRUE(parse(bf, t).ok());
  EXPECT_EQ(t.dtype, DType::BF16);
  EXPECT_EQ(rt::bf16ToFloat(t.view().as<uint16_t>()[0]), 3.0f);

  // 8- and 16-bit integers travel in int32_data, uint32 and uint64 in uint64_data.
  TensorProto i8;
  i8.set_data_type(TensorProto::INT8);
  i8.add_dims(2);
  i8.add_int32_data(-5);
  i8.add_int32_data(127);
  ASSERT_TRUE(parse(i8, t).ok());
  EXPECT_EQ(t.dtype, DType::I8);
  EXPECT_EQ(t.bytes, (std::vector<uint8_t>{251, 127}));
  TensorProto u16;
  u16.set_data_type(TensorProto::UINT16);
  u16.add_dims(1);
  u16.add_int32_data(65535);
  ASSERT_TRUE(parse(u16, t).ok());
  EXPECT_EQ(t.dtype, DType::U16);
  EXPECT_EQ(t.view().as<uint16_t>()[0], 65535);
  TensorProto u64;
  u64.set_data_type(TensorProto::UINT64);
  u64.add_dims(2);
  u64.add_uint64_data(~uint64_t{0});
  u64.add_uint64_data(3);
  ASSERT_TRUE(parse(u64, t).ok());
  EXPECT_EQ(t.dtype, DType::U64);
  EXPECT_EQ(t.view().as<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(t.view().as<uint64_t>()[1], 3u);
  TensorProto u32;
  u32.set_data_type(TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  ASSERT_TRUE(parse(u32, t).ok());
  EXPECT_EQ(t.dtype, DType::U32);
  EXPECT_EQ(t.view().as<uint32_t>()[0], 4000000000u);
  TensorProto u8 = floatProto();
  u8.set_data_type(TensorProto::UINT8);
  u8.set_raw_data(std::string("\x01\xff\x00\x80", 4));
  ASSERT_TRUE(parse(u8, t).ok());
  EXPECT_EQ(t.dtype, DType::U8);
  EXPECT_EQ(t.bytes, (std::vector<uint8_t>{1, 255, 0, 128}));
}

TEST(OnnxTensorTest, RejectsBadTensors) {
  rt::HostTensor t;
  EXPECT_EQ(rt::parseOnnxTensor("\xff\xff\xff", "in.pb", t).message(),
            "in.pb: not a valid ONNX TensorProto (protobuf parse failed)");
  EXPECT_THAT(rt::parseOnnxTensor("", "in.pb", t).message(),
              HasSubstr("in.pb: unsupported ONNX element type UNDEFINED"));

  TensorProto s;
  s.set_data_type(TensorProto::STRING);
  s.add_string_data("hi");
  EXPECT_THAT(parseError(s), HasSubstr("unsupported ONNX element type STRING"));
  TensorProto weird;
  weird.set_data_type(99);
  EXPECT_THAT(parseError(weird), HasSubstr("unsupported ONNX element type 99"));

  TensorProto raw = floatProto();
  raw.set_raw_data(std::string(15, '\0'));
  EXPECT_EQ(parseError(raw), "in.pb: raw_data has 15 bytes, expected 16 for shape [2, 2] of f32");

  TensorProto typed = floatProto();
  typed.add_float_data(1);
  EXPECT_EQ(parseError(typed), "in.pb: 1 values stored, expected 4 for shape [2, 2] of f32");

  TensorProto neg = floatProto();
  neg.set_dims(1, -2);
  EXPECT_EQ(parseError(neg), "in.pb: negative dimension in shape [2, -2]");

  TensorProto huge = floatProto();
  huge.set_dims(0, int64_t{1} << 40);
  huge.set_dims(1, int64_t{1} << 40);
  EXPECT_THAT(parseError(huge), HasSubstr("is too large"));

  TensorProto external = floatProto();
  external.set_data_location(TensorProto::EXTERNAL);
  auto *entry = external.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  EXPECT_EQ(parseError(external), "in.pb: tensors with external data are not supported");

  TensorProto segment = floatProto();
  segment.mutable_segment()->set_begin(0);
  EXPECT_EQ(parseError(segment), "in.pb: segmented tensors are not supported");
}

TEST(OnnxTensorTest, TruncatedFilesAreErrors) {
  TensorProto p = floatProto();
  p.set_raw_data(std::string(16, '\1'));
  std::string bytes = p.SerializeAsString();
  rt::HostTensor t;
  for (size_t n = 1; n < bytes.size(); ++n)
    EXPECT_FALSE(rt::parseOnnxTensor(bytes.substr(0, n), "in.pb", t).ok()) << n;
}

TEST(OnnxTensorTest, ReadsFromFileByExtension) {
  TensorProto p = floatProto();
  for (float v : {1.f, 2.f, 3.f, 4.f})
    p.add_float_data(v);
  std::string path = freshTempDir("pb") + "/x.pb";
  writeFile(path, p.SerializeAsString());
  rt::HostTensor t;
  ASSERT_TRUE(rt::readTensorFile(path, t).ok());
  EXPECT_EQ(t.bytes, f32Bytes({1, 2, 3, 4}));
  EXPECT_EQ(rt::readTensorFile("/nonexistent/x.pb", t).message(), "/nonexistent/x.pb: no such file");
}

// ONNX's own node test data, when libonnx-testdata is installed.
TEST(OnnxTensorTest, ReadsOnnxNodeTestData) {
  std::string path = "/usr/share/libonnx-testdata/data/node/test_add/test_data_set_0/input_0.pb";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "libonnx-testdata not installed";
  rt::HostTensor t;
  rt::Status s = rt::readOnnxTensor(path, t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 4, 5}));
}

} // namespace
} // namespace plait::testing
