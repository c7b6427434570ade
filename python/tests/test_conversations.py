"""Conversation datasets in Python: sluice.Loader reads a dataset made by `shardify
conversations` with chat_template and encoder_frames as rows of whole conversations within
seq_len, each audio turn's placeholder span as long as `sluice-features encoder-frames` counts
its samples, the loss mask on the assistant's ids and end of turn, every array a zero-copy view."""
import json
import subprocess

import numpy as np
import pytest

import sluice

from conftest import tool, write_wav

PREFIX_USER, PREFIX_ASSISTANT, END, PLACEHOLDER = 900, 902, 901, 999


def test_conversation_rows_hold_whole_conversations_with_their_audio_spans(tmp_path):
    rng = np.random.default_rng(0)
    samples, answers, lines = {}, {}, []
    for i in range(12):
        n = 4000 + 1700 * i
        write_wav(tmp_path / f"a{i}.wav", rng.uniform(-0.3, 0.3, n))
        samples[i] = n
        answers[i] = "answer " + "x" * (i + 1)
        user = {"role": "user", "audio": {"path": f"a{i}.wav"}}
        if i % 2:
            user["text"] = "what is said"
        lines.append(json.dumps({"id": f"c{i}", "turns": [
            user, {"role": "assistant", "text": answers[i]}]}))
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    sluice.shardify("conversations", tmp_path / "chats.jsonl", out=tmp_path / "ds",
                    tokenizer="char", binary=tool("shardify"))
    template = {"roles": {"user": {"prefix": {"ids": [PREFIX_USER]}, "suffix": {"ids": [END]}},
                          "assistant": {"prefix": {"ids": [PREFIX_ASSISTANT]},
                                        "suffix": {"ids": [END]}}},
                "placeholder": {"ids": [PLACEHOLDER]}}
    (tmp_path / "t.json").write_text(json.dumps(template))
    counted = subprocess.run(
        [tool("sluice-features"), "encoder-frames", "--encoder-frames", "fastconformer",
         *map(str, samples.values())], capture_output=True, text=True, check=True).stdout
    frames = dict(tuple(map(int, line.split())) for line in counted.splitlines())

    loader = sluice.Loader(str(tmp_path / "ds"), seq_len=160, batch_size=2, pack_mode="best_fit",
                           split_long=False, too_long="skip", seed=1,
                           chat_template=str(tmp_path / "t.json"), encoder_frames="fastconformer")
    seen = set()
    for batch in loader:
        for name in ("tokens", "positions", "doc_ids", "loss_mask", "cu_seqlens"):
            a = getattr(batch, name)
            assert np.from_dlpack(a).ctypes.data == a.data_ptr, name
        tokens = np.from_dlpack(batch.tokens)
        doc_ids = np.from_dlpack(batch.doc_ids)
        mask = np.from_dlpack(batch.loss_mask)
        positions = np.from_dlpack(batch.positions)
        for row in range(batch.size):
            for d in np.unique(doc_ids[row][doc_ids[row] >= 0]):
                cols = np.nonzero(doc_ids[row] == d)[0]
                assert np.array_equal(cols, np.arange(cols[0], cols[0] + len(cols))), "cut"
                assert np.array_equal(positions[row, cols], np.arange(len(cols)))
                ids = tokens[row, cols]
                # Record d is the JSONL's line d (shardify keeps the input order).
                span = np.nonzero(ids == PLACEHOLDER)[0]
                assert len(span) == frames[samples[d]], f"conversation {d}"
                assert ids[0] == PREFIX_USER and ids[span[0] - 1] == PREFIX_USER
                # Targets with loss: the answer's ids and the assistant's end of turn.
                assert mask[row, cols].sum() == len(answers[d]) + 1, f"conversation {d}"
                assert mask[row, cols[-1]] == 0 and ids[-1] == END
                seen.add(int(d))
    assert seen == set(range(12))


def test_conversation_keywords_on_an_audio_dataset_are_refused(dataset, tmp_path):
    with pytest.raises(sluice.InvalidArgumentError, match="are for conversation datasets"):
        sluice.Loader(dataset, seed=1, encoder_frames="fastconformer")


def test_conversation_batches_carry_each_audio_turn_zero_copy(tmp_path):
    """Every audio turn's fbank frames, zero-copy, in row then span order, each pointing at its
    placeholder span, whose length `sluice-features encoder-frames` counts from its samples."""
    rng = np.random.default_rng(1)
    turn_samples, lines = {}, []  # conversation -> samples of its audio turns, in order
    for i in range(10):
        sizes = [3000 + 1300 * i] + ([2000 + 700 * i] if i % 3 == 0 else [])
        turns = []
        for k, n in enumerate(sizes):
            write_wav(tmp_path / f"a{i}_{k}.wav", rng.uniform(-0.3, 0.3, n))
            turns += [{"role": "user", "audio": {"path": f"a{i}_{k}.wav"}, "text": "say"},
                      {"role": "assistant", "text": "ok " + "y" * (k + i % 4)}]
        turn_samples[i] = sizes
        lines.append(json.dumps({"id": f"c{i}", "turns": turns}))
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    sluice.shardify("conversations", tmp_path / "chats.jsonl", out=tmp_path / "ds",
                    tokenizer="char", binary=tool("shardify"))
    template = {"roles": {"user": {"prefix": {"ids": [PREFIX_USER]}, "suffix": {"ids": [END]}},
                          "assistant": {"prefix": {"ids": [PREFIX_ASSISTANT]},
                                        "suffix": {"ids": [END]}}},
                "placeholder": {"ids": [PLACEHOLDER]}}
    (tmp_path / "t.json").write_text(json.dumps(template))
    every = sorted({n for sizes in turn_samples.values() for n in sizes})
    counted = subprocess.run(
        [tool("sluice-features"), "encoder-frames", "--encoder-frames", "fastconformer",
         *map(str, every)], capture_output=True, text=True, check=True).stdout
    frames = dict(tuple(map(int, line.split())) for line in counted.splitlines())

    loader = sluice.Loader(str(tmp_path / "ds"), seq_len=200, batch_size=2, pack_mode="best_fit",
                           split_long=False, too_long="skip", seed=3, features="fbank",
                           chat_template=str(tmp_path / "t.json"), encoder_frames="fastconformer")
    seen, shape, largest = set(), None, {"audio": 0, "audio_frames": 0, "padded_audio_frames": 0}
    for batch in loader:
        shape = shape or loader.max_batch_shape()
        n, t = np.from_dlpack(batch.audio_features).shape[:2]
        for key, v in (("audio", n), ("audio_frames", t), ("padded_audio_frames", n * t)):
            largest[key] = max(largest[key], v)
        for name in ("audio_features", "audio_lengths", "audio_spans"):
            a = getattr(batch, name)
            assert np.from_dlpack(a).ctypes.data == a.data_ptr, name
        feats = np.from_dlpack(batch.audio_features)
        lengths = np.from_dlpack(batch.audio_lengths)
        spans = np.from_dlpack(batch.audio_spans)
        tokens, doc_ids = np.from_dlpack(batch.tokens), np.from_dlpack(batch.doc_ids)
        num = len(lengths)
        assert feats.shape == (num, lengths.max(), 80) and feats.dtype == np.float32
        assert spans.shape == (num, 3) and spans.dtype == np.int32
        # Row order, then span order.
        assert [tuple(s[:2]) for s in spans] == sorted(tuple(s[:2]) for s in spans)
        expected = []  # (row, conversation, samples) of each audio, in the row's column order
        for row in range(batch.size):
            for d in dict.fromkeys(doc_ids[row][doc_ids[row] >= 0].tolist()):
                expected += [(row, d, n) for n in turn_samples[d]]
        assert len(expected) == num
        for a, ((row, d, n), (span_row, start, length)) in enumerate(zip(expected, spans)):
            assert span_row == row and doc_ids[row, start] == d
            assert length == frames[n], f"conversation {d}"
            assert (tokens[row, start:start + length] == PLACEHOLDER).all()
            assert lengths[a] == 1 + (n - 400) // 160  # Kaldi fbank: 25 ms every 10 ms
            assert not feats[a, lengths[a]:].any() and feats[a, :lengths[a]].any()
            seen.add(d)
    assert seen == set(range(10))
    # max_batch_shape() carries the audio fields of C++ BatchShape: the epoch's largest audio.
    assert {k: shape.get(k) for k in largest} == largest, shape


def test_padded_conversation_rows_carry_their_loss_mask_and_audio(tmp_path):
    """seq_len 0: a conversation per row; loss_mask [size, max_tokens] zero-copy, 1 on the inputs
    whose next id is the answer's or the assistant's end of turn, 0 on padding; each row's audio
    turn with its span at the row's placeholder columns."""
    rng = np.random.default_rng(2)
    samples, answers, lines = {}, {}, []
    for i in range(8):
        n = 3000 + 900 * i
        write_wav(tmp_path / f"a{i}.wav", rng.uniform(-0.3, 0.3, n))
        samples[i] = n
        answers[i] = "answer " + "z" * (i + 1)
        lines.append(json.dumps({"id": f"c{i}", "turns": [
            {"role": "user", "audio": {"path": f"a{i}.wav"}},
            {"role": "assistant", "text": answers[i]}]}))
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    sluice.shardify("conversations", tmp_path / "chats.jsonl", out=tmp_path / "ds",
                    tokenizer="char", binary=tool("shardify"))
    template = {"roles": {"user": {"prefix": {"ids": [PREFIX_USER]}, "suffix": {"ids": [END]}},
                          "assistant": {"prefix": {"ids": [PREFIX_ASSISTANT]},
                                        "suffix": {"ids": [END]}}},
                "placeholder": {"ids": [PLACEHOLDER]}}
    (tmp_path / "t.json").write_text(json.dumps(template))
    loader = sluice.Loader(str(tmp_path / "ds"), max_frames=0, max_batch_size=3, seed=1,
                           features="fbank", chat_template=str(tmp_path / "t.json"),
                           encoder_frames="fastconformer")
    seen = set()
    for batch in loader:
        assert batch.positions is None and batch.cu_seqlens is None
        a = batch.loss_mask
        assert np.from_dlpack(a).ctypes.data == a.data_ptr
        mask, tokens = np.from_dlpack(a), np.from_dlpack(batch.tokens)
        lengths = np.from_dlpack(batch.token_lengths)
        spans = np.from_dlpack(batch.audio_spans)
        assert mask.shape == tokens.shape and mask.dtype == np.uint8
        assert len(spans) == batch.size
        for row, d in enumerate(batch.record_ids):
            n = lengths[row]
            assert mask[row].sum() == len(answers[d]) + 1, f"conversation {d}"
            assert not mask[row, n - 1:].any()
            span_row, start, length = spans[row]
            assert span_row == row and (tokens[row, start:start + length] == PLACEHOLDER).all()
            assert tokens[row, start - 1] == PREFIX_USER and tokens[row, start + length] == END
            seen.add(d)
    assert seen == set(range(8))


def test_a_mixture_of_conversations_and_asr_renders_asr_records_as_the_task(tmp_path):
    """sluice.Loader({conversations: w, asr: w}) with a template that has a task: each ASR record
    is a row's conversation user (prefix, its audio's placeholder span, the task prompt, end)
    then assistant (its transcript's ids and end, with loss), its audio in the batch's arrays;
    every record of both datasets once."""
    rng = np.random.default_rng(3)
    texts = ["alpha bravo", "charlie delta echo", "foxtrot golf", "hotel india juliet",
             "kilo lima", "alpha echo india"]
    asr, lines = [], []
    for i, text in enumerate(texts):
        write_wav(tmp_path / f"a{i}.wav", rng.uniform(-0.3, 0.3, 3000 + 800 * i))
        asr.append(json.dumps({"audio_filepath": f"a{i}.wav", "text": text}))
        # The same texts as answers: one character vocabulary, so one tokenizer for both.
        lines.append(json.dumps({"id": f"c{i}", "turns": [
            {"role": "user", "audio": {"path": f"a{i}.wav"}},
            {"role": "assistant", "text": text}]}))
    (tmp_path / "asr.jsonl").write_text("\n".join(asr) + "\n")
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n")
    sluice.shardify("audio", manifest=tmp_path / "asr.jsonl", out=tmp_path / "asr",
                    tokenizer="char", binary=tool("shardify"))
    sluice.shardify("conversations", tmp_path / "chats.jsonl", out=tmp_path / "conv",
                    tokenizer="char", binary=tool("shardify"))
    vocab = json.loads((tmp_path / "asr" / "manifest.json").read_text())["tokenizer"]["vocab"]
    TASK = 903
    template = {"roles": {"user": {"prefix": {"ids": [PREFIX_USER]}, "suffix": {"ids": [END]}},
                          "assistant": {"prefix": {"ids": [PREFIX_ASSISTANT]},
                                        "suffix": {"ids": [END]}}},
                "placeholder": {"ids": [PLACEHOLDER]}, "task": {"prompt": {"ids": [TASK]}}}
    (tmp_path / "t.json").write_text(json.dumps(template))
    loader = sluice.Loader({str(tmp_path / "conv"): 1, str(tmp_path / "asr"): 1}, seq_len=200,
                           batch_size=2, pack_mode="best_fit", split_long=False, too_long="skip",
                           seed=1, chat_template=str(tmp_path / "t.json"),
                           encoder_frames="fastconformer")
    n = len(texts)
    seen = []  # the last batch's rows may repeat the first rows
    for batch in loader:
        tokens, doc_ids = np.from_dlpack(batch.tokens), np.from_dlpack(batch.doc_ids)
        mask, spans = np.from_dlpack(batch.loss_mask), np.from_dlpack(batch.audio_spans)
        assert len(spans) == sum(len(np.unique(r[r >= 0])) for r in doc_ids)
        for row in range(batch.size):
            for d in np.unique(doc_ids[row][doc_ids[row] >= 0]):
                cols = np.nonzero(doc_ids[row] == d)[0]
                ids = tokens[row, cols]
                text = texts[d % n]
                answer = [2 + vocab.index(c) for c in text]
                (span,) = [s for s in spans if s[0] == row and s[1] == cols[0] + 1]
                length = span[2]
                assert (ids[1:1 + length] == PLACEHOLDER).all() and ids[0] == PREFIX_USER
                rest = list(ids[1 + length:])
                if d >= n:  # an ASR record: the task's prompt after its audio
                    assert rest == [TASK, END, PREFIX_ASSISTANT, *answer, END], f"record {d}"
                else:
                    assert rest == [END, PREFIX_ASSISTANT, *answer, END], f"record {d}"
                assert mask[row, cols].sum() == len(answer) + 1, f"record {d}"
                seen.append(int(d))
    assert set(seen) == set(range(2 * n))
