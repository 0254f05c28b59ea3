#!/usr/bin/env python3
"""Builds the fuzzers' seed corpus (CTest's fuzz.corpus) from the samples: OUT/<target>/.

  onnx         samples/*/*.onnx, and ONNX's node tests and PyTorch's opset-6 exports where
               libonnx-testdata is installed
  npy          the samples' inputs and expected outputs, and small arrays of every dtype
  plan         plans plait-compile makes from the samples (forward, training, sharded), or
               the .plan files of --plans-from when the build has no compiler
  safetensors  files of every dtype, written here (the format is a JSON header and bytes)
  checkpoint   checkpoint metadata (meta.json) for one rank and for two ranks' shards
  onnx_tensor  the samples' arrays as TensorProtos (.pb), and the node tests' inputs
  cluster      samples/clusters/*.yaml
  mlir         small plait-zoo models of every family, and the lit tests' .mlir cases (each
               `// -----` split), the dialect's valid and invalid forms

Nothing here is committed: the corpus follows the samples and the plan format as they change.
"""
import argparse
import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np

ONNX_NODE_TESTS = Path("/usr/share/libonnx-testdata/data/node")
# PyTorch's opset-6 exports: the seeds that reach plait's lift of older opsets.
ONNX_LEGACY_TESTS = [Path("/usr/share/libonnx-testdata/data/pytorch-converted"),
                     Path("/usr/share/libonnx-testdata/data/pytorch-operator")]


def onnx_seeds(samples, out):
    for model in sorted(samples.glob("*/*.onnx")):
        shutil.copy(model, out / model.name)
    if ONNX_NODE_TESTS.is_dir():
        for model in sorted(ONNX_NODE_TESTS.glob("*/model.onnx")):
            shutil.copy(model, out / f"node_{model.parent.name}.onnx")
    for suite in ONNX_LEGACY_TESTS:
        for model in sorted(suite.glob("*/model.onnx")):
            shutil.copy(model, out / f"{suite.name}_{model.parent.name}.onnx")


def arrays():
    """Small arrays of every dtype plait reads, and the shapes that are edge cases."""
    rng = np.random.default_rng(0)
    yield "f4_2x3", rng.standard_normal((2, 3)).astype("<f4")
    yield "f8_4", rng.standard_normal(4).astype("<f8")
    yield "f2_3x1", rng.standard_normal((3, 1)).astype("<f2")
    yield "i8_5", np.arange(5, dtype="<i8")
    yield "i4_2x2x2", np.arange(8, dtype="<i4").reshape(2, 2, 2)
    yield "b1_4", np.array([True, False, True, True])
    yield "f4_scalar", np.array(1.5, dtype="<f4")
    yield "f4_empty", np.zeros((0, 3), dtype="<f4")


def npy_seeds(samples, out):
    for array in sorted(samples.glob("*/inputs/*.npy")) + sorted(samples.glob("*/expected/*.npy")):
        shutil.copy(array, out / f"{array.parent.parent.name}_{array.parent.name}_{array.name}")
    for name, value in arrays():
        np.save(out / f"{name}.npy", value)
    # Format version 2.0 (4-byte header length), which numpy writes only for huge headers.
    with open(out / "f4_v2.npy", "wb") as f:
        np.lib.format.write_array(f, np.ones((2, 2), dtype="<f4"), version=(2, 0))


SAFETENSORS_DTYPES = {"f4": "F32", "f8": "F64", "f2": "F16", "i8": "I64", "i4": "I32", "b1": "BOOL"}


def write_safetensors(path, tensors, metadata=None):
    header, data, offset = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, value in tensors:
        raw = value.tobytes()
        header[name] = {"dtype": SAFETENSORS_DTYPES[value.dtype.str[1:]],
                        "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def safetensors_seeds(out):
    every = list(arrays())
    write_safetensors(out / "every_dtype.safetensors", every,
                      {"format": "pt", "producer": "plait"})
    write_safetensors(out / "one.safetensors", every[:1])
    write_safetensors(out / "empty.safetensors", [])
    # bfloat16 has no numpy dtype: its bytes are written by hand.
    bf16 = b"\x80\x3f\x00\x40"  # 1.0, 2.0
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    (out / "bf16.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bf16)


def onnx_tensor_seeds(samples, out):
    from onnx import numpy_helper

    for array in sorted(samples.glob("*/inputs/*.npy")):
        tensor = numpy_helper.from_array(np.load(array), array.stem)
        pb = out / f"{array.parent.parent.name}_{array.stem}.pb"
        pb.write_bytes(tensor.SerializeToString())
    for name, value in arrays():
        (out / f"{name}.pb").write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    if ONNX_NODE_TESTS.is_dir():
        for pb in sorted(ONNX_NODE_TESTS.glob("*/test_data_set_0/input_0.pb")):
            if pb.stat().st_size <= 16384:  # large seeds slow every execution
                shutil.copy(pb, out / f"node_{pb.parent.parent.name}.pb")


def checkpoint_seeds(out):
    """meta.json files in plait-run's checkpoint format (runtime/Checkpoint.cpp): one rank with
    whole tensors, and two ranks where a flat unit's shards split a param between files."""
    def meta(world, tensors, files):
        body = {"format": "plait-checkpoint", "version": 1, "step": 3, "world_size": world,
                "global_batch": 8, "samples_seen": 24, "seed": 0, "model": "mlp.onnx",
                "tensors": tensors, "files": files}
        text = json.dumps(body, separators=(",", ":"))
        return json.dumps({"crc32": zlib.crc32(text.encode()), "body": body}, indent=1)

    tensors = {"fc.weight": {"kind": "param", "dtype": "f32", "shape": [4, 3]},
               "fc.bias": {"kind": "param", "dtype": "f32", "shape": [4]},
               "fc.weight.exp_avg": {"kind": "state", "dtype": "f32", "shape": [4, 3]}}
    whole = [{"file": "rank-00000.safetensors", "rank": 0, "bytes": 200, "crc32": 1,
              "entries": [{"key": name, "segments": [
                  {"tensor": name, "start": 0, "count": 12 if "weight" in name else 4,
                   "offset": 0}]} for name in tensors]}]
    (out / "one_rank.json").write_text(meta(1, tensors, whole))
    sharded = []
    for rank in range(2):  # a 16-element unit (weight 12 + bias 4) split 8 / 8
        segments = ([{"tensor": "fc.weight", "start": 0, "count": 8, "offset": 0}] if rank == 0
                    else [{"tensor": "fc.weight", "start": 8, "count": 4, "offset": 0},
                          {"tensor": "fc.bias", "start": 0, "count": 4, "offset": 4}])
        sharded.append({"file": "rank-%05d.safetensors" % rank, "rank": rank, "bytes": 96,
                        "crc32": rank, "entries": [{
                            "key": "fc", "shard": {"unit": "fc", "group_size": 2,
                                                   "index": rank, "padded_numel": 16},
                            "segments": segments}]})
    del tensors["fc.weight.exp_avg"]
    (out / "two_ranks_sharded.json").write_text(meta(2, tensors, sharded))


def plan_seeds(samples, out, plait_compile, plans_from):
    if plans_from:
        for plan in sorted(Path(plans_from).glob("*.plan")):
            shutil.copy(plan, out / plan.name)
        return
    if not plait_compile:
        return
    # The small samples only: a seed is mutated whole, and large ones slow every execution.
    configs = {
        "mlp": [], "cnn": [],
        "mlp-train-sgd": ["--train", "--optimizer", "sgd", "--momentum", "0.9"],
        "cnn-train-adamw": ["--train", "--optimizer", "adamw", "--clip-grad-norm", "1.0"],
        "mlp-fsdp-w2": ["--train", "--optimizer", "adamw", "--world-size", "2",
                        "--strategy", "fsdp"],
        "mlp-ddp-w2-mb2": ["--train", "--optimizer", "sgd", "--world-size", "2",
                           "--strategy", "ddp", "--micro-batches", "2"],
    }
    for name, flags in configs.items():
        sample = name.split("-")[0]
        cmd = [plait_compile, str(samples / sample / f"{sample}.onnx"), "-o",
               str(out / f"{name}.plan"), *flags]
        subprocess.run(cmd, check=True)


def cluster_seeds(samples, out):
    for spec in sorted((samples / "clusters").glob("*.yaml")):
        shutil.copy(spec, out / spec.name)


# Small models, so that a compile per execution stays fast.
ZOO_MODELS = {
    "gpt": ["--layers", "1", "--width", "8", "--heads", "2", "--batch", "2", "--seq", "4",
            "--vocab", "11"],
    "gpt-decomposed": ["--layers", "1", "--width", "8", "--heads", "2", "--batch", "2",
                       "--seq", "4", "--vocab", "11", "--decomposed"],
    "llama": ["--layers", "1", "--width", "8", "--heads", "2", "--ffn", "16", "--batch", "2",
              "--seq", "4", "--vocab", "11"],
    "mlp": ["--layers", "2", "--width", "8", "--batch", "2", "--classes", "3"],
    "cnn": ["--layers", "1", "--width", "4", "--batch", "2", "--image", "8", "--classes", "3"],
    "resnet": ["--layers", "1,1", "--width", "4", "--batch", "2", "--image", "16",
               "--classes", "3", "--batch-norm"],
}


def mlir_seeds(lit, out, plait_zoo):
    if plait_zoo:
        for name, flags in ZOO_MODELS.items():
            family = name.split("-")[0]
            subprocess.run([plait_zoo, "--family", family, *flags, "-o",
                            str(out / f"zoo_{name}.mlir")], check=True)
    if lit:
        for test in sorted(Path(lit).glob("**/*.mlir")):
            for i, case in enumerate(test.read_text().split("// -----")):
                # Without the RUN and CHECK lines; large cases slow every execution.
                body = "\n".join(line for line in case.splitlines()
                                 if not line.lstrip().startswith("// RUN")
                                 and "CHECK" not in line)
                if "func.func" in body and len(body) <= 16384:
                    name = f"lit_{test.parent.name}_{test.stem}_{i}.mlir"
                    (out / name).write_text(body + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plait-compile", help="compile the plan seeds with this")
    parser.add_argument("--plans-from", help="copy the plan seeds from this folder instead")
    parser.add_argument("--plait-zoo", help="write the .mlir seeds' zoo models with this")
    parser.add_argument("--lit", type=Path, help="the lit tests, whose .mlir cases are seeds")
    args = parser.parse_args()

    shutil.rmtree(args.out, ignore_errors=True)
    targets = ("onnx", "npy", "plan", "safetensors", "onnx_tensor", "checkpoint", "cluster",
               "mlir")
    dirs = {name: args.out / name for name in targets}
    for d in dirs.values():
        d.mkdir(parents=True)
    onnx_seeds(args.samples, dirs["onnx"])
    npy_seeds(args.samples, dirs["npy"])
    safetensors_seeds(dirs["safetensors"])
    onnx_tensor_seeds(args.samples, dirs["onnx_tensor"])
    plan_seeds(args.samples, dirs["plan"], args.plait_compile, args.plans_from)
    checkpoint_seeds(dirs["checkpoint"])
    cluster_seeds(args.samples, dirs["cluster"])
    mlir_seeds(args.lit, dirs["mlir"], args.plait_zoo)
    for name, d in dirs.items():
        print(f"{name}: {len(list(d.iterdir()))} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
