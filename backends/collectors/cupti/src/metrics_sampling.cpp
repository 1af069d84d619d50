#include "metrics_sampling.hpp"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "cupti_clock.hpp"
#include "cupti_error.hpp"
#include "sampled_metrics.hpp"

namespace ferret::cupti {
namespace {

// Where the GPU writes samples until a decode takes them, in device memory.
constexpr std::size_t hardware_buffer_bytes = 64u << 20;
// Samples the counter data image holds: about 2 s of them (a drain empties it sooner).
std::uint32_t samples_per_image(std::int64_t interval_ns) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(2'000'000'000 / interval_ns, 100, 10'000));
}

metrics_sampler* g_sampler_at_exit = nullptr;  // set once, with the exit handler

// CUPTI's parameter structs: zeroed, with their size (which tells CUPTI the version).
template <typename params>
params parameters(std::size_t size) {
  params made{};
  made.structSize = size;
  return made;
}

}  // namespace

// PM sampling and the profiler host API, from the libcupti already loaded
// (CUDA 12.6+): a direct call into an older one would end the program.
struct metrics_sampler::functions {
  decltype(&cuptiProfilerInitialize) profiler_initialize = nullptr;
  decltype(&cuptiDeviceGetChipName) chip_name = nullptr;
  decltype(&cuptiPmSamplingGetCounterAvailability) counter_availability = nullptr;
  decltype(&cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&cuptiProfilerHostGetMetricProperties) metric_properties = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) config_image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) passes = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) evaluate = nullptr;
  decltype(&cuptiPmSamplingEnable) enable = nullptr;
  decltype(&cuptiPmSamplingDisable) disable = nullptr;
  decltype(&cuptiPmSamplingSetConfig) set_config = nullptr;
  decltype(&cuptiPmSamplingStart) start = nullptr;
  decltype(&cuptiPmSamplingStop) stop = nullptr;
  decltype(&cuptiPmSamplingDecodeData) decode = nullptr;
  decltype(&cuptiPmSamplingGetCounterDataSize) counter_data_size = nullptr;
  decltype(&cuptiPmSamplingCounterDataImageInitialize) counter_data_initialize = nullptr;
  decltype(&cuptiPmSamplingGetCounterDataInfo) counter_data_info = nullptr;
  decltype(&cuptiPmSamplingCounterDataGetSampleInfo) sample_info = nullptr;

  // The name of the first function missing, or "" when all are there.
  std::string load() {
    Dl_info info{};
    void* library = nullptr;
    if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) != 0 && info.dli_fname != nullptr)
      library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (library == nullptr) return "libcupti itself";
    std::string missing;
    const auto find = [&](auto& function, const char* name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
      if (function == nullptr && missing.empty()) missing = name;
    };
    find(profiler_initialize, "cuptiProfilerInitialize");
    find(chip_name, "cuptiDeviceGetChipName");
    find(counter_availability, "cuptiPmSamplingGetCounterAvailability");
    find(host_initialize, "cuptiProfilerHostInitialize");
    find(host_deinitialize, "cuptiProfilerHostDeinitialize");
    find(metric_properties, "cuptiProfilerHostGetMetricProperties");
    find(add_metrics, "cuptiProfilerHostConfigAddMetrics");
    find(config_image_size, "cuptiProfilerHostGetConfigImageSize");
    find(config_image, "cuptiProfilerHostGetConfigImage");
    find(passes, "cuptiProfilerHostGetNumOfPasses");
    find(evaluate, "cuptiProfilerHostEvaluateToGpuValues");
    find(enable, "cuptiPmSamplingEnable");
    find(disable, "cuptiPmSamplingDisable");
    find(set_config, "cuptiPmSamplingSetConfig");
    find(start, "cuptiPmSamplingStart");
    find(stop, "cuptiPmSamplingStop");
    find(decode, "cuptiPmSamplingDecodeData");
    find(counter_data_size, "cuptiPmSamplingGetCounterDataSize");
    find(counter_data_initialize, "cuptiPmSamplingCounterDataImageInitialize");
    find(counter_data_info, "cuptiPmSamplingGetCounterDataInfo");
    find(sample_info, "cuptiPmSamplingCounterDataGetSampleInfo");
    dlclose(library);  // NOLOAD took a reference to a library that stays loaded
    return missing;
  }

  CUpti_Profiler_Host_Object* make_host(const std::string& chip, const std::vector<std::uint8_t>& availability) const {
    auto params = parameters<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    params.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    params.pChipName = chip.c_str();
    params.pCounterAvailabilityImage = availability.data();
    return host_initialize(&params) == CUPTI_SUCCESS ? params.pHostObject : nullptr;
  }
  void free_host(CUpti_Profiler_Host_Object*& host) const {
    if (host == nullptr) return;
    auto params = parameters<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    params.pHostObject = host;
    host_deinitialize(&params);
    host = nullptr;
  }
};

struct metrics_sampler::device_state {
  std::uint32_t device = 0;
  std::string chip;
  std::vector<std::uint8_t> availability;
  CUpti_Profiler_Host_Object* host = nullptr;  // the one-pass configuration, evaluates the samples
  std::vector<std::uint8_t> config;
  CUpti_PmSampling_Object* object = nullptr;
  std::vector<runtime::gpu_metric> metrics;
  std::vector<const char*> names;  // the metrics' names, for CUPTI
  std::vector<std::uint8_t> counter_data;
  std::size_t evaluated = 0;  // samples of the counter data image already handed over
  bool running = false;
  bool clock_known = false;
  sample_clock clock = sample_clock::cupti;
  std::unique_ptr<sample_converter> converter;
  std::vector<double> values;
};

std::unique_ptr<metrics_sampler> metrics_sampler::start(metrics_sampling_setting setting, std::string& error) {
  auto api = std::make_unique<functions>();
  if (const std::string missing = api->load(); !missing.empty()) {
    error = fmt::format("this libcupti has no PM sampling ({} is missing; CUDA 12.6 or newer has it)", missing);
    return nullptr;
  }
  return std::unique_ptr<metrics_sampler>(new metrics_sampler(setting, std::move(api)));
}

metrics_sampler::metrics_sampler(metrics_sampling_setting setting, std::unique_ptr<functions> api)
    : setting_(setting), api_(std::move(api)) {}

metrics_sampler::~metrics_sampler() = default;

void metrics_sampler::device_used(std::uint32_t device) {
  std::lock_guard lock{mutex_};
  waiting_devices_.insert(device);
}

void metrics_sampler::begin_sampling(std::uint32_t device) {
  if (devices_.count(device) != 0 || refused_devices_.count(device) != 0) return;
  if (devices_.empty() && refused_devices_.empty()) {
    // Once, with CUDA initialised: the profiler's hooks into the driver.
    auto params = parameters<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    if (const CUptiResult result = api_->profiler_initialize(&params); result != CUPTI_SUCCESS) {
      refused_devices_.insert(device);
      runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING: CUPTI's profiler did not start "
                                         "({}); no counters are sampled",
                                         cupti_error(result)));
      return;
    }
  }
  auto state = std::make_unique<device_state>();
  state->device = device;
  std::string error;
  if (!start_device(*state, error)) {
    refused_devices_.insert(device);
    api_->free_host(state->host);
    runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING: device {} is not sampled ({}); "
                                       "its activity is traced as without it",
                                       device, error));
    return;
  }
  devices_.emplace(device, std::move(state));
  // CUPTI's profiler loaded libnvperf_host for this set-up, which frees its
  // state in exit handlers of its own; ferret's final drain runs after them
  // (its handler was registered first), where a decode or a deinitialisation
  // frees twice (seen under ASan, H200, CUDA 13.0). Registered after the
  // profiler's, this handler runs before them.
  if (!exit_handler_registered_) {
    g_sampler_at_exit = this;
    exit_handler_registered_ = std::atexit(end_sampling_at_exit) == 0;
  }
}

bool metrics_sampler::start_device(device_state& state, std::string& error) {
  const functions& api = *api_;
  const auto failed = [&](const char* step, CUptiResult result) {
    error = result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                ? fmt::format("{}: profiling is reserved to administrators on this machine "
                              "(the driver's NVreg_RestrictProfilingToAdminUsers)",
                              step)
                : fmt::format("{}: {}", step, cupti_error(result));
    return false;
  };
  auto chip = parameters<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = state.device;
  if (const CUptiResult result = api.chip_name(&chip); result != CUPTI_SUCCESS)
    return failed("its chip name", result);
  state.chip = chip.pChipName != nullptr ? chip.pChipName : "";
  auto availability = parameters<CUpti_PmSampling_GetCounterAvailability_Params>(CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE);
  availability.deviceIndex = state.device;
  if (const CUptiResult result = api.counter_availability(&availability); result != CUPTI_SUCCESS)
    return failed("its counters", result);
  state.availability.resize(availability.counterAvailabilityImageSize);
  availability.pCounterAvailabilityImage = state.availability.data();
  if (const CUptiResult result = api.counter_availability(&availability); result != CUPTI_SUCCESS)
    return failed("its counters", result);

  CUpti_Profiler_Host_Object* probe = api.make_host(state.chip, state.availability);
  if (probe == nullptr) {
    error = fmt::format("CUPTI's profiler host does not know its chip {}", state.chip);
    return false;
  }
  // Why CUPTI refused the last metric or set, for the line that says none could be sampled.
  std::string refusal;
  const auto refused = [&](const char* step, CUptiResult result) {
    refusal = fmt::format("{}: {}", step, cupti_error(result));
    return metric_fit::refused;
  };
  const auto has = [&](const std::string& name) {
    auto properties = parameters<CUpti_Profiler_Host_GetMetricProperties_Params>(CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
    properties.pHostObject = probe;
    properties.pMetricName = name.c_str();
    const CUptiResult result = api.metric_properties(&properties);
    if (result != CUPTI_SUCCESS) refused("the metric's properties", result);
    return result == CUPTI_SUCCESS;
  };
  // Keeps the host object and config image of the last set that fits in one pass.
  const auto fits = [&](const std::vector<runtime::gpu_metric>& metrics) {
    CUpti_Profiler_Host_Object* host = api.make_host(state.chip, state.availability);
    if (host == nullptr) {
      refusal = "the profiler host did not initialise";
      return metric_fit::refused;
    }
    std::vector<const char*> names;
    for (const runtime::gpu_metric& metric : metrics) names.push_back(metric.name);
    auto add = parameters<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    auto size = parameters<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host;
    std::vector<std::uint8_t> config;
    auto image = parameters<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    auto passes = parameters<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    const auto succeeded = [&](const char* step, CUptiResult result) {
      if (result != CUPTI_SUCCESS) refused(step, result);
      return result == CUPTI_SUCCESS;
    };
    metric_fit fit = metric_fit::refused;
    if (succeeded("adding the metrics", api.add_metrics(&add)) &&
        succeeded("the configuration's size", api.config_image_size(&size))) {
      config.resize(size.configImageSize);
      image.pHostObject = host;
      image.configImageSize = config.size();
      image.pConfigImage = config.data();
      passes.configImageSize = config.size();
      passes.pConfigImage = config.data();
      if (succeeded("the configuration", api.config_image(&image)) && succeeded("its passes", api.passes(&passes)))
        fit = passes.numOfPasses == 1 ? metric_fit::one_pass : metric_fit::more_passes;
    }
    if (fit != metric_fit::one_pass) {
      api.free_host(host);
      return fit;
    }
    api.free_host(state.host);
    state.host = host;
    state.config = std::move(config);
    return metric_fit::one_pass;
  };
  const metric_selection selection = select_metrics(wanted_metrics(), has, fits);
  api.free_host(probe);
  if (selection.sampled.empty()) {
    error = fmt::format("none of its counters can be sampled ({}): {}", refusal, metric_names(wanted_metrics()));
    return false;
  }
  std::string missing;
  if (!selection.not_available.empty()) missing = "not available: " + metric_names(selection.not_available);
  if (!selection.left_out.empty())
    missing += fmt::format("{}left out, beyond one pass: {}", missing.empty() ? "" : "; ",
                           metric_names(selection.left_out));
  if (!missing.empty() && said_missing_.insert(missing).second)
    runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING: device {} ({}) samples {}; {}",
                                       state.device, state.chip, metric_names(selection.sampled), missing));
  state.metrics = selection.sampled;
  for (const runtime::gpu_metric& metric : state.metrics) state.names.push_back(metric.name);

  auto enable = parameters<CUpti_PmSampling_Enable_Params>(CUpti_PmSampling_Enable_Params_STRUCT_SIZE);
  enable.deviceIndex = state.device;
  if (const CUptiResult result = api.enable(&enable); result != CUPTI_SUCCESS) return failed("enabling", result);
  state.object = enable.pPmSamplingObject;
  const auto failed_enabled = [&](const char* step, CUptiResult result) {
    auto disable = parameters<CUpti_PmSampling_Disable_Params>(CUpti_PmSampling_Disable_Params_STRUCT_SIZE);
    disable.pPmSamplingObject = state.object;
    api.disable(&disable);
    state.object = nullptr;
    return failed(step, result);
  };
  auto config = parameters<CUpti_PmSampling_SetConfig_Params>(CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE);
  config.pPmSamplingObject = state.object;
  config.configSize = state.config.size();
  config.pConfig = state.config.data();
  config.hardwareBufferSize = hardware_buffer_bytes;
  config.samplingInterval = static_cast<std::uint64_t>(setting_.interval_ns);
  config.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;  // Ampere GA10x and newer
  config.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  if (const CUptiResult result = api.set_config(&config); result != CUPTI_SUCCESS)
    return failed_enabled("configuring (a GPU older than Ampere GA10x has no time-based trigger)", result);
  auto data_size = parameters<CUpti_PmSampling_GetCounterDataSize_Params>(CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE);
  data_size.pPmSamplingObject = state.object;
  data_size.pMetricNames = state.names.data();
  data_size.numMetrics = state.names.size();
  data_size.maxSamples = samples_per_image(setting_.interval_ns);
  if (const CUptiResult result = api.counter_data_size(&data_size); result != CUPTI_SUCCESS)
    return failed_enabled("its counter data", result);
  state.counter_data.resize(data_size.counterDataSize);
  auto initialize = parameters<CUpti_PmSampling_CounterDataImage_Initialize_Params>(CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  initialize.pPmSamplingObject = state.object;
  initialize.counterDataSize = state.counter_data.size();
  initialize.pCounterData = state.counter_data.data();
  if (const CUptiResult result = api.counter_data_initialize(&initialize); result != CUPTI_SUCCESS)
    return failed_enabled("its counter data", result);
  auto start = parameters<CUpti_PmSampling_Start_Params>(CUpti_PmSampling_Start_Params_STRUCT_SIZE);
  start.pPmSamplingObject = state.object;
  if (const CUptiResult result = api.start(&start); result != CUPTI_SUCCESS)
    return failed_enabled("starting", result);
  state.running = true;
  state.converter = std::make_unique<sample_converter>(state.device, state.metrics.size());
  state.values.resize(state.metrics.size());
  new_sets_.push_back({state.device, state.metrics, setting_.interval_ns});
  return true;
}

void metrics_sampler::end_sampling_at_exit() {
  if (g_sampler_at_exit != nullptr) g_sampler_at_exit->end_sampling();
}

void metrics_sampler::end_sampling() {
  std::lock_guard lock{mutex_};
  for (auto& [device, state] : devices_)
    if (state->running) decode_last(*state, ended_batches_);
  ended_ = true;
}

void metrics_sampler::decode_last(device_state& state, std::vector<runtime::gpu_metric_batch>& batches) {
  // What the GPU sampled up to now, then nothing more.
  auto stop_params = parameters<CUpti_PmSampling_Stop_Params>(CUpti_PmSampling_Stop_Params_STRUCT_SIZE);
  stop_params.pPmSamplingObject = state.object;
  api_->stop(&stop_params);
  decode(state, batches);
  stop(state);
}

void metrics_sampler::take(std::vector<runtime::gpu_metric_set>& new_sets,
                           std::vector<runtime::gpu_metric_batch>& batches, bool final) {
  std::lock_guard lock{mutex_};
  if (!final && !ended_) {
    for (const std::uint32_t device : waiting_devices_) begin_sampling(device);
    waiting_devices_.clear();
  }
  new_sets.insert(new_sets.end(), new_sets_.begin(), new_sets_.end());
  new_sets_.clear();
  for (auto& batch : ended_batches_) batches.push_back(std::move(batch));
  ended_batches_.clear();
  for (auto& [device, state] : devices_) {
    if (!state->running) continue;
    if (final)
      decode_last(*state, batches);
    else
      decode(*state, batches);
  }
  if (final && overflows_ > 0)
    runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING: the GPU's sample buffer ({} MiB) "
                                       "overflowed {} times and samples were lost "
                                       "(gpu-metric-hardware-buffer-overflows); a longer interval or a "
                                       "shorter FERRET_FLUSH_INTERVAL avoids it",
                                       hardware_buffer_bytes >> 20, overflows_));
}

void metrics_sampler::decode(device_state& state, std::vector<runtime::gpu_metric_batch>& batches) {
  runtime::gpu_metric_batch batch;
  batch.device = state.device;
  // A full counter data image is emptied and the decode goes on; bounded, so
  // that a GPU sampling faster than this decodes cannot keep the drain here.
  for (int round = 0; round < 16; ++round) {
    auto params = parameters<CUpti_PmSampling_DecodeData_Params>(CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE);
    params.pPmSamplingObject = state.object;
    params.pCounterDataImage = state.counter_data.data();
    params.counterDataImageSize = state.counter_data.size();
    const CUptiResult result = api_->decode(&params);
    // Overflow: records were lost, those decoded are still good.
    if (params.overflow != 0 || result == CUPTI_ERROR_OUT_OF_MEMORY) ++overflows_;
    if (result != CUPTI_SUCCESS && result != CUPTI_ERROR_OUT_OF_MEMORY) {
      ++decode_failures_;
      if (!said_decode_failed_) {
        said_decode_failed_ = true;
        runtime::print_message(fmt::format("FERRET_CUDA_METRICS_SAMPLING: decoding device {}'s samples "
                                           "failed ({}); its sampling stops",
                                           state.device, cupti_error(result)));
      }
      stop(state);
      break;
    }
    auto info = parameters<CUpti_PmSampling_GetCounterDataInfo_Params>(CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = state.counter_data.data();
    info.counterDataImageSize = state.counter_data.size();
    if (api_->counter_data_info(&info) != CUPTI_SUCCESS) break;
    evaluate(state, state.evaluated, info.numCompletedSamples, batch);
    state.evaluated = std::max(state.evaluated, info.numCompletedSamples);
    if (params.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
    auto reset = parameters<CUpti_PmSampling_CounterDataImage_Initialize_Params>(CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    reset.pPmSamplingObject = state.object;
    reset.counterDataSize = state.counter_data.size();
    reset.pCounterData = state.counter_data.data();
    if (api_->counter_data_initialize(&reset) != CUPTI_SUCCESS) break;
    state.evaluated = 0;
  }
  if (!batch.intervals.empty()) batches.push_back(std::move(batch));
}

void metrics_sampler::evaluate(device_state& state, std::size_t first, std::size_t completed,
                               runtime::gpu_metric_batch& batch) {
  if (first >= completed) return;
  const auto sample_times = [&](std::size_t index, std::uint64_t& start, std::uint64_t& end) {
    auto info = parameters<CUpti_PmSampling_CounterData_GetSampleInfo_Params>(CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE);
    info.pPmSamplingObject = state.object;
    info.pCounterDataImage = state.counter_data.data();
    info.counterDataImageSize = state.counter_data.size();
    info.sampleIndex = index;
    if (api_->sample_info(&info) != CUPTI_SUCCESS) return false;
    start = info.startTimestamp;
    end = info.endTimestamp;
    return true;
  };
  // The offset from CUPTI's clock to CLOCK_MONOTONIC_RAW, read now.
  const cupti_clock_reading now = read_cupti_clock();
  const std::int64_t raw_now = now.monotonic_raw_ns;
  const std::uint64_t cupti_now = now.cupti_ns;
  if (!state.clock_known) {
    std::uint64_t start = 0, end = 0;
    if (!sample_times(completed - 1, start, end)) return;
    state.clock = sample_clock_of(end, raw_now, cupti_now);
    state.clock_known = true;
    clock_ = state.clock == sample_clock::monotonic_raw ? "CLOCK_MONOTONIC_RAW" : "cuptiGetTimestamp";
  }
  const std::int64_t offset =
      state.clock == sample_clock::monotonic_raw ? 0 : raw_now - static_cast<std::int64_t>(cupti_now);
  for (std::size_t index = first; index < completed; ++index) {
    std::uint64_t start = 0, end = 0;
    auto values = parameters<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    values.pHostObject = state.host;
    values.pCounterDataImage = state.counter_data.data();
    values.counterDataImageSize = state.counter_data.size();
    values.rangeIndex = index;
    values.ppMetricNames = state.names.data();
    values.numMetrics = state.names.size();
    values.pMetricValues = state.values.data();
    if (!sample_times(index, start, end) || api_->evaluate(&values) != CUPTI_SUCCESS) {
      start = end = 0;  // dropped and counted by the converter
    }
    ++samples_;
    state.converter->add(start, end, state.values.data(), offset, batch);
  }
}

void metrics_sampler::stop(device_state& state) {
  if (!state.running) return;
  auto disable = parameters<CUpti_PmSampling_Disable_Params>(CUpti_PmSampling_Disable_Params_STRUCT_SIZE);
  disable.pPmSamplingObject = state.object;
  api_->disable(&disable);
  state.object = nullptr;
  api_->free_host(state.host);
  state.running = false;
}

void metrics_sampler::add_metadata(runtime::metadata_list& metadata) const {
  std::lock_guard lock{mutex_};
  std::uint64_t dropped = 0;
  for (const auto& [device, state] : devices_) dropped += state->converter->dropped();
  const auto number = [](std::uint64_t value) { return static_cast<std::int64_t>(value); };
  metadata.emplace_back("gpu-metric-samples", number(samples_));
  metadata.emplace_back("gpu-metric-samples-dropped", number(dropped));
  metadata.emplace_back("gpu-metric-hardware-buffer-overflows", number(overflows_));
  metadata.emplace_back("gpu-metric-decode-failures", number(decode_failures_));
  metadata.emplace_back("gpu-metric-devices-refused", number(refused_devices_.size()));
  if (!clock_.empty()) metadata.emplace_back("gpu-metric-clock", clock_);
}

}  // namespace ferret::cupti
