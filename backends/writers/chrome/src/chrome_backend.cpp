// The Chrome Trace Event JSON backend. See chrome_backend.hpp for the layout.
//
// Output goes through a plain fd and our own buffer rather than FILE* or
// iostreams: a fork() child must be able to drop everything (abandon()) without
// a library flushing buffered bytes into the parent's file behind our back.
#include "chrome_backend.hpp"
#include "decimal.hpp"
#include "exit_guard.hpp"
#include "gpu_device_initiated.hpp"
#include "gpu_source_lines.hpp"
#include "link_attribution.hpp"
#include "ferret/runtime/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace ferret::chrome {
namespace {

using runtime::context_node;
using runtime::data_object_change;
using runtime::data_object_event;
using runtime::gpu_activity;
using runtime::gpu_operation;
using runtime::memory_kind;
using runtime::name_info;
using runtime::record;
using runtime::record_kind;
using runtime::session_info;
using runtime::session_status;
using runtime::thread_info;

// Events are written to the file in batches of about this size: write(2)
// calls stay rare, and the buffer stays in the CPU's cache.
constexpr std::size_t batch_bytes = std::size_t{256} << 10;

// Room kept after a full batch, so that the event that fills it never
// reallocates (only names longer than this make the buffer grow).
constexpr std::size_t batch_slack = std::size_t{16} << 10;

// Perfetto's slice tracker keeps at most this many nested slices per track
// and drops deeper ones; the trace counts the regions it will drop.
constexpr std::size_t perfetto_max_depth = 512;

// Appends `ns` in microseconds with exactly three decimals (the rare events'
// path; regions, marks and counters write into the byte buffer directly).
void append_us(std::string& out, std::int64_t ns) {
  char digits[max_number_bytes];
  out.append(digits, write_microseconds(digits, ns));
}

// The events of one batch, written through a cursor into a buffer that is
// reused from batch to batch: no std::string and no allocation per event.
class byte_buffer {
 public:
  byte_buffer() : storage_(std::make_unique<char[]>(batch_bytes + batch_slack)) {
    cursor_ = storage_.get();
    end_ = cursor_ + batch_bytes + batch_slack;
  }

  char* cursor() const noexcept { return cursor_; }
  void advance_to(char* end) noexcept { cursor_ = end; }
  const char* data() const noexcept { return storage_.get(); }
  std::size_t size() const noexcept { return static_cast<std::size_t>(cursor_ - storage_.get()); }
  void clear() noexcept { cursor_ = storage_.get(); }

  /// Makes sure `bytes` more fit after the cursor.
  void reserve(std::size_t bytes) {
    if (static_cast<std::size_t>(end_ - cursor_) >= bytes) return;
    const std::size_t used = size();
    // Doubling: a batch grows as large as the trailer (see write_threshold_).
    const std::size_t capacity =
        std::max(used + bytes + batch_slack, 2 * static_cast<std::size_t>(end_ - storage_.get()));
    auto grown = std::make_unique<char[]>(capacity);
    std::memcpy(grown.get(), storage_.get(), used);
    storage_ = std::move(grown);
    cursor_ = storage_.get() + used;
    end_ = storage_.get() + capacity;
  }

  void append(std::string_view bytes) {
    reserve(bytes.size());
    std::memcpy(cursor_, bytes.data(), bytes.size());
    cursor_ += bytes.size();
  }

  void release() noexcept {
    storage_.reset();
    cursor_ = end_ = nullptr;
  }

 private:
  std::unique_ptr<char[]> storage_;
  char* cursor_ = nullptr;
  char* end_ = nullptr;
};

// Copies a preformatted piece to `out`; returns the end.
char* put(char* out, std::string_view piece) noexcept {
  std::memcpy(out, piece.data(), piece.size());
  return out + piece.size();
}

// ISO-8601 UTC with microseconds, e.g. "2024-05-01T12:34:56.789012Z" (quoted).
void append_iso8601(std::string& out, std::int64_t realtime_ns) {
  constexpr std::int64_t ns_per_s = 1'000'000'000;
  std::int64_t seconds = realtime_ns / ns_per_s;
  std::int64_t fraction = realtime_ns % ns_per_s;
  if (fraction < 0) {  // floor division for instants before 1970
    fraction += ns_per_s;
    --seconds;
  }
  const auto time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  if (gmtime_r(&time, &utc) == nullptr) {
    append_json_string(out, "unknown");
    return;
  }
  fmt::format_to(std::back_inserter(out), "\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z\"",
                 utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                 utc.tm_sec, fraction / 1000);
}

void append_value(std::string& out, const runtime::metadata_value& value) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    append_json_string(out, *text);
  } else if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    fmt::format_to(std::back_inserter(out), "{}", *integer);
  } else if (const auto* large = std::get_if<std::uint64_t>(&value)) {
    fmt::format_to(std::back_inserter(out), "{}", *large);
  } else {
    const double number = std::get<double>(value);
    // JSON has no NaN or infinity; a string keeps the document valid.
    if (std::isnan(number))
      out.append("\"nan\"");
    else if (std::isinf(number))
      out.append(number > 0 ? "\"inf\"" : "\"-inf\"");
    else
      fmt::format_to(std::back_inserter(out), "{}", number);  // shortest round-trip form
  }
}

void append_key(std::string& out, std::string_view key) {
  append_json_string(out, key);
  out.push_back(':');
}

struct frame {
  const name_info* name;
  std::int64_t begin_ns;
};

// A region that begins when its parent does ("held") must follow the parent
// in the file: Perfetto nests complete events of equal ts in file order (older
// importers always, current ones when their durations are equal too), while
// this writer learns of a region at its end, before its parent's. So a held
// region has a slot in its thread's `held` list from its begin, and the slots
// are written after their owner, the innermost open region that is not held,
// in begin order: parent first.
struct held_region {
  const name_info* name;
  std::int64_t begin_ns;
  std::int64_t end_ns;
  std::size_t owner_depth;  // the owner's depth (1: outermost)
  runtime::region_close closed;
};

// An open held region (rare, so kept beside the stack rather than in every frame).
struct open_held {
  std::size_t depth;  // its depth (1: outermost)
  std::size_t slot;   // in `held`
};

// Text copied into every event of its kind, stored so that it can be copied
// in whole 16-byte blocks without a call to memcpy: the storage is padded to
// a multiple of 16, and to at least 64 bytes so that the usual prefix (up to
// 64 bytes) is four unconditional copies. The output buffer has room for the
// overshoot.
class block_text {
 public:
  void assign(std::string_view text) {
    size_ = text.size();
    storage_ = std::make_unique<char[]>(std::max<std::size_t>((size_ + 15) / 16 * 16, 64));
    std::memcpy(storage_.get(), text.data(), size_);
  }
  std::size_t size() const noexcept { return size_; }

  // Copies the text to `out`, writing up to 63 bytes past it; returns the end.
  char* copy_to(char* out) const noexcept {
    const char* in = storage_.get();
    std::memcpy(out, in, 16);
    std::memcpy(out + 16, in + 16, 16);
    std::memcpy(out + 32, in + 32, 16);
    std::memcpy(out + 48, in + 48, 16);
    for (std::size_t k = 64; k < size_; k += 16) std::memcpy(out + k, in + k, 16);
    return out + size_;
  }

 private:
  std::unique_ptr<char[]> storage_;
  std::size_t size_ = 0;
};

// The start of a thread's complete events of one name, up to the timestamp.
struct complete_prefix {
  const name_info* source = nullptr;
  block_text text;  // {"ph":"X","name":"...","pid":P,"tid":T,"ts":
};

// The start of a thread's samples of one counter, up to the timestamp. A
// counter recorded on a thread is that thread's series: the id gives it a track
// of its own in Perfetto ("<name> id: <tid> value"), where counter events of one
// name and no id share one process-wide track.
struct counter_prefix {
  const name_info* source = nullptr;
  std::string text;  // {"ph":"C","name":"...","pid":P,"tid":T,"id":"T","ts":
};

struct thread_state {
  std::uint64_t tid = 0;
  std::string name;    // as last written in its thread_name event
  std::string ids;     // "pid":P,"tid":T — the same in all of its events
  std::string ids_ts;  // "pid":P,"tid":T,"ts":
  std::vector<frame> stack;
  std::vector<held_region> held;   // see held_region
  std::vector<open_held> held_open;  // innermost last
  std::vector<complete_prefix> complete_prefixes;  // by name_info::id
  std::vector<counter_prefix> counter_prefixes;    // by name_info::id
};

// The escaped, preformatted pieces of a name, built once per name_info::id.
// Events do not repeat the source location: the metadata's
// "source-locations" holds it once per name.
struct name_entry {
  const name_info* source = nullptr;
  std::string name_cat;         // "name":"...","cat":"..." (no cat for the default domain)
  std::string complete_prefix;  // {"ph":"X","name":"...",
  std::string instant_prefix;   // {"ph":"i","s":"t","name":"...",
};

struct live_object {
  std::string name;  // escaped
  std::uint64_t tid;
};

// A sampled counter of a GPU (FERRET_CUDA_METRICS_SAMPLING), as its C events begin.
struct sampled_counter {
  bool accumulates = false;
  double per_second_scale = 1e9;  // counts per ns to the unit's rate (1 for GB/s)
  std::string name_and_key;  // "name":"<label>","cat":"sampled","pid":<pid>,"ts":
  std::string key;           // ,"args":{"(<unit>)":
};

// A GPU's process in the trace.
struct gpu_state {
  std::uint32_t pid = 0;
  std::string process_name;  // "GPU <n>: <device name>" once announced, else "GPU <n>"
  bool named = false;        // its process_name event is written
  std::unordered_set<std::uint32_t> named_streams;  // streams whose track is named
  std::map<memory_kind, std::int64_t> allocated;    // bytes, allocations minus releases
  // Per stream, the latest end on each of its tracks. CUPTI reports operations
  // of one stream that overlap (seen with JAX on an H100: a host-to-host copy
  // beside the stream's kernel), and Perfetto drops an X event that partially
  // overlaps another on its track: such an operation goes on the stream's next
  // track, "stream <n> (overlapping <k>)".
  std::unordered_map<std::uint32_t, std::vector<std::int64_t>> track_ends;
  std::vector<sampled_counter> counters;      // in the order of the metric set's values
  std::optional<std::int64_t> series_end_ns;  // the last interval's end, while the series runs
};

// Tracks of one stream beyond which an overlapping operation stays on the
// stream's own track (and is counted: gpu-operations-overlapping-on-track).
constexpr std::size_t max_tracks_per_stream = 16;

// The GPU process of `device`: high bit set (no real pid has it), the device in
// the next 9 bits, the host pid's low 22 bits, so that traces of several
// processes merged in one view keep their GPUs apart.
std::uint32_t gpu_pid(std::uint32_t device, std::uint32_t host_pid) noexcept {
  return 0x8000'0000U | ((device & 0x1FFU) << 22U) | (host_pid & 0x3F'FFFFU);
}

// Stream tracks start at tid 1: a tid of 0 would land on the process's main thread.
// A stream's further tracks (overlapping operations) set the high bit, with the
// track's number above the stream's low 26 bits: Perfetto takes 32-bit tids only.
std::uint64_t stream_tid(std::uint32_t stream, std::size_t track = 0) noexcept {
  if (track == 0) return std::uint64_t{stream} + 1U;
  return 0x8000'0000U | (std::uint64_t{track} << 26U) | ((std::uint64_t{stream} + 1U) & 0x03FF'FFFFU);
}
static_assert(max_tracks_per_stream <= 32, "a stream's track numbers fit in 5 bits");

const char* synchronization_name(std::uint32_t detail) noexcept {
  switch (detail) {
    case 1: return "event synchronization";
    case 2: return "stream wait synchronization";
    case 3: return "stream synchronization";
    case 4: return "context synchronization";
    default: return "synchronization";
  }
}

class chrome_backend final : public runtime::backend, profile::link_attribution::handler {
 public:
  chrome_backend(const session_info& session, std::string path, int fd)
      : session_(session), path_(std::move(path)), fd_(fd), file_(runtime::identity_of(fd)) {
  }

  ~chrome_backend() override {
    // Never writes: without a final flush the file stays as the last write
    // left it (a valid document), and in a fork child that exits without
    // calling abandon() this object is a copy that must not touch the file.
    runtime::close_if_open_on(fd_, file_);
  }

  chrome_backend(const chrome_backend&) = delete;
  chrome_backend& operator=(const chrome_backend&) = delete;

  /// Writes the head and a trailer, so that the file is valid from the start.
  /// Returns 0, or the errno of the write that failed.
  int start() {
    text_.append("{\"traceEvents\":[\n");
    begin_event();
    text_.append(R"({"ph":"M","name":"process_name",)");
    fmt::format_to(std::back_inserter(text_), "\"pid\":{},\"args\":{{\"name\":", session_.pid);
    append_json_string(text_, session_.executable);
    text_.push_back('}');
    end_event();
    // Kill-safe from the first byte: the guard starts before anything is
    // written, knowing the whole first document (the head and a trailer),
    // which it writes should the process die before that is on disk; later
    // writes publish as they go. Without a guard (valgrind, TSan, seccomp) the
    // file is still complete after each write. (No message: this runs inside
    // the runtime's session start, where it cannot be asked for the verbosity.)
    format_trailer();
    std::string first_document{out_.data(), out_.size()};
    first_document.append(text_);
    text_.clear();
    guard_.start(fd_, 0, first_document);
    write_out();
    if (failed_) return error_number_;
    return 0;
  }

  void thread_records(const thread_info& thread, const record* records,
                      std::size_t count) override {
    if (closed_) return;
    thread_state& state = thread_for(thread);
    if (count != 0) end_ns_ = std::max(end_ns_, records[count - 1].time_ns);  // in time order
    for (std::size_t i = 0; i < count; ++i) {
      const record& r = records[i];
      switch (r.kind) {
        case record_kind::region_begin: begin_region(state, r); break;
        case record_kind::region_end: end_region(state, r); break;
        case record_kind::mark: append_mark(state, r); break;
        case record_kind::counter: append_counter(state, r); break;
      }
    }
  }

  void data_object(const data_object_event& event) override {
    if (closed_ || event.object == nullptr) return;
    end_ns_ = std::max(end_ns_, event.time_ns);
    const runtime::data_object_info& object = *event.object;
    if (event.change == data_object_change::registered) {
      if (const auto it = live_.find(object.id); it != live_.end()) {
        // The same id again: end the first lifetime so that b/e stay paired.
        append_object_end(object.id, it->second, event.time_ns);
        live_.erase(it);
      }
      live_object& live = live_[object.id];
      append_json_string(live.name, object.name);
      live.tid = event.tid;
      append_object_begin(object, live, event.time_ns);
    } else {
      const auto it = live_.find(object.id);
      if (it == live_.end()) return;  // never began: an e alone would be unmatched
      append_object_end(object.id, it->second, event.time_ns);
      live_.erase(it);
    }
  }

  void flush(const session_status& status) override {
    if (closed_) return;
    remember_status(status);
    if (status.final) {
      link_attribution_.finish();  // writes the kernel slices still held
      end_counter_series();
      finish_open_objects();
    } else {
      link_attribution_.end_drain();
    }
    // A batch smaller than a large trailer waits for more events (see
    // write_threshold_); the final flush writes whatever is left.
    if (status.final || out_.size() >= flush_threshold()) write_out();
    if (status.final) {
      guard_.finish();
      if (runtime::still_open_on(fd_, file_) && ::close(fd_) != 0) fail(errno, "close");
      fd_ = -1;
      closed_ = true;
      // One line for a trace that lost events: describe() gives it at exit
      // from FERRET_VERBOSE=1 on, and here below that.
      if (failed_ && runtime::verbosity() < 1) runtime::print_message(describe());
    }
  }

  void abandon() noexcept override {
    guard_.forget();
    runtime::close_if_open_on(fd_, file_);
    fd_ = -1;
    closed_ = true;
    // Release memory, never write: the parent process owns the file.
    std::string().swap(text_);
    out_.release();
    threads_.clear();
    live_.clear();
    names_.clear();
    gpus_.clear();
    contexts_.clear();
    kernel_names_.clear();
    source_lines_ = {};
    std::string().swap(source_lines_json_);
    device_initiated_ = {};
    std::string().swap(device_initiated_json_);
    std::vector<const gpu_activity*>().swap(ordered_);
    held_kernels_.clear();
  }

  std::string describe() const override {
    std::string line =
        fmt::format("chrome trace: {} ({} events)", path_, events_ - events_not_written_);
    if (failed_)
      fmt::format_to(std::back_inserter(line), ", incomplete: {}; {} events not written{}", error_,
                     events_not_written_,
                     cannot_close_ ? ", and the document could not be closed" : "");
    if (regions_too_deep_ != 0)
      fmt::format_to(std::back_inserter(line),
                     "; {} regions nested deeper than {} levels, which Perfetto does not show",
                     regions_too_deep_, perfetto_max_depth);
    return line;
  }

  void gpu_device(const runtime::gpu_device_info& device) override {
    if (closed_) return;
    gpu_state& gpu = gpu_entry(device.id);
    std::string name = fmt::format("GPU {}: {}", device.id, device.name);
    if (name == gpu.process_name) return;
    gpu.process_name = std::move(name);
    // Announced after its first activity: the new name replaces "GPU <n>".
    if (gpu.named) append_gpu_process_name(gpu);
  }

  void gpu_activities(const gpu_activity* activities, std::size_t count) override {
    if (closed_) return;
    // In time order, so that the allocation counter's running total is right
    // at every sample, however the collector ordered its records.
    ordered_.clear();
    for (std::size_t i = 0; i < count; ++i) ordered_.push_back(&activities[i]);
    std::sort(ordered_.begin(), ordered_.end(), [](const gpu_activity* a, const gpu_activity* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a < b;
    });
    for (const gpu_activity* activity : ordered_) append_gpu_activity(*activity);
    ordered_.clear();
  }

  // Sampled counters: one counter track per metric in the device's process.
  // Perfetto names a track "<name> <arg key>": the key is the unit, so the
  // track reads "NVLink bytes sent (GB/s)".
  void gpu_sampled_metrics(const runtime::gpu_metric_set& set) override {
    if (closed_) return;
    gpu_state& gpu = gpu_entry(set.device);
    gpu.counters.clear();
    for (const runtime::gpu_metric& metric : set.metrics) {
      sampled_counter& counter = gpu.counters.emplace_back();
      counter.accumulates = metric.accumulates;
      const std::string_view unit = metric.unit != nullptr ? metric.unit : "";
      counter.per_second_scale = 1e9;
      std::string shown_unit;
      if (metric.accumulates && unit == "bytes") {
        shown_unit = "GB/s";  // bytes per nanosecond
        counter.per_second_scale = 1.0;
      } else if (metric.accumulates) {
        shown_unit = fmt::format("{}/s", unit);
      } else {
        shown_unit = unit == "percent" ? std::string{"%"} : std::string{unit};
      }
      counter.name_and_key.append("\"name\":");
      append_json_string(counter.name_and_key,
                         metric.label != nullptr ? metric.label : (metric.name != nullptr ? metric.name : ""));
      counter.name_and_key.append(",\"cat\":\"sampled\"");
      fmt::format_to(std::back_inserter(counter.name_and_key), R"(,"pid":{},"ts":)", gpu.pid);
      counter.key.append(",\"args\":{");
      append_key(counter.key, fmt::format("({})", shown_unit));
    }
    link_attribution_.add_metric_set(set);
  }

  void gpu_metric_intervals(const runtime::gpu_metric_interval* intervals,
                            std::size_t count) override {
    if (closed_) return;
    for (std::size_t i = 0; i < count; ++i) append_metric_interval(intervals[i]);
    link_attribution_.add_intervals(intervals, count);
  }

  void gpu_instruction_samples(const runtime::gpu_instruction_sample* samples,
                               std::size_t count) override {
    if (closed_ || count == 0) return;
    source_lines_.add(samples, count);
    source_lines_json_.clear();  // rebuilt by the next trailer
  }

  void gpu_remote_accesses(const runtime::gpu_remote_access* accesses,
                           std::size_t count) override {
    if (closed_ || count == 0) return;
    device_initiated_.add(accesses, count);
    device_initiated_json_.clear();  // rebuilt by the next trailer
  }

 private:
  // --- events -------------------------------------------------------------

  void communication(const runtime::communication_event* events, std::size_t count) override {
    if (closed_) return;
    for (std::size_t i = 0; i < count; ++i) append_message_end(events[i]);
  }

  void begin_event() {
    if (events_ != 0) text_.append(",\n");
    ++events_;
  }

  void end_event() {
    text_.push_back('}');
    commit_text();
  }

  // Moves a rare event, formatted in text_, into the batch.
  void commit_text() {
    out_.append(text_);
    text_.clear();
    if (out_.size() >= write_threshold_) write_out();
  }

  // Starts a region, mark or counter event in the batch: the separator from
  // the previous event (start() wrote the first one), and room for
  // `prefix_bytes` plus the numbers and punctuation after them.
  char* start_fast_event(std::size_t prefix_bytes) {
    ++events_;
    out_.reserve(prefix_bytes + 4 * max_number_bytes + 128);  // + copy_to()'s overshoot
    char* out = out_.cursor();
    out[0] = ',';
    out[1] = '\n';
    return out + 2;
  }

  void end_fast_event(char* end) {
    out_.advance_to(end);
    if (out_.size() >= write_threshold_) write_out();
  }

  const name_entry& entry_for(const name_info* name) {
    if (name->id >= names_.size()) names_.resize(std::size_t{name->id} + 1);
    name_entry& entry = names_[name->id];
    if (entry.source == name) return entry;
    entry.source = name;
    entry.name_cat.clear();
    entry.name_cat.append("\"name\":");
    append_json_string(entry.name_cat, name->name);
    if (!name->domain.empty()) {
      entry.name_cat.append(",\"cat\":");
      append_json_string(entry.name_cat, name->domain);
    }
    entry.complete_prefix.assign(R"({"ph":"X",)").append(entry.name_cat).push_back(',');
    entry.instant_prefix.assign(R"({"ph":"i","s":"t",)").append(entry.name_cat).push_back(',');
    remember_location(*name);
    return entry;
  }

  // Adds the name's source location to the metadata's "source-locations"
  // (name → list of distinct locations; usually one).
  void remember_location(const name_info& name) {
    if (name.file.empty()) return;
    std::string location = "{\"file\":";
    append_json_string(location, name.file);
    fmt::format_to(std::back_inserter(location), ",\"line\":{}", name.line);
    if (!name.function.empty()) {
      location.append(",\"function\":");
      append_json_string(location, name.function);
    }
    if (!name.domain.empty()) {
      location.append(",\"cat\":");
      append_json_string(location, name.domain);
    }
    location.push_back('}');
    std::string key;
    append_json_string(key, name.name);
    std::vector<std::string>& known = locations_[key];
    if (std::find(known.begin(), known.end(), location) != known.end()) return;
    known.push_back(std::move(location));
    locations_json_.clear();  // rebuilt by the next trailer
  }

  // ,"source-locations":{"name":[{"file":...,"line":N,"function":...}],...}
  const std::string& locations_json() {
    if (!locations_json_.empty() || locations_.empty()) return locations_json_;
    locations_json_.append(",\"source-locations\":{");
    bool first_name = true;
    for (const auto& [key, known] : locations_) {
      if (!first_name) locations_json_.push_back(',');
      first_name = false;
      locations_json_.append(key).append(":[");
      for (std::size_t k = 0; k < known.size(); ++k) {
        if (k != 0) locations_json_.push_back(',');
        locations_json_.append(known[k]);
      }
      locations_json_.push_back(']');
    }
    locations_json_.push_back('}');
    return locations_json_;
  }

  thread_state& thread_for(const thread_info& thread) {
    auto [it, inserted] = threads_.try_emplace(thread.tid);
    thread_state& state = it->second;
    if (inserted) {
      state.tid = thread.tid;
      state.ids = fmt::format("\"pid\":{},\"tid\":{}", session_.pid, thread.tid);
      state.ids_ts = state.ids + ",\"ts\":";
      // The main thread first, the others in Perfetto's default order.
      begin_event();
      fmt::format_to(std::back_inserter(text_),
                     R"({{"ph":"M","name":"thread_sort_index",{},"args":{{"sort_index":{}}}}})",
                     state.ids, thread.is_main ? 0 : 1);
      commit_text();
    }
    std::string name = !thread.name.empty() ? std::string{thread.name}
                                            : runtime::unnamed_thread_label(thread.tid, thread.is_main);
    if (inserted || name != state.name) {
      state.name = std::move(name);
      begin_event();
      text_.append(R"({"ph":"M","name":"thread_name",)");
      text_.append(state.ids);
      text_.append(",\"args\":{\"name\":");
      append_json_string(text_, state.name);
      text_.push_back('}');
      end_event();
    }
    return state;
  }

  // A slice whose end the runtime supplied says why in args.ferret.
  static const char* note(runtime::region_close closed) noexcept {
    switch (closed) {
      case runtime::region_close::by_program: break;
      case runtime::region_close::at_exit: return "closed at exit";
      case runtime::region_close::by_outer_end: return "closed by unbalanced end";
    }
    return nullptr;
  }

  // The writer's inner loop: two copies of preformatted pieces and two numbers.
  // Inlined into the usual region end (its call would cost more than its body
  // saves in code size).
  __attribute__((always_inline)) void append_complete(thread_state& thread, const name_info* name,
                                                      std::int64_t begin_ns, std::int64_t end_ns,
                                                      runtime::region_close closed) {
    constexpr std::size_t note_bytes = 64;  // ,"args":{"ferret":"<note>"}
    const block_text& prefix = complete_prefix_for(thread, name);
    char* out = start_fast_event(prefix.size() + note_bytes);
    out = prefix.copy_to(out);
    out = timestamps_.write(out, begin_ns);
    out = put(out, ",\"dur\":");
    // Per-thread records are in time order, so this only guards against a
    // clock that stepped back: a negative dur would be rejected.
    out = microsecond_writer::write_duration(out, std::max<std::int64_t>(end_ns - begin_ns, 0));
    if (closed != runtime::region_close::by_program) {  // ferret's notes need no escaping
      out = put(out, ",\"args\":{\"ferret\":\"");
      out = put(out, note(closed));
      out = put(out, "\"}");
    }
    *out++ = '}';
    end_fast_event(out);
  }

  void begin_region(thread_state& thread, const record& begin) {
    std::vector<frame>& stack = thread.stack;
    if (stack.size() >= perfetto_max_depth) ++regions_too_deep_;
    if (!stack.empty() && stack.back().begin_ns == begin.time_ns) hold(thread, begin);
    stack.push_back(frame{begin.name, begin.time_ns});
  }

  // Gives the region that begins now, with its parent, a slot in `held`.
  __attribute__((noinline)) void hold(thread_state& thread, const record& begin) {
    // Its owner: the parent, or the parent's owner when the parent is held too.
    const std::size_t parent = thread.stack.size();
    const bool parent_held = !thread.held_open.empty() && thread.held_open.back().depth == parent;
    const std::size_t owner = parent_held ? thread.held[thread.held_open.back().slot].owner_depth : parent;
    thread.held_open.push_back(open_held{parent + 1, thread.held.size()});
    thread.held.push_back(held_region{begin.name, begin.time_ns, begin.time_ns, owner, {}});
  }

  // Ends the innermost open region: the runtime delivers nested records (see
  // runtime::record), so an end never needs a search. One that comes with no
  // region open (a backend driven without the runtime) is ignored.
  void end_region(thread_state& thread, const record& end) {
    std::vector<frame>& stack = thread.stack;
    if (stack.empty()) return;
    if (!thread.held.empty()) return end_with_held(thread, end);
    const frame& open = stack.back();  // the usual case: nothing waits
    append_complete(thread, open.name, open.begin_ns, end.time_ns, end.closed);
    stack.pop_back();
  }

  __attribute__((noinline)) void end_with_held(thread_state& thread, const record& end) {
    std::vector<frame>& stack = thread.stack;
    const frame& open = stack.back();
    if (!thread.held_open.empty() && thread.held_open.back().depth == stack.size()) {
      held_region& waiting = thread.held[thread.held_open.back().slot];
      waiting.end_ns = end.time_ns;
      waiting.closed = end.closed;
      thread.held_open.pop_back();
    } else {
      append_complete(thread, open.name, open.begin_ns, end.time_ns, end.closed);
      write_held(thread, stack.size());
    }
    stack.pop_back();
  }

  // After the region at `depth`: the held regions it owns, in begin order.
  __attribute__((noinline)) void write_held(thread_state& thread, std::size_t depth) {
    std::vector<held_region>& held = thread.held;
    std::size_t first = held.size();
    while (first > 0 && held[first - 1].owner_depth == depth) --first;
    for (std::size_t k = first; k < held.size(); ++k)
      append_complete(thread, held[k].name, held[k].begin_ns, held[k].end_ns, held[k].closed);
    held.resize(first);
  }

  // Inline: once per region; the first use of a name on a thread goes out of line.
  __attribute__((always_inline)) const block_text& complete_prefix_for(thread_state& thread,
                                                                       const name_info* name) {
    const std::vector<complete_prefix>& prefixes = thread.complete_prefixes;
    if (name->id < prefixes.size() && prefixes[name->id].source == name) return prefixes[name->id].text;
    return make_complete_prefix(thread, name);
  }
  __attribute__((noinline)) const block_text& make_complete_prefix(thread_state& thread, const name_info* name) {
    std::vector<complete_prefix>& prefixes = thread.complete_prefixes;
    const name_entry& entry = entry_for(name);
    if (name->id >= prefixes.size()) prefixes.resize(std::size_t{name->id} + 1);
    complete_prefix& prefix = prefixes[name->id];
    prefix.source = name;
    prefix.text.assign(entry.complete_prefix + thread.ids_ts);
    return prefix.text;
  }

  const std::string& counter_prefix_for(thread_state& thread, const name_info* name) {
    std::vector<counter_prefix>& prefixes = thread.counter_prefixes;
    if (name->id >= prefixes.size()) prefixes.resize(std::size_t{name->id} + 1);
    counter_prefix& prefix = prefixes[name->id];
    if (prefix.source != name) {
      prefix.source = name;
      prefix.text.assign(R"({"ph":"C",)").append(entry_for(name).name_cat);
      fmt::format_to(std::back_inserter(prefix.text), R"(,{},"id":"{}","ts":)", thread.ids,
                     thread.tid);
    }
    return prefix.text;
  }

  // A message's two ends as thread instants (category "mpi-message"): the
  // send where it was posted, the receive where it completed. ferret-merge
  // joins them into flows across the ranks' traces.
  void append_message_end(const runtime::communication_event& event) {
    using runtime::communication_kind;
    const bool sent = event.kind == communication_kind::send || event.kind == communication_kind::isend;
    const bool received =
        event.kind == communication_kind::receive || event.kind == communication_kind::irecv;
    if ((!sent && !received) || event.peer_process == runtime::no_rank) return;
    end_ns_ = std::max(end_ns_, event.time_ns);
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"i","s":"t","name":"{}","cat":"mpi-message","pid":{},"tid":{},"ts":)",
                   sent ? "MPI send" : "MPI receive", session_.pid, event.tid);
    append_us(text_, event.time_ns);
    fmt::format_to(std::back_inserter(text_),
                   R"(,"args":{{"{}":{},"communicator":{},"tag":{},"bytes":{}}})",
                   sent ? "to" : "from", event.peer_process, event.communicator, event.tag,
                   event.bytes);
    end_event();
  }

  void append_mark(const thread_state& thread, const record& mark) {
    const name_entry& entry = entry_for(mark.name);
    char* out = start_fast_event(entry.instant_prefix.size() + thread.ids_ts.size());
    out = put(out, entry.instant_prefix);
    out = put(out, thread.ids_ts);
    out = timestamps_.write(out, mark.time_ns);
    *out++ = '}';
    end_fast_event(out);
  }

  void append_counter(thread_state& thread, const record& sample) {
    if (!std::isfinite(sample.value)) {
      ++nonfinite_counter_samples_;  // JSON numbers cannot express it
      return;
    }
    const std::string& prefix = counter_prefix_for(thread, sample.name);
    char* out = start_fast_event(prefix.size());
    out = put(out, prefix);
    out = timestamps_.write(out, sample.time_ns);
    out = put(out, ",\"args\":{\"value\":");
    out = fmt::format_to(out, "{}", sample.value);  // shortest round-trip form
    out = put(out, "}}");
    end_fast_event(out);
  }

  void append_object_begin(const runtime::data_object_info& object, const live_object& live,
                           std::int64_t time_ns) {
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"b","cat":"data_object","id":"0x{:x}","name":)", object.id);
    text_.append(live.name);
    fmt::format_to(std::back_inserter(text_), ",\"pid\":{},\"tid\":{},\"ts\":", session_.pid,
                   live.tid);
    append_us(text_, time_ns);
    fmt::format_to(std::back_inserter(text_),
                   R"(,"args":{{"address":"0x{:x}","bytes":{},"memory":)", object.address,
                   object.bytes);
    append_json_string(text_, runtime::to_string(object.memory));
    fmt::format_to(std::back_inserter(text_), ",\"device\":{}}}", object.device);
    end_event();
  }

  void append_object_end(std::uint64_t id, const live_object& live, std::int64_t time_ns) {
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"e","cat":"data_object","id":"0x{:x}","name":)", id);
    text_.append(live.name);
    fmt::format_to(std::back_inserter(text_), ",\"pid\":{},\"tid\":{},\"ts\":", session_.pid,
                   live.tid);
    append_us(text_, time_ns);
    end_event();
  }

  // --- GPU activity -------------------------------------------------------

  gpu_state& gpu_entry(std::uint32_t device) {
    auto [it, inserted] = gpus_.try_emplace(device);
    if (inserted) {
      it->second.pid = gpu_pid(device, session_.pid);
      it->second.process_name = fmt::format("GPU {}", device);
    }
    return it->second;
  }

  // The device's process, named (and sorted after the host's) at its first use.
  gpu_state& used_gpu(std::uint32_t device) {
    gpu_state& gpu = gpu_entry(device);
    if (!gpu.named) {
      gpu.named = true;
      append_gpu_process_name(gpu);
      begin_event();
      fmt::format_to(std::back_inserter(text_),
                     R"({{"ph":"M","name":"process_sort_index","pid":{},)"
                     R"("args":{{"sort_index":{}}}}})",
                     gpu.pid, 1000U + std::uint64_t{device});
      commit_text();
    }
    return gpu;
  }

  void append_gpu_process_name(const gpu_state& gpu) {
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":)", gpu.pid);
    append_json_string(text_, gpu.process_name);
    text_.push_back('}');
    end_event();
  }

  void name_stream(gpu_state& gpu, std::uint32_t stream) {
    if (!gpu.named_streams.insert(stream).second) return;
    name_track(gpu, stream, 0);
  }

  void name_track(const gpu_state& gpu, std::uint32_t stream, std::size_t track) {
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"stream {})",
                   gpu.pid, stream_tid(stream, track), stream);
    if (track != 0) fmt::format_to(std::back_inserter(text_), " (overlapping {})", track);
    text_.append("\"}}");
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},)"
                   R"("args":{{"sort_index":{}}}}})",
                   gpu.pid, stream_tid(stream, track), stream);
    commit_text();
  }

  // The track of a kernel, copy or memset: its stream's first track on which
  // it overlaps nothing written before it (see gpu_state::track_ends).
  std::uint64_t device_track(gpu_state& gpu, const gpu_activity& activity) {
    name_stream(gpu, activity.stream);
    std::vector<std::int64_t>& ends = gpu.track_ends[activity.stream];
    std::size_t track = 0;
    while (track < ends.size() && activity.start_ns < ends[track]) ++track;
    if (track == ends.size()) {
      if (ends.size() == max_tracks_per_stream) {
        ++gpu_operations_overlapping_on_track_;
        track = 0;
      } else {
        ends.push_back(std::numeric_limits<std::int64_t>::min());
        if (track != 0) name_track(gpu, activity.stream, track);
      }
    }
    ends[track] = std::max({ends[track], activity.start_ns, activity.end_ns});
    return stream_tid(activity.stream, track);
  }

  // ,"context":"...","launch":"..." for operations launched in `node`, built
  // once per node (nodes live as long as the session).
  const std::string& context_args(const context_node* node) {
    static const std::string none;
    if (node == nullptr) return none;
    auto [it, inserted] = contexts_.try_emplace(node);
    std::string& args = it->second;
    if (!inserted) return args;
    if (const std::string path = runtime::context_path(node); !path.empty()) {
      args.append(",\"context\":");
      append_json_string(args, path);
    }
    if (const name_info* call = runtime::launching_call(node); call != nullptr) {
      args.append(",\"launch\":");
      append_json_string(args, call->name);
    }
    return args;
  }

  // The kernel's name as a JSON string, demangled once per name pointer.
  const std::string& kernel_name(const char* mangled) {
    auto [it, inserted] = kernel_names_.try_emplace(mangled);
    if (inserted)
      append_json_string(it->second, runtime::demangled_kernel_name(mangled));
    return it->second;
  }

  void append_gpu_activity(const gpu_activity& activity) {
    ++gpu_operations_;
    if (activity.launch.tid == 0) ++gpu_operations_without_launch_;
    end_ns_ = std::max({end_ns_, activity.start_ns, activity.end_ns});
    gpu_state& gpu = used_gpu(activity.device);
    switch (activity.operation) {
      case gpu_operation::kernel:
        begin_device_slice(activity, gpu, "kernel", kernel_name(activity.name));
        append_kernel_args(activity.kernel);
        if (activity.samples != nullptr) append_sample_args(*activity.samples);
        if (activity.remote != nullptr) append_remote_args(*activity.remote);
        hold_kernel_slice(activity, gpu);
        break;
      case gpu_operation::memcpy:
        copy_name_.assign("\"Memcpy ");
        copy_name_.append(runtime::to_string(activity.copy));
        copy_name_.push_back('"');
        begin_device_slice(activity, gpu, "memcpy", copy_name_);
        append_copy_args(activity);
        end_device_slice(activity, gpu);
        break;
      case gpu_operation::memset:
        begin_device_slice(activity, gpu, "memset", "\"Memset\"");
        fmt::format_to(std::back_inserter(text_), ",\"bytes\":{}", activity.bytes);
        if (activity.destination_object != nullptr) {
          text_.append(",\"object\":");
          append_json_string(text_, activity.destination_object->name);
        }
        text_.append(",\"memory\":");
        append_json_string(text_, runtime::to_string(activity.memory));
        end_device_slice(activity, gpu);
        break;
      case gpu_operation::allocation:
      case gpu_operation::release: append_allocation_change(activity, gpu); break;
      case gpu_operation::synchronization: append_synchronization(activity, gpu); break;
    }
  }

  // An X event on the operation's stream track, up to and including the
  // arguments every device operation has; end_device_slice() closes it.
  void begin_device_slice(const gpu_activity& activity, gpu_state& gpu, std::string_view category,
                          std::string_view quoted_name) {
    slice_tid_ = device_track(gpu, activity);
    begin_event();
    fmt::format_to(std::back_inserter(text_), R"({{"ph":"X","cat":"{}","name":)", category);
    text_.append(quoted_name);
    fmt::format_to(std::back_inserter(text_), R"(,"pid":{},"tid":{},"ts":)", gpu.pid, slice_tid_);
    append_us(text_, activity.start_ns);
    text_.append(",\"dur\":");
    append_us(text_, std::max<std::int64_t>(activity.end_ns - activity.start_ns, 0));
    fmt::format_to(std::back_inserter(text_), R"(,"args":{{"correlation":{})",
                   activity.launch.correlation);
    text_.append(context_args(activity.launch.context));
    fmt::format_to(std::back_inserter(text_), R"(,"device":{},"stream":{})", activity.device,
                   activity.stream);
  }

  void end_device_slice(const gpu_activity& activity, const gpu_state& gpu) {
    text_.push_back('}');  // args
    end_event();
    if (activity.launch.tid != 0) append_launch_flow(activity, gpu);
  }

  void append_kernel_args(const runtime::kernel_attributes& kernel) {
    fmt::format_to(std::back_inserter(text_),
                   R"(,"grid":[{},{},{}],"block":[{},{},{}],"registers per thread":{})"
                   R"(,"static shared memory":{},"dynamic shared memory":{})"
                   R"(,"local memory per thread":{})",
                   kernel.grid[0], kernel.grid[1], kernel.grid[2], kernel.block[0],
                   kernel.block[1], kernel.block[2], kernel.registers_per_thread,
                   kernel.static_shared_memory, kernel.dynamic_shared_memory,
                   kernel.local_memory_per_thread);
    if (kernel.simd_width != 0)  // Level Zero kernels
      fmt::format_to(std::back_inserter(text_), R"(,"SIMD width":{})", kernel.simd_width);
    // Negative: the device's limits are unknown.
    if (kernel.occupancy >= 0 && std::isfinite(kernel.occupancy))
      fmt::format_to(std::back_inserter(text_), R"(,"theoretical occupancy":{})",
                     kernel.occupancy);
  }

  // A sampled kernel's instruction samples (FERRET_CUDA_PC_SAMPLING), under
  // HPCToolkit's metric names: GINST and its non-zero stall classes, then
  // the top stall reasons, GSAMP:EXP, GSAMP:UTIL and GSAMP:PER in words.
  void append_sample_args(const runtime::gpu_kernel_samples& samples) {
    fmt::format_to(std::back_inserter(text_), R"(,"samples":{})",
                   rounded_samples(samples.samples));
    const double issued = samples.by_stall[static_cast<std::size_t>(runtime::gpu_stall::none)];
    if (samples.samples - issued > 0)
      fmt::format_to(std::back_inserter(text_), R"(,"GINST:STL_ANY":{})",
                     rounded_samples(samples.samples - issued));
    for (std::size_t stall = 0; stall < runtime::gpu_stall_classes; ++stall)
      if (samples.by_stall[stall] > 0)
        fmt::format_to(std::back_inserter(text_), R"(,"{}":{})",
                       runtime::metric_name(static_cast<runtime::gpu_stall>(stall)),
                       rounded_samples(samples.by_stall[stall]));
    const std::string top = stall_shares(samples.top_reasons, samples.top_reason_samples,
                                         std::size(samples.top_reasons), samples.samples);
    if (!top.empty()) {
      text_.append(",\"top stalls\":");
      append_json_string(text_, top);
    }
    if (samples.expected > 0)
      fmt::format_to(std::back_inserter(text_), R"(,"expected samples":{},"utilization":{})",
                     rounded_samples(samples.expected),
                     std::round(samples.samples / samples.expected * 1000.0) / 1000.0);
    if (samples.period_cycles != 0)
      fmt::format_to(std::back_inserter(text_), R"(,"sampling period cycles":{})",
                     samples.period_cycles);
  }

  // A kernel's device-initiated traffic (FERRET_CUDA_PEER_ACCESSES) per memory
  // it reached: "loaded from GPU 1" (bytes moved from there to the kernel's
  // device), "stored to host" (stores and atomics, the other way).
  void append_remote_args(const runtime::gpu_kernel_remote_traffic& remote) {
    const std::size_t targets =
        std::min<std::size_t>(remote.target_count, runtime::gpu_kernel_remote_traffic::max_targets);
    for (std::size_t i = 0; i < targets; ++i) {
      const runtime::gpu_kernel_remote_traffic::target& target = remote.targets[i];
      const std::string memory = runtime::memory_end_name(target.device);
      if (target.loaded_bytes != 0)
        fmt::format_to(std::back_inserter(text_), R"(,"loaded from {}":{})", memory,
                       target.loaded_bytes);
      if (target.stored_bytes != 0)
        fmt::format_to(std::back_inserter(text_), R"(,"stored to {}":{})", memory,
                       target.stored_bytes);
    }
  }

  // A kernel's slice waits, its arguments open, until the sampled link bytes
  // of its time are attributed (kernel_done); its launch flow is written now.
  void hold_kernel_slice(const gpu_activity& kernel, const gpu_state& gpu) {
    const std::uint64_t key = ++held_kernel_keys_;
    held_kernels_.emplace(key, std::move(text_));
    text_.clear();
    if (kernel.launch.tid != 0) append_launch_flow(kernel, gpu);
    link_attribution_.add_kernel(kernel.device, kernel.start_ns, kernel.end_ns, key);
  }

  // The kernel's attributed link bytes (when its device sampled them) close
  // its held slice: "NVLink sent bytes" etc., and "link bytes": "exact" (it
  // ran alone in every interval it overlapped), "shared" or "partly shared".
  void kernel_done(std::uint64_t key, const profile::kernel_link_bytes* bytes) override {
    const auto held = held_kernels_.find(key);
    if (held == held_kernels_.end()) return;
    text_ = std::move(held->second);
    held_kernels_.erase(held);
    if (bytes != nullptr && bytes->intervals != 0) {
      double exact = 0, shared = 0;
      for (std::size_t i = 0; i < profile::link_counters; ++i) {
        exact += bytes->exact[i];
        shared += bytes->shared[i];
        fmt::format_to(std::back_inserter(text_), R"(,"{} bytes":{})",
                       profile::describe(static_cast<profile::link_counter>(i)),
                       std::llround(bytes->exact[i] + bytes->shared[i]));
      }
      fmt::format_to(std::back_inserter(text_), R"(,"link bytes":"{}","sampled intervals":{})",
                     shared == 0 ? "exact" : exact == 0 ? "shared" : "partly shared",
                     bytes->intervals);
      ++kernels_with_link_bytes_;
    }
    text_.push_back('}');  // args
    end_event();
  }

  void interval_done(std::uint32_t, profile::link_share, const profile::link_bytes&) override {}

  // One sample per counter at the interval's start: the rate over the
  // interval for counts, the value for levels. Where the next interval does
  // not start at this one's end the series drops to 0 there.
  void append_metric_interval(const runtime::gpu_metric_interval& interval) {
    const auto found = gpus_.find(interval.device);
    if (found == gpus_.end() || found->second.counters.empty() || interval.values == nullptr ||
        interval.end_ns <= interval.begin_ns)
      return;
    gpu_state& gpu = used_gpu(interval.device);
    if (gpu.series_end_ns && *gpu.series_end_ns < interval.begin_ns) end_counter_series(gpu);
    const double ns = static_cast<double>(interval.end_ns - interval.begin_ns);
    for (std::size_t i = 0; i < gpu.counters.size(); ++i) {
      const sampled_counter& counter = gpu.counters[i];
      const double value = counter.accumulates
                               ? interval.values[i] / ns * counter.per_second_scale
                               : interval.values[i];
      append_counter_sample(counter, interval.begin_ns, value);
    }
    gpu.series_end_ns = interval.end_ns;
    ++metric_intervals_;
  }

  void end_counter_series(gpu_state& gpu) {
    if (!gpu.series_end_ns) return;
    for (const sampled_counter& counter : gpu.counters)
      append_counter_sample(counter, *gpu.series_end_ns, 0);
    gpu.series_end_ns.reset();
  }

  void end_counter_series() {
    for (auto& [device, gpu] : gpus_) end_counter_series(gpu);
  }

  void append_counter_sample(const sampled_counter& counter, std::int64_t time_ns, double value) {
    if (!std::isfinite(value)) {
      ++nonfinite_counter_samples_;  // JSON numbers cannot express it
      return;
    }
    begin_event();
    text_.append(R"({"ph":"C",)");
    text_.append(counter.name_and_key);
    append_us(text_, time_ns);
    text_.append(counter.key);
    fmt::format_to(std::back_inserter(text_), "{}}}", value);
    end_event();
  }

  void append_copy_args(const gpu_activity& copy) {
    const auto append_device = [this](std::int32_t device) {
      if (device < 0)
        text_.append("\"host\"");
      else
        fmt::format_to(std::back_inserter(text_), "{}", device);
    };
    fmt::format_to(std::back_inserter(text_), R"(,"bytes":{},"kind":"{}","source device":)",
                   copy.bytes, runtime::to_string(copy.copy));
    append_device(copy.source_device);
    text_.append(",\"destination device\":");
    append_device(copy.destination_device);
    if (copy.source_object != nullptr) {
      text_.append(",\"source object\":");
      append_json_string(text_, copy.source_object->name);
    }
    if (copy.destination_object != nullptr) {
      text_.append(",\"destination object\":");
      append_json_string(text_, copy.destination_object->name);
    }
    // Bytes per nanosecond are GB/s; a copy without duration has no rate.
    if (copy.end_ns > copy.start_ns)
      fmt::format_to(std::back_inserter(text_), R"(,"GB/s":{})",
                     static_cast<double>(copy.bytes) /
                         static_cast<double>(copy.end_ns - copy.start_ns));
  }

  // A v1 flow from the launching call to the operation's slice. Ids are a
  // sequence, not the correlation id: one call can start several operations,
  // and Perfetto drops a flow whose id was used before.
  void append_launch_flow(const gpu_activity& activity, const gpu_state& gpu) {
    const std::uint64_t id = ++flows_;
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"s","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":)",
                   id, session_.pid, activity.launch.tid);
    append_us(text_, activity.launch.time_ns);
    end_event();
    begin_event();
    fmt::format_to(
        std::back_inserter(text_),
        R"({{"ph":"f","bp":"e","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":)",
        id, gpu.pid, slice_tid_);
    append_us(text_, activity.start_ns);
    end_event();
  }

  void append_allocation_change(const gpu_activity& change, gpu_state& gpu) {
    constexpr std::uint64_t max_bytes = std::numeric_limits<std::int64_t>::max();
    const auto bytes = static_cast<std::int64_t>(std::min(change.bytes, max_bytes));
    std::int64_t& total = gpu.allocated[change.memory];
    total += change.operation == gpu_operation::allocation ? bytes : -bytes;
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"C","name":"allocated memory","pid":{},"ts":)", gpu.pid);
    append_us(text_, change.start_ns);
    text_.append(",\"args\":{");
    append_key(text_, runtime::to_string(change.memory));
    fmt::format_to(std::back_inserter(text_), "{}}}", total);
    end_event();
  }

  void append_synchronization(const gpu_activity& sync, const gpu_state& gpu) {
    const std::uint64_t id = ++synchronizations_;
    const char* name = synchronization_name(sync.detail);
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"b","cat":"sync","name":"{}","id":{},"pid":{},"ts":)", name, id,
                   gpu.pid);
    append_us(text_, sync.start_ns);
    fmt::format_to(std::back_inserter(text_), R"(,"args":{{"correlation":{})",
                   sync.launch.correlation);
    text_.append(context_args(sync.launch.context));
    text_.push_back('}');
    end_event();
    begin_event();
    fmt::format_to(std::back_inserter(text_),
                   R"({{"ph":"e","cat":"sync","name":"{}","id":{},"pid":{},"ts":)", name, id,
                   gpu.pid);
    append_us(text_, std::max(sync.end_ns, sync.start_ns));
    end_event();
  }

  // At the final flush: data objects still registered end at the session's
  // end. (Regions are ended by the runtime, see runtime::record.)
  void finish_open_objects() {
    for (const auto& [id, live] : live_) append_object_end(id, live, end_ns_);
    live_.clear();
  }

  // --- file ---------------------------------------------------------------

  void fail(int error_number, const char* operation) {
    if (failed_) return;  // the first error is the informative one
    failed_ = true;
    error_number_ = error_number;
    error_ = fmt::format("{}: {}", operation, std::strerror(error_number));
  }

  bool write_at(const char* data, std::size_t size, off_t offset) {
    while (size > 0) {
      const ssize_t written = ::pwrite(fd_, data, size, offset);
      if (written < 0) {
        if (errno == EINTR) continue;
        fail(errno, "write");
        return false;
      }
      if (written == 0) {  // no progress and no errno: give up rather than spin
        fail(EIO, "write");
        return false;
      }
      data += written;
      size -= static_cast<std::size_t>(written);
      offset += written;
    }
    return true;
  }

  // Writes the batch where the trailer starts (over the old one). After a
  // failed write, batches are only counted.
  void write_pending() {
    const std::uint64_t in_batch = events_ - events_before_batch_;
    events_before_batch_ = events_;
    if (in_batch == 0 && out_.size() == 0) return;
    if (failed_ || fd_ < 0 || !write_at(out_.data(), out_.size(), events_end_)) {
      events_not_written_ += in_batch;
    } else {
      previous_events_end_ = events_end_;
      events_in_previous_batch_ = in_batch;
      events_end_ += static_cast<off_t>(out_.size());
    }
    out_.clear();  // after a failure, drop events rather than grow without bound
  }

  // Writes the batch and a trailer after it. Called at every flush and
  // whenever the batch is full, so that the file on disk is a complete
  // document after every write, not only after a flush.
  void write_out() {
    keep_descriptors();
    write_pending();
    write_trailer();
  }

  // A program may close every descriptor (daemons do) and open its own files
  // under the same numbers: nothing of the program's is ever written or
  // closed. The trace is opened again by its name when it is still the same
  // file, and the exit guard, whose pipe went with the descriptors, started
  // again. The guard closed the file when its pipe closed: a batch it cut
  // short is counted as not written.
  void keep_descriptors() {
    if (fd_ < 0) return;
    const bool trace_kept = runtime::still_open_on(fd_, file_);
    if (trace_kept && guard_.intact()) return;
    if (!trace_kept) {
      int fd = -1;
      do {
        fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      } while (fd < 0 && errno == EINTR);
      int error_number = errno;
      const int flags = fd >= 0 ? ::fcntl(fd, F_GETFL) : -1;
      if (fd >= 0 && (!runtime::still_open_on(fd, file_) || flags < 0 ||
                      ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
        error_number = ENOENT;  // another file has the name now
        ::close(fd);
        fd = -1;
      }
      fd_ = fd;  // the old number is the program's now
      if (fd_ < 0) {
        fail(error_number, "opening the trace again after the program closed its descriptor");
        return;
      }
    }
    if (!guard_.intact()) {
      guard_.restart(fd_);
      struct stat status{};
      if (::fstat(fd_, &status) == 0 && status.st_size < events_end_ &&
          events_end_ != previous_events_end_) {
        events_not_written_ += events_in_previous_batch_;
        events_in_previous_batch_ = 0;
        events_end_ = previous_events_end_;
      }
    }
  }

  // The parts of the metadata that come from the runtime, kept as text: the
  // status is valid only during flush(), and the trailer is also rewritten
  // when the buffer fills between flushes.
  void remember_status(const session_status& status) {
    status_metadata_.clear();
    if (status.runtime_metadata != nullptr) {
      for (const auto& [key, value] : *status.runtime_metadata) {
        status_metadata_.push_back(',');
        append_key(status_metadata_, key);
        append_value(status_metadata_, value);
      }
    }
    fmt::format_to(std::back_inserter(status_metadata_),
                   ",\"events-recorded\":{},\"events-dropped\":{}", status.events_recorded,
                   status.events_dropped);
    // Escaped again only when changed: it may be large, and flushes are frequent.
    if (status.user_metadata == nullptr || *status.user_metadata == user_metadata_) return;
    user_metadata_ = *status.user_metadata;
    run_metadata_.clear();
    for (const auto& [key, value] : user_metadata_) {
      if (!run_metadata_.empty()) run_metadata_.push_back(',');
      append_key(run_metadata_, key);
      append_value(run_metadata_, value);
    }
  }

  // Closes the document after the last event: the array, then the metadata.
  // When a write fails (a full disk), the document is still closed after the
  // events written so far: a trailer that does not fit makes room by dropping
  // the last batch (counted), and as a last resort the bare closing "]}".
  void write_trailer() {
    if (fd_ < 0 || cannot_close_) return;
    for (;;) {
      format_trailer();
      if (replace_trailer(text_)) break;
      if (events_end_ != previous_events_end_) {
        events_not_written_ += events_in_previous_batch_;
        events_in_previous_batch_ = 0;
        events_end_ = previous_events_end_;
        continue;  // once more, with the new count
      }
      text_.assign("\n]}\n");
      if (!replace_trailer(text_)) cannot_close_ = true;
      break;
    }
    text_.clear();
  }

  // Writes `trailer` after the last event and cuts off what a longer earlier
  // trailer, or a partly written batch, left behind.
  bool replace_trailer(std::string_view trailer) {
    if (guard_.running()) guard_.publish(events_end_, trailer);
    if (!write_at(trailer.data(), trailer.size(), events_end_)) return false;
    if (::ftruncate(fd_, events_end_ + static_cast<off_t>(trailer.size())) != 0) {
      fail(errno, "truncate");
      return false;
    }
    write_threshold_ = std::max(batch_bytes, trailer.size());
    return true;
  }

  // The batch a flush writes at least: any, unless the trailer is larger than
  // a full batch (a large metadata value, many source locations); then as
  // much as the trailer, as between flushes.
  std::size_t flush_threshold() const noexcept {
    return write_threshold_ > batch_bytes ? write_threshold_ : 0;
  }

  void format_trailer() {
    std::string& out = text_;
    out.clear();
    out.append("\n],\"metadata\":{");
    append_key(out, "ferret-version");
    append_json_string(out, session_.ferret_version);
    out.append(",\"hostname\":");
    append_json_string(out, session_.hostname);
    fmt::format_to(std::back_inserter(out), ",\"pid\":{},\"executable\":", session_.pid);
    append_json_string(out, session_.executable);
    out.append(",\"command-line\":");
    append_json_string(out, session_.command_line);
    out.append(",\"clock-source\":");
    append_json_string(out, session_.clock_source);
    out.append(",\"start-time\":");
    append_iso8601(out, session_.start_realtime_ns);
    fmt::format_to(std::back_inserter(out), ",\"start-monotonic-raw-ns\":{}",
                   session_.start_monotonic_raw_ns);
    out.append(status_metadata_);
    fmt::format_to(std::back_inserter(out),
                   ",\"nonfinite-counter-samples\":{}"
                   ",\"gpu-operations-written\":{},\"gpu-operations-written-without-launch\":{}",
                   nonfinite_counter_samples_, gpu_operations_, gpu_operations_without_launch_);
    if (gpu_operations_overlapping_on_track_ != 0)
      fmt::format_to(std::back_inserter(out), ",\"gpu-operations-overlapping-on-track\":{}",
                     gpu_operations_overlapping_on_track_);
    if (metric_intervals_ != 0)
      fmt::format_to(std::back_inserter(out),
                     ",\"gpu-metric-intervals-written\":{},\"kernels-with-link-bytes\":{}"
                     ",\"link-kernels-late\":{},\"link-settled-at-limit\":{}",
                     metric_intervals_, kernels_with_link_bytes_, link_attribution_.late_kernels(),
                     link_attribution_.settled_at_limit());
    if (regions_too_deep_ != 0)
      fmt::format_to(std::back_inserter(out), ",\"regions-deeper-than-perfetto-shows\":{}",
                     regions_too_deep_);
    if (failed_) {
      fmt::format_to(std::back_inserter(out), ",\"events-not-written\":{},\"write-error\":",
                     events_not_written_);
      append_json_string(out, error_);
    }
    out.append(locations_json());
    if (source_lines_json_.empty()) source_lines_.append_json(source_lines_json_);
    out.append(source_lines_json_);
    if (device_initiated_json_.empty()) device_initiated_.append_json(device_initiated_json_);
    out.append(device_initiated_json_);
    out.append(",\"run\":{");
    out.append(run_metadata_);
    out.append("}}}\n");
  }

  session_info session_;
  std::string path_;
  int fd_;
  runtime::file_identity file_;  // what fd_ is open on (see keep_descriptors)
  bool closed_ = false;  // after the final flush or abandon()
  bool failed_ = false;  // a write failed: stop writing, say so in describe()
  int error_number_ = 0;
  std::string error_;

  std::string status_metadata_;  // runtime metadata and event counts, from the last flush
  std::string run_metadata_;     // user metadata (the "run" object's members)
  runtime::metadata_list user_metadata_;  // what run_metadata_ was made from

  byte_buffer out_;         // the batch: events not yet written
  // The batch is written (with a trailer after it) once it holds this much:
  // batch_bytes, or the trailer's size when that is larger. Every write
  // rewrites the trailer, so the trailer's bytes never outgrow the events'
  // however large the metadata: a 16 MiB value once made 9.28 GB of writes
  // for a 168 MB trace.
  std::size_t write_threshold_ = batch_bytes;
  microsecond_writer timestamps_;  // ts of regions, marks and counters
  std::string text_;        // a rare event being formatted, or the trailer
  off_t events_end_ = 0;    // file offset after the last written event = trailer start
  off_t previous_events_end_ = 0;              // the same before the last batch
  std::uint64_t events_in_previous_batch_ = 0;
  std::uint64_t events_ = 0;                   // events written, buffered or lost
  std::uint64_t events_before_batch_ = 0;      // events_ when the batch began
  std::uint64_t events_not_written_ = 0;       // lost to failed writes
  bool cannot_close_ = false;  // not even "]}" could be written
  exit_guard guard_;            // closes the file if the process dies during a write
  std::int64_t end_ns_ = 0;   // latest time seen: the session's end

  std::unordered_map<std::uint64_t, thread_state> threads_;
  std::vector<name_entry> names_;                // by name_info::id
  std::map<std::string, std::vector<std::string>> locations_;  // escaped name → its locations
  std::string locations_json_;  // the metadata's "source-locations" member, or empty
  gpu_source_lines source_lines_;  // instruction samples by function and source line
  std::string source_lines_json_;  // the metadata's "gpu-source-lines", or empty
  gpu_device_initiated device_initiated_;  // device-initiated traffic by kernel, line, object
  std::string device_initiated_json_;      // the metadata's "gpu-device-initiated", or empty
  std::map<std::uint64_t, live_object> live_;    // data objects by id

  std::map<std::uint32_t, gpu_state> gpus_;  // by device id
  std::unordered_map<const context_node*, std::string> contexts_;  // see context_args()
  std::unordered_map<const char*, std::string> kernel_names_;      // mangled → quoted
  std::vector<const gpu_activity*> ordered_;  // one drain's activities in time order
  std::string copy_name_;                     // "Memcpy <kind>", quoted
  std::uint64_t flows_ = 0;                   // launch flows written: the last flow id
  std::uint64_t synchronizations_ = 0;        // the last synchronization's async id

  std::uint64_t nonfinite_counter_samples_ = 0;
  std::uint64_t regions_too_deep_ = 0;  // begun deeper than perfetto_max_depth
  std::uint64_t gpu_operations_ = 0;
  std::uint64_t gpu_operations_without_launch_ = 0;
  // Past max_tracks_per_stream: written on their stream's track, where they
  // overlap another operation (Perfetto drops them).
  std::uint64_t gpu_operations_overlapping_on_track_ = 0;
  std::uint64_t slice_tid_ = 0;  // the track of the device slice being written

  // Kernel slices whose link bytes are not yet attributed, by key; bounded by
  // the attribution's windows (link_attribution.hpp).
  profile::link_attribution link_attribution_{*this};
  std::unordered_map<std::uint64_t, std::string> held_kernels_;
  std::uint64_t held_kernel_keys_ = 0;
  std::uint64_t kernels_with_link_bytes_ = 0;
  std::uint64_t metric_intervals_ = 0;
};

}  // namespace

std::unique_ptr<runtime::backend> make_backend(const runtime::backend_context& context,
                                               std::string& error) {
  if (context.session == nullptr) {  // output_file() needs it too
    error = fmt::format("cannot write the chrome trace to '{}': no session", context.output);
    return nullptr;
  }
  std::string path = runtime::output_file(context, ".json");
  const auto cannot_write = [&](std::string_view reason) {
    error = fmt::format("cannot write the chrome trace to '{}': {}", path, reason);
  };
  std::string reason;
  const int fd = runtime::open_output_file(path, reason);
  if (fd < 0) {
    cannot_write(reason);
    return nullptr;
  }
  auto backend = std::make_unique<chrome_backend>(*context.session, path, fd);
  if (const int error_number = backend->start(); error_number != 0) {
    cannot_write(std::strerror(error_number));
    backend.reset();
    ::unlink(path.c_str());  // untraced leaves nothing behind
    return nullptr;
  }
  return backend;
}

FERRET_REGISTER_BACKEND("chrome", "Chrome trace JSON, opens in Perfetto (ui.perfetto.dev)",
                        make_backend);

}  // namespace ferret::chrome
