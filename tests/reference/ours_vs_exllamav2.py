#!/usr/bin/env python3
"""Hearth's own quantizer outputs against exllamav2: one JSON and plain summary lines (the GPU
job's "compare" and "ours8b" stages, tests/gpu/exl2_reference_job.sh). Reads only files the job
wrote; needs no GPU, torch or exllamav2.

  compare  --ours DIR --names 2.5,3.0,4.0,6.0,gptq-4-g128 --theirs DIR --out FILE.json
           DIR/<name>/ our model folders; DIR/jobs/<name>.jsonl (hearth-cli quantize
           --json-progress) and <name>.runs (one JSON line per hearth-cli run: wall_s, rc,
           baseline_mib, peak_mib from nvidia-smi); DIR/eval/hearth_kld_<ours|exllamav2>_<name>.json
           and hearth_ppl_fp16.json (hearth-cli kld / ppl --json); DIR/eval/exllamav2_eval.json
           (exl2_smollm2_reference.py evaluate); DIR/eval/logit_stats.jsonl
           (quant_exl2_smollm2_tests, HEARTH_EXL2_SMOLLM2_STATS); --theirs DIR: exllamav2's
           checkpoints and exllamav2_quantize.json (their times and calibration check)
  timings  --jobs DIR --name NAME [--layers N --full-layers 32] [--out FILE.json]
           the stage and per-layer times and peak VRAM of one quantization job (the 8B-shape
           stage), with a plainly labelled estimate for the full depth
"""
import argparse
import json
import os
import re
import sys

MODULE = re.compile(r"^model\.layers\.(\d+)\.(self_attn|mlp)$")


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def job_timings(events):
    """Stage and module times from hearth-cli quantize --json-progress events. A progress event
    is sent when a module starts, so a module's time runs to the next event; elapsed_s counts
    over all runs of a resumed job, and a module redone after a resume keeps its last time."""
    prog = [e for e in events if e.get("event") == "progress"]
    done = next((e for e in reversed(events) if e.get("event") == "done"), None)
    stage_first, order = {}, []
    for e in prog:
        st = e.get("stage")
        if st not in stage_first:
            stage_first[st] = e["elapsed_s"]
            order.append(st)
    stages = {}
    for i, st in enumerate(order):
        if st == "done" or i + 1 == len(order):  # the stage a stopped job was in has no end
            continue
        stages[st] = round(stage_first[order[i + 1]] - stage_first[st], 3)
    modules = {}
    for e, nxt in zip(prog, prog[1:]):
        item = e.get("item", "")
        if e.get("stage") in ("measure", "quantize") and (MODULE.match(item) or item == "lm_head"):
            modules[(e["stage"], item)] = nxt["elapsed_s"] - e["elapsed_s"]
    last = prog[-1] if prog else None
    per_layer = {}
    for (st, item), s in modules.items():
        m = MODULE.match(item)
        if m:
            per_layer.setdefault(st, {}).setdefault(int(m.group(1)), 0.0)
            per_layer[st][int(m.group(1))] += s
    return {
        "complete": done is not None,
        "seconds": done.get("seconds") if done else (last["elapsed_s"] if last else None),
        "stopped_at": None if done or not last else "%s %s" % (last.get("stage"), last.get("item")),
        "stages_s": stages,
        "modules_s": {"%s %s" % k: round(v, 3) for k, v in modules.items()},
        "per_layer_s": {st: {str(k): round(v, 3) for k, v in sorted(d.items())}
                        for st, d in per_layer.items()},
        "lm_head_s": round(modules[("quantize", "lm_head")], 3)
        if ("quantize", "lm_head") in modules else None,
        "done": done,
        "warnings": (done or {}).get("warnings", []),
        "messages": [e["message"] for e in prog if e.get("message")],
    }


def runs_summary(runs):
    if not runs:
        return {}
    peaks = [r["peak_mib"] - r["baseline_mib"] for r in runs
             if r.get("peak_mib") is not None and r.get("baseline_mib") is not None]
    return {"runs": len(runs), "wall_s": round(sum(r.get("wall_s", 0) for r in runs), 1),
            "rc": [r.get("rc") for r in runs],
            "peak_vram_mib": max(peaks) if peaks else None,
            "baseline_vram_mib": runs[0].get("baseline_mib"),
            "vram_note": "nvidia-smi memory.used sampled every 200 ms, maximum minus the value "
                         "before the run (includes the CUDA context, ~0.5 GB)"}


def job_report(jobs_dir, name):
    t = job_timings(read_jsonl(os.path.join(jobs_dir, name + ".jsonl")))
    t.update(runs_summary(read_jsonl(os.path.join(jobs_dir, name + ".runs"))))
    return t


def fmt(x, spec=".4g"):
    return "?" if x is None else format(x, spec)


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def logit_line(stats):
    """stats: the test's JSON line for one backend."""
    if not stats:
        return "no comparison"
    return ("mean|Δlogit| %.4f, max %.3f, KL %.2e, top-1 %d/%d, greedy %d/%d identical "
            "(+%d diverge within top-5, %d beyond), gates %s"
            % (stats["mean_abs_dlogit"], stats["max_abs_dlogit"], stats["mean_kl"],
               stats["top1_same"], stats["positions"], stats["greedy_exact"], stats["prompts"],
               stats["greedy_diverged_within_top5"], stats["greedy_diverged_beyond_top5"],
               "ok" if stats["gates_ok"] else "MISSED"))


def compare(args):
    names = [n for n in args.names.split(",") if n]
    ev = os.path.join(args.ours, "eval")
    jobs = os.path.join(args.ours, "jobs")
    exl = read_json(os.path.join(ev, "exllamav2_eval.json")) or {}
    exl_models = exl.get("models", {})
    stats = {}
    for line in read_jsonl(os.path.join(ev, "logit_stats.jsonl")):
        stats.setdefault(line["model"], {})[line["backend"]] = line  # the last run wins
    theirs_q = read_json(os.path.join(args.theirs, "exllamav2_quantize.json")) or {}
    hearth_fp16 = read_json(os.path.join(ev, "hearth_ppl_fp16.json"))
    result = {
        "generator": "tests/reference/ours_vs_exllamav2.py",
        "settings": {"calibration": args.calibration, "eval_text": args.eval_text,
                     "ctx": args.ctx, "stride": args.stride,
                     "exllamav2_attention": exl.get("attention_mode"),
                     "exllamav2_calibration": theirs_q.get("calibration"),
                     "gpu": exl.get("gpu")},
        "tolerances": {
            "logits": "Hearth vs exllamav2 on the same checkpoint, 10 prompts, every prompt "
                      "position, exllamav2's top-20 + 32 probe logits: mean |Δlogit| <= 0.25, max "
                      "<= 3.0, |Δ log-sum-exp| <= 2.0, mean KL(exllamav2 || Hearth) <= 4e-3, same "
                      "argmax where exllamav2's top-2 margin > 0.3, 32-token greedy continuations "
                      "identical or diverging within each other's top 5 "
                      "(tests/gpu/quant_exl2_smollm2_test.cpp)",
            "perplexity": "ours no worse than exllamav2's conversion: ppl(ours) <= ppl(theirs) "
                          "in each tool, same held-out tokens, windows and reference"},
        "heldout": exl.get("text"),
        "fp16": {"hearth_ppl": (hearth_fp16 or {}).get("perplexity"),
                 "hearth_tokens": (hearth_fp16 or {}).get("tokens"),
                 "exllamav2": exl_models.get("fp16")},
        "models": {},
    }
    lines = []
    f = result["fp16"]
    lines.append("ours fp16 source: hearth ppl %s (%s positions), exllamav2 ppl %s (%s positions)"
                 % (fmt(f["hearth_ppl"]), fmt(f["hearth_tokens"], "d") if f["hearth_tokens"] else "?",
                    fmt((f["exllamav2"] or {}).get("perplexity")),
                    (f["exllamav2"] or {}).get("tokens", "?")))
    measurement_name = args.measurement_job
    for name in names:
        gptq = name.startswith("gptq")
        e = {"format": "gptq" if gptq else "exl2", "folder": os.path.join(args.ours, name)}
        q = job_report(jobs, name)
        e["quantize"] = q
        e["hearth_eval"] = read_json(os.path.join(ev, "hearth_kld_ours_%s.json" % name))
        e["exllamav2_eval"] = exl_models.get("ours/" + name)
        e["logits_vs_exllamav2"] = stats.get(name, {})
        e["exllamav2_logits_run"] = exl.get("logits", {}).get(name)
        if not gptq:
            e["theirs"] = {
                "folder": os.path.join(args.theirs, name),
                "hearth_eval": read_json(os.path.join(ev, "hearth_kld_exllamav2_%s.json" % name)),
                "exllamav2_eval": exl_models.get("exllamav2/" + name),
                "quantize": theirs_q.get(name),
            }
            verdict = {}
            for tool, ours_, theirs_ in (
                    ("hearth", e["hearth_eval"], e["theirs"]["hearth_eval"]),
                    ("exllamav2", e["exllamav2_eval"], e["theirs"]["exllamav2_eval"])):
                po = (ours_ or {}).get("perplexity")
                pt = (theirs_ or {}).get("perplexity")
                verdict[tool] = None if po is None or pt is None else {
                    "ours": po, "theirs": pt, "ratio": po / pt, "ours_no_worse": po <= pt}
            e["ppl_ours_vs_theirs"] = verdict
        result["models"][name] = e

        # The summary line.
        he, xe = e["hearth_eval"] or {}, e["exllamav2_eval"] or {}
        label = ("gptq %s" % name[5:].replace("-g", "-bit g")) if gptq else ("exl2 %s" % name)
        if not os.path.exists(os.path.join(e["folder"], "config.json")):
            lines.append("ours %s: no model (the ours stage did not finish it: see ours/jobs/%s.err)"
                         % (label, name))
            continue
        parts = ["hearth ppl %s (KL %s, top-1 %s)" % (fmt(he.get("perplexity")), fmt(he.get("kl_mean")),
                                                     fmt(he.get("top1_agreement"), ".3f")),
                 "exllamav2 ppl(ours) %s (KL %s, top-1 %s)" % (
                     fmt(xe.get("perplexity")), fmt(xe.get("kl_mean")),
                     fmt(xe.get("top1_agreement"), ".3f"))]
        if not gptq:
            th, tx = e["theirs"]["hearth_eval"] or {}, e["theirs"]["exllamav2_eval"] or {}
            parts.append("exllamav2 ppl(theirs) %s, hearth ppl(theirs) %s" % (
                fmt(tx.get("perplexity")), fmt(th.get("perplexity"))))
            v = e["ppl_ours_vs_theirs"]
            verdicts = ["%s %s (x%.3f)" % (tool, "no worse" if v[tool]["ours_no_worse"] else "WORSE",
                                           v[tool]["ratio"])
                        for tool in ("hearth", "exllamav2") if v[tool]]
            parts.append("ours vs theirs: " + (", ".join(verdicts) or "?"))
        for backend in ("cuda", "cpu"):
            if backend in e["logits_vs_exllamav2"]:
                parts.append("logits vs exllamav2 (%s) %s" % (backend,
                                                              logit_line(e["logits_vs_exllamav2"][backend])))
        if not e["logits_vs_exllamav2"]:
            parts.append("logits vs exllamav2: none (see compare.log)")
        st = q.get("stages_s", {})
        tparts = "time %s s" % fmt(q.get("seconds"), ".1f")
        if "measure" in st and st["measure"] > 0 and name == measurement_name:
            tparts += " (measurement pass %.1f s, reused by the other widths)" % st["measure"]
        if not q.get("complete"):
            tparts += " INCOMPLETE (%s s wall; the last progress event started %s)" % (
                q.get("wall_s", "?"), q.get("stopped_at"))
        parts.append("%s, peak VRAM %s MiB" % (tparts, fmt(q.get("peak_vram_mib"), "d")
                                               if q.get("peak_vram_mib") is not None else "?"))
        if not gptq and e["theirs"]["quantize"]:
            tq = e["theirs"]["quantize"]
            parts.append("exllamav2's conversion %s s, peak %s MiB (torch)" % (
                fmt(tq.get("seconds"), ".1f"), fmt(tq.get("peak_reserved_mib"), ".0f")))
        lines.append("ours %s: %s" % (label, "; ".join(parts)))
    if "measurement" in theirs_q:
        m = theirs_q["measurement"]
        c = m.get("calibration_vs_hearth")
        lines.append("theirs: exllamav2 measurement pass %s s, peak %s MiB (torch); its calibration "
                     "tokens vs Hearth's rows: %s" % (
                         fmt(m.get("seconds"), ".1f"), fmt(m.get("peak_reserved_mib"), ".0f"),
                         "%s of %s differ" % (c.get("tokens_differing"), c.get("tokens"))
                         if c else "(exllamav2's built-in set)"))
    result["summary"] = lines
    with open(args.out, "w") as fo:
        json.dump(result, fo, indent=1)
    print("\n".join(lines))


def timings(args):
    t = job_report(args.jobs, args.name)
    per = t.get("per_layer_s", {})
    meas = per.get("measure", {})
    quant = per.get("quantize", {})
    st = t.get("stages_s", {})
    # Layers counted only when both of their modules finished (the next event came).
    full_meas = [v for k, v in meas.items()
                 if "measure model.layers.%s.mlp" % k in t["modules_s"]]
    full_quant = [v for k, v in quant.items()
                  if "quantize model.layers.%s.mlp" % k in t["modules_s"]]
    lm, lq = mean(full_meas), mean(full_quant)
    est = None
    if t.get("complete") and lq is not None and (lm is not None or "measure" not in st):
        fixed = (t["seconds"] or 0) - sum(full_meas) - sum(full_quant)
        est = fixed + args.full_layers * ((lm or 0) + lq)
    t.update({"layers": args.layers, "full_layers": args.full_layers,
              "measure_per_layer_s": lm, "quantize_per_layer_s": lq,
              "estimate_full_depth_s": est,
              "estimate_note": "time of this run minus its per-layer times, plus full_layers x "
                               "the mean per-layer (measure + quantize) time; the fixed part "
                               "(source, calibration, lm_head, writing) is not scaled"})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(t, f, indent=1)
    head = "ours8b %s (%s, %d of %d layers)" % (args.name, args.what, args.layers, args.full_layers)
    if t.get("seconds") is None:
        print(head + ": no progress recorded (see the log)")
        return
    state = ("complete in %.1f s (hearth-cli's own time; %s s wall over %s run(s))"
             % (t["seconds"], t.get("wall_s", "?"), t.get("runs", "?"))) if t["complete"] else (
        "STOPPED at the limit after %s s wall over %s run(s); the last progress event, at %.1f s, "
        "started %s" % (t.get("wall_s", "?"), t.get("runs", "?"), t["seconds"], t["stopped_at"]))
    bits = ["%s %.1f s" % (k, v) for k, v in st.items()]
    line = "%s: %s (%s)" % (head, state, ", ".join(bits))
    if lm is not None:
        line += "; measure per layer %.1f s" % lm
    if lq is not None:
        line += "; quantize per layer %.1f s" % lq
    if t.get("lm_head_s") is not None:
        line += "; lm_head %.1f s" % t["lm_head_s"]
    line += "; peak VRAM %s MiB over baseline" % (t.get("peak_vram_mib") if t.get("peak_vram_mib")
                                                  is not None else "?")
    if est is not None:
        line += "; estimate for %d layers %.0f s (%.1f min)" % (args.full_layers, est, est / 60)
    print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--ours", required=True)
    c.add_argument("--names", required=True)
    c.add_argument("--theirs", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--measurement-job", default="4.0", help="the job that ran the measurement")
    c.add_argument("--calibration", default="", help="for the JSON: rows x length etc.")
    c.add_argument("--eval-text", default="resources/calibration/heldout.txt")
    c.add_argument("--ctx", type=int, default=512)
    c.add_argument("--stride", type=int, default=256)
    t = sub.add_parser("timings")
    t.add_argument("--jobs", required=True)
    t.add_argument("--name", required=True)
    t.add_argument("--what", default="Llama-3-8B shape, random weights")
    t.add_argument("--layers", type=int, default=2)
    t.add_argument("--full-layers", type=int, default=32)
    t.add_argument("--out")
    args = ap.parse_args()
    {"compare": compare, "timings": timings}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
