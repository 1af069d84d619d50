// Device-initiated traffic, the host's half (backends/collectors/compute_sanitizer):
// the key packing and range search the device patch uses, the versioned
// range tables, the decoding of a launch's counters and a counting run's
// kernel times and totals — without a GPU: the counters are filled here as
// the patch fills them.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernel_timing.hpp"
#include "memory_ranges.hpp"
#include "patch_on_host.hpp"
#include "peer_access_decoder.hpp"
#include "peer_access_layout.h"
#include "peer_access_setting.hpp"

namespace {

using ferret::compute_sanitizer::decode_launch;
using ferret::compute_sanitizer::decode_losses;
using ferret::compute_sanitizer::function_map;
using ferret::compute_sanitizer::global_timer_clock;
using ferret::compute_sanitizer::kernel_remote_traffic;
using ferret::compute_sanitizer::memory_ranges;
using ferret::compute_sanitizer::parse_peer_accesses;
using ferret::compute_sanitizer::source_line;
using ferret::runtime::memory_access;
using ferret::testing::count_access;

}  // namespace

TEST_CASE("a key packs the instruction, the kind and the range, and refuses what does not fit") {
  const std::uint64_t pc = 0x7f12'3456'7890;
  const std::uint64_t key = ferret_peer_key(pc, ferret_peer_store, 5);
  REQUIRE(key != 0);
  CHECK(ferret_peer_key_pc(key) == pc);
  CHECK(ferret_peer_key_kind(key) == ferret_peer_store);
  CHECK(ferret_peer_key_range(key) == 5);
  CHECK(ferret_peer_key_range(ferret_peer_key(pc, ferret_peer_load, 0)) == 0);  // in no range
  CHECK(ferret_peer_key(pc, ferret_peer_load, FERRET_PEER_MAX_RANGES) != 0);
  CHECK(ferret_peer_key(pc, ferret_peer_load, FERRET_PEER_MAX_RANGES + 1) == 0);
  CHECK(ferret_peer_key(std::uint64_t{1} << 49, ferret_peer_load, 1) == 0);
  CHECK(ferret_peer_key(pc + 8, ferret_peer_load, 1) == 0);  // not an instruction boundary
  // The sanitizer's flags: a system-scope atomic, or a read and a write, is an atomic.
  CHECK(ferret_peer_kind_of(FERRET_PEER_FLAG_READ) == ferret_peer_load);
  CHECK(ferret_peer_kind_of(FERRET_PEER_FLAG_WRITE) == ferret_peer_store);
  CHECK(ferret_peer_kind_of(FERRET_PEER_FLAG_READ | FERRET_PEER_FLAG_WRITE) == ferret_peer_atomic);
  CHECK(ferret_peer_kind_of(FERRET_PEER_FLAG_ATOMSYS | FERRET_PEER_FLAG_READ) == ferret_peer_atomic);
}

TEST_CASE("an address is found in its range, and in none between ranges") {
  const ferret_peer_range ranges[] = {{0x1000, 0x2000, 0, 0}, {0x2000, 0x3000, 1, 0}, {0x8000, 0x9000, -1, 0}};
  CHECK(ferret_peer_find_range(ranges, 3, 0x0fff) == 3);
  CHECK(ferret_peer_find_range(ranges, 3, 0x1000) == 0);
  CHECK(ferret_peer_find_range(ranges, 3, 0x1fff) == 0);
  CHECK(ferret_peer_find_range(ranges, 3, 0x2000) == 1);
  CHECK(ferret_peer_find_range(ranges, 3, 0x3000) == 3);
  CHECK(ferret_peer_find_range(ranges, 3, 0x8fff) == 2);
  CHECK(ferret_peer_find_range(ranges, 3, 0x9000) == 3);
  CHECK(ferret_peer_find_range(ranges, 0, 0x1000) == 0);  // an empty table: none (== count)
}

TEST_CASE("each change makes a new table; older ones stay as they were; a reused address replaces the stale range") {
  memory_ranges known;
  known.allocated(0x10000, 0x1000, 0);
  known.allocated(0x20000, 0x1000, 1);
  const auto first = known.current();
  CHECK(known.current().get() == first.get());  // no change, no new table
  REQUIRE(first->ranges.size() == 2);
  CHECK(first->ranges[0].begin == 0x10000);
  CHECK(first->ranges[1].device == 1);
  known.released(0x10000);
  known.allocated(0x20800, 0x1000, -1);  // overlaps the second: it was freed unseen
  const auto second = known.current();
  CHECK(second->version != first->version);
  REQUIRE(second->ranges.size() == 1);
  CHECK(second->ranges[0].begin == 0x20800);
  CHECK(second->ranges[0].device == -1);
  REQUIRE(first->ranges.size() == 2);  // what a launch given the first still decodes with
  CHECK(first->ranges[0].begin == 0x10000);
  const auto before = known.current();
  known.released(0x12345);  // unknown: nothing changes
  CHECK(known.current().get() == before.get());
}

// NCCL maps a peer's buffers at addresses of their own (seen on 2×H200 with
// NCCL 2.28: 96 of 102 peer views): the view is the only report of that range.
TEST_CASE("a peer view at its own address is its owner's memory; at the owner's address it adds nothing") {
  memory_ranges known;
  known.allocated(0x10000, 0x1000, 0);
  CHECK_FALSE(known.viewed(0x10000, 0x1000, 0));  // device 1's view of device 0's allocation, same address
  CHECK_FALSE(known.viewed(0x10800, 0x1000, 0));  // overlapping a known range: not taken
  CHECK(known.viewed(0x40000, 0x2000, 1));        // device 0's view of device 1's buffer, mapped apart
  const auto table = known.current();
  REQUIRE(table->ranges.size() == 2);
  CHECK(table->ranges[1].begin == 0x40000);
  CHECK(table->ranges[1].end == 0x42000);
  CHECK(table->ranges[1].device == 1);
  CHECK(ferret_peer_find_range(table->ranges.data(), static_cast<std::uint32_t>(table->ranges.size()), 0x41000) == 1);
}

TEST_CASE("a launch's counters become device-initiated traffic by function, line, device and object") {
  // Device 0 runs the kernel; it reads a halo on device 1, writes to host
  // memory, and touches its own memory (not counted) and memory nobody reported.
  memory_ranges known;
  known.allocated(0x1'0000'0000, 1 << 20, 0);  // local
  known.allocated(0x2'0000'0000, 1 << 20, 1);  // the peer's
  known.allocated(0x3'0000'0000, 1 << 20, -1);  // pinned host memory
  const auto table = known.current();
  std::vector<ferret_peer_counter> counters(64);
  ferret_peer_launch launch{table->ranges.data(), static_cast<std::uint32_t>(table->ranges.size()), 0,
                            counters.data(), 64, 0, {0, 0}, 0, 0};
  const std::uint64_t kernel = 0x7000'0000;
  const std::uint64_t helper = 0x7000'1000;
  for (std::uint64_t i = 0; i < 256; ++i) count_access(launch, kernel + 0x80, 0x2'0000'0000 + 4 * i, 4, FERRET_PEER_FLAG_READ);
  count_access(launch, kernel + 0x90, 0x3'0000'0000, 8, FERRET_PEER_FLAG_WRITE, 32);
  count_access(launch, kernel + 0x90, 0x1'0000'0000, 8, FERRET_PEER_FLAG_WRITE, 32);  // local
  count_access(launch, kernel + 0xa0, 0x2'0000'0000 + 8, 4, FERRET_PEER_FLAG_READ | FERRET_PEER_FLAG_WRITE);
  count_access(launch, helper + 0x10, 0x2'0000'0000 + 4096, 16, FERRET_PEER_FLAG_READ, 4);
  count_access(launch, kernel + 0xb0, 0x9'0000'0000, 4, FERRET_PEER_FLAG_READ, 2);  // in no range
  count_access(launch, 0x6000'0000, 0x2'0000'0000, 4, FERRET_PEER_FLAG_READ, 3);  // in no function

  function_map functions;
  static const char kernel_name[] = "_Z7stencilPKfPf";
  static const char helper_name[] = "_Z6gatherPKf";
  functions.add({kernel, 0x1000, kernel_name, 1});
  functions.add({helper, 0x100, helper_name, 1});
  static const char file[] = "/src/stencil.cu";
  const auto lines = [&](const function_map::function& function, std::uint64_t offset) {
    return function.name == kernel_name ? source_line{file, static_cast<std::uint32_t>(offset / 16)}
                                        : source_line{nullptr, 0};
  };
  // Two objects on the peer: "halo" holds the first 4 KiB, "rest" what follows.
  const auto objects = [](std::uint64_t lowest, std::uint64_t highest, bool& spans) -> std::uint64_t {
    const auto object_at = [](std::uint64_t address) -> std::uint64_t {
      if (address >= 0x2'0000'0000 && address < 0x2'0000'1000) return 11;
      if (address >= 0x2'0000'1000 && address < 0x2'0010'0000) return 12;
      return 0;
    };
    spans = object_at(lowest) != object_at(highest);
    return spans ? 0 : object_at(lowest);
  };
  CHECK(launch.used_slots == 6);
  std::vector<ferret::runtime::gpu_remote_access_batch> batches;
  decode_losses losses;
  decode_launch(counters.data(), counters.size(), launch.lost, *table, 42, 0, functions, lines,
                objects, batches, losses);

  REQUIRE(batches.size() == 2);
  const auto& in_kernel = batches[0].function == kernel_name ? batches[0] : batches[1];
  const auto& in_helper = batches[0].function == kernel_name ? batches[1] : batches[0];
  CHECK(in_kernel.correlation == 42);
  CHECK(in_kernel.device == 0);
  const auto at = [&](std::uint64_t offset) {
    for (const auto& access : in_kernel.accesses)
      if (access.pc_offset == offset) return access;
    FAIL("no access at offset ", offset);
    return ferret::runtime::gpu_remote_access_batch::access{};
  };
  CHECK(in_kernel.accesses.size() == 3);
  CHECK(at(0x80).bytes == 1024);
  CHECK(at(0x80).accesses == 256);
  CHECK(at(0x80).target_device == 1);
  CHECK(at(0x80).kind == memory_access::load);
  CHECK(at(0x80).object_id == 11);
  CHECK(at(0x80).line == 8);
  CHECK(std::string{at(0x80).file} == file);
  CHECK(at(0x90).bytes == 256);  // the host part only: the local store is not counted
  CHECK(at(0x90).target_device == -1);
  CHECK(at(0x90).kind == memory_access::store);
  CHECK(at(0x90).object_id == 0);
  CHECK(at(0xa0).kind == memory_access::atomic);
  REQUIRE(in_helper.accesses.size() == 1);
  CHECK(in_helper.accesses[0].pc_offset == 0x10);
  CHECK(in_helper.accesses[0].file == nullptr);
  CHECK(in_helper.accesses[0].bytes == 64);
  CHECK(in_helper.accesses[0].object_id == 12);
  CHECK(losses.accesses_in_no_range == 2);
  CHECK(losses.no_range_lowest == 0x9'0000'0000);  // where, to find the memory not reported
  CHECK(losses.no_range_highest == 0x9'0000'0000);
  CHECK(losses.accesses_outside_functions == 3);
  CHECK(losses.bytes_spanning_objects == 0);

}

TEST_CASE("accesses spanning two objects are said; a full table and unpackable keys are counted") {
  memory_ranges known;
  known.allocated(0x2'0000'0000, 1 << 20, 1);
  const auto table = known.current();
  std::vector<ferret_peer_counter> counters(2);
  ferret_peer_launch launch{table->ranges.data(), 1, 0, counters.data(), 2, 0, {0, 0}, 0, 0};
  count_access(launch, 0x7000'0000, 0x2'0000'0000, 4, FERRET_PEER_FLAG_READ);
  count_access(launch, 0x7000'0000, 0x2'0000'2000, 4, FERRET_PEER_FLAG_READ);  // the same key, another object
  count_access(launch, 0x7000'0010, 0x2'0000'0000, 4, FERRET_PEER_FLAG_READ);
  count_access(launch, 0x7000'0020, 0x2'0000'0000, 4, FERRET_PEER_FLAG_READ, 7);  // two slots, both taken
  count_access(launch, std::uint64_t{1} << 50, 0x2'0000'0000, 4, FERRET_PEER_FLAG_READ, 5);
  CHECK(launch.lost[ferret_peer_lost_table_full] == 7);
  CHECK(launch.lost[ferret_peer_lost_key_overflow] == 5);
  function_map functions;
  static const char name[] = "_Z1kv";
  functions.add({0x7000'0000, 0x100, name, 1});
  const auto objects = [](std::uint64_t lowest, std::uint64_t highest, bool& spans) -> std::uint64_t {
    spans = (lowest >> 12) != (highest >> 12);  // one object per 4 KiB
    return spans ? 0 : 1 + (lowest >> 12);
  };
  std::vector<ferret::runtime::gpu_remote_access_batch> batches;
  decode_losses losses;
  decode_launch(counters.data(), counters.size(), launch.lost, *table, 1, 0, functions, nullptr,
                objects, batches, losses);
  CHECK(losses.accesses_lost_table_full == 7);
  CHECK(losses.accesses_lost_key_overflow == 5);
  CHECK(losses.bytes_spanning_objects == 8);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].accesses.size() == 2);
  functions.remove_module(1);
  CHECK(functions.find(0x7000'0000) == nullptr);
}

TEST_CASE("FERRET_CUDA_PEER_ACCESSES takes 0 or 1 and the words people write for them, nothing else") {
  CHECK(parse_peer_accesses(nullptr) == false);
  CHECK(parse_peer_accesses("") == false);
  CHECK(parse_peer_accesses("0") == false);
  CHECK(parse_peer_accesses("1") == true);
  for (const char* on : {"on", "Yes", "TRUE", " 1 "}) CHECK(parse_peer_accesses(on) == true);
  for (const char* off : {"off", "No", "false"}) CHECK(parse_peer_accesses(off) == false);
  for (const char* wrong : {"2", "01", "y", "enabled", "1 1"}) CHECK(!parse_peer_accesses(wrong).has_value());
}

TEST_CASE("the global timer is placed on the host's clock by the launch with the least latency") {
  global_timer_clock clock;
  const std::uint64_t ahead = 1'795'925'722'209'800'000;  // the timer's offset: an epoch, as on an H200
  // Launched at host 1 000 000, began 8 µs later (idle GPU): the offset is bounded to ahead + 8 µs.
  clock.bound(1'000'000, ahead + 1'008'000);
  CHECK(clock.to_host(ahead + 1'008'000) == 1'000'000);  // never before its own launch
  // Queued behind other work (began 500 µs after its launch): the bound stays.
  clock.bound(2'000'000, ahead + 2'500'000);
  CHECK(clock.to_host(ahead + 2'500'000) == 2'492'000);
  // A launch with less latency (3 µs) tightens it for the kernels after.
  clock.bound(3'000'000, ahead + 3'003'000);
  CHECK(clock.to_host(ahead + 3'003'000) == 3'000'000);
  CHECK(clock.to_host(ahead + 4'000'000) == 3'997'000);
}

TEST_CASE("a launch's bytes per memory reached: loads apart from stores and atomics, most bytes first") {
  using ferret::runtime::gpu_remote_access_batch;
  std::vector<gpu_remote_access_batch> batches(2);
  batches[0].accesses = {{0x10, nullptr, 0, 1, memory_access::load, 0, 10, 40},
                         {0x20, nullptr, 0, -1, memory_access::store, 0, 2, 16},
                         {0x30, nullptr, 0, 1, memory_access::atomic, 0, 1, 4}};
  batches[1].accesses = {{0x40, nullptr, 0, 1, memory_access::store, 0, 3, 12},  // a device function's
                         {0x50, nullptr, 0, 2, memory_access::load, 0, 100, 400}};
  const auto totals = kernel_remote_traffic(batches.data(), batches.size());
  REQUIRE(totals.target_count == 3);
  CHECK(totals.targets[0].device == 2);
  CHECK(totals.targets[0].loaded_bytes == 400);
  CHECK(totals.targets[0].stored_bytes == 0);
  CHECK(totals.targets[1].device == 1);
  CHECK(totals.targets[1].loaded_bytes == 40);
  CHECK(totals.targets[1].stored_bytes == 16);
  CHECK(totals.targets[2].device == -1);
  CHECK(totals.targets[2].stored_bytes == 16);
  CHECK(kernel_remote_traffic(batches.data(), 0).target_count == 0);
}
