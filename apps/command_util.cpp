#include "command_util.h"

#include <unistd.h>

#include <exception>
#include <iostream>

#include "rexnlu/default_model.h"
#include "rexnlu/error.h"

namespace rexnlu::apps {

void add_model_option(CLI::App& cmd, std::string& model) {
  cmd.add_option("--model", model,
                 std::string("model directory (default: the bundled model ") + default_model_name() +
                     ", or $REXNLU_MODEL)");
}

std::filesystem::path resolve_model_dir(const std::string& model) {
  return model.empty() ? default_model_dir() : std::filesystem::path(model);
}

Engine load_engine(const std::string& model) {
  Engine engine = Engine::load(resolve_model_dir(model));
  for (const auto& w : engine.load_warnings()) std::cerr << "warning: " << w << '\n';
  return engine;
}

void run_command(const std::string& command, const std::function<void()>& body) {
  try {
    body();
    return;
  } catch (const CLI::Error&) {
    throw;  // already a CLI exit (e.g. a validation error raised inside the command)
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "rexnlu " << command << ": " << e.what() << '\n';
  }
  throw CLI::RuntimeError(1);
}

bool is_terminal(std::FILE* stream) { return ::isatty(::fileno(stream)) != 0; }

}  // namespace rexnlu::apps
