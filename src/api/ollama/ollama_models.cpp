#include "lemon/api/ollama/ollama_models.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "lemon/api/ollama/ollama_answer.h"
#include "lemon/api/ollama/ollama_request.h"
#include "lemon/download/checksum.h"
#include "lemon/models/gguf_header.h"

namespace lemon::api {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool has_label(const ModelInfo& info, const char* label) {
  return std::find(info.labels.begin(), info.labels.end(), label) != info.labels.end();
}

std::int64_t bytes_on_disk(const ModelInfo& info) {
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& [role, path] : info.resolved_paths) {
    if (fs::is_regular_file(path, ec)) {
      total += static_cast<std::int64_t>(fs::file_size(path, ec));
    } else if (fs::is_directory(path, ec)) {
      for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_regular_file(ec)) {
          total += static_cast<std::int64_t>(it->file_size(ec));
        }
      }
    }
  }
  if (total == 0) {
    total = static_cast<std::int64_t>(info.size_gb * 1e9);
  }
  return total;
}

std::string digest(const ModelInfo& info) {
  download::Hasher h(download::Checksum::Kind::kSha256, 0);
  const std::string text = info.name + '\0' + info.checkpoint();
  h.update(text.data(), text.size());
  return h.finish();
}

std::string modified_at(const ModelInfo& info) {
  std::error_code ec;
  const std::string path = info.resolved_path();
  if (!path.empty()) {
    auto t = fs::last_write_time(path, ec);
    if (!ec) {
      auto sys = std::chrono::file_clock::to_sys(t);
      return ollama_timestamp(
          std::chrono::time_point_cast<std::chrono::system_clock::duration>(sys));
    }
  }
  return ollama_timestamp(std::chrono::system_clock::now());
}

// "0.6B" in "Qwen3-0.6B-GGUF", "270M" in "gemma-3-270m-it": the last
// segment that is a number followed by B or M.
std::string parameter_size(const std::string& name) {
  std::string found;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find_first_of("-_.:/", start);
    // Keep decimal points inside a segment: "0.6B" is split at '.' only
    // when what follows is not a digit.
    while (end != std::string::npos && name[end] == '.' && end + 1 < name.size() &&
           std::isdigit(static_cast<unsigned char>(name[end + 1])) != 0) {
      end = name.find_first_of("-_.:/", end + 1);
    }
    std::string seg =
        name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (seg.size() >= 2) {
      const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(seg.back())));
      const std::string number = seg.substr(0, seg.size() - 1);
      const bool numeric = std::isdigit(static_cast<unsigned char>(number.front())) != 0 &&
                           std::all_of(number.begin(), number.end(), [](char c) {
                             return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.';
                           });
      if ((unit == 'B' || unit == 'M') && numeric) {
        found = number + unit;
      }
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return found;
}

std::string quantization(const ModelInfo& info) {
  const std::string& checkpoint = info.checkpoint();
  auto colon = checkpoint.rfind(':');
  if (colon == std::string::npos) {
    return "";
  }
  std::string variant = checkpoint.substr(colon + 1);
  if (variant.size() > 5 && variant.ends_with(".gguf")) {
    variant.resize(variant.size() - 5);
    auto cut = variant.find_last_of("-.");
    variant = cut == std::string::npos ? variant : variant.substr(cut + 1);
  }
  std::transform(variant.begin(), variant.end(), variant.begin(), [](char c) {
    return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  });
  return variant;
}

std::optional<GgufHeader> gguf(const ModelInfo& info) {
  const std::string path = info.resolved_path();
  if (path.empty() || !path.ends_with(".gguf")) {
    return std::nullopt;
  }
  auto header = read_gguf_header(path);
  if (!header.ok()) {
    return std::nullopt;
  }
  return std::move(header).value();
}

json details(const ModelInfo& info, const std::optional<GgufHeader>& header) {
  const bool gguf_recipe = info.recipe == "llamacpp" || info.recipe == "whispercpp";
  const std::string family =
      header && !header->architecture.empty() ? header->architecture : info.recipe;
  return {{"parent_model", ""},
          {"format", gguf_recipe ? "gguf" : info.recipe},
          {"family", family},
          {"families", json::array({family})},
          {"parameter_size", parameter_size(info.name)},
          {"quantization_level", quantization(info)}};
}

}  // namespace

json ollama_model_entry(const ModelInfo& info) {
  const std::string name = ollama_listed_name(info.name);
  return {{"name", name},
          {"model", name},
          {"modified_at", modified_at(info)},
          {"size", bytes_on_disk(info)},
          {"digest", digest(info)},
          {"details", details(info, gguf(info))}};
}

json ollama_show(const ModelInfo& info, int num_ctx) {
  auto header = gguf(info);
  json capabilities = json::array();
  if (info.type == ModelType::kLlm) {
    capabilities.push_back("completion");
  } else if (info.type == ModelType::kEmbedding) {
    capabilities.push_back("embedding");
  }
  if (has_label(info, "tool-calling") || has_label(info, "tools")) {
    capabilities.push_back("tools");
  }
  if (model_has_vision(info)) {
    capabilities.push_back("vision");
  }
  if (has_label(info, "reasoning")) {
    capabilities.push_back("thinking");
  }
  json model_info = json::object();
  if (header) {
    const std::string& arch = header->architecture;
    model_info["general.architecture"] = arch;
    if (header->context_length > 0) {
      model_info[arch + ".context_length"] = header->context_length;
    }
    if (header->block_count > 0) {
      model_info[arch + ".block_count"] = header->block_count;
    }
    if (header->embedding_length > 0) {
      model_info[arch + ".embedding_length"] = header->embedding_length;
    }
    if (header->head_count > 0) {
      model_info[arch + ".attention.head_count"] = header->head_count;
      model_info[arch + ".attention.head_count_kv"] = header->head_count_kv;
    }
  }
  return {{"modelfile", ""},
          {"parameters", "num_ctx " + std::to_string(num_ctx)},
          {"template", ""},
          {"details", details(info, header)},
          {"model_info", std::move(model_info)},
          {"capabilities", std::move(capabilities)},
          {"modified_at", modified_at(info)}};
}

json ollama_running_entry(const ModelInfo& info, int context_length,
                          std::optional<std::chrono::system_clock::time_point> expires) {
  json entry = ollama_model_entry(info);
  entry.erase("modified_at");
  entry["expires_at"] = expires ? ollama_timestamp(*expires) : "2999-12-31T23:59:59Z";
  entry["size_vram"] = 0;
  entry["context_length"] = context_length;
  return entry;
}

}  // namespace lemon::api
