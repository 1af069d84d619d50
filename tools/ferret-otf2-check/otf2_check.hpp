// ferret::otf2_check — reads an OTF2 archive back with the OTF2 reader API and
// checks what every reader relies on: a location at least, each location's
// events in time order, Enter/Leave balanced and properly nested per location,
// every referenced region and location defined, each RMA operation completed
// once, each MPI request completed once and each MPI collective begun before
// it ends. Collects what the tests compare: region names, location types,
// copies and bytes, metric samples, attributes, markers, archive properties,
// and per region its calls and inclusive time (to compare with the same run in
// another format).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ferret::otf2_check {

struct location_summary {
  std::string name;
  int type = 0;  // OTF2_LocationType: 1 CPU thread, 2 accelerator stream
  std::uint32_t group = 0;
  std::uint64_t events_defined = 0;  // numberOfEvents in the definition
  std::uint64_t events_read = 0;
  std::uint64_t enters = 0;
  std::uint64_t leaves = 0;
};

struct region_total {
  std::uint64_t calls = 0;
  std::uint64_t inclusive_ns = 0;  // in timer ticks converted to ns
};

struct report {
  std::vector<std::string> errors;
  std::map<std::uint64_t, location_summary> locations;
  std::map<std::uint32_t, int> location_group_types;  // OTF2_LocationGroupType
  std::set<std::string> regions;                      // names of regions entered
  std::map<std::string, int> region_paradigms;        // every defined region
  std::uint64_t rma_gets = 0, rma_puts = 0, rma_completions = 0;
  std::uint64_t get_bytes = 0, put_bytes = 0;
  std::map<std::string, region_total> region_totals;  // by region name, all locations
  std::uint64_t metric_samples = 0;
  std::map<std::string, double> last_metric_values;         // by metric member name
  std::map<std::string, std::uint64_t> metric_sample_counts;  // by metric member name
  std::map<std::string, std::uint64_t> attribute_counts;                // events carrying it
  std::map<std::string, std::set<std::string>> attribute_strings;       // string attributes' values
  std::uint64_t buffer_flushes = 0;  // BufferFlush records OTF2 wrote
  // MPI records: messages (MpiSend/MpiIsend, MpiRecv/MpiIrecv) and collectives
  // (MpiCollectiveEnd), each non-blocking request completed once, collectives paired.
  std::uint64_t mpi_sends = 0, mpi_receives = 0, mpi_collectives = 0;
  std::vector<std::string> markers;  // marker texts
  std::map<std::string, std::string> properties;
  std::uint64_t timer_resolution = 0;
  bool ok() const { return errors.empty(); }
};

/// Reads `anchor` (the .otf2 file). Never throws; problems land in errors.
report check_archive(const std::string& anchor);

}  // namespace ferret::otf2_check
