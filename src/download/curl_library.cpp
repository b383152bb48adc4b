#include "curl_library.h"

#include <mutex>

#include "lazy_library.h"

namespace lemon::download {

const CurlLibrary& curl_library() {
  static CurlLibrary lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = open_library("libcurl.so.4", lib.error);
    if (h == nullptr) {
      return;
    }
    CURLcode (*global_init)(long) = nullptr;
    bool ok = bind_symbol(h, "curl_global_init", global_init, lib.error);
    ok = bind_symbol(h, "curl_easy_init", lib.easy_init, lib.error) && ok;
    ok = bind_symbol(h, "curl_easy_setopt", lib.easy_setopt, lib.error) && ok;
    ok = bind_symbol(h, "curl_easy_getinfo", lib.easy_getinfo, lib.error) && ok;
    ok = bind_symbol(h, "curl_easy_perform", lib.easy_perform, lib.error) && ok;
    ok = bind_symbol(h, "curl_easy_cleanup", lib.easy_cleanup, lib.error) && ok;
    ok = bind_symbol(h, "curl_easy_strerror", lib.easy_strerror, lib.error) && ok;
    ok = bind_symbol(h, "curl_easy_escape", lib.easy_escape, lib.error) && ok;
    ok = bind_symbol(h, "curl_free", lib.free, lib.error) && ok;
    ok = bind_symbol(h, "curl_slist_append", lib.slist_append, lib.error) && ok;
    ok = bind_symbol(h, "curl_slist_free_all", lib.slist_free_all, lib.error) && ok;
    ok = bind_symbol(h, "curl_url", lib.url, lib.error) && ok;
    ok = bind_symbol(h, "curl_url_set", lib.url_set, lib.error) && ok;
    ok = bind_symbol(h, "curl_url_get", lib.url_get, lib.error) && ok;
    ok = bind_symbol(h, "curl_url_cleanup", lib.url_cleanup, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_init", lib.multi_init, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_add_handle", lib.multi_add_handle, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_remove_handle", lib.multi_remove_handle, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_setopt", lib.multi_setopt, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_socket_action", lib.multi_socket_action, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_info_read", lib.multi_info_read, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_cleanup", lib.multi_cleanup, lib.error) && ok;
    ok = bind_symbol(h, "curl_multi_strerror", lib.multi_strerror, lib.error) && ok;
    ok = bind_symbol(h, "curl_share_init", lib.share_init, lib.error) && ok;
    ok = bind_symbol(h, "curl_share_setopt", lib.share_setopt, lib.error) && ok;
    ok = bind_symbol(h, "curl_share_cleanup", lib.share_cleanup, lib.error) && ok;
    if (!ok) {
      return;
    }
    if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      lib.error = "curl_global_init failed";
      return;
    }
    lib.loaded = true;
  });
  return lib;
}

}  // namespace lemon::download
