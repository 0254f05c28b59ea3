#!/usr/bin/env bash
# The CUDA backend's acceptance run on a GPU machine (issue #7), unattended:
#   1. build with sm_90 into a build directory of its own (scripts/build.sh);
#   2. the CUDA unit tests (tests/unit/cuda) and the generated-kernel launch test;
#   3. every sample (mlp, cnn, gpt) x (fp32, bf16-mixed) trained on the CUDA and CPU backends
#      at world size 1, losses compared (1e-4 fp32, 1e-2 bf16-mixed, relative), and each fused
#      kernel's bandwidth against the device's copy bandwidth (tests/gpu/backend_parity.py);
#      the GPT's 2-rank DDP run on NCCL where there are two GPUs;
#   4. plait-calibrate --device cuda: the GPU's measured rates as a cluster spec, written to
#      $PLAIT_GPU_SPEC (default: gpu-calibrated.yaml in the work or build directory), from which
#      plait-compile --cluster predicts GPU steps (issue #6).
# A failing step does not stop the later ones; everything a failure needs is printed, and the
# script exits 1 if any step failed (at once only if the build fails).
#
#   tests/gpu/run.sh [BUILD_DIR]      (default: build-gpu beside the sources)
#   tests/gpu/run.sh --bundle BUNDLE  (a directory or .tar.xz from tests/gpu/bundle.sh)
# --bundle is for GPU machines that cannot build plait (no Debian packages there): it runs the
# binaries, libraries and plans that bundle.sh packed on a machine that can, with this machine's
# own CUDA libraries (found under /usr/local/cuda, /opt and /usr/lib), and compares against the
# CPU runs made there.
# PLAIT_GPU_SKIP_BUILD=1 reuses BUILD_DIR as it is; PLAIT_GPU_STEPS sets the steps (20; a bundle
# keeps the steps it was prepared for).
# PLAIT_GPU_TEST_TIMEOUT bounds each unit-test binary (300 s), PLAIT_GPU_RUN_TIMEOUT each training
# run (150 s).
# PLAIT_CUDA_GEMM=fallback (passed through to plait-run) runs every GEMM on plait's own simple
# kernel instead of cuBLASLt, to tell a cuBLASLt problem from the rest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bundle=""
if [ "${1:-}" = --bundle ]; then
  [ -n "${2:-}" ] || { echo "run.sh: --bundle needs a directory or .tar.xz" >&2; exit 1; }
  bundle="$(realpath "$2")"
fi
build="${1:-$root/build-gpu}"
steps="${PLAIT_GPU_STEPS:-20}"
test_timeout="${PLAIT_GPU_TEST_TIMEOUT:-300}"
start=$SECONDS
failed=()

section() { printf '\n=== %s (%ds)\n' "$1" "$((SECONDS - start))"; }
die() {
  printf 'run.sh: FAILED: %s\n' "$1" >&2
  exit 1
}
fail() {
  printf 'run.sh: FAILED: %s\n' "$1" >&2
  failed+=("$1")
}
# The Python with numpy (Debian's /usr/bin/python3 here; a GPU image's own python3 elsewhere).
python=${PLAIT_PYTHON:-}
for p in /usr/bin/python3 python3; do
  [ -z "$python" ] && "$p" -c 'import numpy' 2>/dev/null && python=$p
done
[ -n "$python" ] || die "no python3 with numpy"

section "device"
echo "PLAIT_CUDA_GEMM=${PLAIT_CUDA_GEMM:-} (fallback: GEMMs without cuBLASLt)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv ||
  echo "nvidia-smi: not found"
gpus=$(nvidia-smi --list-gpus 2>/dev/null | grep -c '^GPU' || true)
[ "$gpus" -ge 1 ] || die "no GPU visible (nvidia-smi lists none)"
nvcc=${PLAIT_NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | tail -2 || true

if [ -n "$bundle" ]; then
  section "bundle $bundle"
  if [ -f "$bundle" ]; then
    unpacked=$(mktemp -d /tmp/plait-gpu-bundle.XXXXXX) # fresh: no earlier bundle's folder
    tar -C "$unpacked" -xJf "$bundle"
    bundle=$(find "$unpacked" -mindepth 1 -maxdepth 1 -type d | head -1)
  fi
  build="$bundle"
  # This machine's CUDA libraries: the toolkit's folders, and wherever else (a Python
  # environment's nvidia-* wheels, say) the four the runtime links are.
  dirs=()
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && dirs+=("$d")
  done
  while read -r f; do dirs+=("$(dirname "$f")"); done < <(
    find /usr/local /opt /usr/lib -name 'libcudnn.so.9' -o -name 'libnccl.so.2' \
      -o -name 'libcublasLt.so.13' -o -name 'libcudart.so.13' 2>/dev/null | sort -u)
  LD_LIBRARY_PATH="$bundle/lib:$(printf '%s:' "${dirs[@]}")${LD_LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$bundle/bin/plait-run" | grep -E 'cuda|cudnn|nccl|cublas|not found' || true
  # The unit tests read headers and sample inputs through the path they were built in.
  src=$(cat "$bundle/SOURCE_DIR")
  if [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
  fi
  steps=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"])' \
    "$bundle/work/prepared.json")
  cuda_tests="$bundle/tests/plait_cuda_tests" codegen_tests="$bundle/tests/plait_codegen_tests"
  parity=(--build "$bundle" --work "$bundle/work" --stage device)
  spec="${PLAIT_GPU_SPEC:-$bundle/work/gpu-calibrated.yaml}"
else
  section "build (sm_90) into $build"
  if [ "${PLAIT_GPU_SKIP_BUILD:-0}" != 1 ]; then
    # Only what this script runs: the tools and the CUDA test binaries (not the whole suite).
    PLAIT_BUILD_DIR="$build" PLAIT_JOBS="${PLAIT_JOBS:-$(nproc)}" \
      PLAIT_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90" \
      PLAIT_TARGETS="plait-compile plait-run plait-calibrate plait-zoo plait_cuda_tests plait_codegen_tests" \
      bash "$root/scripts/build.sh" >"$build.log" 2>&1 ||
      {
        tail -60 "$build.log"
        die "build (log: $build.log)"
      }
  fi
  cuda_tests="$build/tests/unit/cuda/plait_cuda_tests"
  codegen_tests="$build/tests/unit/codegen/plait_codegen_tests"
  parity=(--build "$build" --work "$build/gpu-parity")
  spec="${PLAIT_GPU_SPEC:-$build/gpu-calibrated.yaml}"
fi
devices=$("$build/bin/plait-run" --list-devices) || fail "plait-run --list-devices"
printf '%s\n' "$devices"
grep -q '^cuda:[0-9]' <<<"$devices" || fail "plait-run sees no CUDA device"

section "CUDA unit tests"
# The binaries directly (ctest would want every test binary of the suite built). SamplePlans
# (16 plans compiled and checked, device-independent) already runs on every CPU machine; the
# samples run for real below.
PLAIT_NVCC="$nvcc" timeout "$test_timeout" "$cuda_tests" --gtest_filter='-SamplePlans.*' || fail "tests/unit/cuda"
PLAIT_NVCC="$nvcc" timeout "$test_timeout" "$codegen_tests" --gtest_filter='CudaModule.*:CudaKernelMath.*' ||
  fail "generated kernels (CudaModule)"

section "CUDA backend against the CPU backend ($steps steps)"
"$python" "$root/tests/gpu/backend_parity.py" "${parity[@]}" --steps "$steps" --gpus "$gpus" ||
  fail "backend parity (tables above)"

section "plait-calibrate --device cuda (the GPU's measured rates, as a cluster spec)"
# Its spec is what plait-compile --cluster predicts GPU steps from (bench/README.md); the
# calibration itself is checked by CudaCalibrate.QuickCalibrationOnTheDevice above.
timeout "$test_timeout" "$build/bin/plait-calibrate" --device cuda -o "$spec" ||
  fail "plait-calibrate --device cuda"

section "done"
if ((${#failed[@]})); then
  printf 'run.sh: %d step(s) failed:\n' "${#failed[@]}"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "run.sh: every step passed"
