//===- Corpus.cpp - The training text embedded in every executable --------===//
//
// Part of the moe-mlir project.
//
// The default training data of the executables that moe-compile builds: the
// plain-text fortune databases of Debian 12's `fortunes` package and of
// `fortunes-min`, which it depends on (source package fortune-mod, version
// 1:1.99.1-7.3; files /usr/share/games/fortunes/<name> without the .dat
// indexes and the .u8 links), concatenated as raw bytes in the order listed
// in ../CMakeLists.txt: 2,576,674 bytes of English quotations, jokes,
// definitions and poems, each entry ended by a line holding `%`.
//
// Provenance and licence: BSD fortune(6) by Ken Arnold, Linux port by
// Florian LaRoche and Amy A. Lewis, Debian packaging by Helmut Geyer, Brian
// Bassett, Mark Ng, Pascal Hakim and Joshua Kwan; the `cookie` file is from
// Karl Lehenbauer's postings to alt.sources. The package's copyright file
// (/usr/share/doc/fortunes/copyright) puts it under the BSD licence of the
// Regents of the University of California (1991), whose notice and
// disclaimer are reproduced in README.md ("Training data").
//
// The bytes are included by the assembler (.incbin) from the file the build
// writes, so that no 2.5 MB array passes through the C++ front end.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#ifndef MOE_CORPUS_PATH
#error "MOE_CORPUS_PATH must name the concatenated corpus file"
#endif

__asm__(".section .rodata.moe_corpus,\"a\",@progbits\n"
        ".balign 64\n"
        ".globl moe_corpus_begin\n"
        ".hidden moe_corpus_begin\n"
        "moe_corpus_begin:\n"
        ".incbin \"" MOE_CORPUS_PATH "\"\n"
        ".globl moe_corpus_end\n"
        ".hidden moe_corpus_end\n"
        "moe_corpus_end:\n"
        ".byte 0\n"
        ".previous\n");

extern "C" {
extern const unsigned char moe_corpus_begin[];
extern const unsigned char moe_corpus_end[];
}

moe_driver::ByteSpan moe_driver::embeddedCorpus() {
  return {moe_corpus_begin,
          static_cast<size_t>(moe_corpus_end - moe_corpus_begin)};
}
