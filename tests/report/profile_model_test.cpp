// Tests of the profile model (what the summary and the report show) and of
// the report's data document, driven with synthesised records and GPU
// activity; the data document is read back with nlohmann-json.
#include "profile_model.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <numeric>
#include <string>
#include <vector>

#include "number_format.hpp"
#include "readable_text.hpp"
#include "report_data.hpp"
#include "support/backend_test_support.hpp"

namespace {

namespace rt = ferret::runtime;
namespace pf = ferret::profile;
using ferret::testing::begin;
using ferret::testing::end;
using rt::copy_kind;
using rt::gpu_activity;
using rt::gpu_operation;

constexpr std::int64_t ms = 1'000'000;
constexpr std::uint64_t KiB = 1024;

const rt::thread_info thread_one{1, 1, {}, true};
const rt::thread_info thread_two{1, 2, {}, false};

rt::session_status final_status(const rt::metadata_list* metadata = nullptr) {
  return rt::session_status{metadata, nullptr, 0, 0, true};
}

// The node of `path` (names from the root, '/'-separated, API calls included).
std::uint32_t node_at(const pf::profile_model& model, const std::string& path) {
  std::uint32_t at = 0;
  std::size_t start = 0;
  while (start < path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string name = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    bool found = false;
    for (const std::uint32_t child : model.contexts()[at].children)
      if (model.contexts()[child].name == name) {
        at = child;
        found = true;
        break;
      }
    REQUIRE_MESSAGE(found, "no context " << path);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return at;
}

// The runtime's calling-context nodes for launches.
class launch_contexts {
 public:
  launch_contexts() { nodes_.push_back(rt::context_node{0, 0, nullptr, nullptr}); }
  const rt::context_node* root() const { return &nodes_.front(); }
  const rt::context_node* child(const rt::context_node* parent, const rt::name_info* name) {
    nodes_.push_back(rt::context_node{static_cast<std::uint32_t>(nodes_.size()), parent->depth + 1, parent, name});
    return &nodes_.back();
  }

 private:
  std::deque<rt::context_node> nodes_;
};

rt::gpu_launch launched(const rt::context_node* context) { return rt::gpu_launch{1, 1, 0, context}; }

gpu_activity kernel(std::int64_t start, std::int64_t end_ns, rt::gpu_launch launch,
                    std::uint32_t stream = 7) {
  gpu_activity a{};
  a.operation = gpu_operation::kernel;
  a.start_ns = start;
  a.end_ns = end_ns;
  a.stream = stream;
  a.name = "k";
  a.launch = launch;
  a.kernel.occupancy = 0.5;
  return a;
}

gpu_activity copy_of(std::uint64_t bytes, const rt::data_object_info* source, std::uintptr_t from,
                     const rt::data_object_info* destination, std::uintptr_t to,
                     rt::gpu_launch launch, copy_kind kind = copy_kind::host_to_device) {
  gpu_activity a{};
  a.operation = gpu_operation::memcpy;
  a.start_ns = 0;
  a.end_ns = 1000;
  a.copy = kind;
  a.bytes = bytes;
  a.source_device = kind == copy_kind::host_to_device ? -1 : 0;
  a.destination_device = kind == copy_kind::device_to_host ? -1 : 0;
  a.source_object = source;
  a.source_object_id = source != nullptr ? source->id : 0;
  a.destination_object = destination;
  a.destination_object_id = destination != nullptr ? destination->id : 0;
  a.source_address = from;
  a.destination_address = to;
  a.launch = launch;
  return a;
}

}  // namespace

TEST_CASE("the calling-context tree: regions of all threads merged by name, host time") {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  const auto* solve = names.add("solve", "", "/src/a.cpp", 10, "void solve()");
  const auto* step = names.add("step");
  const auto* step_again = names.add("step", "", "/src/b.cpp", 20);  // same text, another site
  const auto* launch = names.add("cudaLaunchKernel", "cuda");
  const std::vector<rt::record> one{begin(0, solve), begin(1 * ms, step), begin(2 * ms, launch),
                                    end(3 * ms, launch), end(4 * ms, step), end(10 * ms, solve)};
  const std::vector<rt::record> two{begin(0, solve), begin(5 * ms, step_again), end(6 * ms, step_again),
                                    begin(6 * ms, solve),  // recursion
                                    end(7 * ms, solve), end(8 * ms, solve)};
  model.add_records(thread_one, one.data(), one.size());
  model.add_records(thread_two, two.data(), two.size());
  model.finish(final_status(), 20 * ms);

  const auto& contexts = model.contexts();
  const pf::context& s = contexts[node_at(model, "solve")];
  CHECK(s.calls == 2);
  CHECK(s.inclusive_ns == 18 * ms);
  CHECK(s.exclusive_ns() == 18 * ms - 4 * ms - 1 * ms);  // step on both threads, inner solve
  CHECK(s.file == "/src/a.cpp");
  CHECK(s.line == 10);
  const pf::context& st = contexts[node_at(model, "solve/step")];
  CHECK(st.calls == 2);
  CHECK(st.inclusive_ns == 4 * ms);
  CHECK(st.file == "/src/b.cpp");  // the first site that had a location
  const pf::context& call = contexts[node_at(model, "solve/step/cudaLaunchKernel")];
  CHECK(call.api_call);
  CHECK(call.inclusive_ns == 1 * ms);
  CHECK(contexts[node_at(model, "solve/solve")].inclusive_ns == 1 * ms);
  CHECK(contexts.front().inclusive_ns == 18 * ms);  // the root: all threads' top regions

  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> regions;
  for (const auto& row : model.regions_by_name()) regions[row.name] = {row.calls, row.inclusive_ns};
  CHECK(regions["solve"] == std::make_pair(std::uint64_t{3}, 18 * ms));  // recursion counted once
  CHECK(regions["step"] == std::make_pair(std::uint64_t{2}, 4 * ms));
  CHECK(model.region_path(node_at(model, "solve/step/cudaLaunchKernel")) == "solve/step");
}

TEST_CASE("deep nesting costs memory and time linear in the depth") {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  const auto* a = names.add("a");
  const auto* b = names.add("b");
  constexpr std::int64_t depth = 100'000;
  std::vector<rt::record> records;
  for (std::int64_t i = 0; i < depth; ++i) records.push_back(begin(i, i % 2 == 0 ? a : b));
  for (std::int64_t i = depth; i-- > 0;) records.push_back(end(2 * depth - i, i % 2 == 0 ? a : b));
  model.add_records(thread_one, records.data(), records.size());
  model.finish(final_status(), 3 * depth);
  CHECK(model.contexts().size() == depth + 1);
  const auto regions = model.regions_by_name();
  REQUIRE(regions.size() == 2);
  CHECK(regions[0].calls == depth / 2);
  CHECK(regions[0].inclusive_ns == 2 * depth);  // the outermost a only
  CHECK(regions[1].inclusive_ns == 2 * depth - 2);
  const std::string data = ferret::report::report_data(model);
  const auto document = nlohmann::json::parse(data);
  CHECK(document["contexts"].size() == 10'000);  // the report keeps the heaviest
  CHECK(document["limits"]["contexts_total"] == depth + 1);
}

TEST_CASE("GPU work lands in the host tree's contexts; inclusive metrics and region paths") {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  const auto* solve = names.add("solve");
  const auto* launch = names.add("cudaLaunchKernel", "cuda");
  const auto* copy_call = names.add("cudaMemcpy", "cuda");
  const std::vector<rt::record> host{begin(0, solve), begin(1, launch), end(2, launch), end(10, solve)};
  model.add_records(thread_one, host.data(), host.size());
  launch_contexts tree;
  const auto* in_solve = tree.child(tree.root(), solve);
  const auto* at_launch = tree.child(in_solve, launch);
  const auto* at_copy = tree.child(in_solve, copy_call);
  const std::vector<gpu_activity> work{
      kernel(0, 3 * ms, launched(at_launch)), kernel(0, 2 * ms, launched(in_solve)),
      copy_of(KiB, nullptr, 0, nullptr, 0, launched(at_copy)),
      kernel(0, 1 * ms, rt::gpu_launch{5, 0, 0, nullptr})};  // launch not seen
  model.add_activities(work.data(), work.size());
  model.finish(final_status(), 20 * ms);

  const std::uint32_t launch_node = node_at(model, "solve/cudaLaunchKernel");
  CHECK(model.contexts()[launch_node].gpu.kernel_ns == 3 * ms);
  CHECK(model.contexts()[launch_node].calls == 1);  // the host's node, not a copy of it
  const auto inclusive = model.inclusive_gpu();
  CHECK(inclusive[node_at(model, "solve")].kernel_ns == 5 * ms);
  CHECK(inclusive[node_at(model, "solve")].copy_bytes == KiB);
  CHECK(inclusive[0].kernel_ns == 6 * ms);
  const auto paths = model.gpu_by_region_path();
  REQUIRE(paths.size() == 2);
  CHECK(paths[0].path == "solve");
  CHECK(paths[0].gpu.kernel_ns == 5 * ms);
  CHECK(paths[0].gpu.kernels == 2);
  CHECK(paths[0].nodes.size() == 3);
  CHECK(paths[1].path == "(launch not seen)");
}

TEST_CASE("data objects: flows, contexts, and the heat over their address range") {
  pf::profile_model model{ferret::testing::make_session(1)};
  launch_contexts tree;
  ferret::testing::name_table names;
  const auto* upload = tree.child(tree.root(), names.add("upload"));
  const rt::data_object_info host{1, "host", 0x10000, 64 * KiB, rt::memory_kind::host, -1};
  const rt::data_object_info device{2, "cudaMalloc@upload", 0x900000, 64 * KiB,
                                    rt::memory_kind::device, 0, upload};
  const rt::data_object_event registered{5, rt::data_object_change::registered, 1, &device};
  model.add_data_object(registered);
  gpu_activity clear{};
  clear.operation = gpu_operation::memset;
  clear.bytes = 8 * KiB;
  clear.destination_object = &device;
  clear.destination_object_id = 2;
  clear.destination_address = device.address + 60 * KiB;  // 4 KiB past the end
  clear.launch = launched(upload);
  const std::vector<gpu_activity> work{
      // The first quarter of the host array into the second quarter of the device's.
      copy_of(16 * KiB, &host, host.address, &device, device.address + 16 * KiB, launched(upload)),
      copy_of(KiB, &host, 0, &device, 0, launched(upload)),  // addresses unknown
      clear,
      copy_of(2 * KiB, &device, device.address, &device, device.address + KiB, launched(upload),
              copy_kind::device_to_device)};
  model.add_activities(work.data(), work.size());
  model.finish(final_status(), ms);

  const pf::data_object_totals& d = model.objects().at(2);
  CHECK(d.automatic);
  CHECK(d.registered_ns == 5);
  CHECK(!d.unregistered_ns);
  CHECK(d.copied[pf::index_of(copy_kind::host_to_device)] == 17 * KiB);
  CHECK(d.copied[pf::index_of(copy_kind::device_to_device)] == 2 * KiB);  // once, within
  CHECK(d.memsets.bytes == 8 * KiB);
  CHECK(d.operations == 4);
  CHECK(d.bytes_not_placed == KiB + 4 * KiB);
  REQUIRE(d.heat.size() == pf::heat_bins);  // 1 KiB per bin
  std::vector<std::uint64_t> expected(pf::heat_bins, 0);
  for (std::size_t bin = 16; bin < 32; ++bin) expected[bin] += KiB;
  for (std::size_t bin = 60; bin < 64; ++bin) expected[bin] += KiB;
  for (std::size_t bin = 0; bin < 3; ++bin) expected[bin] += KiB;  // within: source and destination
  expected[1] += KiB;
  CHECK(d.heat == expected);
  const std::uint32_t node = node_at(model, "upload");
  CHECK(d.contexts.at(node).bytes == 27 * KiB);
  CHECK(model.context_objects().at({node, 1}).bytes == 17 * KiB);
  CHECK(model.context_traffic().at({node, -1, 0}).operations == 2);
  const pf::data_object_totals& h = model.objects().at(1);
  REQUIRE(h.heat.size() == pf::heat_bins);
  CHECK(std::accumulate(h.heat.begin(), h.heat.end(), std::uint64_t{0}) == 16 * KiB);
  CHECK(h.flows.size() == 1);
  CHECK(h.flows.begin()->first.direction == pf::flow_direction::out);
}

TEST_CASE("time series: the bucket width doubles as the run grows, nothing is lost") {
  pf::profile_model model{ferret::testing::make_session(1)};
  std::vector<gpu_activity> work{kernel(0, ms / 2, rt::gpu_launch{1, 0, 0, nullptr}),
                                 kernel(3 * ms / 2, 5 * ms / 2, rt::gpu_launch{2, 0, 0, nullptr})};
  model.add_activities(work.data(), work.size());
  CHECK(model.bucket_ns() == pf::first_bucket_ns);
  const auto& early = model.devices().at(0).streams.at(7).busy;
  CHECK(early[0] == ms / 2);
  CHECK(early[1] == ms / 2);
  CHECK(early[2] == ms / 2);
  gpu_activity allocation{};
  allocation.operation = gpu_operation::allocation;
  allocation.start_ns = allocation.end_ns = 300 * ms;
  allocation.bytes = 5 * KiB;
  allocation.address = 0x1000;
  allocation.launch = rt::gpu_launch{3, 0, 0, nullptr};
  work = {kernel(299 * ms, 300 * ms, rt::gpu_launch{4, 0, 0, nullptr}), allocation};
  model.add_activities(work.data(), work.size());
  model.finish(final_status(), 301 * ms);
  CHECK(model.bucket_ns() == 2 * pf::first_bucket_ns);
  const auto& stream = model.devices().at(0).streams.at(7);
  CHECK(stream.busy[0] == ms);
  CHECK(stream.busy[1] == ms / 2);
  CHECK(stream.busy[149] == ms);
  CHECK(std::accumulate(stream.busy.begin(), stream.busy.end(), std::int64_t{0}) == stream.busy_ns);
  const auto& memory = model.devices().at(0).memory;
  CHECK(memory.peak[150] == 5 * KiB);
  CHECK(memory.last[150] == 5 * KiB);
  CHECK(!memory.last[149]);
}

TEST_CASE("numbers are rounded exactly, ties to even, as the page's script rounds them") {
  CHECK(pf::bytes_text(1023) == "1023 B");
  CHECK(pf::bytes_text(1280) == "1.2 KiB");  // 1.25
  CHECK(pf::bytes_text(1331) == "1.3 KiB");
  CHECK(pf::bytes_text(1024 * 1024 - 1) == "1024.0 KiB");
  CHECK(pf::bytes_text(3ULL << 30) == "3.0 GiB");
  CHECK(pf::milliseconds_text(62'500) == "0.062");  // 0.0625
  CHECK(pf::milliseconds_text(1500) == "0.002");
  CHECK(pf::milliseconds_text(-2'000'000) == "-2.000");
  CHECK(pf::seconds_text(2'345'600'000) == "2.346");
  CHECK(pf::mean_microseconds_text(6'000'000, 3) == "2000.000");
  CHECK(pf::rate_text(8ULL << 20, 1'280'000) == "6.55");
  CHECK(pf::rate_text(1, 0) == "-");
  CHECK(pf::percent_text(562'500, 1) == "56.2%");  // 56.25
  CHECK(pf::percent_text(0, 0) == "-");
}

TEST_CASE("readable text: valid UTF-8 stays, what acts on a display is written out") {
  CHECK(pf::readable_text("größe µs → ok") == "größe µs → ok");
  CHECK(pf::readable_text("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(pf::readable_text("\xe2\x80\xae") == "\\u202e");
  CHECK(pf::readable_text("\xc0\xaf") == "\\xc0\\xaf");  // overlong
  CHECK(pf::readable_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(pf::cut_middle("solve/step/inner/kernel", 11) == "solve…ernel");
  CHECK(pf::cut_end("äöüäöü", 4) == "äöü…");
}

TEST_CASE("the report's data: one JSON document that cannot end its script element") {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  const auto* hostile = names.add("</script><b>&amp;\xff");
  const auto* other = names.add("x\xe2\x80\xa8y");  // U+2028
  const std::vector<rt::record> host{begin(0, hostile), begin(1, other), end(2, other), end(3, hostile)};
  model.add_records(thread_one, host.data(), host.size());
  const rt::metadata_list metadata{{"cuda-api-unrecorded:cudaGetDevice", std::int64_t{7}},
                                   {"cupti-records-dropped", std::int64_t{2}}};
  model.finish(final_status(&metadata), 10);
  const std::string data = ferret::report::report_data(model);
  CHECK(data.find('<') == std::string::npos);
  CHECK(data.find('>') == std::string::npos);
  CHECK(data.find('&') == std::string::npos);
  CHECK(data.find("\xe2\x80\xa8") == std::string::npos);
  const auto document = nlohmann::json::parse(data);
  CHECK(document["format"] == "ferret-report");
  CHECK(document["version"] == 1);
  CHECK(document["contexts"][1]["name"] == "</script><b>&amp;\\xff");
  CHECK(document["contexts"][2]["name"] == "x\xe2\x80\xa8y");
  CHECK(document["contexts"][2]["parent"] == 1);
  CHECK(document["unrecorded_api"][0]["call"] == "cudaGetDevice");
  CHECK(document["unrecorded_api"][0]["calls"] == 7);
  CHECK(document["losses"][0] == "2 cupti-records-dropped");
  CHECK(document["gpu_metrics"].size() == document["contexts"][0]["gpu"].size());
}

TEST_CASE("the report's data is bounded: the heaviest contexts with their callers, the busiest objects") {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  std::vector<rt::record> host;
  const auto* outer = names.add("outer");
  host.push_back(begin(0, outer));
  for (int i = 0; i < 20; ++i) {
    const auto* name = names.add("leaf " + std::to_string(i));
    host.push_back(begin(i * 100, name));
    host.push_back(end(i * 100 + i, name));  // leaf i takes i ns
  }
  host.push_back(end(5000, outer));
  model.add_records(thread_one, host.data(), host.size());
  std::deque<rt::data_object_info> objects;
  std::vector<gpu_activity> copies;
  for (std::uint64_t id = 1; id <= 5; ++id) {
    objects.push_back(rt::data_object_info{id, "object " + std::to_string(id), 0x1000 * id, 100,
                                           rt::memory_kind::host, -1});
    copies.push_back(copy_of(id, &objects.back(), 0, nullptr, 0, rt::gpu_launch{id, 0, 0, nullptr}));
    copies.back().end_ns = 0;  // no GPU time: the host's regions decide the heaviest contexts
  }
  model.add_activities(copies.data(), copies.size());
  model.finish(final_status(), 6000);
  ferret::report::limits bounds;
  bounds.contexts = 5;
  bounds.objects = 2;
  const auto document = nlohmann::json::parse(ferret::report::report_data(model, bounds));
  std::vector<std::string> shown;
  for (const auto& context : document["contexts"]) shown.push_back(context["name"]);
  // The root, outer (the heaviest), and leaves 19, 18, 17.
  CHECK(shown == std::vector<std::string>{"", "outer", "leaf 17", "leaf 18", "leaf 19"});
  CHECK(document["contexts"][2]["parent"] == 1);
  CHECK(document["limits"]["contexts_total"] == 23);  // with "(launch not seen)"
  REQUIRE(document["objects"].size() == 2);
  CHECK(document["objects"][0]["name"] == "object 5");
  CHECK(document["objects"][1]["name"] == "object 4");
}

TEST_CASE("data objects: memory follows the live ones, not how many were released; the report is the same") {
  pf::profile_model model{ferret::testing::make_session(1)};
  constexpr std::uint64_t live = 3;
  constexpr std::uint64_t released = 3 * pf::released_objects_kept;
  const auto moved_by = [](std::uint64_t id) { return (id * 7919) % 1000; };  // 0 for some
  std::vector<rt::data_object_info> all;
  for (std::uint64_t id = 1; id <= live + released; ++id)
    all.push_back(rt::data_object_info{id, "object " + std::to_string(id), 0x1000 * id, 100 + id % 7,
                                       rt::memory_kind::host, -1});
  std::size_t most_kept = 0;
  for (const rt::data_object_info& object : all) {
    const auto at = static_cast<std::int64_t>(object.id);
    model.add_data_object({at, rt::data_object_change::registered, 1, &object});
    if (moved_by(object.id) != 0) {
      const gpu_activity copy = copy_of(moved_by(object.id), &object, object.address, nullptr, 0,
                                        rt::gpu_launch{object.id, 0, 0, nullptr});
      model.add_activities(&copy, 1);
    }
    if (object.id > live) model.add_data_object({at, rt::data_object_change::unregistered, 1, &object});
    most_kept = std::max(most_kept, model.objects().size());
  }
  model.finish(final_status(), static_cast<std::int64_t>(live + released));

  CHECK(most_kept <= live + 2 * pf::released_objects_kept);
  CHECK(model.objects().size() + model.objects_not_kept() == live + released);
  for (std::uint64_t id = 1; id <= live; ++id) CHECK(model.objects().count(id) == 1);

  // What a model keeping every object would show: the same objects, in the same order.
  std::vector<pf::data_object_totals> every;
  for (const rt::data_object_info& object : all) {
    pf::data_object_totals totals;
    totals.id = object.id;
    totals.bytes = object.bytes;
    totals.copied[pf::index_of(copy_kind::host_to_device)] = moved_by(object.id);
    every.push_back(totals);
  }
  std::sort(every.begin(), every.end(), pf::shown_before);
  const auto document = nlohmann::json::parse(ferret::report::report_data(model));
  std::vector<std::uint64_t> shown, expected;
  for (const auto& object : document["objects"]) shown.push_back(object["id"]);
  for (std::size_t i = 0; i < pf::released_objects_kept; ++i) expected.push_back(every[i].id);
  CHECK(shown == expected);
  CHECK(document["limits"]["objects_total"] == live + released);
}

namespace {

const rt::gpu_stall_reason long_scoreboard{0, "long_scoreboard", rt::gpu_stall::gmem};
const rt::gpu_stall_reason selected{1, "selected", rt::gpu_stall::none};
// The same reason from a second record (another collector's table).
const rt::gpu_stall_reason long_scoreboard_again{7, "long_scoreboard", rt::gpu_stall::gmem};

rt::gpu_instruction_sample sample_at(const rt::context_node* context, const char* function,
                                     std::uint64_t pc, const char* file, std::uint32_t line,
                                     const rt::gpu_stall_reason& reason, double samples) {
  return rt::gpu_instruction_sample{context, 0, function, pc, file, line, &reason, samples};
}

// solve/cudaLaunchKernel launched "k" (lines 7 and 9 of k.cu) twice a drain;
// the root holds samples whose launch was not found, in a kernel without
// line information.
struct sampled_model {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  launch_contexts tree;
  const rt::context_node* solve = tree.child(tree.root(), names.add("solve"));
  const rt::context_node* launch_call = tree.child(solve, names.add("cudaLaunchKernel", "cuda"));

  sampled_model() {
    const std::vector<rt::gpu_instruction_sample> first{
        sample_at(launch_call, "k", 0x10, "k.cu", 7, long_scoreboard, 2.5),
        sample_at(launch_call, "k", 0x18, "k.cu", 7, selected, 1),
        sample_at(launch_call, "k", 0x30, "k.cu", 9, selected, 4),
        sample_at(tree.root(), "lib", 0x40, nullptr, 0, long_scoreboard, 3)};
    const std::vector<rt::gpu_instruction_sample> second{
        sample_at(launch_call, "k", 0x10, "k.cu", 7, long_scoreboard_again, 0.25),
        sample_at(tree.root(), "lib", 0x40, nullptr, 0, long_scoreboard, 1),
        sample_at(tree.root(), "lib", 0x48, nullptr, 0, long_scoreboard, 1)};
    model.add_instruction_samples(first.data(), first.size());
    model.add_instruction_samples(second.data(), second.size());
  }
};

}  // namespace

TEST_CASE("instruction samples: per context, kernel and line; drains add up; the root is the launch not seen") {
  sampled_model run;
  run.model.finish(final_status(), 10);
  const pf::profile_model& model = run.model;
  CHECK(model.instruction_samples() == doctest::Approx(12.75));
  // One reason per name, whichever record named it.
  REQUIRE(model.stall_reasons().size() == 2);
  CHECK(model.stall_reasons()[0].name == "long_scoreboard");
  CHECK(model.stall_reasons()[1].name == "selected");
  const std::uint32_t launch_node = node_at(model, "solve/cudaLaunchKernel");
  const std::uint32_t not_seen = node_at(model, "(launch not seen)");
  CHECK(model.contexts()[not_seen].synthetic);
  // Two instructions of line 7 are one line; the library's two instructions stay apart.
  REQUIRE(model.gpu_lines().size() == 4);
  const pf::gpu_line& line_7 = model.gpu_lines()[0];
  CHECK(line_7.context == launch_node);
  CHECK(line_7.file == "k.cu");
  CHECK(line_7.line == 7);
  CHECK(line_7.samples.samples == doctest::Approx(3.75));
  CHECK(line_7.samples.of(rt::gpu_stall::gmem) == doctest::Approx(2.75));
  CHECK(line_7.samples.stalled() == doctest::Approx(2.75));
  REQUIRE(line_7.samples.by_reason.size() == 2);
  CHECK(line_7.samples.by_reason[0].second == doctest::Approx(2.75));
  const pf::gpu_line& library = model.gpu_lines()[2];
  CHECK(library.context == not_seen);
  CHECK(!library.has_line());
  CHECK(library.pc_offset == 0x40);
  CHECK(library.samples.samples == doctest::Approx(4));

  const std::vector<pf::gpu_line> merged = model.gpu_lines_over_contexts();
  REQUIRE(merged.size() == 4);
  CHECK(merged[0].function == "lib");  // 4 samples, ahead of line 9's 4 by name order ("" < "k.cu")
  CHECK(merged[1].line == 9);
  CHECK(merged[2].line == 7);
  CHECK(merged[3].pc_offset == 0x48);
  const auto rows = model.gpu_stalls_by_region_path();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].path == "solve");
  CHECK(rows[0].samples.samples == doctest::Approx(7.75));
  CHECK(rows[1].path == "(launch not seen)");
}

TEST_CASE("the report's data: instruction samples per context, kernel and line, and the summary's tables") {
  SUBCASE("none without sampling") {
    pf::profile_model model{ferret::testing::make_session(1)};
    model.finish(final_status(), 10);
    CHECK(nlohmann::json::parse(ferret::report::report_data(model))["gpu_samples"].is_null());
  }
  SUBCASE("with samples") {
    sampled_model run;
    gpu_activity launch = kernel(0, 1000, launched(run.launch_call));
    rt::gpu_kernel_samples launch_samples{};
    launch_samples.samples = 7.75;
    launch_samples.by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] = 5;
    launch_samples.expected = 31;
    launch.samples = &launch_samples;
    run.model.add_activities(&launch, 1);
    run.model.finish(final_status(), 10);
    ferret::report::limits bounds;
    bounds.contexts = 2;  // the root and solve: the launch's samples go to solve
    const auto document = nlohmann::json::parse(ferret::report::report_data(run.model, bounds));
    const auto& samples = document["gpu_samples"];
    REQUIRE(samples.is_object());
    CHECK(samples["classes"].size() == rt::gpu_stall_classes);
    CHECK(samples["classes"][3]["column"] == "STL_GMEM");
    CHECK(samples["reasons"][0]["name"] == "long_scoreboard");
    CHECK(samples["reasons"][0]["class"] == 3);
    REQUIRE(document["contexts"].size() == 2);
    CHECK(document["contexts"][1]["name"] == "solve");
    // Kernels per shown context: k under solve; lib under the root ("(launch not seen)" is not shown).
    REQUIRE(samples["kernels"].size() == 2);
    const auto& k = samples["kernels"][1];
    CHECK(k["context"] == 1);
    CHECK(k["kernel"] == "k");
    CHECK(k["shown"] == "7.8");
    CHECK(k["stalled_shown"] == "35.5%");
    CHECK(k["reasons_shown"] == "selected 65%, long_scoreboard 35%");
    CHECK(samples["kernels"][0]["context"] == 0);
    REQUIRE(samples["lines"].size() == 4);
    std::vector<std::string> locations;
    for (const auto& line : samples["lines"]) locations.push_back(line["location"]);
    std::sort(locations.begin(), locations.end());
    CHECK(locations == std::vector<std::string>{"+0x40", "+0x48", "k.cu:7", "k.cu:9"});
    // The summary's tables, cell for cell.
    CHECK(samples["by_line"]["header"] ==
          nlohmann::json::array({"samples", "share", "stall reasons", "line", "kernel"}));
    CHECK(samples["by_line"]["rows"][0] ==
          nlohmann::json::array({"4", "31.4%", "long_scoreboard 100%", "+0x40", "lib"}));
    CHECK(samples["by_context"]["rows"][0][0] == "7.8");
    CHECK(samples["sampling"][0] == "12.8 samples attributed (GINST), 0 dropped (GSAMP:DRP)");
    // The kernel's launches: GINST, STL_ANY and GSAMP:UTIL as the page shows them.
    const auto& kernel_row = document["kernels"][0];
    CHECK(kernel_row["samples_shown"] == "7.8");
    CHECK(kernel_row["stalled_shown"] == "35.5%");
    CHECK(kernel_row["utilization_shown"] == "25.0%");
  }
}

namespace {

// Device-initiated traffic: kernel k on GPU 0 (launched in solve) loads object
// 7 on GPU 1 at two instructions of line 3, stores and atomically updates it
// at line 4, and reads host memory in no known object; object 9 was never
// registered (known by id only). A second drain adds to line 3 and repeats
// an instruction of line 4 from another pointer to the same file name.
struct remote_model {
  pf::profile_model model{ferret::testing::make_session(1)};
  ferret::testing::name_table names;
  launch_contexts tree;
  const rt::context_node* solve = tree.child(tree.root(), names.add("solve"));
  const rt::context_node* launch_call = tree.child(solve, names.add("cudaLaunchKernel", "cuda"));
  const rt::data_object_info halo{7, "halo", 0x1000, 4096, rt::memory_kind::device, 1};

  static rt::gpu_remote_access at(const rt::context_node* context, std::int32_t target,
                                  rt::memory_access access, std::uint64_t pc, const char* file,
                                  std::uint32_t line, std::uint64_t object_id,
                                  const rt::data_object_info* object, std::uint64_t bytes) {
    return {context, 0, target, access, "k", pc, file, line, object_id, object, bytes / 4, bytes};
  }

  remote_model() {
    using rt::memory_access;
    const std::vector<rt::gpu_remote_access> first{
        at(launch_call, 1, memory_access::load, 0x10, "k.cu", 3, 7, &halo, 1024),
        at(launch_call, 1, memory_access::load, 0x18, "k.cu", 3, 7, &halo, 512),
        at(launch_call, 1, memory_access::store, 0x20, "k.cu", 4, 7, &halo, 256),
        at(launch_call, 1, memory_access::atomic, 0x28, "k.cu", 4, 7, &halo, 16),
        at(launch_call, rt::host_memory_device, memory_access::load, 0x30, nullptr, 0, 0, nullptr, 8),
        at(tree.root(), 1, memory_access::store, 0x40, nullptr, 0, 9, nullptr, 64),
        at(launch_call, 1, memory_access::load, 0x50, "k.cu", 5, 0, nullptr, 0)};  // nothing: no row
    static const std::string same_file = "k.cu";
    const std::vector<rt::gpu_remote_access> second{
        at(launch_call, 1, memory_access::load, 0x10, "k.cu", 3, 7, &halo, 2048),
        at(launch_call, 1, memory_access::store, 0x20, same_file.c_str(), 4, 7, &halo, 256)};
    model.add_remote_accesses(first.data(), first.size());
    model.add_remote_accesses(second.data(), second.size());
  }
};

}  // namespace

TEST_CASE("device-initiated traffic: per context, kernel, line, object and device pair; drains add up") {
  remote_model run;
  run.model.finish(final_status(), 10);
  const pf::profile_model& model = run.model;
  const std::uint32_t launch_node = node_at(model, "solve/cudaLaunchKernel");
  const std::uint32_t not_seen = node_at(model, "(launch not seen)");
  // Line 3's two instructions are one row, line 4's store and atomic another.
  REQUIRE(model.remote_lines().size() == 4);
  const pf::remote_line& line_3 = model.remote_lines()[0];
  CHECK(line_3.context == launch_node);
  CHECK(line_3.line == 3);
  CHECK(line_3.object == "halo");
  CHECK(line_3.device == 0);
  CHECK(line_3.target == 1);
  CHECK(line_3.volume.loaded() == 1024 + 512 + 2048);
  CHECK(line_3.volume.total_accesses() == (1024 + 512 + 2048) / 4);
  const pf::remote_line& line_4 = model.remote_lines()[1];
  CHECK(line_4.volume.stored() == 256 + 16 + 256);
  CHECK(line_4.volume.bytes[static_cast<std::size_t>(rt::memory_access::atomic)] == 16);
  const pf::remote_line& host = model.remote_lines()[2];
  CHECK(host.target == pf::host_end);
  CHECK(!host.has_line());
  CHECK(host.pc_offset == 0x30);
  CHECK(host.object.empty());
  const pf::remote_line& unknown = model.remote_lines()[3];
  CHECK(unknown.context == not_seen);
  CHECK(unknown.object == "data object 9");
  // The matrix: loads from the memory's device, stores and atomics to it.
  const auto& cells = model.traffic()[pf::device_initiated_matrix].cells;
  CHECK(cells.size() == 3);
  CHECK(cells.at({1, 0}).bytes == 1024 + 512 + 2048);
  CHECK(cells.at({0, 1}).bytes == 256 + 16 + 256 + 64);
  CHECK(cells.at({pf::host_end, 0}).bytes == 8);
  CHECK(model.traffic()[pf::copies_matrix].cells.empty());
  CHECK(model.ends() == std::vector<std::int32_t>{pf::host_end, 0, 1});
  // The objects, by (kernel's device, memory's device).
  const auto& halo = model.objects().at(7).device_initiated.at({0, 1});
  CHECK(halo.loaded() == 1024 + 512 + 2048);
  CHECK(halo.stored() == 256 + 16 + 256);
  CHECK(model.objects().at(9).device_initiated.at({0, 1}).stored() == 64);
  CHECK(model.remote_total().total_bytes() == 1024 + 512 + 2048 + 256 + 16 + 256 + 8 + 64);
  const auto rows = model.remote_by_region_path();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].path == "solve");
  CHECK(rows[0].volume.total_bytes() == 1024 + 512 + 2048 + 256 + 16 + 256 + 8);
  CHECK(rows[1].path == "(launch not seen)");
}

TEST_CASE("the report's data: device-initiated traffic per context, kernel and line; objects by device pair") {
  SUBCASE("none without") {
    pf::profile_model model{ferret::testing::make_session(1)};
    model.finish(final_status(), 10);
    const auto document = nlohmann::json::parse(ferret::report::report_data(model));
    CHECK(document["device_initiated"].is_null());
    CHECK(document["traffic"][1]["name"] == "device-initiated");
    CHECK(document["traffic"][1]["cells"].empty());
  }
  SUBCASE("with traffic") {
    remote_model run;
    run.model.finish(final_status(), 10);
    ferret::report::limits bounds;
    bounds.contexts = 2;  // the root and solve: the launch's traffic goes to solve
    bounds.remote_rows = 2;
    const auto document = nlohmann::json::parse(ferret::report::report_data(run.model, bounds));
    const auto& remote = document["device_initiated"];
    REQUIRE(remote.is_object());
    REQUIRE(remote["kernels"].size() == 2);  // k under the root (launch not seen) and under solve
    const auto& k = remote["kernels"][1];
    CHECK(k["context"] == 1);
    CHECK(k["loaded"] == 1024 + 512 + 2048 + 8);
    CHECK(k["stored"] == 256 + 16 + 256);
    REQUIRE(remote["lines"].size() == 4);
    CHECK(remote["by_line"]["rows"].size() == 2);
    CHECK(remote["by_line"]["total"] == 4);
    CHECK(remote["by_line"]["rows"][0] ==
          nlohmann::json::array({"3.5 KiB", "-", "896", "GPU 0 ← GPU 1", "k.cu:3", "halo", "k"}));
    CHECK(remote["by_line"]["rest"] == "8 B loaded, 64 B stored, 18 accesses");
    CHECK(remote["by_context"]["rest"] == "");
    const auto halo = std::find_if(document["objects"].begin(), document["objects"].end(),
                                   [](const auto& object) { return object["id"] == 7; });
    REQUIRE(halo != document["objects"].end());
    CHECK((*halo)["device_initiated"] ==
          nlohmann::json::parse(R"([{"devices":"GPU 0 ↔ GPU 1","device":0,"target":1,
                                     "loaded":3584,"stored":528,"accesses":1028}])"));
    CHECK(document["traffic"][1]["cells"].size() == 3);
  }
}

TEST_CASE("device-initiated traffic: rows grow with the code, not with the objects a run allocates") {
  // A halo allocated anew in every one of 1000 steps (an automatic object: one
  // name, a new id each time), each step's kernel loading it from GPU 1.
  pf::profile_model model{ferret::testing::make_session(1)};
  static const rt::context_node allocating{0, 0, nullptr, nullptr};
  for (std::uint64_t step = 0; step < 1000; ++step) {
    rt::data_object_info halo{100 + step, "cudaMalloc@solve/step", 0x1000, 4096, rt::memory_kind::device, 1};
    halo.allocated_in = &allocating;
    const rt::gpu_remote_access load{nullptr, 0, 1, rt::memory_access::load, "k", 0x10, "k.cu", 3,
                                     halo.id, &halo, 1, 4};
    model.add_remote_accesses(&load, 1);
  }
  model.finish(final_status(), 10);
  REQUIRE(model.remote_lines().size() == 1);
  CHECK(model.remote_lines()[0].object == "cudaMalloc@solve/step");
  CHECK(model.remote_lines()[0].object_id == 100);
  CHECK(model.remote_lines()[0].volume.loaded() == 4000);
}
