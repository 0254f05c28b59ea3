"""Writes spectral.test's inputs, or checks plait's DFT and STFT against numpy.fft.

  check_spectral.py inputs DIR        writes DIR/{r,z,sig,win}.npy and DIR/data/x.npy
  check_spectral.py check DIR OUT     compares OUT/{padded,half,inv,spec}.npy with numpy.fft
  check_spectral.py mel DIR OUT       compares OUT/m.npy with ONNX's reference algorithm for
                                      MelWeightMatrix (written out below) and OUT/melspec.npy
                                      with DIR/power.npy @ m
  check_spectral.py grad DIR WEIGHTS  compares one SGD step (lr 0.1) of spectral_train.onnx's
                                      w (the change, to 1e-4 of its largest entry) with numpy's
                                      gradient of mean(|rfft(x w)|^2 parts)
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "e2e"))

MODE, DIR = sys.argv[1], sys.argv[2]
if MODE == "inputs":
    rng = np.random.default_rng(9)
    np.save(f"{DIR}/r.npy", rng.standard_normal((2, 10, 3, 1)).astype(np.float32))
    np.save(f"{DIR}/z.npy", rng.standard_normal((3, 7, 2)))
    np.save(f"{DIR}/sig.npy", rng.standard_normal((2, 20, 1)).astype(np.float32))
    np.save(f"{DIR}/win.npy", np.hanning(8).astype(np.float32))
    pathlib.Path(f"{DIR}/data").mkdir(exist_ok=True)
    np.save(f"{DIR}/data/x.npy", rng.standard_normal((4, 16)).astype(np.float32))
    np.save(f"{DIR}/power.npy", rng.random((3, 257)).astype(np.float32))
    sys.exit(0)


def stacked(c):
    return np.stack([c.real, c.imag], -1)


def report(name, got, want, rtol):
    err = np.abs(got - want).max() / np.abs(want).max()
    print(name, "ok" if got.shape == want.shape and err <= rtol else f"MISMATCH {err:.3g}")


if MODE == "check":
    out = sys.argv[3]
    r, z = np.load(f"{DIR}/r.npy")[..., 0].astype(np.float64), np.load(f"{DIR}/z.npy")
    sig, win = np.load(f"{DIR}/sig.npy")[..., 0].astype(np.float64), np.load(f"{DIR}/win.npy")
    report("padded", np.load(f"{out}/padded.npy"), stacked(np.fft.fft(r, 12, axis=1)), 1e-6)
    report("half", np.load(f"{out}/half.npy"), stacked(np.fft.rfft(r, 8, axis=1)), 1e-6)
    report("inv", np.load(f"{out}/inv.npy"), stacked(np.fft.ifft(z[..., 0] + 1j * z[..., 1],
                                                                  axis=1)), 1e-14)
    frames = np.stack([sig[:, f * 3:f * 3 + 8] * win for f in range(5)], 1)
    report("spec", np.load(f"{out}/spec.npy"), stacked(np.fft.fft(frames, axis=2)), 1e-6)
    sys.exit(0)

if MODE == "mel":
    # ONNX's reference: num_mel_bins + 2 edges evenly spaced in mel (float32 scalars), the
    # spacing divided by num_mel_bins + 2, edges floored to spectrogram bins, triangles between.
    mels, dft, rate, low, high = 40, 512, 16000, np.float32(20), np.float32(8000)
    to_mel = lambda f: np.float32(2595) * np.log10(np.float32(1) + f / np.float32(700))
    step = (to_mel(high) - to_mel(low)) / np.float32(mels + 2)
    hertz = 700 * (10 ** ((np.arange(mels + 2) * np.float64(step) + np.float64(to_mel(low)))
                          / 2595) - 1)
    edges = np.floor((dft + 1) * hertz / rate).astype(int)
    want = np.zeros((dft // 2 + 1, mels))
    for i in range(mels):
        left, centre, right = edges[i:i + 3]
        if centre == left:
            want[centre, i] = 1
        for j in range(left, centre + 1) if centre != left else ():
            want[j, i] = (j - left) / (centre - left)
        for j in range(centre, right):
            want[j, i] = (right - j) / (right - centre)
    got = np.load(f"{sys.argv[3]}/m.npy")
    print("mel", "ok" if got.shape == want.shape and np.array_equal(got, want.astype(np.float32))
          else "MISMATCH", f"({int((want > 0).sum())} nonzero)")
    power = np.load(f"{DIR}/power.npy").astype(np.float64)
    report("melspec", np.load(f"{sys.argv[3]}/melspec.npy"), power @ want, 1e-6)
    sys.exit(0)

from train_parity import read_safetensors  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

model = onnx.load(str(pathlib.Path(__file__).parent / "spectral_train.onnx"))
w0 = numpy_helper.to_array(model.graph.initializer[0]).astype(np.float64)
x = np.load(f"{DIR}/data/x.npy").astype(np.float64)
j, k = np.arange(16)[:, None], np.arange(9)[None, :]
cos, sin = np.cos(2 * np.pi * j * k / 16), -np.sin(2 * np.pi * j * k / 16)
h = x @ w0
grad_h = 2 / (4 * 9 * 2) * ((h @ cos) @ cos.T + (h @ sin) @ sin.T)
step = read_safetensors(sys.argv[3])["w"].astype(np.float64) - w0  # -0.1 * plait's gradient
report("sgd step", step, -0.1 * (x.T @ grad_h), 1e-4)
