// The plan file's integrity trailer: after the FlatBuffer, 16 bytes "PLAITCRC", the CRC-32 of
// every byte before the trailer (little-endian u32) and 4 zero bytes. plait-compile appends
// it; plait-run refuses a plan file whose trailer is missing (truncated) or does not match
// (damaged), before reading anything else from it.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace plait::plan {

inline constexpr char kChecksumMagic[8] = {'P', 'L', 'A', 'I', 'T', 'C', 'R', 'C'};
inline constexpr size_t kChecksumTrailerBytes = 16;

inline uint32_t planCrc32(const uint8_t *data, size_t size) {
  return uint32_t(crc32_z(crc32_z(0L, Z_NULL, 0), data, size));
}

/// Appends the trailer to a serialized plan.
inline void appendPlanChecksum(std::vector<uint8_t> &bytes) {
  uint32_t crc = planCrc32(bytes.data(), bytes.size());
  bytes.insert(bytes.end(), kChecksumMagic, kChecksumMagic + 8);
  for (int i = 0; i < 4; ++i)
    bytes.push_back(uint8_t(crc >> (8 * i)));
  bytes.insert(bytes.end(), 4, 0);
}

/// True when `bytes` end with a trailer (whether or not its CRC matches).
inline bool hasPlanChecksum(const std::vector<uint8_t> &bytes) {
  return bytes.size() >= kChecksumTrailerBytes &&
         std::memcmp(bytes.data() + bytes.size() - kChecksumTrailerBytes, kChecksumMagic, 8) == 0;
}

/// The CRC the trailer stores and the one the bytes before it have; call when
/// hasPlanChecksum(bytes).
inline void planChecksums(const std::vector<uint8_t> &bytes, uint32_t &stored,
                          uint32_t &computed) {
  const uint8_t *trailer = bytes.data() + bytes.size() - kChecksumTrailerBytes;
  stored = 0;
  for (int i = 3; i >= 0; --i)
    stored = (stored << 8) | trailer[8 + i];
  computed = planCrc32(bytes.data(), bytes.size() - kChecksumTrailerBytes);
}

} // namespace plait::plan
