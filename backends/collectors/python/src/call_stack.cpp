// call_stack.cpp — reads the Python frames of the thread that enters a GPU API
// call and writes them, folded and interned, as one kind_call_stack event.
//
//   record_call_stack()                     (application thread, GIL held or not)
//     walk frames: code object + line each   (cpython.hpp: read in place, or the C API)
//     same frames as this thread's last call? ─ yes: reuse its stack record (no lock)
//     registry (one mutex):
//       code object → file, function, library or user  (cached by address, checked
//                                                        against the code's identity)
//       fold (frame_folding.hpp) → one site per node   (interned by name, never freed)
//       node sequence → call_stack record              (interned, never freed)
//     write kind_call_stack with the record's address
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cpython.hpp"
#include "ferret/ferret.hpp"
#include "ferret/runtime/context_source.hpp"
#include "ferret/runtime/per_thread.hpp"
#include "ferret/runtime/runtime.hpp"
#include "frame_folding.hpp"
#include "ferret/runtime/settings.hpp"

namespace ferret::python {
namespace {

using detail::site;

constexpr const char* python_domain = "python";
// The event's own site: the runtime resolves every event's site, this one is
// never shown (call-stack events are not records).
constexpr site stack_event_site{"python call stack", python_domain, nullptr, nullptr, 0, 0};

// A site record with its strings, for the life of the process.
struct owned_site {
  std::string name, function, file;
  site record{};
};

struct code_info {
  code_identity identity{};
  bool library = false;
  std::string file;
  std::string function;
  const site* folded = nullptr;                // library code: its run's node
  std::unordered_map<int, const site*> lines;  // user code: a node per line
};

struct vector_hash {
  std::size_t operator()(const std::vector<const site*>& frames) const noexcept {
    std::size_t hash = frames.size();
    for (const site* frame : frames) hash = hash * 1000003u ^ std::hash<const void*>{}(frame);
    return hash;
  }
};

class registry final : public runtime::collector {
 public:
  static constexpr std::size_t max_cached_code = 1u << 16;

  std::mutex mutex;
  std::atomic<std::uint64_t> stacks_written{0};

  // All below under `mutex`.
  code_info& code(const frame_reader& reader, const py_object* code, const code_identity& identity);
  const site* user_site(code_info& info, int line);
  const detail::call_stack* intern(std::vector<const site*>& frames);
  const site* outer_frames() { return intern_site(outer_frames_name, {}, {}, 0); }

  void collect(std::vector<runtime::gpu_activity>&, std::vector<runtime::gpu_device_info>&,
               bool) override {}
  void add_metadata(runtime::metadata_list& metadata) const override {
    metadata.emplace_back("python-call-stacks", static_cast<std::int64_t>(distinct_stacks_.load()));
    metadata.emplace_back("python-call-stacks-written",
                          static_cast<std::int64_t>(stacks_written.load()));
  }
  void abandon() noexcept override {}

 private:
  const site* intern_site(const std::string& name, std::string_view function,
                          std::string_view file, int line);

  std::unordered_map<const py_object*, code_info> codes_;
  std::unordered_map<std::string, const site*> sites_by_name_;
  std::deque<owned_site> sites_;
  std::unordered_map<std::vector<const site*>, detail::call_stack, vector_hash> stacks_;
  std::atomic<std::uint64_t> distinct_stacks_{0};
};

registry& the_registry() {
  // Leaked on purpose: captures may run during static destruction.
  static auto* instance = new registry;
  return *instance;
}

code_info& registry::code(const frame_reader& reader, const py_object* code,
                          const code_identity& identity) {
  if (const auto it = codes_.find(code); it != codes_.end() && same(it->second.identity, identity))
    return it->second;
  // New, or another code object at a freed one's address.
  if (codes_.size() >= max_cached_code) codes_.clear();
  code_info info;
  info.identity = identity;
  if (!reader.names(code, info.file, info.function)) info.file = info.function = "?";
  const frame_origin origin = classify_file(info.file);
  info.library = origin.library;
  if (info.library)
    info.folded = intern_site(library_frame_name(origin.package, info.function), info.function,
                              info.file, 0);
  return codes_.insert_or_assign(code, std::move(info)).first->second;
}

const site* registry::user_site(code_info& info, int line) {
  const site*& known = info.lines[line];
  if (known == nullptr)
    known = intern_site(user_frame_name(info.file, line, info.function), info.function, info.file,
                        line);
  return known;
}

const site* registry::intern_site(const std::string& name, std::string_view function,
                                  std::string_view file, int line) {
  // By name and place: two code objects of one function share their nodes.
  std::string key = name;
  key += '\n';
  key += file;
  const site*& known = sites_by_name_[key];
  if (known != nullptr) return known;
  owned_site& made = sites_.emplace_back();
  made.name = name;
  made.function = function;
  made.file = file;
  made.record = site{made.name.c_str(), python_domain,
                     made.function.empty() ? nullptr : made.function.c_str(),
                     made.file.empty() ? nullptr : made.file.c_str(),
                     static_cast<std::uint32_t>(line > 0 ? line : 0), 0};
  known = &made.record;
  return known;
}

const detail::call_stack* registry::intern(std::vector<const site*>& frames) {
  auto [it, inserted] = stacks_.try_emplace(std::move(frames), detail::call_stack{});
  if (inserted) {
    // The key's storage is stable in a node-based map: the record points at it.
    it->second = detail::call_stack{static_cast<std::uint32_t>(it->first.size()), it->first.data()};
    distinct_stacks_.fetch_add(1, std::memory_order_relaxed);
  }
  return &it->second;
}

// FERRET_PYTHON (the runtime's settings table documents it) and the CPython
// of this process, decided once.
const frame_reader* python() noexcept {
  static const frame_reader* const chosen = []() -> const frame_reader* {
    const char* setting = std::getenv("FERRET_PYTHON");
    const std::string_view value = setting != nullptr ? setting : "1";
    const std::optional<bool> on = runtime::parse_switch(value);
    if (on == false) return nullptr;
    if (!on && value != "api") {
      runtime::print_message(fmt::format(
          "FERRET_PYTHON='{}' is not valid (expected 0, 1 or api; off, on, no, yes, false, true "
          "also); Python call stacks stay off", value));
      return nullptr;
    }
    const char* reason = "";
    const frame_reader* found = find_frame_reader(value == "api", &reason);
    if (found == nullptr) {
      if (runtime::verbosity() >= 2)
        runtime::print_message(fmt::format("no Python call stacks: {}", reason));
      return nullptr;
    }
    runtime::register_collector(&the_registry());  // for its counts in the metadata
    return found;
  }();
  return chosen;
}

// This thread's last walked frames and the stack they gave (on the heap: see
// ferret/runtime/per_thread.hpp).
struct last_capture {
  std::size_t count = 0;
  bool deeper = false;
  python_frame frames[max_frames];
  code_identity identities[max_frames];
  const detail::call_stack* stack = nullptr;
};

bool same_as_last(const last_capture& last, const python_frame* frames,
                  const code_identity* identities, std::size_t count, bool deeper) noexcept {
  if (last.stack == nullptr || last.count != count || last.deeper != deeper) return false;
  for (std::size_t i = 0; i < count; ++i)
    if (last.frames[i].code != frames[i].code || last.frames[i].line != frames[i].line ||
        !same(last.identities[i], identities[i]))
      return false;
  return true;
}

const detail::call_stack* stack_of(const frame_reader& reader, const python_frame* frames,
                                   const code_identity* identities, std::size_t count, bool deeper) {
  registry& known = the_registry();
  std::lock_guard lock{known.mutex};
  code_info* infos[max_frames];
  bool is_library[max_frames];
  for (std::size_t i = 0; i < count; ++i) {
    infos[i] = &known.code(reader, frames[i].code, identities[i]);
    is_library[i] = infos[i]->library;
  }
  std::size_t nodes[max_nodes];
  bool truncated = false;
  const std::size_t kept = fold_frames(is_library, count, deeper, nodes, truncated);
  std::vector<const site*> sites;
  sites.reserve(kept + 1);
  if (truncated) sites.push_back(known.outer_frames());
  for (std::size_t k = 0; k < kept; ++k) {
    code_info& info = *infos[nodes[k]];
    sites.push_back(info.library ? info.folded : known.user_site(info, frames[nodes[k]].line));
  }
  return known.intern(sites);
}

// Writes the calling thread's Python call stack for the GPU API call being
// entered, as one kind_call_stack event (the runtime places the frames in the
// calling context of the call's GPU work, between the annotated regions and the
// API call; host regions are not touched). Not recording: one load and one
// branch; a process without CPython: one more branch. Never waits for the GIL.
void record_call_stack() noexcept {
  if (!detail::recording()) return;
  const frame_reader* reader = python();
  if (reader == nullptr) return;
  last_capture* last = runtime::per_thread<last_capture>::get();
  python_frame frames[max_frames];
  bool deeper = false;
  const std::size_t count =
      last != nullptr ? reader->walk(frames, max_frames, deeper, last->frames, last->identities, last->count)
                      : reader->walk(frames, max_frames, deeper, nullptr, nullptr, 0);
  if (count == 0) return;

  const detail::call_stack* stack = nullptr;
  try {
    code_identity identities[max_frames];
    for (std::size_t i = 0; i < count; ++i) identities[i] = reader->identify(frames[i].code);
    if (last != nullptr && same_as_last(*last, frames, identities, count, deeper)) {
      stack = last->stack;
      // The same lines, perhaps at other instructions of them: the next walk compares with these.
      std::copy(frames, frames + count, last->frames);
    } else {
      stack = stack_of(*reader, frames, identities, count, deeper);
      if (last != nullptr) {
        last->count = count;
        last->deeper = deeper;
        std::copy(frames, frames + count, last->frames);
        std::copy(identities, identities + count, last->identities);
        last->stack = stack;
      }
    }
    the_registry().stacks_written.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    stack = nullptr;  // out of memory: no Python context for this call
  }
  reader->release(frames, count);
  if (stack != nullptr && stack->depth > 0)
    detail::write_with_payload(detail::word_of(&stack_event_site, detail::kind_call_stack),
                               reinterpret_cast<std::uintptr_t>(stack));
}

// The runtime loads this library for the collectors (context_source.hpp).
[[maybe_unused]] const bool registered = [] {
  runtime::register_launch_context_source(&record_call_stack);
  return true;
}();

}  // namespace
}  // namespace ferret::python
