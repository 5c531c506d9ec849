//===- TokenFile.h - llm.c token files ---------------------------*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// The token files of karpathy/llm.c (dev/data/data_common.py): a header of
// 256 little-endian int32 (magic 20240520, version, token count, then
// zeros) and the tokens, uint16 in version 1 and uint32 in version 2. The
// reader trusts nothing: it checks the header, that the file holds exactly
// the tokens the header announces, and every token id against the
// vocabulary, and reports the first violation as a message naming the
// file. It never exits, aborts or throws, so that a fuzzer can call it on
// any bytes. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_TOKENFILE_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_TOKENFILE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moe_driver {

constexpr int32_t kTokenFileMagic = 20240520;
constexpr size_t kTokenFileHeaderBytes = 256 * 4;

/// Whether `data[0, size)` starts with the token file's magic.
bool hasTokenFileMagic(const unsigned char *data, size_t size);

/// Parses the token file `data[0, size)` (`fileName` only names it in
/// messages) and appends its tokens to `tokens`. Returns an empty string on
/// success, otherwise the first violation as `token file '<file>': ...`:
/// a file shorter than the header, a wrong magic, a version other than 1
/// or 2, a negative token count, a size other than header + count x token
/// width, a token id >= `vocab`.
std::string parseTokenFile(const unsigned char *data, size_t size,
                           const std::string &fileName, uint64_t vocab,
                           std::vector<uint32_t> &tokens);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_TOKENFILE_H
