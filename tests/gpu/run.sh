#!/usr/bin/env bash
# The CUDA backend's acceptance run on a GPU machine (issue #7), unattended, fail-fast:
#   1. build with sm_90 into a build directory of its own (scripts/build.sh);
#   2. the CUDA unit tests (tests/unit/cuda) and the generated-kernel launch test;
#   3. every sample (mlp, cnn, gpt) x (fp32, bf16-mixed) trained on the CUDA and CPU backends
#      at world size 1, losses compared (1e-4 fp32, 1e-2 bf16-mixed, relative), and each fused
#      kernel's bandwidth against the device's copy bandwidth (tests/gpu/backend_parity.py);
#      the GPT's 2-rank DDP run on NCCL where there are two GPUs.
# Prints everything a failure needs; exits 1 on any failure.
#
#   tests/gpu/run.sh [BUILD_DIR]      (default: build-gpu beside the sources)
# PLAIT_GPU_SKIP_BUILD=1 reuses BUILD_DIR as it is; PLAIT_GPU_STEPS sets the steps (20).
# PLAIT_CUDA_GEMM=fallback (passed through to plait-run) runs every GEMM on plait's own simple
# kernel instead of cuBLASLt, to tell a cuBLASLt problem from the rest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-gpu}"
steps="${PLAIT_GPU_STEPS:-20}"
start=$SECONDS

section() { printf '\n=== %s (%ds)\n' "$1" "$((SECONDS - start))"; }
die() {
  printf 'run.sh: FAILED: %s\n' "$1" >&2
  exit 1
}

section "device"
echo "PLAIT_CUDA_GEMM=${PLAIT_CUDA_GEMM:-} (fallback: GEMMs without cuBLASLt)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv ||
  echo "nvidia-smi: not found"
gpus=$(nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU' || true)
[ "$gpus" -ge 1 ] || die "no GPU visible (nvidia-smi lists none)"

section "build (sm_90) into $build"
if [ "${PLAIT_GPU_SKIP_BUILD:-0}" != 1 ]; then
  # Only what this script runs: the tools and the CUDA test binaries (not the whole suite).
  PLAIT_BUILD_DIR="$build" PLAIT_JOBS="${PLAIT_JOBS:-$(nproc)}" \
    PLAIT_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90" \
    PLAIT_TARGETS="plait-compile plait-run plait_cuda_tests plait_codegen_tests" \
    bash "$root/scripts/build.sh" >"$build.log" 2>&1 ||
    {
      tail -60 "$build.log"
      die "build (log: $build.log)"
    }
fi
"$build/bin/plait-run" --list-devices
"$build/bin/plait-run" --list-devices | grep -q '^cuda:[0-9]' || die "plait-run sees no CUDA device"

section "CUDA unit tests"
# The binaries directly (ctest would want every test binary of the suite built). SamplePlans
# (16 plans compiled and checked, device-independent) already runs on every CPU machine; the
# samples run for real below.
PLAIT_NVCC=/usr/local/cuda/bin/nvcc timeout 300 "$build/tests/unit/cuda/plait_cuda_tests" \
  --gtest_filter='-SamplePlans.*' || die "tests/unit/cuda"
timeout 300 "$build/tests/unit/codegen/plait_codegen_tests" \
  --gtest_filter='CudaModule.*:CudaKernelMath.*' || die "generated kernels (CudaModule)"

section "CUDA backend against the CPU backend ($steps steps)"
/usr/bin/python3 "$root/tests/gpu/backend_parity.py" --build "$build" --steps "$steps" \
  --gpus "$gpus" --work "$build/gpu-parity" || die "backend parity (tables above)"

section "done"
