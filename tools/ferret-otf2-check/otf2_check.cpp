#include "otf2_check.hpp"

#include <fmt/format.h>
#include <otf2/otf2.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <unordered_map>
#include <vector>

namespace ferret::otf2_check {
namespace {

struct state {
  report* out = nullptr;
  std::unordered_map<std::uint32_t, std::string> strings;
  struct region_info { std::uint32_t name; int paradigm; };
  std::unordered_map<std::uint32_t, region_info> regions;
  struct attribute_info { std::uint32_t name; OTF2_Type type; };
  std::unordered_map<std::uint32_t, attribute_info> attributes;
  std::unordered_map<std::uint32_t, std::uint32_t> metric_members;  // member → name string
  std::unordered_map<std::uint32_t, std::uint32_t> metric_classes;  // class → first member
  struct open_region { std::uint32_t region; OTF2_TimeStamp entered; };
  std::unordered_map<std::uint64_t, std::vector<open_region>> stacks;
  std::uint64_t ticks_per_second = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> last_time;
  std::unordered_map<std::uint64_t, std::uint64_t> open_rma;  // matching id → location
  // MPI: open non-blocking requests per (location, request id), 1 send, 2 receive;
  // collectives begun and not ended per location.
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> open_requests;
  std::map<std::uint64_t, std::uint64_t> open_collectives;
  std::uint64_t errors = 0;

  void error(std::string text) {
    if (++errors <= 50) out->errors.push_back(std::move(text));
  }
  std::string string(std::uint32_t ref) const {
    const auto it = strings.find(ref);
    return it == strings.end() ? fmt::format("<undefined string {}>", ref) : it->second;
  }
  std::string region_name(std::uint32_t region) const {
    const auto it = regions.find(region);
    return it == regions.end() ? fmt::format("<undefined region {}>", region) : string(it->second.name);
  }
  std::uint64_t to_ns(std::uint64_t ticks) const {
    if (ticks_per_second == 0 || ticks_per_second == 1'000'000'000) return ticks;
    return static_cast<std::uint64_t>(static_cast<double>(ticks) * 1e9 /
                                      static_cast<double>(ticks_per_second));
  }
  // Every attribute of an event: defined, counted, string values kept.
  void attributes_of(OTF2_AttributeList* list, OTF2_LocationRef location) {
    if (list == nullptr) return;
    const uint32_t count = OTF2_AttributeList_GetNumberOfElements(list);
    for (uint32_t i = 0; i < count; ++i) {
      OTF2_AttributeRef ref = 0;
      OTF2_Type type = OTF2_TYPE_NONE;
      OTF2_AttributeValue value;
      if (OTF2_AttributeList_GetAttributeByIndex(list, i, &ref, &type, &value) != OTF2_SUCCESS)
        continue;
      const auto it = attributes.find(ref);
      if (it == attributes.end()) {
        error(fmt::format("location {}: event with undefined attribute {}", location, ref));
        continue;
      }
      if (it->second.type != type)
        error(fmt::format("attribute '{}' with type {} defined as {}", string(it->second.name),
                          static_cast<int>(type), static_cast<int>(it->second.type)));
      const std::string name = string(it->second.name);
      ++out->attribute_counts[name];
      if (type == OTF2_TYPE_STRING) out->attribute_strings[name].insert(string(value.stringRef));
    }
  }
  // Every event: a defined location, time not going backwards.
  void event(OTF2_LocationRef location, OTF2_TimeStamp time, const char* what) {
    const auto it = out->locations.find(location);
    if (it == out->locations.end()) {
      error(fmt::format("{} on undefined location {}", what, location));
      return;
    }
    ++it->second.events_read;
    auto [last, inserted] = last_time.emplace(location, time);
    if (!inserted) {
      if (time < last->second)
        error(fmt::format("location {} ({}): {} at {} before the previous event at {}", location,
                          it->second.name, what, time, last->second));
      last->second = time;
    }
  }
};

state& of(void* data) { return *static_cast<state*>(data); }

OTF2_CallbackCode on_string(void* data, OTF2_StringRef self, const char* text) {
  of(data).strings[self] = text;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_region(void* data, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                            OTF2_StringRef, OTF2_RegionRole, OTF2_Paradigm paradigm,
                            OTF2_RegionFlag, OTF2_StringRef, uint32_t, uint32_t) {
  state& s = of(data);
  s.regions[self] = {name, paradigm};
  s.out->region_paradigms[s.string(name)] = paradigm;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_location_group(void* data, OTF2_LocationGroupRef self, OTF2_StringRef,
                                    OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef,
                                    OTF2_LocationGroupRef) {
  of(data).out->location_group_types[self] = type;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_location(void* data, OTF2_LocationRef self, OTF2_StringRef name,
                              OTF2_LocationType type, uint64_t events, OTF2_LocationGroupRef group) {
  state& s = of(data);
  location_summary& l = s.out->locations[self];
  l.name = s.string(name);
  l.type = type;
  l.group = group;
  l.events_defined = events;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_attribute(void* data, OTF2_AttributeRef self, OTF2_StringRef name,
                               OTF2_StringRef, OTF2_Type type) {
  of(data).attributes[self] = {name, type};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_metric_member(void* data, OTF2_MetricMemberRef self, OTF2_StringRef name,
                                   OTF2_StringRef, OTF2_MetricType, OTF2_MetricMode, OTF2_Type,
                                   OTF2_Base, int64_t, OTF2_StringRef) {
  of(data).metric_members[self] = name;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_metric_class(void* data, OTF2_MetricRef self, uint8_t count,
                                  const OTF2_MetricMemberRef* members, OTF2_MetricOccurrence,
                                  OTF2_RecorderKind) {
  if (count > 0) of(data).metric_classes[self] = members[0];
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_clock(void* data, uint64_t resolution, uint64_t, uint64_t, uint64_t) {
  of(data).out->timer_resolution = resolution;
  of(data).ticks_per_second = resolution;
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_enter(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                           OTF2_AttributeList* attributes, OTF2_RegionRef region) {
  state& s = of(data);
  s.event(location, time, "Enter");
  s.attributes_of(attributes, location);
  if (s.regions.find(region) == s.regions.end())
    s.error(fmt::format("Enter of undefined region {} on location {}", region, location));
  s.out->regions.insert(s.region_name(region));
  s.stacks[location].push_back({region, time});
  ++s.out->locations[location].enters;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_leave(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                           OTF2_AttributeList* attributes, OTF2_RegionRef region) {
  state& s = of(data);
  s.event(location, time, "Leave");
  s.attributes_of(attributes, location);
  std::vector<state::open_region>& stack = s.stacks[location];
  if (stack.empty()) {
    s.error(fmt::format("location {}: Leave of '{}' with no region open", location,
                        s.region_name(region)));
  } else if (stack.back().region != region) {
    s.error(fmt::format("location {}: Leave of '{}' while '{}' is innermost", location,
                        s.region_name(region), s.region_name(stack.back().region)));
    stack.pop_back();
  } else {
    region_total& total = s.out->region_totals[s.region_name(region)];
    ++total.calls;
    total.inclusive_ns += s.to_ns(time - stack.back().entered);
    stack.pop_back();
  }
  ++s.out->locations[location].leaves;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_metric(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                            OTF2_AttributeList*, OTF2_MetricRef metric, uint8_t count,
                            const OTF2_Type* types, const OTF2_MetricValue* values) {
  state& s = of(data);
  s.event(location, time, "Metric");
  ++s.out->metric_samples;
  const auto it = s.metric_classes.find(metric);
  if (it == s.metric_classes.end()) {
    s.error(fmt::format("location {}: Metric of undefined metric class {}", location, metric));
  } else if (count > 0) {
    const auto member = s.metric_members.find(it->second);
    const std::string name = member == s.metric_members.end()
                                 ? fmt::format("<undefined metric member {}>", it->second)
                                 : s.string(member->second);
    double value = 0;
    switch (types[0]) {
      case OTF2_TYPE_DOUBLE: value = values[0].floating_point; break;
      case OTF2_TYPE_INT64: value = static_cast<double>(values[0].signed_int); break;
      default: value = static_cast<double>(values[0].unsigned_int); break;
    }
    s.out->last_metric_values[name] = value;
    ++s.out->metric_sample_counts[name];
  }
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_buffer_flush(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                                  OTF2_AttributeList*, OTF2_TimeStamp stop) {
  state& s = of(data);
  s.event(location, time, "BufferFlush");
  s.last_time[location] = std::max(s.last_time[location], stop);
  ++s.out->buffer_flushes;
  return OTF2_CALLBACK_SUCCESS;
}
void mpi_request(state& s, OTF2_LocationRef location, std::uint64_t request, int kind, bool opens) {
  const auto key = std::make_pair(std::uint64_t{location}, request);
  if (opens) {
    if (!s.open_requests.emplace(key, kind).second)
      s.error(fmt::format("location {}: MPI request {} posted twice", location, request));
    return;
  }
  const auto it = s.open_requests.find(key);
  if (it == s.open_requests.end() || it->second != kind)
    s.error(fmt::format("location {}: MPI request {} completed but never posted", location, request));
  else
    s.open_requests.erase(it);
}
OTF2_CallbackCode on_mpi_send(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                              OTF2_AttributeList*, uint32_t, OTF2_CommRef, uint32_t, uint64_t) {
  of(data).event(location, time, "MpiSend");
  ++of(data).out->mpi_sends;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_isend(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                               OTF2_AttributeList*, uint32_t, OTF2_CommRef, uint32_t, uint64_t,
                               uint64_t request) {
  of(data).event(location, time, "MpiIsend");
  ++of(data).out->mpi_sends;
  mpi_request(of(data), location, request, 1, true);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_isend_complete(OTF2_LocationRef location, OTF2_TimeStamp time,
                                        void* data, OTF2_AttributeList*, uint64_t request) {
  of(data).event(location, time, "MpiIsendComplete");
  mpi_request(of(data), location, request, 1, false);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_recv(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                              OTF2_AttributeList*, uint32_t, OTF2_CommRef, uint32_t, uint64_t) {
  of(data).event(location, time, "MpiRecv");
  ++of(data).out->mpi_receives;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_irecv_request(OTF2_LocationRef location, OTF2_TimeStamp time,
                                       void* data, OTF2_AttributeList*, uint64_t request) {
  of(data).event(location, time, "MpiIrecvRequest");
  mpi_request(of(data), location, request, 2, true);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_irecv(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                               OTF2_AttributeList*, uint32_t, OTF2_CommRef, uint32_t, uint64_t,
                               uint64_t request) {
  of(data).event(location, time, "MpiIrecv");
  ++of(data).out->mpi_receives;
  mpi_request(of(data), location, request, 2, false);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_collective_begin(OTF2_LocationRef location, OTF2_TimeStamp time,
                                          void* data, OTF2_AttributeList*) {
  of(data).event(location, time, "MpiCollectiveBegin");
  ++of(data).open_collectives[location];
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_mpi_collective_end(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                                        OTF2_AttributeList*, OTF2_CollectiveOp, OTF2_CommRef,
                                        uint32_t, uint64_t, uint64_t) {
  state& s = of(data);
  s.event(location, time, "MpiCollectiveEnd");
  ++s.out->mpi_collectives;
  if (s.open_collectives[location] == 0)
    s.error(fmt::format("location {}: MpiCollectiveEnd without MpiCollectiveBegin", location));
  else
    --s.open_collectives[location];
  return OTF2_CALLBACK_SUCCESS;
}
void rma_start(state& s, OTF2_LocationRef location, uint32_t remote, uint64_t matching) {
  if (s.out->locations.find(remote) == s.out->locations.end())
    s.error(fmt::format("RMA on location {} with undefined remote {}", location, remote));
  if (!s.open_rma.emplace(matching, location).second)
    s.error(fmt::format("RMA matching id {} started twice", matching));
}
OTF2_CallbackCode on_get(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                         OTF2_AttributeList* attributes, OTF2_RmaWinRef, uint32_t remote,
                         uint64_t bytes, uint64_t matching) {
  state& s = of(data);
  s.event(location, time, "RmaGet");
  s.attributes_of(attributes, location);
  ++s.out->rma_gets;
  s.out->get_bytes += bytes;
  rma_start(s, location, remote, matching);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_put(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                         OTF2_AttributeList* attributes, OTF2_RmaWinRef, uint32_t remote,
                         uint64_t bytes, uint64_t matching) {
  state& s = of(data);
  s.event(location, time, "RmaPut");
  s.attributes_of(attributes, location);
  ++s.out->rma_puts;
  s.out->put_bytes += bytes;
  rma_start(s, location, remote, matching);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_complete(OTF2_LocationRef location, OTF2_TimeStamp time, void* data,
                              OTF2_AttributeList*, OTF2_RmaWinRef, uint64_t matching) {
  state& s = of(data);
  s.event(location, time, "RmaOpCompleteBlocking");
  ++s.out->rma_completions;
  const auto it = s.open_rma.find(matching);
  if (it == s.open_rma.end() || it->second != location)
    s.error(fmt::format("RmaOpCompleteBlocking of unknown matching id {} on location {}", matching,
                        location));
  else
    s.open_rma.erase(it);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_marker(void* data, OTF2_TimeStamp, OTF2_TimeStamp, OTF2_MarkerRef,
                            OTF2_MarkerScope, uint64_t, const char* text) {
  of(data).out->markers.emplace_back(text);
  return OTF2_CALLBACK_SUCCESS;
}

}  // namespace

report check_archive(const std::string& anchor) {
  report out;
  state s;
  s.out = &out;
  OTF2_Reader* reader = OTF2_Reader_Open(anchor.c_str());
  if (reader == nullptr) {
    out.errors.push_back("cannot open " + anchor);
    return out;
  }
  const auto fail = [&](OTF2_ErrorCode code, const char* what) {
    if (code == OTF2_SUCCESS) return false;
    s.error(fmt::format("{}: {}", what, OTF2_Error_GetDescription(code)));
    return true;
  };
  OTF2_Reader_SetSerialCollectiveCallbacks(reader);

  uint32_t property_count = 0;
  char** names = nullptr;
  if (OTF2_Reader_GetPropertyNames(reader, &property_count, &names) == OTF2_SUCCESS) {
    for (uint32_t i = 0; i < property_count; ++i) {
      char* value = nullptr;
      if (OTF2_Reader_GetProperty(reader, names[i], &value) == OTF2_SUCCESS) {
        out.properties[names[i]] = value;
        std::free(value);
      }
    }
    std::free(names);
  }

  OTF2_GlobalDefReader* defs = OTF2_Reader_GetGlobalDefReader(reader);
  OTF2_GlobalDefReaderCallbacks* def_callbacks = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(def_callbacks, on_string);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(def_callbacks, on_region);
  OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(def_callbacks, on_location_group);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(def_callbacks, on_location);
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(def_callbacks, on_clock);
  OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(def_callbacks, on_attribute);
  OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(def_callbacks, on_metric_member);
  OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(def_callbacks, on_metric_class);
  OTF2_Reader_RegisterGlobalDefCallbacks(reader, defs, def_callbacks, &s);
  OTF2_GlobalDefReaderCallbacks_Delete(def_callbacks);
  uint64_t read = 0;
  if (fail(OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &read), "global definitions")) {
    OTF2_Reader_Close(reader);
    return out;
  }
  OTF2_Reader_CloseGlobalDefReader(reader, defs);
  if (out.locations.empty()) {
    // OTF2's event reader then fails ("The structural integrity is not
    // given") and otf2-print prints no events: no reader reads such an archive.
    out.errors.push_back("no locations: otf2-print and the OTF2 readers read no archive without one");
    OTF2_Reader_Close(reader);
    return out;
  }

  for (const auto& [id, location] : out.locations) OTF2_Reader_SelectLocation(reader, id);
  const bool have_defs = OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS;
  OTF2_Reader_OpenEvtFiles(reader);
  for (const auto& [id, location] : out.locations) {
    if (have_defs) {
      OTF2_DefReader* local = OTF2_Reader_GetDefReader(reader, id);
      if (local != nullptr) {
        uint64_t ignored = 0;
        OTF2_Reader_ReadAllLocalDefinitions(reader, local, &ignored);
        OTF2_Reader_CloseDefReader(reader, local);
      }
    }
    OTF2_Reader_GetEvtReader(reader, id);
  }
  if (have_defs) OTF2_Reader_CloseDefFiles(reader);

  OTF2_GlobalEvtReader* events = OTF2_Reader_GetGlobalEvtReader(reader);
  OTF2_GlobalEvtReaderCallbacks* evt_callbacks = OTF2_GlobalEvtReaderCallbacks_New();
  OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(evt_callbacks, on_enter);
  OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(evt_callbacks, on_leave);
  OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(evt_callbacks, on_metric);
  OTF2_GlobalEvtReaderCallbacks_SetBufferFlushCallback(evt_callbacks, on_buffer_flush);
  OTF2_GlobalEvtReaderCallbacks_SetRmaGetCallback(evt_callbacks, on_get);
  OTF2_GlobalEvtReaderCallbacks_SetRmaPutCallback(evt_callbacks, on_put);
  OTF2_GlobalEvtReaderCallbacks_SetRmaOpCompleteBlockingCallback(evt_callbacks, on_complete);
  OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(evt_callbacks, on_mpi_send);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(evt_callbacks, on_mpi_isend);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(evt_callbacks, on_mpi_isend_complete);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(evt_callbacks, on_mpi_recv);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(evt_callbacks, on_mpi_irecv_request);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(evt_callbacks, on_mpi_irecv);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(evt_callbacks, on_mpi_collective_begin);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(evt_callbacks, on_mpi_collective_end);
  OTF2_Reader_RegisterGlobalEvtCallbacks(reader, events, evt_callbacks, &s);
  OTF2_GlobalEvtReaderCallbacks_Delete(evt_callbacks);
  fail(OTF2_Reader_ReadAllGlobalEvents(reader, events, &read), "events");
  OTF2_Reader_CloseGlobalEvtReader(reader, events);
  OTF2_Reader_CloseEvtFiles(reader);

  // Markers live in <archive>.marker, written only when there are markers
  // (asking for a reader without one makes OTF2 print errors).
  const std::string marker_file =
      anchor.substr(0, anchor.size() - (anchor.size() >= 5 ? 5 : 0)) + ".marker";
  OTF2_MarkerReader* markers = nullptr;
  if (std::ifstream{marker_file}.good()) markers = OTF2_Reader_GetMarkerReader(reader);
  if (markers != nullptr) {
    OTF2_MarkerReaderCallbacks* marker_callbacks = OTF2_MarkerReaderCallbacks_New();
    OTF2_MarkerReaderCallbacks_SetMarkerCallback(marker_callbacks, on_marker);
    OTF2_Reader_RegisterMarkerCallbacks(reader, markers, marker_callbacks, &s);
    OTF2_MarkerReaderCallbacks_Delete(marker_callbacks);
    OTF2_Reader_ReadAllMarkers(reader, markers, &read);
  }
  OTF2_Reader_Close(reader);

  for (const auto& [location, stack] : s.stacks)
    if (!stack.empty())
      s.error(fmt::format("location {}: {} regions never left (innermost '{}')", location,
                          stack.size(), s.region_name(stack.back().region)));
  for (const auto& [matching, location] : s.open_rma)
    s.error(fmt::format("location {}: RMA operation {} never completed", location, matching));
  for (const auto& [key, kind] : s.open_requests)
    s.error(fmt::format("location {}: MPI {} request {} never completed", key.first,
                        kind == 1 ? "send" : "receive", key.second));
  for (const auto& [location, open] : s.open_collectives)
    if (open != 0) s.error(fmt::format("location {}: {} MPI collectives never ended", location, open));
  for (const auto& [id, location] : out.locations)
    if (location.events_read != location.events_defined)
      s.error(fmt::format("location {} ({}): {} events read, {} defined", id, location.name,
                          location.events_read, location.events_defined));
  if (out.timer_resolution == 0) s.error("no clock properties");
  if (s.errors > 50) out.errors.push_back(fmt::format("... {} errors in all", s.errors));
  return out;
}

}  // namespace ferret::otf2_check
