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

void add_load_options(CLI::App& cmd, LoadOptions& options, const std::string& threads_flag) {
  auto device = [&options](const std::string& name) {
    const auto d = parse_device(name);
    if (!d) throw CLI::ValidationError("--device", "must be cpu or cuda, not " + name);
    options.device = *d;
  };
  auto precision = [&options](const std::string& name) {
    const auto p = parse_precision(name);
    if (!p) throw CLI::ValidationError("--precision", "must be fp32, fp16, bf16 or int8, not " + name);
    options.precision = *p;
  };
  cmd.add_option_function<std::string>("--device", device, "where the model runs: cpu (default) or cuda");
  cmd.add_option_function<std::string>("--precision", precision, "weights of the dense layers: fp32 (default), fp16, bf16, int8");
  cmd.add_option(threads_flag, options.threads, "CPU worker threads (0 = OMP_NUM_THREADS or one per core)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

Engine load_engine(const std::string& model, const LoadOptions& options) {
  Engine engine = Engine::load(resolve_model_dir(model), options);
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
