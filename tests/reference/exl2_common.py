"""Shared by the exllamav2 reference scripts (exl2_make_fixtures.py, exl2_smollm2_reference.py,
exl2_diagnose.py): import stubs, and the choice of exllamav2's attention path.

Why the attention path matters (found on the first GPU run, torch 2.11, no flash-attn, no
xformers): exllamav2 0.3.2 then runs attention through ExLlamaV2Attention._attn_torch, whose
SDPA branch (taken whenever torch has torch.nn.attention.bias.causal_lower_right) reads

    if self.layer_idx in attn_params.block_diag_layers or causal:
        attn_mask_lr = attn_params.get_block_diag_mask(q_states.device)

With causal=True (every decoder layer) and no block-diagonal layout (cu_seqlens None) that mask
is None, and F.scaled_dot_product_attention(q, k, v, None) attends bidirectionally: every
multi-token forward pass (the converter's calibration passes, model.forward without a cache, a
prefill) sees future tokens. Single-token decode steps are unaffected. The matmul branch
(config.no_sdpa, or EXLLAMA_NO_SDPA in the environment) builds the causal mask itself.

Modes (ATTENTION_MODES):
  sdpa        exllamav2 as shipped (SDPA branch when torch has causal_lower_right)
  matmul      EXLLAMA_NO_SDPA=1: exllamav2's own matmul attention with its causal mask
  sdpa_fixed  the SDPA branch with the lower-right causal mask it was meant to pass (a monkeypatch
              of Params.get_block_diag_mask in this process only: runpy'd converter included)
"""
import importlib.machinery
import importlib.util
import os
import sys
import types

ATTENTION_MODES = ("sdpa", "matmul", "sdpa_fixed")


def stub_missing(names=("fastparquet", "pandas")):
    """exllamav2.conversion.tokenize imports pandas and fastparquet at module level; the built-in
    calibration set and the packer need neither. Empty stand-ins let the import succeed."""
    for name in names:
        if importlib.util.find_spec(name) is None:
            stub = types.ModuleType(name)
            # pandas asks importlib for the spec of optional engines: give the stub one.
            stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
            stub._hearth_stub = True
            sys.modules[name] = stub


def patch_read_parquet():
    """exllamav2's converter reads a custom calibration set with
    pandas.read_parquet(filename, engine="fastparquet"). The GPU image has pandas and pyarrow
    but no fastparquet: read it with pyarrow instead (the same table; only the reader differs).
    Returns the engine that will be used."""
    fp = sys.modules.get("fastparquet")
    if (fp is not None and not getattr(fp, "_hearth_stub", False)) or (
            fp is None and importlib.util.find_spec("fastparquet") is not None):
        return "fastparquet"
    import pandas
    if getattr(pandas, "_hearth_stub", False):
        raise SystemExit("a custom calibration set needs pandas and pyarrow (not installed)")
    if getattr(pandas.read_parquet, "_hearth_patched", False):
        return "pyarrow"
    original = pandas.read_parquet

    def read_parquet(path, engine="auto", **kwargs):
        return original(path, engine="pyarrow" if engine == "fastparquet" else engine, **kwargs)

    read_parquet._hearth_patched = True
    pandas.read_parquet = read_parquet
    return "pyarrow"


def prepare_attention(mode):
    """Call before exllamav2 is imported: the environment switch is read at import time (and by
    every ExLlamaV2Config, the converter's included)."""
    if mode not in ATTENTION_MODES:
        raise SystemExit("unknown attention mode %r (one of %s)" % (mode, ", ".join(ATTENTION_MODES)))
    if mode == "matmul":
        os.environ["EXLLAMA_NO_SDPA"] = "1"
    elif "EXLLAMA_NO_SDPA" in os.environ:
        del os.environ["EXLLAMA_NO_SDPA"]
    stub_missing()
    if mode == "sdpa_fixed":
        patch_sdpa_mask(True)


_original_block_diag_mask = None


def patch_sdpa_mask(enable):
    """sdpa_fixed: Params.get_block_diag_mask returns the lower-right causal mask where 0.3.2
    would return None (no block-diagonal layout), so the SDPA branch attends causally."""
    global _original_block_diag_mask
    from exllamav2 import attn_params
    from torch.nn.attention.bias import causal_lower_right
    params = attn_params.Params
    if _original_block_diag_mask is None:
        _original_block_diag_mask = params.get_block_diag_mask
    if not enable:
        params.get_block_diag_mask = _original_block_diag_mask
        return
    original = _original_block_diag_mask

    def get_block_diag_mask(self, device):
        if self.cu_seqlens is None:
            past = self.past_len or 0
            return causal_lower_right(self.seq_len, past + self.seq_len)
        return original(self, device)

    params.get_block_diag_mask = get_block_diag_mask


def attention_info(config=None):
    """What exllamav2 will use, for the JSON outputs."""
    from exllamav2 import attn
    info = {
        "EXLLAMA_NO_SDPA": "EXLLAMA_NO_SDPA" in os.environ,
        "has_flash_attn": bool(attn.has_flash_attn),
        "has_xformers": bool(attn.has_xformers),
        "has_lower_right_sdpa": bool(attn.has_lower_right_sdpa),
        "sdpa_mask_patched": _original_block_diag_mask is not None
        and attn.ExLlamaV2Attention.Params.get_block_diag_mask is not _original_block_diag_mask,
    }
    if config is not None:
        info["config.no_sdpa"] = bool(config.no_sdpa)
    return info
