#include "core/error.hh"

namespace fzg {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::invalid_config: return "invalid config";
    case ErrorCode::corrupt_data: return "corrupt data";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::io: return "i/o error";
    case ErrorCode::cuda: return "cuda error";
  }
  return "error";
}

void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

}  // namespace fzg
