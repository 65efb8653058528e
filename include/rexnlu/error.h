// Errors thrown by rexnlu. Every error names what is wrong; the kind tells a caller
// (the CLI, the HTTP service) how to report it.
#pragma once

#include <stdexcept>
#include <string>

namespace rexnlu {

enum class ErrorKind {
  kInvalidModel,  // model directory, config, vocab or weight file is missing, corrupt or inconsistent
  kInvalidInput,  // a request's text, schema or options are malformed
  kLimitExceeded, // a request is valid but exceeds one of the engine's Limits (size or work)
  kCancelled,     // a request's deadline passed or the caller cancelled it before it finished
  kIo,            // a file could not be opened or read
  kInternal,      // a bug: an invariant of rexnlu itself was broken
  kOutOfMemory,   // the device (GPU or host) had no memory for this forward pass; smaller work may pass
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// Shorthands that read well at the throw site: throw ModelError("config.json: ...").
inline Error ModelError(const std::string& message) { return Error(ErrorKind::kInvalidModel, message); }
inline Error InputError(const std::string& message) { return Error(ErrorKind::kInvalidInput, message); }
inline Error LimitError(const std::string& message) { return Error(ErrorKind::kLimitExceeded, message); }
inline Error IoError(const std::string& message) { return Error(ErrorKind::kIo, message); }
inline Error InternalError(const std::string& message) { return Error(ErrorKind::kInternal, message); }

}  // namespace rexnlu
