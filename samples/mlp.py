"""MLP classifier sample: x [B, D] float, y [B] int64 → (cross-entropy loss, logits)."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

BATCH, IN_FEATURES, HIDDEN, CLASSES = 8, 16, 32, 10


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IN_FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x, y):
        h = F.relu(self.fc1(x))
        h = F.gelu(self.fc2(h))  # exact (erf) GELU
        logits = self.head(h)
        return F.cross_entropy(logits, y), logits


def export(out_root):
    common.seed_everything(0)
    model = MLP()
    x = torch.randn(BATCH, IN_FEATURES)
    y = torch.randint(0, CLASSES, (BATCH,), dtype=torch.int64)
    return common.export_sample("mlp", model, (x, y), ["x", "y"], ["loss", "logits"], out_root)


if __name__ == "__main__":
    export(os.path.dirname(os.path.abspath(__file__)))
