// See otf2_errors.hpp.
#include "otf2_errors.hpp"

#include <otf2/otf2.h>

#include <cstdarg>
#include <cstdio>

namespace ferret::otf2 {
namespace {

thread_local otf2_error_sink* t_sink = nullptr;

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
