#!/usr/bin/python3
"""Exports tiny PyTorch models to ONNX for the importer's lit tests (/usr/bin/python3, torch 1.13).

Usage: gen_torch_models.py [OUTPUT_DIR]   (default: the directory of this script)
The models follow plait's training convention: the first output is the scalar loss.
tiny_gpt.onnx  - a two-block GPT (opset 14): torch's shape chains, Trilu causal mask, Where,
                 erf GELU, decomposed LayerNorm and SoftmaxCrossEntropyLoss.
tiny_cnn.onnx  - Conv/BatchNorm/ReLU/MaxPool/Flatten/Linear with cross-entropy (opset 13).
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=16, d=8, heads=2, seq=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, seq) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, targets):
        t = ids.size(1)
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x, labels):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return F.cross_entropy(self.fc(torch.flatten(h, 1)), labels)


def main():
    torch.manual_seed(0)
    gpt = TinyGPT().eval()
    ids = torch.randint(0, 16, (2, 4))
    targets = torch.randint(0, 16, (2, 4))
    torch.onnx.export(gpt, (ids, targets), os.path.join(OUT, "tiny_gpt.onnx"), opset_version=14,
                      input_names=["ids", "targets"], output_names=["loss"])
    cnn = TinyCNN().eval()
    x = torch.randn(2, 1, 8, 8)
    labels = torch.randint(0, 10, (2,))
    torch.onnx.export(cnn, (x, labels), os.path.join(OUT, "tiny_cnn.onnx"), opset_version=13,
                      input_names=["x", "labels"], output_names=["loss"])


if __name__ == "__main__":
    main()
