// libferret_mpi: the MPI layer. Intercepts MPI_Init, MPI_Init_thread and
// MPI_Finalize through the MPI profiling interface (PMPI) and makes the ranks
// of the run a ferret process group (ferret/runtime/runtime.hpp):
//   - when this library is loaded, it tells the runtime that a group will come
//     (backends writing one output for all ranks then hold their records);
//   - when MPI_Init returns, it joins the group: rank and size over a duplicate
//     of MPI_COMM_WORLD (so ferret's collectives never match the program's);
//   - in MPI_Finalize, it ends the ferret session before PMPI_Finalize, since
//     the backends' final flush may use MPI collectives.
// It also records the program's MPI communication (communication.cpp), and
// measures each rank's clock offset to rank 0 at MPI_Init and MPI_Finalize
// for the outputs' metadata (docs/mpi.md, "Clocks").
// Link it into the program (target ferret::mpi), or preload it into an
// unmodified one: LD_PRELOAD=libferret_mpi.so mpirun ... ./app
#include "communication.hpp"

#include <ferret/ferret.hpp>
#include <ferret/runtime/runtime.hpp>
#include <ferret/runtime/text.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <time.h>
#include <unistd.h>

namespace ferret::mpi {
namespace {

class mpi_process_group final : public runtime::process_group {
 public:
  explicit mpi_process_group(MPI_Comm communicator) : communicator_(communicator) {
    int value = 0;
    PMPI_Comm_rank(communicator_, &value);
    rank_ = static_cast<std::uint32_t>(value);
    PMPI_Comm_size(communicator_, &value);
    size_ = static_cast<std::uint32_t>(value);
  }

  std::string_view paradigm() const noexcept override { return "mpi"; }
  std::uint32_t rank() const noexcept override { return rank_; }
  std::uint32_t size() const noexcept override { return size_; }

  bool collectives_available() const noexcept override {
    return !broken_ && collective_thread_ == std::this_thread::get_id();
  }

  /// A rank ended without MPI_Finalize: no collective of this group can
  /// complete any more, so none is started.
  void set_broken() noexcept { broken_ = true; }
  bool broken() const noexcept { return broken_; }

  /// Opens (or closes, with `open` false) the window in which every rank calls
  /// the same collectives: inside MPI_Init and MPI_Finalize, on their thread.
  void set_collectives_available(bool open) noexcept {
    collective_thread_ = open ? std::this_thread::get_id() : std::thread::id{};
  }

  MPI_Comm communicator() const noexcept { return communicator_; }

  bool barrier() override { return collectives_available() && PMPI_Barrier(communicator_) == MPI_SUCCESS; }

  bool broadcast(void* data, std::size_t bytes, std::uint32_t root) override {
    int count = 0;
    return collectives_available() && fits(bytes, count) &&
           PMPI_Bcast(data, count, MPI_BYTE, static_cast<int>(root), communicator_) == MPI_SUCCESS;
  }

  bool gather(const void* data, std::size_t bytes, void* received, std::uint32_t root) override {
    int count = 0;
    return collectives_available() && fits(bytes, count) &&
           PMPI_Gather(data, count, MPI_BYTE, received, count, MPI_BYTE, static_cast<int>(root),
                       communicator_) == MPI_SUCCESS;
  }

  bool gatherv(const void* data, std::size_t bytes, void* received, const std::size_t* counts,
               std::uint32_t root) override {
    int count = 0;
    if (!collectives_available() || !fits(bytes, count)) return false;
    std::vector<int> receive_counts, displacements;
    const bool layout_fits = rank_ != root || byte_layout(counts, receive_counts, displacements);
    // Every rank must take part even when the root's layout does not fit.
    int all_fit = layout_fits ? 1 : 0;
    PMPI_Bcast(&all_fit, 1, MPI_INT, static_cast<int>(root), communicator_);
    if (all_fit == 0) return false;
    return PMPI_Gatherv(data, count, MPI_BYTE, received, receive_counts.data(),
                        displacements.data(), MPI_BYTE, static_cast<int>(root),
                        communicator_) == MPI_SUCCESS;
  }

  bool scatter(const void* data, void* received, std::size_t bytes, std::uint32_t root) override {
    int count = 0;
    return collectives_available() && fits(bytes, count) &&
           PMPI_Scatter(data, count, MPI_BYTE, received, count, MPI_BYTE, static_cast<int>(root),
                        communicator_) == MPI_SUCCESS;
  }

  bool scatterv(const void* data, const std::size_t* counts, void* received, std::size_t bytes,
                std::uint32_t root) override {
    int count = 0;
    if (!collectives_available() || !fits(bytes, count)) return false;
    std::vector<int> send_counts, displacements;
    const bool layout_fits = rank_ != root || byte_layout(counts, send_counts, displacements);
    int all_fit = layout_fits ? 1 : 0;
    PMPI_Bcast(&all_fit, 1, MPI_INT, static_cast<int>(root), communicator_);
    if (all_fit == 0) return false;
    return PMPI_Scatterv(data, send_counts.data(), displacements.data(), MPI_BYTE, received, count,
                         MPI_BYTE, static_cast<int>(root), communicator_) == MPI_SUCCESS;
  }

 private:
  // MPI counts are int.
  static bool fits(std::size_t bytes, int& count) noexcept {
    if (bytes > static_cast<std::size_t>(INT_MAX)) return false;
    count = static_cast<int>(bytes);
    return true;
  }

  bool byte_layout(const std::size_t* counts, std::vector<int>& as_int,
                   std::vector<int>& displacements) const {
    std::size_t offset = 0;
    for (std::uint32_t r = 0; r < size_; ++r) {
      int count = 0, displacement = 0;
      if (!fits(counts[r], count) || !fits(offset, displacement)) return false;
      as_int.push_back(count);
      displacements.push_back(displacement);
      offset += counts[r];
    }
    return true;
  }

  MPI_Comm communicator_;
  std::uint32_t rank_ = 0;
  std::uint32_t size_ = 1;
  std::thread::id collective_thread_;
  bool broken_ = false;
};

// Created when MPI_Init returns, never freed (backends may hold it to the end).
mpi_process_group* g_group = nullptr;

// This rank's clock minus rank 0's, and when (on this rank's clock), from the
// round trip with rank 0 that took the least time: the midpoint of that round
// trip on this rank is taken to be rank 0's reading (as Score-P does), so the
// estimate is off by at most half that round trip. The ranks take turns;
// rank 0 answers each of them.
struct clock_offset {
  std::int64_t local_ns;
  std::int64_t offset_ns;
  std::int64_t round_trip_ns;  // 0 on rank 0
};

clock_offset measure_clock_offset(MPI_Comm communicator, int rank, int size) {
  constexpr int round_trips = 16;
  constexpr int ask = 1, answer = 2;
  clock_offset best{ferret::runtime::monotonic_raw_ns(), 0, 0};
  std::int64_t best_round_trip = INT64_MAX;
  for (int peer = 1; peer < size; ++peer) {
    for (int round = 0; round < round_trips; ++round) {
      if (rank == 0) {
        char nothing = 0;
        PMPI_Recv(&nothing, 1, MPI_CHAR, peer, ask, communicator, MPI_STATUS_IGNORE);
        const std::int64_t root_now = ferret::runtime::monotonic_raw_ns();
        PMPI_Send(&root_now, 1, MPI_INT64_T, peer, answer, communicator);
      } else if (rank == peer) {
        char nothing = 0;
        std::int64_t root_time = 0;
        const std::int64_t sent = ferret::runtime::monotonic_raw_ns();
        PMPI_Send(&nothing, 1, MPI_CHAR, 0, ask, communicator);
        PMPI_Recv(&root_time, 1, MPI_INT64_T, 0, answer, communicator, MPI_STATUS_IGNORE);
        const std::int64_t received = ferret::runtime::monotonic_raw_ns();
        if (received - sent < best_round_trip) {
          best_round_trip = received - sent;
          best.local_ns = sent + (received - sent) / 2;
          best.offset_ns = best.local_ns - root_time;
          best.round_trip_ns = best_round_trip;
        }
      }
    }
  }
  return best;
}

// Which clock this process reads: processes of one kernel (one boot) share
// CLOCK_MONOTONIC_RAW. The boot id, else the host name, hashed (FNV-1a).
std::uint64_t clock_identity() {
  char text[256] = {};
  if (std::FILE* file = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (std::fgets(text, sizeof text, file) == nullptr) text[0] = '\0';
    std::fclose(file);
  }
  if (text[0] == '\0') gethostname(text, sizeof text - 1);
  return runtime::fnv1a_64(text);
}

std::int64_t kernel_clock_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// How far the runtime's clock is from this kernel's CLOCK_MONOTONIC_RAW, to
// the microsecond: 0 unless a test injects an offset. The runtime's clock is
// read between two readings of the kernel's, and the closest pair counts: a
// rank preempted between two readings (150 µs seen on a loaded CI host) would
// otherwise take the pause for a shift.
std::int64_t shift_from_kernel_clock() {
  constexpr int attempts = 16;
  constexpr std::int64_t close_enough_ns = 1000;
  std::int64_t narrowest = INT64_MAX, shift = 0;
  for (int attempt = 0; attempt < attempts && narrowest > close_enough_ns; ++attempt) {
    const std::int64_t before = kernel_clock_ns();
    const std::int64_t runtime = ferret::runtime::monotonic_raw_ns();
    const std::int64_t after = kernel_clock_ns();
    if (after - before < narrowest) {
      narrowest = after - before;
      shift = runtime - (before + (after - before) / 2);
    }
  }
  return (shift >= 0 ? shift + 500 : shift - 500) / 1000 * 1000;
}

// Publishes this rank's clock offset to rank 0 in the run metadata of every
// output (`when`: "init" or "finalize"). A rank on rank 0's kernel reads the
// same clock: its offset is known exactly (0, or what a test injected), and
// the round trips' estimate, which on a loaded host is off by up to half a
// round trip, is published beside it only as a check.
void publish_clock_offset(MPI_Comm communicator, int rank, int size, const char* when) {
  const clock_offset measured = measure_clock_offset(communicator, rank, size);
  std::int64_t root_clock[2] = {static_cast<std::int64_t>(clock_identity()), shift_from_kernel_clock()};
  const std::int64_t own_identity = root_clock[0], own_shift = root_clock[1];
  PMPI_Bcast(root_clock, 2, MPI_INT64_T, 0, communicator);
  const bool shared = root_clock[0] == own_identity;
  const std::string prefix = std::string{"mpi-clock-"} + when;
  ferret::set_metadata(prefix + "-local-ns", measured.local_ns);
  ferret::set_metadata(prefix + "-offset-ns", shared ? own_shift - root_clock[1] : measured.offset_ns);
  ferret::set_metadata(prefix + "-measured-offset-ns", measured.offset_ns);
  ferret::set_metadata(prefix + "-round-trip-ns", measured.round_trip_ns);
  ferret::set_metadata("mpi-clock-shared-with-rank-0", shared ? 1 : 0);
}

// Which run this rank belongs to, the same on every rank of it: rank 0's
// host, pid and start time (CLOCK_REALTIME), hashed (FNV-1a). ferret-merge
// refuses traces of different runs.
void publish_job_identity(MPI_Comm communicator) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const std::string text = std::string{host} + "/" + std::to_string(getpid()) + "/" +
                           std::to_string(now.tv_sec) + "." + std::to_string(now.tv_nsec);
  std::uint64_t identity = runtime::fnv1a_64(text);
  PMPI_Bcast(&identity, 1, MPI_UINT64_T, 0, communicator);
  char hex[17] = {};
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(identity));
  ferret::set_metadata("mpi-job", std::string_view{hex});
}

// A rank that ends without MPI_Finalize tells every other rank (at exit), so
// that the ranks waiting in MPI_Finalize for it do not wait for ever: each
// keeps a receive for that notice posted from MPI_Init on. The ranks that got
// the notice answer once their outputs are written, and the leaving rank
// waits for the answers (up to departure_wait), since a launcher may end the
// whole job as soon as it sees a rank end without MPI_Finalize.
constexpr int departure_tag = 0x6665, written_tag = 0x6666;  // on ferret's own communicator only
constexpr std::chrono::seconds departure_wait{10};
int g_departed_rank = -1;  // the notice's buffer
MPI_Request g_departure = MPI_REQUEST_NULL;
bool g_in_finalize = false;

// Waits for `requests` until `deadline`; false when they did not all complete.
bool wait_until(std::vector<MPI_Request>& requests, std::chrono::steady_clock::time_point deadline) {
  int done = 0;
  while (!requests.empty() && std::chrono::steady_clock::now() < deadline) {
    if (PMPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE) !=
        MPI_SUCCESS)
      return false;
    if (done != 0) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return requests.empty();
}

void announce_departure() {
  if (g_group == nullptr || g_in_finalize) return;
  int finalized = 0;
  if (PMPI_Finalized(&finalized) != MPI_SUCCESS || finalized != 0) return;
  static int rank = static_cast<int>(g_group->rank());
  const int size = static_cast<int>(g_group->size());
  static std::vector<int> answers;
  answers.assign(static_cast<std::size_t>(size), 0);
  std::vector<MPI_Request> notices, written(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    if (PMPI_Isend(&rank, 1, MPI_INT, peer, departure_tag, g_group->communicator(), &request) == MPI_SUCCESS)
      notices.push_back(request);
    PMPI_Irecv(&answers[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, written_tag, g_group->communicator(),
               &written[static_cast<std::size_t>(peer)]);
  }
  runtime::print_message("rank " + std::to_string(rank) +
                         " ended without MPI_Finalize: the other ranks write their own outputs, "
                         "no job summary");
  // Until every peer answered or left too. A peer that is gone already, or
  // never reaches MPI_Finalize, must not keep this process from ending.
  const auto deadline = std::chrono::steady_clock::now() + departure_wait;
  if (!wait_until(notices, deadline)) return;
  std::vector<bool> settled(static_cast<std::size_t>(size), false);
  settled[static_cast<std::size_t>(rank)] = true;
  while (std::chrono::steady_clock::now() < deadline) {
    int left = 0;
    while (PMPI_Test(&g_departure, &left, MPI_STATUS_IGNORE) == MPI_SUCCESS && left != 0) {
      if (g_departed_rank >= 0 && g_departed_rank < size) settled[static_cast<std::size_t>(g_departed_rank)] = true;
      PMPI_Irecv(&g_departed_rank, 1, MPI_INT, MPI_ANY_SOURCE, departure_tag, g_group->communicator(), &g_departure);
    }
    for (int peer = 0; peer < size; ++peer) {
      int answered = 0;
      if (!settled[static_cast<std::size_t>(peer)] &&
          PMPI_Test(&written[static_cast<std::size_t>(peer)], &answered, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
          answered != 0)
        settled[static_cast<std::size_t>(peer)] = true;
    }
    if (std::all_of(settled.begin(), settled.end(), [](bool done) { return done; })) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// After a rank's notice: this rank's outputs are written.
void answer_departure() {
  static int written = 1;
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Isend(&written, 1, MPI_INT, g_departed_rank, written_tag, g_group->communicator(), &request) !=
      MPI_SUCCESS)
    return;
  std::vector<MPI_Request> answer{request};
  wait_until(answer, std::chrono::steady_clock::now() + std::chrono::seconds(1));
}

// In MPI_Finalize, before ferret's first collective there: true when every
// rank reached MPI_Finalize, false (and one line) when a rank said it ended
// without it. Waits for the slowest rank however long it takes, as
// MPI_Finalize itself does.
bool all_ranks_in_finalize(MPI_Comm communicator) {
  MPI_Request arrival = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(communicator, &arrival) != MPI_SUCCESS) return false;
  for (auto pause = std::chrono::microseconds(10);; pause = std::min(pause * 2, std::chrono::microseconds(1000))) {
    int arrived = 0, departed = 0;
    if (PMPI_Test(&arrival, &arrived, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (arrived != 0) {
      PMPI_Cancel(&g_departure);
      PMPI_Wait(&g_departure, MPI_STATUS_IGNORE);
      return true;
    }
    if (PMPI_Test(&g_departure, &departed, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (departed != 0) {
      runtime::print_message("rank " + std::to_string(g_departed_rank) +
                             " ended without MPI_Finalize: this rank writes its own outputs, no job summary");
      return false;
    }
    std::this_thread::sleep_for(pause);
  }
}

// What this rank records with: 0 without a session, else a hash of
// FERRET_BACKEND (the backends' collectives must match across ranks).
std::uint64_t recording_signature() {
  if (!runtime::session_active()) return 0;
  const char* backends = std::getenv("FERRET_BACKEND");
  const std::uint64_t hash = runtime::fnv1a_64(backends != nullptr ? backends : "");
  return hash == 0 ? 1 : hash;
}

int after_init(int result) {
  if (result != MPI_SUCCESS || g_group != nullptr) return result;
  // Every rank takes part in these collectives, traced or not: a rank whose
  // session did not start must not leave the others waiting.
  MPI_Comm communicator = MPI_COMM_NULL;
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &communicator) != MPI_SUCCESS) {
    runtime::print_message("MPI_Comm_dup failed: each rank records into its own output");
    return result;
  }
  // The group forms only when all ranks record with the same backends.
  const std::uint64_t signature = recording_signature();
  std::uint64_t bounds[2] = {signature, ~signature};  // max of both: the largest and the smallest
  PMPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_UINT64_T, MPI_MAX, communicator);
  const bool all_alike = bounds[0] == ~bounds[1] && signature != 0;
  if (!all_alike) {
    if (signature != 0)
      runtime::print_message(
          "the MPI ranks do not all record with the same FERRET_BACKEND: each rank writes its own "
          "output");
    PMPI_Comm_free(&communicator);
    return result;
  }
  // ferret's calls report failures (a peer gone at exit) rather than abort.
  PMPI_Comm_set_errhandler(communicator, MPI_ERRORS_RETURN);
  g_group = new mpi_process_group(communicator);
  g_group->set_collectives_available(true);
  runtime::join_process_group(*g_group);
  const int rank = static_cast<int>(g_group->rank()), size = static_cast<int>(g_group->size());
  publish_clock_offset(communicator, rank, size, "init");
  publish_job_identity(communicator);
  g_group->set_collectives_available(false);
  PMPI_Irecv(&g_departed_rank, 1, MPI_INT, MPI_ANY_SOURCE, departure_tag, communicator, &g_departure);
  std::atexit(announce_departure);
  // Only in a group: naming a new communicator is a collective of its members.
  start_communication_recording(g_group->rank());
  return result;
}

// The runtime learns that a group will come before the session starts (this
// library's initialiser runs before any code of the program).
[[maybe_unused]] const bool g_announced = (runtime::expect_process_group(), true);

}  // namespace
}  // namespace ferret::mpi

extern "C" {

FERRET_EXPORT int MPI_Init(int* argc, char*** argv) {
  return ferret::mpi::after_init(PMPI_Init(argc, argv));
}

FERRET_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return ferret::mpi::after_init(PMPI_Init_thread(argc, argv, required, provided));
}

FERRET_EXPORT int MPI_Finalize(void) {
  using ferret::mpi::g_group;
  if (g_group != nullptr) {
    ferret::mpi::g_in_finalize = true;
    ferret::mpi::stop_communication_recording();
    if (!ferret::mpi::all_ranks_in_finalize(g_group->communicator())) g_group->set_broken();
    g_group->set_collectives_available(true);
    if (!g_group->broken())
      ferret::mpi::publish_clock_offset(g_group->communicator(), static_cast<int>(g_group->rank()),
                                        static_cast<int>(g_group->size()), "finalize");
    ferret::runtime::end_session();
    g_group->set_collectives_available(false);
    MPI_Comm communicator = g_group->communicator();
    if (g_group->broken())
      ferret::mpi::answer_departure();
    else
      PMPI_Comm_free(&communicator);  // collective
  } else {
    ferret::runtime::end_session();  // events after MPI_Finalize are not recorded either way
  }
  return PMPI_Finalize();
}

}  // extern "C"
