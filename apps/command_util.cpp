#include "command_util.h"

#include <unistd.h>

#include <charconv>
#include <exception>
#include <iostream>
#include <memory>

#include "rexnlu/default_model.h"
#include "rexnlu/error.h"

namespace rexnlu::apps {

void add_model_option(CLI::App& cmd, std::string& model) {
  cmd.add_option("--model", model,
                 std::string("model directory (default: the bundled model ") + default_model_name() +
                     ", or $REXNLU_MODEL)");
}

CLI::Validator int_range(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& given) -> std::string {
        int64_t v = 0;
        const char* end = given.data() + given.size();
        const auto [stop, ec] = std::from_chars(given.data(), end, v);
        const bool whole = stop == end && !given.empty();
        if (whole && (ec == std::errc::result_out_of_range || (ec == std::errc() && (v < lo || v > hi))))
          return given + " is out of range: give a whole number from " + range;
        if (!whole || ec != std::errc()) return "'" + given + "' is not a whole number (give " + range + ")";
        return {};
      },
      "INT " + range);
}

std::filesystem::path resolve_model_dir(const std::string& model) {
  return model.empty() ? default_model_dir() : std::filesystem::path(model);
}

void add_limit_options(CLI::App& cmd, Limits& l) {
  const auto positive = int_range(1, INT64_MAX);
  cmd.add_option("--max-text-bytes", l.max_text_bytes, "UTF-8 bytes per text at most")->capture_default_str()->check(positive);
  cmd.add_option("--max-schema-types", l.max_schema_types, "type names per schema at most (all levels)")
      ->capture_default_str()->check(positive);
  cmd.add_option("--max-schema-depth", l.max_schema_depth, "schema levels at most")->capture_default_str()->check(int_range(1, 8));
  cmd.add_option("--max-paths", l.max_paths, "spans found per text at most (paths and next-level prefixes)")
      ->capture_default_str()->check(positive);
  cmd.add_option("--max-output-bytes", l.max_output_bytes, "bytes of types and spans found per text at most")
      ->capture_default_str()->check(positive);
  cmd.add_option("--max-sequences", l.max_sequences, "model sequences per text at most (chunks x windows x levels)")
      ->capture_default_str()->check(positive);
}

void add_load_options(CLI::App& cmd, LoadOptions& options, const std::string& threads_flag) {
  // Without --precision (or with "auto"): default_precision(device), whichever flag comes first.
  auto chosen = std::make_shared<bool>(false);
  auto device = [&options, chosen](const std::string& name) {
    if (!parse_device_spec(name, options))
      throw CLI::ValidationError("--device", "must be cpu, cuda or cuda:N, not " + name);
    if (!*chosen) options.precision = default_precision(options.device);
  };
  auto precision = [&options, chosen](const std::string& name) {
    *chosen = name != "auto";
    if (!*chosen) {
      options.precision = default_precision(options.device);
      return;
    }
    const auto p = parse_precision(name);
    if (!p) throw CLI::ValidationError("--precision", "must be fp32, fp16, bf16, int8 or auto, not " + name);
    options.precision = *p;
  };
  cmd.add_option_function<std::string>("--device", device, "where the model runs: cpu (default), cuda or cuda:N");
  cmd.add_option_function<std::string>("--precision", precision,
                                       "weights of the dense layers: fp32, fp16, bf16, int8; auto (default) = fp32 on "
                                       "the CPU, fp16 on a GPU");
  cmd.add_option(threads_flag, options.threads, "CPU worker threads (0 = OMP_NUM_THREADS or one per core)")
      ->capture_default_str()
      ->check(int_range(0, 1024));
  auto workspace_limit = [&options](int mib) { options.workspace_limit_bytes = static_cast<size_t>(mib) << 20; };
  cmd.add_option_function<int>("--workspace-limit-mb", workspace_limit,
                               "cap on a forward pass's scratch memory in MiB (0 = none); past it: out of memory")
      ->check(int_range(0, 1 << 20));
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
