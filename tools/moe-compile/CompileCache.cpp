//===- CompileCache.cpp - moe-compile's cache of compiled objects ---------===//
//
// Part of the moe-mlir project.
//
// Keys, the entry format and the atomic store of moe-compile's object cache
// (CompileCache.h). Hashing is LLVM's SHA256, file handling llvm::sys::fs.
//
//===----------------------------------------------------------------------===//

#include "CompileCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

using namespace mlir::moe;
using llvm::StringRef;

/// The first line of every entry; bumped when the format changes.
static constexpr StringRef kEntryMagic = "moe-compile-cache-entry 1";

static std::string sha256Hex(StringRef bytes) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)),
                     /*LowerCase=*/true);
}

void CacheKeyBuilder::add(StringRef name, StringRef value) {
  std::string head =
      (name + " " + llvm::Twine(uint64_t(value.size())) + "\n").str();
  hasher.update(head);
  hasher.update(value);
  hasher.update("\n");
}

std::string CacheKeyBuilder::finish() {
  return llvm::toHex(hasher.final(), /*LowerCase=*/true);
}

llvm::Expected<std::string> mlir::moe::getCompilerIdentity(const char *argv0,
                                                           void *mainAddress) {
  std::string self = llvm::sys::fs::getMainExecutable(argv0, mainAddress);
  if (self.empty())
    return llvm::createStringError("cannot locate moe-compile's executable");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(self, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return llvm::createStringError("cannot read " + self + ": " +
                                   file.getError().message());
  return sha256Hex((*file)->getBuffer());
}

std::string mlir::moe::describeLoadedFile(const void *address) {
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname)
    return "";
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(info.dli_fname, status))
    return "";
  return (llvm::Twine(info.dli_fname) + " " + llvm::Twine(status.getSize()) +
          " " +
          llvm::Twine(llvm::sys::toTimeT(status.getLastModificationTime())))
      .str();
}

std::string mlir::moe::getDefaultCacheDirectory() {
  // cache_directory is $XDG_CACHE_HOME, else ~/.cache, on Linux.
  llvm::SmallString<256> dir;
  if (!llvm::sys::path::cache_directory(dir))
    return "";
  llvm::sys::path::append(dir, "moe-mlir");
  return std::string(dir);
}

CompileCacheEntry::CompileCacheEntry(StringRef dir, StringRef key)
    : dir(dir.str()) {
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, key + ".moeobj");
  path = std::string(file);
}

CompileCacheEntry::LookupStatus
CompileCacheEntry::lookup(std::unique_ptr<llvm::MemoryBuffer> &object,
                          std::string &reason) const {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file) {
    if (file.getError() == std::errc::no_such_file_or_directory)
      return LookupStatus::Miss;
    reason = "cannot read it: " + file.getError().message();
    return LookupStatus::Corrupt;
  }
  // Three header lines, then exactly `size` bytes whose SHA-256 is `sha256`.
  StringRef rest = (*file)->getBuffer();
  auto [magic, afterMagic] = rest.split('\n');
  auto [sizeLine, afterSize] = afterMagic.split('\n');
  auto [hashLine, payload] = afterSize.split('\n');
  uint64_t size = 0;
  if (magic != kEntryMagic || !sizeLine.consume_front("size ") ||
      sizeLine.getAsInteger(10, size) || !hashLine.consume_front("sha256 ") ||
      hashLine.size() != 64) {
    reason = "not a moe-compile cache entry (bad header)";
    return LookupStatus::Corrupt;
  }
  if (payload.size() != size) {
    reason = "the object has " + std::to_string(payload.size()) +
             " bytes, the header says " + std::to_string(size);
    return LookupStatus::Corrupt;
  }
  if (sha256Hex(payload) != hashLine) {
    reason = "the object's SHA-256 differs from the header's";
    return LookupStatus::Corrupt;
  }
  object = llvm::MemoryBuffer::getMemBufferCopy(payload, path);
  return LookupStatus::Hit;
}

llvm::Error CompileCacheEntry::store(StringRef object) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(ec, "cannot create " + dir + ": " +
                                           ec.message());
  // A unique name next to the entry (same file system, so the rename is
  // atomic); TempFile removes it if moe-compile dies before the rename.
  llvm::Expected<llvm::sys::fs::TempFile> temp =
      llvm::sys::fs::TempFile::create(path + ".tmp-%%%%%%%%");
  if (!temp)
    return temp.takeError();
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os << kEntryMagic << "\n"
       << "size " << object.size() << "\n"
       << "sha256 " << sha256Hex(object) << "\n"
       << object;
    os.flush();
    if (os.has_error()) {
      std::error_code ec = os.error();
      std::string name = temp->TmpName;
      os.clear_error();
      llvm::consumeError(temp->discard());
      return llvm::createStringError(ec, "cannot write " + name + ": " +
                                             ec.message());
    }
  }
  if (llvm::Error err = temp->keep(path))
    return llvm::joinErrors(
        std::move(err),
        llvm::createStringError("cannot rename the entry into place"));
  return llvm::Error::success();
}
