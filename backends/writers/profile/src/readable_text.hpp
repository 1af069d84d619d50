// Names made safe to show: user code and programs name regions, kernels and
// data objects, and those names may hold control characters, invalid UTF-8
// or 100 KB of text. The summary prints them on a terminal and the report
// puts them into a page; both show them through these functions, so that
// they show the same text and neither lets a name act on the terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ferret::profile {

/// `text` with what a terminal would act on written out: bytes that are not
/// valid UTF-8 and C0 controls and DEL as `\xNN` (`\t`, `\n`, `\r` as such),
/// C1 controls and the bidirectional overrides (U+202A..U+202E,
/// U+2066..U+2069) as `\uNNNN`. The result is valid UTF-8.
std::string readable_text(std::string_view text);

/// Columns `text` takes: one per code point (wide characters count one).
std::size_t display_width(std::string_view text) noexcept;

/// `text` cut to `columns` display columns, ending in "…" when something was
/// cut; never splits a UTF-8 sequence.
std::string cut_end(std::string text, std::size_t columns);

/// `text` cut to `columns` display columns by replacing its middle with "…",
/// for paths whose start and end both matter.
std::string cut_middle(const std::string& text, std::size_t columns);

}  // namespace ferret::profile
