// Tensor names and layouts of llama-architecture GGUF files versus Hugging Face checkpoints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/host_tensor.h"

namespace hearth {

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight", "token_embd.weight" ->
// "model.embed_tokens.weight", "output.weight" -> "lm_head.weight", ...; nullopt for names
// without a Hugging Face counterpart.
std::optional<std::string> gguf_to_hf_name(std::string_view gguf_name);

// Which rotary permutation a GGUF tensor carries: q_proj rows are permuted per attention head,
// k_proj rows per key/value head.
enum class RopePermutation { kNone, kQuery, kKey };
RopePermutation rope_permutation_of(std::string_view gguf_name);

// llama.cpp's HF->GGUF converter reorders the rows of each head of q_proj/k_proj (weights and
// biases) from rotate-half order [x_0 .. x_{d/2-1}, y_0 .. y_{d/2-1}] to interleaved order
// [x_0, y_0, x_1, y_1, ...] so that ggml's "normal" RoPE, which rotates adjacent pairs, applies.
// This undoes it: HF row h*d + half*d/2 + i <- GGUF row h*d + 2*i + half. `t` is F32 with
// shape [n_heads * d] or [n_heads * d, cols]; Error(kInvalidFile) when the rows do not split
// into n_heads heads of even size.
HostTensor unpermute_rope_rows(const HostTensor& t, int64_t n_heads, const std::string& what);

}  // namespace hearth
