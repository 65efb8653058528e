// rexnlu command line: one subcommand per job.
#include <CLI/CLI.hpp>

#include <iostream>

#include "bench_command.h"
#include "eval_command.h"
#include "extract_command.h"
#include "info_command.h"
#include "serve_command.h"
#include "tokenize_command.h"

int main(int argc, char** argv) {
  CLI::App app{"rexnlu: schema-guided Chinese universal NLU (RexUniNLU) in C++"};
  app.require_subcommand(1);
  rexnlu::apps::add_extract_command(app);
  rexnlu::apps::add_eval_command(app);
  rexnlu::apps::add_info_command(app);
  rexnlu::apps::add_bench_command(app);
  rexnlu::apps::add_serve_command(app);
  rexnlu::apps::add_tokenize_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
