// backends/writers/otf2 — the definitions of an OTF2 archive as tables, and
// their unification across the processes of a parallel run.
//
// Each process (MPI rank) keeps its definitions with its own dense ids (the
// index in each table): its events use these local ids. At the final flush:
//   1. every rank serialises its definitions (serialize) and rank 0 gathers them;
//   2. rank 0 unifies them (unify): equal definitions become one (a region is
//      the same if all its fields are, after its strings are unified), and it
//      computes, per rank, the global id of every local id (id_mappings);
//   3. rank 0 writes the global definitions (write_global_definitions); every
//      rank gets its mappings back and writes them as OTF2 mapping tables into
//      the local definition file of each of its locations
//      (write_mapping_tables), so that readers translate the local ids of its
//      events and the events themselves need no rewriting.
// Location ids are unique across ranks from the start (the backend makes them
// rank-based), so locations and location groups are never merged.
//
// Special case, as OTF2 defines communication groups: a paradigm has at most one
// group of type COMM_LOCATIONS (the locations that communicate), and the
// members of COMM_GROUP groups are indices into it. The COMM_LOCATIONS groups
// of one paradigm are joined into one (members in rank order) and each rank's
// COMM_GROUP members are shifted by its offset in the joined group; the
// communicators and RMA windows over them stay per rank (a rank's CUDA copies
// go between its own locations). MPI's COMM_GROUP members are MPI_COMM_WORLD
// ranks (each rank puts one location into MPI's COMM_LOCATIONS group), so they
// are not shifted, and a communicator all its members define alike is one.
//
// Archive properties: counts (summed == true) are summed over the ranks; any
// other property keeps rank 0's value (or the first rank's that has it).
// Clock: the earliest global offset, the trace length up to the latest end,
// and the realtime timestamp of the rank with the earliest offset.
#pragma once

#include <otf2/otf2.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ferret::otf2 {

constexpr std::uint32_t undefined_ref = 0xFFFFFFFFU;  // OTF2's undefined 32-bit ref

struct region_definition {
  std::uint32_t name, canonical_name, description;  // string ids
  OTF2_RegionRole role;
  OTF2_Paradigm paradigm;
  OTF2_RegionFlag flags;
  std::uint32_t file;  // string id
  std::uint32_t begin_line, end_line;
};

// One metric member in a metric class of its own (ferret's counters).
struct metric_definition {
  std::uint32_t name, description, unit;  // string ids
  OTF2_MetricType metric_type;
  OTF2_MetricMode mode;
  OTF2_Type value_type;
  OTF2_MetricOccurrence occurrence;
  OTF2_RecorderKind recorder;
};

struct attribute_definition {
  std::uint32_t name, description;  // string ids
  OTF2_Type type;
};

struct system_tree_node_definition {
  std::uint32_t name, class_name;  // string ids
  std::uint32_t parent;            // node id or undefined_ref
};

struct location_group_definition {
  std::uint32_t name;  // string id
  OTF2_LocationGroupType type;
  std::uint32_t system_tree_parent;  // node id
  std::uint32_t creator;             // location group id or undefined_ref
};

struct location_definition {
  std::uint64_t id;    // global already (rank-based)
  std::uint32_t name;  // string id
  OTF2_LocationType type;
  std::uint64_t events;
  std::uint32_t group;  // location group id
};

struct group_definition {
  std::uint32_t name;  // string id
  OTF2_GroupType type;
  OTF2_Paradigm paradigm;
  OTF2_GroupFlag flags;
  // COMM_LOCATIONS: location ids; COMM_GROUP: indices into this rank's
  // COMM_LOCATIONS group of the same paradigm.
  std::vector<std::uint64_t> members;
};

struct comm_definition {
  std::uint32_t name, group;  // string id, group id
  std::uint32_t parent;       // comm id or undefined_ref
  OTF2_CommFlag flags;
};

struct rma_window_definition {
  std::uint32_t name, comm;  // string id, comm id
  OTF2_RmaWinFlag flags;
};

struct marker_definition {
  std::uint32_t group, category;  // string ids
  OTF2_MarkerSeverity severity;
};

// Markers go into the archive's one marker file, which rank 0 writes.
struct marker {
  std::uint64_t time, duration;
  std::uint32_t definition;  // marker definition id
  OTF2_MarkerScope scope;
  std::uint64_t scope_ref;  // a location id for OTF2_MARKER_SCOPE_LOCATION
  std::string text;         // not a string definition: markers' texts are mostly unique
};

struct property {
  std::string name, value;
  bool summed;  // an unsigned count: summed over the ranks
};

struct clock_definition {
  std::uint64_t resolution = 1'000'000'000;
  std::uint64_t offset = 0, length = 0, realtime = 0;
};

/// The definitions of one process, or the unified ones of the run.
struct definitions {
  clock_definition clock;
  std::vector<std::string> strings;
  std::vector<region_definition> regions;
  std::vector<metric_definition> metrics;
  std::vector<attribute_definition> attributes;
  std::vector<system_tree_node_definition> system_tree_nodes;
  std::vector<location_group_definition> location_groups;
  std::vector<location_definition> locations;
  std::vector<group_definition> groups;
  std::vector<comm_definition> comms;
  std::vector<rma_window_definition> rma_windows;
  std::vector<marker_definition> marker_definitions;
  std::vector<marker> markers;
  std::vector<property> properties;
};

/// Global id of every local id of one rank, by kind (index = local id).
struct id_mappings {
  std::vector<std::uint32_t> strings, regions, metrics, attributes, system_tree_nodes,
      location_groups, groups, comms, rma_windows, marker_definitions;
};

std::vector<unsigned char> serialize(const definitions& local);
/// False (and `error` set) for bytes that serialize() did not write.
bool deserialize(const unsigned char* data, std::size_t size, definitions& local,
                 std::string& error);

/// The run's definitions from each rank's (in rank order); `mappings[r]`
/// translates rank r's local ids. Markers are kept (with global references).
definitions unify(const std::vector<definitions>& ranks, std::vector<id_mappings>& mappings);

std::vector<unsigned char> serialize(const id_mappings& mappings);
bool deserialize(const unsigned char* data, std::size_t size, id_mappings& mappings,
                 std::string& error);

/// Writes `global` (ids = table indices). Returns the first failing call's
/// name, or "" when all succeeded.
std::string write_global_definitions(OTF2_GlobalDefWriter* writer, const definitions& global);

/// Writes one mapping table per kind that events refer to (strings, regions,
/// metrics, attributes, groups, comms, RMA windows) and that is not the
/// identity. Returns "" or the failing call.
std::string write_mapping_tables(OTF2_DefWriter* writer, const id_mappings& mappings);

/// Writes the markers and their definitions. Returns "" or the failing call.
std::string write_markers(OTF2_MarkerWriter* writer, const definitions& global);

/// The definition chunk size an archive needs (OTF2_Archive_SetDefChunkSize):
/// room for its largest definition record (a string, a marker text, a group's
/// members, a mapping table of `mappings`), at least OTF2_CHUNK_SIZE_MIN, at
/// most OTF2_CHUNK_SIZE_MAX (a larger record then fails to be written, and
/// says so). OTF2 fills a definition buffer's chunk whole when it writes it,
/// once per location: the smaller, the cheaper.
std::uint64_t definition_chunk_size(const definitions& global, const std::vector<id_mappings>& mappings);

}  // namespace ferret::otf2
