#include "lemon/models/hub_registry.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "lemon/download/transfer.h"
#include "lemon/download/url.h"
#include "lemon/models/gguf_variant.h"
#include "lemon/models/hf_cache.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

// A client waits on a search: one attempt, a short connect, then the answer
// from what is here.
download::TransferOptions interactive(download::TransferOptions options) {
  options.max_attempts = 1;
  options.connect_timeout = std::min(options.connect_timeout, std::chrono::milliseconds(5000));
  return options;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "-00001-of-00003" before ".gguf": the shard suffix, or npos.
std::size_t shard_suffix_at(std::string_view stem) {
  static const std::regex kShard("-\\d{5}-of-\\d{5}$");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(stem.begin(), stem.end(), m, kShard)) {
    return static_cast<std::size_t>(m.position(0));
  }
  return std::string_view::npos;
}

bool is_quant_token(const std::string& token) {
  static const std::regex kQuant("^(I?Q[0-9].*|F16|F32|BF16|FP16|FP8|MXFP4.*|TQ[0-9].*)$",
                                 std::regex::icase);
  return std::regex_match(token, kQuant);
}

bool is_draft_name(std::string_view name) {
  const std::string l = lower(name);
  return l.starts_with("mtp-") || l.starts_with("dflash-") || l == "dflash.gguf";
}

Status hugging_face_only(std::string_view source) {
  const std::string s = lower(source);
  if (s.empty() || s == "huggingface" || s == "hf") {
    return ok_status();
  }
  return Error(ErrorCode::kInvalidRequest,
               "Unsupported model source '" + std::string(source) +
                   "': this router's registry is Hugging Face ('huggingface')",
               "source");
}

// "owner/repo" from a checkpoint or a hub URL; "" when it is neither.
std::string repo_of(std::string_view checkpoint) {
  std::string c(checkpoint);
  for (const char* prefix : {"https://huggingface.co/", "http://huggingface.co/", "hf.co/"}) {
    if (c.starts_with(prefix)) {
      c.erase(0, std::string_view(prefix).size());
    }
  }
  if (auto colon = c.find(':'); colon != std::string::npos) {
    c.erase(colon);
  }
  const auto first = c.find('/');
  if (first == std::string::npos) {
    return {};
  }
  const auto second = c.find('/', first + 1);
  return c.substr(0, second);
}

}  // namespace

HubRegistry::HubRegistry(const ModelCatalogue& catalogue, const HubClient& hub)
    : catalogue_(catalogue), hub_([&hub] {
        HubSettings settings = hub.settings();
        settings.transfer = interactive(settings.transfer);
        return HubClient(std::move(settings));
      }()) {}

std::string gguf_variant_of(std::string_view file_name) {
  std::string_view name = file_name;
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) {
    name.remove_prefix(slash + 1);
  }
  std::string_view stem = name;
  if (lower(stem).ends_with(".gguf")) {
    stem.remove_suffix(5);
  }
  if (auto at = shard_suffix_at(stem); at != std::string_view::npos) {
    stem = stem.substr(0, at);
  }
  std::vector<std::string> tokens;
  std::string current;
  for (char c : stem) {
    if (c == '-' || c == '.') {
      tokens.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  tokens.push_back(current);
  for (std::size_t i = tokens.size(); i-- > 0;) {
    if (is_quant_token(tokens[i])) {
      if (i > 0 && lower(tokens[i - 1]) == "ud") {
        return tokens[i - 1] + "-" + tokens[i];
      }
      return tokens[i];
    }
  }
  return std::string(stem);
}

nlohmann::json gguf_variants(const std::vector<std::pair<std::string, std::uint64_t>>& files) {
  struct Variant {
    std::vector<std::string> files;
    std::uint64_t bytes = 0;
  };
  std::map<std::string, Variant> by_name;
  nlohmann::json mmproj = nlohmann::json::array();
  nlohmann::json drafts = nlohmann::json::array();
  for (const auto& [path, size] : files) {
    if (!is_gguf_name(path)) {
      continue;
    }
    const std::string base = fs::path(path).filename().string();
    if (is_mmproj_name(base)) {
      mmproj.push_back(path);
      continue;
    }
    if (is_draft_name(base)) {
      drafts.push_back(path);
      continue;
    }
    // A file in a folder belongs to the folder's variant.
    const auto slash = path.find('/');
    const std::string name =
        slash != std::string::npos ? path.substr(0, path.rfind('/')) : gguf_variant_of(path);
    Variant& v = by_name[name];
    v.files.push_back(path);
    v.bytes += size;
  }
  nlohmann::json variants = nlohmann::json::array();
  for (auto& [name, v] : by_name) {
    std::sort(v.files.begin(), v.files.end());
    variants.push_back({{"name", name},
                        {"primary_file", v.files.front()},
                        {"files", v.files},
                        {"sharded", v.files.size() > 1},
                        {"size_bytes", v.bytes}});
  }
  return {{"variants", std::move(variants)},
          {"mmproj_files", std::move(mmproj)},
          {"draft_files", std::move(drafts)}};
}

nlohmann::json HubRegistry::local_search(std::string_view query, int limit) const {
  const std::string q = lower(query);
  std::map<std::string, nlohmann::json> found;  // by repository id
  auto consider = [&](const std::string& repo, const std::string& from) {
    if (repo.empty() || lower(repo).find(q) == std::string::npos || found.contains(repo)) {
      return;
    }
    found[repo] = {{"repository_id", repo},   {"display_name", repo.substr(repo.find('/') + 1)},
                   {"source", "huggingface"}, {"repository_type", "model"},
                   {"description", ""},       {"tags", {"gguf"}},
                   {"downloads", nullptr},    {"likes", nullptr},
                   {"has_gguf", true},        {"found_in", from}};
  };
  for (const auto& info : catalogue_.registered()) {
    if (info.recipe == "llamacpp") {
      consider(hf::split_checkpoint(info.checkpoint()).repo, "catalogue");
    }
  }
  std::error_code ec;
  for (auto it = fs::directory_iterator(catalogue_.sources().hf_hub_cache, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string dir = it->path().filename().string();
    if (!dir.starts_with("models--")) {
      continue;
    }
    dir.erase(0, 8);
    if (auto sep = dir.find("--"); sep != std::string::npos) {
      consider(dir.substr(0, sep) + "/" + dir.substr(sep + 2), "cache");
    }
  }
  nlohmann::json results = nlohmann::json::array();
  for (auto& [repo, entry] : found) {
    if (static_cast<int>(results.size()) >= limit) {
      break;
    }
    results.push_back(std::move(entry));
  }
  return results;
}

Result<nlohmann::json> HubRegistry::search(std::string_view query, int limit,
                                           std::string_view source) const {
  if (Status ok = hugging_face_only(source); !ok.ok()) {
    return std::move(ok).error();
  }
  std::string q(query);
  q.erase(0, q.find_first_not_of(' '));
  q.erase(q.find_last_not_of(' ') + 1);
  if (q.size() < 3) {
    return Error(ErrorCode::kInvalidRequest,
                 "query parameter 'query' must contain at least 3 characters", "query");
  }
  if (limit < 1 || limit > 50) {
    return Error(ErrorCode::kInvalidRequest,
                 "query parameter 'limit' must be an integer from 1 to 50", "limit");
  }
  nlohmann::json answer = {{"source", "huggingface"}, {"query", q}, {"format", "gguf"}};
  std::string why_local;
  if (!hub_.offline()) {
    const std::string url = hub_.settings().endpoint +
                            "/api/models?search=" + download::escape_segment(q) +
                            "&filter=gguf&limit=" + std::to_string(limit) + "&sort=downloads";
    auto body = download::fetch_text(url, hub_.settings().token, hub_.settings().transfer, {});
    if (body.ok()) {
      auto list = nlohmann::json::parse(*body, nullptr, false);
      if (list.is_array()) {
        nlohmann::json results = nlohmann::json::array();
        for (const auto& m : list) {
          if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) {
            continue;
          }
          const std::string repo = m["id"].get<std::string>();
          results.push_back({{"repository_id", repo},
                             {"display_name", repo.substr(repo.find('/') + 1)},
                             {"source", "huggingface"},
                             {"repository_type", "model"},
                             {"description", ""},
                             {"tags", m.value("tags", nlohmann::json::array())},
                             {"task", m.value("pipeline_tag", nlohmann::json(nullptr))},
                             {"downloads", m.value("downloads", nlohmann::json(nullptr))},
                             {"likes", m.value("likes", nlohmann::json(nullptr))},
                             {"has_gguf", true}});
        }
        answer["total"] = results.size();
        answer["results"] = std::move(results);
        answer["offline"] = false;
        return answer;
      }
      why_local = "the hub's answer was not a list of models";
    } else {
      why_local = body.error().message();
    }
  } else {
    why_local = "offline mode (LEMONADE_OFFLINE / HF_HUB_OFFLINE)";
  }
  nlohmann::json results = local_search(q, limit);
  answer["total"] = results.size();
  answer["results"] = std::move(results);
  answer["offline"] = true;
  answer["message"] = "searched the catalogue and the local Hugging Face cache only: " + why_local;
  return answer;
}

Result<nlohmann::json> HubRegistry::variants(std::string_view checkpoint,
                                             std::string_view source) const {
  if (Status ok = hugging_face_only(source); !ok.ok()) {
    return std::move(ok).error();
  }
  const std::string repo = repo_of(checkpoint);
  if (repo.empty() || !is_valid_repo_id(repo)) {
    return Error(ErrorCode::kInvalidRequest,
                 "malformed 'checkpoint': expected a repository id of the form 'owner/name'",
                 "checkpoint");
  }
  std::vector<std::pair<std::string, std::uint64_t>> files;
  nlohmann::json answer = {{"checkpoint", repo},
                           {"source", "huggingface"},
                           {"recipe", "llamacpp"},
                           {"repo_kind", "gguf"},
                           {"suggested_name", repo.substr(repo.find('/') + 1)}};
  std::string why_local;
  if (!hub_.offline()) {
    auto listing = hub_.list(repo, {});
    if (listing.ok()) {
      for (const auto& f : listing->files) {
        files.emplace_back(f.path, f.size);
      }
      answer["offline"] = false;
    } else if (listing.error().code() == ErrorCode::kRemoteNotFound) {
      return std::move(listing).error();
    } else {
      why_local = listing.error().message();
    }
  } else {
    why_local = "offline mode (LEMONADE_OFFLINE / HF_HUB_OFFLINE)";
  }
  if (!why_local.empty()) {
    auto snapshot = hf::current_snapshot(hf::repo_dir(catalogue_.sources().hf_hub_cache, repo));
    if (!snapshot) {
      return Error(ErrorCode::kRemoteNotFound,
                   "checkpoint '" + repo +
                       "' is not in the local Hugging Face cache, and the "
                       "hub cannot be asked: " +
                       why_local,
                   "checkpoint");
    }
    for (const auto& f : hf::list_files(*snapshot)) {
      std::error_code ec;
      const auto size = fs::file_size(*snapshot / f.rel, ec);
      files.emplace_back(f.rel, ec ? 0 : size);
    }
    answer["offline"] = true;
    answer["message"] = "variants from the local Hugging Face cache only: " + why_local;
  }
  nlohmann::json found = gguf_variants(files);
  if (found["variants"].empty()) {
    return Error(ErrorCode::kRemoteNotFound, "no GGUF model files in repository " + repo,
                 "checkpoint");
  }
  answer["variants"] = std::move(found["variants"]);
  answer["mmproj_files"] = std::move(found["mmproj_files"]);
  answer["draft_files"] = std::move(found["draft_files"]);
  answer["suggested_labels"] = answer["mmproj_files"].empty()
                                   ? nlohmann::json::array({"chat"})
                                   : nlohmann::json::array({"chat", "vision"});
  return answer;
}

Result<nlohmann::json> HubRegistry::check_updates() const {
  if (hub_.offline()) {
    return Error(ErrorCode::kConflict,
                 "cannot check model updates offline (LEMONADE_OFFLINE / HF_HUB_OFFLINE)");
  }
  std::map<std::string, std::string> local_commit;          // repo -> refs/main
  std::vector<std::pair<std::string, std::string>> models;  // name, repo
  for (const auto& info : catalogue_.list(false)) {
    if (info.source != ModelSource::kBuiltIn && info.source != ModelSource::kUser) {
      continue;
    }
    const std::string repo = hf::split_checkpoint(info.checkpoint()).repo;
    if (!is_valid_repo_id(repo)) {
      continue;
    }
    if (!local_commit.contains(repo)) {
      std::ifstream ref(hf::repo_dir(catalogue_.sources().hf_hub_cache, repo) / "refs" / "main");
      std::string commit;
      ref >> commit;
      local_commit[repo] = commit;
    }
    models.emplace_back(catalogue_.public_id(info), repo);
  }
  std::map<std::string, bool> moved;
  for (const auto& [repo, commit] : local_commit) {
    auto listing = hub_.list(repo, {});
    if (!listing.ok()) {
      if (listing.error().code() == ErrorCode::kOffline ||
          listing.error().code() == ErrorCode::kNetworkError) {
        return Error(listing.error().code(),
                     "model update check failed: " + listing.error().message());
      }
      continue;  // gone or gated: nothing to compare
    }
    moved[repo] = !commit.empty() && listing->commit != commit;
  }
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, repo] : models) {
    if (moved[repo]) {
      names.push_back(name);
    }
  }
  return nlohmann::json{
      {"status", "success"}, {"updates_available", names.size()}, {"models", std::move(names)}};
}

}  // namespace lemon
