// See otf2_properties.hpp.
#include "otf2_properties.hpp"

#include <fmt/format.h>

#include <iterator>

namespace ferret::otf2 {

std::string property_key(std::string_view key) {
  if (key.empty()) return "_";
  std::string name;
  name.reserve(key.size());
  for (const char c : key) {
    if (c >= 'a' && c <= 'z')
      name.push_back(static_cast<char>(c - 'a' + 'A'));
    else if (c >= '0' && c <= '9')
      name.push_back(c);
    else
      fmt::format_to(std::back_inserter(name), "_{:02X}", static_cast<unsigned char>(c));
  }
  return name;
}

}  // namespace ferret::otf2
