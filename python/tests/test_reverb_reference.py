"""sluice's reverberation (sluice.augment.reverberate, the loader's kernel) against
scipy.signal.fftconvolve on room impulse responses from an independent room simulator:
pyroomacoustics' image-source model of shoebox rooms. Both run in the reference venv
(build/venv-tools, run.sh's REFERENCE_PIP), which a subprocess uses, as test_load.py does with
python-soxr; without it the test skips and says why."""
import os
import subprocess

import numpy as np
import pytest

import sluice

REFERENCE_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                                "venv-tools", "bin", "python")

# Rooms (dimensions in m, RT60 in s, source and microphone in m, image-source order cap): a
# living room, a small office and a large hall, at 16 kHz. The cap keeps the simulation under a
# second; the responses still have a propagation delay, a direct path, reflections and a tail.
REFERENCE = """
import sys
import numpy as np
import pyroomacoustics as pra
from scipy.signal import fftconvolve

rooms = (([6.0, 5.0, 3.0], 0.4, [2.0, 3.0, 1.5], [4.0, 2.0, 1.2], 12),
         ([3.5, 3.0, 2.6], 0.2, [1.0, 1.0, 1.6], [2.8, 2.2, 1.1], 20),
         ([10.0, 7.0, 4.0], 0.9, [2.0, 5.0, 1.7], [8.0, 1.5, 1.5], 8))
x = np.load(sys.argv[1])
LENGTHS = [int(n) for n in sys.argv[3:]]
out = {}
for i, (dims, rt60, src, mic, cap) in enumerate(rooms):
    absorption, order = pra.inverse_sabine(rt60, dims)
    room = pra.ShoeBox(dims, fs=16000, materials=pra.Material(absorption),
                       max_order=min(cap, order))
    room.add_source(src)
    room.add_microphone(mic)
    room.compute_rir()
    h = room.rir[0][0].astype(np.float32)
    out[f"rir{i}"] = h
    # The reference in double precision, on the same float32 values sluice gets, for each of
    # the clip's lengths.
    for n in LENGTHS:
        out[f"full{i}_{n}"] = fftconvolve(x[:n].astype(np.float64), h.astype(np.float64))
np.savez(sys.argv[2], **out)
"""


def reference(tmp_path, x, lengths):
    if not os.access(REFERENCE_PYTHON, os.X_OK):
        pytest.skip(f"{REFERENCE_PYTHON} is missing: ./run.sh test makes the reference venv")
    probe = subprocess.run([REFERENCE_PYTHON, "-c", "import pyroomacoustics, scipy.signal"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"pyroomacoustics or scipy is not installed in {REFERENCE_PYTHON}: "
                    f"{probe.stderr.strip()}")
    src, dst = str(tmp_path / "x.npy"), str(tmp_path / "ref.npz")
    np.save(src, x)
    subprocess.run([REFERENCE_PYTHON, "-c", REFERENCE, src, dst] + [str(n) for n in lengths],
                   check=True, timeout=120)
    ref = np.load(dst)
    return [(ref[f"rir{i}"], {n: ref[f"full{i}_{n}"] for n in lengths}) for i in range(3)]


def speech_like(seconds, seed):
    """Tones that change pitch every 0.2 s under an envelope, plus noise: 16 kHz float32."""
    rng = np.random.default_rng(seed)
    n = int(16000 * seconds)
    t = np.arange(n) / 16000
    f = np.repeat(rng.uniform(100, 400, size=n // 3200 + 1), 3200)[:n]
    x = 0.3 * np.sin(2 * np.pi * np.cumsum(f) / 16000) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    return (x + 0.01 * rng.standard_normal(n)).astype(np.float32)


def test_reverberation_equals_scipy_fftconvolve_on_simulated_rooms(tmp_path):
    # Lengths shorter than a response, not a multiple of any block, and several seconds.
    x = speech_like(3.3, seed=5)
    lengths = (1000, 4321, x.size)
    refs = reference(tmp_path, x, lengths)
    for i, (h, full) in enumerate(refs):
        assert h.size > 3000 and np.abs(h).max() > 0, (i, h.size)
        # The documented alignment (docs/augment.md): the output starts at the response's
        # direct path, its largest |sample|, and keeps the input's length.
        peak = int(np.argmax(np.abs(h)))
        assert peak > 0, "the simulated room has a propagation delay"
        for n in lengths:
            want = full[n][peak:peak + n]
            got = sluice.augment.reverberate(x[:n], h, keep_level=False)
            assert got.shape == (n,)
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < 1e-5, (i, n, err)
            # keep_level: the same signal scaled to the input's energy.
            kept = sluice.augment.reverberate(x[:n], h, keep_level=True)
            scale = np.sqrt(np.sum(x[:n].astype(np.float64) ** 2) / np.sum(want ** 2))
            err = np.linalg.norm(kept - scale * want) / np.linalg.norm(scale * want)
            assert err < 1e-5, (i, n, "keep_level", err)
