// The unification of OTF2 definitions across ranks (otf2_definitions.cpp),
// without MPI: two synthetic ranks' definitions go through serialize,
// deserialize and unify as rank 0 does at the final flush.
#include "otf2_definitions.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace ferret::otf2;

// One rank of a run on host "node-a": machine → node → process, a main thread
// and a GPU stream, the regions "solve" and its own `own_region`, a counter, a
// CUDA communicator and window over its two locations, a marker.
definitions rank_definitions(std::uint32_t rank, const std::string& own_region,
                             std::uint64_t dropped) {
  definitions d;
  d.clock = {1'000'000'000, 1000 + rank * 10, 500, 77 + rank};
  // Strings in a different order on each rank, so that the ids differ.
  d.strings = rank == 0 ? std::vector<std::string>{"", "machine", "node-a", "node", "solve",
                                                   own_region, "MPI Rank 0", "main thread",
                                                   "GPU 0 stream 7", "residual", "CUDA", "ferret",
                                                   "mark", "stop", "GPU 0"}
                        : std::vector<std::string>{"solve", own_region, "", "machine", "node",
                                                   "node-a", "MPI Rank 1", "main thread",
                                                   "GPU 0 stream 7", "CUDA", "residual", "ferret",
                                                   "mark", "stop", "GPU 0"};
  auto id = [&](const std::string& text) {
    for (std::uint32_t i = 0; i < d.strings.size(); ++i)
      if (d.strings[i] == text) return i;
    FAIL("no string " << text);
    return undefined_ref;
  };
  const std::uint32_t empty = id("");
  d.regions = {{id("solve"), id("solve"), empty, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                OTF2_REGION_FLAG_NONE, empty, 12, 12},
               {id(own_region), id(own_region), empty, OTF2_REGION_ROLE_FUNCTION,
                OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 30, 30}};
  if (rank == 1) std::swap(d.regions[0], d.regions[1]);
  d.metrics = {{id("residual"), id("residual"), empty, OTF2_METRIC_TYPE_USER,
                OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE, OTF2_METRIC_ASYNCHRONOUS,
                OTF2_RECORDER_KIND_ABSTRACT}};
  d.system_tree_nodes = {{id("machine"), id("machine"), undefined_ref},
                         {id("node-a"), id("node"), 0}};
  d.location_groups = {{id(rank == 0 ? "MPI Rank 0" : "MPI Rank 1"),
                        OTF2_LOCATION_GROUP_TYPE_PROCESS, 1, undefined_ref},
                       {id("GPU 0"), OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, 1, 0}};
  const std::uint64_t base = std::uint64_t{rank} << 32U;
  d.locations = {{base, id("main thread"), OTF2_LOCATION_TYPE_CPU_THREAD, 40, 0},
                 {base + 1, id("GPU 0 stream 7"), OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, 6, 1}};
  d.groups = {{id("CUDA"), OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_CUDA, OTF2_GROUP_FLAG_NONE,
               {0, 1}},
              {id("CUDA"), OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_CUDA,
               OTF2_GROUP_FLAG_NONE, {base, base + 1}}};
  d.comms = {{id("CUDA"), 0, undefined_ref, OTF2_COMM_FLAG_NONE}};
  d.rma_windows = {{id("CUDA"), 0, OTF2_RMA_WIN_FLAG_NONE}};
  d.marker_definitions = {{id("ferret"), id("mark"), OTF2_SEVERITY_NONE}};
  d.markers = {{1200 - rank * 100, 0, 0, OTF2_MARKER_SCOPE_LOCATION, base, "stop"}};
  d.properties = {{"FERRET::PID", std::to_string(100 + rank), false},
                  {"FERRET::EVENTS_DROPPED", std::to_string(dropped), true}};
  return d;
}

// Rank r's definitions as rank 0 receives them.
definitions through_bytes(const definitions& local) {
  const std::vector<unsigned char> bytes = serialize(local);
  definitions received;
  std::string error;
  REQUIRE(deserialize(bytes.data(), bytes.size(), received, error));
  return received;
}

}  // namespace

TEST_CASE("definitions survive serialisation; truncated bytes are refused") {
  const definitions local = rank_definitions(1, "halo", 3);
  const std::vector<unsigned char> bytes = serialize(local);
  const definitions back = through_bytes(local);
  CHECK(serialize(back) == bytes);
  CHECK(back.strings == local.strings);
  CHECK(back.groups[1].members == local.groups[1].members);

  definitions broken;
  std::string error;
  CHECK_FALSE(deserialize(bytes.data(), bytes.size() - 1, broken, error));
  CHECK(error.find("malformed") != std::string::npos);
  std::vector<unsigned char> longer = bytes;
  longer.push_back(0);
  CHECK_FALSE(deserialize(longer.data(), longer.size(), broken, error));
}

TEST_CASE("two ranks unify: shared definitions once, each rank's ids mapped") {
  const std::vector<definitions> ranks{through_bytes(rank_definitions(0, "sweep", 2)),
                                       through_bytes(rank_definitions(1, "halo", 5))};
  std::vector<id_mappings> mappings;
  const definitions global = unify(ranks, mappings);
  REQUIRE(mappings.size() == 2);

  // Strings: the union, each once.
  CHECK(global.strings.size() == 17);  // 15 per rank, 13 shared, "MPI Rank 0/1", "sweep", "halo"
  for (std::size_t r = 0; r < 2; ++r)
    for (std::uint32_t local = 0; local < ranks[r].strings.size(); ++local)
      CHECK(global.strings[mappings[r].strings[local]] == ranks[r].strings[local]);

  // Regions: "solve" is one region, "sweep" and "halo" are two more.
  REQUIRE(global.regions.size() == 3);
  auto region_name = [&](std::size_t r, std::uint32_t local) {
    return global.strings[global.regions[mappings[r].regions[local]].name];
  };
  CHECK(region_name(0, 0) == "solve");
  CHECK(region_name(0, 1) == "sweep");
  CHECK(region_name(1, 0) == "halo");  // swapped on rank 1
  CHECK(region_name(1, 1) == "solve");
  CHECK(mappings[0].regions[0] == mappings[1].regions[1]);
  // A region differing in one field (the line) is another region.
  definitions moved = ranks[1];
  moved.regions[1].begin_line = 13;
  unify({ranks[0], moved}, mappings);
  CHECK(mappings[0].regions[0] != mappings[1].regions[1]);
  unify(ranks, mappings);

  // One metric, one machine and one node (same host), two process groups.
  CHECK(global.metrics.size() == 1);
  CHECK(mappings[1].metrics[0] == 0);
  CHECK(global.system_tree_nodes.size() == 2);
  REQUIRE(global.location_groups.size() == 4);
  CHECK(global.strings[global.location_groups[0].name] == "MPI Rank 0");
  CHECK(global.strings[global.location_groups[2].name] == "MPI Rank 1");
  CHECK(global.location_groups[2].system_tree_parent == 1);
  CHECK(global.location_groups[3].creator == 2);  // rank 1's GPU, created by rank 1's process
  REQUIRE(global.locations.size() == 4);
  CHECK(global.locations[2].id == (std::uint64_t{1} << 32U));
  CHECK(global.locations[3].group == 3);
  CHECK(global.locations[3].events == 6);

  // CUDA: one COMM_LOCATIONS group of all four locations; each rank's
  // COMM_GROUP points at its own two, and keeps its own comm and window.
  REQUIRE(global.groups.size() == 3);
  const group_definition& all = global.groups[mappings[0].groups[1]];
  CHECK(mappings[1].groups[1] == mappings[0].groups[1]);
  CHECK(all.type == OTF2_GROUP_TYPE_COMM_LOCATIONS);
  CHECK(all.members == std::vector<std::uint64_t>{0, 1, std::uint64_t{1} << 32U,
                                                  (std::uint64_t{1} << 32U) + 1});
  CHECK(global.groups[mappings[0].groups[0]].members == std::vector<std::uint64_t>{0, 1});
  CHECK(global.groups[mappings[1].groups[0]].members == std::vector<std::uint64_t>{2, 3});
  REQUIRE(global.comms.size() == 2);
  CHECK(global.comms[mappings[1].comms[0]].group == mappings[1].groups[0]);
  REQUIRE(global.rma_windows.size() == 2);
  CHECK(global.rma_windows[mappings[1].rma_windows[0]].comm == mappings[1].comms[0]);

  // Markers: one definition, both markers, in time order, scopes unchanged.
  CHECK(global.marker_definitions.size() == 1);
  REQUIRE(global.markers.size() == 2);
  CHECK(global.markers[0].time == 1100);
  CHECK(global.markers[0].scope_ref == (std::uint64_t{1} << 32U));
  CHECK(global.markers[1].text == "stop");

  // Counts summed, other properties rank 0's; clock over both ranks.
  REQUIRE(global.properties.size() == 2);
  CHECK(global.properties[0].value == "100");
  CHECK(global.properties[1].value == "7");
  CHECK(global.clock.offset == 1000);
  CHECK(global.clock.length == 510);
  CHECK(global.clock.realtime == 77);
}

TEST_CASE("mappings survive serialisation") {
  std::vector<id_mappings> mappings;
  unify({rank_definitions(0, "sweep", 0), rank_definitions(1, "halo", 0)}, mappings);
  const std::vector<unsigned char> bytes = serialize(mappings[1]);
  id_mappings back;
  std::string error;
  REQUIRE(deserialize(bytes.data(), bytes.size(), back, error));
  CHECK(back.strings == mappings[1].strings);
  CHECK(back.regions == mappings[1].regions);
  CHECK(back.rma_windows == mappings[1].rma_windows);
}
