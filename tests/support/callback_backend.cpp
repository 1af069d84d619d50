// libferret_callback_probe.so: a backend whose library calls back into the
// runtime while it loads, as the CUDA collector's does (session_active() from
// its initialiser). FERRET_BACKEND=callback_probe loads it by name while the
// runtime starts: the start must hold no lock that the call waits for (it
// used to hang there for ever). At exit it writes <output>.probe: how many
// records it received and what session_active() answered while loading.
#include <cstdio>
#include <memory>
#include <string>

#include "ferret/runtime/backend.hpp"
#include "ferret/runtime/runtime.hpp"

namespace {

class callback_probe final : public ferret::runtime::backend {
 public:
  explicit callback_probe(std::string path) : path_{std::move(path)} {}
  void thread_records(const ferret::runtime::thread_info&, const ferret::runtime::record*,
                      std::size_t count) override {
    records_ += count;
  }
  void data_object(const ferret::runtime::data_object_event&) override {}
  void flush(const ferret::runtime::session_status& status) override;
  void abandon() noexcept override {}
  std::string describe() const override { return "callback probe: " + path_; }

 private:
  std::string path_;
  std::size_t records_ = 0;
};

std::unique_ptr<ferret::runtime::backend> make(const ferret::runtime::backend_context& context,
                                               std::string&) {
  return std::make_unique<callback_probe>(ferret::runtime::output_file(context, ".probe"));
}

}  // namespace

FERRET_REGISTER_BACKEND("callback_probe", "calls back into the runtime while it loads (tests)", make);

namespace {

// After the registration above: the order of a file's initialisers.
const bool session_active_at_load = ferret::runtime::session_active();
const int verbosity_at_load = ferret::runtime::verbosity();

void callback_probe::flush(const ferret::runtime::session_status& status) {
  if (!status.final) return;
  if (std::FILE* out = std::fopen(path_.c_str(), "w")) {
    std::fprintf(out, "records %zu, session active at load %d, verbosity at load %d\n", records_,
                 session_active_at_load ? 1 : 0, verbosity_at_load);
    std::fclose(out);
  }
}

}  // namespace
