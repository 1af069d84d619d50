// Writing profile.N.C.T files. See tau_profile_writer.hpp.
#include "tau_profile_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <iterator>
#include <map>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include "ferret/runtime/backend.hpp"
#include "tau_names.hpp"

namespace ferret::tau {
namespace {

constexpr std::string_view application_name = ".TAU application";

// Writes through a buffer; remembers the first error.
class file_writer {
 public:
  explicit file_writer(const std::string& path) {
    std::string reason;
    fd_ = runtime::open_output_file(path, reason);  // never a FIFO's endless open
    if (fd_ < 0) error_ = errno;
    buffer_.reserve(capacity);
  }
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;
  ~file_writer() {
    if (fd_ >= 0) ::close(fd_);
  }

  std::string& buffer() noexcept { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() >= capacity) flush();
  }
  /// Writes what is left and closes the file: 0 or the first errno.
  int finish() {
    flush();
    if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    return error_;
  }

 private:
  static constexpr std::size_t capacity = 1 << 20;

  void flush() {
    std::string_view text = buffer_;
    while (!text.empty() && error_ == 0) {
      const ssize_t written = ::write(fd_, text.data(), text.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
      } else if (written == 0) {  // no progress and no errno: give up rather than spin
        error_ = EIO;
      } else {
        text.remove_prefix(static_cast<std::size_t>(written));
      }
    }
    buffer_.clear();
  }

  int fd_ = -1;
  int error_ = 0;
  std::string buffer_;
};

// A value that fits a double: non-finite ones (counters near the largest double
// subtracted from each other) become the largest double of their sign.
double representable(double value) noexcept {
  if (std::isnan(value)) return 0.0;
  if (std::isinf(value)) return value > 0 ? DBL_MAX : -DBL_MAX;
  return value;
}

// The shortest text that reads back as the same double ("2560", "0.1", "1e+200").
void append_number(std::string& out, double value) {
  fmt::format_to(std::back_inserter(out), "{}", representable(value));
}

// TIME (held in nanoseconds) as microseconds with at most three decimals,
// computed in integers so that no rounding noise such as 7828.186000000001 appears.
void append_microseconds(std::string& out, double ns) {
  if (!(std::fabs(ns) < 9e15)) {  // beyond 104 days (or not finite)
    append_number(out, representable(ns) / 1000.0);
    return;
  }
  const auto whole = static_cast<std::int64_t>(std::llround(ns));
  const std::uint64_t magnitude =
      whole < 0 ? 0U - static_cast<std::uint64_t>(whole) : static_cast<std::uint64_t>(whole);
  if (whole < 0) out += '-';
  fmt::format_to(std::back_inserter(out), "{}", magnitude / 1000U);
  std::uint64_t fraction = magnitude % 1000U;
  if (fraction == 0) return;
  int digits = 3;
  while (fraction % 10U == 0) {
    fraction /= 10U;
    --digits;
  }
  fmt::format_to(std::back_inserter(out), ".{:0{}}", fraction, digits);
}

// A whole number, as int() reads it: the value rounded to the nearest integer.
void append_whole(std::string& out, double value) {
  value = std::nearbyint(representable(value));
  if (std::fabs(value) < 9e18)
    fmt::format_to(std::back_inserter(out), "{}", static_cast<std::int64_t>(value));
  else
    fmt::format_to(std::back_inserter(out), "{:.0f}", value);
}

void append_value(std::string& out, double value, bool time) {
  if (time)
    append_microseconds(out, value);
  else
    append_number(out, value);
}

void append_function_line(std::string& out, std::string_view name, std::uint64_t calls,
                          std::uint64_t child_calls, double exclusive, double inclusive,
                          std::string_view group_prefix, std::string_view group, bool time) {
  out += '"';
  out += name;
  fmt::format_to(std::back_inserter(out), "\" {} {} ", calls, child_calls);
  append_value(out, exclusive, time);
  out += ' ';
  append_value(out, inclusive, time);
  out += " 0 GROUP=\"";
  out += group_prefix;
  out += group;
  out += "\" \n";
}

void append_statistics(std::string& out, std::string_view name, std::string_view context,
                       const statistics& s) {
  out += '"';
  out += name;
  if (!context.empty()) {
    out += " : ";
    out += context;
  }
  fmt::format_to(std::back_inserter(out), "\" {} ", s.count);
  append_number(out, s.max);
  out += ' ';
  append_number(out, s.min);
  out += ' ';
  append_number(out, static_cast<double>(s.sum / static_cast<long double>(s.count)));
  out += ' ';
  append_number(out, static_cast<double>(std::min(s.sum_of_squares, static_cast<long double>(DBL_MAX))));
  out += '\n';
}

bool saturated(const statistics& s) noexcept { return s.sum_of_squares > static_cast<long double>(DBL_MAX); }

}  // namespace

void append_attribute(std::string& out, std::string_view name, std::string_view value) {
  const auto cut = [](std::string_view text) {
    std::size_t end = longest_value;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) --end;  // UTF-8
    return text.substr(0, end);
  };
  out += "<attribute><name>";
  append_xml_text(out, name.size() > longest_value ? cut(name) : name);
  if (name.size() > longest_value) append_xml_text(out, "…");
  out += "</name><value>";
  append_xml_text(out, value.size() > longest_value ? cut(value) : value);
  if (value.size() > longest_value) append_xml_text(out, "…");
  out += "</value></attribute>";
}

std::string path_of(const thread_profile& thread, std::uint32_t node, const profile_tables& tables) {
  std::uint32_t functions[callpath_depth];
  std::size_t count = 0;
  for (std::uint32_t at = node; at != root_node && count < callpath_depth; at = thread.nodes[at].parent)
    functions[count++] = thread.nodes[at].function;
  std::string path{application_name};
  while (count > 0) {
    path += " => ";
    path += tables.functions[functions[--count]].name;
  }
  return path;
}

thread_layout layout_of(const thread_profile& thread, const profile_tables& tables) {
  const std::size_t metrics = tables.metrics.size();
  thread_layout layout;
  std::map<std::uint32_t, flat_totals> flat;
  const auto totals_of = [&](std::uint32_t function) -> flat_totals& {
    const auto [it, inserted] = flat.try_emplace(function);
    if (inserted) {
      it->second.function = function;
      it->second.exclusive.assign(metrics, 0.0);
      it->second.inclusive.assign(metrics, 0.0);
    }
    return it->second;
  };
  for (std::uint32_t n = 1; n < thread.nodes.size(); ++n) {
    const call_node& node = thread.nodes[n];
    if (node.calls == 0) continue;  // a launch context the thread's records never entered
    layout.path_nodes.push_back(n);
    flat_totals& totals = totals_of(node.function);
    totals.calls += node.calls;
    totals.child_calls += node.child_calls;
    for (std::size_t m = 0; m < metrics; ++m) {
      totals.exclusive[m] += thread.exclusive(n, m);
      if (!node.recursive) totals.inclusive[m] += thread.inclusive(n, m);
      if (!std::isfinite(thread.exclusive(n, m)) || !std::isfinite(thread.inclusive(n, m)))
        ++layout.saturated_values;
    }
  }
  for (const auto& [function, folded] : thread.folded_calls) {
    flat_totals& totals = totals_of(function);
    totals.calls += folded.calls;
    totals.child_calls += folded.child_calls;
    for (std::size_t m = 0; m < metrics; ++m) {
      totals.exclusive[m] += folded.exclusive(m);
      totals.inclusive[m] += folded.inclusive(m);
    }
  }
  for (auto& [function, totals] : flat)
    if (totals.calls > 0) layout.flat.push_back(std::move(totals));

  // The root spans the thread: from its start (the process's for the main
  // thread) to its last event; a counter metric from 0 to its last value.
  layout.root_inclusive.assign(metrics, 0.0);
  layout.root_inclusive[0] = static_cast<double>(thread.end_ns - thread.start_ns);
  for (std::size_t m = 1; m < metrics; ++m) layout.root_inclusive[m] = thread.now_value(m);

  // A context the thread never entered as a region has no entry: its samples
  // go to the nearest enclosing one.
  std::map<std::pair<std::uint32_t, std::uint32_t>, statistics> contexts;
  for (const context_event& event : thread.context_events) {
    std::uint32_t node = event.node;
    while (node != root_node && thread.nodes[node].calls == 0) node = thread.nodes[node].parent;
    contexts[{event.event, node}].merge(event.values);
  }
  for (const auto& [key, values] : contexts) {
    layout.context_events.push_back(context_event{key.first, key.second, values});
    if (saturated(values)) ++layout.saturated_values;
  }
  for (const statistics& values : thread.events)
    if (saturated(values)) ++layout.saturated_values;
  return layout;
}

int write_profile(const std::string& path, const thread_profile& thread, const thread_layout& layout,
                  std::size_t metric, std::string_view metadata, const profile_tables& tables) {
  const bool time = metric == 0;
  file_writer file{path};
  std::string& out = file.buffer();
  const std::size_t count = 1 + layout.flat.size() + layout.path_nodes.size();
  fmt::format_to(std::back_inserter(out), "{} templated_functions_MULTI_{}\n", count,
                 tables.metrics[metric]);
  out += "# Name Calls Subrs Excl Incl ProfileCalls # <metadata>";
  append_attribute(out, "Metric Name", tables.metrics[metric]);
  out += metadata;
  out += "</metadata>\n";

  // .TAU application first, in whole units: hatchet reads this line with int().
  // TIME (held in nanoseconds) rounds up, so that the root never holds less than
  // the regions in it (they do not overlap on a thread, nor on a stream); its
  // exclusive time is then within half a unit of inclusive minus the children.
  const double scale = time ? 1000.0 : 1.0;
  const double children = thread.root_children(metric) / scale;
  double root_inclusive = layout.root_inclusive[metric] / scale;
  root_inclusive = time ? std::ceil(root_inclusive) : std::nearbyint(root_inclusive);
  double root_exclusive = std::nearbyint(root_inclusive - children);
  if (time) root_exclusive = std::max(root_exclusive, 0.0);
  fmt::format_to(std::back_inserter(out), "\"{}\" 1 {} ", application_name,
                 thread.nodes[root_node].child_calls);
  append_whole(out, root_exclusive);
  out += ' ';
  append_whole(out, root_inclusive);
  out += " 0 GROUP=\"TAU_DEFAULT\" \n";

  for (const flat_totals& totals : layout.flat) {
    const function_entry& function = tables.functions[totals.function];
    append_function_line(out, function.name, totals.calls, totals.child_calls,
                         totals.exclusive[metric], totals.inclusive[metric], {}, function.group, time);
    file.maybe_flush();
  }
  for (const std::uint32_t n : layout.path_nodes) {
    const call_node& node = thread.nodes[n];
    append_function_line(out, path_of(thread, n, tables), node.calls, node.child_calls,
                         thread.exclusive(n, metric), thread.inclusive(n, metric), "TAU_CALLPATH|",
                         tables.functions[node.function].group, time);
    file.maybe_flush();
  }
  out += "0 aggregates\n";
  const std::size_t event_count = thread.events.size() + layout.context_events.size();
  if (event_count != 0) {
    fmt::format_to(std::back_inserter(out), "{} userevents\n", event_count);
    out += "# eventname numevents max min mean sumsqr\n";
    for (std::size_t e = 0; e < thread.events.size(); ++e) {
      append_statistics(out, tables.events[thread.event_ids[e]], {}, thread.events[e]);
      file.maybe_flush();
    }
    for (const context_event& event : layout.context_events) {
      append_statistics(out, tables.events[thread.event_ids[event.event]],
                        path_of(thread, event.node, tables), event.values);
      file.maybe_flush();
    }
  }
  return file.finish();
}

}  // namespace ferret::tau
