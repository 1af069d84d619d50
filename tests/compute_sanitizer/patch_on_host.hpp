// patch_on_host.hpp — what the device patch (peer_access_patch.cu) does for
// one access, done on the host, so that tests fill a launch's counters
// exactly as a kernel would.
#pragma once

#include <algorithm>
#include <cstdint>

#include "peer_access_layout.h"

namespace ferret::testing {

/// One access of a warp group of `lanes` lanes with the same key.
inline void count_access(ferret_peer_launch& launch, std::uint64_t pc, std::uint64_t address,
                         std::uint32_t size, std::uint32_t flags, std::uint32_t lanes = 1) {
  const std::uint32_t range = ferret_peer_find_range(launch.ranges, launch.range_count, address);
  if (range < launch.range_count && launch.ranges[range].device == launch.device) return;
  const std::uint64_t key = ferret_peer_key(pc, ferret_peer_kind_of(flags),
                                            range < launch.range_count ? range + 1 : 0);
  if (key == 0) {
    launch.lost[ferret_peer_lost_key_overflow] += lanes;
    return;
  }
  std::uint32_t slot = ferret_peer_slot(key, launch.counter_slots);
  for (std::uint32_t probe = 0; probe < FERRET_PEER_PROBES;
       ++probe, slot = (slot + 1) & (launch.counter_slots - 1)) {
    ferret_peer_counter& counter = launch.counters[slot];
    if (counter.key != 0 && counter.key != key) continue;
    if (counter.key == 0) ++launch.used_slots;
    counter.key = key;
    counter.accesses += lanes;
    counter.bytes += std::uint64_t{lanes} * size;
    counter.lowest_address_inverted = std::max(counter.lowest_address_inverted, ~address);
    counter.highest_address = std::max(counter.highest_address, address);
    return;
  }
  launch.lost[ferret_peer_lost_table_full] += lanes;
}

}  // namespace ferret::testing
