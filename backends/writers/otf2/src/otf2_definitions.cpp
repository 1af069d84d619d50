// See otf2_definitions.hpp.
#include "otf2_definitions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace ferret::otf2 {
namespace {

// ---------------------------------------------------------------------------
// Serialisation: every field as 8 little-endian-as-in-memory bytes (the ranks
// of one run share the architecture), strings and arrays with their length.

class byte_writer {
 public:
  template <class T>
  std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>> operator()(const T& value) {
    const auto wide = static_cast<std::uint64_t>(value);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&wide);
    out_.insert(out_.end(), bytes, bytes + sizeof wide);
  }
  void operator()(const std::string& text) {
    (*this)(text.size());
    out_.insert(out_.end(), text.begin(), text.end());
  }
  void operator()(const std::vector<std::uint64_t>& values) {
    (*this)(values.size());
    for (const std::uint64_t v : values) (*this)(v);
  }
  void operator()(const std::vector<std::uint32_t>& values) {
    (*this)(values.size());
    for (const std::uint32_t v : values) (*this)(v);
  }
  template <class T>
  std::enable_if_t<std::is_class_v<T>> operator()(const T& record);  // below
  template <class T>
  void operator()(const std::vector<T>& records) {
    (*this)(records.size());
    for (const T& record : records) (*this)(record);
  }
  std::vector<unsigned char> take() { return std::move(out_); }

 private:
  std::vector<unsigned char> out_;
};

class byte_reader {
 public:
  byte_reader(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}

  template <class T>
  std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>> operator()(T& value) {
    std::uint64_t wide = 0;
    if (!take(&wide, sizeof wide)) return;
    value = static_cast<T>(wide);
  }
  void operator()(std::string& text) {
    std::size_t length = 0;
    (*this)(length);
    if (!fits(length)) return;
    text.assign(reinterpret_cast<const char*>(data_ + at_), length);
    at_ += length;
  }
  template <class T>
  void operator()(std::vector<T>& values) {
    std::size_t count = 0;
    (*this)(count);
    // Every element takes at least 8 bytes: a larger count is corrupt.
    if (!ok_ || count > (size_ - at_) / 8) {
      ok_ = false;
      return;
    }
    values.assign(count, T{});
    for (T& value : values) (*this)(value);
  }
  template <class T>
  std::enable_if_t<std::is_class_v<T>> operator()(T& record);  // below

  bool ok() const noexcept { return ok_; }
  bool at_end() const noexcept { return at_ == size_; }

 private:
  bool fits(std::size_t bytes) {
    if (!ok_ || bytes > size_ - at_) ok_ = false;
    return ok_;
  }
  bool take(void* to, std::size_t bytes) {
    if (!fits(bytes)) return false;
    std::memcpy(to, data_ + at_, bytes);
    at_ += bytes;
    return true;
  }

  const unsigned char* data_;
  std::size_t size_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

// The fields of each record, for both directions (R may be const).
template <class A, class R>
void fields(A& a, R& r) {
  using T = std::remove_const_t<R>;
  if constexpr (std::is_same_v<T, region_definition>) {
    a(r.name), a(r.canonical_name), a(r.description), a(r.role), a(r.paradigm), a(r.flags),
        a(r.file), a(r.begin_line), a(r.end_line);
  } else if constexpr (std::is_same_v<T, metric_definition>) {
    a(r.name), a(r.description), a(r.unit), a(r.metric_type), a(r.mode), a(r.value_type),
        a(r.occurrence), a(r.recorder);
  } else if constexpr (std::is_same_v<T, attribute_definition>) {
    a(r.name), a(r.description), a(r.type);
  } else if constexpr (std::is_same_v<T, system_tree_node_definition>) {
    a(r.name), a(r.class_name), a(r.parent);
  } else if constexpr (std::is_same_v<T, location_group_definition>) {
    a(r.name), a(r.type), a(r.system_tree_parent), a(r.creator);
  } else if constexpr (std::is_same_v<T, location_definition>) {
    a(r.id), a(r.name), a(r.type), a(r.events), a(r.group);
  } else if constexpr (std::is_same_v<T, group_definition>) {
    a(r.name), a(r.type), a(r.paradigm), a(r.flags), a(r.members);
  } else if constexpr (std::is_same_v<T, comm_definition>) {
    a(r.name), a(r.group), a(r.parent), a(r.flags);
  } else if constexpr (std::is_same_v<T, rma_window_definition>) {
    a(r.name), a(r.comm), a(r.flags);
  } else if constexpr (std::is_same_v<T, marker_definition>) {
    a(r.group), a(r.category), a(r.severity);
  } else if constexpr (std::is_same_v<T, marker>) {
    a(r.time), a(r.duration), a(r.definition), a(r.scope), a(r.scope_ref), a(r.text);
  } else if constexpr (std::is_same_v<T, property>) {
    a(r.name), a(r.value), a(r.summed);
  } else if constexpr (std::is_same_v<T, clock_definition>) {
    a(r.resolution), a(r.offset), a(r.length), a(r.realtime);
  } else if constexpr (std::is_same_v<T, definitions>) {
    a(r.clock), a(r.strings), a(r.regions), a(r.metrics), a(r.attributes), a(r.system_tree_nodes),
        a(r.location_groups), a(r.locations), a(r.groups), a(r.comms), a(r.rma_windows),
        a(r.marker_definitions), a(r.markers), a(r.properties);
  } else {
    static_assert(std::is_same_v<T, id_mappings>);
    a(r.strings), a(r.regions), a(r.metrics), a(r.attributes), a(r.system_tree_nodes),
        a(r.location_groups), a(r.groups), a(r.comms), a(r.rma_windows), a(r.marker_definitions);
  }
}

template <class T>
std::enable_if_t<std::is_class_v<T>> byte_writer::operator()(const T& record) {
  fields(*this, record);
}
template <class T>
std::enable_if_t<std::is_class_v<T>> byte_reader::operator()(T& record) {
  fields(*this, record);
}

template <class T>
bool read_all(const unsigned char* data, std::size_t size, T& into, std::string& error) {
  byte_reader reader{data, size};
  reader(into);
  if (reader.ok() && reader.at_end()) return true;
  error = fmt::format("malformed definitions ({} bytes)", size);
  return false;
}

// ---------------------------------------------------------------------------
// Unification

// A definition's identity: its serialised fields (references already global).
template <class T>
std::string key_of(const T& definition) {
  byte_writer writer;
  writer(definition);
  const std::vector<unsigned char> bytes = writer.take();
  return {bytes.begin(), bytes.end()};
}

template <class T>
class unique_table {
 public:
  explicit unique_table(std::vector<T>& table) : table_(table) {}
  std::uint32_t add(const T& definition) {
    auto [it, inserted] = index_.emplace(key_of(definition), 0U);
    if (inserted) {
      it->second = static_cast<std::uint32_t>(table_.size());
      table_.push_back(definition);
    }
    return it->second;
  }

 private:
  std::vector<T>& table_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

std::uint32_t mapped(const std::vector<std::uint32_t>& map, std::uint32_t local) {
  return local < map.size() ? map[local] : undefined_ref;
}

std::uint64_t parse_count(const std::string& text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace

std::vector<unsigned char> serialize(const definitions& local) {
  byte_writer writer;
  writer(local);
  return writer.take();
}

bool deserialize(const unsigned char* data, std::size_t size, definitions& local,
                 std::string& error) {
  return read_all(data, size, local, error);
}

std::vector<unsigned char> serialize(const id_mappings& mappings) {
  byte_writer writer;
  writer(mappings);
  return writer.take();
}

bool deserialize(const unsigned char* data, std::size_t size, id_mappings& mappings,
                 std::string& error) {
  return read_all(data, size, mappings, error);
}

definitions unify(const std::vector<definitions>& ranks, std::vector<id_mappings>& mappings) {
  definitions global;
  mappings.assign(ranks.size(), {});

  // Clock: from the earliest start to the latest end.
  bool first_clock = true;
  std::uint64_t end = 0;
  for (const definitions& rank : ranks) {
    if (first_clock || rank.clock.offset < global.clock.offset) {
      global.clock.offset = rank.clock.offset;
      global.clock.realtime = rank.clock.realtime;
      global.clock.resolution = rank.clock.resolution;
    }
    first_clock = false;
    end = std::max(end, rank.clock.offset + rank.clock.length);
  }
  global.clock.length = end - global.clock.offset;

  std::unordered_map<std::string, std::uint32_t> string_ids;
  unique_table<region_definition> regions{global.regions};
  unique_table<metric_definition> metrics{global.metrics};
  unique_table<attribute_definition> attributes{global.attributes};
  unique_table<system_tree_node_definition> nodes{global.system_tree_nodes};
  unique_table<group_definition> groups{global.groups};
  unique_table<comm_definition> comms{global.comms};
  unique_table<rma_window_definition> windows{global.rma_windows};
  unique_table<marker_definition> marker_definitions{global.marker_definitions};
  std::map<OTF2_Paradigm, std::uint32_t> comm_locations;  // paradigm → the joined group
  std::map<std::string, std::size_t> property_index;

  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const definitions& rank = ranks[r];
    id_mappings& m = mappings[r];
    for (const std::string& text : rank.strings) {
      auto [it, inserted] =
          string_ids.emplace(text, static_cast<std::uint32_t>(global.strings.size()));
      if (inserted) global.strings.push_back(text);
      m.strings.push_back(it->second);
    }
    auto string = [&](std::uint32_t local) { return mapped(m.strings, local); };

    for (region_definition region : rank.regions) {
      region.name = string(region.name);
      region.canonical_name = string(region.canonical_name);
      region.description = string(region.description);
      region.file = string(region.file);
      m.regions.push_back(regions.add(region));
    }
    for (metric_definition metric : rank.metrics) {
      metric.name = string(metric.name);
      metric.description = string(metric.description);
      metric.unit = string(metric.unit);
      m.metrics.push_back(metrics.add(metric));
    }
    for (attribute_definition attribute : rank.attributes) {
      attribute.name = string(attribute.name);
      attribute.description = string(attribute.description);
      m.attributes.push_back(attributes.add(attribute));
    }
    // Parents come before their children; one host's node is one node.
    for (system_tree_node_definition node : rank.system_tree_nodes) {
      node.name = string(node.name);
      node.class_name = string(node.class_name);
      if (node.parent != undefined_ref) node.parent = mapped(m.system_tree_nodes, node.parent);
      m.system_tree_nodes.push_back(nodes.add(node));
    }
    // Every rank's location groups and locations are its own.
    const auto group_base = static_cast<std::uint32_t>(global.location_groups.size());
    for (std::uint32_t i = 0; i < rank.location_groups.size(); ++i)
      m.location_groups.push_back(group_base + i);
    for (location_group_definition group : rank.location_groups) {
      group.name = string(group.name);
      group.system_tree_parent = mapped(m.system_tree_nodes, group.system_tree_parent);
      if (group.creator != undefined_ref) group.creator = mapped(m.location_groups, group.creator);
      global.location_groups.push_back(group);
    }
    for (location_definition location : rank.locations) {
      location.name = string(location.name);
      location.group = mapped(m.location_groups, location.group);
      global.locations.push_back(location);
    }

    // Groups: a paradigm's COMM_LOCATIONS groups join (first pass), COMM_GROUP
    // members shift by the rank's offset in the joined group (second pass).
    m.groups.assign(rank.groups.size(), undefined_ref);
    std::map<OTF2_Paradigm, std::uint64_t> offsets;
    for (std::size_t i = 0; i < rank.groups.size(); ++i) {
      const group_definition& group = rank.groups[i];
      if (group.type != OTF2_GROUP_TYPE_COMM_LOCATIONS) continue;
      auto [it, inserted] = comm_locations.emplace(group.paradigm, 0U);
      if (inserted) {
        it->second = static_cast<std::uint32_t>(global.groups.size());
        group_definition joined = group;
        joined.name = string(group.name);
        joined.members.clear();
        global.groups.push_back(joined);
      }
      std::vector<std::uint64_t>& members = global.groups[it->second].members;
      offsets[group.paradigm] = members.size();
      members.insert(members.end(), group.members.begin(), group.members.end());
      m.groups[i] = it->second;
    }
    for (std::size_t i = 0; i < rank.groups.size(); ++i) {
      if (rank.groups[i].type == OTF2_GROUP_TYPE_COMM_LOCATIONS) continue;
      group_definition group = rank.groups[i];
      group.name = string(group.name);
      // MPI's members are MPI_COMM_WORLD ranks: indices into the joined group already.
      if (group.type == OTF2_GROUP_TYPE_COMM_GROUP && group.paradigm != OTF2_PARADIGM_MPI)
        for (std::uint64_t& member : group.members) member += offsets[group.paradigm];
      m.groups[i] = groups.add(group);
    }
    for (comm_definition comm : rank.comms) {
      comm.name = string(comm.name);
      comm.group = mapped(m.groups, comm.group);
      if (comm.parent != undefined_ref) comm.parent = mapped(m.comms, comm.parent);
      m.comms.push_back(comms.add(comm));
    }
    for (rma_window_definition window : rank.rma_windows) {
      window.name = string(window.name);
      window.comm = mapped(m.comms, window.comm);
      m.rma_windows.push_back(windows.add(window));
    }
    for (marker_definition definition : rank.marker_definitions) {
      definition.group = string(definition.group);
      definition.category = string(definition.category);
      m.marker_definitions.push_back(marker_definitions.add(definition));
    }
    for (marker mark : rank.markers) {
      mark.definition = mapped(m.marker_definitions, mark.definition);
      global.markers.push_back(std::move(mark));
    }
    for (const property& p : rank.properties) {
      auto [it, inserted] = property_index.emplace(p.name, global.properties.size());
      if (inserted) {
        global.properties.push_back(p);
      } else if (p.summed && global.properties[it->second].summed) {
        property& sum = global.properties[it->second];
        sum.value = std::to_string(parse_count(sum.value) + parse_count(p.value));
      }
    }
  }
  // A reader sees markers in time order.
  std::stable_sort(global.markers.begin(), global.markers.end(),
                   [](const marker& a, const marker& b) { return a.time < b.time; });
  return global;
}

std::string write_global_definitions(OTF2_GlobalDefWriter* w, const definitions& g) {
  std::string failed;
  auto check = [&](OTF2_ErrorCode status, const char* what) {
    if (status != OTF2_SUCCESS && failed.empty()) failed = what;
  };
  check(OTF2_GlobalDefWriter_WriteClockProperties(w, g.clock.resolution, g.clock.offset,
                                                  g.clock.length, g.clock.realtime),
        "clock properties");
  for (std::uint32_t i = 0; i < g.strings.size(); ++i)
    check(OTF2_GlobalDefWriter_WriteString(w, i, g.strings[i].c_str()), "string");
  for (std::uint32_t i = 0; i < g.system_tree_nodes.size(); ++i) {
    const system_tree_node_definition& n = g.system_tree_nodes[i];
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(w, i, n.name, n.class_name, n.parent),
          "system tree node");
  }
  for (std::uint32_t i = 0; i < g.location_groups.size(); ++i) {
    const location_group_definition& lg = g.location_groups[i];
    check(OTF2_GlobalDefWriter_WriteLocationGroup(w, i, lg.name, lg.type, lg.system_tree_parent,
                                                  lg.creator),
          "location group");
  }
  for (const location_definition& l : g.locations)
    check(OTF2_GlobalDefWriter_WriteLocation(w, l.id, l.name, l.type, l.events, l.group),
          "location");
  for (std::uint32_t i = 0; i < g.regions.size(); ++i) {
    const region_definition& r = g.regions[i];
    check(OTF2_GlobalDefWriter_WriteRegion(w, i, r.name, r.canonical_name, r.description, r.role,
                                           r.paradigm, r.flags, r.file, r.begin_line, r.end_line),
          "region");
  }
  for (std::uint32_t i = 0; i < g.attributes.size(); ++i) {
    const attribute_definition& a = g.attributes[i];
    check(OTF2_GlobalDefWriter_WriteAttribute(w, i, a.name, a.description, a.type), "attribute");
  }
  for (std::uint32_t i = 0; i < g.groups.size(); ++i) {
    const group_definition& gr = g.groups[i];
    check(OTF2_GlobalDefWriter_WriteGroup(w, i, gr.name, gr.type, gr.paradigm, gr.flags,
                                          static_cast<std::uint32_t>(gr.members.size()),
                                          gr.members.data()),
          "group");
  }
  for (std::uint32_t i = 0; i < g.comms.size(); ++i) {
    const comm_definition& c = g.comms[i];
    check(OTF2_GlobalDefWriter_WriteComm(w, i, c.name, c.group, c.parent, c.flags), "comm");
  }
  for (std::uint32_t i = 0; i < g.rma_windows.size(); ++i) {
    const rma_window_definition& win = g.rma_windows[i];
    check(OTF2_GlobalDefWriter_WriteRmaWin(w, i, win.name, win.comm, win.flags), "RMA window");
  }
  // One member per metric class (ferret's counters are independent series).
  for (std::uint32_t i = 0; i < g.metrics.size(); ++i) {
    const metric_definition& m = g.metrics[i];
    check(OTF2_GlobalDefWriter_WriteMetricMember(w, i, m.name, m.description, m.metric_type,
                                                 m.mode, m.value_type, OTF2_BASE_DECIMAL, 0,
                                                 m.unit),
          "metric member");
    const OTF2_MetricMemberRef member = i;
    check(OTF2_GlobalDefWriter_WriteMetricClass(w, i, 1, &member, m.occurrence, m.recorder),
          "metric class");
  }
  return failed;
}

std::string write_mapping_tables(OTF2_DefWriter* writer, const id_mappings& m) {
  const std::pair<OTF2_MappingType, const std::vector<std::uint32_t>*> tables[] = {
      {OTF2_MAPPING_STRING, &m.strings},   {OTF2_MAPPING_REGION, &m.regions},
      {OTF2_MAPPING_METRIC, &m.metrics},   {OTF2_MAPPING_ATTRIBUTE, &m.attributes},
      {OTF2_MAPPING_GROUP, &m.groups},     {OTF2_MAPPING_COMM, &m.comms},
      {OTF2_MAPPING_RMA_WIN, &m.rma_windows},
  };
  for (const auto& [type, ids] : tables) {
    // An identity needs no table (and OTF2 makes none: it returns NULL for one).
    bool identity = true;
    for (std::uint32_t local = 0; local < ids->size() && identity; ++local)
      identity = (*ids)[local] == local;
    if (identity) continue;
    OTF2_IdMap* map = OTF2_IdMap_CreateFromUint32Array(ids->size(), ids->data(), true);
    if (map == nullptr) return "OTF2_IdMap_CreateFromUint32Array";
    const OTF2_ErrorCode status = OTF2_DefWriter_WriteMappingTable(writer, type, map);
    OTF2_IdMap_Free(map);
    if (status != OTF2_SUCCESS) return "mapping table";
  }
  return {};
}

std::string write_markers(OTF2_MarkerWriter* writer, const definitions& g) {
  for (std::uint32_t i = 0; i < g.marker_definitions.size(); ++i) {
    const marker_definition& d = g.marker_definitions[i];
    if (OTF2_MarkerWriter_WriteDefMarker(writer, i, g.strings[d.group].c_str(),
                                         g.strings[d.category].c_str(),
                                         d.severity) != OTF2_SUCCESS)
      return "marker definition";
  }
  for (const marker& mark : g.markers)
    if (OTF2_MarkerWriter_WriteMarker(writer, mark.time, mark.duration, mark.definition,
                                      mark.scope, mark.scope_ref, mark.text.c_str()) != OTF2_SUCCESS)
      return "marker";
  return {};
}

std::uint64_t definition_chunk_size(const definitions& global, const std::vector<id_mappings>& mappings) {
  // Upper bounds of OTF2's encoding: a compressed integer takes at most 9
  // bytes, a record's header (type and length) at most 10.
  constexpr std::uint64_t integer = 9, header = 10;
  std::uint64_t largest = 10 * global.locations.size();  // OTF2's own rule of thumb
  const auto fit = [&largest](std::uint64_t record) { largest = std::max(largest, header + record); };
  for (const std::string& text : global.strings) fit(integer + text.size() + 1);
  for (const marker& mark : global.markers) fit(6 * integer + mark.text.size() + 1);
  for (const group_definition& group : global.groups) fit((6 + group.members.size()) * integer);
  for (const id_mappings& rank : mappings)
    for (const std::vector<std::uint32_t>* ids : {&rank.strings, &rank.regions, &rank.metrics, &rank.attributes,
                                                  &rank.groups, &rank.comms, &rank.rma_windows})
      fit((3 + 2 * ids->size()) * integer);  // a sparse map at worst: (local, global) pairs
  constexpr std::uint64_t chunk_header = 64;  // more than OTF2's
  std::uint64_t size = OTF2_CHUNK_SIZE_MIN;
  while (size < largest + chunk_header && size < OTF2_CHUNK_SIZE_MAX) size *= 2;
  return size;
}

}  // namespace ferret::otf2
