// See otf2_errors.hpp.
#include "otf2_errors.hpp"

#include <otf2/otf2.h>

#include <cstdarg>
#include <cstdio>

#include "ferret/config.hpp"

namespace ferret::otf2 {
namespace {

// Initial-exec, as ferret's other TLS in shared objects: this library is
// loaded with dlopen (FERRET_BACKEND=otf2), where the default model makes
// glibc malloc a block for the variable on each thread's first use. GCC 12's
// LeakSanitizer takes such a block that lands 16 bytes into a page for a
// pre-2.25 glibc block and scans a wild range at exit, crashing its tracer
// (google/sanitizers#1322); the exit drain, on the main thread, made one.
FERRET_TLS_MODEL thread_local otf2_error_sink* t_sink = nullptr;

OTF2_ErrorCallback g_previous = nullptr;

OTF2_ErrorCode on_error(void*, const char* file, uint64_t line, const char* function,
                        OTF2_ErrorCode code, const char* format, va_list arguments) {
  otf2_error_sink* sink = t_sink;
  if (sink == nullptr) {
    if (g_previous != nullptr)
      return g_previous(nullptr, file, line, function, code, format, arguments);
    std::fprintf(stderr, "[OTF2] %s:%llu: error: %s: ", file, static_cast<unsigned long long>(line),
                 OTF2_Error_GetDescription(code));
    std::vfprintf(stderr, format, arguments);
    std::fputc('\n', stderr);
    return code;
  }
  if (sink->count++ == 0) {
    char text[512];
    std::vsnprintf(text, sizeof text, format != nullptr ? format : "", arguments);
    sink->first = std::string{OTF2_Error_GetDescription(code)} + (text[0] != '\0' ? ": " : "") + text;
  }
  return code;
}

}  // namespace

otf2_error_scope::otf2_error_scope(otf2_error_sink& sink) noexcept : saved_(t_sink) {
  // OTF2 returns the previous handler but not its data: such a handler (none
  // by default, when OTF2 prints itself) gets nullptr.
  static const bool installed = [] {
    g_previous = OTF2_Error_RegisterCallback(on_error, nullptr);
    return true;
  }();
  static_cast<void>(installed);
  t_sink = &sink;
}

otf2_error_scope::~otf2_error_scope() { t_sink = saved_; }

}  // namespace ferret::otf2
