// rexnlu command line: one subcommand per job.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "bench_command.h"
#include "eval_command.h"
#include "extract_command.h"
#include "info_command.h"
#if REXNLU_HAVE_SERVER
#include "serve_command.h"
#endif
#include "tokenize_command.h"

int main(int argc, char** argv) {
  // Buffers of 256 KiB and more (activation blocks, BLAS packing buffers, large logits) are mapped
  // and returned to the system when freed. glibc's default threshold moves up to 32 MiB after the
  // first large free, after which such buffers fragment the heap arenas and a long-running
  // `serve` or batch `extract` grows with every new batch shape (docs/benchmarks.md, load test).
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  // One heap arena per core instead of glibc's 8 per core: each of the server's 64 handler threads
  // would otherwise get an arena of its own and keep its own slack, and RSS crept up by ~1 MB a
  // minute as more threads took turns (flat with this cap; docs/benchmarks.md, load test).
  mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  CLI::App app{"rexnlu: schema-guided Chinese universal NLU (RexUniNLU) in C++"};
  app.require_subcommand(1);
  rexnlu::apps::add_extract_command(app);
  rexnlu::apps::add_eval_command(app);
  rexnlu::apps::add_info_command(app);
  rexnlu::apps::add_bench_command(app);
#if REXNLU_HAVE_SERVER  // -DREXNLU_SERVER=OFF builds without Boost and without `serve`
  rexnlu::apps::add_serve_command(app);
#endif
  rexnlu::apps::add_tokenize_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
