#!/usr/bin/env python3
"""Training parity of torchvision's architectures, exported as users export them.

Each model is a torchvision classifier (torchvision 0.14, Debian's python3-torchvision; built
from its constructor, so nothing is downloaded) with a cross-entropy head over 10 classes,
exported with torch.onnx.export in training mode (BatchNorm normalises with the batch's
statistics and updates its running ones), compiled with plait-compile --train and trained by
plait-run for a few SGD steps with momentum; PyTorch trains the same module from the same
weights on the same batches. Dropout and stochastic depth are set to p = 0 (plait draws its own
masks, which are checked against PyTorch's elsewhere, e2e.train.dropout and drop_path).

In f64 (the module and data in double, as scientific users train) the agreement is close to
the rounding of double: per-step losses within 1e-8 relative, final weights within rtol 1e-6 /
atol 1e-8. What stays between the two is ONNX's: a node's float attributes (BatchNorm's and
LayerNorm's epsilon, HardSigmoid's alpha) are stored in f32, so an epsilon of 1e-3 is
0.0010000000475 in the file; with a batch of 4, the last stages' 2x2 feature maps normalise
over 16 values and amplify that from step to step. In f32 (plait-run on 2 threads) the usual
1e-4, on MobileNetV3 and the ViT. ResNet-18 also runs on 2 ranks under zero3 (each rank
normalising its half of the batch, as DistributedDataParallel's ranks do).

Why not ResNet-18 in f32: on this batch one ReLU input of layer1.0 (channel 20) lies within
f32 rounding of 0, so which side of the kink it falls on depends on the last bit. plait's f32
forward and PyTorch's land on different sides, and after one step layer1.0.bn1.bias differs
from the f64 step by 1.8e-2 (relative to its largest entry) in that channel and by at most
3.6e-6 in the other 63; PyTorch's f32 step is within 1.6e-6 there, and its own f32 losses
leave its f64 losses by 5e-4 two steps later. The f64 runs, where both agree to 1e-14 after
one step, are the check of the arithmetic.

Run with /usr/bin/python3 (torch 1.13, torchvision 0.14, onnx 1.12):
  torchvision_parity.py --build BUILD [--model NAME ...] [--steps 4]
"""
import argparse
import copy
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from onnx_op_train_parity import export, train_torch  # noqa: E402
from train_parity import compare_training, read_safetensors  # noqa: E402

import torchvision  # noqa: E402  (after torch: its operators register on import)

LR, MOMENTUM, CLASSES = 0.01, 0.9, 10


def small_vit(res):
    """torchvision's VisionTransformer (class token, learned positions, pre-norm encoder
    blocks of nn.MultiheadAttention and a GELU MLP) at two layers of width 64."""
    return torchvision.models.VisionTransformer(image_size=res, patch_size=16, num_layers=2,
                                                num_heads=4, hidden_dim=64, mlp_dim=128,
                                                num_classes=CLASSES)


# name: (constructor, resolution, dtypes and variants). What each exercises beyond
# convolutions, BatchNorm and pooling:
# - resnet18: residual adds, a strided 1x1 downsample; also on 2 ranks under zero3.
# - mobilenet_v3_small: depthwise convolutions, Hardswish, squeeze-and-excitation with
#   Hardsigmoid, BatchNorm eps 1e-3.
# - efficientnet_b0: SiLU, squeeze-and-excitation gates, stochastic depth (p = 0).
# - shufflenet_v2_x0_5: channel shuffle (reshape, transpose, reshape), chunk.
# - densenet121: 58 concatenations of the growing feature map.
# - regnet_y_400mf: grouped convolutions and squeeze-and-excitation.
# - googlenet: four-branch Inception blocks, ceil-mode max pooling.
# - convnext_tiny: 7x7 depthwise convolutions, LayerNorm over channels (permute, LayerNorm,
#   permute), GELU, layer scale.
# - swin_t: shifted windows (roll as slices and concats), attention masks, the relative
#   position bias gathered from a table by a constant index.
# - vit: patch embedding, class token, nn.MultiheadAttention, GELU MLP.
MODELS = {
    "resnet18": (lambda r: torchvision.models.resnet18(num_classes=CLASSES), 64,
                 ["f64", "f64-zero3"]),
    "mobilenet_v3_small": (lambda r: torchvision.models.mobilenet_v3_small(
        num_classes=CLASSES), 64, ["f64", "f32"]),
    "efficientnet_b0": (lambda r: torchvision.models.efficientnet_b0(num_classes=CLASSES), 64,
                        ["f64"]),
    "shufflenet_v2_x0_5": (lambda r: torchvision.models.shufflenet_v2_x0_5(
        num_classes=CLASSES), 64, ["f64"]),
    "densenet121": (lambda r: torchvision.models.densenet121(num_classes=CLASSES), 64, ["f64"]),
    "regnet_y_400mf": (lambda r: torchvision.models.regnet_y_400mf(num_classes=CLASSES), 64,
                       ["f64"]),
    "googlenet": (lambda r: torchvision.models.googlenet(num_classes=CLASSES, aux_logits=False,
                                                         init_weights=True), 64, ["f64"]),
    "convnext_tiny": (lambda r: torchvision.models.convnext_tiny(num_classes=CLASSES), 64,
                      ["f64"]),
    "swin_t": (lambda r: torchvision.models.swin_t(num_classes=CLASSES), 64, ["f64"]),
    "vit": (small_vit, 64, ["f64", "f32"]),
}

# Attentions the f32 plan must compute by plait.attention (the fused kernel takes f32 and
# bf16; f64 stays decomposed): nn.MultiheadAttention's rank-3 heads, one per layer.
FUSED_ATTENTIONS = {"vit": 2}

# Per dtype: (loss rtol, weight rtol, weight atol).
TOLERANCES = {"f64": (1e-8, 1e-6, 1e-8), "f32": (1e-4, 1e-4, 1e-5)}


class Classifier(nn.Module):
    """A torchvision network and its cross-entropy loss: the exported graph's one output."""
    inputs = "xy"
    training_export = True

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


def without_randomness(net):
    for m in net.modules():
        if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return net


def float_entries(weights):
    """The floating-point entries of a state_dict: swin's relative_position_index, an int64
    buffer that the export makes a constant of the graph, is not a weight plait saves."""
    return {k: v for k, v in weights.items() if v.dtype.kind == "f"}


def run(name, variant, bindir, steps, batch=4):
    make, res, _ = MODELS[name]
    dtype, _, strategy = variant.partition("-")
    world = 2 if strategy else 1
    torch.manual_seed(0)
    model = Classifier(without_randomness(make(res)))
    np_dtype = np.float32
    if dtype == "f64":
        model = model.double()
        np_dtype = np.float64
    rng = np.random.default_rng(7)
    data = {"x": rng.standard_normal((steps * batch, 3, res, res)).astype(np_dtype),
            "y": rng.integers(0, CLASSES, size=(steps * batch,)).astype(np.int64)}
    initial = copy.deepcopy(model)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path, plan = tmp / f"{name}.onnx", tmp / f"{name}.plan"
        # A training-mode export's trace updates the running statistics once: export a copy,
        # so that the reference starts from the file's values (each rank's slice on 2 ranks).
        exported = copy.deepcopy(initial)
        export(exported, data, onnx_path, batch // world)
        (tmp / "data").mkdir()
        for k, v in data.items():
            np.save(tmp / "data" / f"{k}.npy", v)
        compile_cmd = [bindir / "plait-compile", onnx_path, "-o", plan, "--train", "--optimizer",
                       "sgd", "--lr", str(LR), "--momentum", str(MOMENTUM), "--report",
                       tmp / "report.json"]
        if world > 1:
            compile_cmd += ["--world-size", str(world), "--strategy", strategy]
        subprocess.run(compile_cmd, check=True)
        fused = json.loads((tmp / "report.json").read_text())["fusion"]["attention"]
        want = FUSED_ATTENTIONS.get(name, 0) if dtype == "f32" else 0
        if fused["fused"] != want:
            print(f"FAIL {name} ({variant}): {fused['fused']} attentions fused, expected {want} "
                  f"({fused})")
            return False
        log, weights = tmp / "log.jsonl", tmp / "w.safetensors"
        command = [bindir / "plait-run", plan, "--data", tmp / "data", "--steps", str(steps),
                   "--threads", "2" if variant == "f32" else "1", "--log-jsonl", log,
                   "--save-weights", weights]
        if world > 1:
            command = ["timeout", "300", "mpirun", "--oversubscribe", "--allow-run-as-root",
                       "-np", str(world)] + command
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
        got = read_safetensors(weights)
    sgd = lambda p: torch.optim.SGD(p, lr=LR, momentum=MOMENTUM)  # noqa: E731
    ref_losses, ref_weights = train_torch(exported, data, steps, batch=batch, optimizer=sgd,
                                          world=world)
    loss_rtol, rtol, atol = TOLERANCES[dtype]
    return compare_training(f"{name} ({variant})", losses, got, ref_losses,
                            float_entries(ref_weights), loss_rtol=loss_rtol, rtol=rtol,
                            atol=atol)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    bindir = pathlib.Path(args.build) / "bin"
    ok = True
    for name in args.model or sorted(MODELS):
        for variant in MODELS[name][2]:
            ok &= run(name, variant, bindir, args.steps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
