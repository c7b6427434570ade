"""Template rendering (loader/chat_template.h) against an independent rendering in Python.

Builds a byte-level BPE tokenizer.json with HF `tokenizers` (chat special tokens added), WAVs
with the standard library and a small generated conversation set in every accepted spelling;
runs `shardify conversations --tokenizer hf:...`, renders each record with sluice
(conversation_render) and, from the JSONL itself, with a hand-written loop over HF's
encode(text, add_special_tokens=False); ids, loss masks and placeholder spans must be equal.

    conversation_render_test.py SHARDIFY CONVERSATION_RENDER
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import wave

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|audio|>", "<|audio_bos|>",
            "<|audio_eos|>"]
WORDS = "the a cat sat on mat what is said here yes no again please tell me about it".split()

TEMPLATE = {
    "roles": {
        "system": {"prefix": "<|im_start|>system\n", "suffix": "<|im_end|>\n"},
        "user": {"prefix": "<|im_start|>user\n", "suffix": "<|im_end|>\n",
                 "audio_prefix": "<|audio_bos|>", "audio_suffix": "<|audio_eos|>"},
        "assistant": {"prefix": "<|im_start|>assistant\n", "suffix": {"ids": [2, 0]},
                      "audio_position": "after_text"},
    },
    "placeholder": "<|audio|>",
}
ROLE = {"system": "system", "user": "user", "human": "user", "assistant": "assistant",
        "gpt": "assistant"}


def frames(samples):
    return (samples + 639) // 640  # as conversation_render's callback


def make_tokenizer(path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    rng = random.Random(5)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(500)]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    tok.save(path)
    return tok


def write_wav(path, n, rng):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"".join(rng.randrange(-3000, 3000).to_bytes(2, "little", signed=True)
                               for _ in range(n)))


def make_conversations(d, rng):
    """(JSONL lines, the same conversations as lists of (role, text, samples or None))."""
    lines, convs = [], []
    for c in range(12):
        turns, parsed = [], []
        system = None
        if c % 3 == 0:
            system = "you " + " ".join(rng.choice(WORDS) for _ in range(3))
            parsed.append(("system", system, None))
        for t in range(rng.randint(1, 4)):
            role = "user" if t % 2 == 0 else "assistant"
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))
            audio = None
            if role == "user" and (rng.random() < 0.6 or not text):
                n = rng.randint(1000, 9000)
                name = "c%d_t%d.wav" % (c, t)
                write_wav(os.path.join(d, name), n, rng)
                audio = (name, n)
            if c % 2 == 0:  # our spelling
                turn = {"role": role.title() if c % 4 == 0 else role}
                if text:
                    turn["text"] = text
                if audio:
                    turn["audio"] = {"path": audio[0]}
                turns.append(turn)
                parsed.append((role, text, audio[1] if audio else None))
            else:  # NeMo's: a turn is text or audio, so a turn with both becomes two
                if audio:
                    turns.append({"from": role.title(), "type": "audio", "value": audio[0],
                                  "duration": audio[1] / 16000})
                    parsed.append((role, "", audio[1]))
                if text:
                    turns.append({"from": role.title(), "type": "text", "value": text})
                    parsed.append((role, text, None))
        line = {"id": "conv-%d" % c, ("turns" if c % 2 == 0 else "conversations"): turns}
        if system:
            line["system"] = system
        lines.append(json.dumps(line))
        convs.append(("conv-%d" % c, parsed))
    return lines, convs


def piece(tok, p):
    if isinstance(p, dict):
        return list(p["ids"])
    return tok.encode(p, add_special_tokens=False).ids if p else []


def render(tok, conv):
    """The hand-written reference: ids, loss mask, spans [turn, start, length]."""
    ids, loss, spans = [], [], []
    placeholder = piece(tok, TEMPLATE["placeholder"])
    assert len(placeholder) == 1
    for i, (role, text, samples) in enumerate(conv):
        r = TEMPLATE["roles"].get(role, {})
        learns = r.get("loss", role == "assistant")

        def put(p, on):
            got = piece(tok, p)
            ids.extend(got)
            loss.extend([1 if on else 0] * len(got))

        def audio():
            if samples is None:
                return
            put(r.get("audio_prefix", ""), False)
            n = frames(samples)
            spans.append([i, len(ids), n])
            ids.extend(placeholder * n)
            loss.extend([0] * n)
            put(r.get("audio_suffix", ""), False)

        put(r.get("prefix", ""), False)
        after = r.get("audio_position", "before_text") == "after_text"
        if not after:
            audio()
        put(text, learns)
        if after:
            audio()
        put(r.get("suffix", ""), learns)
    return ids, loss, spans


def main():
    shardify, render_tool = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        tok = make_tokenizer(os.path.join(d, "tokenizer.json"))
        lines, convs = make_conversations(d, random.Random(11))
        with open(os.path.join(d, "c.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(d, "template.json"), "w") as f:
            json.dump(TEMPLATE, f)
        subprocess.run([shardify, "conversations", "-q", os.path.join(d, "c.jsonl"), "-o",
                        os.path.join(d, "ds"), "--tokenizer",
                        "hf:" + os.path.join(d, "tokenizer.json")], check=True)
        out = subprocess.run([render_tool, os.path.join(d, "ds"),
                              os.path.join(d, "template.json")],
                             check=True, capture_output=True, text=True).stdout
        got = {j["key"]: j for j in map(json.loads, out.splitlines())}
        assert len(got) == len(convs), (len(got), len(convs))
        checked_spans = 0
        for key, conv in convs:
            ids, loss, spans = render(tok, conv)
            g = got[key]
            assert g["ids"] == ids, "%s: ids\n sluice %s\n python %s" % (key, g["ids"], ids)
            assert g["loss"] == loss, "%s: loss mask\n sluice %s\n python %s" % (key, g["loss"],
                                                                                  loss)
            assert g["spans"] == spans, "%s: spans %s, python %s" % (key, g["spans"], spans)
            checked_spans += len(spans)
        assert checked_spans > 3, checked_spans
        print("conversation_render: %d conversations, %d audio spans: sluice == python"
              % (len(convs), checked_spans))


if __name__ == "__main__":
    main()
