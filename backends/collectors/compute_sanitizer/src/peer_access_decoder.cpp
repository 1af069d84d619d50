// peer_access_decoder.cpp — see peer_access_decoder.hpp.
#include "peer_access_decoder.hpp"

#include <algorithm>

#include <iterator>

namespace ferret::compute_sanitizer {

void function_map::add(const function& code) { by_start_.insert_or_assign(code.start, code); }

void function_map::remove_module(std::uint64_t module) {
  for (auto it = by_start_.begin(); it != by_start_.end();)
    it = it->second.module == module ? by_start_.erase(it) : std::next(it);
}

const function_map::function* function_map::find(std::uint64_t pc) const {
  auto it = by_start_.upper_bound(pc);
  if (it == by_start_.begin()) return nullptr;
  --it;
  return pc - it->second.start < it->second.size ? &it->second : nullptr;
}

namespace {

runtime::memory_access access_of(std::uint32_t kind) {
  switch (kind) {
    case ferret_peer_store: return runtime::memory_access::store;
    case ferret_peer_atomic: return runtime::memory_access::atomic;
    default: return runtime::memory_access::load;
  }
}

}  // namespace

void decode_launch(const ferret_peer_counter* counters, std::size_t slots,
                   const std::uint64_t (&lost)[ferret_peer_loss_reasons],
                   const memory_ranges::table& table, std::uint64_t correlation,
                   std::uint32_t device, const function_map& functions,
                   const line_resolver& lines, const object_resolver& objects,
                   std::vector<runtime::gpu_remote_access_batch>& batches, decode_losses& losses) {
  losses.accesses_lost_table_full += lost[ferret_peer_lost_table_full];
  losses.accesses_lost_key_overflow += lost[ferret_peer_lost_key_overflow];
  const std::size_t first_batch = batches.size();
  const auto batch_of = [&](const char* function) -> runtime::gpu_remote_access_batch& {
    for (std::size_t i = first_batch; i < batches.size(); ++i)
      if (batches[i].function == function) return batches[i];
    runtime::gpu_remote_access_batch& made = batches.emplace_back();
    made.correlation = correlation;
    made.device = device;
    made.function = function;
    return made;
  };
  for (std::size_t slot = 0; slot < slots; ++slot) {
    const ferret_peer_counter& counter = counters[slot];
    if (counter.key == 0 || counter.accesses == 0) continue;
    const std::uint32_t range_plus_one = ferret_peer_key_range(counter.key);
    if (range_plus_one == 0) {
      const std::uint64_t lowest = ~counter.lowest_address_inverted;
      if (losses.accesses_in_no_range == 0 || lowest < losses.no_range_lowest) losses.no_range_lowest = lowest;
      losses.no_range_highest = std::max(losses.no_range_highest, counter.highest_address);
      losses.accesses_in_no_range += counter.accesses;
      continue;
    }
    if (range_plus_one > table.ranges.size()) {  // only a corrupted counter
      losses.accesses_in_no_range += counter.accesses;
      continue;
    }
    const std::uint64_t pc = ferret_peer_key_pc(counter.key);
    const function_map::function* function = functions.find(pc);
    if (function == nullptr) {
      losses.accesses_outside_functions += counter.accesses;
      continue;
    }
    const std::uint64_t pc_offset = pc - function->start;
    const source_line line = lines ? lines(*function, pc_offset) : source_line{nullptr, 0};
    bool spans = false;
    const std::uint64_t object =
        objects ? objects(~counter.lowest_address_inverted, counter.highest_address, spans) : 0;
    if (spans) losses.bytes_spanning_objects += counter.bytes;
    batch_of(function->name)
        .accesses.push_back({pc_offset, line.file, line.line,
                             table.ranges[range_plus_one - 1].device,
                             access_of(ferret_peer_key_kind(counter.key)), object, counter.accesses,
                             counter.bytes});
  }
}

}  // namespace ferret::compute_sanitizer
