#include "lemon/download/checksum.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <openssl/evp.h>

#include "lemon/core/enum_names.h"
#include "lemon/core/hex.h"

namespace lemon::download {

namespace {

constexpr auto kChecksumKindNames =
    std::to_array<EnumName<Checksum::Kind>>({{Checksum::Kind::kNone, "none"},
                                             {Checksum::Kind::kSha256, "sha256"},
                                             {Checksum::Kind::kGitBlobSha1, "git-sha1"}});

}  // namespace

const char* checksum_kind_name(Checksum::Kind kind) {
  return name_of(kChecksumKindNames, kind, "none");
}

struct Hasher::Impl {
  Checksum::Kind kind = Checksum::Kind::kNone;
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Hasher::Hasher(Checksum::Kind kind, std::uint64_t total_size) : impl_(std::make_unique<Impl>()) {
  impl_->kind = kind;
  if (kind == Checksum::Kind::kNone) {
    return;
  }
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, kind == Checksum::Kind::kSha256 ? EVP_sha256() : EVP_sha1(),
                    nullptr);
  if (kind == Checksum::Kind::kGitBlobSha1) {
    // git hashes "blob <size>\0" followed by the content.
    std::string header = "blob " + std::to_string(total_size);
    EVP_DigestUpdate(impl_->ctx, header.data(), header.size() + 1);  // with the NUL
  }
}

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

void Hasher::update(const void* data, std::size_t size) {
  if (impl_ && impl_->ctx != nullptr && size > 0) {
    EVP_DigestUpdate(impl_->ctx, data, size);
  }
}

std::string Hasher::finish() {
  if (!impl_ || impl_->ctx == nullptr) {
    return {};
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, digest, &len);
  EVP_MD_CTX_free(impl_->ctx);
  impl_->ctx = nullptr;
  return lower_hex(digest, len);
}

namespace {

// Feeds up to `limit` bytes of `file` into `hasher`; the bytes fed.
Result<std::uint64_t> feed(const std::filesystem::path& file, std::uint64_t limit, Hasher& hasher) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(ErrorCode::kInternal,
                 "cannot read " + file.string() + ": " + errno_message(errno));
  }
  std::vector<char> buf(1u << 20);
  std::uint64_t done = 0;
  while (done < limit) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), limit - done));
    ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Error(ErrorCode::kInternal,
                   "cannot read " + file.string() + ": " + errno_message(err));
    }
    if (n == 0) {
      break;
    }
    hasher.update(buf.data(), static_cast<std::size_t>(n));
    done += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return done;
}

}  // namespace

Result<std::string> hash_file(const std::filesystem::path& file, Checksum::Kind kind) {
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    return Error(ErrorCode::kInternal, "cannot read " + file.string() + ": " + ec.message());
  }
  Hasher hasher(kind, size);
  auto fed = feed(file, size, hasher);
  if (!fed.ok()) {
    return std::move(fed).error();
  }
  return hasher.finish();
}

Status hash_prefix(const std::filesystem::path& file, std::uint64_t bytes, Hasher& hasher) {
  auto fed = feed(file, bytes, hasher);
  if (!fed.ok()) {
    return std::move(fed).error();
  }
  if (*fed != bytes) {
    return Error(ErrorCode::kInternal, file.string() + " is shorter than expected");
  }
  return ok_status();
}

}  // namespace lemon::download
