// See otf2_collectives.hpp.
#include "otf2_collectives.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferret::otf2 {
namespace {

using runtime::process_group;

// Bytes per element of the types OTF2 passes to collectives; 0 for others.
std::size_t type_size(OTF2_Type type) noexcept {
  switch (type) {
    case OTF2_TYPE_UINT8:
    case OTF2_TYPE_INT8: return 1;
    case OTF2_TYPE_UINT16:
    case OTF2_TYPE_INT16: return 2;
    case OTF2_TYPE_UINT32:
    case OTF2_TYPE_INT32:
    case OTF2_TYPE_FLOAT: return 4;
    case OTF2_TYPE_UINT64:
    case OTF2_TYPE_INT64:
    case OTF2_TYPE_DOUBLE: return 8;
    default: return 0;
  }
}

process_group& group_of(void* data) { return *static_cast<process_group*>(data); }

OTF2_CallbackCode result(bool ok) noexcept { return ok ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR; }

std::vector<std::size_t> byte_counts(const std::uint32_t* elements, std::uint32_t ranks,
                                     std::size_t element_size) {
  std::vector<std::size_t> counts(ranks);
  for (std::uint32_t r = 0; r < ranks; ++r) counts[r] = elements[r] * element_size;
  return counts;
}

const OTF2_CollectiveCallbacks callbacks = {
    // release: the group belongs to the MPI layer.
    [](void*, OTF2_CollectiveContext*, OTF2_CollectiveContext*) {},
    [](void* data, OTF2_CollectiveContext*, std::uint32_t* size) {
      *size = group_of(data).size();
      return OTF2_CALLBACK_SUCCESS;
    },
    [](void* data, OTF2_CollectiveContext*, std::uint32_t* rank) {
      *rank = group_of(data).rank();
      return OTF2_CALLBACK_SUCCESS;
    },
    // Local communicators group ranks into shared files (SION substrate only);
    // with one file per location (POSIX) the global group is the only one.
    [](void*, OTF2_CollectiveContext** local, OTF2_CollectiveContext* global, std::uint32_t,
       std::uint32_t global_size, std::uint32_t, std::uint32_t local_size, std::uint32_t,
       std::uint32_t) {
      if (local_size != global_size) return OTF2_CALLBACK_ERROR;
      *local = global;
      return OTF2_CALLBACK_SUCCESS;
    },
    [](void*, OTF2_CollectiveContext*) { return OTF2_CALLBACK_SUCCESS; },
    [](void* data, OTF2_CollectiveContext*) { return result(group_of(data).barrier()); },
    [](void* data, OTF2_CollectiveContext*, void* buffer, std::uint32_t elements, OTF2_Type type,
       std::uint32_t root) {
      const std::size_t size = type_size(type);
      return result(size > 0 && group_of(data).broadcast(buffer, elements * size, root));
    },
    [](void* data, OTF2_CollectiveContext*, const void* in, void* out, std::uint32_t elements,
       OTF2_Type type, std::uint32_t root) {
      const std::size_t size = type_size(type);
      return result(size > 0 && group_of(data).gather(in, elements * size, out, root));
    },
    [](void* data, OTF2_CollectiveContext*, const void* in, std::uint32_t in_elements, void* out,
       const std::uint32_t* out_elements, OTF2_Type type, std::uint32_t root) {
      process_group& group = group_of(data);
      const std::size_t size = type_size(type);
      if (size == 0) return OTF2_CALLBACK_ERROR;
      std::vector<std::size_t> counts;
      if (group.rank() == root) counts = byte_counts(out_elements, group.size(), size);
      return result(group.gatherv(in, in_elements * size, out, counts.data(), root));
    },
    [](void* data, OTF2_CollectiveContext*, const void* in, void* out, std::uint32_t elements,
       OTF2_Type type, std::uint32_t root) {
      const std::size_t size = type_size(type);
      return result(size > 0 && group_of(data).scatter(in, out, elements * size, root));
    },
    [](void* data, OTF2_CollectiveContext*, const void* in, const std::uint32_t* in_elements,
       void* out, std::uint32_t out_elements, OTF2_Type type, std::uint32_t root) {
      process_group& group = group_of(data);
      const std::size_t size = type_size(type);
      if (size == 0) return OTF2_CALLBACK_ERROR;
      std::vector<std::size_t> counts;
      if (group.rank() == root) counts = byte_counts(in_elements, group.size(), size);
      return result(group.scatterv(in, counts.data(), out, out_elements * size, root));
    },
};

}  // namespace

OTF2_ErrorCode set_collective_callbacks(OTF2_Archive* archive, process_group& group) {
  // OTF2 hands the context back to the callbacks only; they use `group` from the user data.
  auto* context = reinterpret_cast<OTF2_CollectiveContext*>(&group);
  return OTF2_Archive_SetCollectiveCallbacks(archive, &callbacks, &group, context, nullptr);
}

}  // namespace ferret::otf2
