// Internal to src/remote: what remote_models.cpp and remote_monitor.cpp share.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/models/model_info.h"

namespace lemon::remote::detail {

// The value of an unlabelled Prometheus sample `name value` in `text`.
std::optional<int> gauge_in(std::string_view text, std::string_view name);

// A remote model's catalogue entry from its JSON entry (recipe remote,
// "downloaded": nothing to fetch), with remote["origin"] saying who made it
// ("config.json", "discovery").
ModelInfo catalogue_entry(const std::string& name, const nlohmann::json& entry,
                          const std::string& origin);

}  // namespace lemon::remote::detail
