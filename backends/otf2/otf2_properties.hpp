// ferret/backends/otf2 — run metadata as OTF2 archive properties.
//
// OTF2 property names are "NAMESPACE::...::NAME" with names of [A-Z0-9_] only,
// compared without case. A metadata key becomes a name by an injective rule
// (two keys never share a property), and the key itself is kept beside it:
//
//   FERRET::RUN::<escaped key>       = the value
//   FERRET::RUN::<escaped key>::KEY  = the key, as the program gave it
//
// Escaping: a-z become A-Z, digits stay, every other byte (A-Z and '_'
// included) becomes '_' and its two upper-case hex digits; the empty key
// becomes "_" (and has no ::KEY, since OTF2 takes an empty value as removing a
// property). "grid-size" → GRID_2DSIZE, "a_b" → A_5FB, "a-b" → A_2DB,
// "Größe" → _47R_C3_B6_C3_9FE. An empty value is written as "-" for the same reason.
#pragma once

#include <string>
#include <string_view>

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::otf2 {

/// `key` as one component of a property name (see above).
FERRET_EXPORT std::string property_key(std::string_view key);

}  // namespace ferret::otf2
