"""Copies a plan with its embedded report broken in place (same size, still a valid FlatBuffer,
checksum trailer recomputed): `argv[3] == "not-json"` overwrites the report's first byte,
`"empty"` makes it an empty string."""
import struct
import sys
import zlib

data = bytearray(open(sys.argv[1], "rb").read())
start = data.find(b'{"batch_per_rank"')  # the report, dumped with sorted keys
assert start > 4, "no report found in the plan"
if sys.argv[3] == "not-json":
    data[start] = ord("X")
else:  # a FlatBuffers string: u32 length, bytes, NUL
    struct.pack_into("<I", data, start - 4, 0)
    data[start] = 0
if data[-16:-8] == b"PLAITCRC":  # codegen/schema/PlanChecksum.h: CRC-32 of what precedes it
    struct.pack_into("<I", data, len(data) - 8, zlib.crc32(bytes(data[:-16])))
open(sys.argv[2], "wb").write(bytes(data))
