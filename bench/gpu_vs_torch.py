#!/usr/bin/env python3
"""A GPU training step of plait against PyTorch eager on the same GPU, in the same run.

The model is tests/gpu/backend_parity.py's larger model: plait-zoo's GPT (2 blocks of width
1024, 16 heads, MLP 4096, vocabulary 8192, learned positions, untied head, exact GELU, causal
softmax attention written out as matmuls), 8 x 512 tokens a step, AdamW. PyTorch runs the same
model and math in eager mode (fp32 with TF32 off, PyTorch's default for matmuls; bf16-mixed as
torch.autocast(bfloat16) with fp32 master weights); plait runs the plans that
tests/gpu/bundle.sh compiled (backend_parity.py --stage prepare), each step replayed as a CUDA
graph (plait-run's default) and kernel by kernel (--no-cuda-graphs).

  gpu_vs_torch.py --plait-run BIN --work DIR [--steps 10]

DIR holds gpt-large-{fp32,bf16-mixed}-cuda.plan and data-gpt-large/. Step times are medians of
steps 2..N (PyTorch: after 3 warm-up steps). Prints one table; exits 1 if a run failed.
"""
import argparse
import json
import math
import pathlib
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

LAYERS, WIDTH, HEADS, VOCAB, SEQ, BATCH = 2, 1024, 16, 8192, 512, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.fc, self.fc_out = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x, mask):
        b, s, d = x.shape
        hd = d // HEADS
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, s, HEADS, hd).transpose(1, 2)
        k = k.view(b, s, HEADS, hd).permute(0, 2, 3, 1)
        v = v.view(b, s, HEADS, hd).transpose(1, 2)
        scores = (q @ k) * (1.0 / math.sqrt(hd))
        scores = scores.masked_fill(mask, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Parameter(torch.randn(SEQ, WIDTH) * 0.01)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, idx, targets, mask):
        x = self.wte(idx) + self.wpe
        for b in self.blocks:
            x = b(x, mask)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


def torch_step_ms(data, precision, steps):
    torch.manual_seed(0)
    model = Gpt().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    mask = torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool, device="cuda"), diagonal=1)
    idx = torch.from_numpy(data["idx"]).cuda()
    targets = torch.from_numpy(data["targets"]).cuda()
    times, losses = [], []
    for s in range(steps + 3):
        i = s % (len(idx) // BATCH)
        x, y = idx[i * BATCH:(i + 1) * BATCH], targets[i * BATCH:(i + 1) * BATCH]
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(x, y, mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())  # synchronises, as plait-run reads its loss each step
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times[3:])), losses[0], losses[-1]


def plait_step_ms(run_bin, plan, data, steps, extra, log):
    p = subprocess.run([str(run_bin), str(plan), "--data", str(data), "--steps", str(steps),
                        "--log-jsonl", str(log), *extra], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        print("FAILED: %s %s\n%s" % (plan.name, " ".join(extra), p.stdout + p.stderr))
        return None
    records = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
    return float(np.median([r["step_ms"] for r in records[1:]])), records[0]["loss"], \
        records[-1]["loss"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plait-run", required=True, type=pathlib.Path)
    ap.add_argument("--work", required=True, type=pathlib.Path)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    data_dir = args.work / "data-gpt-large"
    data = {k: np.load(data_dir / (k + ".npy")) for k in ("idx", "targets")}
    torch.backends.cuda.matmul.allow_tf32 = False
    print("GPU: %s; PyTorch %s; model: GPT %dx%d, %d heads, vocab %d, %d x %d tokens a step, "
          "AdamW" % (torch.cuda.get_device_name(), torch.__version__, LAYERS, WIDTH, HEADS,
                     VOCAB, BATCH, SEQ))
    print("%-11s %-24s %10s %12s %10s %10s %14s" % ("precision", "runner", "step ms",
                                                    "tokens/s", "loss 1", "loss N",
                                                    "speed vs torch"))
    failed = False
    for precision in ("fp32", "bf16-mixed"):
        ms, first, last = torch_step_ms(data, precision, args.steps)
        rows = [("PyTorch eager", ms, first, last)]
        plan = args.work / ("gpt-large-%s-cuda.plan" % precision)
        for name, extra in (("plait (CUDA graph)", []),
                            ("plait (kernel by kernel)", ["--no-cuda-graphs"])):
            got = plait_step_ms(args.plait_run, plan, data_dir, args.steps, extra,
                                args.work / ("vs-torch-%s-%d.jsonl" % (precision, len(extra))))
            if got is None:
                failed = True
                continue
            rows.append((name,) + got)
        for name, step, first, last in rows:
            print("%-11s %-24s %10.3f %12.0f %10.4f %10.4f %13.2fx" % (
                precision, name, step, BATCH * SEQ / step * 1e3, first, last, ms / step))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
