"""Fixtures of the sluice pytest suite: a small speech corpus made here (tones and noise as 16 kHz
WAV files, transcripts of a few words), turned into a dataset by sluice.shardify, and the paths of
the command-line tools the tests compare with."""
import json
import os
import shutil
import sysconfig
import wave

import numpy as np
import pytest

import sluice

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def tool(name):
    """A sluice command-line tool: $SLUICE_TOOLS_DIR/name, else the one pip installed beside this
    Python (the wheel's scripts), else build/tools/ of this checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("SLUICE_TOOLS_DIR"), sysconfig.get_path("scripts"),
              os.path.join(here, "..", "..", "build", "tools")):
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    pytest.fail(f"{name}: not found (set SLUICE_TOOLS_DIR)")


def write_wav(path, samples, rate=16000):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def make_corpus(directory, count=80, seed=0):
    """count clips of 0.3 to 1.6 s, each a tone whose pitch follows its words, plus noise: a
    tiny model can learn something from them in a few steps."""
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    manifest = os.path.join(directory, "manifest.jsonl")
    with open(manifest, "w", encoding="utf-8") as m:
        for i in range(count):
            words = list(rng.choice(WORDS, size=int(rng.integers(1, 4))))
            parts = []
            for w in words:
                n = int(16000 * rng.uniform(0.15, 0.5))
                t = np.arange(n) / 16000
                parts.append(0.3 * np.sin(2 * np.pi * (150 + 60 * WORDS.index(w)) * t))
            x = np.concatenate(parts)
            x = x + 0.02 * rng.standard_normal(x.size)
            name = f"clip{i:03d}.wav"
            write_wav(os.path.join(directory, name), x)
            m.write(json.dumps({"audio_filepath": name, "text": " ".join(words)}) + "\n")
    return manifest


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def dataset(corpus, tmp_path_factory):
    """A dataset of small blocks (many batches, several blocks to corrupt), with char ids."""
    out = tmp_path_factory.mktemp("data") / "ds"
    summary = sluice.shardify("audio", manifest=corpus, out=out, tokenizer="char",
                              block_size="64KiB", binary=tool("shardify"))
    assert summary["records"] == 80 and summary["rejected"] == 0
    return str(out)


@pytest.fixture
def dataset_copy(dataset, tmp_path):
    """A copy of the dataset a test may damage."""
    dst = tmp_path / "ds"
    shutil.copytree(dataset, dst)
    return str(dst)


# Options that give the test dataset about a dozen batches an epoch.
SMALL = dict(max_frames=1500, threads=2)
