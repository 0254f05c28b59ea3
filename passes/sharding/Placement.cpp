// Data-parallel placements and their model-state bytes per rank.
#include "passes/sharding/Placement.h"

#include <cctype>

namespace plait {

std::string Placement::str() const {
  switch (kind) {
  case PlacementKind::Ddp: return "ddp";
  case PlacementKind::Zero1: return "zero1";
  case PlacementKind::Zero2: return "zero2";
  case PlacementKind::Zero3: return "zero3";
  case PlacementKind::Fsdp: return "fsdp";
  case PlacementKind::Hsdp: return "hsdp:" + std::to_string(hsdpGroup);
  }
  return "?";
}

int64_t Placement::shardGroupSize(int64_t worldSize) const {
  if (kind == PlacementKind::Ddp)
    return 1;
  return kind == PlacementKind::Hsdp ? hsdpGroup : worldSize;
}

int64_t Placement::replicaGroupSize(int64_t worldSize) const {
  return worldSize / shardGroupSize(worldSize);
}

std::optional<Placement> parsePlacement(std::string_view text, int64_t worldSize,
                                        std::string &error) {
  static const std::pair<std::string_view, PlacementKind> names[] = {
      {"ddp", PlacementKind::Ddp},     {"zero1", PlacementKind::Zero1},
      {"zero2", PlacementKind::Zero2}, {"zero3", PlacementKind::Zero3},
      {"fsdp", PlacementKind::Fsdp}};
  for (auto [name, kind] : names)
    if (text == name)
      return Placement{kind, 0};
  if (text.substr(0, 5) == "hsdp:") {
    std::string_view digits = text.substr(5);
    int64_t g = 0;
    bool ok = !digits.empty() && digits.size() < 10;
    for (char c : digits) {
      ok = ok && std::isdigit(static_cast<unsigned char>(c));
      g = g * 10 + (c - '0');
    }
    if (!ok || g < 1) {
      error = "hsdp:G needs a group size G >= 1, got '" + std::string(text) + "'";
      return std::nullopt;
    }
    if (worldSize % g != 0) {
      error = "hsdp:" + std::to_string(g) + ": the group size must divide the world size " +
              std::to_string(worldSize);
      return std::nullopt;
    }
    return Placement{PlacementKind::Hsdp, g};
  }
  error = "unknown strategy '" + std::string(text) +
          "' (expected ddp, zero1, zero2, zero3, fsdp or hsdp:G)";
  return std::nullopt;
}

std::optional<std::vector<PlacementRule>> parsePlacementRules(std::string_view text,
                                                              int64_t worldSize,
                                                              std::string &error) {
  std::vector<PlacementRule> rules;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t eq = item.rfind('=');
    if (eq == std::string_view::npos || eq == 0) {
      error = "placement rule '" + std::string(item) + "' is not REGEX=STRATEGY";
      return std::nullopt;
    }
    std::string why;
    auto placement = parsePlacement(item.substr(eq + 1), worldSize, why);
    if (!placement) {
      error = "placement rule '" + std::string(item) + "': " + why;
      return std::nullopt;
    }
    rules.push_back({std::string(item.substr(0, eq)), *placement});
  }
  return rules;
}

std::string defaultUnitKey(std::string_view name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    std::string_view part = name.substr(start, dot == std::string_view::npos ? dot : dot - start);
    bool digits = !part.empty();
    for (char c : part)
      digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (digits)
      return std::string(name.substr(0, start + part.size()));
    if (dot == std::string_view::npos)
      break;
    start = dot + 1;
  }
  return std::string(name.substr(0, name.find('.')));
}

int64_t paddedNumel(int64_t numel, int64_t groupSize) {
  return (numel + groupSize - 1) / groupSize * groupSize;
}

ModelStateBytes modelStateBytes(const Placement &placement, int64_t numel,
                                int64_t elementBytes, int64_t statesPerParam,
                                int64_t worldSize) {
  int64_t g = placement.shardGroupSize(worldSize);
  int64_t whole = numel * elementBytes;
  int64_t shard = paddedNumel(numel, g) / g * elementBytes;
  ModelStateBytes out;
  out.params = placement.shardsParams() ? shard : whole;
  out.grads = placement.shardsGrads() ? shard : whole;
  out.optimizer = statesPerParam * (placement.shardsOptimizer() ? shard : whole);
  return out;
}

ModelStateBytes modelStateBytes(const Placement &placement, int64_t numel,
                                int64_t elementBytes, int64_t statesPerParam, int64_t worldSize,
                                Precision precision, int64_t gradBytes) {
  if (precision == Precision::Fp32)
    return modelStateBytes(placement, numel, elementBytes, statesPerParam, worldSize);
  int64_t g = placement.shardGroupSize(worldSize);
  int64_t whole = numel, shard = paddedNumel(numel, g) / g; // elements
  ModelStateBytes out;
  out.params = kHalfBytes * (placement.shardsParams() ? shard : whole);
  out.grads = gradBytes * (placement.shardsGrads() ? shard : whole);
  // The f32 master weights count with the optimizer state, as in ZeRO's K = 12 for Adam.
  out.optimizer = (1 + statesPerParam) * elementBytes *
                  (placement.shardsOptimizer() ? shard : whole);
  return out;
}

} // namespace plait
