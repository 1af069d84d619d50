// nvtx_names.hpp — NVTX domains, categories and strings as ferret site records.
//
// A range or mark's name arrives as a run-time string, often in a new buffer
// each call (PyTorch passes a Python string's bytes) and sometimes in a buffer
// reused for another name: names are keyed by their *content*. Each thread
// keeps two 64-entry caches, checked against the site's own copy of the name:
// by the buffer's address (a hit costs one strcmp: most programs pass the same
// buffer for a name), then by a hash of the bytes (a strlen, the hash and a
// memcmp); no lock either way. A miss interns the name in the runtime
// (register_name, once per distinct name and label).
// Registered strings (nvtxDomainRegisterString) are immutable: keyed by handle.
//
// Domain labels (the ferret domain of the records): "nvtx" for NVTX's default
// domain, "nvtx:<name>" for a domain created with nvtxDomainCreate, with
// "/<category name>" (or "/category <id>") appended for events of a category.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ferret/detail/abi.hpp"

namespace ferret::nvtx {

using detail::site;

// Interns a name under a domain label; the label must live as long as the
// process. Production: the runtime's register_name.
using name_interner = const site* (*)(std::string_view name, const char* label);

class domain {
 public:
  explicit domain(std::string label) : label_(std::move(label)) {}
  domain(const domain&) = delete;
  domain& operator=(const domain&) = delete;

  const char* label() const noexcept { return label_.c_str(); }
  // The label of events of `category` (0: none).
  const char* category_label(std::uint32_t category);
  void name_category(std::uint32_t category, std::string_view name);

  // Payload schemas and enums of NVTX's payload extension. A schema's name
  // names the ranges and marks that carry only a payload. Returns the id:
  // `requested` when not 0 (a static id), else a new dynamic one.
  std::uint64_t register_schema(std::uint64_t requested, const char* name);
  // nullptr when unknown or unnamed; lock-free for the first schemas.
  const char* schema_name(std::uint64_t id);

 private:
  static constexpr std::uint32_t direct_categories = 64;
  const char* make_category_label(std::uint32_t category, std::string_view name);

  const std::string label_;
  std::atomic<const char*> direct_[direct_categories] = {};  // lock-free for small ids
  std::mutex mutex_;
  std::unordered_map<std::uint32_t, const char*> other_;
  std::deque<std::string> labels_;  // stable storage for the labels handed out

  struct schema_slot {
    std::atomic<std::uint64_t> id{0};  // written last: 0 until the name is there
    const char* name = nullptr;
  };
  static constexpr std::size_t direct_schemas = 64;
  schema_slot schemas_[direct_schemas];
  std::size_t schema_count_ = 0;  // under mutex_
  std::unordered_map<std::uint64_t, const char*> other_schemas_;
  std::uint64_t next_dynamic_schema_ = std::uint64_t{1} << 32;  // NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START
};

// An immutable string registered in a domain: its name per label is cached.
struct registered_string {
  std::string text;
};

class name_table {
 public:
  explicit name_table(name_interner interner) : intern_(interner) {}

  domain& default_domain() noexcept { return default_domain_; }
  domain* create_domain(std::string_view name);
  registered_string* register_string(std::string_view text);

  // The site of `message` under `label`: per-thread cache, then the runtime.
  const site* ascii(const char* message, const char* label);
  const site* registered(const registered_string* string, const char* label);
  const site* unicode(const wchar_t* message, const char* label);

 private:
  const site* intern(std::string_view text, const char* label);
  const site* by_content(const char* message, const char* label);

  name_interner intern_;
  domain default_domain_{"nvtx"};
  std::mutex mutex_;
  std::unordered_map<std::string, domain*> domains_;
  std::deque<domain> domain_storage_;  // in place: records keep pointing at the labels
  std::deque<registered_string> strings_;
};

// Hash of a NUL-terminated string's bytes, eight at a time; sets `length`.
std::uint64_t hash_text(const char* text, std::size_t& length) noexcept;

// wchar_t (UTF-32 on Linux) to UTF-8.
std::string to_utf8(const wchar_t* text);

}  // namespace ferret::nvtx
