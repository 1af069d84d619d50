#include "nvtx_names.hpp"

#include "ferret/runtime/per_thread.hpp"
#include "ferret/runtime/text.hpp"

#include <cstring>
#include <cwchar>
#include <string>

namespace ferret::nvtx {
namespace {

constexpr std::size_t cache_size = 64;

struct cached_name {
  std::uint64_t hash;        // of the bytes (ASCII names)
  const void* string;        // the registered string, or nullptr for ASCII names
  const char* label;
  const site* record;
  std::size_t length;
};
// A name seen at this very address last time: one strcmp confirms it (the
// bytes may have changed). Programs mostly pass the same buffer for a name:
// a literal, or a Python constant string.
struct cached_address {
  const char* message;
  const char* label;
  const site* record;
};

// Per thread, on the heap (see ferret/runtime/per_thread.hpp).
struct thread_cache {
  cached_address addresses[cache_size] = {};
  cached_name names[cache_size] = {};
};

std::size_t index_of(std::uint64_t key, const char* label) noexcept {
  const std::uint64_t mixed = key ^ (reinterpret_cast<std::uintptr_t>(label) >> 3);
  return static_cast<std::size_t>((mixed ^ (mixed >> 29)) % cache_size);
}

cached_name* slot_for(std::uint64_t hash, const char* label) noexcept {
  thread_cache* cache = runtime::per_thread<thread_cache>::get();
  return cache != nullptr ? &cache->names[index_of(hash, label)] : nullptr;
}

}  // namespace

std::uint64_t hash_text(const char* text, std::size_t& length) noexcept {
  length = std::strlen(text);
  std::uint64_t hash = 0x9E3779B97F4A7C15u ^ length;
  std::size_t at = 0;
  for (; at + 8 <= length; at += 8) {
    std::uint64_t word;
    std::memcpy(&word, text + at, 8);
    hash = (hash ^ word) * 0xFF51AFD7ED558CCDu;
    hash ^= hash >> 32;
  }
  if (at < length) {
    std::uint64_t word = 0;
    std::memcpy(&word, text + at, length - at);
    hash = (hash ^ word) * 0xFF51AFD7ED558CCDu;
    hash ^= hash >> 32;
  }
  return hash;
}

std::string to_utf8(const wchar_t* text) {
  std::string out;
  for (; *text != L'\0'; ++text) {
    auto c = static_cast<std::uint32_t>(*text);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;  // not a character
    runtime::append_utf8(out, c);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Domains and categories

const char* domain::category_label(std::uint32_t category) {
  if (category == 0) return label();
  if (category < direct_categories)
    if (const char* known = direct_[category].load(std::memory_order_acquire)) return known;
  std::lock_guard lock{mutex_};
  // Looked up again under the lock: another thread may have made it meanwhile.
  if (category < direct_categories) {
    if (const char* known = direct_[category].load(std::memory_order_relaxed)) return known;
  } else if (const auto it = other_.find(category); it != other_.end()) {
    return it->second;
  }
  return make_category_label(category, {});
}

void domain::name_category(std::uint32_t category, std::string_view name) {
  if (category == 0) return;
  std::lock_guard lock{mutex_};
  make_category_label(category, name);
}

const char* domain::make_category_label(std::uint32_t category, std::string_view name) {
  std::string& made = labels_.emplace_back(label_);
  made += '/';
  if (name.empty()) {
    made += "category ";
    made += std::to_string(category);
  } else {
    made += name;
  }
  if (category < direct_categories)
    direct_[category].store(made.c_str(), std::memory_order_release);
  else
    other_[category] = made.c_str();
  return made.c_str();
}

std::uint64_t domain::register_schema(std::uint64_t requested, const char* name) {
  std::lock_guard lock{mutex_};
  const std::uint64_t id = requested != 0 ? requested : next_dynamic_schema_++;
  if (name == nullptr || *name == '\0') return id;
  // A static schema registered again (by another NVTX instance) keeps its
  // first name and its one slot.
  if (requested != 0) {
    for (std::size_t i = 0; i < schema_count_; ++i)
      if (schemas_[i].id.load(std::memory_order_relaxed) == id) return id;
    if (other_schemas_.count(id) != 0) return id;
  }
  const char* kept = labels_.emplace_back(name).c_str();
  if (schema_count_ < direct_schemas) {
    schema_slot& slot = schemas_[schema_count_++];
    slot.name = kept;
    slot.id.store(id, std::memory_order_release);
  } else {
    other_schemas_[id] = kept;
  }
  return id;
}

const char* domain::schema_name(std::uint64_t id) {
  if (id == 0) return nullptr;
  for (const schema_slot& slot : schemas_) {
    const std::uint64_t known = slot.id.load(std::memory_order_acquire);
    if (known == 0) return nullptr;
    if (known == id) return slot.name;
  }
  std::lock_guard lock{mutex_};
  const auto it = other_schemas_.find(id);
  return it != other_schemas_.end() ? it->second : nullptr;
}

// ---------------------------------------------------------------------------
// Names

domain* name_table::create_domain(std::string_view name) {
  std::lock_guard lock{mutex_};
  // The same name gives the same domain (as NVTX tools do); never freed.
  domain*& known = domains_[std::string{name}];
  if (known == nullptr) known = &domain_storage_.emplace_back("nvtx:" + std::string{name});
  return known;
}

registered_string* name_table::register_string(std::string_view text) {
  std::lock_guard lock{mutex_};
  return &strings_.emplace_back(registered_string{std::string{text}});
}

const site* name_table::intern(std::string_view text, const char* label) {
  return intern_(text, label);
}

const site* name_table::ascii(const char* message, const char* label) {
  thread_cache* cache = runtime::per_thread<thread_cache>::get();
  cached_address* address = nullptr;
  if (cache != nullptr) {
    address = &cache->addresses[index_of(reinterpret_cast<std::uintptr_t>(message) >> 3, label)];
    if (address->message == message && address->label == label &&
        std::strcmp(address->record->name, message) == 0)
      return address->record;
  }
  const site* record = by_content(message, label);
  if (record != nullptr && address != nullptr) *address = cached_address{message, label, record};
  return record;
}

const site* name_table::by_content(const char* message, const char* label) {
  std::size_t length = 0;
  const std::uint64_t hash = hash_text(message, length);
  cached_name* slot = slot_for(hash, label);
  if (slot != nullptr && slot->record != nullptr && slot->hash == hash && slot->string == nullptr &&
      slot->label == label && slot->length == length &&
      std::memcmp(slot->record->name, message, length) == 0)
    return slot->record;
  const site* record = intern({message, length}, label);
  if (record != nullptr && slot != nullptr) *slot = cached_name{hash, nullptr, label, record, length};
  return record;
}

const site* name_table::registered(const registered_string* string, const char* label) {
  const auto identity = reinterpret_cast<std::uintptr_t>(string);
  cached_name* slot = slot_for(identity, label);
  if (slot != nullptr && slot->record != nullptr && slot->string == string && slot->label == label)
    return slot->record;
  const site* record = intern(string->text, label);
  if (record != nullptr && slot != nullptr)
    *slot = cached_name{identity, string, label, record, string->text.size()};
  return record;
}

const site* name_table::unicode(const wchar_t* message, const char* label) {
  const std::string text = to_utf8(message);
  return ascii(text.c_str(), label);
}

}  // namespace ferret::nvtx
