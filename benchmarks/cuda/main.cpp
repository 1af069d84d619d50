// main.cpp — ferret-cuda-overhead: what tracing costs a CUDA program.
//
// Runs one workload in one mode and prints one line to compare across runs
// (benchmarks/cuda/run.sh runs the whole set and prints the tables):
//
//   result workload=storm mode=bare per_op_us=5.123 ops=100000 timed_s=0.512 records=0 dropped=0
//
// Workloads (--workload):
//   storm  --launches (100000) empty-kernel launches on one stream, then one
//          stream synchronisation: per_op_us is µs per launch, i.e. what the
//          launch path costs when nothing else hides it.
//   loop   --iterations (200) of saxpy over 16M floats + a 4096^3 cuBLAS GEMM
//          (--gemm=bf16, the default, or fp32) + a 4-byte device-to-host copy
//          and stream synchronisation: per_op_ms is ms per iteration, a
//          realistic step in which the launches hide behind device work.
//   getters --calls (700000) of what PyTorch makes per operation besides the
//          launch: six cudaGetDevice and one cudaGetLastError, repeated;
//          per_op_us is µs per call: what a call that launches nothing costs
//          when a tracer counts, records or ignores it.
//   stencil --iterations (200) of a 5-point stencil split between two GPUs,
//          each reading its halo row from the other's memory (peer access);
//          per_op_us is µs per iteration: what counting device-initiated
//          traffic (FERRET_CUDA_PEER_ACCESSES=1) costs a kernel. Skipped
//          without two GPUs that can reach each other.
// Before the timed part each workload creates its context, streams, buffers
// and cuBLAS handle and runs --warmup launches (1000), iterations (10) or
// calls (7000).
//
// Modes (--mode):
//   bare   nothing but the workload. Run under tools/ferret-run, this is the
//          "ferret" mode: the driver loads ferret's collector at cuInit.
//   cupti  a minimal CUPTI tracer in this process (cupti_subscriber.hpp), the
//          yardstick for ferret: --kinds (default all: kernel, memcpy, memset,
//          memory2, sync, runtime, driver, overhead; "ferret": the kinds
//          ferret's collector enables, i.e. without runtime and driver but
//          with memcpy2, device and context; "none"; or a list) and an API
//          callback that only counts, for --callbacks=none, runtime, driver,
//          both (whole domains), launch (the runtime's launch calls),
//          ferret (the calls ferret subscribes to by default), driver-launch
//          or driver-ferret (driver calls alone); or no callback but activity
//          records of the driver's launch calls alone: driver-launch-records,
//          and driver-launch-records-external with an external correlation id
//          pushed once.
//
// Fields: ops and timed_s are the timed operations and the seconds they took
// (steady_clock); records counts the activity records CUPTI delivered for the
// timed part and the teardown after it (the warm-up's are flushed and left out
// before timing), records_by_kind splits them, dropped is what CUPTI dropped
// in the whole run, api_callbacks the callbacks in the timed part and teardown
// (enter and exit each count), buffers the 8 MiB buffers allocated and
// declined the requests refused once the pool of 16 was spent, and
// callbacks_refused the callback ids CUPTI would not enable. A line
// starting "info" names the device and the CUDA and CUPTI versions.
//
// Exit status: 0, 2 for bad arguments, 77 ("skipped: <reason>") when no CUDA
// device can be used, 1 when CUDA or CUPTI fail (one line on stderr).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cupti_subscriber.hpp"
#include "workloads.hpp"

namespace {

using namespace ferret_bench;

constexpr int exit_bad_arguments = 2;
constexpr int exit_skipped = 77;

constexpr std::string_view usage_text =
    "usage: ferret-cuda-overhead [--workload=storm|loop|getters|stencil] [--mode=bare|cupti]\n"
    "         [--kinds=all|ferret|none|KIND,...]\n"
    "         [--callbacks=none|runtime|driver|both|launch|ferret|driver-launch|driver-ferret|\n"
    "                      driver-launch-records|driver-launch-records-external]\n"
    "         [--launches=N] [--iterations=N] [--calls=N] [--warmup=N] [--gemm=bf16|fp32]\n"
    "  KIND: kernel, memcpy, memcpy2, memset, memory2, sync, runtime, driver, device,\n"
    "        context, overhead\n"
    "  --kinds and --callbacks need --mode=cupti; --launches is for storm,\n"
    "  --iterations for loop and stencil, --gemm for loop, --calls for getters.\n"
    "  Prints one 'result ...' line.\n";

enum class workload { storm, loop, getters, stencil };
enum class mode { bare, cupti };

// Option values and their names, for parsing and for the result line.
template <typename T, std::size_t N>
using names_of = std::array<std::pair<std::string_view, T>, N>;
constexpr names_of<workload, 4> workload_names{{{"storm", workload::storm},
                                                {"loop", workload::loop},
                                                {"getters", workload::getters},
                                                {"stencil", workload::stencil}}};
constexpr names_of<mode, 2> mode_names{{{"bare", mode::bare}, {"cupti", mode::cupti}}};
constexpr names_of<callback_set, 10> callback_names{{{"none", callback_set::none},
                                                    {"runtime", callback_set::runtime},
                                                    {"driver", callback_set::driver},
                                                    {"both", callback_set::both},
                                                    {"launch", callback_set::launch},
                                                    {"ferret", callback_set::ferret},
                                                    {"driver-launch", callback_set::driver_launch},
                                                    {"driver-ferret", callback_set::driver_ferret},
                                                    {"driver-launch-records", callback_set::driver_launch_records},
                                                    {"driver-launch-records-external",
                                                     callback_set::driver_launch_records_external}}};
constexpr names_of<gemm_type, 2> gemm_names{{{"bf16", gemm_type::bf16}, {"fp32", gemm_type::fp32}}};

template <typename T, std::size_t N>
std::optional<T> named(const names_of<T, N>& names, std::string_view text) {
  for (const auto& [name, value] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

template <typename T, std::size_t N>
std::string_view name_of(const names_of<T, N>& names, T value) {
  for (const auto& [name, named_value] : names) {
    if (named_value == value) return name;
  }
  return "?";
}

// "a, b or c"
template <typename T, std::size_t N>
std::string alternatives(const names_of<T, N>& names) {
  std::string text;
  for (std::size_t i = 0; i < N; ++i) {
    text += i == 0 ? "" : i + 1 == N ? " or " : ", ";
    text += names[i].first;
  }
  return text;
}

struct options {
  workload work = workload::storm;
  mode how = mode::bare;
  std::vector<CUpti_ActivityKind> kinds;
  callback_set callbacks = callback_set::none;
  std::optional<std::int64_t> launches;
  std::optional<std::int64_t> iterations;
  std::optional<std::int64_t> calls;
  std::optional<std::int64_t> warmup;
  std::optional<gemm_type> gemm;
  bool kinds_given = false;
  bool help = false;
};

struct bad_arguments {
  std::string message;
};

std::optional<std::int64_t> parse_count(std::string_view text, std::int64_t smallest) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool whole_text = error == std::errc{} && end == text.data() + text.size();
  if (!whole_text || value < smallest) return std::nullopt;
  return value;
}

// Canonical order, whatever order they were given in.
std::optional<std::vector<CUpti_ActivityKind>> parse_kinds(std::string_view text) {
  std::vector<CUpti_ActivityKind> kinds;
  if (text.empty()) return std::nullopt;
  if (text == "none") return kinds;
  if (text == "all" || text == "ferret") {
    for (const auto& known : activity_kinds)
      if (text == "all" ? known.in_all : known.in_ferret) kinds.push_back(known.kind);
    return kinds;
  }
  std::vector<bool> wanted(activity_kinds.size(), false);
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    std::size_t index = 0;
    while (index < activity_kinds.size() && activity_kinds[index].name != name) ++index;
    if (index == activity_kinds.size()) return std::nullopt;
    wanted[index] = true;
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return std::nullopt;  // trailing comma
  }
  for (std::size_t index = 0; index < activity_kinds.size(); ++index) {
    if (wanted[index]) kinds.push_back(activity_kinds[index].kind);
  }
  return kinds;
}

// Accepts --name=value and --name value.
std::variant<options, bad_arguments> parse_options(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--help" || argument == "-h") {
      parsed.help = true;
      continue;
    }
    if (argument.substr(0, 2) != "--") {
      return bad_arguments{fmt::format("unexpected argument '{}'", argument)};
    }
    const std::size_t equals = argument.find('=');
    const std::string_view name =
        argument.substr(2, equals == std::string_view::npos ? argument.npos : equals - 2);
    std::string_view value;
    if (equals != std::string_view::npos) {
      value = argument.substr(equals + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return bad_arguments{fmt::format("--{} needs a value", name)};
    }
    const auto bad_value = [&](std::string_view accepted) {
      return bad_arguments{fmt::format("--{}={}: expected {}", name, value, accepted)};
    };
    // Sets `into` to the value named by `value`; false if it names none.
    const auto choose = [&](const auto& names, auto& into) {
      const auto chosen = named(names, value);
      if (chosen) into = *chosen;
      return chosen.has_value();
    };
    const auto count = [&](std::int64_t smallest, std::optional<std::int64_t>& into) {
      into = parse_count(value, smallest);
      return into.has_value();
    };
    if (name == "workload") {
      if (!choose(workload_names, parsed.work)) return bad_value(alternatives(workload_names));
    } else if (name == "mode") {
      if (!choose(mode_names, parsed.how)) return bad_value(alternatives(mode_names));
    } else if (name == "kinds") {
      auto kinds = parse_kinds(value);
      if (!kinds) return bad_value("all, none or a comma-separated list of activity kinds");
      parsed.kinds = *std::move(kinds);
      parsed.kinds_given = true;
    } else if (name == "callbacks") {
      if (!choose(callback_names, parsed.callbacks)) return bad_value(alternatives(callback_names));
    } else if (name == "launches") {
      if (!count(1, parsed.launches)) return bad_value("a positive integer");
    } else if (name == "iterations") {
      if (!count(1, parsed.iterations)) return bad_value("a positive integer");
    } else if (name == "calls") {
      if (!count(1, parsed.calls)) return bad_value("a positive integer");
    } else if (name == "warmup") {
      if (!count(0, parsed.warmup)) return bad_value("a non-negative integer");
    } else if (name == "gemm") {
      if (!choose(gemm_names, parsed.gemm)) return bad_value(alternatives(gemm_names));
    } else {
      return bad_arguments{fmt::format("unknown option --{}", name)};
    }
  }
  const bool tracing_options = parsed.kinds_given || parsed.callbacks != callback_set::none;
  if (parsed.how == mode::bare && tracing_options) {
    return bad_arguments{"--kinds and --callbacks need --mode=cupti"};
  }
  if (parsed.work != workload::loop && parsed.gemm) return bad_arguments{"--gemm is for --workload=loop"};
  if (parsed.work != workload::loop && parsed.work != workload::stencil && parsed.iterations) {
    return bad_arguments{"--iterations is for --workload=loop or stencil"};
  }
  if (parsed.work != workload::storm && parsed.launches) {
    return bad_arguments{"--launches is for --workload=storm"};
  }
  if (parsed.work != workload::getters && parsed.calls) {
    return bad_arguments{"--calls is for --workload=getters"};
  }
  if (parsed.how == mode::cupti && !parsed.kinds_given) parsed.kinds = *parse_kinds("all");
  return parsed;
}

std::string kinds_list(const std::vector<CUpti_ActivityKind>& kinds) {
  if (kinds.empty()) return "none";
  std::string list;
  for (const CUpti_ActivityKind kind : kinds)
    list += (list.empty() ? "" : ",") + activity_kind_name(kind);
  return list;
}

// The kinds --kinds names in their order, then any others CUPTI delivered.
std::string records_by_kind(const cupti_counts& counts) {
  std::vector<CUpti_ActivityKind> order;
  for (const auto& known : activity_kinds) order.push_back(known.kind);
  for (std::size_t index = 0; index < counts.records_by_kind.size(); ++index) {
    const auto kind = static_cast<CUpti_ActivityKind>(index);
    if (std::find(order.begin(), order.end(), kind) == order.end()) order.push_back(kind);
  }
  std::string list;
  for (const CUpti_ActivityKind kind : order) {
    if (counts.records_by_kind[kind] == 0) continue;
    list += fmt::format("{}{}:{}", list.empty() ? "" : ",", activity_kind_name(kind),
                        counts.records_by_kind[kind]);
  }
  return list.empty() ? "none" : list;
}

int run(const options& chosen) {
  const std::string unusable = unusable_device_reason();
  if (!unusable.empty()) {
    fmt::print("skipped: no usable CUDA device ({})\n", unusable);
    return exit_skipped;
  }
  if (chosen.work == workload::stencil) {
    if (const std::string reason = stencil_unusable_reason(); !reason.empty()) {
      fmt::print("skipped: the stencil needs two GPUs with peer access ({})\n", reason);
      return exit_skipped;
    }
  }
  const bool tracing = chosen.how == mode::cupti;
  if (tracing) start_cupti(chosen.kinds, chosen.callbacks);

  workload_settings settings{};
  settings.gemm = chosen.gemm.value_or(gemm_type::bf16);
  cupti_counts before{};
  const auto before_timing = [&] {
    if (tracing) before = flush_cupti();
  };
  double seconds = 0;
  if (chosen.work == workload::storm) {
    settings.operations = chosen.launches.value_or(100000);
    settings.warmup = chosen.warmup.value_or(1000);
    seconds = run_storm(settings, before_timing);
  } else if (chosen.work == workload::loop) {
    settings.operations = chosen.iterations.value_or(200);
    settings.warmup = chosen.warmup.value_or(10);
    seconds = run_loop(settings, before_timing);
  } else if (chosen.work == workload::stencil) {
    settings.operations = chosen.iterations.value_or(200);
    settings.warmup = chosen.warmup.value_or(10);
    seconds = run_stencil(settings, before_timing);
  } else {
    settings.operations = chosen.calls.value_or(700000);
    settings.warmup = chosen.warmup.value_or(7000);
    seconds = run_getters(settings, before_timing);
  }
  const cupti_counts counts = tracing ? records_since(flush_cupti(), before) : cupti_counts{};

  fmt::print("info {}{}\n", device_description(), tracing ? " cupti=" + cupti_version() : "");
  const double per_op = seconds / static_cast<double>(settings.operations);
  std::string line =
      fmt::format("result workload={} mode={} ", name_of(workload_names, chosen.work),
                  name_of(mode_names, chosen.how));
  if (chosen.work == workload::storm) {
    line += fmt::format("per_op_us={:.3f}", per_op * 1e6);
  } else if (chosen.work == workload::getters) {
    line += fmt::format("per_op_us={:.4f}", per_op * 1e6);
  } else if (chosen.work == workload::stencil) {
    line += fmt::format("per_op_us={:.2f}", per_op * 1e6);
  } else {
    line +=
        fmt::format("per_op_ms={:.4f} gemm={}", per_op * 1e3, name_of(gemm_names, settings.gemm));
  }
  line += fmt::format(" ops={} timed_s={:.6f} records={} dropped={}", settings.operations, seconds,
                      counts.records, counts.dropped);
  if (tracing) {
    line += fmt::format(
        " kinds={} callbacks={} api_callbacks={} buffers={} declined={} callbacks_refused={}"
        " kernels_joined={}",
        kinds_list(chosen.kinds), name_of(callback_names, chosen.callbacks), counts.api_callbacks,
        counts.buffers_allocated, counts.buffers_declined, counts.callbacks_refused,
        counts.kernels_joined);
    line += fmt::format(" records_by_kind={}", records_by_kind(counts));
  }
  fmt::print("{}\n", line);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = parse_options(argc, argv);
  if (const auto* bad = std::get_if<bad_arguments>(&parsed)) {
    fmt::print(stderr, "ferret-cuda-overhead: {}\n{}", bad->message, usage_text);
    return exit_bad_arguments;
  }
  const options& chosen = std::get<options>(parsed);
  if (chosen.help) {
    fmt::print("{}", usage_text);
    return 0;
  }
  try {
    return run(chosen);
  } catch (const std::exception& failure) {
    fmt::print(stderr, "ferret-cuda-overhead: {}\n", failure.what());
    return 1;
  }
}
