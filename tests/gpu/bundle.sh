#!/usr/bin/env bash
# Packs what tests/gpu/run.sh needs on a GPU machine that cannot build plait (no MLIR, MPI or
# OpenBLAS packages there, and no package registry to get them from), on a machine that can:
#   BUNDLE/bin/plait-run                  the runtime, built here (CUDA parts for sm_80 and sm_90)
#   BUNDLE/bin/plait-calibrate            measures the GPU (--device cuda) into a cluster spec
#   BUNDLE/tests/plait_{cuda,codegen}_tests  the CUDA unit tests
#   BUNDLE/lib/libplait-{runtime,cuda}.so  the runtime and its CUDA backend (which plait-run
#                                         opens from the runtime's folder, so it is copied even
#                                         though no binary here links it)
#   BUNDLE/lib/                           the Debian shared libraries those link that a CUDA
#                                         machine's image may lack (MPI, OpenBLAS, protobuf, ...);
#                                         not libc/libstdc++, and not CUDA's: the GPU machine's
#                                         own cudart, cuBLASLt, cuDNN and NCCL are used there
#   BUNDLE/work/                          every sample's CPU and CUDA plans, compiled here, its
#                                         data, and the CPU backend's runs of it
#                                         (backend_parity.py --stage prepare)
#   BUNDLE/SOURCE_DIR                     this checkout's path (the unit tests read sample
#                                         inputs and headers through it)
# and BUNDLE.tar.xz of it. On the GPU machine: tests/gpu/run.sh --bundle BUNDLE[.tar.xz].
# This is plait's own promise at work: plans are compiled where the compiler is and run where the
# devices are.
#
#   tests/gpu/bundle.sh [BUNDLE] [BUILD_DIR]   (defaults: gpu-bundle and build beside the sources)
# PLAIT_GPU_STEPS sets the steps prepared (20).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bundle="$(realpath -m "${1:-$root/gpu-bundle}")"
build="$(realpath -m "${2:-$root/build}")"
steps="${PLAIT_GPU_STEPS:-20}"
die() {
  printf 'bundle.sh: %s\n' "$1" >&2
  exit 1
}

[ -x /usr/local/cuda/bin/nvcc ] || die "no CUDA toolkit at /usr/local/cuda (the plans' fatbins need nvcc)"
PLAIT_BUILD_DIR="$build" PLAIT_TARGETS="plait-compile plait-run plait-calibrate plait-zoo plait_cuda_tests plait_codegen_tests" \
  bash "$root/scripts/build.sh" >"$build/bundle-build.log" 2>&1 ||
  {
    tail -40 "$build/bundle-build.log"
    die "build failed (log: $build/bundle-build.log)"
  }

rm -rf "$bundle" "$bundle.tar.xz"
mkdir -p "$bundle/bin" "$bundle/tests" "$bundle/lib"
cp "$build/bin/plait-run" "$build/bin/plait-calibrate" "$bundle/bin/"
cp "$build/tests/unit/cuda/plait_cuda_tests" "$build/tests/unit/codegen/plait_codegen_tests" \
  "$bundle/tests/"
cp "$build/lib/libplait-runtime.so" "$build/lib/libplait-cuda.so" "$bundle/lib/"
printf '%s\n' "$root" >"$bundle/SOURCE_DIR"

# Every library the binaries resolve outside CUDA's folder, except the C and C++ runtimes (the GPU
# machine's are at least as new, and a second copy of them would break its own libraries).
ldd "$bundle/bin/"* "$bundle/tests/"* | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
  sort -u | grep -v -E '^/usr/local/cuda|/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do
    # The binaries find plait's own libraries in the bundle already ($ORIGIN/../lib).
    [ "$lib" -ef "$bundle/lib/$(basename "$lib")" ] || cp -L "$lib" "$bundle/lib/$(basename "$lib")"
  done

/usr/bin/python3 "$root/tests/gpu/backend_parity.py" --build "$build" --steps "$steps" \
  --work "$bundle/work" --stage prepare || die "preparing the plans and CPU runs failed (above)"

tar -C "$(dirname "$bundle")" -cJf "$bundle.tar.xz" "$(basename "$bundle")"
printf 'bundle.sh: %s (%s) and %s (%s)\n' "$bundle" "$(du -sh "$bundle" | cut -f1)" \
  "$bundle.tar.xz" "$(du -h "$bundle.tar.xz" | cut -f1)"
