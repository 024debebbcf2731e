// Writes the quantizer tests' tiny synthetic Llama as a Hugging Face folder (fp16 safetensors,
// byte-level tokenizer), for the wizard's screenshot test: tiny_model_writer FOLDER [LAYERS]
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tests/unit/quantizer/quantizer_test_model.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s FOLDER [LAYERS]\n", argv[0]);
    return 2;
  }
  hearth::quantizer::test::TinySpec spec;
  spec.tied = false;  // its own head: logits of a sensible scale
  if (argc == 3) spec.layers = std::atoi(argv[2]);
  try {
    hearth::quantizer::test::write_tiny_model(argv[1], spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
