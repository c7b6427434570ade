// Status: the error value every data and I/O path returns (leveldb's habit).
//
// A non-OK Status carries a code and a message that already names the file,
// the record or byte offset, and the reason, so callers can print it as is.
// Library code never exits; the serial end of a pipeline decides whether a
// non-OK status stops the run or is counted and skipped.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace sluice {

class Status {
 public:
  enum class Code { kOk = 0, kNotFound, kCorruption, kInvalidArgument, kIOError, kUnsupported };

  Status() = default;
  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Unsupported(std::string msg) { return Status(Code::kUnsupported, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsUnsupported() const { return code_ == Code::kUnsupported; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }

  // "Corruption: shard-00003.sluice: block 7 at offset 1048576: checksum mismatch"
  std::string ToString() const {
    switch (code_) {
      case Code::kOk: return "OK";
      case Code::kNotFound: return "NotFound: " + msg_;
      case Code::kCorruption: return "Corruption: " + msg_;
      case Code::kInvalidArgument: return "InvalidArgument: " + msg_;
      case Code::kIOError: return "IOError: " + msg_;
      case Code::kUnsupported: return "Unsupported: " + msg_;
    }
    return msg_;
  }

 private:
  friend Status Prefixed(const Status& s, std::string_view context);
  Status(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

// `s` with "context: " before its message and the same code; an OK status stays OK. The one way
// to say where an error happened (file, record, option) as it travels up, so a caller that checks
// IsNotFound() or IsCorruption() still can: rebuilding a Status from message() picks a code anew
// and loses the one the callee chose.
inline Status Prefixed(const Status& s, std::string_view context) {
  if (s.ok()) return s;
  std::string m;
  m.reserve(context.size() + 2 + s.message().size());
  m.append(context).append(": ").append(s.message());
  return Status(s.code(), std::move(m));
}

}  // namespace sluice

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define SLUICE_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::sluice::Status _sluice_st = (expr);     \
    if (!_sluice_st.ok()) return _sluice_st;  \
  } while (0)
