"""Loader(filter=...) keeps exactly the records the same condition keeps over the NeMo manifest the
dataset was made from, counts each reason in the stats, and refuses an unknown column."""
import json
import os
import wave

import pytest

import sluice
from conftest import SMALL, tool


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
    with pytest.raises(ValueError, match=r"at byte 0: unknown column 'gender' \(the columns: "
                                         r"duration, tokens, tokens_per_second, key, "
                                         r"chars_per_second, speaker, language, lang, chars\)"):
        sluice.Loader(dataset, seed=0, filter='gender == "f"')


@pytest.fixture(scope="module")
def tagged(corpus, tmp_path_factory):
    """The corpus with a speaker, a language (as NeMo's "lang", missing on some lines), a gender
    and an SNR per line, shardified keeping gender and snr: (the lines, the dataset)."""
    rows = []
    for i, line in enumerate(open(corpus, encoding="utf-8")):
        e = json.loads(line)
        e["speaker"] = f"spk{i % 4}"
        if i % 5:
            e["lang"] = "en" if i % 3 else "de"
        e["gender"] = "mf"[i % 2]
        if i % 7:
            e["snr"] = round(5 + (i * 37 % 23) / 2, 1)
        rows.append(e)
    directory = tmp_path_factory.mktemp("tagged")
    manifest = directory / "manifest.jsonl"
    with open(manifest, "w", encoding="utf-8") as f:
        for e in rows:
            e = dict(e, audio_filepath=os.path.join(os.path.dirname(corpus), e["audio_filepath"]))
            f.write(json.dumps(e) + "\n")
    out = directory / "ds"
    summary = sluice.shardify("audio", manifest=manifest, out=out, block_size="64KiB",
                              keep_field=["gender", "snr:float"], binary=tool("shardify"))
    assert summary["records"] == len(rows) and summary["rejected"] == 0
    return rows, str(out)


def test_metadata_filter_equals_a_python_filter_over_the_manifest(corpus, tagged):
    rows, ds = tagged
    seconds = dict(manifest_rows(corpus))
    cps = {e["audio_filepath"]: len(e["text"]) / seconds[e["audio_filepath"]] for e in rows}
    limit = sorted(cps.values())[len(rows) // 2]

    def keep(e):
        # A missing value is null: every comparison with it false but !=.
        return (e.get("lang") == "en" and seconds[e["audio_filepath"]] < 1.2
                and e["speaker"] != "spk2" and cps[e["audio_filepath"]] < limit
                and e.get("snr") is not None and e["snr"] >= 8)

    want = {os.path.join(os.path.dirname(corpus), e["audio_filepath"]) for e in rows if keep(e)}
    cond = (f'lang == "en" and duration < 1.2 and speaker != "spk2" and '
            f'chars_per_second < {limit!r} and snr >= 8')
    loader = sluice.Loader(ds, seed=3, filter=cond, **SMALL)
    got = [k for batch in loader for k in batch.keys]
    assert want and len(want) < len(rows)
    assert sorted(got) == sorted(want)
    stats = loader.stats()
    assert stats["filtered_records"] == len(rows) - len(want)
    assert [f["reason"] for f in stats["filtered"]] == [
        'lang == "en"', "duration < 1.2", 'speaker != "spk2"', f"chars_per_second < {limit!r}",
        "snr >= 8"]
    # Counted under the first reason a record fails, as Python's and short-circuits.
    assert stats["filtered"][0]["records"] == sum(1 for e in rows if e.get("lang") != "en")

    # Null: != keeps a record without a language, == and < do not.
    no_lang = sluice.Loader(ds, seed=3, filter='not lang == "en" and lang != "de"', **SMALL)
    assert len([k for b in no_lang for k in b.keys]) == sum(1 for e in rows if "lang" not in e)
    female = sluice.Loader(ds, seed=3, filter='gender == "f"', **SMALL)
    assert len([k for b in female for k in b.keys]) == sum(1 for e in rows if e["gender"] == "f")



def test_a_mixture_whose_metadata_columns_differ_refuses_a_filter(tagged, tmp_path):
    # A filter reads every source's columns by the first's list: sources with other columns
    # (here the tagged dataset's kept gender and snr, which the same manifest shardified without
    # them lacks) would be read as the wrong ones.
    _, ds = tagged
    plain = str(tmp_path / "plain")
    sluice.shardify("audio", manifest=os.path.join(os.path.dirname(ds), "manifest.jsonl"),
                    out=plain, block_size="64KiB", binary=tool("shardify"))
    with pytest.raises(sluice.InvalidArgumentError, match="disagree on their metadata columns"):
        sluice.Loader({ds: 1, plain: 1}, mix_records=10, seed=1, filter="duration > 0", **SMALL)
    # Without a filter nothing reads them, and the mixture opens.
    sluice.Loader({ds: 1, plain: 1}, mix_records=10, seed=1, **SMALL)
