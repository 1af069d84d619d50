// The report backend. See report_backend.hpp.
#include "report_backend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "ferret/runtime/runtime.hpp"
#include "job_data.hpp"
#include "profile_backend.hpp"
#include "report_data.hpp"
#include "report_page.hpp"

namespace ferret::report {
namespace {

// The directory a file would be created in.
std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Why `path` cannot take the report: it exists and is not a regular file (a
// FIFO, a device), which the rename would replace. Empty when it can.
std::string not_replaceable(const std::string& path) {
  struct stat status{};
  if (::stat(path.c_str(), &status) != 0 || S_ISREG(status.st_mode)) return {};
  return S_ISFIFO(status.st_mode) ? "a FIFO, not a regular file" : "not a regular file";
}

// Writes `text` to `path` through `path`.part; "" or why it failed (the
// partial file is removed then).
std::string write_file(const std::string& path, std::string_view text) {
  if (std::string reason = not_replaceable(path); !reason.empty()) return reason;
  const std::string part = path + ".part";
  std::string reason;
  const int fd = runtime::open_output_file(part, reason);
  if (fd < 0) return reason;
  int failure = 0;
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      failure = errno;
      break;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure == 0 && std::rename(part.c_str(), path.c_str()) != 0) failure = errno;
  if (failure != 0) ::unlink(part.c_str());
  return failure != 0 ? std::strerror(failure) : "";
}

class report_backend final : public profile::profile_backend {
 public:
  report_backend(const runtime::session_info& session, std::string path)
      : profile_backend(session), path_(std::move(path)) {}

  std::string describe() const override {
    return written_ ? fmt::format("report: {}", path_)
                    : fmt::format("report: not written ({})", path_);
  }

 private:
  void write(const profile::profile_model& model, const profile::job_profile* job) override {
    const std::string page = report_page(report_data(model), job != nullptr ? job_data(*job) : "null");
    if (const std::string failure = write_file(path_, page); !failure.empty())
      runtime::print_message(fmt::format("cannot write the report to '{}': {}", path_, failure));
    else
      written_ = true;
  }

  bool wants_busiest_tree() const noexcept override { return true; }

  std::string path_;
  bool written_ = false;
};

}  // namespace

std::unique_ptr<runtime::backend> make_backend(const runtime::backend_context& context,
                                               std::string& error) {
  if (context.session == nullptr) {
    error = fmt::format("cannot write the report to '{}': no session", context.output);
    return nullptr;
  }
  std::string path = runtime::output_file(context, ".html");
  // Written only at exit: say now, not then, when it cannot be.
  if (::access(directory_of(path).c_str(), W_OK | X_OK) != 0) {
    error = fmt::format("cannot write the report to '{}': {}", path, std::strerror(errno));
    return nullptr;
  }
  if (const std::string reason = not_replaceable(path); !reason.empty()) {
    error = fmt::format("cannot write the report to '{}': {}", path, reason);
    return nullptr;
  }
  return std::make_unique<report_backend>(*context.session, std::move(path));
}

FERRET_REGISTER_BACKEND("report", "one self-contained HTML report at exit (<output>.html)",
                        make_backend);

}  // namespace ferret::report
