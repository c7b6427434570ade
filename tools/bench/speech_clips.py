"""The speech-like test clips of the feature benchmarks: the recipe of sluice-bench features'
clips (tools/bench/bench_features.cc), so that the Python scripts time the same signal."""
import numpy as np


def speech_like(clip, rate, n):
    """Deterministic speech-like noise in [-1, 1]: a voiced harmonic series with a gliding f0 under
    a syllable-rate envelope, plus a little noise."""
    rng = np.random.default_rng(20240601 + clip)
    f0 = 90 + 120 * rng.random()
    syllable = 3 + 2 * rng.random()
    t = np.arange(n) / rate
    phase = np.cumsum(2 * np.pi * f0 * (1 + 0.1 * np.sin(2 * np.pi * 0.5 * t)) / rate)
    env = np.maximum(0.0, np.sin(2 * np.pi * syllable * t))
    voiced = sum(np.sin(h * phase) / h for h in range(1, 9))
    return (0.25 * env * voiced + 0.02 * (rng.random(n) - 0.5)).astype(np.float32)
