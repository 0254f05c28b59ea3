// parseCheckpointMetadata on metadata that is well-formed JSON but not what the format says:
// every case is one error naming meta.json and the field, never a crash or a silent wrap.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/Checkpoint.h"

namespace plait::rt {
namespace {

// A valid one-rank checkpoint's metadata: one 2x3 f32 param in one file.
nlohmann::ordered_json validBody() {
  return nlohmann::ordered_json::parse(R"({
    "format": "plait-checkpoint", "version": 1, "step": 3, "world_size": 1,
    "global_batch": 8, "seed": 0, "model": "mlp.onnx",
    "tensors": {"w": {"kind": "param", "dtype": "f32", "shape": [2, 3]}},
    "files": [{"file": "rank-00000.safetensors", "bytes": 128, "crc32": 7,
               "entries": [{"key": "w", "segments": [
                 {"tensor": "w", "start": 0, "count": 6, "offset": 0}]}]}]})");
}

Status parse(const nlohmann::ordered_json &body, CheckpointIndex &index) {
  nlohmann::ordered_json meta = {{"crc32", 0}, {"body", body}};
  std::string bytes = meta.dump();
  return parseCheckpointMetadata(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
                                 "ckpt/step-00000003", index, /*checkCrc=*/false);
}

TEST(CheckpointMetadata, ValidBodyParses) {
  CheckpointIndex index;
  ASSERT_TRUE(parse(validBody(), index).ok());
  EXPECT_EQ(index.info.step, 3);
  ASSERT_EQ(index.tensors.at("w").segments.size(), 1u);
  EXPECT_EQ(index.tensors.at("w").segments[0].count, 6u);
}

// The optimizer updates the saving plan ran, when recorded (older checkpoints have none).
TEST(CheckpointMetadata, OptimizerUpdatesAreRead) {
  nlohmann::ordered_json body = validBody();
  CheckpointIndex index;
  ASSERT_TRUE(parse(body, index).ok());
  EXPECT_TRUE(index.updates.empty());
  body["optimizer_updates"] = {"adamw_update", "sgd_update"};
  ASSERT_TRUE(parse(body, index).ok());
  EXPECT_EQ(index.updates, (std::vector<std::string>{"adamw_update", "sgd_update"}));
}

// Where the data continues and how many samples the run has seen, when recorded; an older
// checkpoint (one global batch throughout) has neither: samples_seen defaults to
// step x global batch and the position to -1 (computed at resume from the data's size).
TEST(CheckpointMetadata, SamplesSeenAndDataPositionAreRead) {
  nlohmann::ordered_json body = validBody();
  CheckpointIndex index;
  ASSERT_TRUE(parse(body, index).ok());
  EXPECT_EQ(index.info.samplesSeen, 24);
  EXPECT_EQ(index.info.dataPosition, -1);
  EXPECT_EQ(index.info.dataEpoch, -1);
  body["samples_seen"] = 40;
  body["data_position"] = 12;
  body["data_epoch"] = 2;
  body["shuffle_seed"] = 5;
  ASSERT_TRUE(parse(body, index).ok());
  EXPECT_EQ(index.info.shuffleSeed, 5);
  EXPECT_EQ(index.info.samplesSeen, 40);
  EXPECT_EQ(index.info.dataPosition, 12);
  EXPECT_EQ(index.info.dataEpoch, 2);
}

// Each case: a field set to a value of the wrong kind or range, and the error's field name.
TEST(CheckpointMetadata, NonIntegerFieldsAreNamed) {
  struct Case {
    const char *pointer, *value, *field;
  } cases[] = {
      {"/step", "3.1e300", "'step' must be an integer"},   // UB as a C++ cast
      {"/step", "2.5", "'step' must be an integer"},
      {"/step", "18446744073709551615", "'step' must be an integer"}, // > INT64_MAX
      {"/world_size", "4294967296", "'world_size' must be an integer"},
      {"/seed", "-1", "'seed' must be an integer"},
      {"/tensors/w/shape/0", "4e11", "'shape' must be an integer"},
      {"/tensors/w/shape", "6", "'shape' must be an array"},
      {"/files/0/crc32", "4294967296", "'crc32' must be an integer"},
      {"/files/0/entries/0/segments/0/count", "6.0", "'count' must be an integer"},
      {"/files/0/entries/0/segments/0/offset", "\"0\"", "'offset' must be an integer"},
      {"/optimizer_updates", "\"adamw_update\"", "'optimizer_updates' must be an array"},
      {"/optimizer_updates", "[\"sgd_update\", 3]", "'optimizer_updates' must be an array"},
      {"/samples_seen", "1.5", "'samples_seen' must be an integer"},
      {"/data_position", "\"12\"", "'data_position' must be an integer"},
      {"/data_position", "-3", "'data_position' must be >= 0"},
      {"/samples_seen", "-8", "'samples_seen' must be >= 0"},
      {"/data_epoch", "-1", "'data_epoch' must be >= 0"},
      {"/shuffle_seed", "-2", "'shuffle_seed' must be >= 0"},
  };
  for (const Case &c : cases) {
    nlohmann::ordered_json body = validBody();
    body[nlohmann::ordered_json::json_pointer(c.pointer)] = nlohmann::ordered_json::parse(c.value);
    CheckpointIndex index;
    Status status = parse(body, index);
    ASSERT_FALSE(status.ok()) << c.pointer << " = " << c.value;
    EXPECT_NE(status.message().find("ckpt/step-00000003/meta.json: malformed checkpoint "
                                    "metadata: "),
              std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find(c.field), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  }
}

} // namespace
} // namespace plait::rt
