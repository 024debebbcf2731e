#include "engine/model/key_offsets.h"

#include <algorithm>
#include <numeric>

#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"
#include "engine/model/rope.h"

namespace hearth {

namespace {

// A dim keeps its mean when RoPE turns it by at most this angle (radians) over the context:
// then the mean, wherever in the context it was measured, is never further from a key's common
// part than the common part itself is from zero (|1 − e^{iθ}| ≤ 1 for θ ≤ π/3).
constexpr double kMaxTurn = 1.0;

}  // namespace

std::string_view key_offset_text() {
  return R"(The workshop at the end of the lane opens at seven, when the first delivery of timber
arrives. Before noon the carpenters have usually cut the boards for two tables and a bookshelf;
after lunch they glue, clamp and sand, and by evening the smell of linseed oil fills the room.
Visitors often ask how long a chair takes to make. The honest answer is that it depends on the
wood, the joints and the weather: oak moves as the air dries, so a careful maker waits.

def moving_average(values, window):
    """Return the mean of each run of `window` consecutive values."""
    if window <= 0:
        raise ValueError("window must be positive")
    totals = []
    running = 0.0
    for i, value in enumerate(values):
        running += value
        if i >= window:
            running -= values[i - window]
        if i + 1 >= window:
            totals.append(running / window)
    return totals

User: Can you explain what a hash table is, in two sentences?
Assistant: A hash table stores values under keys and finds them again by turning each key into a
number that points to a slot in an array. Lookups, insertions and deletions take about the same
short time however many items it holds, as long as the table is not too full.

In 1854 the physician John Snow mapped the cholera cases around Broad Street in London and
noticed that they clustered around one public water pump. When the pump handle was removed, the
outbreak slowed. His map is still shown to students as an early example of how careful
measurement can settle a question that argument alone could not.

Les marchés du samedi matin rassemblent des producteurs de toute la région : fromages, pain,
légumes de saison. Am Nachmittag wird es ruhiger, und die Händler packen ihre Stände zusammen.
)";
}

int64_t key_offset_tokens(DeviceKind device) {
  return device == DeviceKind::kCpu ? 128 : 512;
}

std::vector<float> key_offsets_from_means(const LlamaModel& model,
                                          std::vector<float> rotated_means) {
  const ModelConfig& c = model.config();
  const int64_t D = c.head_dim;
  const int64_t rotary = c.rotary_dim();
  HEARTH_CHECK(rotated_means.size() == static_cast<size_t>(c.num_layers * c.num_kv_heads * D),
               "key_offsets_from_means: wrong size");
  const RopeFrequencies rope = compute_rope_frequencies(c, model.options().max_seq_len);
  // Rotate-half layout: dims i and i + rotary/2 turn together at inv_freq[i].
  std::vector<bool> keep(static_cast<size_t>(D), true);
  for (int64_t d = 0; d < rotary; ++d) {
    const double turn = static_cast<double>(rope.inv_freq[static_cast<size_t>(d % (rotary / 2))]) *
                        static_cast<double>(model.options().max_seq_len);
    keep[static_cast<size_t>(d)] = turn <= kMaxTurn;
  }
  for (size_t at = 0; at < rotated_means.size(); at += static_cast<size_t>(D)) {
    float* mean = rotated_means.data() + at;
    hadamard_rotate(mean, D);  // H is its own inverse: back to the model's dims
    for (int64_t d = 0; d < D; ++d) {
      if (!keep[static_cast<size_t>(d)]) mean[d] = 0.0f;
    }
    hadamard_rotate(mean, D);
  }
  return rotated_means;
}

void calibrate_key_offsets(LlamaModel& model, KvCacheStorage& cache, const Tokenizer& tokenizer,
                           int64_t max_tokens) {
  if (!cache.offsets_keys()) return;
  const KvCacheSpec& spec = cache.spec();
  std::vector<int32_t> tokens = tokenizer.encode(key_offset_text(), true);
  const int64_t n = std::min({static_cast<int64_t>(tokens.size()), max_tokens,
                              model.options().max_seq_len, spec.num_pages * spec.page_size});
  if (n < 2) return;
  tokens.resize(static_cast<size_t>(n));
  std::vector<int32_t> pages(static_cast<size_t>((n + spec.page_size - 1) / spec.page_size));
  std::iota(pages.begin(), pages.end(), 0);
  cache.set_key_offsets(
      std::vector<float>(static_cast<size_t>(spec.num_layers * spec.num_kv_heads * spec.head_dim)));
  for (int64_t done = 0; done < n;) {
    const int64_t count = std::min(n - done, model.options().max_batch_tokens);
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(done),
                                                        static_cast<size_t>(count));
    s.start_pos = static_cast<int32_t>(done);
    s.page_table = pages;
    batch.seqs.push_back(s);
    model.forward(batch, cache);
    done += count;
  }
  cache.set_key_offsets(key_offsets_from_means(model, cache.mean_keys(pages, 1, n)));
}

}  // namespace hearth
