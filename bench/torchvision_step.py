#!/usr/bin/env python3
"""CPU training step of torchvision's architectures: plait against PyTorch eager.

Each model is a torchvision classifier (torchvision 0.14: ResNet-18, MobileNetV3-Small,
EfficientNet-B0, ShuffleNetV2 x0.5, DenseNet-121, RegNetY-400MF, ConvNeXt-Tiny, Swin-T, and a
ViT-B/16 cut to 4 layers) with 10 classes and a cross-entropy loss, exported as users export it
(torch.onnx.export, training mode: BatchNorm with the batch's statistics) and compiled with
`plait-compile --train --optimizer sgd --lr 0.01 --momentum 0.9`. Dropout and stochastic depth
are off in both (p = 0), so both run the same arithmetic. Both train the same batches of
RES x RES images: plait with `plait-run --threads T --log-jsonl` (the median logged step_ms
after WARMUP steps), PyTorch on T threads (the median of the timed steps: forward, backward,
optimizer step; on 2 threads the fastest of its OpenMP and OpenBLAS thread splits,
onnx_ops_step.torch_thread_splits). Runs alternate plait and PyTorch, --repeat times; the
table shows the medians of the runs and plait / PyTorch (below 1: plait faster). The models'
training parity is e2e.torchvision.<model> (tests/e2e/torchvision_parity.py).

With --against FLAG (a plait-compile switch, e.g. --no-conv-image-blocks) PyTorch is not
run: plait's plan is timed against a second plan compiled with FLAG added, the two
alternating, and the last column is plait / plait with FLAG.

Run with /usr/bin/python3:  torchvision_step.py BUILD [--threads 1,2] [--steps 10] [--repeat 2]
                                                 [--res 96] [--batch 8] [--only NAME ...]
                                                 [--against FLAG]
"""
import pathlib
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
from onnx_ops_step import (bench_parser, print_table, run_plait, run_torch,  # noqa: E402
                           time_alternating)
from torchvision_parity import Classifier, without_randomness  # noqa: E402

import torchvision  # noqa: E402

CLASSES = 10


def vit_4_layers(res):
    """ViT-B/16's width (768, 12 heads, MLP 3072) at 4 of its 12 layers."""
    return torchvision.models.VisionTransformer(image_size=res, patch_size=16, num_layers=4,
                                                num_heads=12, hidden_dim=768, mlp_dim=3072,
                                                num_classes=CLASSES)


MODELS = {
    "resnet18": lambda r: torchvision.models.resnet18(num_classes=CLASSES),
    "mobilenet_v3_small": lambda r: torchvision.models.mobilenet_v3_small(num_classes=CLASSES),
    "efficientnet_b0": lambda r: torchvision.models.efficientnet_b0(num_classes=CLASSES),
    "shufflenet_v2_x0_5": lambda r: torchvision.models.shufflenet_v2_x0_5(num_classes=CLASSES),
    "densenet121": lambda r: torchvision.models.densenet121(num_classes=CLASSES),
    "regnet_y_400mf": lambda r: torchvision.models.regnet_y_400mf(num_classes=CLASSES),
    "convnext_tiny": lambda r: torchvision.models.convnext_tiny(num_classes=CLASSES),
    "swin_t": lambda r: torchvision.models.swin_t(num_classes=CLASSES),
    "vit_b_16_4_layers": vit_4_layers,
}


def build(name, res):
    torch.manual_seed(0)
    return Classifier(without_randomness(MODELS[name](res)))


def main():
    ap = bench_parser(__doc__, MODELS, steps=10, repeat=2)
    ap.add_argument("--res", type=int, default=96)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--against", metavar="FLAG")
    args = ap.parse_args()
    bindir = args.build / "bin"
    warnings.filterwarnings("ignore", category=UserWarning)  # the exporter's shape notes
    rows = []
    rng = np.random.default_rng(1)
    n = args.steps * args.batch
    data = {"x": rng.standard_normal((n, 3, args.res, args.res)).astype(np.float32),
            "y": rng.integers(0, CLASSES, size=(n,)).astype(np.int64)}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "data").mkdir()
        for k, v in data.items():
            np.save(tmp / "data" / f"{k}.npy", v)
        for name in args.only or list(MODELS):
            work = tmp / name
            work.mkdir()
            model = build(name, args.res)
            example = tuple(torch.from_numpy(data[k][:args.batch]) for k in ("x", "y"))
            torch.onnx.export(model, example, str(work / "m.onnx"), input_names=["x", "y"],
                              output_names=["loss"], opset_version=13,
                              do_constant_folding=False, export_params=True,
                              training=torch.onnx.TrainingMode.TRAINING)
            compile_args = [work / "m.onnx", "--train", "--optimizer", "sgd", "--lr", "0.01",
                            "--momentum", "0.9"]
            subprocess.run([bindir / "plait-compile", "-o", work / "m.plan"] + compile_args,
                           check=True)
            plait = lambda t, plan=work / "m.plan": run_plait(bindir, plan, tmp / "data",
                                                              args.steps, t, work)
            if args.against:
                subprocess.run([bindir / "plait-compile", "-o", work / "against.plan",
                                args.against] + compile_args, check=True)
                peer = lambda t: plait(t, work / "against.plan")
            else:
                peer = lambda t: run_torch(build(name, args.res), data, ("x", "y"), args.steps,
                                           t, batch=args.batch, momentum=0.9)
            time_alternating(name, args.threads, args.repeat, plait, peer, rows, digits=2,
                             peer=f"plait {args.against}" if args.against else "pytorch")
    print(f"\n{args.batch} images of {args.res}x{args.res} a step")
    print_table(rows, digits=2,
                peer=f"plait {args.against}" if args.against else "PyTorch")


if __name__ == "__main__":
    main()
