#!/usr/bin/env python3
"""sluice's byte-level BPE ids against the real producers (docs/tokenizers.md, "Equality").

Builds tokenizers here with HF `tokenizers` (a small BPE trained on a generated corpus with the
pre-tokenizer and normalizer settings of GPT-2, Llama 3, Qwen2 and Mistral Nemo, plus variants
for the Split behaviours and the prefix space), rank files for tiktoken's r50k/cl100k/o200k
encodings, and takes the real Claude tokenizer.json that anthropic 0.38.0 ships. Then compares
the ids of `bpe_ids` (sluice) with HF's encode(text, add_special_tokens=False and True) and tiktoken's
encode(text, allowed_special="all") on a fuzz corpus, and checks Decode(Encode(x)) == x.

Invalid UTF-8: HF's Python API and tiktoken take str, so sluice refuses such bytes (an error
naming the offset); the test checks the refusal, and that the same bytes decoded with
errors="replace" give HF's ids.

usage: bpe_equality.py BPE_IDS_BINARY [VENV_PYTHON]
(run under VENV_PYTHON when given, the venv of run.sh's REFERENCE_PIP; exit 77: the references
are not installed there)
"""
import base64
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

if len(sys.argv) > 2 and os.path.realpath(sys.executable) != os.path.realpath(sys.argv[2]):
    if os.path.exists(sys.argv[2]):
        os.execv(sys.argv[2], [sys.argv[2], __file__] + sys.argv[1:])
try:
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers import processors, trainers
except ImportError as e:
    print(f"SKIP: {e} (./run.sh test installs tokenizers and tiktoken into build/venv-tools)")
    sys.exit(77)

BPE_IDS = sys.argv[1]
SEED = 20261127

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
          r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
          r" ?[^\s\p{L}\p{N}]+[\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = {
    "en": "the quick brown fox jumps over lazy dog it's we'll they've I'M YOU'RE don’t "
          "tokenizer merges bytes running ran 1st 2nd".split(),
    "de": "Grüße Straße Mädchen übermäßig Fußgängerübergänge schön Ärger".split(),
    "fr": "café déjà vu œuvre garçon naïve Noël élève français".split(),
    "ru": "привет мир Съешь же ещё этих мягких французских булок".split(),
    "el": "Καλημέρα κόσμε ψυχή Ωμέγα άλφα".split(),
    "zh": "我们 今天 天气 很好 中华人民共和国 机器学习 語言".split(),
    "ja": "こんにちは 世界 カタカナ ひらがな 東京都 ｶﾀｶﾅ".split(),
    "ko": "안녕하세요 세계 한국어 토크나이저".split(),
    "ar": "مرحبا بالعالم اللغة العربية ١٢٣".split(),
    "hi": "नमस्ते दुनिया हिन्दी भाषा ०१२".split(),
    "th": "สวัสดีชาวโลก ภาษาไทย".split(),
    "he": "שלום עולם עברית".split(),
    "misc": "ﬁnance ﬀ ℌ ① Ⅻ ㎏ ½ x² ＡＢＣ１２３ 𝐀𝐁𝐂 ſtraße K Å".split(),
}
CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    "if __name__ == '__main__':\n    main()\r\n",
    "<div class=\"x\">&nbsp;</div>\n",
    "SELECT * FROM t WHERE id=42;",
    "x = {'a': [1, 2, 3], \"b\": None}\n\n\n",
    "    \t  \n  // comment\n/* block */",
    "https://example.com/path?q=1&r=2#frag",
]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇩🇪", "🇯🇵", "1️⃣", "❤️", "🏳️‍🌈", "🤖", "🧑🏿‍🚀"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u2029",
          "\u0085", "\u180e", "\u200b", "\u2009", "\x0b", "\x0c", "\x1c", "\ufeff"]
BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
          (0x590, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF), (0x1800, 0x18AF),
          (0x1E00, 0x1FFF), (0x2000, 0x206F), (0x2100, 0x22FF), (0x3000, 0x30FF),
          (0x4E00, 0x4FFF), (0xAC00, 0xAD00), (0xFB00, 0xFB4F), (0xFF00, 0xFFEF),
          (0x1D400, 0x1D7FF), (0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0xE000, 0xE010)]


def random_char(rng):
    while True:
        lo, hi = rng.choice(BLOCKS)
        c = chr(rng.randint(lo, hi))
        # Assigned in Python's Unicode (14): every engine here knows its properties.
        if unicodedata.category(c) not in ("Cn", "Cs"):
            return c


def fuzz_piece(rng, specials):
    kind = rng.randrange(11)
    if kind == 0:
        lang = rng.choice(list(WORDS))
        return " ".join(rng.choice(WORDS[lang]) for _ in range(rng.randint(1, 12))) + \
            rng.choice(["", ".", "!", "?", ",", "...", "。", "،"])
    if kind == 1:
        return rng.choice(CODE)
    if kind == 2:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 5)))
    if kind == 3:
        return "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 40)))
    if kind == 4:
        return rng.choice(["", "-", "+", "$"]) + "".join(
            rng.choice("0123456789,._") for _ in range(rng.randint(1, 30)))
    if kind == 5:
        return rng.choice(["'s", "'S", "'ll", "'LL", "'ve", "'re", "'m", "'d", "’s", "'x",
                           "ſ", "'ſ", "'K"]) + rng.choice(["", " ", "a", "\n"])
    if kind == 6:
        return rng.choice(specials) if specials else "<|endoftext|>"
    if kind == 7:  # decomposed text: NFC/NFKC have work to do
        lang = rng.choice(["de", "fr", "ko", "el", "misc", "hi"])
        return unicodedata.normalize("NFD", " ".join(rng.sample(WORDS[lang], 2)))
    if kind == 8:
        return "".join(random_char(rng) for _ in range(rng.randint(1, 20)))
    if kind == 9:  # near-misses of special tokens
        s = rng.choice(specials) if specials else "<|endoftext|>"
        return rng.choice([s[:-1], s[1:], s + s, s.upper(), "<" + s])
    return rng.choice(["a", "Z", "é", "\u0301", "\u200d", "\ufe0f", "_", "/", "\\", "\"'"])


def fuzz_corpus(specials, n=2500):
    rng = random.Random(SEED)
    texts = []
    for _ in range(n):
        texts.append("".join(fuzz_piece(rng, specials) for _ in range(rng.randint(1, 8))))
    # Long pre-tokens (the heap merge), long whitespace runs, a long mixed text.
    texts.append("a" * 5000)
    texts.append("ab" * 3000 + " " * 2000 + "x")
    texts.append("\n" * 700 + "\t" * 300)
    texts.append("9" * 1000)
    texts.append("".join(fuzz_piece(rng, specials) for _ in range(800)))
    return texts


def training_corpus():
    rng = random.Random(SEED + 1)
    out = []
    for _ in range(4000):
        out.append(" ".join(fuzz_piece(rng, []) for _ in range(rng.randint(1, 6))))
    return out


def train(pre, normalizer, specials, vocab_size=3000):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_corpus(), trainer)
    return tok


def split_then_bytes(pattern, behavior="isolated", invert=False):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior=behavior, invert=invert),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def families():
    """name -> (tokenizer.json text, special tokens)"""
    out = {}
    sp = ["<|endoftext|>"]
    out["gpt2"] = (train(pre_tokenizers.ByteLevel(add_prefix_space=False), None, sp), sp)
    sp = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
          "<|eot_id|>", "<|reserved_special_token_0|>"]
    llama = train(split_then_bytes(LLAMA3), None, sp)
    llama.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)])
    j = json.loads(llama.to_str())
    j["model"]["ignore_merges"] = True  # Llama 3's setting; the trainer does not keep it
    out["llama3"] = (Tokenizer.from_str(json.dumps(j)), sp)
    sp = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    out["qwen2"] = (train(split_then_bytes(QWEN2), normalizers.NFC(), sp), sp)
    sp = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]"]
    out["mistral-nemo"] = (train(split_then_bytes(TEKKEN), None, sp), sp)
    sp = ["<|endoftext|>"]
    out["prefix-space+merged-with-previous"] = (train(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{P}"), behavior="merged_with_previous"),
        pre_tokenizers.ByteLevel(add_prefix_space=True)]), normalizers.NFKC(), sp), sp)
    # Post-processors that close each text: RoBERTa's cls/sep, and a Sequence of ByteLevel and a
    # template with a token on each side (sluice then takes the closing token as the end of a
    # document and appends no second one).
    sp = ["<s>", "</s>", "<pad>"]
    roberta = train(pre_tokenizers.ByteLevel(add_prefix_space=True), None, sp)
    roberta.post_processor = processors.RobertaProcessing(
        ("</s>", roberta.token_to_id("</s>")), ("<s>", roberta.token_to_id("<s>")))
    out["roberta"] = (roberta, sp)
    sp = ["<s>", "</s>", "<unk>"]
    wrapped = train(pre_tokenizers.ByteLevel(add_prefix_space=False), None, sp)
    wrapped.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
            special_tokens=[("<s>", wrapped.token_to_id("<s>")),
                            ("</s>", wrapped.token_to_id("</s>"))])])
    out["template-bos-eos"] = (wrapped, sp)
    out["merged-with-next+contiguous+removed"] = (train(pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="removed"),
        pre_tokenizers.Split(Regex(r"\d"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[a-z]+"), behavior="contiguous", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), None, sp), sp)
    return {k: (t.to_str(), s) for k, (t, s) in out.items()}


def sluice_ids(args, texts):
    lines = "".join(base64.b64encode(t).decode() + "\n" for t in texts)
    r = subprocess.run([BPE_IDS] + args, input=lines.encode(), capture_output=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: bpe_ids {' '.join(args)}: {r.stderr.decode()}")
    return [json.loads(l) for l in r.stdout.decode().splitlines()]


class Report:
    def __init__(self):
        self.failures = 0
        self.compared = 0

    def compare(self, name, texts, want, got, want_decoded):
        """want_decoded(text, ids): what Decode must give (the text itself where nothing is
        normalised or removed)."""
        bad = 0
        for t, w, g in zip(texts, want, got):
            self.compared += 1
            decoded = base64.b64decode(g["decoded"]) if "decoded" in g else None
            ok = "error" not in g and g["ids"] == w and decoded == want_decoded(t, w)
            if not ok:
                bad += 1
                if bad <= 5:
                    first = next((i for i, (a, b) in enumerate(zip(w, g.get("ids", []))) if a != b),
                                 min(len(w), len(g.get("ids", []))))
                    print(f"  {name}: text {t!r:.300}\n    first difference at id {first}: "
                          f"reference {w[first:first + 12]} (of {len(w)})\n    sluice    "
                          f"{g.get('ids', [])[first:first + 12]} (of {len(g.get('ids', []))}) "
                          f"{g.get('error', '')}\n    decoded {decoded!r:.200}")
        print(f"{name}: {len(texts) - bad}/{len(texts)} texts with equal ids and decoding")
        self.failures += bad


def check_invalid_utf8(report, args, ref_encode):
    raw = [b"abc\xff", b"\xc3(", b"ok \xe2\x82 tail", b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80",
           b"\xc0\xaf overlong", b"end\xe2"]
    got = sluice_ids(args, raw)
    refused = sum(1 for g in got if "error" in g and "invalid UTF-8 at byte" in g["error"])
    print(f"{args[0]}: {refused}/{len(raw)} invalid UTF-8 texts refused naming the byte")
    report.failures += len(raw) - refused
    replaced = [r.decode("utf-8", errors="replace") for r in raw]
    report.compare(f"{args[0]} invalid UTF-8 after errors='replace'",
                   replaced, [ref_encode(t) for t in replaced],
                   sluice_ids(args, [t.encode() for t in replaced]), lambda t, ids: t.encode())


def main():
    report = Report()
    work = tempfile.mkdtemp(prefix="bpe_equality_")
    for name, (text, specials) in families().items():
        path = os.path.join(work, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        ref = Tokenizer.from_file(path)
        texts = fuzz_corpus(specials)
        # HF's encode with add_special_tokens False and True (its default): the post-processor
        # (Llama 3's <|begin_of_text|>, RoBERTa's <s> ... </s>) applied by sluice's switch.
        for special in (False, True):
            want = [ref.encode(t, add_special_tokens=special).ids for t in texts]
            # Decode(Encode(x)) == x where nothing is normalised, removed or added; else HF's.
            lossless = name in ("gpt2", "llama3", "mistral-nemo") and not special
            report.compare(f"hf {name} add_special_tokens={special}", texts, want,
                           sluice_ids(["hf", path, "special" if special else "plain"],
                                      [t.encode() for t in texts]),
                           lambda t, ids: t.encode() if lossless else
                           ref.decode(ids, skip_special_tokens=False).encode())
        if name == "gpt2":
            check_invalid_utf8(report, ["hf", path, "plain"],
                               lambda t: ref.encode(t, add_special_tokens=False).ids)
            gpt2 = json.loads(text)

    # tiktoken: ranks from the GPT-2-style model's merges (bytes, then each merge's result).
    byte_of = {}
    for b, c in enumerate(bytes_to_unicode()):
        byte_of[c] = b
    ranks = {bytes([b]): b for b in range(256)}
    for m in gpt2["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        tok = bytes(byte_of[c] for c in a + b)
        ranks.setdefault(tok, len(ranks))
    rank_path = os.path.join(work, "test.tiktoken")
    with open(rank_path, "w") as f:
        for tok, r in ranks.items():
            f.write(base64.b64encode(tok).decode() + " " + str(r) + "\n")
    openai_public.load_tiktoken_bpe = lambda *a, **k: dict(ranks)  # tiktoken's own definitions
    for enc_name in ["r50k_base", "cl100k_base", "o200k_base"]:
        p = getattr(openai_public, enc_name)()
        enc = tiktoken.Encoding(name="test_" + enc_name, pat_str=p["pat_str"],
                                mergeable_ranks=p["mergeable_ranks"],
                                special_tokens=p["special_tokens"])
        specials = list(p["special_tokens"])
        texts = fuzz_corpus(specials)
        want = [enc.encode(t, allowed_special="all") for t in texts]
        report.compare(f"tiktoken {enc_name}", texts, want,
                       sluice_ids(["tiktoken", rank_path, enc_name], [t.encode() for t in texts]),
                       lambda t, ids: t.encode())

    # A real published tokenizer.json: Claude's, in anthropic 0.38.0 (NFKC, ByteLevel).
    spec = importlib.util.find_spec("anthropic")
    claude = spec and os.path.join(os.path.dirname(spec.origin), "tokenizer.json")
    if claude and os.path.exists(claude):
        ref = Tokenizer.from_file(claude)
        texts = fuzz_corpus(["<EOT>", "<META>"])
        for special in (False, True):
            want = [ref.encode(t, add_special_tokens=special).ids for t in texts]
            report.compare(f"hf anthropic-0.38.0/tokenizer.json add_special_tokens={special}",
                           texts, want,
                           sluice_ids(["hf", claude, "special" if special else "plain"],
                                      [t.encode() for t in texts]),
                           lambda t, ids: ref.decode(ids, skip_special_tokens=False).encode())
    else:
        print("FAIL: anthropic 0.38.0's tokenizer.json is not installed (run.sh REFERENCE_PIP)")
        report.failures += 1

    print(f"{report.compared} texts compared, {report.failures} failures")
    sys.exit(1 if report.failures else 0)


def bytes_to_unicode():
    """GPT-2's byte-level alphabet, byte order: the character that stands for each byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


if __name__ == "__main__":
    main()
