// ferret/runtime/text.hpp — byte-level text helpers that the writers, collectors
// and checkers share, so that each rule is written once: where a UTF-8 sequence
// is valid, what code point it holds and how one is written, and the FNV-1a
// hashes that shortened names and socket addresses carry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ferret::runtime {

/// Length of the well-formed UTF-8 sequence that starts at `text[at]` (1 for
/// an ASCII byte, 2 to 4 otherwise), or 0 when none starts there: a stray
/// continuation byte, an overlong form, a surrogate, a code point above
/// U+10FFFF or a sequence cut by the end of `text` (RFC 3629; table 3-7 of
/// the Unicode standard). `at` must be less than `text.size()`.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t at) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong below U+0800
    if (lead == 0xED) second_max = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong below U+10000
    if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong leads) or F5..FF
  }
  if (text.size() - at < length) return 0;
  if (byte(1) < second_min || byte(1) > second_max) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if ((byte(i) & 0xC0U) != 0x80U) return 0;
  return length;
}

/// True when all of `text` is well-formed UTF-8.
inline bool valid_utf8(std::string_view text) noexcept {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

/// The code point of `sequence`, one well-formed UTF-8 sequence (as
/// utf8_sequence_length measured it).
inline std::uint32_t utf8_code_point(std::string_view sequence) noexcept {
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(sequence[i]));
  };
  switch (sequence.size()) {
    case 1: return byte(0);
    case 2: return (byte(0) & 0x1FU) << 6U | (byte(1) & 0x3FU);
    case 3: return (byte(0) & 0x0FU) << 12U | (byte(1) & 0x3FU) << 6U | (byte(2) & 0x3FU);
    default:
      return (byte(0) & 0x07U) << 18U | (byte(1) & 0x3FU) << 12U | (byte(2) & 0x3FU) << 6U |
             (byte(3) & 0x3FU);
  }
}

/// Appends code point `point` (below 0x110000) to `out` in UTF-8. Surrogates
/// are written as they come: the caller decides what stands for them.
inline void append_utf8(std::string& out, std::uint32_t point) {
  if (point < 0x80) {
    out += static_cast<char>(point);
  } else if (point < 0x800) {
    out += static_cast<char>(0xC0 | (point >> 6));
    out += static_cast<char>(0x80 | (point & 0x3F));
  } else if (point < 0x10000) {
    out += static_cast<char>(0xE0 | (point >> 12));
    out += static_cast<char>(0x80 | ((point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (point >> 18));
    out += static_cast<char>(0x80 | ((point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (point & 0x3F));
  }
}

/// FNV-1a over `bytes` with the offset basis and prime of one hash width.
template <typename Hash, Hash offset_basis, Hash prime>
constexpr Hash fnv1a(std::string_view bytes) noexcept {
  Hash hash = offset_basis;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= prime;
  }
  return hash;
}

/// The 64-bit FNV-1a hash of `bytes`.
constexpr std::uint64_t fnv1a_64(std::string_view bytes) noexcept {
  return fnv1a<std::uint64_t, 14695981039346656037ULL, 1099511628211ULL>(bytes);
}

/// The 32-bit FNV-1a hash of `bytes` (a function of its own, not the 64-bit
/// one's low half).
constexpr std::uint32_t fnv1a_32(std::string_view bytes) noexcept {
  return fnv1a<std::uint32_t, 2166136261U, 16777619U>(bytes);
}

}  // namespace ferret::runtime
