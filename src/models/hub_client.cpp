#include "lemon/models/hub_client.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lemon/core/text.h"
#include "lemon/download/url.h"

namespace lemon {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool env_true(const char* name) {
  std::string v = env(name);
  for (auto& c : v) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return {};
  }
  std::stringstream text;
  text << in.rdbuf();
  return std::string(trim_whitespace(text.str()));
}

std::string hub_token() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (auto t = std::string(trim_whitespace(env(name))); !t.empty()) {
      return t;
    }
  }
  if (auto path = env("HF_TOKEN_PATH"); !path.empty()) {
    return read_token_file(path);
  }
  std::string hf_home = env("HF_HOME");
  if (hf_home.empty()) {
    std::string home = env("HOME");
    if (home.empty()) {
      return {};
    }
    hf_home = home + "/.cache/huggingface";
  }
  return read_token_file(hf_home + "/token");
}

bool is_hex(std::string_view s, std::size_t digits) {
  if (s.size() != digits) {
    return false;
  }
  for (char c : s) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) {
      return false;
    }
  }
  return true;
}

Error bad_listing(std::string_view repo, const std::string& what) {
  return Error(ErrorCode::kUpstreamProtocol,
               "the hub's file listing for " + std::string(repo) + " is unusable: " + what);
}

}  // namespace

HubSettings HubSettings::from_environment() {
  HubSettings s;
  if (auto endpoint = std::string(trim_whitespace(env("HF_ENDPOINT"))); !endpoint.empty()) {
    while (!endpoint.empty() && endpoint.back() == '/') {
      endpoint.pop_back();
    }
    s.endpoint = endpoint;
  }
  s.token = hub_token();
  s.offline = env_true("LEMONADE_OFFLINE") || env_true("HF_HUB_OFFLINE");
  s.transfer = download::TransferOptions::from_environment();
  return s;
}

const HubFile* RepoListing::find(std::string_view path) const {
  for (const auto& f : files) {
    if (f.path == path) {
      return &f;
    }
  }
  return nullptr;
}

bool is_safe_repo_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.size() > 1024) {
    return false;
  }
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\' || u < 0x20 || u == 0x7f) {
      return false;
    }
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    std::string_view seg = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return false;
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return true;
}

bool is_valid_repo_id(std::string_view repo) {
  std::size_t slash = repo.find('/');
  if (slash == std::string_view::npos || repo.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  for (std::string_view part : {repo.substr(0, slash), repo.substr(slash + 1)}) {
    if (part.empty() || part == "." || part == ".." || part.front() == '-' || part.size() > 96) {
      return false;
    }
    for (char c : part) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-') {
        return false;
      }
    }
  }
  return true;
}

Result<RepoListing> parse_repo_listing(std::string_view repo, std::string_view body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception&) {
    return bad_listing(repo, "not JSON");
  }
  if (!j.is_object()) {
    return bad_listing(repo, "not a JSON object");
  }
  RepoListing listing;
  listing.repo = std::string(repo);
  auto sha = j.find("sha");
  if (sha == j.end() || !sha->is_string() || !is_hex(sha->get<std::string>(), 40)) {
    return bad_listing(repo, "no commit sha");
  }
  listing.commit = ascii_lower(sha->get<std::string>());
  auto siblings = j.find("siblings");
  if (siblings == j.end() || !siblings->is_array()) {
    return bad_listing(repo, "no \"siblings\" array");
  }
  for (const auto& s : *siblings) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) {
      return bad_listing(repo, "a sibling without \"rfilename\"");
    }
    HubFile f;
    f.path = s["rfilename"].get<std::string>();
    if (!is_safe_repo_path(f.path)) {
      return bad_listing(repo, "the file name '" + f.path + "' would escape the cache folder");
    }
    if (auto size = s.find("size"); size != s.end() && size->is_number_unsigned()) {
      f.size = size->get<std::uint64_t>();
    }
    if (auto blob = s.find("blobId"); blob != s.end() && blob->is_string()) {
      f.blob_id = ascii_lower(blob->get<std::string>());
    }
    if (auto lfs = s.find("lfs"); lfs != s.end() && lfs->is_object()) {
      auto sha256 = lfs->find("sha256");
      if (sha256 == lfs->end() || !sha256->is_string() || !is_hex(sha256->get<std::string>(), 64)) {
        return bad_listing(repo, "LFS file '" + f.path + "' has no sha256");
      }
      f.sha256 = ascii_lower(sha256->get<std::string>());
      if (auto size = lfs->find("size"); size != lfs->end() && size->is_number_unsigned()) {
        f.size = size->get<std::uint64_t>();
      }
    }
    if (!f.sha256 && !is_hex(f.blob_id, 40)) {
      return bad_listing(repo, "file '" + f.path + "' has neither an LFS sha256 nor a blobId");
    }
    listing.files.push_back(std::move(f));
  }
  return listing;
}

Result<RepoListing> HubClient::list(std::string_view repo, const download::CancelledFn& cancelled,
                                    std::string_view revision) const {
  if (settings_.offline) {
    return Error(ErrorCode::kOffline, "offline mode (LEMONADE_OFFLINE): cannot list " +
                                          std::string(repo) + " on the hub");
  }
  if (!is_valid_repo_id(repo)) {
    return Error(ErrorCode::kInvalidRequest,
                 "'" + std::string(repo) + "' is not a Hugging Face repository id (org/name)",
                 "checkpoint");
  }
  std::string url = settings_.endpoint + "/api/models/" + std::string(repo) + "/revision/" +
                    download::escape_segment(revision) + "?blobs=true";
  auto body = download::fetch_text(url, settings_.token, settings_.transfer, cancelled);
  if (!body.ok()) {
    const Error& e = body.error();
    switch (e.code()) {
      case ErrorCode::kRemoteNotFound:
        return Error(ErrorCode::kRemoteNotFound,
                     "repository " + std::string(repo) + " (revision " + std::string(revision) +
                         ") was not found on " + download::url_host(settings_.endpoint),
                     "checkpoint");
      case ErrorCode::kRemoteUnauthorized:
        return Error(
            ErrorCode::kRemoteUnauthorized,
            "repository " + std::string(repo) + " is gated or private: " +
                (settings_.token.empty() ? "no Hugging Face token is set (set HF_TOKEN or run "
                                           "`huggingface-cli login`)"
                                         : "the Hugging Face token was refused"),
            "checkpoint");
      case ErrorCode::kRemoteForbidden:
        return Error(ErrorCode::kRemoteForbidden,
                     "the Hugging Face token has no access to " + std::string(repo) +
                         " (accept its terms on the hub, or use a token that can read it)",
                     "checkpoint");
      default:
        return std::move(body).error();
    }
  }
  return parse_repo_listing(repo, *body);
}

std::string HubClient::file_url(std::string_view repo, std::string_view commit,
                                std::string_view path) const {
  return settings_.endpoint + "/" + std::string(repo) + "/resolve/" + std::string(commit) + "/" +
         download::escape_path(path);
}

}  // namespace lemon
