// The deferred backend (ferret/runtime/deferred_backend.hpp): what it holds
// before the process group arrives reaches the real backend in order, with its
// own copies of what the runtime handed over; over the bound, events are
// dropped and counted; without a group it opens at the final flush.
#include <ferret/runtime/deferred_backend.hpp>
#include <ferret/runtime/runtime.hpp>

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace rt = ferret::runtime;

// Writes down every call as one line.
class journal_backend final : public rt::backend {
 public:
  explicit journal_backend(std::vector<std::string>& journal) : journal_(journal) {}
  void thread_records(const rt::thread_info& thread, const rt::record* records,
                      std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i)
      journal_.push_back("record " + std::string{thread.name} + " " + records[i].name->name + " " +
                         std::to_string(records[i].time_ns));
  }
  void data_object(const rt::data_object_event& event) override {
    journal_.push_back("object " + event.object->name);
  }
  void gpu_device(const rt::gpu_device_info& device) override {
    journal_.push_back("device " + device.name);
  }
  void gpu_activities(const rt::gpu_activity* activities, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i)
      journal_.push_back(std::string{"kernel "} + activities[i].name + " from " +
                         (activities[i].source_object != nullptr
                              ? activities[i].source_object->name
                              : std::string{"-"}));
  }
  void gpu_sampled_metrics(const rt::gpu_metric_set& set) override {
    journal_.push_back("metrics " + std::to_string(set.device) + " " + set.metrics.at(0).name);
  }
  void gpu_metric_intervals(const rt::gpu_metric_interval* intervals, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i)
      journal_.push_back("interval " + std::to_string(intervals[i].device) + " " +
                         std::to_string(intervals[i].begin_ns) + " " +
                         std::to_string(intervals[i].values[0]) + " " +
                         std::to_string(intervals[i].values[1]));
  }
  void flush(const rt::session_status& status) override {
    std::string line = "flush dropped=" + std::to_string(status.events_dropped);
    if (status.runtime_metadata != nullptr)
      for (const auto& [key, value] : *status.runtime_metadata)
        if (key == "events-dropped-before-process-group")
          line += " held-dropped=" + std::to_string(std::get<std::int64_t>(value));
    journal_.push_back(line + (status.final ? " final" : ""));
  }
  void abandon() noexcept override {}
  std::string describe() const override { return "journal"; }

 private:
  std::vector<std::string>& journal_;
};

class one_process final : public rt::process_group {
 public:
  std::string_view paradigm() const noexcept override { return "test"; }
  std::uint32_t rank() const noexcept override { return 0; }
  std::uint32_t size() const noexcept override { return 1; }
  bool collectives_available() const noexcept override { return true; }
  bool barrier() override { return true; }
  bool broadcast(void*, std::size_t, std::uint32_t) override { return true; }
  bool gather(const void*, std::size_t, void*, std::uint32_t) override { return true; }
  bool gatherv(const void*, std::size_t, void*, const std::size_t*, std::uint32_t) override {
    return true;
  }
  bool scatter(const void*, void*, std::size_t, std::uint32_t) override { return true; }
  bool scatterv(const void*, const std::size_t*, void*, std::size_t, std::uint32_t) override {
    return true;
  }
};

// What this process writes on stderr (fd 2, where the runtime's messages go)
// while it lives.
class stderr_capture {
 public:
  stderr_capture() : file_(std::tmpfile()), saved_(::dup(STDERR_FILENO)) {
    REQUIRE(file_ != nullptr);
    REQUIRE(saved_ >= 0);
    std::fflush(stderr);
    ::dup2(fileno(file_), STDERR_FILENO);
  }
  ~stderr_capture() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    std::fclose(file_);
  }
  stderr_capture(const stderr_capture&) = delete;
  stderr_capture& operator=(const stderr_capture&) = delete;
  std::string text() const {
    std::fflush(stderr);
    std::string written;
    char chunk[512];
    for (off_t at = 0;;) {
      const ssize_t got = ::pread(fileno(file_), chunk, sizeof chunk, at);
      if (got <= 0) return written;
      written.append(chunk, static_cast<std::size_t>(got));
      at += got;
    }
  }

 private:
  std::FILE* file_;
  int saved_;
};

struct fixture {
  std::vector<std::string> journal;
  rt::process_group* opened_with = nullptr;
  int opened = 0;
  std::unique_ptr<rt::backend> make(std::size_t bound) {
    return rt::make_deferred_backend(
        [this](rt::process_group* group, std::string&) -> std::unique_ptr<rt::backend> {
          opened_with = group;
          ++opened;
          return std::make_unique<journal_backend>(journal);
        },
        "waiting", bound);
  }
};

const rt::name_info solve{0, "solve", "", "", "heat.cpp", 10};
const rt::name_info sweep{1, "sweep", "", "", "heat.cpp", 20};

// Hands over records, an object and a kernel whose strings and objects die
// after the call, as the runtime's scratch buffers do.
void deliver_before_group(rt::backend& out) {
  {
    std::string thread_name = "main";
    std::vector<rt::record> records{
        {5, rt::record_kind::region_begin, rt::region_close::by_program, &solve, 0.0},
        {6, rt::record_kind::region_begin, rt::region_close::by_program, &sweep, 0.0}};
    out.thread_records({7, 7, thread_name, true}, records.data(), records.size());
    thread_name = "XXXX";
    records[0].time_ns = -1;
  }
  {
    rt::data_object_info object{3, "grid", 0x1000, 64, rt::memory_kind::host, -1};
    out.data_object({7, rt::data_object_change::registered, 7, &object});
    object.name = "gone";
  }
  out.gpu_device(rt::gpu_device_info{0, "GPU", 9, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  {
    std::string kernel = "stencil";
    rt::data_object_info source{4, "input", 0x2000, 64, rt::memory_kind::device, 0};
    rt::gpu_activity activity{};
    activity.operation = rt::gpu_operation::kernel;
    activity.name = kernel.c_str();
    activity.source_object = &source;
    out.gpu_activities(&activity, 1);
    kernel = "XXXXXXX";
    source.name = "gone";
  }
}

}  // namespace

TEST_CASE("held calls reach the backend opened with the group, in order, then pass through") {
  fixture f;
  std::unique_ptr<rt::backend> out = f.make(100);
  deliver_before_group(*out);
  out->flush({nullptr, nullptr, 4, 0, false});  // a drain before MPI_Init: nothing to open
  CHECK(f.opened == 0);
  CHECK(out->describe() == "waiting");
  one_process group;
  out->join_process_group(group);
  CHECK(f.opened == 1);
  CHECK(f.opened_with == &group);
  CHECK(f.journal == std::vector<std::string>{"record main solve 5", "record main sweep 6",
                                              "object grid", "device GPU",
                                              "kernel stencil from input"});
  f.journal.clear();
  const rt::record end{9, rt::record_kind::region_end, rt::region_close::by_program, &sweep, 0.0};
  out->thread_records({7, 7, "main", true}, &end, 1);
  out->flush({nullptr, nullptr, 5, 0, true});
  CHECK(f.journal == std::vector<std::string>{"record main sweep 9", "flush dropped=0 final"});
  CHECK(out->describe() == "journal");
}

TEST_CASE("over the bound, held events are dropped and counted in every later flush") {
  fixture f;
  std::unique_ptr<rt::backend> out = f.make(3);
  deliver_before_group(*out);  // 2 records and the object fit, the kernel does not
  one_process group;
  out->join_process_group(group);
  CHECK(f.journal.size() == 4);
  CHECK(f.journal.back() == "device GPU");
  out->flush({nullptr, nullptr, 5, 2, false});
  CHECK(f.journal.back() == "flush dropped=3 held-dropped=1");
}

TEST_CASE("over the bound, a region's end goes where its begin went: held records still nest") {
  fixture f;
  std::unique_ptr<rt::backend> out = f.make(2);
  const auto record = [](std::int64_t ns, rt::record_kind kind, const rt::name_info* name) {
    return rt::record{ns, kind, rt::region_close::by_program, name, 0.0};
  };
  using kind = rt::record_kind;
  // solve is held, sweep (over the bound) dropped: sweep's end is dropped,
  // solve's end held although the bound is passed by then.
  const std::vector<rt::record> records{record(1, kind::region_begin, &solve),
                                        record(2, kind::mark, &solve),
                                        record(3, kind::region_begin, &sweep),
                                        record(4, kind::region_end, &sweep),
                                        record(5, kind::region_end, &solve)};
  out->thread_records({7, 7, "main", true}, records.data(), records.size());
  one_process group;
  out->join_process_group(group);
  CHECK(f.journal == std::vector<std::string>{"record main solve 1", "record main solve 2",
                                              "record main solve 5"});
  out->flush({nullptr, nullptr, 5, 0, true});
  CHECK(f.journal.back() == "flush dropped=2 held-dropped=2 final");
}

TEST_CASE("without a group the backend opens at the final flush, per process") {
  fixture f;
  std::unique_ptr<rt::backend> out = f.make(100);
  deliver_before_group(*out);
  out->flush({nullptr, nullptr, 5, 0, true});
  CHECK(f.opened == 1);
  CHECK(f.opened_with == nullptr);
  CHECK(f.journal.size() == 6);
  CHECK(f.journal.back() == "flush dropped=0 final");
}

TEST_CASE("a backend that fails to open says so once, drops what was held and is not retried") {
  int attempts = 0;
  std::vector<std::string> journal;
  std::unique_ptr<rt::backend> out = rt::make_deferred_backend(
      [&](rt::process_group*, std::string& error) -> std::unique_ptr<rt::backend> {
        if (++attempts == 1) {
          error = "deferred test backend: refused on purpose";
          return nullptr;
        }
        return std::make_unique<journal_backend>(journal);  // a second try would succeed
      },
      "waiting", 10);
  deliver_before_group(*out);
  const stderr_capture printed;
  out->flush({nullptr, nullptr, 5, 0, false});  // no group yet: not opened
  out->flush({nullptr, nullptr, 5, 0, true});   // opens, is refused
  one_process group;
  out->join_process_group(group);
  deliver_before_group(*out);
  out->flush({nullptr, nullptr, 6, 0, true});
  CHECK(printed.text() == "ferret: deferred test backend: refused on purpose\n");
  CHECK(attempts == 1);
  CHECK(journal.empty());  // neither what was held nor what came later reaches a backend
  CHECK(out->describe() == "waiting");
}

TEST_CASE("sampled counters are held with their own copies of the values, intervals under the bound") {
  fixture f;
  std::unique_ptr<rt::backend> out = f.make(2);
  const rt::gpu_metric_set set{1, {{"nvlrx__bytes.sum", "NVLink bytes received", "bytes", true},
                                   {"pcie__read_bytes.sum", "PCIe bytes read", "bytes", true}},
                               1'000'000};
  out->gpu_sampled_metrics(set);
  {
    std::vector<double> values{1, 2, 3, 4, 5, 6};
    const rt::gpu_metric_interval intervals[] = {{1, 10, 20, values.data()},
                                                 {1, 20, 30, values.data() + 2},
                                                 {1, 30, 40, values.data() + 4}};
    out->gpu_metric_intervals(intervals, 3);  // the third is over the bound
    values.assign(values.size(), -1.0);       // valid for the call only
  }
  one_process group;
  out->join_process_group(group);
  CHECK(f.journal == std::vector<std::string>{"metrics 1 nvlrx__bytes.sum",
                                              "interval 1 10 1.000000 2.000000",
                                              "interval 1 20 3.000000 4.000000"});
  out->flush({nullptr, nullptr, 0, 0, false});
  CHECK(f.journal.back() == "flush dropped=1 held-dropped=1");
}
