"""GPT-style decoder sample (nanoGPT layout): idx [B, T] int64, targets [B, T] int64 →
(next-token cross-entropy loss, logits [B, T, V]).

Token + learned position embeddings, 2 pre-LN blocks of causal multi-head self-attention and a
GELU MLP, final LayerNorm, LM head. Exported at opset 14, this yields Shape/Gather/Unsqueeze/
Concat/Reshape chains, Range, Trilu + Where (causal mask), Softmax, Erf, decomposed LayerNorm
(ReduceMean/Sub/Pow/Sqrt/Div) and SoftmaxCrossEntropyLoss. No dropout: the sample is deterministic.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

BATCH, SEQ, VOCAB, D_MODEL, HEADS, LAYERS = 4, 16, 64, 32, 4, 2


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        # nanoGPT keeps the qkv bias. Its key third has an identically zero gradient (softmax
        # ignores a shift shared by a whole row): training-parity tests must not compare it
        # under AdamW, which turns rounding noise into lr-sized steps.
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(D_MODEL, dim=2)
        q = q.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        k = k.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        v = v.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.tril(torch.ones(t, t))
        att = att.masked_fill(causal == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.attn = CausalSelfAttention()
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.fc_out = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.fc_out(F.gelu(self.fc(self.ln2(x))))  # exact (erf) GELU
        return x


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(SEQ, D_MODEL)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        # GPT-2 style init, so activations and the loss are not trivially uniform. LayerNorm
        # affine parameters are perturbed too: the exporter deduplicates identical initializers
        # (all-ones/all-zeros LayerNorm weights would become one tensor plus Identity nodes,
        # i.e. tied parameters), which is not the model we mean to train.
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, mean=0.0, std=0.2 if "wte" in name or "wpe" in name else 0.1)
            elif "ln" in name:
                with torch.no_grad():
                    p.add_(0.1 * torch.randn_like(p))

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return loss, logits


def toy_batch():
    """A learnable toy language: a noisy counting sequence; targets are idx shifted by one."""
    start = torch.randint(0, VOCAB, (BATCH, 1))
    data = (start + torch.arange(SEQ + 1).view(1, SEQ + 1) * 3
            + torch.randint(0, 2, (BATCH, SEQ + 1))) % VOCAB
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def export(out_root):
    common.seed_everything(2)
    model = GPT()
    idx, targets = toy_batch()
    # Exported with dynamic batch/sequence axes, as a user exporting for deployment would, then
    # pinned to the sample's static shapes: the graph keeps the Shape → Gather → Unsqueeze →
    # Concat → Reshape/Range/ConstantOfShape chains the importer must fold.
    return common.export_sample("gpt", model, (idx, targets), ["idx", "targets"],
                                ["loss", "logits"], out_root,
                                dynamic_axes={"idx": {0: "batch", 1: "seq"},
                                              "targets": {0: "batch", 1: "seq"},
                                              "logits": {0: "batch", 1: "seq"}})


if __name__ == "__main__":
    export(os.path.dirname(os.path.abspath(__file__)))
