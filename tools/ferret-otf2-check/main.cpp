// ferret-otf2-check ANCHOR [--region NAME]... [--processes N] [--threads N] [--streams N]
//                   [--copies N] [--copy-bytes N] [--marker TEXT]...
// Reads an OTF2 archive back (see otf2_check.hpp), prints a summary and checks
// the expectations given. Exit status 0 when everything holds, else 1.
#include "otf2_check.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ferret-otf2-check ANCHOR.otf2 [--region NAME]... [--processes N] [--threads N] "
                         "[--streams N] [--copies N] [--copy-bytes N] [--marker TEXT]...\n");
    return 2;
  }
  const ferret::otf2_check::report report = ferret::otf2_check::check_archive(argv[1]);
  std::vector<std::string> failures = report.errors;
  std::uint64_t threads = 0, streams = 0;
  std::set<std::uint32_t> groups_with_threads;
  for (const auto& [id, location] : report.locations) {
    if (location.type == 1) {
      ++threads;
      groups_with_threads.insert(location.group);
    }
    if (location.type == 2) ++streams;
    std::printf("location %llu '%s' type %d: %llu events (%llu enter, %llu leave)\n",
                static_cast<unsigned long long>(id), location.name.c_str(), location.type,
                static_cast<unsigned long long>(location.events_read),
                static_cast<unsigned long long>(location.enters),
                static_cast<unsigned long long>(location.leaves));
  }
  const std::uint64_t copies = report.rma_gets + report.rma_puts;
  std::printf("regions entered: %zu, copies: %llu (%llu bytes), metric samples: %llu, markers: %zu\n",
              report.regions.size(), static_cast<unsigned long long>(copies),
              static_cast<unsigned long long>(report.get_bytes + report.put_bytes),
              static_cast<unsigned long long>(report.metric_samples), report.markers.size());
  if (report.mpi_sends + report.mpi_receives + report.mpi_collectives > 0)
    std::printf("MPI: %llu messages sent, %llu received, %llu collective calls\n",
                static_cast<unsigned long long>(report.mpi_sends),
                static_cast<unsigned long long>(report.mpi_receives),
                static_cast<unsigned long long>(report.mpi_collectives));
  for (int i = 2; i < argc; ++i) {
    const std::string_view option = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ferret-otf2-check: %s needs a value\n", argv[i]);
      return 2;
    }
    const std::string value = argv[++i];
    const auto expect = [&](std::uint64_t actual, const char* what) {
      if (actual != std::strtoull(value.c_str(), nullptr, 10))
        failures.push_back(std::string{what} + ": " + std::to_string(actual) + ", expected " + value);
    };
    if (option == "--region") {
      if (report.regions.count(value) == 0) failures.push_back("region never entered: " + value);
    } else if (option == "--marker") {
      bool found = false;
      for (const std::string& text : report.markers) found = found || text == value;
      if (!found) failures.push_back("no marker: " + value);
    } else if (option == "--processes") {
      // Process location groups (one per MPI rank), each with a host thread.
      std::uint64_t processes = 0;
      for (const auto& [group, type] : report.location_group_types) {
        if (type != 1) continue;
        ++processes;
        if (groups_with_threads.count(group) == 0)
          failures.push_back("process location group " + std::to_string(group) +
                             " has no thread");
      }
      expect(processes, "process location groups");
    } else if (option == "--threads") {
      expect(threads, "CPU thread locations");
    } else if (option == "--streams") {
      expect(streams, "accelerator stream locations");
    } else if (option == "--copies") {
      expect(copies, "copies");
    } else if (option == "--copy-bytes") {
      expect(report.get_bytes + report.put_bytes, "copied bytes");
    } else {
      std::fprintf(stderr, "ferret-otf2-check: unknown option %s\n", argv[i - 1]);
      return 2;
    }
  }
  for (const std::string& failure : failures) std::printf("error: %s\n", failure.c_str());
  std::printf("%s\n", failures.empty() ? "ok" : "FAILED");
  return failures.empty() ? 0 : 1;
}
