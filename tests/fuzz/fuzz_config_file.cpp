// Fuzz target: config.json (issue #30 §1). Any bytes that parse as JSON go
// through parse_config as the file's content, with the router's own
// command line: whatever the file holds, the router either gets a
// configuration or refuses it with exit code 2 and one line, never a crash
// or an exception.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/app/daemon_options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json file = nlohmann::json::parse(text, nullptr, false);
  if (file.is_discarded()) {
    return 0;
  }
  lemon::ParsedConfig parsed = lemon::parse_config({"lemonade-router"}, file);
  if (parsed.exit_now) {
    if (parsed.exit_code != 2 || parsed.message.empty() ||
        parsed.message.find('\n') != std::string::npos) {
      std::abort();  // a refusal is exit code 2 and one line
    }
  } else if (parsed.options.http.port < 0 || parsed.options.http.port > 65535 ||
             parsed.provenance.values.empty()) {
    std::abort();
  }
  return 0;
}
