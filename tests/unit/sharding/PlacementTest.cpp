// Placement vocabulary and the ZeRO paper's model-state bytes per rank, with padding.
#include "passes/sharding/Placement.h"

#include <gtest/gtest.h>

namespace plait {
namespace {

Placement parse(const char *text, int64_t world) {
  std::string error;
  auto p = parsePlacement(text, world, error);
  EXPECT_TRUE(p) << error;
  return p.value_or(Placement{});
}

TEST(Placement, ParsesEveryStrategy) {
  EXPECT_EQ(parse("ddp", 4).str(), "ddp");
  EXPECT_EQ(parse("zero1", 4).str(), "zero1");
  EXPECT_EQ(parse("zero2", 4).str(), "zero2");
  EXPECT_EQ(parse("zero3", 4).str(), "zero3");
  EXPECT_EQ(parse("fsdp", 4).str(), "fsdp");
  Placement h = parse("hsdp:2", 8);
  EXPECT_EQ(h.str(), "hsdp:2");
  EXPECT_EQ(h.shardGroupSize(8), 2);
  EXPECT_EQ(h.replicaGroupSize(8), 4);
  EXPECT_EQ(parse("ddp", 8).shardGroupSize(8), 1);
  EXPECT_EQ(parse("zero2", 8).shardGroupSize(8), 8);
}

TEST(Placement, RejectsBadNames) {
  std::string error;
  EXPECT_FALSE(parsePlacement("zero4", 4, error));
  EXPECT_EQ(error, "unknown strategy 'zero4' (expected ddp, zero1, zero2, zero3, fsdp or hsdp:G)");
  EXPECT_FALSE(parsePlacement("hsdp:3", 4, error));
  EXPECT_EQ(error, "hsdp:3: the group size must divide the world size 4");
  EXPECT_FALSE(parsePlacement("hsdp:", 4, error));
  EXPECT_FALSE(parsePlacement("hsdp:0", 4, error));
  EXPECT_FALSE(parsePlacement("hsdp:x2", 4, error));
  EXPECT_EQ(error, "hsdp:G needs a group size G >= 1, got 'hsdp:x2'");
}

TEST(Placement, ParsesRules) {
  std::string error;
  auto rules = parsePlacementRules("wte|wpe=ddp,blocks\\.[0-9]+=hsdp:2", 4, error);
  ASSERT_TRUE(rules) << error;
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].regex, "wte|wpe");
  EXPECT_EQ((*rules)[0].placement.str(), "ddp");
  EXPECT_EQ((*rules)[1].regex, "blocks\\.[0-9]+");
  EXPECT_EQ((*rules)[1].placement.str(), "hsdp:2");
  EXPECT_FALSE(parsePlacementRules("fc1", 4, error));
  EXPECT_EQ(error, "placement rule 'fc1' is not REGEX=STRATEGY");
  EXPECT_FALSE(parsePlacementRules("fc1=zero9", 4, error));
  EXPECT_EQ(error, "placement rule 'fc1=zero9': unknown strategy 'zero9' (expected ddp, zero1, "
                   "zero2, zero3, fsdp or hsdp:G)");
}

TEST(Placement, DefaultUnitsFollowNumberedBlocks) {
  EXPECT_EQ(defaultUnitKey("blocks.3.attn.qkv.weight"), "blocks.3");
  EXPECT_EQ(defaultUnitKey("model.layers.12.mlp.w1"), "model.layers.12");
  EXPECT_EQ(defaultUnitKey("tok_emb.weight"), "tok_emb");
  EXPECT_EQ(defaultUnitKey("bias"), "bias");
  EXPECT_EQ(defaultUnitKey("h.0"), "h.0");
}

// Ψ = 1000 fp32 elements (4000 bytes), AdamW (K = 2 tensors), N = 4: the ZeRO paper's
// table in full precision.
TEST(ModelStateBytes, MatchesTheZeroPaper) {
  const int64_t numel = 1000, e = 4, k = 2, n = 4;
  auto bytes = [&](const char *p) { return modelStateBytes(parse(p, n), numel, e, k, n); };
  ModelStateBytes ddp = bytes("ddp"), z1 = bytes("zero1"), z2 = bytes("zero2"),
                  z3 = bytes("zero3"), fsdp = bytes("fsdp"), h2 = bytes("hsdp:2");
  EXPECT_EQ(ddp.params, 4000);   EXPECT_EQ(ddp.grads, 4000);  EXPECT_EQ(ddp.optimizer, 8000);
  EXPECT_EQ(z1.params, 4000);    EXPECT_EQ(z1.grads, 4000);   EXPECT_EQ(z1.optimizer, 2000);
  EXPECT_EQ(z2.params, 4000);    EXPECT_EQ(z2.grads, 1000);   EXPECT_EQ(z2.optimizer, 2000);
  EXPECT_EQ(z3.params, 1000);    EXPECT_EQ(z3.grads, 1000);   EXPECT_EQ(z3.optimizer, 2000);
  EXPECT_EQ(fsdp.params, z3.params);
  EXPECT_EQ(fsdp.grads, z3.grads);
  EXPECT_EQ(fsdp.optimizer, z3.optimizer);
  EXPECT_EQ(h2.params, 2000);    EXPECT_EQ(h2.grads, 2000);   EXPECT_EQ(h2.optimizer, 4000);
  // Total model state (the paper's (2 + 2 + K)Ψ with 4-byte everything): ddp 16 kB,
  // zero1 4Ψ + 4Ψ + 8Ψ/N, zero2 4Ψ + 12Ψ/N, zero3 16Ψ/N.
  EXPECT_EQ(ddp.params + ddp.grads + ddp.optimizer, 16000);
  EXPECT_EQ(z1.params + z1.grads + z1.optimizer, 4000 + 4000 + 8000 / n);
  EXPECT_EQ(z2.params + z2.grads + z2.optimizer, 4000 + 12000 / n);
  EXPECT_EQ(z3.params + z3.grads + z3.optimizer, 16000 / n);
}

// 1001 elements over 4 ranks: the flat unit is padded to 1004, each shard holds 251.
TEST(ModelStateBytes, PadsUnevenUnits) {
  EXPECT_EQ(paddedNumel(1001, 4), 1004);
  EXPECT_EQ(paddedNumel(1000, 4), 1000);
  EXPECT_EQ(paddedNumel(7, 1), 7);
  ModelStateBytes z3 = modelStateBytes(parse("zero3", 4), 1001, 4, 2, 4);
  EXPECT_EQ(z3.params, 251 * 4);
  EXPECT_EQ(z3.grads, 251 * 4);
  EXPECT_EQ(z3.optimizer, 2 * 251 * 4);
  ModelStateBytes z1 = modelStateBytes(parse("zero1", 4), 1001, 4, 1, 4);
  EXPECT_EQ(z1.params, 1001 * 4); // replicated: no padding
  EXPECT_EQ(z1.grads, 1001 * 4);
  EXPECT_EQ(z1.optimizer, 251 * 4);
  ModelStateBytes h = modelStateBytes(parse("hsdp:2", 4), 1001, 4, 0, 4);
  EXPECT_EQ(h.params, 501 * 4); // 1001 -> 1002 over groups of 2
  EXPECT_EQ(h.optimizer, 0);    // SGD without momentum keeps no state
  // One rank: every placement holds the whole unit.
  ModelStateBytes one = modelStateBytes(parse("fsdp", 1), 1001, 4, 2, 1);
  EXPECT_EQ(one.params, 1001 * 4);
  EXPECT_EQ(one.optimizer, 2 * 1001 * 4);
}

// The paper's worked example (section 5, figure 1): Ψ = 7.5B params, N = 64 GPUs, mixed
// precision with Adam (K = 12): 120 GB per GPU under DDP, 31.4 GB with Pos (zero1), 16.6 GB
// with Pos+g (zero2), 1.88 GB with Pos+g+p (zero3). 7.5e9 divides by 64, so no padding.
TEST(ModelStateBytes, MatchesTheZeroPaperWorkedExampleInMixedPrecision) {
  const int64_t psi = 7'500'000'000, n = 64;
  auto total = [&](const char *p) {
    ModelStateBytes b = modelStateBytes(parse(p, n), psi, 4, 2, n, Precision::Bf16Mixed);
    return b.params + b.grads + b.optimizer;
  };
  EXPECT_EQ(total("ddp"), 120'000'000'000);     // (2 + 2 + 12)Ψ
  EXPECT_EQ(total("zero1"), 31'406'250'000);    // 2Ψ + 2Ψ + 12Ψ/N
  EXPECT_EQ(total("zero2"), 16'640'625'000);    // 2Ψ + 14Ψ/N
  EXPECT_EQ(total("zero3"), 1'875'000'000);     // 16Ψ/N
  EXPECT_EQ(total("fsdp"), total("zero3"));
  // Each part: bf16 params and gradients, f32 master + two Adam states in the optimizer.
  ModelStateBytes z2 = modelStateBytes(parse("zero2", n), psi, 4, 2, n, Precision::Bf16Mixed);
  EXPECT_EQ(z2.params, 2 * psi);
  EXPECT_EQ(z2.grads, 2 * psi / n);
  EXPECT_EQ(z2.optimizer, 12 * psi / n);
  // hsdp:8 shards within groups of 8: 16Ψ/8.
  EXPECT_EQ(total("hsdp:8"), 16 * psi / 8);
}

// The same example in full precision (K = 8 for Adam's two f32 states, 4-byte params and
// gradients): 16Ψ under DDP, 4Ψ + 4Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N.
TEST(ModelStateBytes, MatchesTheZeroPaperWorkedExampleInFullPrecision) {
  const int64_t psi = 7'500'000'000, n = 64;
  auto total = [&](const char *p) {
    ModelStateBytes b = modelStateBytes(parse(p, n), psi, 4, 2, n, Precision::Fp32);
    return b.params + b.grads + b.optimizer;
  };
  EXPECT_EQ(total("ddp"), 16 * psi);
  EXPECT_EQ(total("zero1"), 8 * psi + 8 * psi / n);
  EXPECT_EQ(total("zero2"), 4 * psi + 12 * psi / n);
  EXPECT_EQ(total("zero3"), 16 * psi / n);
}

// Mixed precision pads shards as full precision does; SGD without momentum keeps only the
// f32 master (K = 4).
TEST(ModelStateBytes, MixedPrecisionPadsAndCountsTheMaster) {
  ModelStateBytes z3 = modelStateBytes(parse("zero3", 4), 1001, 4, 2, 4, Precision::Bf16Mixed);
  EXPECT_EQ(z3.params, 251 * 2);
  EXPECT_EQ(z3.grads, 251 * 2);
  EXPECT_EQ(z3.optimizer, 3 * 251 * 4);
  ModelStateBytes sgd = modelStateBytes(parse("ddp", 4), 1001, 4, 0, 4, Precision::Bf16Mixed);
  EXPECT_EQ(sgd.params, 1001 * 2);
  EXPECT_EQ(sgd.optimizer, 1001 * 4);
}

} // namespace
} // namespace plait
