# lit configuration for plait: .mlir and .test files under tests/lit.
import os
import lit.formats

config.name = "plait"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.plait_obj_root, "tests", "lit")
config.environment["PATH"] = os.pathsep.join(
    [config.plait_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "/usr/bin:/bin")])
config.substitutions.append(("%python", getattr(config, "plait_python", "/usr/bin/python3")))
config.substitutions.append(("%plait_src", config.plait_src_root))
# REQUIRES: cpu-avx2 -- the CPU runs OpenBLAS's AVX2 (Haswell) kernels or better.
def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
if {"avx2", "fma"} <= _cpu_flags():
    config.available_features.add("cpu-avx2")
# REQUIRES: nvcc -- the CUDA toolkit's nvcc compiles plait-compile --device cuda's kernels.
if config.plait_nvcc and os.access(config.plait_nvcc, os.X_OK):
    config.available_features.add("nvcc")
    config.environment["PLAIT_NVCC"] = config.plait_nvcc
# REQUIRES: cuda-emulation -- plait-run-emulated (tests/cuda_emulation: plait-run with every op
# that has a CUDA kernel running it under the emulation; not in sanitizer builds).
_emulated = os.path.join(config.plait_obj_root, "tests", "cuda_emulation")
if os.access(os.path.join(_emulated, "plait-run-emulated"), os.X_OK):
    config.available_features.add("cuda-emulation")
    config.environment["PATH"] = os.pathsep.join([_emulated, config.environment["PATH"]])
