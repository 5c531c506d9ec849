//===- CompileCache.h - moe-compile's cache of compiled objects -*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The object cache of moe-compile: an entry holds the object file of one
// compile, named by the SHA-256 of everything that determines that object
// (the compiler, the input and the options), so that compiling an unchanged
// model again only links. Entries are written atomically and checked before
// use; see README.md ("The compile cache").
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_COMPILECACHE_H
#define MOE_TOOLS_MOE_COMPILE_COMPILECACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"

#include <memory>
#include <string>

namespace mlir::moe {

/// Accumulates the fields of a cache key. Each field is hashed with its name
/// and length, so that no two different field lists hash the same bytes.
class CacheKeyBuilder {
public:
  /// Adds the field `name` with the value `value`.
  void add(llvm::StringRef name, llvm::StringRef value);

  /// The key: the lowercase hex SHA-256 of the fields added so far.
  std::string finish();

private:
  llvm::SHA256 hasher;
};

/// The identity of the running compiler: the SHA-256 of its own executable
/// file (`argv0`, resolved like getMainExecutable), which changes whenever
/// any of the code linked into it changes. Fails if it cannot be read.
llvm::Expected<std::string> getCompilerIdentity(const char *argv0,
                                                void *mainAddress);

/// Names the shared library (or executable) that holds `address`, with its
/// size and modification time, e.g. "/usr/lib/llvm-22/lib/libMLIR.so.22.1
/// 123456 1700000000": the dynamically linked LLVM and MLIR that compile
/// the object, which the executable's own hash does not cover. Empty if
/// unknown.
std::string describeLoadedFile(const void *address);

/// The cache folder when --cache-dir is not given: $XDG_CACHE_HOME/moe-mlir,
/// else ~/.cache/moe-mlir. Empty when neither is known.
std::string getDefaultCacheDirectory();

/// One entry of the cache: `<dir>/<key>.moeobj`. The file holds a header
/// (format version, payload size, payload SHA-256) and then the object file.
class CompileCacheEntry {
public:
  CompileCacheEntry(llvm::StringRef dir, llvm::StringRef key);

  /// The entry's file.
  llvm::StringRef getPath() const { return path; }

  enum class LookupStatus {
    /// The entry exists and is intact; `object` holds the object file.
    Hit,
    /// There is no entry.
    Miss,
    /// The entry exists but is damaged (truncated, wrong size or hash, not
    /// an entry); `reason` says how. It must be compiled and stored again.
    Corrupt,
  };

  /// Reads and verifies the entry.
  LookupStatus lookup(std::unique_ptr<llvm::MemoryBuffer> &object,
                      std::string &reason) const;

  /// Writes `object` as the entry: into a temporary file in the cache
  /// folder, renamed over the entry once complete, so that a concurrent
  /// reader sees either no entry, the old one or the whole new one.
  llvm::Error store(llvm::StringRef object) const;

private:
  std::string dir;
  std::string path;
};

} // namespace mlir::moe

#endif // MOE_TOOLS_MOE_COMPILE_COMPILECACHE_H
