"""Compares the --shuffle runs of run/shuffle.test: per-step losses from their logs."""
import json
import pathlib
import sys

d = pathlib.Path(sys.argv[1])


def losses(name):
    return [json.loads(line)["loss"] for line in (d / name).read_text().splitlines()]


plain, shuffled, seed5 = losses("plain.jsonl"), losses("shuffled.jsonl"), losses("seed5.jsonl")
resumed, two = losses("resumed.jsonl"), losses("two.jsonl")
print("shuffled differs from plain:", shuffled != plain)
print("seed 5 differs from seed 0:", seed5 != shuffled)
print("resumed equals uninterrupted bitwise:", resumed == shuffled)
print("2 ranks within 1e-5 of 1:", len(two) == 12 and
      all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(two, shuffled)))
