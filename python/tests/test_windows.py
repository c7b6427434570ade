"""sluice.Loader(window_seconds=W) on a dataset of stored recordings (shardify audio --from kaldi
--segments stored): one W-second window per recording per epoch, whose samples are the
recording's and whose text is that of the segments it holds whole, the same after a resume."""
import os

import numpy as np

import sluice
from conftest import tool, write_wav


def stored_recordings(tmp_path):
    rng = np.random.default_rng(1)
    data = tmp_path / "data"
    data.mkdir()
    recs, spans, segments, texts, wavs = {}, {}, [], [], []
    for r, seconds in enumerate((20, 13)):
        x = 0.3 * np.sin(2 * np.pi * (200 + 40 * r) * np.arange(seconds * 16000) / 16000)
        x = x + 0.02 * rng.standard_normal(x.size)
        path = tmp_path / f"rec{r}.wav"
        write_wav(path, x)
        recs[f"rec{r}"] = (np.clip(x, -1, 1) * 32767).astype("<i2")
        wavs.append(f"rec{r} {path}")
        for k, start in enumerate(np.arange(0.5, seconds - 2, 1.7)):
            utt, text = f"rec{r}-{k:02d}", f"words of {r} {k}"
            segments.append(f"{utt} rec{r} {start:.2f} {start + 1.2:.2f}")
            texts.append(f"{utt} {text}")
            a = round(float(f"{start:.2f}") * 16000)
            spans.setdefault(f"rec{r}", []).append((a, a + round(1.2 * 16000), text))
    (data / "wav.scp").write_text("\n".join(wavs) + "\n")
    (data / "segments").write_text("\n".join(segments) + "\n")
    (data / "text").write_text("\n".join(texts) + "\n")
    out = tmp_path / "ds"
    summary = sluice.shardify("audio", data, out=out, segments="stored", chunk_seconds=2,
                              block_size="64KiB", binary=tool("shardify"), **{"from": "kaldi"})
    assert summary["rejected"] == 0
    return str(out), recs, spans


def test_windows_hold_the_recordings_samples_and_the_text_of_whole_segments(tmp_path):
    dataset, recs, spans = stored_recordings(tmp_path)
    w = 5 * 16000
    loader = sluice.Loader(dataset, seed=7, window_seconds=5, features="raw", max_frames=10 ** 6,
                           threads=2)
    rows = []
    for batch in loader:
        feats = np.from_dlpack(batch.features)
        for i, key in enumerate(batch.keys):
            rec = recs[key.split("/")[0]]
            row = feats[i, :, 0].astype("<i2")
            assert len(row) >= w and int(np.from_dlpack(batch.lengths)[i]) == w
            # Where the window starts: the one place its samples occur in the recording.
            starts = [s for s in np.nonzero(rec[:len(rec) - w + 1] == row[0])[0]
                      if np.array_equal(rec[s:s + w], row[:w])]
            assert len(starts) == 1, key
            start = starts[0]
            want = " ".join(t for a, b, t in spans[key.split("/")[0]]
                            if a >= start and b <= start + w)
            assert batch.texts[i] == want
            rows.append((key, start))
    assert sorted(k for k, _ in rows) == ["rec0/chunk-000000", "rec1/chunk-000000"]
    assert loader.stats()["segment_blocks_read"] > 0
