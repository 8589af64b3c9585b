// UTC times as every file ftbench writes them: ISO 8601 with milliseconds.
#pragma once

#include <optional>
#include <string>

namespace ftbench::text {

// Unix epoch seconds of what iso8601_utc() writes ("2026-11-29T22:34:05.123Z", or without the
// fraction); nullopt for any other text.
std::optional<double> parse_iso8601_utc(const std::string& text);

// ISO 8601 UTC with milliseconds, e.g. "2026-11-29T22:34:05.123Z".
std::string iso8601_utc(double epoch_seconds);

}  // namespace ftbench::text
