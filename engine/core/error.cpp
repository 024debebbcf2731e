#include "engine/core/error.h"

namespace hearth {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidFile: return "invalid file";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kBackend: return "backend error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

}  // namespace hearth

#include "engine/core/cancel.h"

namespace hearth {
void CancelToken::throw_if_cancelled() const {
  if (cancelled()) fail(ErrorCode::kCancelled, "cancelled");
}
}  // namespace hearth
