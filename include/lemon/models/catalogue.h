// ModelCatalogue: every model the router knows, from three sources:
// the built-in resources/server_models.json, `user_models.json` in the
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
#include "lemon/models/alias_book.h"
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
  // remote.models, discovered ones), listed after the others.
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
  // The one name of the model a client's `name` stands for, when that is
  // another name (a bare user model, a canonical id, "X:latest", an
  // alias); nullopt when `name` is that name already, or is unknown. The
  // router keys its servers by it, so every form reaches the same server.
  virtual std::optional<std::string> internal_name(std::string_view name) const {
    (void)name;
    return std::nullopt;
  }
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

  // Serves the models of `dir` as the extra models ("" none) from now on:
  // the old folder's leave, the new one's are scanned before it returns.
  void set_extra_models_dir(const std::string& dir);
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
  // The registered collections (user entries whose recipe is one), without
  // file resolution; reads user_models.json again only when it changed and
  // scans no folder.
  std::vector<ModelInfo> collections() const;

  // Adds or replaces `key` ("user.<key>") in user_models.json, or removes it.
  // The file is rewritten atomically (a temporary file, then rename) and
  // re-read at once; other entries and their order are kept. A malformed
  // file is never overwritten: kInternal, as for write errors. Writers are
  // serialized; readers see the old or the new file, never a mix.
  Status put_user_model(const std::string& key, const nlohmann::ordered_json& entry);
  Status remove_user_model(const std::string& key);

  // Sets `name`'s entry in recipe_options.json to `options` (POST /load with
  // save_options), in Lemonade's format ({"<model>": {"ctx_size": ...}}),
  // keyed by the model's canonical id (model_names.h), written atomically
  // and re-read at once; other entries are kept (a 9.4.1-form key of the
  // same model goes). Same rules as put_user_model for a malformed file and
  // write errors.
  Status save_options(const std::string& name, const nlohmann::json& options);

  // `name`'s entry in recipe_options.json as written (its canonical id's,
  // else its 9.4.1-form key's); an empty object when it has none.
  nlohmann::json saved_entry(std::string_view name) const;
  // Removes `name`'s entry (both key forms) from recipe_options.json.
  Status forget_options(std::string_view name);

  // The internal name a client's name stands for (model_names.h: a
  // registered name, a canonical id, a bare user model, "X:latest", an
  // alias), without touching model files; nullopt when unknown.
  std::optional<std::string> internal_name(std::string_view name) const override;
  // The id listings show for `info` (model_names.h public_model_id), and
  // for a model by its internal name.
  std::string public_id(const ModelInfo& info) const;
  std::string public_id_of(std::string_view internal) const;
  // aliases.json (alias_book.h).
  const AliasBook& aliases() const;
  AliasBook& aliases();

  // Moves recipe_options.json's keys of built-in models from 9.4.1's bare
  // names to their canonical ids ("builtin.X"), once: the file is rewritten
  // atomically and the old one kept as recipe_options.json.9.4.1. Other
  // keys stay as they are. Run by open().
  Status migrate_saved_options();

  const CatalogueSources& sources() const { return sources_; }

 private:
  struct State;
  explicit ModelCatalogue(CatalogueSources sources);
  CatalogueSources sources_;
  std::unique_ptr<State> state_;
};

}  // namespace lemon
