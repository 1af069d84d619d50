// backends/writers/otf2 — the memory of OTF2's buffers (OTF2_MemoryCallbacks).
//
// OTF2 gives every location an event buffer (and, at the final flush, a local
// definition buffer) and asks for one chunk when it creates the buffer, then
// one more each time the buffer fills. Refusing a request makes it flush that
// buffer to its file (pre_flush says OTF2_FLUSH), free its chunks and ask
// again. When it writes a buffer's last chunk it first fills the chunk's
// unused rest (memset), so every chunk is touched whole once.
//
// What OTF2 does by itself (malloc, no limit) costs per location ever seen, not
// per byte recorded: each location held its chunks to the end, and at exit each
// one's 1 MiB event chunk and 4 MiB definition chunk were filled and freed in
// turn (glibc then grew and trimmed its heap every time): 18 ms per thread ever
// created. Here:
//   - chunks are mapped fresh (mmap), so that the unused part of a location's
//     chunk costs nothing until OTF2 fills it at the end;
//   - an event buffer gets more than its first chunk only while it holds fewer
//     than max_event_chunks and all event buffers together hold less than
//     event_budget: the memory for events follows the events not yet written,
//     with one chunk per location at least (OTF2 needs it);
//   - freed chunks are kept for reuse, a few: the chunks of the final flush,
//     which OTF2 fills whole, are then already in memory.
#pragma once

#include <otf2/otf2.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferret::otf2 {

class chunk_pool {
 public:
  static constexpr std::size_t max_event_chunks = 16;           // per event buffer
  static constexpr std::uint64_t event_budget = 64ULL << 20U;  // all event buffers
  static constexpr std::size_t kept_chunks = 8;                // freed, for reuse

  chunk_pool();
  ~chunk_pool();
  chunk_pool(const chunk_pool&) = delete;
  chunk_pool& operator=(const chunk_pool&) = delete;

  /// The callbacks to pass to OTF2_Archive_SetMemoryCallbacks with this pool as
  /// their data.
  static const OTF2_MemoryCallbacks callbacks;

  /// A chunk for the buffer whose per-buffer data is `*buffer`; nullptr when
  /// refused (see above) or when no memory is left.
  void* allocate(OTF2_FileType type, void** buffer, std::uint64_t size);
  /// Frees the buffer's chunks; `final`: the buffer is gone.
  void free_all(void** buffer, bool final) noexcept;

 private:
  struct buffer_chunks {
    bool events;
    std::uint64_t size;  // of each chunk
    std::vector<void*> chunks;
  };
  struct kept_chunk {
    void* address;
    std::uint64_t size;
  };

  void* take(std::uint64_t size);
  void give_back(void* chunk, std::uint64_t size) noexcept;

  std::vector<kept_chunk> kept_;
  std::uint64_t event_bytes_ = 0;  // held by event buffers
};

}  // namespace ferret::otf2
