#!/usr/bin/env python3
"""Hearth's calibration rows as a parquet file for exllamav2's converter.

Hearth's quantizer calibrates on token rows cut from its built-in text (resources/calibration;
engine/quantizer/calibration.cpp): the documents tokenized into one stream, each followed
by EOS, then `rows` windows of `length` tokens spread evenly over it (quant rows at phase 0,
measurement rows at phase 0.5). With the CUDA defaults (100 x 2048, 16 measurement rows) the
windows overlap: the text has ~25k tokens. The program tests/gpu/calibration_rows prints those
rows as Hearth makes them.

exllamav2's converter takes a custom set only as a parquet file (-c): it joins each row's columns
with spaces, tokenizes the rows one by one (ExLlamaV2Tokenizer.encode, i.e. the HF tokenizer
without added BOS/EOS, special tokens recognised), concatenates the tokens and cuts
rows x length of them. So the parquet written here has one row per Hearth token row, its `text`
the decoded row, and each text must re-encode to exactly `length` tokens or every later row
shifts. A row that starts or ends inside a multi-byte UTF-8 character (CJK, Devanagari in
multilingual.txt) cannot be written as text: the partial token at its edge is replaced by
U+FFFD (chosen so the row keeps its length). `make` reports how many tokens differ from Hearth's
(a handful of 200k), `check` compares what exllamav2 actually tokenized (cal_data.safetensors in
its work folder) with Hearth's rows.

  hearth_calibration.py make  --rows-json ROWS.json --tokenizer DIR/tokenizer.json --out DIR
  hearth_calibration.py check --rows-json ROWS.json --part quant|measure --cal-data FILE
"""
import argparse
import json
import os
import sys

REPLACEMENT = "\ufffd"


def load_rows(path):
    with open(path) as f:
        return json.load(f)


def _agreement(a, b):
    return sum(1 for x, y in zip(a, b) if x == y)


def row_text(tok, ids, length):
    """A text that the tokenizer encodes to exactly `length` tokens, as close to `ids` as text
    allows: (text, tokens equal to Hearth's at the same position)."""
    text = tok.decode(ids, skip_special_tokens=False)
    enc = tok.encode(text, add_special_tokens=False).ids
    if enc == list(ids):
        return text, length
    best = (text, _agreement(enc, ids)) if len(enc) == length else (None, -1)
    n = len(ids)
    for lead in range(0, 4):
        for trail in range(0, 4):
            core = tok.decode(ids[lead:n - trail], skip_special_tokens=False)
            for pre in ([""] if lead == 0 else ["", REPLACEMENT, " " + REPLACEMENT]):
                for post in ([""] if trail == 0 else ["", REPLACEMENT, " " + REPLACEMENT]):
                    t = pre + core + post
                    e = tok.encode(t, add_special_tokens=False).ids
                    if len(e) != length:
                        continue
                    a = _agreement(e, ids)
                    if a > best[1]:
                        best = (t, a)
    if best[0] is None:
        raise SystemExit("cannot write a calibration row of %d tokens as text (row starts %r)"
                         % (length, text[:40]))
    return best


def make_texts(tok, part):
    """part: {"rows", "length", "ids"} -> (texts, stats)."""
    length = part["length"]
    texts, differ, rows_differ = [], 0, []
    for i, ids in enumerate(part["ids"]):
        t, same = row_text(tok, ids, length)
        texts.append(t)
        if same != length:
            differ += length - same
            rows_differ.append(i)
    return texts, {"rows": part["rows"], "length": length, "tokens": part["rows"] * length,
                   "tokens_differing": differ, "rows_differing": rows_differ}


def simulate_exllamav2(tok, texts, rows, length):
    """What exllamav2.conversion.tokenize.get_tokens makes of the texts (same tokenizer)."""
    flat = []
    for t in texts:
        flat += tok.encode(t, add_special_tokens=False).ids
        if len(flat) >= rows * length:
            break
    return [flat[r * length:(r + 1) * length] for r in range(rows)]


def compare(expected, actual):
    """expected, actual: lists of rows of ids -> stats."""
    tokens = sum(len(r) for r in expected)
    same, rows_differ = 0, []
    for i, (e, a) in enumerate(zip(expected, actual)):
        s = _agreement(e, a)
        same += s
        if s != len(e) or len(a) != len(e):
            rows_differ.append(i)
    if len(actual) != len(expected):
        rows_differ.append("rows: %d, expected %d" % (len(actual), len(expected)))
    return {"tokens": tokens, "tokens_equal": same, "tokens_differing": tokens - same,
            "rows_differing": rows_differ}


def write_parquet(texts, path):
    import pandas
    pandas.DataFrame({"text": texts}).to_parquet(path, engine="pyarrow", index=False)


def make(rows_json, tokenizer_json, out, parquet=True):
    """Writes out/quant.parquet and out/measure.parquet (+ .txt.json copies of the texts) and
    out/parquet_check.json; returns the check."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_json)
    rows = load_rows(rows_json)
    os.makedirs(out, exist_ok=True)
    check = {"calibration": rows.get("calibration"), "documents": rows.get("documents"),
             "stream_tokens": rows.get("stream_tokens"), "warnings": rows.get("warnings", [])}
    for part in ("quant", "measure"):
        texts, stats = make_texts(tok, rows[part])
        sim = simulate_exllamav2(tok, texts, rows[part]["rows"], rows[part]["length"])
        stats["as_exllamav2_tokenizes_it"] = compare(rows[part]["ids"], sim)
        check[part] = stats
        with open(os.path.join(out, part + ".texts.json"), "w") as f:
            json.dump(texts, f)
        if parquet:
            write_parquet(texts, os.path.join(out, part + ".parquet"))
    with open(os.path.join(out, "parquet_check.json"), "w") as f:
        json.dump(check, f, indent=1)
    return check


def check_cal_data(rows_json, part, cal_data):
    from safetensors.numpy import load_file
    rows = load_rows(rows_json)[part]
    ids = load_file(cal_data)["input_ids"]
    return compare(rows["ids"], [list(map(int, r)) for r in ids])


def summary(check):
    out = []
    for part in ("quant", "measure"):
        s = check[part]
        x = s["as_exllamav2_tokenizes_it"]
        out.append("%s %d x %d: %d of %d tokens as text differ from Hearth's (rows %s); "
                   "re-tokenized: %d differ" % (part, s["rows"], s["length"], s["tokens_differing"],
                                                s["tokens"], s["rows_differing"] or "none",
                                                x["tokens_differing"]))
    return "; ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--rows-json", required=True)
    m.add_argument("--tokenizer", required=True, help="tokenizer.json of the model")
    m.add_argument("--out", required=True)
    m.add_argument("--no-parquet", action="store_true", help="texts and check only (no pandas)")
    c = sub.add_parser("check")
    c.add_argument("--rows-json", required=True)
    c.add_argument("--part", choices=("quant", "measure"), required=True)
    c.add_argument("--cal-data", required=True)
    args = ap.parse_args()
    if args.cmd == "make":
        check = make(args.rows_json, args.tokenizer, args.out, not args.no_parquet)
        print(summary(check))
    else:
        print(json.dumps(check_cal_data(args.rows_json, args.part, args.cal_data)))


if __name__ == "__main__":
    sys.exit(main())
