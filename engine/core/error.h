// Errors raised by the engine. Every failure that a user can cause (bad file, bad option, not
// enough memory) is an hearth::Error with a code and a message that names what was wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace hearth {

enum class ErrorCode {
  kInvalidArgument,  // a caller passed a bad value (option, request field)
  kInvalidFile,      // a model, tokenizer or config file is malformed or hostile
  kUnsupported,      // well-formed but not something Hearth runs (architecture, dtype, ...)
  kOutOfMemory,      // host or device memory would not suffice
  kIo,               // the operating system refused a read/write/map
  kCancelled,        // the caller cancelled the operation
  kBackend,          // a device runtime (CUDA) reported an error
  kInternal,         // a broken invariant inside Hearth
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] void fail(ErrorCode code, const std::string& message);

// Throws kInternal when an invariant does not hold; used for programming errors only.
#define HEARTH_CHECK(cond, msg)                                                       \
  do {                                                                                \
    if (!(cond)) ::hearth::fail(::hearth::ErrorCode::kInternal,                       \
                                std::string(__FILE__ ":") + std::to_string(__LINE__) + \
                                    ": check failed: " #cond ": " + (msg));           \
  } while (0)

}  // namespace hearth
