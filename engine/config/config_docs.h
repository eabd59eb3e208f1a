#pragma once
// docs/config.md's reference tables, written from the config tables (config_field.h) and the
// enum tables, so that the documentation lists exactly the fields, defaults, ranges and values
// the parser accepts. `mantissa-cli fields --markdown` prints it; config_test checks that
// docs/config.md holds it between its markers.
#include <string>

namespace mantissa {

inline constexpr const char* kConfigDocsBegin =
    "<!-- The tables below are generated: `mantissa-cli fields --markdown`. Edit the engine's "
    "config tables, not these lines. -->";
inline constexpr const char* kConfigDocsEnd = "<!-- End of the generated tables. -->";

// Markdown: one table per section of the run config, the layer fields with the kinds that take
// them, and the layer kinds.
std::string configFieldsMarkdown();

} // namespace mantissa
