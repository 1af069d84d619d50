// PMPI wrappers of point-to-point, collective and communicator calls. Each call
// is a region of domain "mpi" (nested with the program's annotations), and the
// messages and collectives become communication events (ferret/runtime/
// backend.hpp) that the runtime hands to the backends at every drain.
//
// Per thread, the events go into a fixed ring that only that thread writes and
// only the drain reads (no lock, no allocation after the thread's first call);
// a full ring drops events and counts them, and a ring three quarters full
// asks for a drain. Non-blocking requests wait for their completion in a fixed
// table under a mutex (MPI takes its own locks in these calls anyway); a full
// table leaves the request untracked, counted. Communicators are named through
// MPI attribute caching: one id per communicator, the same on all its members.
// A call's region is located at the program's call: the wrapper's return
// address, symbolized at the next drain (code_sites.hpp).
#include "communication.hpp"

#include "code_sites.hpp"

#include <ferret/ferret.hpp>
#include <ferret/runtime/runtime.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace ferret::mpi {
namespace {

using runtime::collective_kind;
using runtime::communication_event;
using runtime::communication_kind;
using runtime::no_rank;

struct mpi_domain {
  static constexpr const char* name = "mpi";
  static constexpr bool enabled = true;
};

std::atomic<bool> g_recording{false};
std::uint32_t g_world_rank = 0;
std::atomic<std::uint64_t> g_events_recorded{0};
std::atomic<std::uint64_t> g_events_dropped{0};
std::atomic<std::uint64_t> g_requests_untracked{0};

// ---------------------------------------------------------------------------
// Per-thread event rings.

class thread_log {
 public:
  static constexpr std::uint64_t capacity = 4096;
  static constexpr std::uint64_t drain_threshold = capacity * 3 / 4;

  /// The number of events waiting after this one, 0 when the ring was full.
  std::uint64_t push(const communication_event& event) noexcept {
    const std::uint64_t written = written_.load(std::memory_order_relaxed);
    const std::uint64_t waiting = written - read_.load(std::memory_order_acquire);
    if (waiting >= capacity) return 0;
    events_[written % capacity] = event;
    written_.store(written + 1, std::memory_order_release);
    return waiting + 1;
  }

  void drain_into(std::vector<communication_event>& out) {
    std::uint64_t read = read_.load(std::memory_order_relaxed);
    const std::uint64_t written = written_.load(std::memory_order_acquire);
    for (; read != written; ++read) out.push_back(events_[read % capacity]);
    read_.store(read, std::memory_order_release);
  }

 private:
  std::array<communication_event, capacity> events_{};
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> read_{0};
};

std::mutex g_logs_mutex;
// Never freed: a thread's events outlive it until the next drain.
std::vector<thread_log*> g_logs;
// Communicators created since the last drain (under g_logs_mutex).
std::vector<runtime::communicator_info> g_new_communicators;

thread_log& this_thread_log() {
  thread_local thread_log* log = nullptr;
  if (log == nullptr) {
    log = new thread_log;
    std::lock_guard lock{g_logs_mutex};
    g_logs.push_back(log);
  }
  return *log;
}

std::uint64_t this_thread_id() noexcept {
  thread_local const std::uint64_t tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return tid;
}

// The wrapped call running on this thread (its region's name), for the events.
thread_local const char* t_call = nullptr;

void record(communication_event event) noexcept {
  event.tid = this_thread_id();
  event.call = t_call;
  const std::uint64_t waiting = this_thread_log().push(event);
  if (waiting == 0) {
    g_events_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  g_events_recorded.fetch_add(1, std::memory_order_relaxed);
  if (waiting == thread_log::drain_threshold) ferret::flush();
}

// The threads' event clock, so that an event orders exactly with its call's region.
std::int64_t now() noexcept { return static_cast<std::int64_t>(runtime::clock_reading()); }

// ---------------------------------------------------------------------------
// Communicators.

struct communicator_entry {
  std::uint64_t id;
  // The group rank (MPI_COMM_WORLD rank) of each rank of the communicator; of
  // the remote group for an intercommunicator, whose peers are remote ranks.
  std::vector<std::uint32_t> members;
};

int g_keyval = MPI_KEYVAL_INVALID;
std::atomic<std::uint32_t> g_created{2};  // ids 0 and 1 are MPI_COMM_WORLD and MPI_COMM_SELF

std::uint64_t local_id(std::uint32_t serial) noexcept {
  return (static_cast<std::uint64_t>(g_world_rank) << 32) | serial;
}

std::vector<std::uint32_t> members_of(MPI_Comm communicator) {
  int inter = 0;
  PMPI_Comm_test_inter(communicator, &inter);
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  if (inter != 0)
    PMPI_Comm_remote_group(communicator, &group);
  else
    PMPI_Comm_group(communicator, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int size = 0;
  PMPI_Group_size(group, &size);
  std::vector<int> ranks(static_cast<std::size_t>(size)), in_world(ranks.size(), MPI_UNDEFINED);
  for (int r = 0; r < size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  PMPI_Group_translate_ranks(group, size, ranks.data(), world, in_world.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  std::vector<std::uint32_t> members;
  members.reserve(ranks.size());
  for (const int r : in_world) members.push_back(r == MPI_UNDEFINED ? no_rank : static_cast<std::uint32_t>(r));
  return members;
}

// Entries live to the end of the process (pending requests refer to them
// after MPI_Comm_free), owned here rather than by MPI's attribute cache.
std::vector<std::unique_ptr<communicator_entry>> g_entries;  // under g_logs_mutex

const communicator_entry* remember(MPI_Comm communicator, std::uint64_t id, std::string name) {
  auto entry = std::make_unique<communicator_entry>(communicator_entry{id, members_of(communicator)});
  const communicator_entry* kept = entry.get();
  PMPI_Comm_set_attr(communicator, g_keyval, entry.get());
  std::lock_guard lock{g_logs_mutex};
  g_new_communicators.push_back(runtime::communicator_info{id, std::move(name), entry->members});
  g_entries.push_back(std::move(entry));
  return kept;
}

std::string id_name(const char* how, std::uint64_t id) {
  return std::string{how} + ' ' + std::to_string(id >> 32) + ':' + std::to_string(id & 0xffffffffu);
}

/// The entry of `communicator`; one made here (with an id of this process
/// only) for communicators made by calls this layer does not wrap.
const communicator_entry* entry_of(MPI_Comm communicator) {
  if (communicator == MPI_COMM_NULL || g_keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(communicator, g_keyval, &value, &found) == MPI_SUCCESS && found != 0)
    return static_cast<const communicator_entry*>(value);
  const std::uint64_t id = local_id(g_created.fetch_add(1));
  return remember(communicator, id, id_name("communicator", id));
}

/// Names a communicator that a collective call created: its rank 0 picks the
/// id and tells the others, so that all members name it alike.
void created(MPI_Comm communicator, const char* how) {
  if (!g_recording.load(std::memory_order_relaxed) || communicator == MPI_COMM_NULL) return;
  int inter = 0;
  PMPI_Comm_test_inter(communicator, &inter);
  std::uint64_t id = local_id(g_created.fetch_add(1));
  if (inter == 0) PMPI_Bcast(&id, 1, MPI_UINT64_T, 0, communicator);
  remember(communicator, id, id_name(how, id));
}

// ---------------------------------------------------------------------------
// Requests waiting for their completion.

struct pending_request {
  communication_kind kind;  // isend or irecv_request
  const communicator_entry* communicator;
  std::uint32_t peer;
  std::int32_t tag;
  std::uint64_t bytes;
  std::uint64_t id;
};

std::uint64_t key_of(MPI_Request request) noexcept {
  static_assert(sizeof(MPI_Request) <= sizeof(std::uint64_t));
  std::uint64_t key = 0;
  std::memcpy(&key, &request, sizeof request);
  return key;
}

// Open addressing with linear probing; removal shifts the probe chain back, so
// there are no tombstones and lookups stay short.
class request_table {
 public:
  bool insert(MPI_Request request, const pending_request& value) {
    const std::uint64_t key = key_of(request);
    std::lock_guard lock{mutex_};
    if (count_ >= size * 3 / 4) return false;
    std::size_t i = home(key);
    while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask;
    if (!slots_[i].used) ++count_;
    slots_[i] = slot{key, true, value};
    return true;
  }

  bool find(MPI_Request request, pending_request& value) {
    const std::uint64_t key = key_of(request);
    std::lock_guard lock{mutex_};
    std::size_t i = home(key);
    while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask;
    if (!slots_[i].used) return false;
    value = slots_[i].value;
    return true;
  }

  bool take(MPI_Request request, pending_request& value) {
    const std::uint64_t key = key_of(request);
    std::lock_guard lock{mutex_};
    std::size_t i = home(key);
    while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask;
    if (!slots_[i].used) return false;
    value = slots_[i].value;
    for (std::size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
      const std::size_t k = home(slots_[j].key);
      // Slot j stays where it is if its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].used = false;
    --count_;
    return true;
  }

 private:
  static constexpr std::size_t size = 1 << 14;
  static constexpr std::size_t mask = size - 1;
  struct slot {
    std::uint64_t key;
    bool used;
    pending_request value;
  };
  static std::size_t home(std::uint64_t key) noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 50);
  }
  std::mutex mutex_;
  std::size_t count_ = 0;
  std::array<slot, size> slots_{};
};

request_table g_requests;
std::atomic<std::uint64_t> g_next_request{1};

// ---------------------------------------------------------------------------
// Events.

std::uint64_t bytes_of(int count, MPI_Datatype type) noexcept {
  int size = 0;
  if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) return 0;
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size);
}

communication_event event_for(communication_kind kind, std::int64_t time,
                              const communicator_entry* communicator, int peer) noexcept {
  communication_event event{};
  event.time_ns = time;
  event.kind = kind;
  event.peer = no_rank;
  event.peer_process = no_rank;
  if (communicator != nullptr) {
    event.communicator = communicator->id;
    if (peer >= 0 && static_cast<std::size_t>(peer) < communicator->members.size()) {
      event.peer = static_cast<std::uint32_t>(peer);
      event.peer_process = communicator->members[static_cast<std::size_t>(peer)];
    }
  }
  return event;
}

bool recording() noexcept { return g_recording.load(std::memory_order_relaxed); }

// One site per call name and place in the program that calls it. Leaked on
// purpose: drains at exit read it after static destructors may have run; made
// at first use, as a library's initialiser may call MPI before this one runs.
code_sites::site_registry& call_sites() {
  static auto* const sites = new code_sites::site_registry{mpi_domain::name};
  return *sites;
}
thread_local code_sites::site_cache t_sites;

/// The region of one wrapped call, located at `caller` (the wrapper's return
/// address: the program's call). Not recording: one load and one branch.
class call_region {
 public:
  FERRET_ALWAYS_INLINE call_region(const char* name, const void* caller) noexcept {
    if (detail::recording()) begin(name, caller);
  }
  ~call_region() {
    if (FERRET_UNLIKELY(site_ != nullptr)) detail::write(detail::word_of(site_, detail::kind_end));
  }
  call_region(const call_region&) = delete;
  call_region& operator=(const call_region&) = delete;

 private:
  FERRET_NOINLINE void begin(const char* name, const void* caller) noexcept {
    // Located sites only while this layer's collector is registered: its
    // drains symbolize them (communication_collector).
    if (recording()) {
      try {
        site_ = t_sites.find_or_add(call_sites(), name, caller);
      } catch (const std::bad_alloc&) {
        // The call still gets its region, without a location.
      }
    }
    if (site_ == nullptr) site_ = detail::intern_literal(name, mpi_domain::name);
    if (site_ != nullptr) detail::write(detail::word_of(site_, detail::kind_begin));
  }
  const detail::site* site_ = nullptr;
};

void record_message(communication_kind kind, std::int64_t time, MPI_Comm communicator, int peer,
                    int tag, std::uint64_t bytes) {
  if (peer == MPI_PROC_NULL) return;
  communication_event event = event_for(kind, time, entry_of(communicator), peer);
  event.tag = tag;
  event.bytes = bytes;
  record(event);
}

void record_received(std::int64_t time, MPI_Comm communicator, const MPI_Status& status) {
  if (status.MPI_SOURCE == MPI_PROC_NULL || status.MPI_SOURCE < 0) return;
  int count = 0;
  PMPI_Get_count(&status, MPI_BYTE, &count);
  record_message(communication_kind::receive, time, communicator, status.MPI_SOURCE, status.MPI_TAG,
                 count > 0 ? static_cast<std::uint64_t>(count) : 0);
}

/// After a non-blocking send or receive was posted (or a persistent one started).
void posted(communication_kind kind, std::int64_t time, const communicator_entry* entry, int peer,
            int tag, std::uint64_t bytes, MPI_Request request) {
  if (peer == MPI_PROC_NULL || request == MPI_REQUEST_NULL) return;
  const pending_request pending{kind, entry, peer < 0 ? no_rank : static_cast<std::uint32_t>(peer),
                                tag, bytes, g_next_request.fetch_add(1)};
  if (!g_requests.insert(request, pending)) {
    g_requests_untracked.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  communication_event event = event_for(kind, time, entry, peer);
  event.tag = tag;
  event.bytes = kind == communication_kind::isend ? bytes : 0;
  event.request = pending.id;
  record(event);
}

void posted(communication_kind kind, std::int64_t time, MPI_Comm communicator, int peer, int tag,
            std::uint64_t bytes, MPI_Request request) {
  if (peer == MPI_PROC_NULL || request == MPI_REQUEST_NULL) return;
  posted(kind, time, entry_of(communicator), peer, tag, bytes, request);
}

// Persistent requests (MPI_Send_init, MPI_Recv_init): what each start posts,
// kept from the init call to MPI_Request_free. A started one is pending like
// any non-blocking request; its completion leaves the handle for the next start.
request_table g_persistent;

void persistent_created(communication_kind kind, MPI_Comm communicator, int peer, int tag,
                        std::uint64_t bytes, MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return;
  const pending_request made{kind, entry_of(communicator),
                             peer < 0 ? no_rank : static_cast<std::uint32_t>(peer), tag, bytes, 0};
  if (!g_persistent.insert(request, made)) g_requests_untracked.fetch_add(1, std::memory_order_relaxed);
}

void started(MPI_Request request, std::int64_t time) {
  pending_request made{};
  if (request == MPI_REQUEST_NULL || !g_persistent.find(request, made)) return;
  const int peer = made.peer == no_rank ? -1 : static_cast<int>(made.peer);
  posted(made.kind, time, made.communicator, peer, made.tag, made.bytes, request);
}

/// `request` (the handle before the call that completed it) is done.
void completed(MPI_Request request, const MPI_Status& status, std::int64_t time) {
  pending_request pending{};
  if (request == MPI_REQUEST_NULL || !g_requests.take(request, pending)) return;
  if (pending.kind == communication_kind::isend) {
    communication_event event = event_for(communication_kind::isend_complete, time,
                                          pending.communicator, static_cast<int>(pending.peer));
    event.tag = pending.tag;
    event.bytes = pending.bytes;
    event.request = pending.id;
    record(event);
    return;
  }
  int cancelled = 0;
  PMPI_Test_cancelled(&status, &cancelled);
  if (cancelled != 0 || status.MPI_SOURCE == MPI_PROC_NULL || status.MPI_SOURCE < 0) return;
  int count = 0;
  PMPI_Get_count(&status, MPI_BYTE, &count);
  communication_event event =
      event_for(communication_kind::irecv, time, pending.communicator, status.MPI_SOURCE);
  event.tag = status.MPI_TAG;
  event.bytes = count > 0 ? static_cast<std::uint64_t>(count) : 0;
  event.request = pending.id;
  record(event);
}

// The handles and statuses of one Wait/Test call: the call overwrites the
// handles of completed requests, and the program may ignore the statuses.
struct completion_scratch {
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  void hold(int count, const MPI_Request* handles) {
    requests.assign(handles, handles + count);
    if (statuses.size() < static_cast<std::size_t>(count)) statuses.resize(static_cast<std::size_t>(count));
  }
};

completion_scratch& scratch() {
  thread_local completion_scratch held;
  return held;
}

void collective_end(std::int64_t begin, collective_kind kind, MPI_Comm communicator, int root,
                    std::uint64_t sent, std::uint64_t received) {
  const communicator_entry* entry = entry_of(communicator);
  record(event_for(communication_kind::collective_begin, begin, entry, -1));
  communication_event event = event_for(communication_kind::collective_end, now(), entry, root);
  event.collective = kind;
  event.bytes = sent;
  event.bytes_received = received;
  record(event);
}

int size_of(MPI_Comm communicator) noexcept {
  int size = 1;
  PMPI_Comm_size(communicator, &size);
  return size;
}

int rank_in(MPI_Comm communicator) noexcept {
  int rank = 0;
  PMPI_Comm_rank(communicator, &rank);
  return rank;
}

std::uint64_t sum_except(const int* counts, int size, int skip, MPI_Datatype type) noexcept {
  std::uint64_t total = 0;
  for (int r = 0; r < size; ++r)
    if (r != skip) total += bytes_of(counts[r], type);
  return total;
}

class communication_collector final : public runtime::collector {
 public:
  // collect() and add_metadata() bracket each drain: the sites of the calls
  // recorded since the last one are symbolized before the runtime reads them.
  void collect(std::vector<runtime::gpu_activity>& /*activities*/,
               std::vector<runtime::gpu_device_info>& /*new_devices*/, bool /*final*/) override {
    call_sites().drain_started();
  }
  void collect_communication(std::vector<runtime::communicator_info>& new_communicators,
                             std::vector<communication_event>& events, bool /*final*/) override {
    std::lock_guard lock{g_logs_mutex};
    for (runtime::communicator_info& communicator : g_new_communicators)
      new_communicators.push_back(std::move(communicator));
    g_new_communicators.clear();
    for (thread_log* log : g_logs) log->drain_into(events);
  }
  void add_metadata(runtime::metadata_list& /*metadata*/) const override { call_sites().drain_finished(); }
  void abandon() noexcept override { g_recording.store(false); }
};

communication_collector g_collector;

}  // namespace

void start_communication_recording(std::uint32_t world_rank) {
  g_world_rank = world_rank;
  if (g_keyval == MPI_KEYVAL_INVALID &&
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &g_keyval, nullptr) !=
          MPI_SUCCESS) {
    runtime::print_message("MPI_Comm_create_keyval failed: MPI communication is not recorded");
    return;
  }
  if (!runtime::register_collector(&g_collector)) return;
  remember(MPI_COMM_WORLD, 0, "MPI_COMM_WORLD");
  remember(MPI_COMM_SELF, local_id(1), id_name("MPI_COMM_SELF", local_id(1)));
  g_recording.store(true);
}

void stop_communication_recording() {
  if (!g_recording.exchange(false)) return;
  ferret::set_metadata("mpi-communication-events", static_cast<std::int64_t>(g_events_recorded.load()));
  ferret::set_metadata("mpi-communication-events-dropped",
                       static_cast<std::int64_t>(g_events_dropped.load()));
  ferret::set_metadata("mpi-requests-untracked", static_cast<std::int64_t>(g_requests_untracked.load()));
}

}  // namespace ferret::mpi

// ---------------------------------------------------------------------------
// The wrappers. Each is a region of domain "mpi"; events only while recording.

namespace fm = ferret::mpi;

// In the wrapper's own body: its return address is in the program (no wrapper
// calls another; ferret's own MPI calls go to PMPI_*).
#define FERRET_MPI_CALL(name)                                                    \
  const fm::call_region ferret_mpi_region{name, __builtin_return_address(0)}; \
  fm::t_call = name

extern "C" {

// Point to point, blocking.

#define FERRET_MPI_BLOCKING_SEND(function, call)                                                  \
  FERRET_EXPORT int function(const void* buffer, int count, MPI_Datatype type, int destination, \
                             int tag, MPI_Comm communicator) {                                    \
    FERRET_MPI_CALL(#function);                                                                   \
    if (fm::recording())                                                                          \
      fm::record_message(fm::communication_kind::send, fm::now(), communicator, destination, tag, \
                         fm::bytes_of(count, type));                                              \
    return call(buffer, count, type, destination, tag, communicator);                             \
  }
FERRET_MPI_BLOCKING_SEND(MPI_Send, PMPI_Send)
FERRET_MPI_BLOCKING_SEND(MPI_Ssend, PMPI_Ssend)
FERRET_MPI_BLOCKING_SEND(MPI_Bsend, PMPI_Bsend)
FERRET_MPI_BLOCKING_SEND(MPI_Rsend, PMPI_Rsend)

FERRET_EXPORT int MPI_Recv(void* buffer, int count, MPI_Datatype type, int source, int tag,
                           MPI_Comm communicator, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Recv");
  if (!fm::recording()) return PMPI_Recv(buffer, count, type, source, tag, communicator, status);
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result = PMPI_Recv(buffer, count, type, source, tag, communicator, used);
  if (result == MPI_SUCCESS) fm::record_received(fm::now(), communicator, *used);
  return result;
}

FERRET_EXPORT int MPI_Sendrecv(const void* send_buffer, int send_count, MPI_Datatype send_type,
                               int destination, int send_tag, void* receive_buffer,
                               int receive_count, MPI_Datatype receive_type, int source,
                               int receive_tag, MPI_Comm communicator, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Sendrecv");
  if (!fm::recording())
    return PMPI_Sendrecv(send_buffer, send_count, send_type, destination, send_tag, receive_buffer,
                         receive_count, receive_type, source, receive_tag, communicator, status);
  fm::record_message(fm::communication_kind::send, fm::now(), communicator, destination, send_tag,
                     fm::bytes_of(send_count, send_type));
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result =
      PMPI_Sendrecv(send_buffer, send_count, send_type, destination, send_tag, receive_buffer,
                    receive_count, receive_type, source, receive_tag, communicator, used);
  if (result == MPI_SUCCESS) fm::record_received(fm::now(), communicator, *used);
  return result;
}

FERRET_EXPORT int MPI_Sendrecv_replace(void* buffer, int count, MPI_Datatype type, int destination,
                                       int send_tag, int source, int receive_tag,
                                       MPI_Comm communicator, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Sendrecv_replace");
  if (!fm::recording())
    return PMPI_Sendrecv_replace(buffer, count, type, destination, send_tag, source, receive_tag,
                                 communicator, status);
  fm::record_message(fm::communication_kind::send, fm::now(), communicator, destination, send_tag,
                     fm::bytes_of(count, type));
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result = PMPI_Sendrecv_replace(buffer, count, type, destination, send_tag, source,
                                           receive_tag, communicator, used);
  if (result == MPI_SUCCESS) fm::record_received(fm::now(), communicator, *used);
  return result;
}

// Probes receive nothing: regions only.
FERRET_EXPORT int MPI_Probe(int source, int tag, MPI_Comm communicator, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Probe");
  return PMPI_Probe(source, tag, communicator, status);
}

FERRET_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm communicator, int* flag,
                             MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Iprobe");
  return PMPI_Iprobe(source, tag, communicator, flag, status);
}

// Point to point, non-blocking.

#define FERRET_MPI_NONBLOCKING_SEND(function, call)                                               \
  FERRET_EXPORT int function(const void* buffer, int count, MPI_Datatype type, int destination, \
                             int tag, MPI_Comm communicator, MPI_Request* request) {              \
    FERRET_MPI_CALL(#function);                                                                   \
    if (!fm::recording()) return call(buffer, count, type, destination, tag, communicator, request); \
    const std::int64_t time = fm::now();                                                          \
    const int result = call(buffer, count, type, destination, tag, communicator, request);        \
    if (result == MPI_SUCCESS)                                                                    \
      fm::posted(fm::communication_kind::isend, time, communicator, destination, tag,             \
                 fm::bytes_of(count, type), *request);                                            \
    return result;                                                                                \
  }
FERRET_MPI_NONBLOCKING_SEND(MPI_Isend, PMPI_Isend)
FERRET_MPI_NONBLOCKING_SEND(MPI_Issend, PMPI_Issend)
FERRET_MPI_NONBLOCKING_SEND(MPI_Ibsend, PMPI_Ibsend)
FERRET_MPI_NONBLOCKING_SEND(MPI_Irsend, PMPI_Irsend)

FERRET_EXPORT int MPI_Irecv(void* buffer, int count, MPI_Datatype type, int source, int tag,
                            MPI_Comm communicator, MPI_Request* request) {
  FERRET_MPI_CALL("MPI_Irecv");
  if (!fm::recording()) return PMPI_Irecv(buffer, count, type, source, tag, communicator, request);
  const std::int64_t time = fm::now();
  const int result = PMPI_Irecv(buffer, count, type, source, tag, communicator, request);
  // A receive from any source is posted with no peer; its completion names it.
  if (result == MPI_SUCCESS)
    fm::posted(fm::communication_kind::irecv_request, time, communicator,
               source == MPI_ANY_SOURCE ? -1 : source, tag, fm::bytes_of(count, type), *request);
  return result;
}

// Point to point, persistent: the init calls keep what a start posts (also
// while not recording, for the starts after a resume).

#define FERRET_MPI_PERSISTENT_SEND(function, call)                                                \
  FERRET_EXPORT int function(const void* buffer, int count, MPI_Datatype type, int destination, \
                             int tag, MPI_Comm communicator, MPI_Request* request) {              \
    FERRET_MPI_CALL(#function);                                                                   \
    const int result = call(buffer, count, type, destination, tag, communicator, request);        \
    if (result == MPI_SUCCESS && destination != MPI_PROC_NULL)                                    \
      fm::persistent_created(fm::communication_kind::isend, communicator, destination, tag,       \
                             fm::bytes_of(count, type), *request);                                \
    return result;                                                                                \
  }
FERRET_MPI_PERSISTENT_SEND(MPI_Send_init, PMPI_Send_init)
FERRET_MPI_PERSISTENT_SEND(MPI_Ssend_init, PMPI_Ssend_init)
FERRET_MPI_PERSISTENT_SEND(MPI_Bsend_init, PMPI_Bsend_init)
FERRET_MPI_PERSISTENT_SEND(MPI_Rsend_init, PMPI_Rsend_init)

FERRET_EXPORT int MPI_Recv_init(void* buffer, int count, MPI_Datatype type, int source, int tag,
                                MPI_Comm communicator, MPI_Request* request) {
  FERRET_MPI_CALL("MPI_Recv_init");
  const int result = PMPI_Recv_init(buffer, count, type, source, tag, communicator, request);
  if (result == MPI_SUCCESS && source != MPI_PROC_NULL)
    fm::persistent_created(fm::communication_kind::irecv_request, communicator,
                           source == MPI_ANY_SOURCE ? -1 : source, tag, fm::bytes_of(count, type),
                           *request);
  return result;
}

FERRET_EXPORT int MPI_Start(MPI_Request* request) {
  FERRET_MPI_CALL("MPI_Start");
  if (!fm::recording() || request == nullptr) return PMPI_Start(request);
  const std::int64_t time = fm::now();
  const int result = PMPI_Start(request);
  if (result == MPI_SUCCESS) fm::started(*request, time);
  return result;
}

FERRET_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
  FERRET_MPI_CALL("MPI_Startall");
  if (!fm::recording() || count <= 0) return PMPI_Startall(count, requests);
  const std::int64_t time = fm::now();
  const int result = PMPI_Startall(count, requests);
  if (result == MPI_SUCCESS)
    for (int i = 0; i < count; ++i) fm::started(requests[i], time);
  return result;
}

// Completion.

FERRET_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Wait");
  if (!fm::recording()) return PMPI_Wait(request, status);
  const MPI_Request handle = *request;
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result = PMPI_Wait(request, used);
  if (result == MPI_SUCCESS) fm::completed(handle, *used, fm::now());
  return result;
}

FERRET_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Test");
  if (!fm::recording()) return PMPI_Test(request, flag, status);
  const MPI_Request handle = *request;
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result = PMPI_Test(request, flag, used);
  if (result == MPI_SUCCESS && *flag != 0) fm::completed(handle, *used, fm::now());
  return result;
}

FERRET_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  FERRET_MPI_CALL("MPI_Waitall");
  if (!fm::recording() || count <= 0) return PMPI_Waitall(count, requests, statuses);
  fm::completion_scratch& held = fm::scratch();
  held.hold(count, requests);
  MPI_Status* used = statuses == MPI_STATUSES_IGNORE ? held.statuses.data() : statuses;
  const int result = PMPI_Waitall(count, requests, used);
  if (result == MPI_SUCCESS) {
    const std::int64_t time = fm::now();
    for (int i = 0; i < count; ++i) fm::completed(held.requests[static_cast<std::size_t>(i)], used[i], time);
  }
  return result;
}

FERRET_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  FERRET_MPI_CALL("MPI_Testall");
  if (!fm::recording() || count <= 0) return PMPI_Testall(count, requests, flag, statuses);
  fm::completion_scratch& held = fm::scratch();
  held.hold(count, requests);
  MPI_Status* used = statuses == MPI_STATUSES_IGNORE ? held.statuses.data() : statuses;
  const int result = PMPI_Testall(count, requests, flag, used);
  if (result == MPI_SUCCESS && *flag != 0) {
    const std::int64_t time = fm::now();
    for (int i = 0; i < count; ++i) fm::completed(held.requests[static_cast<std::size_t>(i)], used[i], time);
  }
  return result;
}

FERRET_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Waitany");
  if (!fm::recording() || count <= 0) return PMPI_Waitany(count, requests, index, status);
  fm::completion_scratch& held = fm::scratch();
  held.hold(count, requests);
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result = PMPI_Waitany(count, requests, index, used);
  if (result == MPI_SUCCESS && *index != MPI_UNDEFINED)
    fm::completed(held.requests[static_cast<std::size_t>(*index)], *used, fm::now());
  return result;
}

FERRET_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                              MPI_Status* status) {
  FERRET_MPI_CALL("MPI_Testany");
  if (!fm::recording() || count <= 0) return PMPI_Testany(count, requests, index, flag, status);
  fm::completion_scratch& held = fm::scratch();
  held.hold(count, requests);
  MPI_Status own{};
  MPI_Status* used = status == MPI_STATUS_IGNORE ? &own : status;
  const int result = PMPI_Testany(count, requests, index, flag, used);
  if (result == MPI_SUCCESS && *flag != 0 && *index != MPI_UNDEFINED)
    fm::completed(held.requests[static_cast<std::size_t>(*index)], *used, fm::now());
  return result;
}

#define FERRET_MPI_SOME(function, call)                                                          \
  FERRET_EXPORT int function(int count, MPI_Request requests[], int* done, int indices[],      \
                             MPI_Status statuses[]) {                                            \
    FERRET_MPI_CALL(#function);                                                                  \
    if (!fm::recording() || count <= 0) return call(count, requests, done, indices, statuses);   \
    fm::completion_scratch& held = fm::scratch();                                                \
    held.hold(count, requests);                                                                  \
    MPI_Status* used = statuses == MPI_STATUSES_IGNORE ? held.statuses.data() : statuses;        \
    const int result = call(count, requests, done, indices, used);                               \
    if (result == MPI_SUCCESS && *done != MPI_UNDEFINED) {                                       \
      const std::int64_t time = fm::now();                                                       \
      for (int i = 0; i < *done; ++i)                                                            \
        fm::completed(held.requests[static_cast<std::size_t>(indices[i])], used[i], time);       \
    }                                                                                            \
    return result;                                                                               \
  }
FERRET_MPI_SOME(MPI_Waitsome, PMPI_Waitsome)
FERRET_MPI_SOME(MPI_Testsome, PMPI_Testsome)

FERRET_EXPORT int MPI_Request_free(MPI_Request* request) {
  FERRET_MPI_CALL("MPI_Request_free");
  if (request != nullptr) {
    fm::pending_request forgotten{};
    fm::g_requests.take(*request, forgotten);  // it completes unseen
    fm::g_persistent.take(*request, forgotten);
  }
  return PMPI_Request_free(request);
}

// Collectives: bytes as this process sees them, messages to itself left out.

FERRET_EXPORT int MPI_Barrier(MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Barrier");
  if (!fm::recording()) return PMPI_Barrier(communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Barrier(communicator);
  fm::collective_end(begin, fm::collective_kind::barrier, communicator, -1, 0, 0);
  return result;
}

FERRET_EXPORT int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root,
                            MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Bcast");
  if (!fm::recording()) return PMPI_Bcast(buffer, count, type, root, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Bcast(buffer, count, type, root, communicator);
  const std::uint64_t bytes = fm::bytes_of(count, type);
  const bool at_root = fm::rank_in(communicator) == root;
  fm::collective_end(begin, fm::collective_kind::broadcast, communicator, root,
                     at_root ? bytes * static_cast<std::uint64_t>(fm::size_of(communicator) - 1) : 0,
                     at_root ? 0 : bytes);
  return result;
}

FERRET_EXPORT int MPI_Reduce(const void* send_buffer, void* receive_buffer, int count,
                             MPI_Datatype type, MPI_Op op, int root, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Reduce");
  if (!fm::recording())
    return PMPI_Reduce(send_buffer, receive_buffer, count, type, op, root, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Reduce(send_buffer, receive_buffer, count, type, op, root, communicator);
  const std::uint64_t bytes = fm::bytes_of(count, type);
  const bool at_root = fm::rank_in(communicator) == root;
  fm::collective_end(begin, fm::collective_kind::reduce, communicator, root, at_root ? 0 : bytes,
                     at_root ? bytes * static_cast<std::uint64_t>(fm::size_of(communicator) - 1) : 0);
  return result;
}

FERRET_EXPORT int MPI_Allreduce(const void* send_buffer, void* receive_buffer, int count,
                                MPI_Datatype type, MPI_Op op, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Allreduce");
  if (!fm::recording())
    return PMPI_Allreduce(send_buffer, receive_buffer, count, type, op, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Allreduce(send_buffer, receive_buffer, count, type, op, communicator);
  const std::uint64_t bytes = fm::bytes_of(count, type);
  fm::collective_end(begin, fm::collective_kind::allreduce, communicator, -1, bytes, bytes);
  return result;
}

FERRET_EXPORT int MPI_Gather(const void* send_buffer, int send_count, MPI_Datatype send_type,
                             void* receive_buffer, int receive_count, MPI_Datatype receive_type,
                             int root, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Gather");
  if (!fm::recording())
    return PMPI_Gather(send_buffer, send_count, send_type, receive_buffer, receive_count,
                       receive_type, root, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Gather(send_buffer, send_count, send_type, receive_buffer, receive_count,
                                 receive_type, root, communicator);
  const bool at_root = fm::rank_in(communicator) == root;
  fm::collective_end(
      begin, fm::collective_kind::gather, communicator, root,
      at_root ? 0 : fm::bytes_of(send_count, send_type),
      at_root ? fm::bytes_of(receive_count, receive_type) *
                    static_cast<std::uint64_t>(fm::size_of(communicator) - 1)
              : 0);
  return result;
}

FERRET_EXPORT int MPI_Scatter(const void* send_buffer, int send_count, MPI_Datatype send_type,
                              void* receive_buffer, int receive_count, MPI_Datatype receive_type,
                              int root, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Scatter");
  if (!fm::recording())
    return PMPI_Scatter(send_buffer, send_count, send_type, receive_buffer, receive_count,
                        receive_type, root, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Scatter(send_buffer, send_count, send_type, receive_buffer,
                                  receive_count, receive_type, root, communicator);
  const bool at_root = fm::rank_in(communicator) == root;
  fm::collective_end(begin, fm::collective_kind::scatter, communicator, root,
                     at_root ? fm::bytes_of(send_count, send_type) *
                                   static_cast<std::uint64_t>(fm::size_of(communicator) - 1)
                             : 0,
                     at_root ? 0 : fm::bytes_of(receive_count, receive_type));
  return result;
}

FERRET_EXPORT int MPI_Allgather(const void* send_buffer, int send_count, MPI_Datatype send_type,
                                void* receive_buffer, int receive_count,
                                MPI_Datatype receive_type, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Allgather");
  if (!fm::recording())
    return PMPI_Allgather(send_buffer, send_count, send_type, receive_buffer, receive_count,
                          receive_type, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Allgather(send_buffer, send_count, send_type, receive_buffer,
                                    receive_count, receive_type, communicator);
  const auto others = static_cast<std::uint64_t>(fm::size_of(communicator) - 1);
  // With MPI_IN_PLACE the contribution is the receive type's block.
  const std::uint64_t contribution = send_buffer == MPI_IN_PLACE
                                         ? fm::bytes_of(receive_count, receive_type)
                                         : fm::bytes_of(send_count, send_type);
  fm::collective_end(begin, fm::collective_kind::allgather, communicator, -1, contribution * others,
                     fm::bytes_of(receive_count, receive_type) * others);
  return result;
}

FERRET_EXPORT int MPI_Alltoall(const void* send_buffer, int send_count, MPI_Datatype send_type,
                               void* receive_buffer, int receive_count, MPI_Datatype receive_type,
                               MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Alltoall");
  if (!fm::recording())
    return PMPI_Alltoall(send_buffer, send_count, send_type, receive_buffer, receive_count,
                         receive_type, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Alltoall(send_buffer, send_count, send_type, receive_buffer,
                                   receive_count, receive_type, communicator);
  const auto others = static_cast<std::uint64_t>(fm::size_of(communicator) - 1);
  const std::uint64_t block = send_buffer == MPI_IN_PLACE ? fm::bytes_of(receive_count, receive_type)
                                                          : fm::bytes_of(send_count, send_type);
  fm::collective_end(begin, fm::collective_kind::alltoall, communicator, -1, block * others,
                     fm::bytes_of(receive_count, receive_type) * others);
  return result;
}

FERRET_EXPORT int MPI_Alltoallv(const void* send_buffer, const int send_counts[],
                                const int send_displacements[], MPI_Datatype send_type,
                                void* receive_buffer, const int receive_counts[],
                                const int receive_displacements[], MPI_Datatype receive_type,
                                MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Alltoallv");
  if (!fm::recording())
    return PMPI_Alltoallv(send_buffer, send_counts, send_displacements, send_type, receive_buffer,
                          receive_counts, receive_displacements, receive_type, communicator);
  const std::int64_t begin = fm::now();
  const int result =
      PMPI_Alltoallv(send_buffer, send_counts, send_displacements, send_type, receive_buffer,
                     receive_counts, receive_displacements, receive_type, communicator);
  const int size = fm::size_of(communicator), rank = fm::rank_in(communicator);
  const bool in_place = send_buffer == MPI_IN_PLACE;
  fm::collective_end(
      begin, fm::collective_kind::alltoallv, communicator, -1,
      in_place ? fm::sum_except(receive_counts, size, rank, receive_type)
               : fm::sum_except(send_counts, size, rank, send_type),
      fm::sum_except(receive_counts, size, rank, receive_type));
  return result;
}

FERRET_EXPORT int MPI_Scan(const void* send_buffer, void* receive_buffer, int count,
                           MPI_Datatype type, MPI_Op op, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Scan");
  if (!fm::recording()) return PMPI_Scan(send_buffer, receive_buffer, count, type, op, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Scan(send_buffer, receive_buffer, count, type, op, communicator);
  const std::uint64_t bytes = fm::bytes_of(count, type);
  fm::collective_end(begin, fm::collective_kind::scan, communicator, -1, bytes, bytes);
  return result;
}

FERRET_EXPORT int MPI_Exscan(const void* send_buffer, void* receive_buffer, int count,
                             MPI_Datatype type, MPI_Op op, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Exscan");
  if (!fm::recording()) return PMPI_Exscan(send_buffer, receive_buffer, count, type, op, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Exscan(send_buffer, receive_buffer, count, type, op, communicator);
  const std::uint64_t bytes = fm::bytes_of(count, type);
  fm::collective_end(begin, fm::collective_kind::exscan, communicator, -1, bytes, bytes);
  return result;
}

FERRET_EXPORT int MPI_Gatherv(const void* send_buffer, int send_count, MPI_Datatype send_type,
                              void* receive_buffer, const int receive_counts[],
                              const int displacements[], MPI_Datatype receive_type, int root,
                              MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Gatherv");
  if (!fm::recording())
    return PMPI_Gatherv(send_buffer, send_count, send_type, receive_buffer, receive_counts,
                        displacements, receive_type, root, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Gatherv(send_buffer, send_count, send_type, receive_buffer,
                                  receive_counts, displacements, receive_type, root, communicator);
  const int rank = fm::rank_in(communicator);
  const bool at_root = rank == root;
  // Only the root's receive counts are significant.
  fm::collective_end(begin, fm::collective_kind::gatherv, communicator, root,
                     at_root ? 0 : fm::bytes_of(send_count, send_type),
                     at_root ? fm::sum_except(receive_counts, fm::size_of(communicator), rank, receive_type)
                             : 0);
  return result;
}

FERRET_EXPORT int MPI_Scatterv(const void* send_buffer, const int send_counts[],
                               const int displacements[], MPI_Datatype send_type,
                               void* receive_buffer, int receive_count, MPI_Datatype receive_type,
                               int root, MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Scatterv");
  if (!fm::recording())
    return PMPI_Scatterv(send_buffer, send_counts, displacements, send_type, receive_buffer,
                         receive_count, receive_type, root, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Scatterv(send_buffer, send_counts, displacements, send_type,
                                   receive_buffer, receive_count, receive_type, root, communicator);
  const int rank = fm::rank_in(communicator);
  const bool at_root = rank == root;
  // Only the root's send counts are significant.
  fm::collective_end(begin, fm::collective_kind::scatterv, communicator, root,
                     at_root ? fm::sum_except(send_counts, fm::size_of(communicator), rank, send_type) : 0,
                     at_root ? 0 : fm::bytes_of(receive_count, receive_type));
  return result;
}

FERRET_EXPORT int MPI_Allgatherv(const void* send_buffer, int send_count, MPI_Datatype send_type,
                                 void* receive_buffer, const int receive_counts[],
                                 const int displacements[], MPI_Datatype receive_type,
                                 MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Allgatherv");
  if (!fm::recording())
    return PMPI_Allgatherv(send_buffer, send_count, send_type, receive_buffer, receive_counts,
                           displacements, receive_type, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Allgatherv(send_buffer, send_count, send_type, receive_buffer,
                                     receive_counts, displacements, receive_type, communicator);
  const int size = fm::size_of(communicator), rank = fm::rank_in(communicator);
  // With MPI_IN_PLACE the contribution is this rank's block of the receive buffer.
  const std::uint64_t contribution = send_buffer == MPI_IN_PLACE
                                         ? fm::bytes_of(receive_counts[rank], receive_type)
                                         : fm::bytes_of(send_count, send_type);
  fm::collective_end(begin, fm::collective_kind::allgatherv, communicator, -1,
                     contribution * static_cast<std::uint64_t>(size - 1),
                     fm::sum_except(receive_counts, size, rank, receive_type));
  return result;
}

// Reduce-scatter: each rank contributes the whole vector and receives its block.
FERRET_EXPORT int MPI_Reduce_scatter(const void* send_buffer, void* receive_buffer,
                                     const int receive_counts[], MPI_Datatype type, MPI_Op op,
                                     MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Reduce_scatter");
  if (!fm::recording())
    return PMPI_Reduce_scatter(send_buffer, receive_buffer, receive_counts, type, op, communicator);
  const std::int64_t begin = fm::now();
  const int result = PMPI_Reduce_scatter(send_buffer, receive_buffer, receive_counts, type, op, communicator);
  const int rank = fm::rank_in(communicator);
  const std::uint64_t block = fm::bytes_of(receive_counts[rank], type);
  fm::collective_end(begin, fm::collective_kind::reduce_scatter, communicator, -1,
                     fm::sum_except(receive_counts, fm::size_of(communicator), -1, type), block);
  return result;
}

FERRET_EXPORT int MPI_Reduce_scatter_block(const void* send_buffer, void* receive_buffer,
                                           int receive_count, MPI_Datatype type, MPI_Op op,
                                           MPI_Comm communicator) {
  FERRET_MPI_CALL("MPI_Reduce_scatter_block");
  if (!fm::recording())
    return PMPI_Reduce_scatter_block(send_buffer, receive_buffer, receive_count, type, op, communicator);
  const std::int64_t begin = fm::now();
  const int result =
      PMPI_Reduce_scatter_block(send_buffer, receive_buffer, receive_count, type, op, communicator);
  const std::uint64_t block = fm::bytes_of(receive_count, type);
  fm::collective_end(begin, fm::collective_kind::reduce_scatter_block, communicator, -1,
                     block * static_cast<std::uint64_t>(fm::size_of(communicator)), block);
  return result;
}

// Non-blocking collectives: the call is a region of domain mpi (its time is the
// posting); the collective's completion, in MPI_Wait/Test, is not recorded as a
// collective (OTF2's MpiCollectiveBegin/End describe blocking ones).
#define FERRET_MPI_NONBLOCKING_COLLECTIVE(function, parameters, arguments) \
  FERRET_EXPORT int function parameters {                                 \
    FERRET_MPI_CALL(#function);                                           \
    return P##function arguments;                                         \
  }
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ibarrier, (MPI_Comm c, MPI_Request* r), (c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ibcast,
                                  (void* b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request* r),
                                  (b, n, t, root, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ireduce,
                                  (const void* s, void* d, int n, MPI_Datatype t, MPI_Op o, int root,
                                   MPI_Comm c, MPI_Request* r),
                                  (s, d, n, t, o, root, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iallreduce,
                                  (const void* s, void* d, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                                   MPI_Request* r),
                                  (s, d, n, t, o, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iscan,
                                  (const void* s, void* d, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                                   MPI_Request* r),
                                  (s, d, n, t, o, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iexscan,
                                  (const void* s, void* d, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                                   MPI_Request* r),
                                  (s, d, n, t, o, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Igather,
                                  (const void* s, int sn, MPI_Datatype st, void* d, int dn, MPI_Datatype dt,
                                   int root, MPI_Comm c, MPI_Request* r),
                                  (s, sn, st, d, dn, dt, root, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Igatherv,
                                  (const void* s, int sn, MPI_Datatype st, void* d, const int dn[],
                                   const int displacements[], MPI_Datatype dt, int root, MPI_Comm c,
                                   MPI_Request* r),
                                  (s, sn, st, d, dn, displacements, dt, root, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iscatter,
                                  (const void* s, int sn, MPI_Datatype st, void* d, int dn, MPI_Datatype dt,
                                   int root, MPI_Comm c, MPI_Request* r),
                                  (s, sn, st, d, dn, dt, root, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iscatterv,
                                  (const void* s, const int sn[], const int displacements[], MPI_Datatype st,
                                   void* d, int dn, MPI_Datatype dt, int root, MPI_Comm c, MPI_Request* r),
                                  (s, sn, displacements, st, d, dn, dt, root, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iallgather,
                                  (const void* s, int sn, MPI_Datatype st, void* d, int dn, MPI_Datatype dt,
                                   MPI_Comm c, MPI_Request* r),
                                  (s, sn, st, d, dn, dt, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Iallgatherv,
                                  (const void* s, int sn, MPI_Datatype st, void* d, const int dn[],
                                   const int displacements[], MPI_Datatype dt, MPI_Comm c, MPI_Request* r),
                                  (s, sn, st, d, dn, displacements, dt, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ialltoall,
                                  (const void* s, int sn, MPI_Datatype st, void* d, int dn, MPI_Datatype dt,
                                   MPI_Comm c, MPI_Request* r),
                                  (s, sn, st, d, dn, dt, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ialltoallv,
                                  (const void* s, const int sn[], const int sd[], MPI_Datatype st, void* d,
                                   const int dn[], const int dd[], MPI_Datatype dt, MPI_Comm c, MPI_Request* r),
                                  (s, sn, sd, st, d, dn, dd, dt, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ireduce_scatter,
                                  (const void* s, void* d, const int dn[], MPI_Datatype t, MPI_Op o,
                                   MPI_Comm c, MPI_Request* r),
                                  (s, d, dn, t, o, c, r))
FERRET_MPI_NONBLOCKING_COLLECTIVE(MPI_Ireduce_scatter_block,
                                  (const void* s, void* d, int dn, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                                   MPI_Request* r),
                                  (s, d, dn, t, o, c, r))
#undef FERRET_MPI_NONBLOCKING_COLLECTIVE

// Communicators: created ones get an id all their members agree on.

FERRET_EXPORT int MPI_Comm_dup(MPI_Comm communicator, MPI_Comm* duplicate) {
  FERRET_MPI_CALL("MPI_Comm_dup");
  const int result = PMPI_Comm_dup(communicator, duplicate);
  if (result == MPI_SUCCESS) fm::created(*duplicate, "MPI_Comm_dup");
  return result;
}

FERRET_EXPORT int MPI_Comm_split(MPI_Comm communicator, int color, int key, MPI_Comm* part) {
  FERRET_MPI_CALL("MPI_Comm_split");
  const int result = PMPI_Comm_split(communicator, color, key, part);
  if (result == MPI_SUCCESS) fm::created(*part, "MPI_Comm_split");
  return result;
}

FERRET_EXPORT int MPI_Comm_create(MPI_Comm communicator, MPI_Group group, MPI_Comm* created) {
  FERRET_MPI_CALL("MPI_Comm_create");
  const int result = PMPI_Comm_create(communicator, group, created);
  if (result == MPI_SUCCESS) fm::created(*created, "MPI_Comm_create");
  return result;
}

FERRET_EXPORT int MPI_Comm_free(MPI_Comm* communicator) {
  FERRET_MPI_CALL("MPI_Comm_free");
  return PMPI_Comm_free(communicator);
}

}  // extern "C"
