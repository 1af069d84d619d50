#include "pc_sampling.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cubin_sections.hpp"
#include "cupti_error.hpp"
#include "ferret/runtime/runtime.hpp"
#include "sass_source.hpp"
#include "stall_reasons.hpp"

namespace ferret::cupti {
namespace {

// PCs one GetData call can return; more come in the next call of the same collection.
constexpr std::size_t pcs_per_call = 4096;
// CUPTI's decoding thread wakes this often (its default is 100 ms): samples
// reach a collection at most this late after their kernel ended.
constexpr std::uint32_t decode_period_ms = 10;
// How long a kernel waits for its samples after its end: a few decoding periods.
constexpr std::int64_t sample_latency_ns = 50'000'000;

}  // namespace

// One CUDA context's sampling: the reasons it collects and its two buffers
// (the one GetData fills; the one CUPTI fills by itself when sampling is
// disabled or a module unloaded).
struct pc_sampler::context_state {
  CUcontext context = nullptr;
  std::uint32_t device = 0;
  bool enabled = false;
  std::unordered_map<std::uint32_t, const runtime::gpu_stall_reason*> reasons;  // by CUPTI's index
  std::vector<std::uint32_t> collected;                                        // CUPTI's indexes
  struct buffer {
    CUpti_PCSamplingData data{};
    std::vector<CUpti_PCSamplingPCData> pcs;
    std::vector<CUpti_PCSamplingStallReason> stalls;
    void allocate(std::size_t reasons_per_pc) {
      pcs.assign(pcs_per_call, CUpti_PCSamplingPCData{});
      stalls.assign(pcs_per_call * reasons_per_pc, CUpti_PCSamplingStallReason{});
      for (std::size_t i = 0; i < pcs.size(); ++i) {
        pcs[i].size = sizeof(CUpti_PCSamplingPCData);
        pcs[i].stallReason = stalls.data() + i * reasons_per_pc;
      }
      data = CUpti_PCSamplingData{};
      data.size = sizeof(CUpti_PCSamplingData);
      data.collectNumPcs = pcs.size();
      data.pPcData = pcs.data();
    }
  };
  buffer taken, configured;
};

pc_sampler::pc_sampler(pc_sampling_setting setting, get_attribute_fn get_attribute)
    : setting_(setting), get_attribute_(get_attribute), attribution_(sample_latency_ns) {}

pc_sampler::~pc_sampler() = default;

void pc_sampler::say_once(bool& said, const std::string& line) {
  if (said) return;
  said = true;
  runtime::print_message(line);
}

const runtime::gpu_stall_reason* pc_sampler::reason_named(const std::string& cupti_name) {
  const std::string name{stall_reason_name(cupti_name)};
  if (const auto it = reasons_by_name_.find(name); it != reasons_by_name_.end()) return it->second;
  const runtime::gpu_stall_reason& made = reasons_.emplace_back(runtime::gpu_stall_reason{
      static_cast<std::uint32_t>(reasons_.size()), name, classify_stall_reason(name)});
  reasons_by_name_.emplace(name, &made);
  return &made;
}

const char* pc_sampler::interned(std::unordered_set<std::string>& strings, const std::string& text) {
  return strings.insert(text).first->c_str();
}

void pc_sampler::context_created(CUcontext context, std::uint32_t device) {
  auto state = std::make_unique<context_state>();
  state->context = context;
  state->device = device;
  std::lock_guard lock{mutex_};
  configure(*state);
  if (state->enabled) contexts_.insert_or_assign(context, std::move(state));
}

void pc_sampler::configure(context_state& state) {
  const auto refuse = [&](std::string_view step, CUptiResult result) {
    ++contexts_refused_;
    say_once(said_refused_, fmt::format("CUPTI refused PC sampling on device {} ({}: {}); its "
                                        "kernels are traced without instruction samples",
                                        state.device, step, cupti_error(result)));
    if (state.enabled) {
      CUpti_PCSamplingDisableParams disable{CUpti_PCSamplingDisableParamsSize, nullptr, state.context};
      cuptiPCSamplingDisable(&disable);
      state.enabled = false;
    }
  };
  CUpti_PCSamplingEnableParams enable{CUpti_PCSamplingEnableParamsSize, nullptr, state.context};
  if (const CUptiResult result = cuptiPCSamplingEnable(&enable); result != CUPTI_SUCCESS)
    return refuse("enable", result);
  state.enabled = true;

  std::size_t count = 0;
  CUpti_PCSamplingGetNumStallReasonsParams number{CUpti_PCSamplingGetNumStallReasonsParamsSize,
                                                  nullptr, state.context, &count};
  if (const CUptiResult result = cuptiPCSamplingGetNumStallReasons(&number); result != CUPTI_SUCCESS)
    return refuse("stall reasons", result);
  std::vector<std::uint32_t> indexes(count);
  std::vector<std::vector<char>> names(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
  std::vector<char*> name_pointers(count);
  for (std::size_t i = 0; i < count; ++i) name_pointers[i] = names[i].data();
  CUpti_PCSamplingGetStallReasonsParams reasons{CUpti_PCSamplingGetStallReasonsParamsSize, nullptr,
                                                state.context, count, indexes.data(),
                                                name_pointers.data()};
  if (const CUptiResult result = cuptiPCSamplingGetStallReasons(&reasons); result != CUPTI_SUCCESS)
    return refuse("stall reasons", result);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string cupti_name{names[i].data(), strnlen(names[i].data(), names[i].size())};
    if (!collect_stall_reason(cupti_name)) continue;
    state.collected.push_back(indexes[i]);
    state.reasons.emplace(indexes[i], reason_named(cupti_name));
  }
  state.taken.allocate(state.collected.size());
  state.configured.allocate(state.collected.size());

  std::vector<CUpti_PCSamplingConfigurationInfo> settings;
  const auto add = [&](CUpti_PCSamplingConfigurationAttributeType type) -> CUpti_PCSamplingConfigurationInfo& {
    CUpti_PCSamplingConfigurationInfo& info = settings.emplace_back();
    info.attributeType = type;
    return info;
  };
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE).attributeData.collectionModeData
      .collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  auto& stall = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON).attributeData.stallReasonData;
  stall.stallReasonCount = state.collected.size();
  stall.pStallReasonIndex = state.collected.data();
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
      .attributeData.samplingDataBufferData.samplingDataBuffer = &state.configured.data;
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN)
      .attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan = decode_period_ms;
  if (setting_.period_exponent != 0)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
        .attributeData.samplingPeriodData.samplingPeriod = setting_.period_exponent;
  CUpti_PCSamplingConfigurationInfoParams configure{CUpti_PCSamplingConfigurationInfoParamsSize,
                                                    nullptr, state.context, settings.size(),
                                                    settings.data()};
  if (const CUptiResult result = cuptiPCSamplingSetConfigurationAttribute(&configure);
      result != CUPTI_SUCCESS)
    return refuse("configuration", result);

  // The period in effect (CUPTI's default depends on the GPU).
  CUpti_PCSamplingConfigurationInfo period{};
  period.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  CUpti_PCSamplingConfigurationInfoParams query{CUpti_PCSamplingConfigurationInfoParamsSize,
                                                nullptr, state.context, 1, &period};
  std::uint32_t exponent = setting_.period_exponent;
  if (cuptiPCSamplingGetConfigurationAttribute(&query) == CUPTI_SUCCESS &&
      period.attributeData.samplingPeriodData.samplingPeriod >= 5 &&
      period.attributeData.samplingPeriodData.samplingPeriod <= 31)
    exponent = period.attributeData.samplingPeriodData.samplingPeriod;
  sample_attribution::device_clock clock;
  clock.period_cycles = exponent != 0 ? 1u << exponent : 0;
  period_cycles_ = clock.period_cycles;
  if (get_attribute_ != nullptr) {
    int value = 0;
    if (get_attribute_(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, static_cast<int>(state.device)) == 0)
      clock.multiprocessors = static_cast<std::uint32_t>(value);
    if (get_attribute_(&value, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, static_cast<int>(state.device)) == 0)
      clock.cycles_per_ns = value / 1e6;  // kHz
  }
  attribution_.set_device(state.device, clock);
}

void pc_sampler::context_destroying(CUcontext context) {
  std::lock_guard lock{mutex_};
  const auto it = contexts_.find(context);
  if (it == contexts_.end()) return;
  context_state& state = *it->second;
  take_from(state, state.taken.data, false);
  // Disabling hands the samples not yet decoded to the configured buffer.
  CUpti_PCSamplingDisableParams disable{CUpti_PCSamplingDisableParamsSize, nullptr, context};
  cuptiPCSamplingDisable(&disable);
  take_from(state, state.configured.data, true);
  contexts_.erase(it);
}

void pc_sampler::module_loaded(const CUpti_ModuleResourceData& module) {
  if (module.pCubin == nullptr || module.cubinSize == 0) return;
  if (!cubin_has_line_info(module.pCubin, module.cubinSize)) {
    std::lock_guard lock{mutex_};
    ++cubins_without_lines_;
    return;
  }
  CUpti_GetCubinCrcParams crc{CUpti_GetCubinCrcParamsSize, module.cubinSize, module.pCubin, 0};
  if (cuptiGetCubinCrc(&crc) != CUPTI_SUCCESS) return;
  std::lock_guard lock{mutex_};
  if (cubins_.count(crc.cubinCrc) != 0) return;
  cubins_.emplace(crc.cubinCrc, std::string{module.pCubin, module.cubinSize});
  cubin_bytes_ += module.cubinSize;
}

pc_sampler::source_line pc_sampler::line_of(std::uint64_t cubin_crc, const char* function,
                                            std::uint64_t pc_offset) {
  const line_key key{cubin_crc, function, pc_offset};
  if (const auto it = lines_.find(key); it != lines_.end()) return it->second;
  source_line found{nullptr, 0};
  if (const auto cubin = cubins_.find(cubin_crc); cubin != cubins_.end())
    if (const std::optional<sass_source> source = source_of_instruction(cubin->second, function, pc_offset))
      found = {interned(files_, source->path), source->line};
  lines_.emplace(key, found);
  return found;
}

void pc_sampler::read_records(context_state& state, CUpti_PCSamplingData& buffer) {
  samples_ += buffer.totalSamples;
  dropped_ += buffer.droppedSamples;
  non_user_ += buffer.nonUsrKernelsTotalSamples;
  const std::size_t count = std::min(buffer.totalNumPcs, buffer.collectNumPcs);
  for (std::size_t i = 0; i < count; ++i) {
    const CUpti_PCSamplingPCData& pc = buffer.pPcData[i];
    ++records_;
    const char* function = interned(functions_, pc.functionName != nullptr ? pc.functionName : "?");
    const source_line line = line_of(pc.cubinCrc, function, pc.pcOffset);
    for (std::size_t k = 0; k < pc.stallReasonCount; ++k) {
      const CUpti_PCSamplingStallReason& stall = pc.stallReason[k];
      const auto reason = state.reasons.find(stall.pcSamplingStallReasonIndex);
      if (reason == state.reasons.end() || stall.samples == 0) continue;
      attribution_.add(state.device, function, pc.pcOffset, line.file, line.line, reason->second,
                       stall.samples);
    }
  }
  buffer.totalNumPcs = 0;
  buffer.remainingNumPcs = 0;
  buffer.totalSamples = buffer.droppedSamples = buffer.nonUsrKernelsTotalSamples = 0;
}

void pc_sampler::take_from(context_state& state, CUpti_PCSamplingData& buffer,
                           bool from_configured_buffer) {
  if (from_configured_buffer) {
    if (buffer.totalNumPcs > 0 || buffer.totalSamples > 0) read_records(state, buffer);
    return;
  }
  // Bounded: a program that keeps its GPU busy must not keep the drain here.
  for (int call = 0; call < 256; ++call) {
    CUpti_PCSamplingGetDataParams get{CUpti_PCSamplingGetDataParamsSize, nullptr, state.context, &buffer};
    buffer.collectNumPcs = pcs_per_call;
    const CUptiResult result = cuptiPCSamplingGetData(&get);
    if (result != CUPTI_SUCCESS) {
      if (buffer.hardwareBufferFull != 0) {
        ++hardware_buffer_full_;
        say_once(said_full_, "CUPTI's PC sampling hardware buffer was full: samples were lost "
                             "(counted: gpu-pc-sampling-buffer-full); a longer period "
                             "(FERRET_CUDA_PC_SAMPLING=N, 2^N cycles) takes fewer");
      } else {
        ++failed_collections_;
        say_once(said_failed_, fmt::format("CUPTI could not hand over PC samples ({}); those of "
                                           "that moment are missing (counted: "
                                           "gpu-pc-sampling-failed-collections)",
                                           cupti_error(result)));
      }
      buffer.totalNumPcs = 0;
      break;
    }
    const bool more = buffer.remainingNumPcs > 0;
    read_records(state, buffer);
    if (!more) break;
  }
  // Samples CUPTI moved to the configured buffer by itself (a module unloaded).
  take_from(state, state.configured.data, true);
}

void pc_sampler::take(std::int64_t now_ns) {
  std::lock_guard lock{mutex_};
  for (auto& [context, state] : contexts_) take_from(*state, state->taken.data, false);
  attribution_.collected(now_ns);
}

void pc_sampler::attribute(std::vector<runtime::gpu_activity>& activities, std::int64_t now_ns,
                           bool final) {
  std::lock_guard lock{mutex_};
  if (final) {
    // The samples still being decoded: disabling hands them over.
    for (auto& [context, state] : contexts_) {
      CUpti_PCSamplingDisableParams disable{CUpti_PCSamplingDisableParamsSize, nullptr, context};
      cuptiPCSamplingDisable(&disable);
      take_from(*state, state->configured.data, true);
    }
    contexts_.clear();
    attribution_.collected(now_ns);
  }
  attribution_.hold_kernels(activities);
  attribution_.release(now_ns, final, activities, batches_);
}

void pc_sampler::hand_over(std::vector<runtime::gpu_sample_batch>& batches) {
  std::lock_guard lock{mutex_};
  batches.insert(batches.end(), std::make_move_iterator(batches_.begin()),
                 std::make_move_iterator(batches_.end()));
  batches_.clear();
}

void pc_sampler::add_metadata(runtime::metadata_list& metadata) const {
  std::lock_guard lock{mutex_};
  const auto number = [](std::uint64_t value) { return static_cast<std::int64_t>(value); };
  metadata.emplace_back("gpu-pc-sampling", std::string{"continuous"});
  metadata.emplace_back("gpu-pc-sampling-period-cycles", number(period_cycles_));
  metadata.emplace_back("gpu-pc-samples", number(samples_));
  metadata.emplace_back("gpu-pc-samples-dropped", number(dropped_));
  metadata.emplace_back("gpu-pc-samples-non-user", number(non_user_));
  metadata.emplace_back("gpu-pc-sampling-records", number(records_));
  metadata.emplace_back("gpu-pc-sampling-buffer-full", number(hardware_buffer_full_));
  metadata.emplace_back("gpu-pc-sampling-failed-collections", number(failed_collections_));
  metadata.emplace_back("gpu-pc-sampling-contexts-refused", number(contexts_refused_));
  metadata.emplace_back("gpu-pc-sampling-cubins-kept", number(cubins_.size()));
  metadata.emplace_back("gpu-pc-sampling-cubin-bytes-kept", number(cubin_bytes_));
  metadata.emplace_back("gpu-pc-sampling-cubins-without-lines", number(cubins_without_lines_));
}

}  // namespace ferret::cupti
