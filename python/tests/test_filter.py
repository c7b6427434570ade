"""Loader(filter=...) keeps exactly the records the same condition keeps over the NeMo manifest the
dataset was made from, counts each reason in the stats, and refuses an unknown column."""
import json
import os
import wave

import pytest

import sluice
from conftest import SMALL


def manifest_rows(corpus):
    """(key, seconds) per manifest line: the key is the audio_filepath, as shardify keys a line
    without an id; seconds from the WAV itself (16 kHz, stored unresampled)."""
    base = os.path.dirname(corpus)
    rows = []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            with wave.open(os.path.join(base, e["audio_filepath"])) as w:
                rows.append((e["audio_filepath"], w.getnframes() / w.getframerate()))
    return rows


def test_filter_equals_a_python_filter_over_the_manifest(corpus, dataset):
    rows = manifest_rows(corpus)
    limit = sorted(s for _, s in rows)[len(rows) // 2]
    want = {k for k, s in rows if s < limit and k != "clip003.wav"}
    loader = sluice.Loader(dataset, seed=3,
                           filter=f"duration < {limit!r} and not key == 'clip003.wav'", **SMALL)
    got = [k for batch in loader for k in batch.keys]
    assert sorted(got) == sorted(want)
    stats = loader.stats()
    too_long = sum(1 for _, s in rows if not s < limit)
    assert stats["filtered"] == [
        {"reason": f"duration < {limit!r}", "records": too_long},
        {"reason": "not key == 'clip003.wav'", "records": len(rows) - too_long - len(want)}]
    assert stats["filtered_records"] == len(rows) - len(want)


def test_unknown_column_is_refused_naming_it(dataset):
    with pytest.raises(ValueError, match=r"at byte 0: unknown column 'lang' \(the columns: "
                                         r"duration, tokens, tokens_per_second, key\)"):
        sluice.Loader(dataset, seed=0, filter='lang == "en"')
