"""Conformance of `ftbench tokenize` against the libraries the tokenizer files come from.

1. Hugging Face tokenizer.json BPE (src/data/hf_tokenizer.cpp) against PyPI's `tokenizers`, the
   Rust library Hugging Face itself uses. Two small byte-level BPE vocabularies are trained by
   that library (BpeTrainer over the 256 ByteLevel symbols) on generated text and saved with
   Tokenizer.save(): GPT-2 style (ByteLevel pre-tokenizer, use_regex true; merges rewritten as
   "a b" strings, as older files have them) and Llama 3 style (Split with the Llama 3 regex,
   Isolated, then ByteLevel use_regex false; ignore_merges; merges as ["a", "b"] pairs, as the
   library writes them), each with added tokens (special or not, <mask> with lstrip) and a few
   vocabulary words no merge makes (which only ignore_merges reaches).
2. SentencePiece .model files (src/data/spm: Debian's libsentencepiece, with ftbench's own unigram
   Viterbi) against PyPI's `sentencepiece`: a BPE and a unigram model trained by it, with
   byte_fallback, a small vocabulary and two user-defined symbols.

Neither side adds BOS or EOS: `ftbench tokenize` prints Tokenizer::encode, which adds none (a
run's data pipeline adds BOS where the tokenizer says so: Tokenizer::adds_bos); the libraries
are asked for none (tokenizers: add_special_tokens=False, so no post_processor;
SentencePieceProcessor.encode: add_bos and add_eos are False unless set).

Each tokenizer encodes a corpus of hard strings and generated lines, one line at a time
(`ftbench tokenize --file corpus.txt --lines --json`), the whole file at once, a CRLF document
and the throughput text (whole and by lines, timed once each). Ids must be equal; exit 1
listing the first mismatches. Every file is made from seeded random numbers, so each run builds
the same files.

Usage: python tokenizer_conformance.py --ftbench PATH --workdir DIR [--bench-mb N]
(run.sh picks the interpreter and runs this). Exit 77 (skipped) when `tokenizers` or
`sentencepiece` cannot be imported, except on CI (docs/ci.md, "Skips and CI"; the same rule as
tests/ci_env.h), where that is a failure.
"""

import argparse
import dataclasses
import json
import os
import random
import resource
import subprocess
import sys
import time

# Nothing may be downloaded; the Rust library's threads stay off (see run.sh).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def on_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


try:
    import sentencepiece as spm
    import tokenizers
    from tokenizers import AddedToken, Regex, Tokenizer
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers
except ImportError as e:
    if on_ci():
        print(f"error: the tokenizer conformance test needs tokenizers and sentencepiece on CI "
              f"({e}; {sys.executable} is not the environment of scripts/python-env.sh?)",
              file=sys.stderr)
        sys.exit(1)
    print(f"skipped: {e} in {sys.executable} (scripts/python-env.sh makes .venv with "
          f"tokenizers and sentencepiece)")
    sys.exit(77)

# Text to train on and to test with (the pools and HARD as the JavaScript test had them).
WORDS = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was", "on", "token",
    "tokenizer", "benchmark", "fine", "tuning", "LoRA", "adapter", "gradient", "Hello", "World",
    "I'll", "you're", "we've", "she'd", "don't", "it's", "I'm", "THEY'RE", "Don'T",
    "naïve", "café", "résumé", "Straße", "Ærø", "smörgåsbord", "Zürich", "façade",
    "Привет", "мир", "данные", "Ελληνικά", "λόγος", "שלום", "עולם", "مرحبا", "بالعالم",
    "नमस्ते", "दुनिया", "हिन्दी", "中文", "日本語", "東京", "こんにちは", "カタカナ", "한국어", "안녕하세요",
    "ไทย", "ภาษา", "Tiếng", "Việt", "ǅemal", "ﬁne", "Ⅻ", "x²", "½", "١٢٣", "１２３",
]
EMOJI = [
    "😀", "👍🏽", "👩\u200d💻", "👨\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "🇫🇷", "🇯🇵", "❤\ufe0f", "✨",
    "🤖", "🧑🏿\u200d🚀", "☕", "1\ufe0f\u20e3",
]
PUNCT = [
    ".", ",", "!", "?", ";", ":", "...", "--", "—", "–", "(", ")", "[", "]", "{", "}", "\"", "'",
    "«", "»", "“", "”", "„", "#", "@", "$", "%", "&", "*", "+", "=", "<", ">", "/", "\\", "|", "~",
    "`", "^", "_", "€", "£", "¥", "§", "°", "·", "→", "∑", "√", "≠", "。", "、", "！", "？", "\u0301",
    "\u0308", "\u3099",
]
SPACES = [
    " ", " ", " ", " ", "  ", "   ", "\t", " \t ", "\u00a0", "\u3000", "\u2009", "\r", "\u2028",
]
NUMBERS = [
    "1", "12", "123", "1234", "1234567", "3.14159", "2024-09-17", "0x1F600", "1,000,000", "10^9",
    "٣", "99th",
]

# The hard strings, one per line (no "\n" inside: the whole-file pass covers newlines).
HARD = [
    "Hello world",
    " Hello world",
    "Hello  world   !",
    "I'LL BE THERE, YOU'RE RIGHT, WE'VE SEEN, SHE'D GO, IT'S, I'M, DON'T",
    "i'll you're we've she'd it's i'm don't 's 't 're 've 'm 'll 'd",
    "Don'T, 'S 'T 'Re 'vE 'M 'lL 'D''s '''",
    "1234567 12345678 123 1 22 4444 55555 666666",
    "3.14159 2,718 0.000001 1e-9 -42 +7 ١٢٣٤٥ １２３４５ Ⅻ ² ½ ③",
    "price: $1,234.56 (€1.000,00) — 50% off!!!",
    "中文分词测试，标点符号。日本語のテキスト、カタカナとひらがな！한국어 텍스트입니다.",
    "Привет, мир! Ελληνικά κείμενα. שלום עולם. مرحبا بالعالم. नमस्ते दुनिया।",
    "e\u0301 a\u0308 n\u0303 combining: Zu\u0308rich, cafe\u0301, ñ vs n\u0303, \u0915\u094d\u0937",
    "emoji: 😀😃😄 👍🏽👍🏿 👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d🌈 🇫🇷🇯🇵 ❤\ufe0f 1\ufe0f\u20e3 "
    "🧑🏿\u200d🚀",
    "👨\u200d👩\u200d👧\u200d👦👨\u200d👩\u200d👧\u200d👦👨\u200d👩\u200d👧\u200d👦",
    "tabs\tand\t\tmore\t\t\ttabs\t",
    "trailing spaces      ",
    "      leading spaces",
    " " * 81,
    "mixed \t \u00a0 \u3000 \u2009 whitespace \u2028 separators",
    "carriage\rreturn\r\r only",
    "line end with CR\r",
    "<|begin_of_text|>Hello<|eot_id|>",
    "text<|eot_id|>more<|eot_id|><|eot_id|> spaced <|eot_id|> end",
    "<|start_header_id|>user<|end_header_id|>\t\tHi!<|eot_id|>",
    "<|endoftext|>The end.<|endoftext|> <|endoftext|>",
    "almost special: <|eot_id| <|eot_id|>| <|begin_of_tex|> <|",
    "masked  <mask>  word and <mask>x",
    "code: for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; } // done",
    "def f(x):    return x**2  # comment",
    "<html><body class=\"x\">&amp; &lt;tag&gt;</body></html>",
    "URL https://example.com/path?q=1&r=2#frag user@example.org",
    "----------==========__________**********..........!!!!!!!!!!",
    "a",
    " ",
    "",
    "ǅemal ﬁne ﬂow Ǆ ǈ ß ẞ İstanbul ı",
    "Tiếng Việt có dấu: Đà Nẵng, Huế",
    "ไทยภาษาไทย ไม่มีช่องว่าง",
    "ZWJ\u200dinside\u200cnon-joiner\u200bzero-width",
    "private use \ue000\uf8ff and astral 𝐀𝐁𝐂 𝔘𝔫𝔦 𠀀𠀁 🂡",
    "x" * 600,
    "ab " * 300,
    "🙂" * 100,
    "1" * 100,
]

# Code points the JavaScript reference had to leave out because its RegExp and Oniguruma (the
# Rust library's regex engine) disagree on them: U+0085 and U+FEFF as whitespace, U+017F and
# U+212A (Kelvin) folding to "s" and "k" under (?i). Against the Rust library they are fair game.
ONIGURUMA_HARD = [
    "next\u0085line \u0085 \u0085\u0085x and\ufeffbom \ufeff \ufeff\ufeffy",
    "it'\u017f 'ſ 'ſt 'Kelvin '\u212a 'K 'ſ\u017f ſ",
    " \u0085 ",
    "\ufeff",
]

# What the trained files add: vocabulary words no merge makes, which ignore_merges takes whole
# where they are a whole pre-token, and the non-special added token "ftbench".
ADDED_HARD = [
    "conformance conformance, I'LL 'LL x👨\u200d👩\u200d👧\u200d👦 1234567 "
    "ftbench ftbenchftbench xftbench",
]

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Vocabulary words added after training: merges do not make them, so only ignore_merges (the
# Llama 3 style) takes them whole.
EXTRA_WORDS = [" conformance", "conformance", " I'LL", "'LL", "1234567", "👨\u200d👩\u200d👧\u200d👦"]

TRAIN_SEED = 20240917
BENCH_SEED = 20241130


class Generator:
    """Lines of words, numbers, emoji and punctuation with odd spaces, from a seeded RNG."""

    def __init__(self, seed):
        self.random = random.Random(seed).random

    def pick(self, xs):
        return xs[int(self.random() * len(xs))]

    def line(self, max_tokens):
        out = []
        for _ in range(1 + int(self.random() * max_tokens)):
            r = self.random()
            if r < 0.55:
                out.append(self.pick(WORDS))
            elif r < 0.65:
                out.append(self.pick(NUMBERS))
            elif r < 0.75:
                out.append(self.pick(EMOJI))
            elif r < 0.88:
                out.append(self.pick(PUNCT))
            if self.random() < 0.8:
                out.append(" " if self.random() < 0.9 else self.pick(SPACES))
        return "".join(out)


def byte_level(text):
    """GPT-2's bytes_to_unicode applied to the UTF-8 bytes of `text`."""
    def printable(b):
        return 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE
    table, shifted = {}, 0
    for b in range(256):
        if printable(b):
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return "".join(table[b] for b in text.encode("utf-8"))


@dataclasses.dataclass
class BpeStyle:
    name: str
    llama3: bool
    merges: int             # merges asked of the trainer (it stops earlier when pairs run out)
    merges_format: str      # "strings" ("a b") or "pairs" (["a", "b"])
    trainer_special: list   # special tokens given to the trainer: ids from 0
    later_special: list     # added after training: ids after the vocabulary, as Llama 3's
    later_plain: list       # non-special added tokens (normalized, matched in the text too)


BPE_STYLES = [
    BpeStyle("gpt2", llama3=False, merges=600, merges_format="strings",
             trainer_special=[AddedToken("<|endoftext|>", special=True),
                              AddedToken("<mask>", lstrip=True, special=True),
                              AddedToken("<|eot_id|>", special=True)],
             later_special=[], later_plain=[AddedToken("ftbench", special=False)]),
    BpeStyle("llama3", llama3=True, merges=900, merges_format="pairs", trainer_special=[],
             later_special=[AddedToken(t, special=True) for t in (
                 "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                 "<|end_header_id|>", "<|eot_id|>", "<|reserved_special_token_0|>")],
             later_plain=[]),
]


def train_bpe(style, train_lines, path):
    """Trains `style` with the Rust library, saves it to `path` as ftbench will read it, and
    returns the Tokenizer loaded back from that file and a description."""
    tok = Tokenizer(models.BPE(ignore_merges=style.llama3))
    if style.llama3:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=len(alphabet) + len(style.trainer_special) + style.merges, min_frequency=2,
        show_progress=False, initial_alphabet=alphabet, special_tokens=style.trainer_special)
    tok.train_from_iterator(train_lines, trainer=trainer)

    # Words no merge makes, added to the vocabulary in the file form (the library has no call
    # for it) before the added tokens take the next ids.
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for word in EXTRA_WORDS:
        if byte_level(word) not in vocab:
            vocab[byte_level(word)] = next_id
            next_id += 1
    tok = Tokenizer.from_str(json.dumps(data))

    tok.add_special_tokens(style.later_special)
    tok.add_tokens(style.later_plain)
    if style.llama3:
        bos = "<|begin_of_text|>"
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos}:1 $B:1",
            special_tokens=[(bos, tok.token_to_id(bos))])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.save(path, pretty=True)
    # The library writes merges as pairs; older files (GPT-2's) have "a b" strings, which it
    # still reads: the file is rewritten in that form and loaded back from it below.
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    if style.merges_format == "strings":
        saved["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m
                                    for m in saved["model"]["merges"]]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(saved, f, ensure_ascii=False, indent=2)
    merges = saved["model"]["merges"]
    written_as = "strings" if merges and isinstance(merges[0], str) else "pairs"
    if written_as != style.merges_format:
        raise SystemExit(f"{path}: merges written as {written_as}, expected {style.merges_format}")
    description = (f"{len(merges)} merges as {written_as}, {len(saved['added_tokens'])} added "
                   f"tokens, ignore_merges {str(saved['model']['ignore_merges']).lower()}")
    return Tokenizer.from_file(path), description


def lines_changed_by_ignore_merges(path, lines):
    """How many of `lines` encode differently when ignore_merges is flipped: whether the test
    exercises it."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data["model"]["ignore_merges"] = not data["model"]["ignore_merges"]
    flipped = Tokenizer.from_str(json.dumps(data))
    tok = Tokenizer.from_file(path)
    return sum(tok.encode(line, add_special_tokens=False).ids !=
               flipped.encode(line, add_special_tokens=False).ids for line in lines)


@dataclasses.dataclass
class SpmStyle:
    name: str
    model_type: str
    vocab_size: int


# Byte fallback alone takes 256 pieces.
SPM_STYLES = [SpmStyle("spm-bpe", "bpe", 1200), SpmStyle("spm-unigram", "unigram", 1200)]


def train_spm(style, train_path, prefix):
    """Trains a SentencePiece model with PyPI's sentencepiece; returns the processor on the
    written .model file and a description."""
    spm.SentencePieceTrainer.train(
        input=train_path, model_prefix=prefix, model_type=style.model_type,
        vocab_size=style.vocab_size, hard_vocab_limit=False, byte_fallback=True,
        character_coverage=0.9995, user_defined_symbols=["<|eot_id|>", "4444"], num_threads=1,
        shuffle_input_sentence=False, input_sentence_size=0, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    description = (f"{sp.get_piece_size()} pieces, byte_fallback, BOS id {sp.bos_id()} "
                   f"not added by either")
    return sp, description


def write_text(path, text):
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))


class Ftbench:
    def __init__(self, binary):
        self.binary = binary

    def tokenize(self, tokenizer_path, *args, json_output=True):
        command = [self.binary, "tokenize", "--tokenizer", tokenizer_path, *args]
        if json_output:
            command.append("--json")
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if result.returncode != 0:
            raise SystemExit(f"ftbench tokenize failed ({result.returncode}): "
                             f"{result.stderr.decode('utf-8', 'replace')}")
        return result.stdout.decode("utf-8")


def show(text):
    return json.dumps(text if len(text) <= 120 else text[:120] + "...", ensure_ascii=False)


def show_ids(ids):
    return json.dumps(ids)[:300]


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rates(mb, seconds):
    """"X MB/s (Y per CPU second)" of `mb` megabytes in (wall, cpu) seconds."""
    wall, cpu = seconds
    return f"{mb / wall:.2f} MB/s ({mb / max(cpu, 1e-9):.2f} per CPU second)"


def first_difference(a, b):
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return min(len(a), len(b))


@dataclasses.dataclass
class Inputs:
    corpus_lines: list
    corpus_path: str
    crlf_path: str
    bench_path: str


def check(name, description, path, encode, ftbench, inputs):
    """Compares ftbench with `encode` (the library's) on `path`; returns (mismatches, report)."""
    corpus_lines = inputs.corpus_lines
    mismatches = []

    def mismatch(what, expected, actual):
        mismatches.append(what)
        if len(mismatches) <= 5:
            print(f"{name}: {what}", file=sys.stderr)
            print(f"  library: {show_ids(expected)}", file=sys.stderr)
            print(f"  ftbench: {show_ids(actual)}", file=sys.stderr)

    # One line at a time.
    printed = [json.loads(line)
               for line in ftbench.tokenize(path, "--file", inputs.corpus_path, "--lines")
               .splitlines() if line]
    if len(printed) != len(corpus_lines):
        mismatch(f"ftbench printed {len(printed)} lines, the corpus has {len(corpus_lines)}",
                 [], [])
    line_ids = 0
    for i, (text, out) in enumerate(zip(corpus_lines, printed)):
        expected = encode(text)
        line_ids += len(expected)
        if out["ids"] != expected:
            mismatch(f"line {i + 1} {show(text)}", expected, out["ids"])
    lines_equal = not mismatches

    # The whole file at once (newlines, CRLF, added tokens across lines), and a CRLF document.
    results = []
    for what, file in (("whole file", inputs.corpus_path), ("CRLF document", inputs.crlf_path)):
        expected = encode(open(file, encoding="utf-8", newline="").read())
        actual = json.loads(ftbench.tokenize(path, "--file", file))["ids"]
        if actual != expected:
            k = first_difference(expected, actual)
            mismatch(f"{what} differs at id {k} (library {len(expected)} ids, ftbench "
                     f"{len(actual)})", expected[max(0, k - 3):k + 8],
                     actual[max(0, k - 3):k + 8])
        results.append(f"{what} {len(expected)} ids {'equal' if actual == expected else 'DIFFER'}")

    # Throughput, one run each on the same text (not a benchmark: no repetitions), whole and a
    # line at a time: ftbench as a whole process, start-up and printing included; the library
    # in-process, on one thread (TOKENIZERS_PARALLELISM=false; a plain loop over the lines).
    # MB/s by wall-clock time, and by CPU time (user + system), which a busy machine inflates
    # less.
    bench_text = open(inputs.bench_path, encoding="utf-8", newline="").read()
    bench_lines = bench_text.split("\n")[:-1]
    bench_mb = len(bench_text.encode("utf-8")) / 1e6
    speeds = []
    for mode, flags in (("whole", ()), ("lines", ("--lines",))):
        wall, cpu = time.perf_counter(), time.process_time()
        if mode == "whole":
            expected = encode(bench_text)
        else:
            expected = [id for line in bench_lines for id in encode(line)]
        library_seconds = (time.perf_counter() - wall, time.process_time() - cpu)
        wall, cpu = time.perf_counter(), children_cpu_seconds()
        ftbench.tokenize(path, "--file", inputs.bench_path, *flags, json_output=False)
        ftbench_seconds = (time.perf_counter() - wall, children_cpu_seconds() - cpu)
        printed = ftbench.tokenize(path, "--file", inputs.bench_path, *flags)
        actual = [id for line in printed.splitlines() if line for id in json.loads(line)["ids"]]
        if actual != expected:
            k = first_difference(expected, actual)
            mismatch(f"throughput text ({mode}) differs at id {k}", expected[max(0, k - 3):k + 8],
                     actual[max(0, k - 3):k + 8])
        speeds.append(f"{mode} {len(expected)} ids {'equal' if actual == expected else 'DIFFER'}, "
                      f"library {rates(bench_mb, library_seconds)}, "
                      f"ftbench {rates(bench_mb, ftbench_seconds)}")

    report = (f"{name} ({description}): {len(corpus_lines)} lines, {line_ids} ids "
              f"{'all equal' if lines_equal else 'with mismatches'}; {'; '.join(results)}; "
              f"throughput on {bench_mb:.2f} MB: {'; '.join(speeds)}")
    return len(mismatches), report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ftbench", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--bench-mb", type=float, default=1.0)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ftbench = Ftbench(args.ftbench)
    print(f"tokenizers {tokenizers.__version__}, sentencepiece {spm.__version__}, "
          f"Python {sys.version.split()[0]}")

    generator = Generator(TRAIN_SEED)
    train_lines = [generator.line(12) for _ in range(3000)] + HARD + ONIGURUMA_HARD + ADDED_HARD
    train_path = os.path.join(args.workdir, "train.txt")
    write_text(train_path, "\n".join(train_lines) + "\n")
    corpus_lines = HARD + ONIGURUMA_HARD + ADDED_HARD + [generator.line(25) for _ in range(400)]
    inputs = Inputs(corpus_lines, os.path.join(args.workdir, "corpus.txt"),
                    os.path.join(args.workdir, "crlf.txt"), os.path.join(args.workdir, "bench.txt"))
    write_text(inputs.corpus_path, "\n".join(corpus_lines) + "\n")
    write_text(inputs.crlf_path, "\r\n".join(corpus_lines[:60]) + "\r\n\r\n\n \n\t\n")
    bench, bench_bytes, bench_generator = [], 0, Generator(BENCH_SEED)
    while bench_bytes < args.bench_mb * 1e6:
        bench.append(bench_generator.line(40) + "\n")
        bench_bytes += len(bench[-1].encode("utf-8"))
    write_text(inputs.bench_path, "".join(bench))

    failures = 0
    reports = []
    for style in BPE_STYLES:
        folder = os.path.join(args.workdir, style.name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tokenizer.json")
        reference, description = train_bpe(style, train_lines, path)
        description += (f", which decides the ids of "
                        f"{lines_changed_by_ignore_merges(path, corpus_lines)} corpus lines")
        mismatches, report = check(
            style.name, description, path,
            lambda text, t=reference: t.encode(text, add_special_tokens=False).ids,
            ftbench, inputs)
        failures += mismatches
        reports.append(report)
    for style in SPM_STYLES:
        prefix = os.path.join(args.workdir, style.name)
        reference, description = train_spm(style, train_path, prefix)
        mismatches, report = check(style.name, description, prefix + ".model",
                                   lambda text, sp=reference: sp.encode(text), ftbench, inputs)
        failures += mismatches
        reports.append(report)

    for report in reports:
        print(report)
    if failures:
        print(f"FAILED: {failures} mismatches", file=sys.stderr)
        return 1
    print("tokenizer conformance: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
