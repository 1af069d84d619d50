// backends/writers/otf2 — the OTF2 library's error messages, kept off the
// user's terminal.
//
// OTF2 prints each error it meets on stderr ("[OTF2] src/otf2_archive_int.c:
// 1200: error: ..."), dozens of lines when a disk fills up. While a backend
// calls into OTF2 (an otf2_error_scope is alive on the thread), the library's
// errors go to that backend's sink instead, which keeps the first message and
// counts them, so that the backend says one line for its archive. OTF2's hook
// is process-wide: errors of anyone else's OTF2 calls still reach the handler
// that was installed before, or stderr as OTF2 prints them.
#pragma once

#include <cstdint>
#include <string>

namespace ferret::otf2 {

struct otf2_error_sink {
  std::string first;  // the first message, as OTF2 would have printed it
  std::uint64_t count = 0;
};

/// Routes the OTF2 errors raised on this thread to `sink` while it lives.
class otf2_error_scope {
 public:
  explicit otf2_error_scope(otf2_error_sink& sink) noexcept;
  ~otf2_error_scope();
  otf2_error_scope(const otf2_error_scope&) = delete;
  otf2_error_scope& operator=(const otf2_error_scope&) = delete;

 private:
  otf2_error_sink* saved_;
};

}  // namespace ferret::otf2
