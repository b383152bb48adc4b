#include "hub_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

namespace fake::hub {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::uint64_t kLfsMinSize = 10ull << 20;  // larger files are LFS whatever their name

std::string to_hex(const unsigned char* d, unsigned n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::size_t{2} * n);
  for (unsigned i = 0; i < n; ++i) {
    out += kDigits[d[i] >> 4];
    out += kDigits[d[i] & 0xf];
  }
  return out;
}

class Digest {
 public:
  explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(ctx_, md, nullptr);
  }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(const void* p, std::size_t n) { EVP_DigestUpdate(ctx_, p, n); }
  std::string hex() {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_, d, &n);
    return to_hex(d, n);
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string digest_hex(const EVP_MD* md, std::string_view text) {
  Digest d(md);
  d.update(text.data(), text.size());
  return d.hex();
}

// One streamed pass over the file feeds both digests.
Hashes hash_file(const std::string& path, std::uint64_t size) {
  Digest sha256(EVP_sha256());
  Digest sha1(EVP_sha1());
  const std::string header = "blob " + std::to_string(size);
  sha1.update(header.c_str(), header.size() + 1);  // with its NUL
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::vector<char> buf(1 << 20);
    ssize_t n = 0;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
      sha256.update(buf.data(), static_cast<std::size_t>(n));
      sha1.update(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fd);
  }
  return {sha256.hex(), sha1.hex()};
}

std::vector<std::string_view> split_path(std::string_view p) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = p.find('/', start);
    out.push_back(p.substr(start, slash == std::string_view::npos ? p.npos : slash - start));
    if (slash == std::string_view::npos) {
      return out;
    }
    start = slash + 1;
  }
}

}  // namespace

Hashes hashes_of_text(std::string_view text) {
  return {digest_hex(EVP_sha256(), text), digest_hex(EVP_sha1(), text)};
}

bool is_lfs(std::string_view rel, std::uint64_t size) {
  for (std::string_view ext : {".gguf", ".bin", ".safetensors", ".onnx", ".pt", ".data"}) {
    if (rel.ends_with(ext)) {
      return true;
    }
  }
  return size > kLfsMinSize;
}

// A relative path that stays inside its folder and names no dot-entry at the
// top (those are the hub's own files, like .fake.json).
bool is_safe_rel(std::string_view rel) {
  std::vector<std::string_view> parts = split_path(rel);
  for (std::string_view part : parts) {
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
  }
  return parts.front().front() != '.';
}

bool is_repo_part(std::string_view part) {
  return !part.empty() && part.front() != '.' && part.find('/') == std::string_view::npos;
}

// Percent-encodes everything but unreserved characters and '/'.
std::string escape_path(std::string_view p) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : p) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    }
  }
  return out;
}

std::vector<std::string> RepoFiles::repos() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator org(root_, ec), end; !ec && org != end; org.increment(ec)) {
    if (!org->is_directory(ec) || org->path().filename().string().starts_with(".")) {
      continue;
    }
    for (fs::directory_iterator name(org->path(), ec); !ec && name != end; name.increment(ec)) {
      if (name->is_directory(ec)) {
        out.push_back(org->path().filename().string() + "/" + name->path().filename().string());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool RepoFiles::repo_exists(const std::string& repo) const {
  std::error_code ec;
  return fs::is_directory(fs::path(root_) / repo, ec);
}

std::string RepoFiles::token_of(const std::string& repo) const {
  std::ifstream in(fs::path(root_) / repo / ".fake.json");
  if (!in) {
    return {};
  }
  json j = json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("token") || !j["token"].is_string()) {
    return {};
  }
  return j["token"].get<std::string>();
}

std::vector<FileInfo> RepoFiles::files(const std::string& repo) {
  std::vector<FileInfo> out;
  const fs::path dir = fs::path(root_) / repo;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string rel = it->path().lexically_relative(dir).generic_string();
    if (it.depth() == 0 && rel.starts_with(".")) {
      if (it->is_directory(ec)) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (it->is_regular_file(ec)) {
      if (auto f = info(it->path().string(), rel)) {
        out.push_back(std::move(*f));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rel < b.rel; });
  return out;
}

std::optional<FileInfo> RepoFiles::file(const std::string& repo, const std::string& rel) {
  if (!is_safe_rel(rel)) {
    return std::nullopt;
  }
  return info((fs::path(root_) / repo / rel).string(), rel);
}

std::optional<FileInfo> RepoFiles::release_asset(const std::string& rel) {
  if (!is_safe_rel(rel)) {
    return std::nullopt;
  }
  return info((fs::path(root_) / "_releases" / rel).string(), rel);
}

std::string RepoFiles::commit_of(const std::vector<FileInfo>& files) {
  std::string text;
  for (const auto& f : files) {
    text += f.rel + '\0' + f.hashes.sha256 + '\n';
  }
  return digest_hex(EVP_sha1(), text);
}

std::optional<FileInfo> RepoFiles::info(const std::string& path, const std::string& rel) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  FileInfo f;
  f.rel = rel;
  f.path = path;
  f.size = static_cast<std::uint64_t>(st.st_size);
  f.lfs = is_lfs(rel, f.size);
  const std::string key = path + '\0' + std::to_string(f.size) + '\0' +
                          std::to_string(st.st_mtim.tv_sec) + '.' +
                          std::to_string(st.st_mtim.tv_nsec);
  f.hashes = hashes(path, f.size, key);
  return f;
}

Hashes RepoFiles::hashes(const std::string& path, std::uint64_t size, const std::string& key) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return hashing_.count(key) == 0; });
  if (auto it = hash_cache_.find(key); it != hash_cache_.end()) {
    return it->second;
  }
  hashing_.insert(key);
  lock.unlock();
  Hashes h = hash_file(path, size);
  lock.lock();
  hashing_.erase(key);
  hash_cache_[key] = h;
  cv_.notify_all();
  return h;
}

}  // namespace fake::hub
