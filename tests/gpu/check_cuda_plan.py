#!/usr/bin/env python3
"""Checks a plan compiled with plait-compile --device cuda --dump-dir DIR --report REPORT.

Every fused kernel (the report's fusion.elementwise.kernels) must be a __global__ kernel in
DIR/kernels.cu, and the fatbin in the plan must hold, for every architecture the report names
(sm_80, sm_90), an ELF image (cubin) that defines each of those kernels, plus the last
architecture's PTX. The fatbin is parsed here (the toolkit has no cuobjdump): a 16-byte header
(magic 0xBA55ED50, version, header size, payload size) and entries of (kind: 1 PTX, 2 ELF;
header size; padded payload size; ...; sm version at byte 28); ELF images are uncompressed.
Prints one line per plan; exits 1 with the reason on the first mismatch.
"""
import json
import os
import re
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
EM_CUDA = 190


def fail(message):
    print(f"check_cuda_plan: {message}", file=sys.stderr)
    sys.exit(1)


def fatbin_entries(data, size):
    """(kind, sm, payload bytes) for each entry of the fatbin at the start of `data`."""
    magic, _, header, payload = struct.unpack_from("<IHHQ", data, 0)
    if magic != FATBIN_MAGIC or header + payload != size:
        fail(f"not a fatbin of {size} bytes (magic {magic:#x}, {header} + {payload} bytes)")
    entries, offset = [], header
    while offset < header + payload:
        kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, offset)
        sm = struct.unpack_from("<I", data, offset + 28)[0]
        start = offset + entry_header
        entries.append((kind, sm, data[start:start + padded]))
        offset = start + padded
    return entries


def elf_functions(elf):
    """Names of the functions an ELF64 image (a cubin) defines."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        fail("an ELF entry of the fatbin is not an ELF64 image")
    machine = struct.unpack_from("<H", elf, 0x12)[0]
    if machine != EM_CUDA:
        fail(f"ELF machine {machine}, not EM_CUDA")
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link]
        for k in range(size // entsize):
            name, info, _, shndx = struct.unpack_from("<IBBH", elf, offset + k * entsize)
            if info & 0xF == 2 and shndx != 0:  # a defined STT_FUNC
                start = strtab[4] + name
                names.add(elf[start:elf.index(b"\0", start)].decode())
    return names


def main():
    if len(sys.argv) != 4:
        fail("usage: check_cuda_plan.py PLAN REPORT DUMP_DIR")
    plan_path, report_path, dump_dir = sys.argv[1:]
    report = json.load(open(report_path))
    plan = open(plan_path, "rb").read()
    if report.get("device") != "cuda":
        fail(f"{report_path}: device is {report.get('device')!r}, not 'cuda'")
    # (--no-fusion: the report has no fusion section)
    fused = report.get("fusion", {}).get("elementwise", {}).get("kernels", 0)
    cuda = report["codegen"]["cuda"]
    if "cpu" in report["codegen"]:
        fail(f"{report_path}: a plan for cuda carries generated CPU code")
    if fused == 0:  # nothing to compile: no source, no fatbin
        if cuda["kernels"] or os.path.exists(f"{dump_dir}/kernels.cu") or \
                plan.find(struct.pack("<I", FATBIN_MAGIC)) >= 0:
            fail(f"{plan_path}: no fused kernels, yet generated CUDA code")
        print(f"{plan_path}: no fused kernels, no fatbin")
        return
    source = open(f"{dump_dir}/kernels.cu").read()
    kernels = re.findall(r'extern "C" __global__ void (plait_fused_\d+)\(', source)
    # Identical kernels are generated once: as many kernels as distinct ones, one per fused
    # instruction at most.
    if not (cuda["instructions"] == fused and
            cuda["kernels"] == len(kernels) == len(set(kernels)) and 0 < len(kernels) <= fused):
        fail(f"{report_path}: {fused} fused instructions, {cuda['instructions']} generated for, "
             f"{cuda['kernels']} kernels compiled, {len(kernels)} in kernels.cu")
    start = plan.find(struct.pack("<I", FATBIN_MAGIC))
    if start < 0:
        fail(f"{plan_path}: no fatbin in the plan")
    entries = fatbin_entries(plan[start:start + cuda["fatbin_bytes"]], cuda["fatbin_bytes"])
    # Each fused instruction names its kernel ("cuda_symbol", a FlatBuffers string): every
    # kernel is named by at least one, and the names add up to the instructions.
    rest = plan[:start] + plan[start + cuda["fatbin_bytes"]:]
    uses = {k: rest.count(k.encode() + b"\0") for k in kernels}
    unbound = [k for k, n in uses.items() if n < 1]
    if rest.count(b"cuda_symbol\0") != fused or sum(uses.values()) != fused or unbound:
        fail(f"{plan_path}: {rest.count(b'cuda_symbol' + bytes(1))} cuda_symbol attributes "
             f"naming {sum(uses.values())} times the {len(kernels)} kernels for {fused} fused "
             f"instructions{'; unbound: ' + unbound[0] if unbound else ''}")
    # ...and its elements per thread ("cuda_lanes"), which the launch sizes its grid by.
    if rest.count(b"cuda_lanes\0") != fused:
        fail(f"{plan_path}: {rest.count(b'cuda_lanes' + bytes(1))} cuda_lanes attributes for "
             f"{fused} fused instructions")
    archs = [int(a[3:]) for a in cuda["archs"]]
    wanted = set(kernels)
    for sm in archs:
        images = [payload for kind, s, payload in entries if kind == 2 and s == sm]
        if len(images) != 1:
            fail(f"{plan_path}: {len(images)} cubins for sm_{sm}, expected 1")
        missing = wanted - elf_functions(images[0])
        if missing:
            fail(f"{plan_path}: the sm_{sm} cubin lacks {len(missing)} kernels, e.g. "
                 f"{sorted(missing)[0]}")
    if not any(kind == 1 and sm == archs[-1] for kind, sm, _ in entries):
        fail(f"{plan_path}: no compute_{archs[-1]} PTX in the fatbin")
    print(f"{plan_path}: {len(kernels)} kernels in cubins for "
          f"{', '.join('sm_%d' % a for a in archs)} and compute_{archs[-1]} PTX "
          f"({cuda['fatbin_bytes']} bytes)")


if __name__ == "__main__":
    main()
