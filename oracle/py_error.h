// A Python exception the mirrored source would raise: its class name and str(e), character for character.
#pragma once

#include <stdexcept>
#include <string>

namespace rpa {

class PyError : public std::runtime_error {
 public:
  PyError(std::string cls, std::string message)
      : std::runtime_error(cls + ": " + message), cls_(std::move(cls)), message_(std::move(message)) {}
  const std::string& cls() const { return cls_; }          // "ValueError", "AssertionError", ...
  const std::string& message() const { return message_; }  // exactly str(e)

 private:
  std::string cls_;
  std::string message_;
};

}  // namespace rpa
