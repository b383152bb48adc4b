// HubClient: the Hugging Face hub as the model store sees it:
// a repository's file listing at a revision, and the URL of each file.
//
// - The hub is HF_ENDPOINT (default https://huggingface.co), as in
//   huggingface_hub. The token is HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else
//   the file HF_TOKEN_PATH, else $HF_HOME/token (~/.cache/huggingface/token,
//   what `huggingface-cli login` writes). It is sent as a bearer token and
//   never logged or put in a message.
// - Offline (LEMONADE_OFFLINE or HF_HUB_OFFLINE set to 1/true/yes/on): every
//   call fails with kOffline before touching the network.
// - Listings are checked: a file name that is absolute, holds "..", an empty
//   segment, a backslash or a control character would escape the cache
//   folder, and the whole listing is refused (kUpstreamProtocol).
//
// Thread-safety: const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/download/transfer.h"

namespace lemon {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string token;                                // empty: anonymous
  bool offline = false;
  download::TransferOptions transfer;

  // From HF_ENDPOINT, the token sources above, LEMONADE_OFFLINE /
  // HF_HUB_OFFLINE, and the download timeouts.
  static HubSettings from_environment();
};

// One file of a repository at a commit.
struct HubFile {
  std::string path;  // "rfilename": '/'-separated, relative to the repo root
  std::uint64_t size = 0;
  std::string blob_id;                // git blob sha1 (non-LFS files' etag)
  std::optional<std::string> sha256;  // LFS files' content hash (their etag)
  // The name of the file's blob in the cache: the etag huggingface_hub uses
  // (sha256 for LFS files, the git blob sha1 otherwise).
  const std::string& etag() const { return sha256 ? *sha256 : blob_id; }
};

struct RepoListing {
  std::string repo;    // "org/name"
  std::string commit;  // 40 hex digits
  std::vector<HubFile> files;
  const HubFile* find(std::string_view path) const;
};

// True when `path` can be placed under a snapshot folder without escaping
// it (relative, no "." or ".." or empty segment, no '\\', no control bytes).
bool is_safe_repo_path(std::string_view path);

// True for "org/name" with one '/', and [A-Za-z0-9._-] in each part (not
// "." or ".." and not starting with '-').
bool is_valid_repo_id(std::string_view repo);

// Parses the hub's /api/models answer (with blobs=true). kUpstreamProtocol
// when it is not the expected JSON or lists an unsafe file name.
Result<RepoListing> parse_repo_listing(std::string_view repo, std::string_view body);

class HubClient {
 public:
  explicit HubClient(HubSettings settings) : settings_(std::move(settings)) {}

  const HubSettings& settings() const { return settings_; }
  bool offline() const { return settings_.offline; }

  // GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true.
  // Errors: kOffline, kRemoteNotFound (unknown repo or revision),
  // kRemoteUnauthorized / kRemoteForbidden (gated or private; the message
  // says whether a token was sent), kNetworkError, kUpstreamProtocol.
  Result<RepoListing> list(std::string_view repo, const download::CancelledFn& cancelled,
                           std::string_view revision = "main") const;

  // {endpoint}/{repo}/resolve/{commit}/{path}, path segments escaped.
  std::string file_url(std::string_view repo, std::string_view commit, std::string_view path) const;

 private:
  HubSettings settings_;
};

}  // namespace lemon
