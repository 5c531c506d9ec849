// sgemm.cpp - the fp32 GEMM rate of this machine, for bench/cpu/run.sh.
//
// Times OpenBLAS's cblas_sgemm (C = A * B + C, row-major) at the sizes given
// as M N K triples on the command line, each --repeat times after a warm-up
// call, and prints one line per size: "sgemm M N K best_gflops median_gflops
// worst_gflops". The inputs are seeded pseudo-random values; the result is
// summed so that the calls cannot be optimised away.

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
  int repeat = 20;
  std::vector<long> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--repeat=", 9) == 0)
      repeat = std::atoi(argv[i] + 9);
    else
      sizes.push_back(std::atol(argv[i]));
  }
  if (sizes.empty() || sizes.size() % 3 != 0 || repeat < 1) {
    std::fprintf(stderr, "usage: %s [--repeat=N] M N K [M N K ...]\n", argv[0]);
    return 2;
  }
  unsigned state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1u << 24) - 0.5f;
  };
  double checksum = 0;
  for (size_t s = 0; s < sizes.size(); s += 3) {
    long m = sizes[s], n = sizes[s + 1], k = sizes[s + 2];
    std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
    for (float &v : a)
      v = next();
    for (float &v : b)
      v = next();
    std::vector<double> rates;
    for (int r = 0; r <= repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                  a.data(), k, b.data(), n, 1.0f, c.data(), n);
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (r > 0) // the first call warms up
        rates.push_back(2.0 * m * n * k / seconds / 1e9);
    }
    std::sort(rates.begin(), rates.end());
    std::printf("sgemm %ld %ld %ld %.2f %.2f %.2f\n", m, n, k, rates.back(),
                rates[rates.size() / 2], rates.front());
    for (float v : c)
      checksum += v;
  }
  std::fprintf(stderr, "checksum %g\n", checksum);
  return 0;
}
