// Conformance of `ftbench tokenize` (src/data/hf_tokenizer.cpp) against Hugging Face's independent
// JavaScript implementation (@huggingface/tokenizers).
//
// 1. Trains two small byte-level BPE tokenizers on generated text and writes them as
//    tokenizer.json: GPT-2 style (ByteLevel pre-tokenizer, use_regex true) and Llama 3 style
//    (Split with the Llama 3 regex, Isolated, then ByteLevel use_regex false; ignore_merges),
//    each with added special tokens.
// 2. Encodes a corpus of hard strings with both implementations: one line at a time
//    (`ftbench tokenize --file corpus.txt --lines --json`) and the whole file at once.
// 3. Compares ids exactly; exits 1 listing the first mismatches.
//
// Usage: node tokenizer_conformance.mjs --ftbench PATH --workdir DIR [--bench-mb N]
// (run.sh installs the npm package and runs this from the install folder.)

import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Tokenizer } from "@huggingface/tokenizers";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => {
    if (a.startsWith("--")) pairs.push([a.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
if (!args.ftbench || !args.workdir) {
  console.error("usage: node tokenizer_conformance.mjs --ftbench PATH --workdir DIR [--bench-mb N]");
  process.exit(2);
}
const benchMb = Number(args["bench-mb"] ?? 1);
mkdirSync(args.workdir, { recursive: true });

// Deterministic pseudo-random numbers (mulberry32), so every run builds the same files.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(20240917);
const pick = (xs) => xs[Math.floor(random() * xs.length)];

// GPT-2's bytes_to_unicode.
const BYTE_TO_CHAR = (() => {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  const map = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; ++b) map[b] = String.fromCodePoint(printable(b) ? b : 256 + n++);
  return map;
})();
const encoder = new TextEncoder();
const byteLevel = (s) => Array.from(encoder.encode(s), (b) => BYTE_TO_CHAR[b]).join("");

// Text to train on and to test with. Code points are chosen where JavaScript's RegExp and
// Oniguruma agree (U+0085 and U+FEFF are whitespace to one and not the other; U+017F folds to
// "s" under (?i) in Oniguruma only), so a mismatch means a bug, not an engine quirk.
const WORDS = [
  "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was", "on", "token",
  "tokenizer", "benchmark", "fine", "tuning", "LoRA", "adapter", "gradient", "Hello", "World",
  "I'll", "you're", "we've", "she'd", "don't", "it's", "I'm", "THEY'RE", "Don'T",
  "naïve", "café", "résumé", "Straße", "Ærø", "smörgåsbord", "Zürich", "façade",
  "Привет", "мир", "данные", "Ελληνικά", "λόγος", "שלום", "עולם", "مرحبا", "بالعالم",
  "नमस्ते", "दुनिया", "हिन्दी", "中文", "日本語", "東京", "こんにちは", "カタカナ", "한국어", "안녕하세요",
  "ไทย", "ภาษา", "Tiếng", "Việt", "ǅemal", "ﬁne", "Ⅻ", "x²", "½", "١٢٣", "１２３",
];
const EMOJI = [
  "😀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "✨", "🤖", "🧑🏿‍🚀", "☕", "1️⃣",
];
const PUNCT = [".", ",", "!", "?", ";", ":", "...", "--", "—", "–", "(", ")", "[", "]", "{", "}",
  "\"", "'", "«", "»", "“", "”", "„", "#", "@", "$", "%", "&", "*", "+", "=", "<", ">", "/", "\\",
  "|", "~", "`", "^", "_", "€", "£", "¥", "§", "°", "·", "→", "∑", "√", "≠", "。", "、", "！", "？",
  "́", "̈", "゙"];
const SPACES = [" ", " ", " ", " ", "  ", "   ", "\t", " \t ", "\u00a0", "\u3000", "\u2009", "\r", "\u2028"];
const NUMBERS = ["1", "12", "123", "1234", "1234567", "3.14159", "2024-09-17", "0x1F600", "1,000,000",
  "10^9", "٣", "99th"];

function randomLine(maxTokens) {
  const n = 1 + Math.floor(random() * maxTokens);
  let s = "";
  for (let i = 0; i < n; ++i) {
    const r = random();
    if (r < 0.55) s += pick(WORDS);
    else if (r < 0.65) s += pick(NUMBERS);
    else if (r < 0.75) s += pick(EMOJI);
    else if (r < 0.88) s += pick(PUNCT);
    if (random() < 0.8) s += random() < 0.9 ? " " : pick(SPACES);
  }
  return s;
}

// Training text: generated lines, pre-tokenized with an approximation of each style's regex (the
// merges only need to be plausible, not identical to a real model's).
const GPT2_JS = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_JS = new RegExp(
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  "gu",
);

// Byte-level BPE training: start from the 256 byte symbols, merge the most frequent adjacent
// pair (ties: the pair that sorts first) until `numMerges` merges exist.
function trainBpe(lines, regex, numMerges) {
  const counts = new Map();
  for (const line of lines) {
    for (const piece of line.match(regex) ?? []) {
      const w = byteLevel(piece);
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
  }
  const words = [...counts].map(([w, c]) => ({ symbols: Array.from(w), count: c }));
  const merges = [];
  while (merges.length < numMerges) {
    const pairs = new Map();
    for (const { symbols, count } of words) {
      for (let i = 0; i + 1 < symbols.length; ++i) {
        const key = symbols[i] + " " + symbols[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + count);
      }
    }
    let best = null;
    let bestCount = 1;  // a pair seen once is not worth a merge
    for (const [key, c] of pairs) {
      // Symbols never contain a space (byte-level maps it to "Ġ"), so "a b" splits cleanly.
      if (c > bestCount || (c === bestCount && best !== null && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (best === null) break;
    const [a, b] = best.split(" ");
    merges.push([a, b]);
    for (const w of words) {
      const out = [];
      for (let i = 0; i < w.symbols.length; ++i) {
        if (i + 1 < w.symbols.length && w.symbols[i] === a && w.symbols[i + 1] === b) {
          out.push(a + b);
          ++i;
        } else {
          out.push(w.symbols[i]);
        }
      }
      w.symbols = out;
    }
  }
  return merges;
}

function buildTokenizerJson({ style, merges, extraWords, special, mergeFormat }) {
  const vocab = {};
  let next = 0;
  // GPT-2's order: the printable bytes first, then the shifted ones.
  const order = [...Array(256).keys()].sort(
    (x, y) => BYTE_TO_CHAR[x].codePointAt(0) - BYTE_TO_CHAR[y].codePointAt(0),
  );
  for (const b of order) vocab[BYTE_TO_CHAR[b]] = next++;
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = next++;
  for (const w of extraWords) if (!(byteLevel(w) in vocab)) vocab[byteLevel(w)] = next++;
  const added_tokens = special.map(({ content, special: isSpecial = true, lstrip = false, rstrip = false }) => ({
    id: next++,
    content,
    single_word: false,
    lstrip,
    rstrip,
    normalized: !isSpecial,
    special: isSpecial,
  }));
  const byteLevelPre = (useRegex) => ({
    type: "ByteLevel",
    add_prefix_space: false,
    trim_offsets: true,
    use_regex: useRegex,
  });
  const pre_tokenizer =
    style === "gpt2"
      ? byteLevelPre(true)
      : {
          type: "Sequence",
          pretokenizers: [
            { type: "Split", pattern: { Regex: LLAMA3_PATTERN }, behavior: "Isolated", invert: false },
            byteLevelPre(false),
          ],
        };
  const bos = added_tokens[0];
  const post_processor =
    style === "gpt2"
      ? { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true }
      : {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: bos.content, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
          pair: [
            { SpecialToken: { id: bos.content, type_id: 0 } },
            { Sequence: { id: "A", type_id: 0 } },
            { SpecialToken: { id: bos.content, type_id: 1 } },
            { Sequence: { id: "B", type_id: 1 } },
          ],
          special_tokens: { [bos.content]: { id: bos.content, ids: [bos.id], tokens: [bos.content] } },
        };
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens,
    normalizer: null,
    pre_tokenizer,
    post_processor,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: style === "llama3",
      vocab,
      merges: mergeFormat === "pairs" ? merges : merges.map(([a, b]) => `${a} ${b}`),
    },
  };
}

// The hard strings, one per line (no "\n" inside: the whole-file pass covers newlines).
const HARD = [
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
  "emoji: 😀😃😄 👍🏽👍🏿 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ 1️⃣ 🧑🏿‍🚀",
  "👨‍👩‍👧‍👦👨‍👩‍👧‍👦👨‍👩‍👧‍👦",
  "tabs\tand\t\tmore\t\t\ttabs\t",
  "trailing spaces      ",
  "      leading spaces",
  "                                                                                 ",
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
  "x".repeat(600),
  "ab ".repeat(300),
  "🙂".repeat(100),
  "1".repeat(100),
];

// Build and write both tokenizers.
const trainLines = Array.from({ length: 3000 }, () => randomLine(12)).concat(HARD);
const specials = (names) => names.map((content) => ({ content }));
const configs = [
  {
    name: "gpt2",
    style: "gpt2",
    numMerges: 600,
    mergeFormat: "strings",
    special: [
      ...specials(["<|endoftext|>"]),
      { content: "<mask>", lstrip: true },
      { content: "<|eot_id|>" },
    ],
  },
  {
    name: "llama3",
    style: "llama3",
    numMerges: 900,
    mergeFormat: "pairs",
    special: specials([
      "<|begin_of_text|>",
      "<|end_of_text|>",
      "<|start_header_id|>",
      "<|end_header_id|>",
      "<|eot_id|>",
      "<|reserved_special_token_0|>",
    ]),
  },
];

const randomLines = Array.from({ length: 400 }, () => randomLine(25));
const corpusLines = [...HARD, ...randomLines];
const corpusPath = join(args.workdir, "corpus.txt");
writeFileSync(corpusPath, corpusLines.join("\n") + "\n");
const corpusText = readFileSync(corpusPath, "utf8");

function runFtbench(tokenizerPath, extraArgs) {
  const result = spawnSync(
    args.ftbench,
    ["tokenize", "--tokenizer", tokenizerPath, "--json", ...extraArgs],
    { encoding: "utf8", maxBuffer: 1 << 30 },
  );
  if (result.status !== 0) {
    throw new Error(`ftbench tokenize failed (${result.status}): ${result.stderr}`);
  }
  return result.stdout;
}

const show = (s) => JSON.stringify(s.length > 120 ? s.slice(0, 120) + "..." : s);
let failures = 0;
const report = [];

for (const cfg of configs) {
  const regex = cfg.style === "gpt2" ? GPT2_JS : LLAMA3_JS;
  const merges = trainBpe(trainLines, regex, cfg.numMerges);
  const extraWords = [" conformance", "conformance", " I'LL", "'LL", "1234567", "👨‍👩‍👧‍👦"];
  const json = buildTokenizerJson({ ...cfg, merges, extraWords });
  const dir = join(args.workdir, cfg.name);
  mkdirSync(dir, { recursive: true });
  const tokenizerPath = join(dir, "tokenizer.json");
  writeFileSync(tokenizerPath, JSON.stringify(json, null, 1));
  const js = new Tokenizer(json, {});
  const jsEncode = (text) => (text.length === 0 ? [] : js.encode(text, { add_special_tokens: false }).ids);

  // One line at a time.
  const lines = runFtbench(tokenizerPath, ["--file", corpusPath, "--lines"])
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
  let mismatches = 0;
  if (lines.length !== corpusLines.length) {
    console.error(`${cfg.name}: ftbench printed ${lines.length} lines, corpus has ${corpusLines.length}`);
    ++failures;
  }
  for (let i = 0; i < corpusLines.length && i < lines.length; ++i) {
    const expected = jsEncode(corpusLines[i]);
    const actual = lines[i].ids;
    if (JSON.stringify(expected) !== JSON.stringify(actual)) {
      if (++mismatches <= 5) {
        console.error(`${cfg.name}: line ${i + 1} ${show(corpusLines[i])}`);
        console.error(`  js:      ${JSON.stringify(expected).slice(0, 300)}`);
        console.error(`  ftbench: ${JSON.stringify(actual).slice(0, 300)}`);
      }
    }
  }
  // The whole file at once (newlines, CRLF, specials across lines).
  const whole = JSON.parse(runFtbench(tokenizerPath, ["--file", corpusPath]));
  const wholeExpected = jsEncode(corpusText);
  const wholeEqual = JSON.stringify(wholeExpected) === JSON.stringify(whole.ids);
  if (!wholeEqual) {
    const at = wholeExpected.findIndex((id, k) => id !== whole.ids[k]);
    console.error(`${cfg.name}: whole file differs at id ${at} (js ${wholeExpected.length} ids, ftbench ${whole.ids.length})`);
    ++mismatches;
  }
  // CRLF documents, encoded whole.
  const crlf = corpusLines.slice(0, 60).join("\r\n") + "\r\n\r\n\n \n\t\n";
  const crlfPath = join(args.workdir, "crlf.txt");
  writeFileSync(crlfPath, crlf);
  const crlfIds = JSON.parse(runFtbench(tokenizerPath, ["--file", crlfPath])).ids;
  if (JSON.stringify(crlfIds) !== JSON.stringify(jsEncode(crlf))) {
    console.error(`${cfg.name}: CRLF document differs`);
    ++mismatches;
  }
  failures += mismatches;

  // Throughput, one run each on the same text (not a benchmark: no repetitions, startup included
  // for ftbench).
  let benchText = "";
  while (benchText.length < benchMb * 1e6) benchText += randomLine(40) + "\n";
  const benchPath = join(args.workdir, "bench.txt");
  writeFileSync(benchPath, benchText);
  const benchBytes = Buffer.byteLength(benchText, "utf8");
  let t0 = performance.now();
  const jsIds = jsEncode(benchText);
  const jsSeconds = (performance.now() - t0) / 1000;
  const ftIds = JSON.parse(runFtbench(tokenizerPath, ["--file", benchPath])).ids;
  // Timed apart, in text mode: the process with its startup and output, without JSON parsing.
  t0 = performance.now();
  const plain = spawnSync(args.ftbench, ["tokenize", "--tokenizer", tokenizerPath, "--file", benchPath], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  const ftSeconds = (performance.now() - t0) / 1000;
  if (plain.status !== 0) throw new Error(`ftbench tokenize failed: ${plain.stderr}`);
  const benchEqual = JSON.stringify(jsIds) === JSON.stringify(ftIds);
  if (!benchEqual) {
    console.error(`${cfg.name}: throughput text differs`);
    ++failures;
  }
  report.push(
    `${cfg.name}: ${merges.length} merges, ${json.added_tokens.length} added tokens; ` +
      `${corpusLines.length} lines, ${mismatches === 0 ? "all equal" : mismatches + " mismatches"}; ` +
      `whole file ${wholeExpected.length} ids ${wholeEqual ? "equal" : "DIFFER"}; ` +
      `${(benchBytes / 1e6).toFixed(2)} MB: js ${(benchBytes / 1e6 / jsSeconds).toFixed(1)} MB/s, ` +
      `ftbench ${(benchBytes / 1e6 / ftSeconds).toFixed(1)} MB/s (process incl. startup, ${jsIds.length} ids ${benchEqual ? "equal" : "DIFFER"})`,
  );
}

for (const line of report) console.log(line);
if (failures > 0) {
  console.error(`FAILED: ${failures} mismatches`);
  process.exit(1);
}
console.log("tokenizer conformance: OK");
