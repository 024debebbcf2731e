// Streaming reader of a safetensors JSON header (internal to engine/io). It builds the tensor
// records directly from parser events, so memory stays proportional to what the header
// declares (a few bytes per header byte) and time linear, even for a 100 MB hostile header.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/safetensors.h"

namespace hearth {

struct SafetensorsHeader {
  std::vector<SafetensorsTensor> tensors;  // in header order; each checked on its own
  std::map<std::string, std::string> metadata;
};

// Checks the JSON and every entry as the reference implementation does: an object whose
// "__metadata__" (optional, may be null) maps strings to strings, and whose other members are
// tensors {dtype: known name, shape: [non-negative integers], data_offsets: [begin, end]} with
// end - begin equal to the (overflow-checked) byte size of the shape. Unknown fields of a
// tensor are ignored, as the reference does. Duplicate keys are refused. `file` names the file
// in messages; byte offsets are file offsets (the JSON starts at `base_offset`).
SafetensorsHeader read_safetensors_header(std::string_view json, const std::string& file,
                                          uint64_t base_offset);

}  // namespace hearth
