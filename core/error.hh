// fzg's one error type: a code a program can switch on and a message a person can read.
#pragma once
#include <stdexcept>
#include <string>

namespace fzg {

enum class ErrorCode {
  invalid_argument,  // a parameter out of range, wrong dims, bad CLI input
  invalid_config,    // a graph or stage parameter that does not validate
  corrupt_data,      // a file that is truncated, damaged or not an fzg file
  unsupported,       // a valid request this build cannot serve (unknown version, no CUDA)
  io,                // the operating system refused a read or write
  cuda,              // a CUDA runtime call failed
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] void fail(ErrorCode code, const std::string& message);

// Checks a condition that only corrupt input can break.
inline void require_data(bool ok, const char* what) {
  if (!ok) fail(ErrorCode::corrupt_data, std::string("corrupt or truncated data: ") + what);
}

}  // namespace fzg
