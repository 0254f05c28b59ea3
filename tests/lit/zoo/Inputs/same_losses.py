"""Exits 1 unless two plait-run --log-jsonl logs have the same number of steps and per-step
losses within --rtol (relative). Prints the largest relative difference.

  same_losses.py A.jsonl B.jsonl [--rtol 1e-5]
"""
import argparse
import json
import sys


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if '"loss"' in line]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, default=1e-5)
    args = ap.parse_args()
    a, b = losses(args.a), losses(args.b)
    if not a or len(a) != len(b):
        sys.exit("same_losses.py: %d steps in %s, %d in %s" % (len(a), args.a, len(b), args.b))
    worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))
    print("%d steps, max rel loss difference %.2e" % (len(a), worst))
    if worst > args.rtol:
        sys.exit("same_losses.py: losses differ by %.3g relative (> %g)" % (worst, args.rtol))


if __name__ == "__main__":
    main()
