// names.cpp — interned names (literals and registered names), thread names,
// run metadata.
#include <iterator>

#include "runtime_state.hpp"

namespace ferret::runtime::internal {

// An empty or blank name would vanish (or break a reader: ParaProf drops the
// rest of a TAU file at an empty name): every backend gets one visible placeholder.
std::string visible_name(std::string name) {
  if (name.find_first_not_of(" \t\n\r\v\f") == std::string::npos) return "(unnamed)";
  return name;
}

const char* runtime_state::stored(std::string_view text) {
  return site_names_.emplace_back(text).c_str();
}

const char* runtime_state::stored(const char* text) {
  return text != nullptr ? stored(std::string_view{text}) : nullptr;
}

const site* runtime_state::intern_literal(thread_buffer** slot, const char* literal,
                                          const char* domain) {
  const site* interned = nullptr;
  {
    std::lock_guard lock{sites_mutex_};
    auto& entry = literal_sites_[{literal, domain}];
    // Copied: the literal may live in a shared object unloaded before the drain.
    if (!entry) entry = std::make_unique<site>(site{stored(literal), stored(domain), nullptr, nullptr, 0, 0});
    interned = entry.get();
  }
  if (thread_state* state = bind(slot)) {
    // A signal handler on this thread may look the entry up between these
    // stores: the literal goes in last, so that a half-made entry never matches.
    auto& cached = state->literal_slot(literal);
    cached.literal = nullptr;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    cached.domain = domain;
    cached.interned = interned;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    cached.literal = literal;
  }
  return interned;
}

const site* runtime_state::register_name(std::string_view text, const char* domain) {
  std::lock_guard lock{sites_mutex_};
  auto& entry = named_sites_[{std::string{text}, domain}];
  if (!entry) {
    // Sites hold C strings: a NUL inside the name would cut it short, and
    // "a\0b" and "a\0c" would become one region. It is shown as U+2400 (␀).
    std::string visible{text};
    for (std::size_t at = visible.find('\0'); at != std::string::npos; at = visible.find('\0', at))
      visible.replace(at, 1, "\u2400");
    entry = std::make_unique<site>(site{stored(visible), stored(domain), nullptr, nullptr, 0, 0});
  }
  return entry.get();
}

const name_info* runtime_state::name_of(session& s, const site* record_site) {
  // A small direct-mapped cache in front of the map: a thread's events reuse
  // few sites, and this runs once per drained event.
  auto& cached = s.name_cache[(reinterpret_cast<std::uintptr_t>(record_site) >> 3) %
                              session::name_cache_size];
  if (cached.first == record_site) return cached.second;
  auto& info = s.names[record_site];
  if (!info) {
    const auto text = [](const char* p) { return p != nullptr ? std::string{p} : std::string{}; };
    // Ids stay unique after an unload took names out of the map.
    const auto id = static_cast<std::uint32_t>(s.names.size() + s.unloaded_names.size() - 1);
    info = std::make_unique<name_info>(name_info{id,
                                                 visible_name(text(record_site->name)),
                                                 text(record_site->domain),
                                                 text(record_site->function),
                                                 text(record_site->file), record_site->line});
    const auto [known, added] = s.names_by_text.try_emplace({info->name, info->domain}, info.get());
    if (s.name_identity.size() <= id) s.name_identity.resize(std::size_t{id} + 1);
    s.name_identity[id] = known->second;
  }
  cached = {record_site, info.get()};
  return info.get();
}

void runtime_state::set_thread_name(thread_buffer** slot, std::string_view name) {
  if (thread_state* state = bind(slot)) {
    std::lock_guard lock{state->mutex};
    state->name = name;
  }
}

void runtime_state::set_metadata(std::string_view key, metadata_value value) {
  std::lock_guard lock{metadata_mutex_};
  user_metadata_.set(key, std::move(value));
}


// After an unload drain: the shared object's sites (at addresses in
// [low, high)) were resolved; a new object mapped there must not find them.
void runtime_state::forget_unloaded_names(session& s, std::uintptr_t low, std::uintptr_t high) {
  const auto unloaded = [&](const site* key) {
    const auto address = reinterpret_cast<std::uintptr_t>(key);
    return address >= low && address < high;
  };
  for (auto& cached : s.name_cache)
    if (unloaded(cached.first)) cached = {};
  for (auto it = s.names.begin(); it != s.names.end();) {
    if (unloaded(it->first)) {
      s.unloaded_names.push_back(std::move(it->second));
      it = s.names.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ferret::runtime::internal
