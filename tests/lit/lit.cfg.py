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
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%plait_src", config.plait_src_root))
# REQUIRES: nvcc -- the CUDA toolkit's nvcc compiles plait-compile --device cuda's kernels.
if config.plait_nvcc and os.access(config.plait_nvcc, os.X_OK):
    config.available_features.add("nvcc")
    config.environment["PLAIT_NVCC"] = config.plait_nvcc
