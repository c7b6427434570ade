"""Python keywords are the command line's names: every loader and feature flag of
sluice-bench epoch is a keyword of sluice.Loader, and no keyword is made up."""
import re
import subprocess

import sluice
from conftest import tool

# sluice-bench epoch's own flags, not loader options. --stop-after/--resume-state are the
# bench's spelling of what Python does with a loop's break and load_state_dict(); --data and
# --mix-records (weighted mixing, docs/loader.md) are not in the Python package yet.
BENCH_ONLY = {"help", "epochs", "first_epoch", "step_ms", "demand", "json", "bare",
              "tokenizer_from", "stop_after", "resume_state", "journal", "data", "mix_records"}


def test_every_loader_flag_of_the_cli_is_a_keyword():
    help_text = subprocess.run([tool("sluice-bench"), "epoch", "--help"], check=True,
                               capture_output=True, text=True).stdout
    flags = {f[2:].replace("-", "_") for f in re.findall(r"--[a-z][a-z0-9-]*", help_text)}
    keywords = {name for name, _, _ in sluice.loader_keywords()}
    assert flags - BENCH_ONLY <= keywords, flags - BENCH_ONLY - keywords
    # Python adds only what the trainer sets without a flag of its own.
    assert keywords - flags == {"shuffle"}


def test_every_keyword_is_accepted(dataset):
    defaults = {"int": 1, "float": 0.0, "bool": True, "bool | None": True, "str": "hamming",
                "list[float]": [1.0], "list[str]": ["ulaw"]}
    for name, kind, _ in sluice.loader_keywords():
        # noise_data / rir_data / babble_data are refused unless their transform is on:
        # test_augment.py
        if name in ("seed", "rank", "world", "noise_data", "rir_data", "babble_data"):
            continue
        value = defaults.get(kind, kind.split("|")[0])
        # packing is for text datasets (the test dataset is audio), the conversation files for
        # conversation datasets (Loader::Open refuses them elsewhere: test_conversations.py); a
        # frame needs a shift; a filter is an expression
        value = {"seq_len": 0, "frame_shift": 10.0, "max_time_ratio": 0.5, "num_mel_bins": 40,
                 "n_fft": 512, "filter": "duration > 0", "band_limit_rates": [8000.0],
                 "clip_min_level": 0.5, "clip_max_level": 0.5, "chat_template": "",
                 "encoder_frames": ""}.get(name, value)
        try:
            sluice.Loader(dataset, seed=1, **{name: value})
        except sluice.InvalidArgumentError as e:
            # Parsed and checked, then refused as an option of another kind of dataset (packing's
            # on this audio dataset, the spectrogram's with fbank features): test_no_silent_traps.
            # balance_ranks is refused by Loader::Open itself, before the keyword scopes: it
            # deals packed rows, and padded batches have none.
            assert (f"{name}={value!r} applies " in str(e)
                    or name == "balance_ranks" and "padded batches (seq_len 0)" in str(e)), str(e)
