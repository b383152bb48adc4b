// ModelCatalogue: every model the router knows, from three sources (issue #2
// §2): the built-in resources/server_models.json, `user_models.json` in the
// cache dir (exposed as `user.<key>`), and `--extra-models-dir` (exposed as
// `extra.<name>`). Per-model load options come from `recipe_options.json` in
// the cache dir, keyed by full model name.
//
// A name none of these knows is tried as llama.cpp names models
// (hub_gguf.h): a --extra-models-dir file's stem or folder ("X" for
// "extra.X.gguf"), then "org/repo:TAG" for a GGUF in the hub cache (the
// entry is then named "org/repo:TAG"); these come after every name of ours.
//
// Files are only looked at by resolve() and list(); find() never touches the
// model files, so it is cheap enough for the request path. user_models.json
// and recipe_options.json are re-read when their mtime or size changes.
// Nothing here downloads anything or touches the network.
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/models/model_info.h"

namespace lemon {

struct CatalogueSources {
  std::string server_models_json;  // path to the built-in catalogue
  std::string cache_dir;           // LEMONADE_CACHE_DIR (user_models.json, recipe_options.json)
  std::string hf_hub_cache;        // HF_HUB_CACHE, or $HF_HOME/hub, or ~/.cache/huggingface/hub
  std::string extra_models_dir;    // may be empty
  // Checkpoints FLM reports as installed. When unset, FLM models are
  // reported as downloaded (FLM manages its own files).
  std::function<std::vector<std::string>()> flm_installed;
  // Models served by other machines that no file here names (config.json's
  // remote.models, discovered ones; issue #30 §3), listed after the others.
  // Called without the entry lists' lock, but maybe under the file locks
  // (reading or writing user_models.json): it must not call the catalogue.
  std::function<std::vector<ModelInfo>()> remote_models;
};

// The interface the router needs; the catalogue implements it and tests fake it.
class ModelResolver {
 public:
  virtual ~ModelResolver() = default;
  // The entry with its files resolved. kModelNotFound when the name is unknown.
  // A model whose files are missing is returned with downloaded == false and
  // missing_paths naming what is absent; that is not an error here.
  virtual Result<ModelInfo> resolve(std::string_view name) const = 0;
};

class ModelCatalogue final : public ModelResolver {
 public:
  // Reads server_models.json (kInvalidOption with the path and parse error if
  // it is unreadable or malformed). A missing or malformed user_models.json or
  // recipe_options.json is logged and treated as empty, never fatal.
  static Result<std::unique_ptr<ModelCatalogue>> open(CatalogueSources sources);
  ~ModelCatalogue() override;

  // Registered entry without file resolution (downloaded=false,
  // resolved_paths empty). nullopt when unknown.
  std::optional<ModelInfo> find(std::string_view name) const;

  Result<ModelInfo> resolve(std::string_view name) const override;

  // Resolved entries in catalogue order (built-in file order, then user.*,
  // then extra.*). Only downloaded ones unless include_not_downloaded.
  std::vector<ModelInfo> list(bool include_not_downloaded) const;

  // Makes "owner/repo[:TAG]" known before its files are on disk, so the
  // model store can download it (llama.cpp's POST /models): its canonical
  // name (the TAG upper-cased). For this process's life. kInvalidRequest
  // for a name that is not a hub model's.
  Result<std::string> admit_hub_model(std::string_view name);
  // The GGUF models of the hub cache as llama.cpp lists them
  // ("org/repo:TAG", hub_gguf.h), unresolved; whether a registered model
  // uses the same file is not checked.
  std::vector<ModelInfo> hub_models() const;

  // Up to `n` downloaded model names, for "model not found" messages.
  std::vector<std::string> some_available_names(std::size_t n) const;

  // Every registered entry in catalogue order, without file resolution.
  std::vector<ModelInfo> registered() const;

  // Adds or replaces `key` ("user.<key>") in user_models.json, or removes it.
  // The file is rewritten atomically (a temporary file, then rename) and
  // re-read at once; other entries and their order are kept. A malformed
  // file is never overwritten: kInternal, as for write errors. Writers are
  // serialized; readers see the old or the new file, never a mix.
  Status put_user_model(const std::string& key, const nlohmann::ordered_json& entry);
  Status remove_user_model(const std::string& key);

  // Sets `name`'s entry in recipe_options.json to `options` (POST /load with
  // save_options), in Lemonade's format ({"<model>": {"ctx_size": ...}}),
  // written atomically and re-read at once; other entries are kept. Same
  // rules as put_user_model for a malformed file and write errors.
  Status save_options(const std::string& name, const nlohmann::json& options);

  const CatalogueSources& sources() const { return sources_; }

 private:
  struct State;
  explicit ModelCatalogue(CatalogueSources sources);
  CatalogueSources sources_;
  std::unique_ptr<State> state_;
};

}  // namespace lemon
