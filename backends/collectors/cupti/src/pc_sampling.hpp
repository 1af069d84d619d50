// pc_sampling.hpp — instruction samples with stall reasons (CUPTI's PC
// Sampling API, FERRET_CUDA_PC_SAMPLING), in continuous mode: kernels that run
// concurrently without sampling still do with it.
//
//   program thread (resource callbacks)       drain thread (collect)
//   ───────────────────────────────────       ──────────────────────
//   context created: enable, configure        take(): cuptiPCSamplingGetData per
//     (every stall reason but the               context ─▶ function, offset,
//     "_not_issued" duplicates)                 reason, samples; the source line
//   module loaded: keep its cubin if it         from the kept cubin (cached)
//     has line information                      ─▶ sample_attribution
//   context destroyed: take its samples,
//     disable
//
// Off (the default), nothing of this is subscribed to: no call per launch.
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ferret/runtime/backend.hpp"
#include "sample_attribution.hpp"
#include "sampling_setting.hpp"

namespace ferret::cupti {

class pc_sampler {
 public:
  /// What the sampler needs of the driver: a device attribute (cuDeviceGetAttribute).
  using get_attribute_fn = int (*)(int*, int, int);

  pc_sampler(pc_sampling_setting setting, get_attribute_fn get_attribute);
  ~pc_sampler();
  pc_sampler(const pc_sampler&) = delete;
  pc_sampler& operator=(const pc_sampler&) = delete;

  void context_created(CUcontext context, std::uint32_t device);
  void context_destroying(CUcontext context);
  void module_loaded(const CUpti_ModuleResourceData& module);

  /// Collects the samples of every context (before the activity flush).
  void take(std::int64_t now_ns);
  /// Holds this collection's kernels and releases those whose samples are
  /// in, with the samples shared among them (see sample_attribution).
  void attribute(std::vector<runtime::gpu_activity>& activities, std::int64_t now_ns, bool final);
  /// The batches attribute() made, handed over.
  void hand_over(std::vector<runtime::gpu_sample_batch>& batches);

  void add_metadata(runtime::metadata_list& metadata) const;

 private:
  struct context_state;

  void configure(context_state& state);
  void take_from(context_state& state, CUpti_PCSamplingData& buffer, bool from_configured_buffer);
  void read_records(context_state& state, CUpti_PCSamplingData& buffer);
  const runtime::gpu_stall_reason* reason_named(const std::string& cupti_name);
  const char* interned(std::unordered_set<std::string>& strings, const std::string& text);
  struct source_line {
    const char* file;
    std::uint32_t line;
  };
  source_line line_of(std::uint64_t cubin_crc, const char* function, std::uint64_t pc_offset);
  void say_once(bool& said, const std::string& line);

  const pc_sampling_setting setting_;
  const get_attribute_fn get_attribute_;

  mutable std::mutex mutex_;  // everything below
  std::map<CUcontext, std::unique_ptr<context_state>> contexts_;
  std::deque<runtime::gpu_stall_reason> reasons_;
  std::unordered_map<std::string, const runtime::gpu_stall_reason*> reasons_by_name_;
  std::unordered_set<std::string> functions_, files_;
  std::unordered_map<std::uint64_t, std::string> cubins_;  // with line information, by CRC
  std::uint64_t cubin_bytes_ = 0;
  std::uint64_t cubins_without_lines_ = 0;
  struct line_key {
    std::uint64_t crc;
    const char* function;
    std::uint64_t pc_offset;
    bool operator==(const line_key& other) const noexcept {
      return crc == other.crc && function == other.function && pc_offset == other.pc_offset;
    }
  };
  struct line_key_hash {
    std::size_t operator()(const line_key& key) const noexcept {
      return (key.crc * 1000003u ^ std::hash<const void*>{}(key.function)) * 1000003u ^ key.pc_offset;
    }
  };
  std::unordered_map<line_key, source_line, line_key_hash> lines_;
  sample_attribution attribution_;
  std::vector<runtime::gpu_sample_batch> batches_;
  std::uint32_t period_cycles_ = 0;
  std::uint64_t samples_ = 0, dropped_ = 0, non_user_ = 0, records_ = 0;
  std::uint64_t hardware_buffer_full_ = 0, failed_collections_ = 0, contexts_refused_ = 0;
  bool said_refused_ = false, said_failed_ = false, said_full_ = false;
};

}  // namespace ferret::cupti
