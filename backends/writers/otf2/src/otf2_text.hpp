// backends/writers/otf2 — text as OTF2 takes it: property names, and the
// lengths its files hold.
//
// Properties. OTF2 property names are "NAMESPACE::...::NAME" with names of
// [A-Z0-9_] only, compared without case. A metadata key becomes a name by an
// injective rule (two keys never share a property), and the key itself is kept
// beside it:
//
//   FERRET::RUN::<escaped key>       = the value
//   FERRET::RUN::<escaped key>::KEY  = the key, as the program gave it
//
// Escaping: a-z become A-Z, digits stay, every other byte (A-Z and '_'
// included) becomes '_' and its two upper-case hex digits; the empty key
// becomes "_" (and has no ::KEY, since OTF2 takes an empty value as removing a
// property). "grid-size" → GRID_2DSIZE, "a_b" → A_5FB, "a-b" → A_2DB,
// "Größe" → _47R_C3_B6_C3_9FE. A name longer than longest_property_key is cut
// and ended with "__" and 16 hex digits of a hash of the whole key ("__" occurs
// in no other name). An empty value is written as "-".
//
// Text. Strings (names, marker texts, property values) are valid UTF-8, and
// their lengths bounded: OTF2 writes the anchor file (which holds the properties) in one
// 256 KiB chunk and fails at close when it is full, and it refuses any record
// larger than the chunk of its file: so property values, names, marker texts
// and strings are bounded, and run metadata beyond what fits is left out and
// counted (FERRET::METADATA_OMITTED).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::otf2 {

inline constexpr std::size_t longest_property_key = 160;     // escaped, in the name
inline constexpr std::size_t longest_property_value = 4096;  // bytes
inline constexpr std::size_t longest_string = 64 * 1024;     // definitions and marker texts
inline constexpr std::size_t property_budget = 160 * 1024;   // all properties together

/// `key` as one component of a property name (see above).
FERRET_EXPORT std::string property_key(std::string_view key);

/// `text` as OTF2's readers take it back: valid UTF-8 (python3-otf2 decodes
/// every string as UTF-8), with invalid bytes and NUL (which would end the C
/// string) as U+FFFD; longer than `limit` bytes, its start (at a character
/// boundary) ended with "…" and 8 hex digits of a hash of the whole, `limit`
/// bytes in all, so that long texts that differ stay apart.
FERRET_EXPORT std::string archive_text(std::string_view text, std::size_t limit);

}  // namespace ferret::otf2
