// The worker threads used by the CPU kernels (an OpenMP team).
#pragma once

namespace rexnlu::backends::cpu {

void set_num_threads(int n);  // n <= 0: one per core
int num_threads();

}  // namespace rexnlu::backends::cpu
