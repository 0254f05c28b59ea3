#!/usr/bin/env python3
"""Turns a runtime/cuda/kernels/*.cu file into host C++ for the CUDA emulation (Emulation.h).

    translate.py IN.cu OUT.cpp

Two rewrites, nothing else changes (line numbers are kept, so errors point at the .cu):
  name<T...><<<grid, block[, shared[, stream]]>>>(args)  ->  ::plait_emu::Launch(grid, block,
                                                             shared, stream)(name<T...>, args)
  extern __shared__ T name[];                            ->  T *name =
                                                             ::plait_emu::dynamicShared<T>();
A launch or shared declaration the patterns miss is an error (exit 1), not C++ that fails to
compile later with a worse message.
"""
import re
import sys

LAUNCH = re.compile(r"(\b[A-Za-z_]\w*(?:<[^<>;()]*>)?)<<<(.*?)>>>\((\s*\))?", re.S)
SHARED = re.compile(r"extern\s+__shared__\s+([\w:]+)\s+(\w+)\s*\[\s*\]\s*;")


def translate(text):
    def launch(m):
        kernel, config, empty = m.group(1), m.group(2), m.group(3)
        return f"::plait_emu::Launch({config})({kernel}{')' if empty else ', '}"

    text = LAUNCH.sub(launch, text)
    text = SHARED.sub(lambda m: f"{m.group(1)} *{m.group(2)} = "
                                f"::plait_emu::dynamicShared<{m.group(1)}>();", text)
    return text


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: translate.py IN.cu OUT.cpp")
    source, target = sys.argv[1], sys.argv[2]
    text = translate(open(source).read())
    for leftover in ("<<<", "extern __shared__"):
        if leftover in text:
            line = text[:text.index(leftover)].count("\n") + 1
            print(f"translate.py: {source}:{line}: '{leftover}' not translated", file=sys.stderr)
            sys.exit(1)
    with open(target, "w") as out:
        out.write(f'#line 1 "{source}"\n' + text)


if __name__ == "__main__":
    main()
