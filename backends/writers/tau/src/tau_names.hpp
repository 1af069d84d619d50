// backends/writers/tau — names and metadata text as TAU's readers take them back.
//
// One rule per kind of text, each applied only where the format or one of its
// readers (ParaProf, pprof, hatchet) requires it; docs/formats.md lists them
// with the reader that breaks without each. tools/ferret-tau-check rejects
// every profile that breaks one of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferret/runtime/settings.hpp"  // FERRET_EXPORT

namespace ferret::tau {

/// What a name that is empty or blank after the rules below is written as
/// (the runtime's placeholder for such region names).
inline constexpr std::string_view unnamed = "(unnamed)";

/// Longest name and source file written, in bytes. pprof reads a line into
/// 64 KiB, and a call path holds up to callpath_depth (tau_thread_profile.hpp)
/// names with their files: 32 × (1024 + 256 + 25) bytes stay well below that.
inline constexpr std::size_t longest_name = 1024;
inline constexpr std::size_t longest_file = 256;

/// A function, user event or group name as every reader takes it back:
///  - invalid UTF-8 becomes U+FFFD (hatchet decodes the file as UTF-8);
///  - control characters become blanks, '"' becomes '\'' (the line format and
///    pprof's quoted names);
///  - blanks are trimmed and runs of them collapse into one (TAU and ParaProf
///    do so, hatchet strips call-path components: names differing only there
///    would merge in the readers);
///  - separators lose their meaning: "=>" (call paths) becomes "->", " : "
///    (context events) becomes ": ";
///  - TAU's annotations lose theirs: "[{" (source location, ParaProf parses its
///    numbers) becomes "[ {", "[ <" (parameters, ParaProf) becomes "[<",
///    " [@] " (unwound call site, hatchet) becomes " [at] "; the colons of the
///    other source annotations ParaProf parses ("OpenMP location:", "file:"
///    with "line:", "!$omp … @file:line") become U+2236 "∶", which looks alike;
///  - nothing left: unnamed; longer than longest_name: cut at a character
///    boundary and ended with "…" and 8 hex digits of a hash of the whole name,
///    so that long names that differ stay apart.
FERRET_EXPORT std::string profile_name(std::string_view text);

/// A region's name with its source location, as TAU writes it and ParaProf
/// links it: "name [{file} {line,0}]". The name follows profile_name, and its
/// '{' and '}' become '(' and ')' (hatchet reads the line number from the first
/// '{'); in the file '{', '}', ']' and blanks become '_' (ParaProf ends the file
/// at '}', hatchet at a blank), and a file longer than longest_file keeps its
/// end.
FERRET_EXPORT std::string located_name(std::string_view name, std::string_view file,
                                       std::uint32_t line);

/// The GROUP of a library domain's regions: "TAU_USER|<domain>", the domain by
/// profile_name with blanks and '|' (the group separator) as '_'.
FERRET_EXPORT std::string domain_group(std::string_view domain);

/// Appends `text` as XML character data of the metadata block: '&', '<', '>'
/// as entities; '#' as "&#x23;" (readers split the header line at " #");
/// newline and carriage return as references (the block is one line); every
/// character beyond ASCII as a character reference (ParaProf reads the block as
/// bytes and turns each byte above 0x7F into a blank); control characters,
/// which XML 1.0 forbids even as references, and invalid UTF-8 as &#xFFFD;.
FERRET_EXPORT void append_xml_text(std::string& out, std::string_view text);

/// A metric's directory suffix and header name: profile_name, then TAU's rule:
/// the characters /\?%*:|"<>= and blanks become '_'.
FERRET_EXPORT std::string metric_file_name(std::string_view metric);

}  // namespace ferret::tau
