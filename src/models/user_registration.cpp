#include "lemon/models/user_registration.h"

#include "lemon/models/model_names.h"

#include <set>

#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/model_files.h"
#include "lemon/models/model_info.h"
#include "lemon/models/registry_entry.h"

namespace lemon {
namespace {

Error bad(const std::string& message, const char* param) {
  return Error(ErrorCode::kInvalidRequest, message, param);
}

bool contains_ci(std::string_view haystack, std::string_view needle) {
  std::string h(haystack);
  for (auto& c : h) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return h.find(needle) != std::string::npos;
}

Status check_checkpoint(std::string_view recipe, std::string_view role, std::string_view ckpt) {
  const std::string what = role == "main" ? "checkpoint" : "checkpoints." + std::string(role);
  auto ref = hf::split_checkpoint(ckpt);
  if (!is_valid_repo_id(ref.repo)) {
    return bad(what + " '" + std::string(ckpt) +
                   "' must be a Hugging Face repository: org/name[:variant-or-file]",
               "checkpoint");
  }
  if (!ref.variant.empty() && ref.variant != "*" && !is_safe_repo_path(ref.variant)) {
    return bad(what + " '" + std::string(ckpt) + "' names a file outside the repository",
               "checkpoint");
  }
  if (is_gguf_model_role(recipe, role) && contains_ci(ref.repo, "gguf") &&
      ckpt.find(':') == std::string_view::npos) {
    return bad(
        "a GGUF checkpoint needs a variant: CHECKPOINT:VARIANT, for example "
        "Qwen/Qwen2.5-Coder-3B-Instruct-GGUF:Q4_0 or "
        "Qwen/Qwen2.5-Coder-3B-Instruct-GGUF:qwen2.5-coder-3b-instruct-q4_0.gguf",
        "checkpoint");
  }
  return ok_status();
}

}  // namespace

Status check_user_model_key(std::string_view key) {
  if (key.empty()) {
    return bad("the model name must be 'user.<name>' with a non-empty name", "model_name");
  }
  if (key.size() > 200 || key.front() == '.' || key.find("..") != std::string_view::npos) {
    return bad("the model name 'user." + std::string(key) + "' is not allowed", "model_name");
  }
  for (char c : key) {
    auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\' || u < 0x20 || u == 0x7f) {
      return bad("the model name 'user." + std::string(key) +
                     "' must not contain '/', '\\\\' or control characters",
                 "model_name");
    }
  }
  return ok_status();
}

bool is_known_recipe(std::string_view recipe) {
  static constexpr std::string_view kRecipes[] = {"llamacpp",   "flm",     "ryzenai-llm", "oga-npu",
                                                  "oga-hybrid", "oga-cpu", "whispercpp",  "sd-cpp"};
  for (auto r : kRecipes) {
    if (r == recipe) {
      return true;
    }
  }
  return false;
}

bool has_registration_fields(const nlohmann::json& body) {
  for (const char* key : {"checkpoint", "checkpoints", "recipe"}) {
    auto it = body.find(key);
    if (it != body.end() && !it->is_null() &&
        !(it->is_string() && it->get<std::string>().empty())) {
      return true;
    }
  }
  return false;
}

Result<UserModelRegistration> parse_user_registration(std::string_view model_name,
                                                      const nlohmann::json& body) {
  if (Status name = check_registration_name(model_name); !name.ok()) {
    return std::move(name).error();
  }
  if (!model_name.starts_with("user.")) {
    return bad(
        "when 'checkpoint' or 'recipe' is given, the model name must start with 'user.' "
        "(for example user.Phi-4-Mini-GGUF); got '" +
            std::string(model_name) + "'",
        "model_name");
  }
  UserModelRegistration reg;
  reg.key = std::string(model_name.substr(5));
  if (Status key = check_user_model_key(reg.key); !key.ok()) {
    return std::move(key).error();
  }

  for (const char* field : {"source", "registry_source"}) {
    auto it = body.find(field);
    if (it == body.end() || it->is_null()) {
      continue;
    }
    const std::string source = it->is_string() ? it->get<std::string>() : it->dump();
    const bool hub = source == "huggingface" || source == "hf";
    const bool local =
        std::string_view(field) == "source" && (source == "local_path" || source == "local_upload");
    if (!hub && !local) {
      return bad("Unsupported model source '" + source +
                     "': this router downloads from Hugging Face ('huggingface') or registers "
                     "local files ('local_path', 'local_upload')",
                 field);
    }
  }
  auto recipe = body.find("recipe");
  if (recipe == body.end() || !recipe->is_string() || recipe->get<std::string>().empty()) {
    return bad("'recipe' is required to register a new model", "recipe");
  }
  const std::string recipe_name = recipe->get<std::string>();
  if (!is_known_recipe(recipe_name)) {
    return bad("unknown recipe '" + recipe_name +
                   "'; known: llamacpp, flm, ryzenai-llm, oga-npu, oga-hybrid, oga-cpu, "
                   "whispercpp, sd-cpp",
               "recipe");
  }

  nlohmann::ordered_json entry = nlohmann::ordered_json::object();
  std::string main_checkpoint;
  if (auto it = body.find("checkpoints"); it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("main")) {
      return bad("'checkpoints' must be an object with a \"main\" checkpoint", "checkpoint");
    }
    for (const auto& [role, value] : it->items()) {
      if (!value.is_string() || value.get<std::string>().empty()) {
        return bad("checkpoints." + role + " must be a non-empty string", "checkpoint");
      }
      if (recipe_name != "flm") {
        if (Status ok = check_checkpoint(recipe_name, role, value.get<std::string>()); !ok.ok()) {
          return std::move(ok).error();
        }
      }
    }
    main_checkpoint = (*it)["main"].get<std::string>();
    entry["checkpoints"] = *it;
  }
  if (auto it = body.find("checkpoint"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) {
      return bad("'checkpoint' must be a string", "checkpoint");
    }
    if (!it->get<std::string>().empty()) {
      main_checkpoint = it->get<std::string>();
      if (recipe_name != "flm") {
        if (Status ok = check_checkpoint(recipe_name, "main", main_checkpoint); !ok.ok()) {
          return std::move(ok).error();
        }
      }
      entry["checkpoint"] = main_checkpoint;
    }
  }
  if (main_checkpoint.empty()) {
    return bad("'checkpoint' is required to register a new model", "checkpoint");
  }
  entry["recipe"] = recipe_name;
  if (auto it = body.find("mmproj"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) {
      return bad("'mmproj' must be a string (a file in the checkpoint's repository)", "mmproj");
    }
    if (!it->get<std::string>().empty()) {
      if (!is_safe_repo_path(it->get<std::string>())) {
        return bad("'mmproj' names a file outside the repository", "mmproj");
      }
      entry["mmproj"] = *it;
    }
  }
  for (const char* key : {"size", "image_defaults"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) {
      entry[key] = *it;
    }
  }

  std::set<std::string> labels = {"custom"};
  if (auto it = body.find("labels"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) {
      return bad("'labels' must be an array of strings", "labels");
    }
    for (const auto& l : *it) {
      if (!l.is_string()) {
        return bad("'labels' must be an array of strings", "labels");
      }
      labels.insert(l.get<std::string>());
    }
  }
  static constexpr std::pair<const char*, const char*> kFlags[] = {{"reasoning", "reasoning"},
                                                                   {"vision", "vision"},
                                                                   {"embedding", "embeddings"},
                                                                   {"reranking", "reranking"}};
  for (const auto& [field, label] : kFlags) {
    auto it = body.find(field);
    if (it == body.end() || it->is_null()) {
      continue;
    }
    if (!it->is_boolean()) {
      return bad(std::string("'") + field + "' must be a boolean", field);
    }
    if (it->get<bool>()) {
      labels.insert(label);
    }
  }
  if (recipe_name == "sd-cpp") {
    labels.insert("image");
  }
  if (recipe_name == "whispercpp") {
    labels.insert("audio");
  }
  entry["labels"] = labels;
  entry["suggested"] = true;

  // The entry must read back as a model (the same parser the catalogue uses).
  auto parsed = parse_registry_entry(std::string(model_name), entry, ModelSource::kUser);
  if (!parsed.ok()) {
    return Error(ErrorCode::kInvalidRequest, parsed.error().message(), "model_name");
  }
  reg.entry = std::move(entry);
  return reg;
}

}  // namespace lemon
