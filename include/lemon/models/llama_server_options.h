// llama-server's command-line options, as facts for reading its preset
// files (llamacpp_preset_file.h): each option's names (short, long, other
// spellings, negative forms), its environment variable and whether it takes
// a value. The table was made from `llama-server --help` of llama.cpp
// 3f545bec (tools/server, common/arg.cpp); an option it lacks is unknown.
//
// Ownership/thread-safety: a static table and pure lookups.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemon {

enum class OptionTakes { kNothing, kValue, kOptionalValue };

struct LlamaServerOption {
  std::vector<std::string> names;  // with their dashes: "-c", "--ctx-size"
  std::string env;                 // "LLAMA_ARG_CTX_SIZE"; "" for none
  OptionTakes takes = OptionTakes::kValue;

  // The long name a command line uses ("--ctx-size"): the first "--" name
  // that is not a "--no-" form, else the first name.
  std::string flag() const;
  // Its "--no-" form, or "" when it has none.
  std::string negative_flag() const;
};

// A preset key: a name without its dashes ("ctx-size", "c", "no-mmap") or
// the environment variable ("LLAMA_ARG_CTX_SIZE").
struct OptionMatch {
  const LlamaServerOption* option = nullptr;
  bool negated = false;  // named by a "--no-" form
};
std::optional<OptionMatch> find_llama_server_option(std::string_view key);

// Every option, in --help's order.
const std::vector<LlamaServerOption>& llama_server_options();

}  // namespace lemon
