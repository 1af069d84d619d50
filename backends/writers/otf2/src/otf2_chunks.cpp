// The memory of OTF2's buffers. See otf2_chunks.hpp.
#include "otf2_chunks.hpp"

#include <sys/mman.h>

#include <new>

namespace ferret::otf2 {

const OTF2_MemoryCallbacks chunk_pool::callbacks = {
    [](void* pool, OTF2_FileType type, OTF2_LocationRef, void** buffer, uint64_t size) {
      return static_cast<chunk_pool*>(pool)->allocate(type, buffer, size);
    },
    [](void* pool, OTF2_FileType, OTF2_LocationRef, void** buffer, bool final) {
      static_cast<chunk_pool*>(pool)->free_all(buffer, final);
    },
};

chunk_pool::chunk_pool() { kept_.reserve(kept_chunks); }

chunk_pool::~chunk_pool() {
  for (const kept_chunk& chunk : kept_) ::munmap(chunk.address, chunk.size);
}

void* chunk_pool::allocate(OTF2_FileType type, void** buffer, std::uint64_t size) {
  auto* chunks = static_cast<buffer_chunks*>(*buffer);
  if (chunks == nullptr) {
    chunks = new (std::nothrow) buffer_chunks{type == OTF2_FILETYPE_EVENTS, size, {}};
    if (chunks == nullptr) return nullptr;
    *buffer = chunks;
  }
  // A buffer's first chunk is never refused: OTF2 cannot write without one.
  if (chunks->events && !chunks->chunks.empty() &&
      (chunks->chunks.size() >= max_event_chunks || event_bytes_ + size > event_budget))
    return nullptr;
  void* chunk = take(size);
  if (chunk == nullptr) return nullptr;
  try {
    chunks->chunks.push_back(chunk);
  } catch (...) {
    give_back(chunk, size);
    return nullptr;
  }
  if (chunks->events) event_bytes_ += size;
  return chunk;
}

void chunk_pool::free_all(void** buffer, bool final) noexcept {
  auto* chunks = static_cast<buffer_chunks*>(*buffer);
  if (chunks == nullptr) return;
  for (void* chunk : chunks->chunks) {
    give_back(chunk, chunks->size);
    if (chunks->events) event_bytes_ -= chunks->size;
  }
  chunks->chunks.clear();
  if (final) {
    delete chunks;
    *buffer = nullptr;
  }
}

void* chunk_pool::take(std::uint64_t size) {
  for (std::size_t i = kept_.size(); i > 0; --i) {
    if (kept_[i - 1].size != size) continue;
    void* chunk = kept_[i - 1].address;
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i - 1));
    return chunk;
  }
  void* chunk = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return chunk == MAP_FAILED ? nullptr : chunk;
}

void chunk_pool::give_back(void* chunk, std::uint64_t size) noexcept {
  if (kept_.size() < kept_chunks)
    kept_.push_back({chunk, size});  // within the capacity reserved: no allocation
  else
    ::munmap(chunk, size);
}

}  // namespace ferret::otf2
