// Instruction samples without a GPU: CUPTI's stall reason names and their
// classes, the setting, which cubins are kept for their lines, and how the
// samples of a collection are shared among the launches of their function
// (continuous sampling does not say which launch a sample came from).
#include <doctest/doctest.h>
#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include "cubin_sections.hpp"
#include "sample_attribution.hpp"
#include "sampling_setting.hpp"
#include "stall_reasons.hpp"

namespace rt = ferret::runtime;
using ferret::cupti::classify_stall_reason;
using ferret::cupti::collect_stall_reason;
using ferret::cupti::sample_attribution;
using ferret::cupti::stall_reason_name;

TEST_CASE("stall reasons: CUPTI's metric names, their duplicates and their classes") {
  CHECK(stall_reason_name("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == "long_scoreboard");
  CHECK(stall_reason_name("long_scoreboard") == "long_scoreboard");
  CHECK(collect_stall_reason("smsp__pcsamp_warps_issue_stalled_long_scoreboard"));
  CHECK_FALSE(collect_stall_reason("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"));
  CHECK(classify_stall_reason("selected") == rt::gpu_stall::none);
  CHECK(classify_stall_reason("long_scoreboard") == rt::gpu_stall::gmem);
  CHECK(classify_stall_reason("barrier") == rt::gpu_stall::sync);
  CHECK(classify_stall_reason("wait") == rt::gpu_stall::idep);
  CHECK(classify_stall_reason("not_selected") == rt::gpu_stall::nsel);
  CHECK(classify_stall_reason("math_pipe_throttle") == rt::gpu_stall::pipe);
  CHECK(classify_stall_reason("lg_throttle") == rt::gpu_stall::mthr);
  CHECK(classify_stall_reason("no_instructions") == rt::gpu_stall::ifet);
  CHECK(classify_stall_reason("imc_miss") == rt::gpu_stall::cmem);
  CHECK(classify_stall_reason("sleeping") == rt::gpu_stall::slp);
  CHECK(classify_stall_reason("a_reason_of_a_future_gpu") == rt::gpu_stall::othr);
  CHECK(rt::metric_name(rt::gpu_stall::gmem) == "GINST:STL_GMEM");
  CHECK(rt::metric_name(rt::gpu_stall::none) == "GINST:STL_NONE");
}

TEST_CASE("setting: off, CUPTI's period (1, or on, yes, true), 2^N cycles, or the cycles; anything else refused") {
  using ferret::cupti::parse_pc_sampling;
  CHECK_FALSE(parse_pc_sampling(nullptr)->on);
  CHECK_FALSE(parse_pc_sampling("")->on);
  CHECK_FALSE(parse_pc_sampling("0")->on);
  CHECK(parse_pc_sampling("1")->on);
  CHECK(parse_pc_sampling("1")->period_exponent == 0);
  CHECK(parse_pc_sampling("5")->period_exponent == 5);
  CHECK(parse_pc_sampling("31")->period_exponent == 31);
  CHECK(parse_pc_sampling("4096")->period_exponent == 12);  // cycles, as ncu's users give them
  CHECK(parse_pc_sampling("32")->period_exponent == 5);
  CHECK(parse_pc_sampling("2147483648")->period_exponent == 31);
  for (const char* on : {"on", "Yes", "true", " 1"}) CHECK_MESSAGE(parse_pc_sampling(on)->on, on);
  for (const char* off : {"off", "no", "FALSE"}) CHECK_MESSAGE(!parse_pc_sampling(off)->on, off);
  for (const char* refused : {"y", "enabled", "2", "4", "33", "4095", "4294967296", "-1", "1e3",
                              "12345678901234567890"})
    CHECK_MESSAGE(!parse_pc_sampling(refused), refused);
}

namespace {

// A minimal ELF64 file with the given section names (what cubins are).
std::vector<unsigned char> elf_with_sections(const std::vector<std::string>& names) {
  std::string table(1, '\0');
  std::vector<std::uint32_t> offsets;
  for (const std::string& name : names) {
    offsets.push_back(static_cast<std::uint32_t>(table.size()));
    table += name;
    table += '\0';
  }
  offsets.push_back(static_cast<std::uint32_t>(table.size()));
  table += ".shstrtab";
  table += '\0';
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = static_cast<Elf64_Half>(names.size() + 2);  // null section first
  header.e_shstrndx = static_cast<Elf64_Half>(names.size() + 1);
  header.e_shoff = sizeof header + table.size();
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (std::size_t i = 0; i < offsets.size(); ++i) sections[i + 1].sh_name = offsets[i];
  sections.back().sh_offset = sizeof header;
  sections.back().sh_size = table.size();
  const std::size_t headers_bytes = sections.size() * sizeof(Elf64_Shdr);
  std::vector<unsigned char> image(sizeof header + table.size() + headers_bytes);
  std::memcpy(image.data(), &header, sizeof header);
  std::memcpy(image.data() + sizeof header, table.data(), table.size());
  std::memcpy(image.data() + header.e_shoff, sections.data(), headers_bytes);
  return image;
}

}  // namespace

TEST_CASE("cubins: kept only with line information, malformed ones refused") {
  const auto with_lines = elf_with_sections({".text.kernel", ".nv_debug_line_sass", ".debug_line"});
  const auto without = elf_with_sections({".text.kernel", ".nv.info"});
  CHECK(ferret::cupti::cubin_has_line_info(with_lines.data(), with_lines.size()));
  CHECK_FALSE(ferret::cupti::cubin_has_line_info(without.data(), without.size()));
  // Cut short: the section headers fall outside the image.
  CHECK_FALSE(ferret::cupti::cubin_has_line_info(with_lines.data(), with_lines.size() - 8));
  CHECK_FALSE(ferret::cupti::cubin_has_line_info(with_lines.data(), 16));
  const std::string text = "not an ELF file at all, but long enough to hold a header........";
  CHECK_FALSE(ferret::cupti::cubin_has_line_info(text.data(), text.size()));
  CHECK_FALSE(ferret::cupti::cubin_has_line_info(nullptr, 0));
}

TEST_CASE("cubins: every function's name, kernels and device functions, from its code section") {
  const auto image = elf_with_sections({".text._Z6kernelPf", ".nv.info", ".text._Z4loadPKf", ".text.", ".debug_line"});
  CHECK(ferret::cupti::cubin_function_names(image.data(), image.size()) ==
        std::vector<std::string>{"_Z6kernelPf", "_Z4loadPKf"});
  CHECK(ferret::cupti::cubin_function_names(image.data(), 16).empty());  // no section headers
  CHECK(ferret::cupti::cubin_function_names(nullptr, 0).empty());
}

namespace {

rt::gpu_activity kernel(const char* name, std::uint64_t correlation, std::int64_t start, std::int64_t end,
                        std::uint32_t device = 0) {
  rt::gpu_activity activity{};
  activity.operation = rt::gpu_operation::kernel;
  activity.name = name;
  activity.launch.correlation = correlation;
  activity.start_ns = start;
  activity.end_ns = end;
  activity.device = device;
  return activity;
}

const rt::gpu_stall_reason long_scoreboard{0, "long_scoreboard", rt::gpu_stall::gmem};
const rt::gpu_stall_reason selected{1, "selected", rt::gpu_stall::none};
const rt::gpu_stall_reason barrier{2, "barrier", rt::gpu_stall::sync};

constexpr std::int64_t ms = 1'000'000;

}  // namespace

TEST_CASE("attribution: two functions at once, each one's samples to its own launch") {
  sample_attribution samples{50 * ms};
  samples.set_device(0, {100, 2.0, 1024});
  // Two concurrent kernels (two streams), sampled in one collection.
  static const char* const one = "spin_one";
  static const char* const two = "spin_two";
  samples.add(0, one, 0x40, "/src/k.cu", 10, &long_scoreboard, 300);
  samples.add(0, one, 0x50, "/src/k.cu", 11, &selected, 100);
  samples.add(0, two, 0x80, "/src/k.cu", 20, &barrier, 500);
  samples.collected(300 * ms);
  std::vector<rt::gpu_activity> activities{kernel("spin_one", 7, 100 * ms, 290 * ms),
                                           kernel("spin_two", 8, 110 * ms, 295 * ms)};
  rt::gpu_activity copy{};
  copy.operation = rt::gpu_operation::memcpy;
  activities.push_back(copy);
  samples.hold_kernels(activities);
  REQUIRE(activities.size() == 1);  // the copy passes, the kernels wait
  CHECK(samples.held_kernels() == 2);

  std::vector<rt::gpu_sample_batch> batches;
  // Too early: 290 + 50 ms latency has not passed; the samples are shared already.
  samples.release(320 * ms, false, activities, batches);
  CHECK(activities.size() == 1);
  REQUIRE(batches.size() == 2);
  for (const rt::gpu_sample_batch& batch : batches) {
    REQUIRE(batch.launches.size() == 1);
    CHECK(batch.launches[0].correlation == (std::strcmp(batch.function, "spin_one") == 0 ? 7u : 8u));
  }
  batches.clear();
  samples.release(400 * ms, false, activities, batches);
  REQUIRE(activities.size() == 3);
  for (std::size_t i = 1; i < 3; ++i) {
    const rt::gpu_activity& a = activities[i];
    REQUIRE(a.samples != nullptr);
    if (a.launch.correlation == 7) {
      CHECK(a.samples->samples == doctest::Approx(400));
      CHECK(a.samples->by_stall[static_cast<std::size_t>(rt::gpu_stall::gmem)] == doctest::Approx(300));
      CHECK(a.samples->by_stall[static_cast<std::size_t>(rt::gpu_stall::none)] == doctest::Approx(100));
      CHECK(a.samples->top_reasons[0] == &long_scoreboard);  // not "selected": that is no stall
      CHECK(a.samples->top_reasons[1] == nullptr);
      // 190 ms × 2 cycles/ns × 100 SMs / 1024 cycles.
      CHECK(a.samples->expected == doctest::Approx(190e6 * 2.0 * 100 / 1024));
      CHECK(a.samples->period_cycles == 1024);
    } else {
      CHECK(a.launch.correlation == 8);
      CHECK(a.samples->samples == doctest::Approx(500));
      CHECK(a.samples->top_reasons[0] == &barrier);
    }
  }
  CHECK(samples.held_kernels() == 0);
  CHECK(samples.pending_functions() == 0);
}

TEST_CASE("attribution: launches of one function shared by their time in the window") {
  sample_attribution samples{10 * ms};
  samples.set_device(0, {});
  static const char* const triad = "triad";
  samples.collected(100 * ms);  // the collection before
  samples.add(0, triad, 0x10, nullptr, 0, &long_scoreboard, 900);
  samples.collected(200 * ms);
  // One launch wholly in the window, one half in it, one long before it.
  std::vector<rt::gpu_activity> activities{kernel("triad", 1, 120 * ms, 160 * ms),
                                           kernel("triad", 2, 180 * ms, 220 * ms),
                                           kernel("triad", 3, 10 * ms, 20 * ms)};
  samples.hold_kernels(activities);
  std::vector<rt::gpu_sample_batch> batches;
  samples.release(500 * ms, false, activities, batches);
  REQUIRE(batches.size() == 1);
  REQUIRE(batches[0].launches.size() == 2);  // launch 3 ran outside the window
  double first = 0, second = 0;
  for (const auto& share : batches[0].launches) (share.correlation == 1 ? first : second) = share.weight;
  CHECK(first == doctest::Approx(40 * ms));
  CHECK(second == doctest::Approx(20 * ms));
  REQUIRE(activities.size() == 3);
  for (const rt::gpu_activity& a : activities) {
    REQUIRE(a.samples != nullptr);
    const double expected = a.launch.correlation == 1 ? 600 : a.launch.correlation == 2 ? 300 : 0;
    CHECK(a.samples->samples == doctest::Approx(expected));
  }
}

TEST_CASE("attribution: samples before their kernel's record wait for it; at the end, none is lost") {
  sample_attribution samples{10 * ms};
  samples.set_device(0, {});
  static const char* const late = "late_kernel";
  static const char* const orphan = "device_function_never_launched";
  samples.add(0, late, 0x20, nullptr, 0, &barrier, 50);
  samples.add(0, orphan, 0x30, nullptr, 0, &barrier, 7);
  samples.collected(100 * ms);
  std::vector<rt::gpu_activity> activities;
  std::vector<rt::gpu_sample_batch> batches;
  samples.release(100 * ms, false, activities, batches);
  CHECK(batches.empty());  // no launch of either yet: they wait
  CHECK(samples.pending_functions() == 2);
  activities.push_back(kernel("late_kernel", 5, 60 * ms, 105 * ms));
  samples.hold_kernels(activities);
  samples.release(300 * ms, true, activities, batches);
  REQUIRE(batches.size() == 2);
  double shared = 0, unshared = 0;
  for (const rt::gpu_sample_batch& batch : batches)
    for (const auto& instruction : batch.instructions)
      (batch.launches.empty() ? unshared : shared) += instruction.samples;
  CHECK(shared == 50);
  CHECK(unshared == 7);  // the runtime counts these (gpu-instruction-samples-without-launch)
  REQUIRE(activities.size() == 1);
  CHECK(activities[0].samples->samples == doctest::Approx(50));
}

TEST_CASE("attribution: kernels of unsampled devices pass at once, without samples") {
  sample_attribution samples{10 * ms};
  samples.set_device(0, {});
  std::vector<rt::gpu_activity> activities{kernel("k", 1, 0, 1, 1)};
  samples.hold_kernels(activities);
  REQUIRE(activities.size() == 1);
  CHECK(activities[0].samples == nullptr);
}

TEST_CASE("attribution: samples later than the latency go to the launches just released") {
  sample_attribution samples{10 * ms};
  samples.set_device(0, {});
  static const char* const kernel_name = "k";
  std::vector<rt::gpu_activity> activities{kernel("k", 9, 10 * ms, 20 * ms)};
  samples.hold_kernels(activities);
  std::vector<rt::gpu_sample_batch> batches;
  samples.collected(100 * ms);
  samples.release(100 * ms, false, activities, batches);
  REQUIRE(activities.size() == 1);  // released without samples
  CHECK(activities[0].samples->samples == 0);
  samples.add(0, kernel_name, 0x10, nullptr, 0, &barrier, 12);  // decoded late
  samples.collected(300 * ms);
  activities.clear();
  samples.release(300 * ms, false, activities, batches);
  REQUIRE(batches.size() == 1);
  REQUIRE(batches[0].launches.size() == 1);
  CHECK(batches[0].launches[0].correlation == 9);  // its context, not the root
  CHECK(samples.pending_functions() == 0);
}
