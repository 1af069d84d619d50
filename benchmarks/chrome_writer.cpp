// chrome_writer REGIONS OUTPUT: the chrome writer alone. Feeds REGIONS regions
// (an outer region with an inner one in it, as benchmarks/backend_regions.cpp
// nests them, with source locations as FERRET_REGION gives them) to the
// backend in batches of 4096 records on one thread, as the runtime's drain
// does, writing OUTPUT; prints wall nanoseconds per region and the bytes per
// event (a region is two events, its begin and its end). No runtime session:
// only the writer and its writes to the file are measured.
// benchmarks/chrome_writer.sh runs it beside a baseline, under callgrind too.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "chrome_backend.hpp"

namespace rt = ferret::runtime;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s REGIONS OUTPUT\n", argv[0]);
    return 2;
  }
  const long regions = std::atol(argv[1]);
  rt::session_info session;
  session.pid = static_cast<std::uint32_t>(getpid());
  session.hostname = "host";
  session.executable = "chrome_writer";
  session.command_line = "chrome_writer";
  session.clock_source = "tsc";
  session.start_monotonic_raw_ns = 0;
  session.start_realtime_ns = 1'700'000'000'000'000'000;
  session.ferret_version = "bench";
  std::string error;
  auto backend = ferret::chrome::make_backend({&session, argv[2], false}, error);
  if (backend == nullptr) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const rt::name_info outer{0, "outer", "", "int main(int, char**)",
                            "/work/ferret/benchmarks/backend_regions.cpp", 13};
  const rt::name_info inner{1, "inner", "", "int main(int, char**)",
                            "/work/ferret/benchmarks/backend_regions.cpp", 15};
  const rt::thread_info thread{session.pid, session.pid, {}, true};
  const rt::metadata_list runtime_metadata{{"clock-frequency-hz", std::int64_t{2'000'000'000}}};
  const rt::metadata_list user_metadata;

  // One batch: 1024 outer regions with an inner one each, ~70 ns apart, as a
  // tight loop of annotations records them; later batches continue the clock.
  constexpr std::size_t batch_pairs = 1024;
  std::vector<rt::record> batch(batch_pairs * 4);
  std::int64_t now = 1'000'000;
  const auto start = std::chrono::steady_clock::now();
  long written = 0;
  while (written < regions) {
    for (std::size_t k = 0; k < batch_pairs; ++k) {
      constexpr auto by_program = rt::region_close::by_program;
      batch[4 * k + 0] = {now, rt::record_kind::region_begin, by_program, &outer, 0.0};
      batch[4 * k + 1] = {now + 21, rt::record_kind::region_begin, by_program, &inner, 0.0};
      batch[4 * k + 2] = {now + 47, rt::record_kind::region_end, by_program, &inner, 0.0};
      batch[4 * k + 3] = {now + 69, rt::record_kind::region_end, by_program, &outer, 0.0};
      now += 143;
    }
    backend->thread_records(thread, batch.data(), batch.size());
    written += 2 * static_cast<long>(batch_pairs);
  }
  backend->flush({&runtime_metadata, &user_metadata, static_cast<std::uint64_t>(2 * written), 0,
                  true});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  struct stat file {};
  stat(argv[2], &file);
  std::printf("%ld regions, %.1f ns per region, %.1f bytes per event, %lld bytes\n", written,
              seconds * 1e9 / static_cast<double>(written),
              static_cast<double>(file.st_size) / static_cast<double>(2 * written),
              static_cast<long long>(file.st_size));
  return 0;
}
