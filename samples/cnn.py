"""Small CNN classifier sample: x [B, 1, 12, 12] float, y [B] int64 → (cross-entropy loss, logits)."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

BATCH, CHANNELS, SIZE, CLASSES = 4, 1, 12, 10


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(CHANNELS, 4, kernel_size=3, padding=1)   # 12x12
        self.pool1 = nn.MaxPool2d(2)                                     # 6x6
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3, padding=1)          # 6x6
        self.pool2 = nn.AvgPool2d(2)                                     # 3x3
        self.fc = nn.Linear(8 * 3 * 3, CLASSES)

    def forward(self, x, y):
        h = self.pool1(F.relu(self.conv1(x)))
        h = self.pool2(F.relu(self.conv2(h)))
        logits = self.fc(torch.flatten(h, 1))
        return F.cross_entropy(logits, y), logits


def export(out_root):
    common.seed_everything(1)
    model = CNN()
    x = torch.randn(BATCH, CHANNELS, SIZE, SIZE)
    y = torch.randint(0, CLASSES, (BATCH,), dtype=torch.int64)
    return common.export_sample("cnn", model, (x, y), ["x", "y"], ["loss", "logits"], out_root)


if __name__ == "__main__":
    export(os.path.dirname(os.path.abspath(__file__)))
