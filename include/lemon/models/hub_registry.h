// HubRegistry: what Lemonade 11's app and CLI ask of the model registry
// beside pulls: a search of GGUF repositories (GET registry/search), the
// GGUF variants of one repository (GET pull/variants) and which downloaded
// models have a newer revision on the hub (POST models/check-updates).
//
// Offline (LEMONADE_OFFLINE, HF_HUB_OFFLINE), or when the hub cannot be
// reached, search and variants answer from what is here (the catalogue and
// the Hugging Face cache) with "offline": true, and say so; an update check
// needs the hub (kConflict offline, as Lemonade answers 409).
//
// Only Hugging Face is a registry here: another source is refused naming it.
// Ownership: holds references to the catalogue and the hub client, which
// outlive it. Thread-safety: every method may be called from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/hub_client.h"

namespace lemon {

// The quantization a GGUF file name ends with ("Qwen3-8B-Q4_K_M.gguf" ->
// "Q4_K_M", "x-UD-Q4_K_XL-00001-of-00002.gguf" -> "UD-Q4_K_XL"); the file's
// stem when none is recognised. Pure.
std::string gguf_variant_of(std::string_view file_name);

// The variants of a repository's files (relative paths and sizes), as
// GET pull/variants lists them: each with its files (shards together, a
// "<variant>/" folder's files together), its primary file and total size;
// mmproj and draft files ("mtp-*", "dflash-*") apart. Pure.
nlohmann::json gguf_variants(const std::vector<std::pair<std::string, std::uint64_t>>& files);

class HubRegistry {
 public:
  // Asks the hub `hub` names, with one attempt per call and a short
  // connect (a client waits on each answer).
  HubRegistry(const ModelCatalogue& catalogue, const HubClient& hub);

  // kInvalidRequest: a query under 3 characters, a limit outside 1..50, a
  // format other than "gguf", a source other than Hugging Face.
  Result<nlohmann::json> search(std::string_view query, int limit, std::string_view source) const;
  // kInvalidRequest for a checkpoint that is not "owner/repo" (a hub URL is
  // accepted) or another source; kRemoteNotFound when the hub (or, offline,
  // the cache) has no such repository.
  Result<nlohmann::json> variants(std::string_view checkpoint, std::string_view source) const;
  // {"status":"success","updates_available":N,"models":[...]}: downloaded
  // hub models whose repository's main revision moved. kConflict offline.
  Result<nlohmann::json> check_updates() const;

 private:
  nlohmann::json local_search(std::string_view query, int limit) const;
  const ModelCatalogue& catalogue_;
  const HubClient hub_;
};

}  // namespace lemon
