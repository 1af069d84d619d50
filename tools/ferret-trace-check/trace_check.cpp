// Implementation of the strict Chrome Trace Event Format checker.
//
// Rules (each violation is one error line):
//  - The text starts with `{"` or `[{"` (Perfetto sniffs these bytes; no
//    leading whitespace), is strict JSON (valid UTF-8, no raw control
//    characters, no trailing garbage), and the top-level object has a
//    `traceEvents` array; `metadata`, if present, is an object.
//  - Every event has a known phase (X B E i I C M b e n s t f) and a pid;
//    thread-track events have a non-zero tid; all but M have a finite ts >= 0;
//    X has a dur >= 0; named phases have a non-empty name; `args` is an object.
//  - M events are process_name/thread_name (args.name), *_sort_index
//    (args.sort_index) or process_labels (args.labels).
//  - C events have numeric args; i/I scopes are t, p or g.
//  - Across events: X events nest on each thread (of those that begin
//    together, the enclosing one comes first in the file), C events of
//    different threads do not share a track (name and id), B/E and b/e pair up, flows
//    start before they step or end and have a slice to bind to, and nesting
//    stays within 512 levels — unless the metadata's
//    "regions-deeper-than-perfetto-shows" counts exactly the X and B slices
//    nested deeper (a writer that says what Perfetto will not show).
// Where a rule goes beyond the field notes, the comment at the check says
// what Perfetto does with such input.
//
// Events are checked one at a time while parsing (the parser callback discards
// each event once checked), so memory stays proportional to the few fields
// kept per event for the cross-event checks, not to the size of the JSON DOM.
#include "trace_check.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace ferret::trace_check {
namespace {

using json = nlohmann::json;
using thread_key = std::pair<std::uint64_t, std::uint64_t>;

// Times are compared in integer nanoseconds, converted from the microseconds
// in the file exactly as Perfetto's JSON tokenizer converts them. That makes
// ordering and nesting decisions (which Perfetto takes on ns) match Perfetto's,
// and absorbs decimal artefacts such as 0.1 + 0.2 > 0.3 in doubles.
using ns_t = std::int64_t;

// Slack allowed where a child's end must not pass its parent's end: 1 ns
// (1e-3 µs), for writers that round ts and dur separately. Perfetto itself
// has no slack; set this to 0 to be exactly as strict as Perfetto.
constexpr ns_t nest_tolerance_ns = 1;

// Perfetto multiplies µs by 1000 into an int64; larger values overflow.
constexpr double max_time_us = 9.2e15;

constexpr std::uint64_t max_uint32 = std::numeric_limits<std::uint32_t>::max();
constexpr ns_t open_end = std::numeric_limits<ns_t>::max();

// ---------------------------------------------------------------------------
// Formatting helpers.

// Escapes bytes that are not printable ASCII as \xNN. Used for raw input and
// for parser messages, which quote the offending (possibly invalid) bytes;
// error lines must stay valid UTF-8 so that they can be printed and stored.
std::string printable(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(u));
    }
  }
  return out;
}

// A JSON value as text for a message, cut to a reasonable length (at a UTF-8
// character boundary, so the message stays valid UTF-8).
std::string short_dump(const json& v) {
  constexpr std::size_t max_len = 60;
  std::string s = v.dump();
  if (s.size() > max_len) {
    std::size_t cut = max_len;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) {
      --cut;
    }
    s.resize(cut);
    s += "...";
  }
  return s;
}

std::string quoted(const std::string& s) { return short_dump(json(s)); }

// A number as written, for messages ("3", "3.5").
std::string num_text(const json& v) {
  if (v.is_number_unsigned()) return fmt::format("{}", v.get<std::uint64_t>());
  if (v.is_number_integer()) return fmt::format("{}", v.get<std::int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return short_dump(v);
}

// Nanoseconds as exact decimal microseconds ("3", "3.5", "0.001").
std::string us_text(ns_t ns) {
  if (ns == open_end) return "end of trace";
  const bool negative = ns < 0;
  const std::uint64_t mag = negative ? 0 - static_cast<std::uint64_t>(ns)
                                     : static_cast<std::uint64_t>(ns);
  std::string s = fmt::format("{}{}", negative ? "-" : "", mag / 1000);
  if (const std::uint64_t frac = mag % 1000; frac != 0) {
    std::string digits = fmt::format("{:03}", frac);
    while (digits.back() == '0') digits.pop_back();
    s += '.';
    s += digits;
  }
  return s;
}

// A nlohmann exception's message without its "[json.exception.x.n] " tag,
// made printable (it quotes the offending input bytes).
std::string exception_message(const json::exception& e) {
  std::string_view msg = e.what();
  if (const auto tag_end = msg.find("] "); !msg.empty() && msg.front() == '[' &&
                                           tag_end != std::string_view::npos) {
    msg.remove_prefix(tag_end + 2);
  }
  return printable(msg);
}

const json* member(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// ---------------------------------------------------------------------------
// Value helpers.

// Converts a (validated, finite, non-negative, in-range) time in µs to ns the
// way Perfetto does: integral values are scaled exactly, others rounded.
ns_t to_ns(const json& v) {
  if (v.is_number_unsigned()) {
    return static_cast<ns_t>(v.get<std::uint64_t>()) * 1000;
  }
  if (v.is_number_integer()) return v.get<std::int64_t>() * 1000;
  const double d = v.get<double>();
  if (d == std::trunc(d)) return static_cast<ns_t>(d) * 1000;
  return static_cast<ns_t>(std::llround(d * 1000.0));
}

// Parses a flow id the way Perfetto does: integers as they are, strings as
// hexadecimal (Perfetto drops a flow whose string id is not hex).
std::optional<std::uint64_t> flow_id_value(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  if (!v.is_string()) return std::nullopt;
  std::string_view s = v.get_ref<const std::string&>();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
  }
  if (s.empty() || s.size() > 16) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : s) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = (value << 4) | digit;
  }
  return value;
}

// An async id (`id`, or the value inside `id2`) as a key fragment. Perfetto
// hashes string ids and integer ids differently, so "1" and 1 differ.
// Floats, bools etc. are not extracted at all (the event is dropped).
std::optional<std::string> async_id_key(const json& v) {
  if (v.is_string()) return "s:" + v.get<std::string>();
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;  // does not fit Perfetto's int64
    }
    return fmt::format("i:{}", u);
  }
  if (v.is_number_integer()) {
    return fmt::format("i:{}", static_cast<std::uint64_t>(v.get<std::int64_t>()));
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Per-event input.

// The members of an event that the checker reads, found in one pass over the
// event (looking each one up by name costs several times more).
struct event_fields {
  const json* ph = nullptr;
  const json* name = nullptr;
  const json* cat = nullptr;
  const json* pid = nullptr;
  const json* tid = nullptr;
  const json* ts = nullptr;
  const json* dur = nullptr;
  const json* tts = nullptr;
  const json* tdur = nullptr;
  const json* args = nullptr;
  const json* s = nullptr;
  const json* id = nullptr;
  const json* id2 = nullptr;
  const json* bp = nullptr;
  const json* bind_id = nullptr;
  const json* flow_in = nullptr;
  const json* flow_out = nullptr;

  explicit event_fields(const json& ev) {
    for (auto it = ev.begin(); it != ev.end(); ++it) {
      const std::string_view k = it.key();
      const json* v = &it.value();
      if (k == "ph") ph = v;
      else if (k == "name") name = v;
      else if (k == "cat") cat = v;
      else if (k == "pid") pid = v;
      else if (k == "tid") tid = v;
      else if (k == "ts") ts = v;
      else if (k == "dur") dur = v;
      else if (k == "tts") tts = v;
      else if (k == "tdur") tdur = v;
      else if (k == "args") args = v;
      else if (k == "s") s = v;
      else if (k == "id") id = v;
      else if (k == "id2") id2 = v;
      else if (k == "bp") bp = v;
      else if (k == "bind_id") bind_id = v;
      else if (k == "flow_in") flow_in = v;
      else if (k == "flow_out") flow_out = v;
    }
  }
};

// "event 12 (pid 5 tid 7, ts 3.5)" from the raw fields, whatever their type.
std::string raw_where(std::size_t index, const event_fields& f) {
  std::string inner;
  if (f.pid != nullptr) inner += "pid " + num_text(*f.pid);
  if (f.tid != nullptr) inner += (inner.empty() ? "tid " : " tid ") + num_text(*f.tid);
  if (f.ts != nullptr) inner += (inner.empty() ? "ts " : ", ts ") + num_text(*f.ts);
  if (inner.empty()) return fmt::format("event {}", index);
  return fmt::format("event {} ({})", index, inner);
}

// ---------------------------------------------------------------------------
// What is kept of an event for the cross-event checks.

// Interns strings, so that the record kept per event stays small (names and
// categories repeat a lot). Id 0 is the empty string.
class string_pool {
 public:
  using id = std::uint32_t;
  string_pool() { intern(std::string()); }
  id intern(const std::string& s) {
    const auto [it, inserted] = ids_.try_emplace(s, static_cast<id>(strings_.size()));
    if (inserted) strings_.push_back(&it->first);  // nodes never move
    return it->second;
  }
  const std::string& operator[](id i) const { return *strings_[i]; }

 private:
  std::unordered_map<std::string, id> ids_;
  std::vector<const std::string*> strings_;
};

using str_id = string_pool::id;
constexpr str_id empty_str = 0;

enum class flow_step : std::uint8_t { begin, step, end };

struct rec {
  std::size_t index = 0;  // position in traceEvents
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;  // 0: absent (an explicit tid 0 is rejected)
  ns_t ts = 0;
  ns_t dur = 0;           // X only
  str_id name = empty_str;
  str_id cat = empty_str;
  str_id key = empty_str;      // b/e: async track; flows: flow identity
  str_id id_text = empty_str;  // the id as written, for messages
  char ph = 0;
  flow_step step = flow_step::begin;
  bool v2_flow = false;    // bind_id + flow_in/flow_out on a slice event
  bool bind_next = false;  // f without "bp":"e": binds to the next slice

  thread_key thread() const { return {pid, tid}; }
  ns_t end() const { return ts + dur; }
};

std::string describe(const rec& r) {
  if (r.tid != 0) {
    return fmt::format("event {} (pid {} tid {}, ts {})", r.index, r.pid, r.tid,
                       us_text(r.ts));
  }
  return fmt::format("event {} (pid {}, ts {})", r.index, r.pid, us_text(r.ts));
}

// Start and end times of the slices of one thread, for "is there a slice
// around / after this ts" queries (flow binding).
struct span_index {
  std::vector<std::pair<ns_t, ns_t>> spans;  // sorted by start after build()
  std::vector<ns_t> max_end;                 // max end over spans[0..i]

  void build() {
    std::sort(spans.begin(), spans.end());
    max_end.resize(spans.size());
    ns_t m = std::numeric_limits<ns_t>::min();
    for (std::size_t i = 0; i < spans.size(); ++i) {
      m = std::max(m, spans[i].second);
      max_end[i] = m;
    }
  }
  // Some slice starts at or before ts and ends at or after it.
  bool encloses(ns_t ts) const {
    const auto it = std::upper_bound(
        spans.begin(), spans.end(), ts + nest_tolerance_ns,
        [](ns_t t, const std::pair<ns_t, ns_t>& s) { return t < s.first; });
    if (it == spans.begin()) return false;
    const auto last = static_cast<std::size_t>(it - spans.begin()) - 1;
    return max_end[last] >= ts - nest_tolerance_ns;
  }
  // Some slice starts at or after ts.
  bool starts_after(ns_t ts) const {
    return !spans.empty() && spans.back().first >= ts - nest_tolerance_ns;
  }
};

// Matches an end (E or e) against a stack of open begins as Perfetto's
// SliceTracker does: the innermost open slice whose category equals the end's
// (when the end has one) and whose name equals the end's (when the end has
// one). Returns the stack position, or nullopt.
std::optional<std::size_t> match_end(const std::vector<const rec*>& open,
                                     const rec& end) {
  for (std::size_t i = open.size(); i-- > 0;) {
    const rec& b = *open[i];
    if (end.cat != empty_str && end.cat != b.cat) continue;
    if (end.name != empty_str && b.name != empty_str && end.name != b.name) continue;
    return i;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------

class checker {
 public:
  explicit checker(report& r) : r_(r) {}

  void run(std::string_view text) {
    if (text.empty()) {
      error("empty input (an empty trace is {\"traceEvents\":[]})");
      return;
    }
    check_prefix(text);
    if (!parse(text)) return;  // cross-event checks on a truncated trace are noise
    check_complete_events();
    check_begin_end();
    check_declared_depth();
    check_async();
    check_flows();
  }

 private:
  // The event being checked, and the "event N (pid P tid T, ts X)" prefix of
  // its error lines, formatted only when there is an error.
  struct current_event {
    std::size_t index;
    const event_fields& fields;
    mutable std::optional<std::string> where;
  };

  void error(std::string line) {
    ++r_.error_count;
    if (r_.errors.size() < max_stored_errors) r_.errors.push_back(std::move(line));
  }

  void fail(const current_event& ev, const std::string& msg) {
    if (!ev.where) ev.where = raw_where(ev.index, ev.fields);
    error(fmt::format("{}: {}", *ev.where, msg));
  }

  std::string str(str_id i) const { return quoted(pool_[i]); }

  void check_prefix(std::string_view text) {
    const auto starts = [&](std::string_view p) {
      return text.substr(0, p.size()) == p;
    };
    if (starts("{\"") || starts("[{\"")) return;
    const char c = text.front();
    const std::string what =
        (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            ? std::string("leading whitespace")
            : fmt::format("the trace starts with {}", printable(text.substr(0, 8)));
    error(fmt::format(
        "{}: a trace must start with {} or {} (Perfetto recognises JSON "
        "traces by these first bytes; an empty trace is {})",
        what, R"({")", R"([{")", R"({"traceEvents":[]})"));
  }

  // Parses the document, checking each element of traceEvents as soon as it
  // is complete. Returns false on a parse error.
  bool parse(std::string_view text) {
    bool top_is_object = false;
    bool in_events = false;
    int events_depth = 0;  // callback depth of the elements of traceEvents
    bool saw_trace_events = false;
    std::string top_key;
    std::size_t index = 0;

    // nlohmann reports container starts/ends at the depth of the container
    // itself and keys/values one level deeper; the top level is depth 0.
    const json::parser_callback_t callback =
        [&](int depth, json::parse_event_t event, json& parsed) -> bool {
      using pe = json::parse_event_t;
      switch (event) {
        case pe::object_start:
        case pe::array_start:
          if (depth == 0) {
            top_is_object = event == pe::object_start;
            if (!top_is_object) {  // bare array: the array is traceEvents
              in_events = true;
              events_depth = 1;
            }
          } else if (depth == 1 && top_is_object && event == pe::array_start &&
                     top_key == "traceEvents") {
            if (saw_trace_events) error("duplicate \"traceEvents\" key");
            saw_trace_events = true;
            in_events = true;
            events_depth = 2;
          }
          return true;
        case pe::key:
          if (depth == 1 && top_is_object) top_key = parsed.get<std::string>();
          return true;
        case pe::object_end:
        case pe::array_end:
          if (in_events && depth == events_depth) {
            if (event == pe::object_end) {
              check_event(parsed, index);
            } else {
              error(fmt::format("event {}: not a JSON object (an array)", index));
            }
            ++index;
            return false;  // checked: drop it instead of keeping it in the DOM
          }
          if (in_events && depth == events_depth - 1) in_events = false;
          return true;
        case pe::value:
          if (in_events && depth == events_depth) {
            error(fmt::format("event {}: not a JSON object (a {})", index,
                              parsed.type_name()));
            ++index;
            return false;
          }
          return true;
      }
      return true;
    };

    json top;
    try {
      top = json::parse(text.data(), text.data() + text.size(), callback,
                        /*allow_exceptions=*/true, /*ignore_comments=*/false);
    } catch (const json::parse_error& e) {
      r_.event_count = index;
      error(fmt::format("JSON parse error at byte {}: {}", e.byte,
                        exception_message(e)));
      return false;
    } catch (const json::exception& e) {  // e.g. number overflow (1e999)
      r_.event_count = index;
      error(fmt::format("JSON parse error: {}", exception_message(e)));
      return false;
    }
    r_.event_count = index;

    if (top.is_array()) return true;
    if (!top.is_object()) {
      error(fmt::format("top-level value must be an object or an array, got {}",
                        top.type_name()));
      return true;
    }
    if (const json* events = member(top, "traceEvents")) {
      if (!events->is_array()) {
        error(fmt::format("\"traceEvents\" must be an array, got {}",
                          events->type_name()));
      }
    } else {
      error("top-level object has no \"traceEvents\" array");
    }
    if (const json* metadata = member(top, "metadata")) {
      if (metadata->is_object()) {
        r_.metadata = *metadata;
      } else {
        error(fmt::format("\"metadata\" must be an object, got {}",
                          metadata->type_name()));
      }
    }
    // Perfetto fails the whole import when these are not strings.
    for (const char* key : {"displayTimeUnit", "systemTraceEvents"}) {
      if (const json* v = member(top, key); v != nullptr && !v->is_string()) {
        error(fmt::format("\"{}\" must be a string, got {} (Perfetto fails the "
                          "import)", key, v->type_name()));
      }
    }
    return true;
  }

  // Checks one element of traceEvents and keeps what the cross-event checks
  // need.
  void check_event(const json& event, std::size_t index) {
    const event_fields f(event);
    const current_event ev{index, f, std::nullopt};

    // --- phase
    if (f.ph == nullptr) {
      fail(ev, "missing \"ph\"");
      return;
    }
    if (!f.ph->is_string()) {
      fail(ev, fmt::format("\"ph\" must be a string, got {}", short_dump(*f.ph)));
      return;
    }
    const std::string& ph = f.ph->get_ref<const std::string&>();
    ++r_.phase_counts[ph];
    if (ph.size() != 1 ||
        std::string_view("XBEiICMbenstf").find(ph[0]) == std::string_view::npos) {
      fail(ev, fmt::format("unknown phase {} (Perfetto drops it silently; "
                           "allowed: X B E i I C M b e n s t f)", quoted(ph)));
      return;
    }
    const char p = ph[0];
    const bool instant = p == 'i' || p == 'I';

    // --- name: required everywhere except on E, where Perfetto uses it (when
    // set) to pick the B that the E closes.
    static const std::string no_name;
    const std::string* name = &no_name;
    if (f.name != nullptr) {
      if (!f.name->is_string()) {
        fail(ev, fmt::format("\"name\" must be a string, got {}", short_dump(*f.name)));
      } else {
        name = &f.name->get_ref<const std::string&>();
        if (name->empty() && p != 'E') fail(ev, "empty \"name\"");
        if (p == 'X' || instant || p == 'C' || p == 'b') ++r_.name_counts[*name];
      }
    } else if (p != 'E') {
      fail(ev, fmt::format("{} event without \"name\"", p));
    }

    // --- cat
    const std::string* cat = &no_name;
    if (f.cat != nullptr) {
      if (f.cat->is_string()) {
        cat = &f.cat->get_ref<const std::string&>();
      } else {
        fail(ev, fmt::format("\"cat\" must be a string, got {}", short_dump(*f.cat)));
      }
    }

    // --- instant scope
    bool thread_scoped = true;
    if (instant && f.s != nullptr) {
      if (f.s->is_string() && (*f.s == "t" || *f.s == "p" || *f.s == "g")) {
        thread_scoped = *f.s == "t";
      } else {
        fail(ev, fmt::format("instant scope \"s\" must be \"t\", \"p\" or \"g\", "
                             "got {}", short_dump(*f.s)));
      }
    }

    // --- pid / tid. Perfetto coerces both to uint32: negative or larger
    // values become 0, and a tid of 0 (or none) becomes the pid, which puts
    // the event on the process's main thread. So a tid must be a real,
    // non-zero thread id wherever the event lands on a thread track.
    bool needs_tid = false;
    switch (p) {
      case 'X': case 'B': case 'E': case 's': case 't': case 'f':
        needs_tid = true;
        break;
      case 'i': case 'I':
        needs_tid = thread_scoped;
        break;
      case 'M':
        needs_tid = *name == "thread_name" || *name == "thread_sort_index";
        break;
      default:
        break;
    }
    const auto get_id = [&](const json* v, const char* key, bool required,
                            const char* why_missing) -> std::optional<std::uint32_t> {
      if (v == nullptr) {
        if (required) fail(ev, fmt::format("missing \"{}\"{}", key, why_missing));
        return std::nullopt;
      }
      if (!v->is_number_unsigned()) {
        fail(ev, fmt::format("\"{}\" must be an unsigned integer, got {} "
                             "(Perfetto coerces it, usually to 0)",
                             key, short_dump(*v)));
        return std::nullopt;
      }
      const auto value = v->get<std::uint64_t>();
      if (value > max_uint32) {
        fail(ev, fmt::format("{} {} does not fit in 32 bits (Perfetto coerces it "
                             "to 0)", key, value));
        return std::nullopt;
      }
      return static_cast<std::uint32_t>(value);
    };
    const std::optional<std::uint32_t> pid = get_id(f.pid, "pid", true, "");
    std::optional<std::uint32_t> tid = get_id(
        f.tid, "tid", needs_tid,
        " (Perfetto would put the event on the thread whose tid is the pid)");
    if (tid && *tid == 0) {
      fail(ev, "tid 0 (Perfetto replaces it with the pid, merging the event into "
               "the process's main thread; use the real thread id)");
      tid.reset();
    }

    // --- times
    const auto get_time = [&](const json* v, const char* key) -> std::optional<ns_t> {
      if (v == nullptr) return std::nullopt;
      if (!v->is_number()) {
        fail(ev, fmt::format("\"{}\" must be a number, got {}", key, short_dump(*v)));
        return std::nullopt;
      }
      const auto d = v->get<double>();
      if (!std::isfinite(d)) {
        fail(ev, fmt::format("\"{}\" is not finite", key));
        return std::nullopt;
      }
      if (d < 0) {
        fail(ev, fmt::format("\"{}\" is negative ({})", key, num_text(*v)));
        return std::nullopt;
      }
      if (d > max_time_us) {
        fail(ev, fmt::format("\"{}\" {} is too large (overflows Perfetto's int64 "
                             "ns)", key, num_text(*v)));
        return std::nullopt;
      }
      return to_ns(*v);
    };
    const std::optional<ns_t> ts = get_time(f.ts, "ts");
    if (f.ts == nullptr && p != 'M') fail(ev, "missing \"ts\"");
    const std::optional<ns_t> dur = get_time(f.dur, "dur");
    if (f.dur == nullptr && p == 'X') fail(ev, "X event without \"dur\"");
    // Perfetto drops any event whose dur/tts/tdur it cannot read as a time.
    (void)get_time(f.tts, "tts");
    (void)get_time(f.tdur, "tdur");

    // --- args
    const json* args = f.args;
    if (args != nullptr && !args->is_object()) {
      fail(ev, fmt::format("\"args\" must be an object, got {}", args->type_name()));
      args = nullptr;
    }

    // --- statistics: thread tracks that carry events
    if ((p == 'X' || p == 'B' || p == 'E' || (instant && thread_scoped)) && pid &&
        tid) {
      r_.threads.emplace(*pid, *tid);
    }

    // --- per phase
    rec r;
    r.index = index;
    r.pid = pid.value_or(0);
    r.tid = tid.value_or(0);
    r.ts = ts.value_or(0);
    r.ph = p;
    const bool located = pid && tid && ts;  // enough to place it on a thread

    switch (p) {
      case 'X':
        if (located && dur) {
          r.dur = *dur;
          r.name = pool_.intern(*name);
          x_.push_back(r);
        }
        break;
      case 'B':
      case 'E':
        if (located) {
          r.name = pool_.intern(*name);
          r.cat = pool_.intern(*cat);
          be_.push_back(r);
        }
        break;
      case 'C':
        check_counter(ev, args);
        if (pid && name != &no_name && args != nullptr) count_counter_series(ev, *pid, tid, *name, *args);
        break;
      case 'M':
        check_metadata(ev, *name, args, pid, tid);
        break;
      case 'b':
      case 'e':
      case 'n': {
        const std::optional<std::string> key = async_key(ev, p, *cat, pid);
        if (f.cat == nullptr) {
          fail(ev, fmt::format("{} event without \"cat\" (Perfetto keys async "
                               "events by cat and id)", p));
        }
        if (p != 'n' && key && pid && ts && f.cat != nullptr) {
          r.name = pool_.intern(*name);
          r.cat = pool_.intern(*cat);
          r.key = pool_.intern(*key);
          r.id_text = pool_.intern(short_dump(f.id != nullptr ? *f.id : *f.id2));
          async_.push_back(r);
        }
        break;
      }
      case 's':
      case 't':
      case 'f': {
        std::optional<std::uint64_t> id;
        if (f.id == nullptr) {
          fail(ev, fmt::format("flow event {} without \"id\"", p));
        } else if (id = flow_id_value(*f.id); !id) {
          fail(ev, fmt::format("flow id {} must be an integer or a hexadecimal "
                               "string (Perfetto drops the flow otherwise)",
                               short_dump(*f.id)));
        }
        if (id && located) {
          r.name = pool_.intern(*name);
          r.cat = pool_.intern(*cat);
          // Perfetto identifies v1 flows by (id, cat, name).
          r.key = pool_.intern(fmt::format("v1\x1f{}\x1f{}\x1f{}", *cat, *name, *id));
          r.id_text = pool_.intern(short_dump(*f.id));
          r.step = p == 's' ? flow_step::begin
                            : p == 't' ? flow_step::step : flow_step::end;
          r.bind_next = p == 'f' && !(f.bp != nullptr && *f.bp == "e");
          flows_.push_back(r);
        }
        break;
      }
      default:
        break;
    }

    check_v2_flow(ev, p, pid, tid, ts);
  }

  void check_counter(const current_event& ev, const json* args) {
    if (ev.fields.args == nullptr) {
      fail(ev, "C event without \"args\" (a counter needs at least one value)");
      return;
    }
    if (args == nullptr) return;  // not an object: already reported
    if (args->empty()) {
      fail(ev, "C event with empty \"args\" (a counter needs at least one value)");
      return;
    }
    for (auto it = args->begin(); it != args->end(); ++it) {
      const json& value = it.value();
      if (!value.is_number() || !std::isfinite(value.get<double>())) {
        fail(ev, fmt::format("counter value args.{} must be a finite number, got {}",
                             it.key(), short_dump(value)));
      }
    }
  }

  // Perfetto makes one process track per counter name, id and args key, named
  // "<name>[ id: <id>] <key>", whatever thread a sample names: samples of
  // several threads on one track zigzag between the threads' values.
  void count_counter_series(const current_event& ev, std::uint32_t pid,
                            std::optional<std::uint32_t> tid, const std::string& name,
                            const json& args) {
    const std::string series = [&] {
      std::string text = name;
      if (const json* id = ev.fields.id; id != nullptr)
        text += " id: " + (id->is_string() ? id->get<std::string>() : id->dump());
      return text;
    }();
    for (auto it = args.begin(); it != args.end(); ++it)
      ++r_.counter_tracks[{pid, series + " " + it.key()}];
    if (!tid) return;
    const auto [known, added] = counter_threads_.try_emplace({pid, series}, *tid);
    if (!added && known->second != *tid && known->second != 0) {
      fail(ev, fmt::format("counter {} has samples of threads {} and {} on one track; Perfetto "
                           "draws them as one series (give each thread's series an id)",
                           quoted(series), known->second, *tid));
      known->second = 0;  // said once per series
    }
  }

  void check_metadata(const current_event& ev, const std::string& name,
                      const json* args, std::optional<std::uint32_t> pid,
                      std::optional<std::uint32_t> tid) {
    if (name.empty()) return;  // already reported
    const auto arg = [&](const char* key) -> const json* {
      return args == nullptr ? nullptr : member(*args, key);
    };
    if (name == "process_name" || name == "thread_name") {
      const json* v = arg("name");
      if (v == nullptr || !v->is_string() || v->get_ref<const std::string&>().empty()) {
        fail(ev, fmt::format("M {} needs a non-empty string args.name", name));
        return;
      }
      if (name == "process_name" && pid) {
        r_.process_names[*pid] = v->get<std::string>();
      } else if (name == "thread_name" && pid && tid) {
        r_.thread_names[{*pid, *tid}] = v->get<std::string>();
      }
    } else if (name == "process_sort_index" || name == "thread_sort_index") {
      const json* v = arg("sort_index");
      if (v == nullptr || !v->is_number_integer()) {
        fail(ev, fmt::format("M {} needs an integer args.sort_index", name));
      }
    } else if (name == "process_labels") {
      const json* v = arg("labels");
      if (v == nullptr || !v->is_string()) {
        fail(ev, "M process_labels needs a string args.labels");
      }
    } else {
      fail(ev, fmt::format("unknown metadata name {} (allowed: process_name, "
                           "thread_name, process_sort_index, thread_sort_index, "
                           "process_labels; Perfetto ignores others)", quoted(name)));
    }
  }

  // The key of the async track of a b/e/n event. Perfetto's cookie hashes cat
  // and id; `id` and id2.global are global, id2.local is scoped to the process.
  std::optional<std::string> async_key(const current_event& ev, char p,
                                       const std::string& cat,
                                       std::optional<std::uint32_t> pid) {
    const event_fields& f = ev.fields;
    if (f.id != nullptr) {
      if (auto k = async_id_key(*f.id)) return fmt::format("g\x1f{}\x1f{}", cat, *k);
      fail(ev, fmt::format("async id {} must be a string or an int64 integer "
                           "(Perfetto drops the event otherwise)", short_dump(*f.id)));
      return std::nullopt;
    }
    if (f.id2 != nullptr) {
      const json* global = f.id2->is_object() ? member(*f.id2, "global") : nullptr;
      const json* local = f.id2->is_object() ? member(*f.id2, "local") : nullptr;
      if (global != nullptr) {
        if (auto k = async_id_key(*global)) {
          return fmt::format("g\x1f{}\x1f{}", cat, *k);
        }
      } else if (local != nullptr) {
        if (auto k = async_id_key(*local)) {
          return fmt::format("l\x1f{}\x1f{}\x1f{}", pid.value_or(0), cat, *k);
        }
      }
      fail(ev, fmt::format("\"id2\" must be {{\"local\": ID}} or {{\"global\": ID}} "
                           "with a string or integer ID, got {}", short_dump(*f.id2)));
      return std::nullopt;
    }
    fail(ev, fmt::format("{} event without \"id\" or \"id2\"", p));
    return std::nullopt;
  }

  // Flow v2: "bind_id" with "flow_out"/"flow_in" on the slice event itself.
  void check_v2_flow(const current_event& ev, char p, std::optional<std::uint32_t> pid,
                     std::optional<std::uint32_t> tid, std::optional<ns_t> ts) {
    const event_fields& f = ev.fields;
    const auto get_flag = [&](const json* v, const char* key) {
      if (v == nullptr) return false;
      if (!v->is_boolean()) {
        fail(ev, fmt::format("\"{}\" must be a boolean, got {}", key, short_dump(*v)));
        return false;
      }
      return v->get<bool>();
    };
    const bool flow_in = get_flag(f.flow_in, "flow_in");
    const bool flow_out = get_flag(f.flow_out, "flow_out");
    if (f.bind_id == nullptr) {
      if (flow_in || flow_out) {
        fail(ev, "\"flow_in\"/\"flow_out\" without \"bind_id\" (Perfetto ignores them)");
      }
      return;
    }
    if (p != 'X' && p != 'B' && p != 'b' && p != 'n') {
      fail(ev, fmt::format("\"bind_id\" is only honoured on X, B, b and n events "
                           "(Perfetto ignores it on {})", p));
      return;
    }
    const std::optional<std::uint64_t> id = flow_id_value(*f.bind_id);
    if (!id) {
      fail(ev, fmt::format("\"bind_id\" {} must be an integer or a hexadecimal "
                           "string", short_dump(*f.bind_id)));
      return;
    }
    if (!flow_in && !flow_out) {
      fail(ev, "\"bind_id\" without \"flow_in\" or \"flow_out\" set to true "
               "(Perfetto ignores the flow)");
      return;
    }
    if (!pid || !ts) return;
    rec r;
    r.index = ev.index;
    r.pid = *pid;
    r.tid = tid.value_or(0);
    r.ts = *ts;
    r.ph = p;
    r.key = pool_.intern(fmt::format("v2\x1f{}", *id));
    r.id_text = pool_.intern(short_dump(*f.bind_id));
    r.step = flow_in && flow_out ? flow_step::step
             : flow_out          ? flow_step::begin
                                 : flow_step::end;
    r.v2_flow = true;
    flows_.push_back(r);
  }

  // X events of one thread must nest: sorted by ts, then in file order, each
  // one must end by the end of the innermost still-open one. File order, not
  // duration, decides between events that begin together: older Perfetto
  // importers take them in file order, and the current one sorts them longest
  // first but keeps file order when their durations are equal too (a parent
  // and its first child that begin and end in the same clock tick). Only an
  // enclosing slice written before what it encloses nests in both.
  void check_complete_events() {
    std::sort(x_.begin(), x_.end(), [](const rec& a, const rec& b) {
      return std::make_tuple(a.pid, a.tid, a.ts, a.index) <
             std::make_tuple(b.pid, b.tid, b.ts, b.index);
    });
    std::vector<const rec*> stack;
    for (std::size_t i = 0; i < x_.size(); ++i) {
      const rec& x = x_[i];
      if (i == 0 || x.thread() != x_[i - 1].thread()) stack.clear();
      while (!stack.empty() && stack.back()->end() <= x.ts + nest_tolerance_ns) {
        stack.pop_back();
      }
      if (!stack.empty() && x.end() > stack.back()->end() + nest_tolerance_ns) {
        const rec& parent = *stack.back();
        if (x.ts == parent.ts) {
          error(fmt::format(
              "{}: X {} [{}, {}] begins with X {} (event {}, [{}, {}]) and encloses it, but "
              "comes later in the file; Perfetto nests slices that begin together in file "
              "order and reports \"slice partially overlaps its enclosing slice\". Write the "
              "enclosing slice first",
              describe(x), str(x.name), us_text(x.ts), us_text(x.end()), str(parent.name),
              parent.index, us_text(parent.ts), us_text(parent.end())));
          continue;
        }
        error(fmt::format(
            "{}: X {} [{}, {}] partially overlaps X {} (event {}, [{}, {}]) on "
            "the same thread; Perfetto drops it. Complete events on one thread "
            "must nest or be disjoint",
            describe(x), str(x.name), us_text(x.ts), us_text(x.end()),
            str(parent.name), parent.index, us_text(parent.ts),
            us_text(parent.end())));
        continue;
      }
      if (stack.size() >= max_nesting_depth) {
        too_deep_.push_back(fmt::format("{}: X {} is nested deeper than {} levels; Perfetto "
                                        "drops it", describe(x), str(x.name), max_nesting_depth));
        continue;
      }
      stack.push_back(&x);
      spans_[x.thread()].spans.emplace_back(x.ts, x.end());
    }
  }

  // Slices deeper than Perfetto shows are errors, unless the metadata declares
  // exactly how many there are (then the loss is said, not silent).
  void check_declared_depth() {
    const char* const key = "regions-deeper-than-perfetto-shows";
    const bool declared = r_.metadata.is_object() && r_.metadata.contains(key);
    if (declared) {
      const nlohmann::json& count = r_.metadata.at(key);
      if (count.is_number_unsigned() && count.get<std::uint64_t>() == too_deep_.size()) return;
      error(fmt::format("metadata \"{}\" is {}, but {} slices are nested deeper than {} levels",
                        key, count.dump(), too_deep_.size(), max_nesting_depth));
    }
    for (std::string& line : too_deep_) error(std::move(line));
  }

  // B/E of one thread pair up like a stack, in Perfetto's order: by ts, with
  // E before anything else at the same ts (so a zero-length B/E pair does not
  // match), then file order.
  void check_begin_end() {
    std::sort(be_.begin(), be_.end(), [](const rec& a, const rec& b) {
      return std::make_tuple(a.pid, a.tid, a.ts, a.ph == 'E' ? 0 : 1, a.index) <
             std::make_tuple(b.pid, b.tid, b.ts, b.ph == 'E' ? 0 : 1, b.index);
    });
    std::vector<const rec*> open;
    const auto close_thread = [&] {
      for (const rec* b : open) {
        error(fmt::format("{}: B {} did not end (no matching E on its thread)",
                          describe(*b), str(b->name)));
        spans_[b->thread()].spans.emplace_back(b->ts, open_end);
      }
      open.clear();
    };
    for (std::size_t i = 0; i < be_.size(); ++i) {
      const rec& r = be_[i];
      if (i != 0 && r.thread() != be_[i - 1].thread()) close_thread();
      if (r.ph == 'B') {
        if (open.size() >= max_nesting_depth) {
          too_deep_.push_back(fmt::format("{}: B {} is nested deeper than {} levels; Perfetto "
                                          "drops it", describe(r), str(r.name),
                                          max_nesting_depth));
          continue;
        }
        open.push_back(&r);
        continue;
      }
      const std::optional<std::size_t> m = match_end(open, r);
      if (!m) {
        error(fmt::format("{}: E{} has no matching open B on its thread; "
                          "Perfetto ignores it{}",
                          describe(r), r.name == empty_str ? "" : " " + str(r.name),
                          open.empty() ? ""
                                       : fmt::format(" (the innermost open B is {})",
                                                     str(open.back()->name))));
        continue;
      }
      const rec& b = *open[*m];
      if (*m + 1 != open.size()) {
        error(fmt::format("{}: E closes B {} (event {}) while B {} (event {}), "
                          "opened inside it, is still open (improper nesting)",
                          describe(r), str(b.name), b.index,
                          str(open.back()->name), open.back()->index));
      }
      spans_[b.thread()].spans.emplace_back(b.ts, r.ts);
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(*m));
    }
    close_thread();
  }

  // b/e pair up per async track (cat + id), in ts order (file order for equal
  // ts). Perfetto also matches the name of an `e` against the open `b`s of
  // the track, so an `e` with another name leaves the `b` open.
  void check_async() {
    std::stable_sort(async_.begin(), async_.end(),
                     [](const rec& a, const rec& b) { return a.ts < b.ts; });
    std::unordered_map<str_id, std::vector<const rec*>> open;
    for (std::size_t i = 0; i < async_.size(); ++i) {
      const rec& r = async_[i];
      std::vector<const rec*>& stack = open[r.key];
      const std::string track =
          fmt::format("cat {}, id {}", str(r.cat), pool_[r.id_text]);
      if (r.ph == 'b') {
        if (stack.size() >= max_nesting_depth) {
          error(fmt::format("{}: b {} ({}) is nested deeper than {} levels",
                            describe(r), str(r.name), track, max_nesting_depth));
          continue;
        }
        stack.push_back(&r);
        continue;
      }
      const std::optional<std::size_t> m = match_end(stack, r);
      if (!m) {
        std::string why;
        if (!stack.empty()) {
          why = fmt::format("; the open b with this cat and id is named {}, and "
                            "Perfetto matches e to b by name too",
                            str(stack.back()->name));
        } else {
          const auto later = std::find_if(
              async_.begin() + static_cast<std::ptrdiff_t>(i), async_.end(),
              [&](const rec& o) { return o.ph == 'b' && o.key == r.key; });
          if (later != async_.end()) {
            why = fmt::format("; its b (event {}) comes later, at ts {}",
                              later->index, us_text(later->ts));
          }
        }
        error(fmt::format("{}: e {} ({}) has no open b{}", describe(r), str(r.name),
                          track, why));
        continue;
      }
      if (*m + 1 != stack.size()) {
        error(fmt::format("{}: e closes b {} (event {}) while b {} (event {}) on "
                          "the same async track is still open (improper nesting)",
                          describe(r), str(stack[*m]->name), stack[*m]->index,
                          str(stack.back()->name), stack.back()->index));
      }
      stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(*m));
    }
    std::vector<const rec*> unclosed;
    for (const auto& entry : open) {
      unclosed.insert(unclosed.end(), entry.second.begin(), entry.second.end());
    }
    std::sort(unclosed.begin(), unclosed.end(),
              [](const rec* a, const rec* b) { return a->index < b->index; });
    for (const rec* b : unclosed) {
      error(fmt::format("{}: b {} (cat {}, id {}) did not end (no matching e)",
                        describe(*b), str(b->name), str(b->cat), pool_[b->id_text]));
    }
  }

  // Flows, in ts order: a step or end needs an earlier begin with the same key
  // ((cat, name, id) for s/t/f, bind_id for v2). Perfetto never closes a flow,
  // so a second begin with the same key is a duplicate, which it drops. A v1
  // flow event binds to the innermost open slice of its thread (an f without
  // "bp":"e" to the next slice that begins), so that slice must exist.
  void check_flows() {
    for (auto& entry : spans_) entry.second.build();
    std::stable_sort(flows_.begin(), flows_.end(),
                     [](const rec& a, const rec& b) { return a.ts < b.ts; });
    std::set<str_id> started;
    const span_index no_spans;
    for (const rec& f : flows_) {
      const std::string what =
          f.v2_flow ? fmt::format("flow {} of {} (bind_id {})",
                                  f.step == flow_step::begin  ? "out"
                                  : f.step == flow_step::step ? "in/out"
                                                              : "in",
                                  f.ph, pool_[f.id_text])
                    : fmt::format("flow {} {} (cat {}, id {})", f.ph, str(f.name),
                                  str(f.cat), pool_[f.id_text]);
      if (f.step == flow_step::begin) {
        if (!started.insert(f.key).second) {
          error(fmt::format("{}: {} reuses the key of an earlier flow; Perfetto "
                            "never closes flows and drops this one",
                            describe(f), what));
        }
      } else if (started.count(f.key) == 0) {
        error(fmt::format("{}: {} has no earlier start of the same flow; Perfetto "
                          "drops it", describe(f), what));
      }
      if (f.v2_flow) continue;  // bound to the slice that carries it
      const auto it = spans_.find(f.thread());
      const span_index& spans = it == spans_.end() ? no_spans : it->second;
      if (f.bind_next) {
        if (!spans.starts_after(f.ts)) {
          error(fmt::format("{}: {} (no \"bp\":\"e\") binds to the next slice on "
                            "its thread, but none starts at or after it",
                            describe(f), what));
        }
      } else if (!spans.encloses(f.ts)) {
        error(fmt::format("{}: {} has no enclosing slice on its thread to bind to",
                          describe(f), what));
      }
    }
  }

  report& r_;
  string_pool pool_;
  std::vector<rec> x_;      // X events
  std::vector<rec> be_;     // B and E events
  std::vector<std::string> too_deep_;  // errors for X and B slices deeper than Perfetto shows
  std::vector<rec> async_;  // b and e events
  std::vector<rec> flows_;  // s/t/f, and slices carrying v2 flows
  std::map<thread_key, span_index> spans_;  // slices per thread, for flows
  // Per counter track prefix ("<name>[ id: <id>]"): the thread of its samples, 0 once mixed.
  std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> counter_threads_;
};

}  // namespace

report check_text(std::string_view json_text) {
  report r;
  checker(r).run(json_text);
  return r;
}

report check_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(fmt::format("cannot read {}: is a directory", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(fmt::format(
        "cannot open {}: {}", path,
        std::error_code(errno, std::generic_category()).message()));
  }
  std::string text;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) {
    text.reserve(static_cast<std::size_t>(size));
  }
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw std::runtime_error(fmt::format("cannot read {}: I/O error", path));
  }
  return check_text(text);
}

}  // namespace ferret::trace_check
