// A shared library loaded (dlopen) the first time it is needed, rather than
// by the dynamic linker at start (idle RSS). libcurl and
// libarchive pull in some thirty libraries (TLS, Kerberos, LDAP, ICU,
// compressors) that an idle router, or one that only serves models already
// downloaded, never uses; they cost about 5 MiB of resident memory when
// mapped at start.
//
// Thread-safety: bind_symbol may be called from any thread; callers load a
// library once (std::call_once).
#pragma once

#include <dlfcn.h>

#include <string>

namespace lemon::download {

// Opens `soname` (RTLD_NOW | RTLD_LOCAL); null with `error` set on failure.
inline void* open_library(const char* soname, std::string& error) {
  void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    error = std::string("cannot load ") + soname + ": " + (why != nullptr ? why : "unknown error");
  }
  return handle;
}

// Sets `fn` to `name` in `handle`; false (and `error`) when it is missing.
template <class Fn>
bool bind_symbol(void* handle, const char* name, Fn& fn, std::string& error) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (fn == nullptr && error.empty()) {
    error = std::string("the library lacks ") + name;
  }
  return fn != nullptr;
}

}  // namespace lemon::download
